/* report.c - `lms report`: a run, or a workload on every link, as a
 * Markdown page, an HTML page, a JSON summary and PNG charts.
 *
 *   lms report WORKLOAD|TRACE [--out DIR] [--steps FIRST:COUNT] [--links ..]
 *   lms report --stats RUN.json --trace RUN.trace [--link L] [--out DIR]
 *   lms report --compare-links WORKLOAD|TRACE
 *              [--native LINK=STATS] [--emulated LINK=STATS]
 *   lms report --ranks STATS-%r.json|A.json,B.json,.. [--out DIR]
 *              (report_ranks.c)
 *   lms report --bench-link FILE [--out DIR]   (report_link.c)
 *
 * What it draws comes from runs, never from a formula: every predicted
 * number is a replay through the runtime on the simulated device (the same
 * replay `lms sim` prints, so the numbers agree with `lms sim --json`), the
 * timeline is the kernels and copies the simulated device recorded during
 * the measured iteration (replay/timeline.h), and measured numbers are read
 * from the stats files a real run wrote.  A run's stats hold totals only,
 * so a real run's timeline is its trace replayed on the simulated device at
 * the run's link, and the report says so.
 *
 * Invariants: the report is written even when gnuplot is missing or fails
 * (the charts' scripts and data are written regardless, and the page says
 * why the pictures are absent); bad input (a missing or corrupt stats or
 * trace file, an unknown link, a bad flag) writes nothing and exits 2 with
 * a message naming the input and what is accepted. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/plot.h"
#include "cli/report.h"
#include "cli/report_parts.h"
#include "replay/shared.h"
#include "replay/timeline.h"

#define MAX_LINKS 16
#define MAX_MEASURED 4
#define DEFAULT_WINDOW 12
#define MAX_WINDOW 64

/* Published, CONTEXT.md: TensorFlow LMS, 3D U-Net at 192^3, epoch time on
 * one GPU, and GPU busy over 30 batches (x86 with one GPU per PCIe Gen3
 * bus; AC922 with 4 GPUs on 150 GB/s NVLink 2.0). */
#define UNET_X86_EPOCH_S 1467.0
#define UNET_AC922_EPOCH_S 590.0
#define UNET_X86_BUSY 29.1
#define UNET_AC922_BUSY 73.5
/* The same runs with two GPUs sharing each PCIe Gen3 link: the copy
 * throughput each GPU saw, the GPU busy share, and the epoch time of 8
 * GPUs (two per link) against 4 GPUs (one per link). */
#define UNET_SHARE_H2D_ALONE 10.9
#define UNET_SHARE_H2D 7.6
#define UNET_SHARE_D2H_ALONE 11.7
#define UNET_SHARE_D2H 8.2
#define UNET_SHARE_BUSY 22.6
#define UNET_SHARE_EPOCH_ALONE_S 1506.0
#define UNET_SHARE_EPOCH_S 2076.0

typedef struct report_args {
  char input[LMS__PATH_MAX];
  char ranks[LMS__PATH_MAX]; /* --ranks: report_ranks.c */
  char link_file[LMS__PATH_MAX]; /* --bench-link: report_link.c */
  char stats[LMS__PATH_MAX];
  char out[LMS__PATH_MAX];
  lms__wl_params_t params;
  int iterations;
  int compare;
  lms__report_measured_t m[MAX_MEASURED];
  int nm;
  int steps_given;
  uint32_t step_first, step_count;
  lms__link_t links[MAX_LINKS];
  size_t nlinks;
  lms__opts_t opts;
} report_args_t;

/* ---- Arguments ------------------------------------------------------ */

static const lms__cli_flag_t kReportFlags[] = {
    {"--out", 1},        {"--stats", 1},    {"--trace", 1},
    {"--compare-links", 0}, {"--native", 1}, {"--emulated", 1},
    {"--steps", 1},      {"--links", 1},    {"--batch", 1},
    {"--size", 1},       {"--train", 0},    {"--forward", 0},
    {"--iterations", 1}, {"--device-tflops", 1}, {"--ranks", 1},
    {"--bench-link", 1},
};

int lms__report_extract_args(int *argc, char **argv, char **out) {
  return lms__cli_extract(argc, argv, out, kReportFlags,
                          sizeof kReportFlags / sizeof kReportFlags[0]);
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("lms report: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return -1;
}

static int parse_long(const char *flag, const char *text, long lo, long hi,
                      long *out) {
  char *end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || v < lo || v > hi)
    return bad("%s: '%s' is not a whole number from %ld to %ld", flag, text,
               lo, hi);
  *out = v;
  return 0;
}

/* LINK=STATS: a link as --link takes it, and the stats file of a real run
 * over it. */
static int parse_measured(const char *flag, const char *val, lms__report_measured_t *m) {
  const char *eq = strchr(val, '=');
  if (eq == NULL || eq == val || eq[1] == '\0')
    return bad("%s: '%s' should be LINK=STATS, e.g. nvlink2=run.json: the "
               "link the run used and the stats file it wrote (--stats)",
               flag, val);
  char name[64], err[LMS__ERRBUF];
  if ((size_t)(eq - val) >= sizeof name)
    return bad("%s: the link '%.*s...' is %d characters long; at most %zu "
               "are accepted", flag, LMS__CLI_QUOTE_MAX, val, (int)(eq - val),
               sizeof name - 1);
  snprintf(name, sizeof name, "%.*s", (int)(eq - val), val);
  if (lms__cli_link(name, &m->link, err) != LMS_OK)
    return bad("%s: %s", flag, err);
  snprintf(m->kind, sizeof m->kind, "%.15s", flag + 2);
  /* Read once the arguments are known to fit together. */
  if (lms__cli_path("report", flag, eq + 1, m->sf.path, sizeof m->sf.path))
    return -1;
  return 0;
}

