/* report_parts.h - what the parts of `lms report`'s workload report
 * share: its content, computed once (report_build.c, report_unet.c), and
 * the writers that read it: the page as Markdown and HTML
 * (report_page.c), report.json (report_json.c) and the charts
 * (report_charts.c, report_limits.c). */
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

/* Note [A report's verdict] (report_build.c). */
typedef enum lms__verdict {
  LMS__VERDICT_MEMORY,
  LMS__VERDICT_LINK,
  LMS__VERDICT_SCHEDULE
} lms__verdict_t;

/* One row of the per-link table: a prediction for a link, maybe with a
 * measurement beside it. */
typedef struct row {
  lms__link_t link;
  const lms__report_measured_t *m;   /* NULL: predicted only */
  int ok, od_ok;
  lms__replay_result_t lms, od; /* the options' policy; on-demand */
  char fail[LMS__ERRBUF];
  /* A prediction that ran: its verdict, time over the in-memory time and
   * over the lower bound. */
  lms__verdict_t verdict;
  double x_memory, x_lower;
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

/* `lms report`'s arguments (report_args.c). */
#define LMS__REPORT_MAX_LINKS 16
#define LMS__REPORT_MAX_MEASURED 4
#define LMS__REPORT_MAX_STEPS 64 /* --steps COUNT at most */
typedef struct lms__report_args {
  char input[LMS__PATH_MAX];
  char ranks[LMS__PATH_MAX]; /* --ranks: report_ranks.c */
  char link_file[LMS__PATH_MAX]; /* --bench-link: report_link.c */
  char stats[LMS__PATH_MAX];
  char trace[LMS__PATH_MAX]; /* --trace: the input, named so */
  char out[LMS__PATH_MAX];
  lms__wl_params_t params;
  int iterations;
  int compare;
  lms__report_measured_t m[LMS__REPORT_MAX_MEASURED];
  int nm;
  int steps_given;
  uint32_t step_first, step_count;
  lms__link_t links[LMS__REPORT_MAX_LINKS]; /* given, or every preset */
  size_t nlinks;
  lms__opts_t opts;
} lms__report_args_t;

/* Fills a from argv: 0, or -1 with the message printed (bad input).
 * The measured stats files are read and checked here. */
int lms__report_parse_args(int argc, char **argv, lms__report_args_t *a);
/* Prints "lms report: " and the message on stderr; returns -1. */
int lms__report_bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

typedef struct lms__report_unet lms__report_unet_t;

/* A workload report's content, computed once by lms__report_build and
 * read by every writer. */
typedef struct lms__report {
  const char *out;              /* the directory written */
  lms__workload_t *w;
  const lms__opts_t *opts;
  uint64_t capacity;
  lms__policy_t policy;
  const char *unit;             /* "run" or "iteration" */
  int iters;                    /* iterations replayed (or settle) */
  int whole_run, per_iteration; /* what the measured stats cover */
  int have_run;                 /* --stats: a run beside its trace */
  int measured;                 /* any row has a measurement */
  int compare, steps_given;
  const lms__stats_file_t *first_sf; /* the first measured stats, or NULL */
  /* The workload as given (lms__report_unet_build scales its compute). */
  uint64_t chunk_bytes, compute_ns;
  lms__replay_result_t mem;     /* in memory */
  lms__report_row_t *rows;      /* measured rows first, then one a link */
  size_t nr;
  const lms__report_row_t *best, *worst; /* fastest and slowest predicted */
  lms__report_tline_t *tls;
  int ntl;
  lms__limit_set_t limits[2];
  int nlimits;
  lms__report_unet_t *unet;     /* NULL: no U-Net comparison */
  lms__report_charts_t ch;
  int drawn_limits, drawn_tl, drawn_links, drawn_busy;
} lms__report_t;

/* Everything computed for r (its inputs set by report.c): the rows'
 * replays, the in-memory run, the timelines and their windows, the limits
 * and the verdicts.  0, or 1 (a failure during the runs) or 2 (bad input)
 * with the message printed. */
int lms__report_build(lms__report_t *r, const lms__link_t *links,
                      size_t nlinks, uint32_t step_first,
                      uint32_t step_count);
void lms__report_free(lms__report_t *r);
/* The options of one replay of a workload over link, as `lms sim` runs
 * it (lms__simcmd_one): the simulated device timing only, no trace or
 * stats files written by the replay itself. */
void lms__report_run_opts(lms__opts_t *o, const lms__opts_t *base,
                          const lms__link_t *link, uint64_t capacity,
                          lms__policy_t policy);
/* One replay of w over link as `lms sim` runs it; a timeline recorded
 * into tl unless NULL. */
lms_status_t lms__report_run(const lms__workload_t *w,
                             const lms__opts_t *base, const lms__link_t *link,
                             uint64_t capacity, lms__policy_t policy,
                             int iterations, lms__timeline_t *tl,
                             lms__replay_result_t *out, char *err);
const char *lms__report_policy_name(lms__policy_t p);

/* The writers: the page (Markdown and HTML side by side) and report.json. */
void lms__report_page(lms__doc_t *d, const lms__report_t *r);
void lms__report_json(FILE *js, const lms__report_t *r);

/* Note [The published U-Net comparison] (report_unet.c): computed for
 * the built-in U-Net at 192^3 with pcie3 and nvlink2 rows, and its part
 * of each writer. */
lms__report_unet_t *lms__report_unet_build(const lms__report_t *r);
void lms__report_unet_free(lms__report_unet_t *u);
void lms__report_unet_page(lms__doc_t *d, const lms__report_t *r);
void lms__report_unet_json(FILE *js, const lms__report_t *r);

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
