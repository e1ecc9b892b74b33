/* tune_parts.h - what the two files of `lms tune` share: the ranges, the
 * results of every setting tried, and the search with its writers
 * (tune_search.c), called by the command (tune.c). */
#ifndef LMS_CLI_TUNE_PARTS_H
#define LMS_CLI_TUNE_PARTS_H

#include <stdint.h>
#include <stdio.h>

#include "cli/cli.h"
#include "core/options.h"
#include "replay/replay.h"

/* Values of one setting's range at most. */
#define MAXV 16
/* Runs of one setting at most (--repeat). */
#define MAX_REPEAT 100
/* What a skipped setting's reason may hold. */
#define WHY 160

typedef struct setting {
  int kb, frac, win; /* indexes into the ranges */
} setting_t;

typedef struct tune {
  char kb_text[MAXV][32], frac_text[MAXV][32], win_text[MAXV][32];
  int nkb, nfrac, nwin;
  /* results[kb][frac][win]: ns, 0 not run, UINT64_MAX failed */
  uint64_t result[MAXV][MAXV][MAXV];
  int runs;
  /* per setting: why it was skipped, and its runs' times (repeat each) */
  char why[MAXV][MAXV][MAXV][WHY];
  uint64_t *times;
  int repeat;
  /* what to run */
  lms__workload_t w;
  int have_workload;
  int iterations; /* per simulated run; the last is timed */
  char **cmd;
  int err_fd;     /* the program's stderr, kept for a failure's tail */
  FILE *out;      /* progress and tables: stdout, or stderr with --json - */
  const lms_options_t *base;
} tune_t;


static inline double lms__tune_ms(uint64_t ns) { return (double)ns / 1e6; }

/* Note [Searching by coordinates] (tune.c): the fastest setting into
 * *best and its time; UINT64_MAX when none ran. */
uint64_t lms__tune_search(tune_t *t, setting_t *best);
/* The settings tried, fastest first, on t->out. */
void lms__tune_print_table(const tune_t *t);
/* Every setting tried, its times and the fastest, as one JSON object. */
void lms__tune_write_json(FILE *f, tune_t *t, const setting_t *best,
                          uint64_t best_ns);

#endif