static int parse_args(int argc, char **argv, report_args_t *a) {
  memset(a, 0, sizeof *a);
  a->iterations = LMS__REPLAY_SETTLE;
  a->params.train = -1;
  snprintf(a->out, sizeof a->out, "lms-report");
  char trace[LMS__PATH_MAX] = "";
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    char flag[64];
    const char *val = lms__cli_split_flag(arg, flag, sizeof flag);
    int takes = -1;
    for (size_t f = 0; f < sizeof kReportFlags / sizeof kReportFlags[0]; f++)
      if (strcmp(flag, kReportFlags[f].flag) == 0) takes = kReportFlags[f].value;
    if (takes == 1 && val == NULL) {
      if (i + 1 >= argc) return bad("%s needs a value", flag);
      val = argv[++i];
    } else if (takes == 0 && val != NULL) {
      return bad("%s takes no value", flag);
    }
    long v = 0;
    char err[LMS__ERRBUF];
    if (strcmp(flag, "--out") == 0) {
      if (val[0] == '\0' || strlen(val) > LMS__CLI_OUT_MAX)
        return bad("--out: expected a directory path of 1 to %d bytes",
                   LMS__CLI_OUT_MAX);
      snprintf(a->out, sizeof a->out, "%s", val);
    } else if (strcmp(flag, "--stats") == 0) {
      if (lms__cli_path("report", "--stats", val, a->stats, sizeof a->stats))
        return -1;
    } else if (strcmp(flag, "--trace") == 0) {
      if (lms__cli_path("report", "--trace", val, trace, sizeof trace))
        return -1;
    } else if (strcmp(flag, "--bench-link") == 0) {
      if (lms__cli_path("report", "--bench-link", val, a->link_file,
                        sizeof a->link_file))
        return -1;
    } else if (strcmp(flag, "--ranks") == 0) {
      if (lms__cli_path("report", "--ranks", val, a->ranks, sizeof a->ranks))
        return -1;
    } else if (strcmp(flag, "--compare-links") == 0) {
      a->compare = 1;
    } else if (strcmp(flag, "--native") == 0 ||
               strcmp(flag, "--emulated") == 0) {
      if (a->nm == MAX_MEASURED)
        return bad("%s: at most %d measured runs", flag, MAX_MEASURED);
      if (parse_measured(flag, val, &a->m[a->nm]) != 0) return -1;
      a->nm++;
    } else if (strcmp(flag, "--steps") == 0) {
      char *colon = strchr(val, ':');
      char first[32], count[32];
      if (colon == NULL || (size_t)(colon - val) >= sizeof first ||
          strlen(colon + 1) >= sizeof count)
        return bad("--steps: '%s' should be FIRST:COUNT, e.g. 40:12 (steps "
                   "40 to 51 of the measured iteration)", val);
      snprintf(first, sizeof first, "%.*s", (int)(colon - val), val);
      snprintf(count, sizeof count, "%s", colon + 1);
      if (parse_long("--steps FIRST", first, 0, 100000000, &v)) return -1;
      a->step_first = (uint32_t)v;
      if (parse_long("--steps COUNT", count, 1, MAX_WINDOW, &v)) return -1;
      a->step_count = (uint32_t)v;
      a->steps_given = 1;
    } else if (strcmp(flag, "--links") == 0) {
      char buf[512];
      if (lms__cli_list_fits("report", flag, val, sizeof buf)) return -1;
      snprintf(buf, sizeof buf, "%s", val);
      a->nlinks = 0;
      char *save = NULL;
      for (char *t = strtok_r(buf, ",", &save); t != NULL;
           t = strtok_r(NULL, ",", &save)) {
        if (a->nlinks == MAX_LINKS)
          return bad("--links: at most %d links", MAX_LINKS);
        if (lms__cli_link(t, &a->links[a->nlinks], err) != LMS_OK)
          return bad("--links: %s", err);
        a->nlinks++;
      }
      if (a->nlinks == 0)
        return bad("--links: expected a comma-separated list such as "
                   "pcie3,nvlink2");
    } else if (strcmp(flag, "--batch") == 0) {
      if (parse_long(flag, val, 1, 4096, &v)) return -1;
      a->params.batch = (int)v;
    } else if (strcmp(flag, "--size") == 0) {
      if (parse_long(flag, val, 1, 100000, &v)) return -1;
      a->params.size = (int)v;
    } else if (strcmp(flag, "--train") == 0) {
      a->params.train = 1;
    } else if (strcmp(flag, "--forward") == 0) {
      a->params.train = 0;
    } else if (strcmp(flag, "--iterations") == 0) {
      if (parse_long(flag, val, 2, LMS__REPLAY_MAX_ITERS, &v)) return -1;
      a->iterations = (int)v;
    } else if (strcmp(flag, "--device-tflops") == 0) {
      char *end = NULL;
      double t = strtod(val, &end);
      if (end == val || *end != '\0' || !isfinite(t) || t <= 0 || t > 1e4)
        return bad("--device-tflops: '%s' is not a rate from above 0 to "
                   "10000 TFLOP/s", val);
      a->params.device_flops = t * 1e12;
    } else if (arg[0] == '-' && arg[1] != '\0') {
      return bad("unknown option '%s'; see 'lms help'", arg);
    } else if (a->input[0] == '\0') {
      if (lms__cli_path("report", "the input", arg, a->input,
                        sizeof a->input))
        return -1;
    } else {
      return bad("unexpected argument '%s' (the input is '%s')", arg,
                 a->input);
    }
  }
  if (a->ranks[0] != '\0' || a->link_file[0] != '\0') {
    const char *which = a->ranks[0] != '\0' ? "--ranks" : "--bench-link";
    if (a->input[0] != '\0' || trace[0] != '\0' || a->stats[0] != '\0' ||
        a->nm > 0 || a->compare ||
        (a->ranks[0] != '\0' && a->link_file[0] != '\0'))
      return bad("%s makes a report of its own; give a workload, --stats, "
                 "--compare-links, --ranks or --bench-link in another",
                 which);
    return 0;
  }
  if (trace[0] != '\0') {
    if (a->input[0] != '\0')
      return bad("both --trace '%s' and the input '%s' were given; name one",
                 trace, a->input);
    snprintf(a->input, sizeof a->input, "%s", trace);
  }
  if (a->input[0] == '\0')
    return bad("name a built-in workload (googlenet, unet3d), a trace file, "
               "or a run's --stats PATH with its --trace PATH");
  if ((a->stats[0] != '\0' || a->nm > 0) &&
      lms__wl_find_builtin(a->input) != NULL)
    return bad("measured stats need the trace the run wrote (--trace PATH), "
               "not the built-in '%s': the stats cover the whole run, which "
               "only its trace describes", a->input);
  if (a->stats[0] != '\0' && a->nm > 0)
    return bad("--stats reports one run; with --compare-links give "
               "measurements as --native LINK=STATS and --emulated "
               "LINK=STATS");
  if (a->nm > 0 && !a->compare)
    return bad("--native and --emulated belong to --compare-links");
  for (int i = 0; i < a->nm; i++) {
    char path[LMS__PATH_MAX], err[LMS__ERRBUF];
    snprintf(path, sizeof path, "%s", a->m[i].sf.path);
    if (lms__stats_file_read(path, &a->m[i].sf, err) != LMS_OK)
      return bad("--%s: %s", a->m[i].kind, err);
  }
  return 0;
}

/* ---- Runs ------------------------------------------------------------ */

static const char *const kPresets[] = {"pcie3", "pcie4",  "pcie5",
                                       "nvlink1", "nvlink2", "c2c"};
#define NPRESETS (sizeof kPresets / sizeof kPresets[0])

static const char *policy_name(lms__policy_t p) {
  return p == LMS_POLICY_ONDEMAND ? "ondemand"
         : p == LMS_POLICY_LRU    ? "lru"
                                  : "schedule";
}

/* The options of one replay of w on a link, as `lms sim` runs it
 * (lms__simcmd_one): the simulated device timing only, -lms 0 unless -lms
 * was given, no trace or stats files written by the replay itself. */
static void run_opts(lms__opts_t *o, const lms__opts_t *base,
                     const lms__link_t *link, uint64_t capacity,
                     lms__policy_t policy) {
  lms__simcmd_one_opts(o, base, link, capacity, policy);
  o->device = LMS_DEVICE_SIM;
  o->trace = o->trace_buf;
  o->trace_buf[0] = '\0';
  o->stats = o->stats_buf;
  o->stats_buf[0] = '\0';
}

static lms_status_t run(const lms__workload_t *w, const lms__opts_t *base,
                        const lms__link_t *link, uint64_t capacity,
                        lms__policy_t policy, int iterations,
                        lms__timeline_t *tl, lms__replay_result_t *out,
                        char *err) {
  lms__opts_t o;
  run_opts(&o, base, link, capacity, policy);
  if (tl != NULL && iterations == LMS__REPLAY_SETTLE) {
    /* A timeline needs to know the last iteration: the replay that
     * settles says which, and the simulated device repeats it exactly. */
    LMS_CHECK(lms__replay_run(w, &o, iterations, 0, out, err));
    iterations = out->iterations;
  }
  if (tl != NULL)
    return lms__replay_run_timeline(w, &o, iterations, tl, out, err);
  return lms__replay_run(w, &o, iterations, 0, out, err);
}

/* The window of steps to draw: the given one, or the `count` consecutive
 * steps of the measured iteration in which compute waited longest. */
static void pick_window(lms__report_tline_t *t, uint32_t nsteps, int given,
                        uint32_t first, uint32_t count) {
  uint64_t *start = calloc(nsteps, sizeof *start);
  uint64_t *end = calloc(nsteps, sizeof *end);
  uint64_t *gap = calloc(nsteps, sizeof *gap);
  if (start == NULL || end == NULL || gap == NULL) goto out;
  for (size_t i = 0; i < t->tl.n; i++) {
    const lms__tl_span_t *s = &t->tl.spans[i];
    if (s->engine != LMS__TL_COMPUTE || s->step >= nsteps) continue;
    start[s->step] = s->start_ns;
    end[s->step] = s->end_ns;
  }
  uint64_t prev = t->tl.origin_ns;
  for (uint32_t s = 0; s < nsteps; s++) {
    gap[s] = start[s] > prev ? start[s] - prev : 0;
    if (end[s] > prev) prev = end[s];
  }
  if (count > nsteps) count = nsteps;
  if (!given) {
    uint64_t sum = 0, best = 0;
    first = 0;
    for (uint32_t s = 0; s < nsteps; s++) {
      sum += gap[s];
      if (s >= count) sum -= gap[s - count];
      if (s + 1 >= count && sum > best) {
        best = sum;
        first = s + 1 - count;
      }
    }
  }
  if (first + count > nsteps) first = nsteps - count;
  t->first = first;
  t->count = count;
  t->t0 = start[first] - gap[first];
  t->t1 = end[first + count - 1];
  for (uint32_t s = first; s < first + count; s++) {
    t->waiting += gap[s];
    t->busy += end[s] - start[s];
  }
out:
  free(start);
  free(end);
  free(gap);
}

