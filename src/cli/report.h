/* report.h - the pieces of `lms report` shared between its files: the
 * stats file reader (statsfile.c) and the report itself (report.c). */
#ifndef LMS_CLI_REPORT_H
#define LMS_CLI_REPORT_H

#include "cli/cli.h"
#include "lms/lms.h"

/* A stats file as the runtime wrote it (--stats PATH). */
typedef struct lms__stats_file {
  char path[LMS__PATH_MAX];
  lms_stats_t st;
  int counters;       /* counters read */
  unsigned seen_mask; /* 1 version, 2 device_limit, 4 elapsed_ns */
} lms__stats_file_t;

/* Reads and checks a stats file: LMS_ERR_INVALID, with err naming the file
 * and what was wrong, for a missing, unreadable, corrupt or other-version
 * file. */
lms_status_t lms__stats_file_read(const char *path, lms__stats_file_t *sf,
                                  char *err);

#endif
