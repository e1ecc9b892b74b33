/* report.h - the pieces of `lms report` shared between its files: the
 * stats file reader (statsfile.c) and the report itself (report.c). */
#ifndef LMS_CLI_REPORT_H
#define LMS_CLI_REPORT_H

#include <stdio.h>

#include "cli/cli.h"
#include "lms/lms.h"
#include "replay/timeline.h"

/* A stats file: the runtime's (--stats PATH), covering a whole run, or a
 * measured iteration's (Note [A measured iteration's stats]). */
typedef struct lms__stats_file {
  char path[LMS__PATH_MAX];
  lms_stats_t st;
  int counters;       /* counters read */
  unsigned seen_mask; /* 1 version, 2 device_limit, 4 elapsed_ns */
  uint32_t counter_seen; /* bit i: the i-th counter of LMS_STATS_MAP */
  int iterations;     /* > 0: the figures are the mean of this many
                         measured iterations; 0: a whole run */
  int warmup;         /* iterations run before the measured ones */
} lms__stats_file_t;

/* Reads and checks a stats file: LMS_ERR_INVALID, with err naming the file
 * and what was wrong, for a missing, unreadable, corrupt or other-version
 * file. */
lms_status_t lms__stats_file_read(const char *path, lms__stats_file_t *sf,
                                  char *err);

/* 1 if the file holds the counter with this LMS_STATS_MAP field name. */
int lms__stats_file_has(const lms__stats_file_t *sf, const char *field);

/* Writes the stats of `iterations` measured iterations after `warmup`
 * others: counters' totals are (end - begin) / iterations, levels are
 * end's, elapsed_ns is iteration_ns.  LMS_ERR_INVALID with err naming the
 * path when it cannot be written. */
lms_status_t lms__stats_file_write_iterations(const char *path,
                                              const lms_stats_t *begin,
                                              const lms_stats_t *end,
                                              int iterations, int warmup,
                                              uint64_t iteration_ns,
                                              char *err);

/* Note [The report's two documents]
 * Every part of a report is written once, as Markdown and as HTML side by
 * side, through these (reportdoc.c): text with `code` and **strong**
 * spans (escaped for HTML), paragraphs, headings, bulleted lists, tables
 * and images.  The JSON beside them is written by each part itself. */
typedef struct lms__doc {
  FILE *md, *html;
} lms__doc_t;

void lms__doc_text(lms__doc_t *d, const char *s);
void lms__doc_para(lms__doc_t *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void lms__doc_heading(lms__doc_t *d, int level, const char *s);
/* A bulleted list: list_open, an item each, list_close. */
void lms__doc_list_open(lms__doc_t *d);
void lms__doc_item(lms__doc_t *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void lms__doc_list_close(lms__doc_t *d);
/* A table: its head of n cells, rows of n cells given as one string with
 * cells separated by '\t', its end. */
void lms__doc_table_head(lms__doc_t *d, int n, const char *const *cells);
void lms__doc_table_row(lms__doc_t *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void lms__doc_table_end(lms__doc_t *d);
/* A report of its own in out/: the directory made, report.md,
 * report.html (its head written, titled) and *js (report.json) opened,
 * and the title as the first heading; -1 with err when any of it fails
 * (close what opened with lms__doc_close).  lms__doc_close ends the HTML
 * and closes all three. */
int lms__doc_open(lms__doc_t *d, FILE **js, const char *out,
                  const char *title, char *err);
void lms__doc_close(lms__doc_t *d, FILE *js);
/* A chart: shown if drawn, else a paragraph saying why not. */
void lms__doc_image(lms__doc_t *d, const char *png, const char *alt, int drawn,
                    const char *why);

/* dir/name opened for writing, or NULL with err saying why
 * (report_charts.c). */
FILE *lms__report_open_in(const char *dir, const char *name, char *err);

/* `lms report --ranks PATTERN|LIST` (Note [A report per rank] in
 * report_ranks.c): 0 done, 2 bad input, 1 a failure writing. */
int lms__report_ranks(const char *spec, const char *out);
/* `lms report --bench-link FILE` (Note [A link report] in report_link.c):
 * 0 done, 2 bad input, 1 a failure writing. */
int lms__report_link(const char *file, const char *out);

/* Note [How much GPU a workload needs] (report_limits.c). */
#define LMS__LIMIT_POINTS 8
typedef struct lms__limit_point {
  uint64_t capacity;
  int ok;                      /* it ran under this limit */
  uint64_t time_ns, lower_ns;  /* the iteration and its lower bound */
  uint64_t bytes_h2d, bytes_d2h;
  char why[160];               /* why it did not run */
} lms__limit_point_t;
typedef struct lms__limit_set {
  const char *link;
  lms__limit_point_t points[LMS__LIMIT_POINTS];
  int n;
} lms__limit_set_t;
/* Runs w over link at up to LMS__LIMIT_POINTS GPU limits into out;
 * returns how many. */
int lms__report_limits(const lms__workload_t *w, const lms__opts_t *base,
                       const lms__link_t *link, lms__policy_t policy,
                       int iterations, lms__limit_point_t *out);
/* limits.dat and limits.gp in dir: -1 with err when they cannot be
 * written. */
int lms__report_limits_chart(const char *dir, const lms__limit_set_t *sets,
                             int nsets, const char *wname, uint64_t inmem_ns,
                             char *err);

/* Writes a recorded timeline as a Chrome trace (tracejson.c): the JSON
 * Trace Event Format, one thread per engine.  -1 when writing failed. */
int lms__report_trace_json(FILE *f, const lms__timeline_t *tl,
                           const lms__workload_t *w, const char *link);

#endif