/* ---- The report ------------------------------------------------------ */

/* Note [A report's verdict]
 * A reader opens a report to learn one thing first: does the workload run
 * well on this link, and if not, is it the link or the schedule.  So the
 * report begins with a sentence per link, set against the two yardsticks
 * it has: the in-memory time (what a GPU holding everything takes) and the
 * least time any policy can take over this link at this capacity (Note [A
 * lower bound no policy can beat] in replay/bound.c).  Within 5 % of in
 * memory the link costs nothing; where the bound itself is more than 5 %
 * over in memory and lms within 10 % of the bound, the link is the limit
 * and only a faster link (or a larger GPU) helps; otherwise a better
 * schedule could gain up to the difference to the bound. */
typedef enum verdict { V_MEMORY, V_LINK, V_SCHEDULE } verdict_t;

static verdict_t verdict_of(const lms__replay_result_t *r, uint64_t mem_ns) {
  double x = (double)r->last.time_ns / (double)mem_ns;
  double lx = r->lower.time_ns ? (double)r->last.time_ns /
                                     (double)r->lower.time_ns
                               : 1.0;
  /* The link is the limit only where the bound itself is over the
   * in-memory time: a bound at compute says no policy need wait at all. */
  int link_costs = (double)r->lower.time_ns > 1.05 * (double)mem_ns;
  return x <= 1.05 ? V_MEMORY : link_costs && lx <= 1.10 ? V_LINK : V_SCHEDULE;
}

static const char *const kVerdictKey[] = {"in_memory", "link_bound",
                                          "schedule_bound"};

static void write_verdict(lms__doc_t *d, FILE *js, const lms__report_row_t *rows, size_t nr,
                          uint64_t mem_ns, const char *unit) {
  lms__doc_heading(d, 2, "Verdict");
  const lms__report_row_t *best = NULL, *worst = NULL;
  for (size_t i = 0; i < nr; i++) {
    const lms__report_row_t *r = &rows[i];
    if (r->m != NULL || !r->ok) continue;
    if (best == NULL || r->lms.last.time_ns < best->lms.last.time_ns) best = r;
    if (worst == NULL || r->lms.last.time_ns > worst->lms.last.time_ns)
      worst = r;
  }
  fprintf(js, "\n \"verdict\": [");
  if (best == NULL) {
    lms__doc_para(d, "No link ran the workload (see the table below).");
    fprintf(js, "],");
    return;
  }
  if (best != worst)
    lms__doc_para(d, "Fastest over %s at %.2fx the in-memory time, slowest over %s "
            "at %.2fx.",
         best->link.name, (double)best->lms.last.time_ns / (double)mem_ns,
         worst->link.name, (double)worst->lms.last.time_ns / (double)mem_ns);
  int first = 1;
  lms__doc_list_open(d);
  for (size_t i = 0; i < nr; i++) {
    const lms__report_row_t *r = &rows[i];
    if (r->m != NULL || !r->ok) continue;
    const lms__replay_result_t *x = &r->lms;
    double xm = (double)x->last.time_ns / (double)mem_ns;
    double xl = x->lower.time_ns ? (double)x->last.time_ns /
                                       (double)x->lower.time_ns
                                 : 1.0;
    verdict_t v = verdict_of(x, mem_ns);
    if (v == V_MEMORY)
      lms__doc_item(d, "**%s**: %.1f ms per %s, %.2fx the in-memory time: the link "
              "costs next to nothing (GPU busy %.1f%%).",
           r->link.name, ms(x->last.time_ns), unit, xm,
           pct(x->last.compute_ns, x->last.time_ns));
    else if (v == V_LINK)
      lms__doc_item(d, "**%s**: %.1f ms per %s, %.2fx the in-memory time; no policy "
              "can take less than %.1f ms over this link at this capacity, "
              "and lms is within %.2fx of that: the link is the limit (a "
              "faster link or a larger GPU helps, a schedule cannot).",
           r->link.name, ms(x->last.time_ns), unit, xm,
           ms(x->lower.time_ns), xl);
    else
      lms__doc_item(d, "**%s**: %.1f ms per %s, %.2fx the in-memory time; no policy "
              "can take less than %.1f ms, and lms is at %.2fx of that: a "
              "better schedule could gain up to %.1f ms.",
           r->link.name, ms(x->last.time_ns), unit, xm,
           ms(x->lower.time_ns), xl,
           ms(x->last.time_ns - x->lower.time_ns));
    fprintf(js, "%s\n  {\"link\": \"%s\", \"x_in_memory\": %.4f, "
                "\"x_lower_bound\": %.4f, \"verdict\": \"%s\"}",
            first ? "" : ",", r->link.name, xm, xl, kVerdictKey[v]);
    first = 0;
  }
  lms__doc_list_close(d);
  fprintf(js, "],");
}

static void json_run(FILE *f, const char *key, const lms__replay_result_t *r) {
  const lms__replay_iter_t *l = &r->last;
  fprintf(f, "\"%s\": {\"iteration_ns\": %llu, \"compute_ns\": %llu, "
             "\"gpu_busy\": %.4f, \"bytes_h2d\": %llu, \"bytes_d2h\": %llu, "
             "\"stall_ns\": %llu, \"overlap_bound_ns\": %llu, "
             "\"lower_bound_ns\": %llu, \"min_bytes_h2d\": %llu, "
             "\"min_bytes_d2h\": %llu}",
          key, (unsigned long long)l->time_ns,
          (unsigned long long)l->compute_ns,
          l->time_ns ? (double)l->compute_ns / (double)l->time_ns : 0.0,
          (unsigned long long)l->bytes_h2d, (unsigned long long)l->bytes_d2h,
          (unsigned long long)l->stall_ns,
          (unsigned long long)r->overlap_bound_ns,
          (unsigned long long)r->lower.time_ns,
          (unsigned long long)r->lower.h2d_bytes,
          (unsigned long long)r->lower.d2h_bytes);
}

/* Copy throughput both ways together: all bytes over the time copies were
 * in flight, one direction's after the other's. */
static double both_ways(double h2d_bytes, double h2d_gbps, double d2h_bytes,
                        double d2h_gbps) {
  double t = (h2d_gbps > 0 ? h2d_bytes / h2d_gbps : 0) +
             (d2h_gbps > 0 ? d2h_bytes / d2h_gbps : 0);
  return t > 0 ? (h2d_bytes + d2h_bytes) / t : 0;
}

static double change(double now, double was) {
  return was > 0 ? 100.0 * (now / was - 1.0) : 0.0;
}

/* One row of the shared-link table, in Markdown and JSON. */
static void shared_row(lms__doc_t *d, FILE *js, const char *label, const char *key,
                       const lms__shared_result_t *r) {
  const lms__replay_iter_t *a = &r->alone.last;
  double both_alone = both_ways((double)a->bytes_h2d, r->alone_h2d_gbps,
                                (double)a->bytes_d2h, r->alone_d2h_gbps);
  double both = both_ways(r->bytes_h2d, r->h2d_gbps, r->bytes_d2h,
                          r->d2h_gbps);
  double busy_alone = pct(a->compute_ns, a->time_ns);
  double busy = r->iter_ns > 0 ? 100.0 * r->compute_ns / r->iter_ns : 0;
  double time = change(r->iter_ns, (double)a->time_ns);
  lms__doc_table_row(d, "%s\t%.1f -> %.1f (%+.0f%%)\t%.1f -> %.1f (%+.0f%%)\t"
               "%+.1f%%\t%+.1f%% (%.0f -> %.0f ms)\t%.1f%% -> %.1f%%",
            label, r->alone_h2d_gbps, r->h2d_gbps,
            change(r->h2d_gbps, r->alone_h2d_gbps), r->alone_d2h_gbps,
            r->d2h_gbps, change(r->d2h_gbps, r->alone_d2h_gbps),
            change(both, both_alone), time, ms(a->time_ns), r->iter_ns / 1e6,
            busy_alone, busy);
  fprintf(js, ",\n \"%s\": {\"h2d_change\": %.4f, \"d2h_change\": %.4f, "
              "\"copy_change\": %.4f, \"time_change\": %.4f, "
              "\"busy_alone\": %.2f, \"busy_shared\": %.2f}",
          key, change(r->h2d_gbps, r->alone_h2d_gbps) / 100.0,
          change(r->d2h_gbps, r->alone_d2h_gbps) / 100.0,
          change(both, both_alone) / 100.0, time / 100.0, busy_alone, busy);
}

