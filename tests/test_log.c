/* test_log.c - the log's lines: written whole up to LMS__LOG_LINE_MAX
 * (the trial's summary of every way it timed is over 1,000 bytes), cut
 * and marked past it, and filtered by level and subsystem. */
#include <criterion/criterion.h>
#include "check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"

/* A log file of its own for each test, read back whole. */
static char path[64];

static void to_file(int level) {
  strcpy(path, "/tmp/lms-test-log-XXXXXX");
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  lms__log_configure(level, LMS_LOG_ALL_SUBSYS, path);
}

static char *read_back(size_t *len) {
  lms__log_configure(LMS_LOG_NONE, LMS_LOG_ALL_SUBSYS, NULL);
  FILE *f = fopen(path, "rb");
  cr_assert(f != NULL);
  char *buf = calloc(1, 3 * LMS__LOG_LINE_MAX);
  cr_assert(buf != NULL);
  *len = fread(buf, 1, 3 * LMS__LOG_LINE_MAX - 1, f);
  fclose(f);
  unlink(path);
  return buf;
}

/* n copies of c, as a string. */
static char *run_of(char c, size_t n) {
  char *s = malloc(n + 1);
  cr_assert(s != NULL);
  memset(s, c, n);
  s[n] = '\0';
  return s;
}

Test(log, a_long_line_is_written_whole) {
  to_file(LMS_LOG_INFO);
  char *msg = run_of('x', 1500);
  LMS_LOG(INFO, GRAPH, "%s|end", msg);
  size_t len;
  char *got = read_back(&len);
  cr_assert(strstr(got, "[LMS info graph ") == got, "%.40s", got);
  /* The message and what follows it, then the newline. */
  cr_assert(strstr(got, msg) != NULL);
  cr_assert(len >= 5 && memcmp(got + len - 5, "|end\n", 5) == 0,
            "ends with %.8s", got + (len > 8 ? len - 8 : 0));
  free(msg);
  free(got);
}

Test(log, a_line_past_the_limit_is_cut_and_marked) {
  to_file(LMS_LOG_INFO);
  char *msg = run_of('y', 3 * LMS__LOG_LINE_MAX / 2);
  LMS_LOG(WARN, SWAP, "%s", msg);
  LMS_LOG(INFO, SWAP, "next");
  size_t len;
  char *got = read_back(&len);
  char *nl = strchr(got, '\n');
  cr_assert(nl != NULL);
  size_t first = (size_t)(nl - got) + 1;
  cr_assert(eq(sz, first, LMS__LOG_LINE_MAX));
  cr_assert(memcmp(nl - 3, "...", 3) == 0);
  /* The next message is a line of its own. */
  cr_assert(strstr(nl + 1, "[LMS info swap ") == nl + 1);
  cr_assert(memcmp(got + len - 5, "next\n", 5) == 0);
  free(msg);
  free(got);
}

Test(log, lines_below_the_level_or_outside_the_mask_are_not_written) {
  to_file(LMS_LOG_INFO);
  LMS_LOG(DEBUG, GRAPH, "too fine");
  lms__log_configure(LMS_LOG_DEBUG, LMS_LOG_SUB(SWAP), path);
  LMS_LOG(DEBUG, GRAPH, "another subsystem");
  LMS_LOG(DEBUG, SWAP, "kept");
  size_t len;
  char *got = read_back(&len);
  cr_assert(strstr(got, "too fine") == NULL);
  cr_assert(strstr(got, "another subsystem") == NULL);
  cr_assert(strstr(got, "kept\n") != NULL, "%s", got);
  free(got);
}
