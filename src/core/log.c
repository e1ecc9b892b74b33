/* log.c - see log.h.  The configuration is process-wide and read without a
 * lock: it is a pair of ints and a file descriptor, written at context
 * creation, and a torn read at worst drops or adds one message. */
#include "core/log.h"
#include "core/rank.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *const lms__log_level_names[LMS_LOG_LEVEL_COUNT] = {
#define LMS__LOG_LEVEL_NAME_(e, name) name,
    LMS__LOG_LEVELS(LMS__LOG_LEVEL_NAME_)
#undef LMS__LOG_LEVEL_NAME_
};

const char *const lms__log_subsys_names[LMS_LOG_SUBSYS_COUNT] = {
#define LMS__LOG_SUBSYS_NAME_(e, name) name,
    LMS__LOG_SUBSYS(LMS__LOG_SUBSYS_NAME_)
#undef LMS__LOG_SUBSYS_NAME_
};

static volatile int g_level = LMS_LOG_WARN;
static volatile unsigned g_mask = LMS_LOG_ALL_SUBSYS;
static volatile int g_fd = 2;

void lms__log_configure(int level, unsigned subsys_mask, const char *path) {
  g_level = level;
  g_mask = subsys_mask;
  if (path == NULL || path[0] == '\0') {
    if (g_fd != 2) close(g_fd);
    g_fd = 2;
    return;
  }
  char name[512];
  /* Note [One lms per rank] in rank.h: %p and %r. */
  lms__path_expand(path, name, sizeof name);
  int fd = open(name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    lms__log_write(LMS_LOG_WARN, LMS_LOG_SUB(CORE),
                   "cannot open log file '%s'; logging to stderr", name);
    return;
  }
  if (g_fd != 2) close(g_fd);
  g_fd = fd;
}

int lms__log_enabled(int level, unsigned subsys) {
  return level <= g_level && (subsys & g_mask) != 0;
}

static const char *subsys_name(unsigned subsys) {
  for (int i = 0; i < LMS_LOG_SUBSYS_COUNT; i++)
    if (subsys & (1u << i)) return lms__log_subsys_names[i];
  return "?";
}

/* A message is one write(2), so that lines from threads and processes
 * sharing a file do not interleave, from a buffer on the stack (a log
 * call may come from any context, so no allocation).  The longest the
 * runtime writes, the trial's summary of every way it timed (Note [Ways
 * to look ahead, measured] in graph/plan.c), is about 1,100 bytes; 512
 * cut it, and the way it kept, short without saying so.  A message
 * longer than LMS__LOG_LINE_MAX is cut and ends in "..." before its
 * newline. */
void lms__log_write(int level, unsigned subsys, const char *fmt, ...) {
  char buf[LMS__LOG_LINE_MAX];
  int n = snprintf(buf, sizeof buf, "[LMS %s %s %ld] ",
                   lms__log_level_names[level], subsys_name(subsys),
                   (long)getpid());
  if (n < 0) return;
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
  va_end(ap);
  size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
  if (len > sizeof buf - 1) {
    len = sizeof buf - 1; /* the terminator's place takes the newline */
    memcpy(buf + len - 3, "...", 3);
  }
  buf[len++] = '\n';
  ssize_t w = write(g_fd, buf, len);
  (void)w;
}