/* The head of a U-Net comparison table and its published row. */
static void unet_published_rows(lms__doc_t *d, const char *const *head) {
  lms__doc_table_head(d, 8, head);
  lms__doc_table_row(d, "published (TFLMS)\t%.0f s per epoch\t%.0f s per epoch\t"
               "%.2fx\t-\t%.1f%%\t%.1f%%\t-",
            UNET_X86_EPOCH_S, UNET_AC922_EPOCH_S,
            UNET_X86_EPOCH_S / UNET_AC922_EPOCH_S, UNET_X86_BUSY,
            UNET_AC922_BUSY);
}

/* The published 3D U-Net comparison (CONTEXT.md): AC922 against x86, as
 * predicted at the model's device speed and at the speed calibrated to
 * the x86 run's busy share, and two GPUs sharing a PCIe link.  Scales w's
 * compute (it is the report's last use of w). */
static void unet_section(lms__doc_t *d, FILE *js, lms__workload_t *w,
                         const lms__opts_t *opts, const lms__report_row_t *p3,
                         const lms__report_row_t *n2, uint64_t capacity, int iters) {
  /* The shared-link model compares fixed iterations, as lms sim
   * --gpus-per-link does: three unless --iterations says otherwise. */
  if (iters == LMS__REPLAY_SETTLE) iters = LMS__REPLAY_SETTLE_MIN;
  double pub = UNET_X86_EPOCH_S / UNET_AC922_EPOCH_S;
  lms__doc_heading(d, 2, "Against the published 3D U-Net figures");
  lms__doc_para(d, "TensorFlow LMS, 3D U-Net at 192^3, one model per GPU: an "
           "epoch took %.0f s on x86 with PCIe Gen3 and %.0f s on the "
           "POWER9 AC922 with NVLink 2.0 (%.2fx); the GPU was busy %.1f %% "
           "of the time on x86 and %.1f %% on the AC922. Predicted: the "
           "built-in U-Net on `pcie3` and `nvlink2` (the AC922's 4-GPU "
           "link). The simulator predicts an iteration, not an epoch; the "
           "ratio and the busy share do not depend on the epoch's length.",
       UNET_X86_EPOCH_S, UNET_AC922_EPOCH_S, pub, UNET_X86_BUSY,
       UNET_AC922_BUSY);
  static const char *const head[] = {
      "", "x86 PCIe Gen3", "AC922 NVLink 2.0", "AC922 / x86 time ratio",
      "ratio error", "GPU busy x86", "GPU busy AC922", "busy error (points)"};
  unet_published_rows(d, head);
  fprintf(js, ",\n \"unet_published\": {\"ratio\": %.4f, \"busy_x86\": "
              "%.1f, \"busy_ac922\": %.1f}", pub, UNET_X86_BUSY,
          UNET_AC922_BUSY);
  for (int k = 0; k < 2; k++) {
    const lms__replay_result_t *x = k == 0 ? (p3->od_ok ? &p3->od : NULL)
                                           : &p3->lms;
    const lms__replay_result_t *y = k == 0 ? (n2->od_ok ? &n2->od : NULL)
                                           : &n2->lms;
    if (x == NULL || y == NULL) continue;
    double ratio = (double)x->last.time_ns / (double)y->last.time_ns;
    double bx = pct(x->last.compute_ns, x->last.time_ns);
    double by = pct(y->last.compute_ns, y->last.time_ns);
    const char *label = k == 0 ? "predicted, on-demand swapping (every "
                                 "tensor moved, no prefetch)"
                               : "predicted, lms (prefetch by schedule)";
    lms__doc_table_row(d, "%s\t%.1f ms per iteration\t%.1f ms per iteration\t"
                  "%.2fx\t%+.0f%%\t%.1f%%\t%.1f%%\t%+.1f / %+.1f",
              label, ms(x->last.time_ns), ms(y->last.time_ns), ratio,
              100.0 * (ratio / pub - 1.0), bx, by, bx - UNET_X86_BUSY,
              by - UNET_AC922_BUSY);
    fprintf(js, ",\n \"unet_%s\": {\"ratio\": %.4f, \"ratio_error\": "
                "%.4f, \"busy_x86\": %.2f, \"busy_ac922\": %.2f}",
            k == 0 ? "ondemand" : "lms", ratio, ratio / pub - 1.0, bx, by);
  }
  lms__doc_table_end(d);
  lms__doc_para(d, "TFLMS swapped every activation out in the forward pass and "
           "brought it back ahead of its use in the backward pass; the "
           "on-demand row moves every tensor with no prefetch, the lms "
           "row prefetches by the learned schedule and keeps what fits. "
           "The published x86 and AC922 runs also differ in CPU and "
           "software, which no link model holds.");

  /* Calibrated: the compute speed at which on-demand swapping on pcie3 is
   * as busy as the published x86 run; then AC922 and sharing predicted. */
  typedef struct {
    lms__shared_result_t shared[2]; /* at the model's speed; calibrated */
    int shared_ok[2];
    lms__replay_result_t x86, ac922;
    lms__calibration_t cal;
    char why[LMS__ERRBUF];
  } cal_t;
  cal_t *c = calloc(1, sizeof *c);
  if (c == NULL) {
    lms__doc_para(d, "The calibrated comparison was skipped: no host memory.");
    return;
  }
  lms__opts_t o;
  run_opts(&o, opts, &p3->link, capacity, LMS_POLICY_ONDEMAND);
  c->shared_ok[0] = lms__replay_shared(w, &o, iters, 0, 2, &c->shared[0],
                                       c->why) == LMS_OK;
  int cal_ok = lms__replay_calibrate(w, &o, iters, 0, UNET_X86_BUSY / 100.0,
                                     &c->cal, c->why) == LMS_OK &&
               run(w, opts, &p3->link, capacity, LMS_POLICY_ONDEMAND, iters,
                   NULL, &c->x86, c->why) == LMS_OK &&
               run(w, opts, &n2->link, capacity, LMS_POLICY_ONDEMAND, iters,
                   NULL, &c->ac922, c->why) == LMS_OK;
  if (cal_ok)
    c->shared_ok[1] = lms__replay_shared(w, &o, iters, 0, 2, &c->shared[1],
                                         c->why) == LMS_OK;
  if (cal_ok) {
    double ratio = (double)c->x86.last.time_ns / (double)c->ac922.last.time_ns;
    double bx = pct(c->x86.last.compute_ns, c->x86.last.time_ns);
    double by = pct(c->ac922.last.compute_ns, c->ac922.last.time_ns);
    lms__doc_heading(d, 3, "Calibrated to the x86 profile");
    lms__doc_para(d, "The rows above time compute by the workload's model of the "
            "device (%.2f TFLOP/s). One published figure fixes it instead: "
            "on-demand swapping on pcie3 is busy %.1f %% of its time, as "
            "the x86 run was, when compute runs %.3gx as fast (%.2f TFLOP/s; "
            "%d runs, Note [Calibrating compute to a busy share]). "
            "Everything else below is predicted at that speed; the fitted "
            "figure is marked. The V100's fp32 peak is 15.7 TFLOP/s, which "
            "cuDNN's 3-D convolutions do not reach: the factor stands as "
            "much for TFLMS moving more bytes per FLOP than the model's "
            "tensors do, which a busy share cannot tell apart from speed.",
         w->device_flops / c->cal.speedup / 1e12, UNET_X86_BUSY,
         c->cal.speedup, w->device_flops / 1e12, c->cal.runs);
    unet_published_rows(d, head);
    lms__doc_table_row(d, "predicted, on-demand swapping, calibrated\t%.1f ms per "
                 "iteration\t%.1f ms per iteration\t%.2fx\t%+.0f%%\t"
                 "%.1f%% (fitted)\t%.1f%%\t%+.1f / %+.1f",
              ms(c->x86.last.time_ns), ms(c->ac922.last.time_ns), ratio,
              100.0 * (ratio / pub - 1.0), bx, by, bx - UNET_X86_BUSY,
              by - UNET_AC922_BUSY);
    lms__doc_table_end(d);
    fprintf(js, ",\n \"unet_calibrated\": {\"speedup\": %.6g, "
                "\"device_flops\": %.6g, \"runs\": %d, \"ratio\": %.4f, "
                "\"ratio_error\": %.4f, \"busy_x86\": %.2f, "
                "\"busy_ac922\": %.2f}",
            c->cal.speedup, w->device_flops, c->cal.runs, ratio,
            ratio / pub - 1.0, bx, by);
  } else {
    lms__doc_para(d, "The calibration to the x86 profile failed: %s.", c->why);
  }

  lms__doc_heading(d, 3, "Two GPUs sharing one PCIe Gen3 link");
  double pub_both_alone = both_ways(1, UNET_SHARE_H2D_ALONE, 1,
                                    UNET_SHARE_D2H_ALONE);
  double pub_both = both_ways(1, UNET_SHARE_H2D, 1, UNET_SHARE_D2H);
  double pub_time = change(UNET_SHARE_EPOCH_S, UNET_SHARE_EPOCH_ALONE_S);
  lms__doc_para(d, "Published: with two GPUs behind each PCIe switch the copy "
          "throughput each GPU saw fell about 30 %% each way and an epoch "
          "took %.0f %% longer (8 GPUs, two per link, %.0f s; 4 GPUs, one "
          "per link, %.0f s). Predicted: `lms sim --gpus-per-link 2` on "
          "pcie3 with on-demand swapping (Note [Shared link]). Copy "
          "throughput is bytes over the time a GPU's copies were in flight; "
          "\"both ways\" counts all its copies, the published one assuming "
          "equal bytes each way, as TFLMS moved each tensor out and back.",
       pub_time, UNET_SHARE_EPOCH_S, UNET_SHARE_EPOCH_ALONE_S);
  static const char *const shead[] = {
      "", "host->GPU GB/s", "GPU->host GB/s", "copy throughput, both ways",
      "time per epoch / iteration", "GPU busy alone -> shared"};
  lms__doc_table_head(d, 6, shead);
  lms__doc_table_row(d, "published (TFLMS)\t%.1f -> %.1f (%+.0f%%)\t%.1f -> %.1f "
               "(%+.0f%%)\t%+.1f%%\t%+.1f%% (%.0f -> %.0f s)\t%.1f%% -> "
               "%.1f%%",
            UNET_SHARE_H2D_ALONE, UNET_SHARE_H2D,
            change(UNET_SHARE_H2D, UNET_SHARE_H2D_ALONE), UNET_SHARE_D2H_ALONE,
            UNET_SHARE_D2H, change(UNET_SHARE_D2H, UNET_SHARE_D2H_ALONE),
            change(pub_both, pub_both_alone), pub_time,
            UNET_SHARE_EPOCH_ALONE_S, UNET_SHARE_EPOCH_S, UNET_X86_BUSY,
            UNET_SHARE_BUSY);
  fprintf(js, ",\n \"unet_shared_published\": {\"h2d_change\": %.4f, "
              "\"d2h_change\": %.4f, \"copy_change\": %.4f, "
              "\"time_change\": %.4f, \"busy_alone\": %.2f, "
              "\"busy_shared\": %.2f}",
          change(UNET_SHARE_H2D, UNET_SHARE_H2D_ALONE) / 100.0,
          change(UNET_SHARE_D2H, UNET_SHARE_D2H_ALONE) / 100.0,
          change(pub_both, pub_both_alone) / 100.0, pub_time / 100.0,
          UNET_X86_BUSY, UNET_SHARE_BUSY);
  if (c->shared_ok[0])
    shared_row(d, js, "predicted, on-demand, the model's speed",
               "unet_shared_ondemand", &c->shared[0]);
  if (c->shared_ok[1])
    shared_row(d, js, "predicted, on-demand, calibrated",
               "unet_shared_calibrated", &c->shared[1]);
  lms__doc_table_end(d);
  if (!c->shared_ok[0] || (cal_ok && !c->shared_ok[1]))
    lms__doc_para(d, "A shared-link run failed: %s.", c->why);
  lms__doc_para(d, "On-demand swapping writes back every tensor it gives up that was "
          "written (gradients included) and reads back only what a later "
          "layer needs, so it moves about twice the bytes out that it moves "
          "in: its device-to-host copies meet the other GPU's more often "
          "than its host-to-device copies do, and the loss splits unevenly "
          "between the directions where TFLMS's was even. Both ways "
          "together, and in time and busy share, the prediction is what to "
          "compare.");
  free(c);
}

