/* report_parts.h - what the parts of `lms report`'s workload report
 * (report.c and report_charts.c) share: the rows of its tables, its
 * timelines, and the charts' writers. */
#ifndef LMS_CLI_REPORT_PARTS_H
#define LMS_CLI_REPORT_PARTS_H

#include <stdint.h>
#include <stdio.h>

#include "cli/plot.h"
#include "cli/report.h"
#include "replay/replay.h"
#include "replay/timeline.h"

static inline double ms(uint64_t ns) { return (double)ns / 1e6; }
static inline double gb(uint64_t b) { return (double)b / 1e9; }
static inline double pct(uint64_t a, uint64_t b) {
  return b ? 100.0 * (double)a / (double)b : 0.0;
}

typedef struct measured {
  char kind[16]; /* "native", "emulated" */
  lms__link_t link;
  lms__stats_file_t sf;
} lms__report_measured_t;

/* One row of the per-link table: a prediction for a link, maybe with a
 * measurement beside it. */
typedef struct row {
  lms__link_t link;
  const lms__report_measured_t *m;   /* NULL: predicted only */
  int ok, od_ok;
  lms__replay_result_t lms, od; /* the options' policy; on-demand */
  char fail[LMS__ERRBUF];
} lms__report_row_t;

/* A timeline and the window of steps it shows. */
typedef struct tline {
  lms__timeline_t tl;
  lms__link_t link;
  lms__replay_result_t r;
  int ok;
  uint32_t first, count;    /* steps shown */
  uint64_t t0, t1;          /* the window on the device clock */
  uint64_t busy, waiting;   /* compute busy and idle in the window */
  char fail[LMS__ERRBUF];
} lms__report_tline_t;

typedef struct charts {
  lms__plot_t plot;
  const char *dir;
  int skipped;
  char why[640];
} lms__report_charts_t;

/* A kernel of the steps a timeline shows. */
static inline int lms__report_shown_kernel(const lms__report_tline_t *t,
                                           const lms__tl_span_t *s) {
  return s->engine == LMS__TL_COMPUTE && s->step >= t->first &&
         s->step < t->first + t->count;
}

/* Draws script into png; 1 if the PNG is there (else c->why says why). */
int lms__report_draw(lms__report_charts_t *c, const char *script,
                     const char *png);
/* timeline.gp and its data: one panel per recorded link. */
int lms__report_timeline_chart(lms__report_charts_t *c, lms__report_tline_t *t,
                               int n, const lms__workload_t *w, char *err);
/* links.dat, links.gp (bytes and time per link) and busy.gp. */
int lms__report_link_charts(lms__report_charts_t *c,
                            const lms__report_row_t *rows, size_t n,
                            const char *unit, const char *policy,
                            const lms__workload_t *w, uint64_t inmem_ns,
                            char *err);

#endif
