/* init.c - the preload's start and end: the LMS_* environment read once,
 * through the same options table and parsers as the lms command and the
 * library (src/core/options.c, compiled in; it needs nothing but libc), and
 * the one-line summary at exit.
 *
 * The options used here: LMS_GPU_LIMIT (the virtual device capacity),
 * LMS_KB and LMS_FRAC (caffe's -lms and -lms_frac, applied to each
 * allocation), LMS_PREFETCH_WINDOW (the learned prefetch's launches ahead
 * and share of the limit, Note [Learned prefetch in the preload]),
 * LMS_LOG and LMS_LOG_FILE.  Every other LMS_* option is
 * validated like the rest and has no effect yet in the preload.  Outside
 * the table: LMS_STATS_LINE, a boolean, prints the summary at exit (`lms
 * run --stats` sets it).
 *
 * A bad value stops the program at load, before main, with a message that
 * names the variable, its value and what is accepted, and exit status 2:
 * running on with a silently ignored limit would be worse. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/options.h"
#include "preload/preload.h"

lms__preload_cfg_t lms__preload_cfg = {0, -1, 0.0, 0, {0, 0, 0.0}};

static void say(const char *a, const char *b) {
  char buf[LMS__ERRBUF + 64];
  size_t n = 0;
  for (const char *p = a; *p != '\0' && n < sizeof buf - 2; p++) buf[n++] = *p;
  for (const char *p = b; *p != '\0' && n < sizeof buf - 2; p++) buf[n++] = *p;
  buf[n++] = '\n';
  ssize_t w = write(2, buf, n);
  (void)w;
}

__attribute__((constructor)) static void lms__preload_start(void) {
  if (lms__real_dlsym_init() != 0) _exit(2);
  lms_options_t *o = NULL;
  if (lms_options_create(&o) != LMS_OK) {
    say("lms preload: ", "out of memory reading the options");
    _exit(2);
  }
  if (lms_options_load_env(o) != LMS_OK) {
    say("lms preload: ", lms_options_error(o));
    _exit(2);
  }
  lms__preload_cfg.gpu_limit = o->v.gpu_limit;
  lms__preload_cfg.lms_kb = o->v.lms_kb;
  lms__preload_cfg.lms_frac = o->v.lms_frac;
  lms__preload_cfg.window = o->v.prefetch_window;
  lms__log_configure(o->v.log.level, o->v.log.subsys, o->v.log_file);
  const char *line = getenv("LMS_STATS_LINE");
  if (line != NULL && line[0] != '\0' &&
      lms__parse_bool("LMS_STATS_LINE", line, &lms__preload_cfg.stats_line,
                      o->error) != LMS_OK) {
    say("lms preload: ", o->error);
    _exit(2);
  }
  lms_options_destroy(o);
}

__attribute__((destructor)) static void lms__preload_end(void) {
  if (!lms__preload_cfg.stats_line) return;
  char buf[512];
  size_t n = lms__ledger_line(buf, sizeof buf);
  ssize_t w = write(2, buf, n);
  (void)w;
}