int lms__cli_report(const lms_options_t *base, int argc, char **argv) {
  report_args_t *a = calloc(1, sizeof *a);
  if (a == NULL) {
    fprintf(stderr, "lms report: out of memory\n");
    return 1;
  }
  int rc = 2;
  char err[LMS__ERRBUF] = "";
  lms__workload_t w;
  lms__wl_init(&w, NULL);
  lms__report_row_t *rows = NULL;
  lms__report_tline_t *tls = NULL;
  int ntl = 0;
  lms__doc_t d = {NULL, NULL};
  FILE *js = NULL;
  lms__stats_file_t run_sf;
  if (parse_args(argc, argv, a) != 0) goto done;
  if (a->ranks[0] != '\0') {
    rc = lms__report_ranks(a->ranks, a->out);
    goto done;
  }
  if (a->link_file[0] != '\0') {
    rc = lms__report_link(a->link_file, a->out);
    goto done;
  }
  /* The replays write no stats or trace files of their own, whatever
   * LMS_STATS and LMS_TRACE say. */
  lms__opts_t *opts = &a->opts;
  lms__opts_copy(opts, &base->v);
  opts->stats = opts->stats_buf;
  opts->stats_buf[0] = '\0';
  opts->trace = opts->trace_buf;
  opts->trace_buf[0] = '\0';
  if (opts->device == LMS_DEVICE_CUDA) {
    bad("--device cuda: the report replays on the simulated device; give a "
        "real run's --stats and --trace instead");
    goto done;
  }
  int have_run = a->stats[0] != '\0';
  if (have_run && lms__stats_file_read(a->stats, &run_sf, err) != LMS_OK) {
    bad("--stats: %s", err);
    goto done;
  }
  {
    lms__simcmd_args_t sa;
    lms__simcmd_args_init(&sa);
    snprintf(sa.input, sizeof sa.input, "%s", a->input);
    sa.params = a->params;
    if (lms__simcmd_load(&sa, &w, err) != LMS_OK) {
      bad("%s", err);
      goto done;
    }
  }
  /* A run's trace holds the whole run: replay it once and compare with the
   * run's elapsed time.  A measured iteration's trace is replayed for its
   * warm-up and measured iterations and the last compared (Note [A
   * measured iteration's stats]); so is a workload, as `lms sim` does. */
  const lms__stats_file_t *first_sf =
      have_run ? &run_sf : a->nm > 0 ? &a->m[0].sf : NULL;
  for (int i = 0; i < a->nm; i++) {
    const lms__stats_file_t *sf = &a->m[i].sf;
    if ((sf->iterations > 0) != (first_sf->iterations > 0) ||
        sf->iterations + sf->warmup !=
            first_sf->iterations + first_sf->warmup) {
      bad("%s and %s cover different spans (%s); give stats of the same "
          "kind, for the same number of iterations", first_sf->path,
          sf->path,
          (sf->iterations > 0) != (first_sf->iterations > 0)
              ? "a whole run and measured iterations"
              : "measured iterations after different warm-ups");
      goto done;
    }
  }
  int whole_run = first_sf != NULL && first_sf->iterations == 0;
  int per_iteration = first_sf != NULL && first_sf->iterations > 0;
  int iters = whole_run       ? 1
              : per_iteration ? first_sf->warmup + first_sf->iterations
                              : a->iterations;
  const char *unit = whole_run ? "run" : "iteration";
  uint64_t capacity = opts->gpu_limit;
  if (capacity == 0 && have_run) capacity = run_sf.st.device_limit;
  if (capacity == 0 && a->nm > 0) capacity = a->m[0].sf.st.device_limit;
  if (capacity == 0) capacity = 16ull << 30;
  if (capacity < lms__wl_max_step_bytes(&w)) {
    bad("a GPU of %llu bytes cannot hold the largest step of '%s' (%llu "
        "bytes); give a larger --gpu-limit",
        (unsigned long long)capacity, w.name,
        (unsigned long long)lms__wl_max_step_bytes(&w));
    goto done;
  }
  if (a->nlinks == 0) {
    for (size_t i = 0; i < NPRESETS; i++)
      lms__link_parse(kPresets[i], &a->links[a->nlinks++], err);
  }
  lms__policy_t policy = opts->policy;

  if (lms__cli_out_dir(a->out, err) != 0) {
    fprintf(stderr, "lms report: %s\n", err);
    goto done;
  }
  rc = 1;
  /* The rows: measured runs first, each with its prediction, then the
   * predictions for every link asked for. */
  size_t nrows = (size_t)a->nm + (have_run ? 1 : 0) + a->nlinks;
  rows = calloc(nrows, sizeof *rows);
  tls = calloc(2, sizeof *tls);
  if (rows == NULL || tls == NULL) {
    fprintf(stderr, "lms report: out of memory\n");
    goto done;
  }
  lms__report_measured_t run_m;
  memset(&run_m, 0, sizeof run_m);
  size_t nr = 0;
  if (have_run) {
    snprintf(run_m.kind, sizeof run_m.kind, "measured");
    run_m.link = opts->link;
    run_m.sf = run_sf;
    rows[nr].link = opts->link;
    rows[nr++].m = &run_m;
  }
  for (int i = 0; i < a->nm; i++) {
    rows[nr].link = a->m[i].link;
    rows[nr++].m = &a->m[i];
  }
  for (size_t i = 0; i < a->nlinks; i++) rows[nr++].link = a->links[i];

  lms__replay_result_t mem;
  if (lms__simcmd_in_memory(&w, opts, iters, &mem, err) != LMS_OK) {
    fprintf(stderr, "lms report: the in-memory run failed: %s\n", err);
    goto done;
  }
  for (size_t i = 0; i < nr; i++) {
    lms__report_row_t *r = &rows[i];
    r->ok = run(&w, opts, &r->link, capacity, policy, iters, NULL, &r->lms,
                r->fail) == LMS_OK;
    char e2[LMS__ERRBUF];
    r->od_ok = policy != LMS_POLICY_ONDEMAND &&
               run(&w, opts, &r->link, capacity, LMS_POLICY_ONDEMAND, iters,
                   NULL, &r->od, e2) == LMS_OK;
  }

  /* Timelines: the run's link; or, comparing, the slowest PCIe link asked
   * for beside the fastest NVLink (the source document's contrast). */
  {
    const lms__link_t *pick[2] = {NULL, NULL};
    if (have_run) {
      pick[0] = &opts->link;
    } else if (a->compare) {
      for (size_t i = 0; i < a->nlinks; i++) {
        const lms__link_t *l = &a->links[i];
        if (strncmp(l->name, "pcie", 4) == 0 &&
            (pick[0] == NULL || l->h2d_gbps < pick[0]->h2d_gbps))
          pick[0] = l;
        if (strncmp(l->name, "nvlink", 6) == 0 &&
            (pick[1] == NULL || l->h2d_gbps > pick[1]->h2d_gbps))
          pick[1] = l;
      }
      if (pick[0] == NULL) pick[0] = &a->links[0];
      if (pick[1] == NULL && a->nlinks > 1) pick[1] = &a->links[a->nlinks - 1];
    } else {
      pick[0] = opts->source[LMS__OPT_link] != LMS__SRC_DEFAULT ? &opts->link
                                                                : &a->links[0];
    }
    for (int i = 0; i < 2 && pick[i] != NULL; i++) {
      lms__report_tline_t *t = &tls[ntl++];
      lms__tl_init(&t->tl);
      t->link = *pick[i];
      if (run(&w, opts, pick[i], capacity, policy, iters, &t->tl, &t->r,
              t->fail) != LMS_OK) {
        ntl--;
        lms__tl_free(&t->tl);
        fprintf(stderr, "lms report: the timeline on %s failed: %s\n",
                pick[i]->name, t->fail);
        continue;
      }
      t->ok = 1;
    }
    uint32_t count = a->steps_given ? a->step_count : DEFAULT_WINDOW;
    if (a->steps_given && a->step_first >= w.nsteps) {
      bad("--steps: the first step %u is past the last step of '%s' (%u)",
          a->step_first, w.name, w.nsteps - 1);
      rc = 2;
      goto done;
    }
    /* The first link picks the window; the second shows the same steps. */
    for (int i = 0; i < ntl; i++)
      pick_window(&tls[i], w.nsteps, a->steps_given || i > 0,
                  i > 0 ? tls[0].first : a->step_first, count);
  }

  /* Note [How much GPU a workload needs]: on the timelines' links. */
  static lms__limit_set_t limits[2];
  int nlimits = 0;
  for (int i = 0; i < ntl && i < 2; i++) {
    limits[nlimits].link = tls[i].link.name;
    limits[nlimits].n = lms__report_limits(&w, opts, &tls[i].link, policy,
                                           iters, limits[nlimits].points);
    if (limits[nlimits].n > 0) nlimits++;
  }

  /* Files. */
  lms__report_charts_t ch;
  memset(&ch, 0, sizeof ch);
  ch.dir = a->out;
  lms__plot_find(&ch.plot);
  if (nlimits > 0 && lms__report_limits_chart(a->out, limits, nlimits, w.name,
                                              mem.last.time_ns, err) != 0) {
    fprintf(stderr, "lms report: %s\n", err);
    goto done;
  }
  int drawn_limits = nlimits > 0 && lms__report_draw(&ch, "limits.gp", "limits.png");
  if ((ntl > 0 && lms__report_timeline_chart(&ch, tls, ntl, &w, err) != 0) ||
      lms__report_link_charts(&ch, rows, nr, unit, policy_name(policy), &w, mem.last.time_ns, err) != 0) {
    fprintf(stderr, "lms report: %s\n", err);
    goto done;
  }
  int drawn_tl = ntl > 0 && lms__report_draw(&ch, "timeline.gp", "timeline.png");
  int drawn_links = lms__report_draw(&ch, "links.gp", "links.png");
  int drawn_busy = lms__report_draw(&ch, "busy.gp", "busy.png");

  d.md = lms__report_open_in(a->out, "report.md", err);
  d.html = d.md ? lms__report_open_in(a->out, "report.html", err) : NULL;
  js = d.html ? lms__report_open_in(a->out, "report.json", err) : NULL;
  if (js == NULL) {
    fprintf(stderr, "lms report: %s\n", err);
    goto done;
  }
  fprintf(d.html, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                  "<title>lms report: %s</title>\n<style>body{font-family:"
                  "sans-serif;max-width:1150px;margin:2em auto}table{border-"
                  "collapse:collapse}td,th{border:1px solid #ccc;padding:2px "
                  "8px;text-align:right}td:first-child{text-align:left}"
                  "img{max-width:100%%}</style></head><body>\n", w.name);
  char title[160];
  snprintf(title, sizeof title, "%s: %s",
           a->compare ? "NVLink vs PCIe" : "lms report", w.name);
  lms__doc_heading(&d, 1, title);
  lms__doc_para(&d, "%u steps, %u chunks, %.2f GB of chunks, %.1f ms of compute per "
           "%s; a %.1f GiB GPU, policy `%s`, -lms %lld. In memory (a GPU "
           "holding everything): %.1f ms per %s.",
       w.nsteps, w.nchunks, gb(lms__wl_chunk_bytes(&w)),
       ms(lms__wl_compute_ns(&w)), whole_run ? "run (the trace)" : "iteration",
       (double)capacity / (1ull << 30),
       policy_name(policy),
       (long long)(opts->source[LMS__OPT_lms_kb] == LMS__SRC_DEFAULT
                       ? 0
                       : opts->lms_kb),
       ms(mem.last.time_ns), unit);
  char span[128];
  if (per_iteration)
    snprintf(span, sizeof span, "the run's trace for %d iterations, the "
             "last compared with the mean of the %d the run measured after "
             "%d of warm-up", iters, first_sf->iterations, first_sf->warmup);
  else
    snprintf(span, sizeof span, "%s", whole_run
                 ? "the run's trace, once"
                 : "the workload, the last of the iterations measured");
  lms__doc_para(&d, "Predicted figures are replays through the runtime on the "
           "simulated device (`lms sim` gives the same numbers) of %s; %s",
       span,
       have_run || a->nm > 0
           ? "measured figures are the stats files the runs wrote."
           : "no measured run was given (pass a real run's files: `--stats "
             "PATH --trace PATH`, or with `--compare-links`, `--native "
             "LINK=STATS` and `--emulated LINK=STATS`).");

  /* Measured runs beside their predictions. */
  fprintf(js, "{\"workload\": \"%s\", \"unit\": \"%s\", \"capacity\": %llu, "
              "\"policy\": \"%s\", \"in_memory_ns\": %llu,",
          w.name, unit, (unsigned long long)capacity, policy_name(policy),
          (unsigned long long)mem.last.time_ns);
  /* Note [A report's verdict]. */
  write_verdict(&d, js, rows, nr, mem.last.time_ns, unit);
  fprintf(js, "\n \"measured\": [");
  int first_js = 1;
  if (have_run || a->nm > 0) {
    lms__doc_heading(&d, 2, "Measured and predicted");
    static const char *const head[] = {
        "run", "link", "measured ms", "predicted ms", "error",
        "GPU busy meas.", "GPU busy pred.", "H2D GB meas.", "H2D GB pred.",
        "D2H GB meas.", "D2H GB pred.", "stall ms meas.", "stall ms pred."};
    lms__doc_table_head(&d, 13, head);
    for (size_t i = 0; i < nr; i++) {
      const lms__report_row_t *r = &rows[i];
      if (r->m == NULL) continue;
      const lms_stats_t *s = &r->m->sf.st;
      uint64_t comp = lms__wl_compute_ns(&w);
      if (!r->ok) {
        lms__doc_table_row(&d, "%s\t%s\t%.1f\tfailed: %.100s\t\t\t\t\t\t\t\t\t",
                  r->m->kind, r->link.name, ms(s->elapsed_ns), r->fail);
        continue;
      }
      const lms__replay_iter_t *p = &r->lms.last;
      double e = (double)p->time_ns / (double)s->elapsed_ns - 1.0;
      /* What the stats file left out is shown as absent, not as 0. */
      const lms__stats_file_t *sf = &r->m->sf;
      char h2d[24] = "-", d2h[24] = "-", stall[24] = "-";
      char jh2d[24] = "null", jd2h[24] = "null", jstall[24] = "null";
      if (lms__stats_file_has(sf, "bytes_h2d")) {
        snprintf(h2d, sizeof h2d, "%.2f", gb((uint64_t)s->bytes_h2d.total));
        snprintf(jh2d, sizeof jh2d, "%lld", (long long)s->bytes_h2d.total);
      }
      if (lms__stats_file_has(sf, "bytes_d2h")) {
        snprintf(d2h, sizeof d2h, "%.2f", gb((uint64_t)s->bytes_d2h.total));
        snprintf(jd2h, sizeof jd2h, "%lld", (long long)s->bytes_d2h.total);
      }
      if (lms__stats_file_has(sf, "stall_ns")) {
        snprintf(stall, sizeof stall, "%.1f", ms((uint64_t)s->stall_ns.total));
        snprintf(jstall, sizeof jstall, "%lld", (long long)s->stall_ns.total);
      }
      lms__doc_table_row(&d,
                "%s (`%s`)\t%s\t%.1f\t%.1f\t%+.1f%%\t%.1f%%\t%.1f%%\t%s\t"
                "%.2f\t%s\t%.2f\t%s\t%.1f",
                r->m->kind, sf->path, r->link.name, ms(s->elapsed_ns),
                ms(p->time_ns), 100.0 * e, pct(comp, s->elapsed_ns),
                pct(p->compute_ns, p->time_ns), h2d, gb(p->bytes_h2d), d2h,
                gb(p->bytes_d2h), stall, ms(p->stall_ns));
      fprintf(js, "%s\n  {\"kind\": \"%s\", \"link\": \"%s\", "
                  "\"elapsed_ns\": %llu, \"bytes_h2d\": %s, "
                  "\"bytes_d2h\": %s, \"stall_ns\": %s, \"error\": %.4f, ",
              first_js ? "" : ",", r->m->kind, r->link.name,
              (unsigned long long)s->elapsed_ns, jh2d, jd2h, jstall, e);
      json_run(js, "predicted", &r->lms);
      fputc('}', js);
      first_js = 0;
    }
    lms__doc_table_end(&d);
    lms__doc_para(&d, "error: predicted over measured, minus one. Measured GPU busy "
             "is the trace's compute time over the %s's measured time%s.",
         unit, per_iteration ? "" : "; whole-run stats hold totals, so the "
                                    "run's setup counts in its time");
  }
  fprintf(js, "],\n \"links\": [");

  /* Per link. */
  int any_measured = 0;
  for (size_t i = 0; i < nr; i++) any_measured |= rows[i].m != NULL;
  lms__doc_heading(&d, 2, a->compare ? "Side by side: every link"
                            : "Per link (predicted)");
  {
    char c_ms[40], c_od[40];
    snprintf(c_ms, sizeof c_ms, "%s ms per %s", policy_name(policy), unit);
    snprintf(c_od, sizeof c_od, "on-demand ms per %s", unit);
    const char *head[] = {"link", "H2D/D2H GB/s", "source", c_ms,
                          "x in memory", "bound ms", "lower bound ms",
                          "GPU busy", "H2D GB", "D2H GB", "stall ms", c_od,
                          "on-demand busy", "error"};
    /* The error column only where a measured run gives it one. */
    lms__doc_table_head(&d, any_measured ? 14 : 13, head);
  }
  first_js = 1;
  for (size_t i = 0; i < nr; i++) {
    const lms__report_row_t *r = &rows[i];
    char src[64], odc[32] = "-", odb[32] = "-", errc[32] = "-";
    if (r->m != NULL)
      snprintf(src, sizeof src, "%s (measured %.1f ms)", r->m->kind,
               ms(r->m->sf.st.elapsed_ns));
    else
      snprintf(src, sizeof src, "predicted");
    if (!r->ok) {
      lms__doc_table_row(&d, "%s\t%.1f/%.1f\t%s\tfailed: %.120s\t\t\t\t\t\t\t\t\t%s",
                r->link.name, r->link.h2d_gbps, r->link.d2h_gbps, src,
                r->fail, any_measured ? "\t" : "");
      continue;
    }
    const lms__replay_iter_t *l = &r->lms.last;
    if (r->od_ok) {
      snprintf(odc, sizeof odc, "%.1f", ms(r->od.last.time_ns));
      snprintf(odb, sizeof odb, "%.1f%%",
               pct(r->od.last.compute_ns, r->od.last.time_ns));
    }
    if (r->m != NULL)
      snprintf(errc, sizeof errc, "%+.1f%%",
               100.0 * ((double)l->time_ns / (double)r->m->sf.st.elapsed_ns -
                        1.0));
    lms__doc_table_row(&d, "%s\t%.1f/%.1f\t%s\t%.1f\t%.2fx\t%.1f\t%.1f\t%.1f%%\t%.2f\t"
                  "%.2f\t%.1f\t%s\t%s%s%s",
              r->link.name, r->link.h2d_gbps, r->link.d2h_gbps, src,
              ms(l->time_ns), (double)l->time_ns / (double)mem.last.time_ns,
              ms(r->lms.overlap_bound_ns), ms(r->lms.lower.time_ns),
              pct(l->compute_ns, l->time_ns), gb(l->bytes_h2d),
              gb(l->bytes_d2h), ms(l->stall_ns), odc, odb,
              any_measured ? "\t" : "", any_measured ? errc : "");
    if (r->m != NULL) continue;
    fprintf(js, "%s\n  {\"link\": \"%s\", \"h2d_gbps\": %.3f, "
                "\"d2h_gbps\": %.3f, ",
            first_js ? "" : ",", r->link.name, r->link.h2d_gbps,
            r->link.d2h_gbps);
    json_run(js, "lms", &r->lms);
    if (r->od_ok) {
      fputs(", ", js);
      json_run(js, "ondemand", &r->od);
    }
    fputc('}', js);
    first_js = 0;
  }
  lms__doc_table_end(&d);
  lms__doc_para(&d, "x in memory: time over the in-memory time; bound: max(compute, "
           "H2D bytes / rate, D2H bytes / rate), which no schedule of these "
           "copies beats; lower bound: the least time any policy can take "
           "at this capacity over this link (the fewest bytes and copies "
           "that must move, and the copies each part must hold when the %s "
           "is cut at one step, or its cycle at two or three); GPU busy: compute over the %s's time; on-demand: "
           "caffe-ibm's swapping (in when used, no prefetch) for contrast.",
       unit, unit);
  lms__doc_image(&d, "links.png", "bytes and time per link", drawn_links, ch.why);
  lms__doc_image(&d, "busy.png", "GPU busy per link", drawn_busy, ch.why);
  fprintf(js, "\n ],\n \"timelines\": [");

  /* The published U-Net comparison, for the built-in U-Net at 192^3. */
  const lms__report_row_t *p3 = NULL, *n2 = NULL;
  for (size_t i = 0; i < nr; i++) {
    if (rows[i].m != NULL || !rows[i].ok) continue;
    if (strcmp(rows[i].link.name, "pcie3") == 0) p3 = &rows[i];
    if (strcmp(rows[i].link.name, "nvlink2") == 0) n2 = &rows[i];
  }
  int unet = strncmp(w.name, "unet3d-192-b1-train", 19) == 0 && p3 && n2;

  /* Timelines. */
  if (ntl > 0) {
    lms__doc_heading(&d, 2, "Timeline");
    lms__doc_para(&d, "The kernels of steps %u to %u of the measured %s and every "
             "copy beside them, as the simulated device recorded them "
             "(start and end of each piece of work read back from the "
             "device as it ran%s). Red on the compute row is the GPU "
             "waiting for data.%s",
         tls[0].first, tls[0].first + tls[0].count - 1, unit,
         have_run ? "; a real run's stats hold totals only, so this is its "
                    "trace replayed at the run's link" : "",
         a->steps_given ? "" : " The steps are the ones where compute "
                               "waited longest; choose others with "
                               "`--steps FIRST:COUNT`.");
    static const char *const head[] = {"link", "steps", "window ms",
                                       "GPU busy ms", "GPU waits ms",
                                       "GPU waits"};
    lms__doc_table_head(&d, 6, head);
    for (int i = 0; i < ntl; i++) {
      const lms__report_tline_t *t = &tls[i];
      lms__doc_table_row(&d, "%s\t%u-%u\t%.2f\t%.2f\t%.2f\t%.1f%%", t->link.name,
                t->first, t->first + t->count - 1, ms(t->t1 - t->t0),
                ms(t->busy), ms(t->waiting), pct(t->waiting, t->t1 - t->t0));
      fprintf(js, "%s\n  {\"link\": \"%s\", \"first_step\": %u, "
                  "\"steps\": %u, \"window_ns\": %llu, \"busy_ns\": %llu, "
                  "\"waiting_ns\": %llu, \"spans\": %zu, \"truncated\": %d, "
                  "\"iteration_ns\": %llu, \"compute_ns\": %llu, "
                  "\"bytes_h2d\": %llu, \"bytes_d2h\": %llu, "
                  "\"trace\": \"timeline-%s.json\"}",
              i ? "," : "", t->link.name, t->first, t->count,
              (unsigned long long)(t->t1 - t->t0),
              (unsigned long long)t->busy, (unsigned long long)t->waiting,
              t->tl.n, t->tl.truncated,
              (unsigned long long)t->r.last.time_ns,
              (unsigned long long)t->r.last.compute_ns,
              (unsigned long long)t->r.last.bytes_h2d,
              (unsigned long long)t->r.last.bytes_d2h, t->link.name);
    }
    lms__doc_table_end(&d);
    lms__doc_image(&d, "timeline.png", "timeline of kernels and copies", drawn_tl,
          ch.why);
    static const char *const shead[] = {"step", "name", "kernel ms",
                                        "waited before it ms"};
    lms__doc_table_head(&d, 4, shead);
    const lms__report_tline_t *t = &tls[0];
    uint64_t prev = t->t0;
    for (size_t i = 0; i < t->tl.n; i++) {
      const lms__tl_span_t *s = &t->tl.spans[i];
      if (!lms__report_shown_kernel(t, s)) continue;
      lms__doc_table_row(&d, "%u\t%s\t%.3f\t%.3f", s->step, w.steps[s->step].name,
                ms(s->end_ns - s->start_ns),
                ms(s->start_ns > prev ? s->start_ns - prev : 0));
      if (s->end_ns > prev) prev = s->end_ns;
    }
    lms__doc_table_end(&d);
  }
  fprintf(js, "\n ]");

  /* How much GPU it needs. */
  fprintf(js, ",\n \"limits\": [");
  if (nlimits > 0) {
    lms__doc_heading(&d, 2, "How much GPU it needs");
    lms__doc_para(&d, "The time per %s against the GPU limit, from just over its "
             "largest step to 1.25x all of its chunks (room for them all "
             "beside the eighth the runtime keeps free), with the least time "
             "any policy can take at each limit (Note [How much GPU a "
             "workload needs]).", unit);
    static const char *const lhead[] = {"link", "GPU limit GiB",
                                        "ms per iteration", "x in memory",
                                        "lower bound ms", "H2D GB", "D2H GB"};
    lms__doc_table_head(&d, 7, lhead);
    for (int k = 0; k < nlimits; k++) {
      for (int i = 0; i < limits[k].n; i++) {
        const lms__limit_point_t *p = &limits[k].points[i];
        double gib = (double)p->capacity / (double)(1ull << 30);
        if (!p->ok) {
          lms__doc_table_row(&d, "%s\t%.2f\tdoes not run: %.100s\t\t\t\t",
                    limits[k].link, gib, p->why);
        } else {
          lms__doc_table_row(&d, "%s\t%.2f\t%.1f\t%.2fx\t%.1f\t%.2f\t%.2f",
                    limits[k].link, gib, ms(p->time_ns),
                    (double)p->time_ns / (double)mem.last.time_ns,
                    ms(p->lower_ns), gb(p->bytes_h2d), gb(p->bytes_d2h));
        }
        fprintf(js, "%s\n  {\"link\": \"%s\", \"gpu_limit\": %llu, ",
                k + i ? "," : "", limits[k].link,
                (unsigned long long)p->capacity);
        if (p->ok)
          fprintf(js, "\"iteration_ns\": %llu, \"lower_bound_ns\": %llu}",
                  (unsigned long long)p->time_ns,
                  (unsigned long long)p->lower_ns);
        else
          fprintf(js, "\"iteration_ns\": null, \"lower_bound_ns\": null}");
      }
    }
    lms__doc_table_end(&d);
    lms__doc_image(&d, "limits.png", "iteration time against the GPU limit",
          drawn_limits, ch.why);
  }
  fprintf(js, "\n ]");

  if (unet) unet_section(&d, js, &w, opts, p3, n2, capacity, iters);
  fprintf(js, "\n}\n");

  /* Files and the charts' state. */
  lms__doc_heading(&d, 2, "Files");
  lms__doc_para(&d, "In `%s`: `report.md`, `report.html`, `report.json`; charts "
           "`timeline.png`, `links.png`, `busy.png`, each drawn by the "
           "gnuplot script of the same name (`.gp`, with its `.dat` data) "
           "-- redraw with `gnuplot NAME.gp` in this directory.",
       a->out);
  if (ch.skipped)
    lms__doc_para(&d, "Note: charts were skipped: %s. The scripts and data are "
             "written; the tables above hold every figure.", ch.why);
  fputs("</body></html>\n", d.html);
  rc = 0;
  if (fclose(d.md) != 0 || fclose(d.html) != 0 || fclose(js) != 0) {
    fprintf(stderr, "lms report: writing the report in '%s' failed\n",
            a->out);
    rc = 1;
  }
  d.md = d.html = js = NULL;
  printf("lms report: wrote %s/report.md, %s/report.html, %s/report.json\n",
         a->out, a->out, a->out);
  if (ch.skipped)
    printf("lms report: charts skipped: %s\n  (scripts and data are in %s: "
           "timeline.gp, links.gp, busy.gp)\n", ch.why, a->out);
  else
    printf("lms report: charts %s/timeline.png, %s/links.png, %s/busy.png\n",
           a->out, a->out, a->out);
  for (int i = 0; i < ntl; i++)
    printf("  %-8s %.1f ms per %s, GPU busy %.1f%%; in steps %u-%u the GPU "
           "waits %.1f of %.1f ms (%.0f%%)\n",
           tls[i].link.name, ms(tls[i].r.last.time_ns), unit,
           pct(tls[i].r.last.compute_ns, tls[i].r.last.time_ns),
           tls[i].first, tls[i].first + tls[i].count - 1,
           ms(tls[i].waiting), ms(tls[i].t1 - tls[i].t0),
           pct(tls[i].waiting, tls[i].t1 - tls[i].t0));

done:
  if (d.md) fclose(d.md);
  if (d.html) fclose(d.html);
  if (js) fclose(js);
  for (int i = 0; i < ntl; i++) lms__tl_free(&tls[i].tl);
  free(tls);
  free(rows);
  lms__wl_free(&w);
  free(a);
  return rc;
}
