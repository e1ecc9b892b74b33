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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/plot.h"
#include "cli/report.h"
#include "cli/report_parts.h"

/* --steps COUNT when not given: the steps a timeline shows. */
#define DEFAULT_WINDOW 12

/* The charts of r, drawn into r->out: -1 with err when their files cannot
 * be written (a missing or failing gnuplot only leaves the PNGs out). */
static int charts(lms__report_t *r, char *err) {
  lms__report_charts_t *ch = &r->ch;
  ch->dir = r->out;
  lms__plot_find(&ch->plot);
  if (r->nlimits > 0 &&
      lms__report_limits_chart(r->out, r->limits, r->nlimits, r->w->name,
                               r->mem.last.time_ns, err) != 0)
    return -1;
  r->drawn_limits =
      r->nlimits > 0 && lms__report_draw(ch, "limits.gp", "limits.png");
  if ((r->ntl > 0 &&
       lms__report_timeline_chart(ch, r->tls, r->ntl, r->w, err) != 0) ||
      lms__report_link_charts(ch, r->rows, r->nr, r->unit,
                              lms__report_policy_name(r->policy), r->w,
                              r->mem.last.time_ns, err) != 0)
    return -1;
  r->drawn_tl = r->ntl > 0 && lms__report_draw(ch, "timeline.gp", "timeline.png");
  r->drawn_links = lms__report_draw(ch, "links.gp", "links.png");
  r->drawn_busy = lms__report_draw(ch, "busy.gp", "busy.png");
  return 0;
}

/* report.md, report.html and report.json in r->out; 0, or 1 with the
 * failure printed. */
static int write_report(const lms__report_t *r) {
  char err[LMS__ERRBUF];
  lms__doc_t d = {NULL, NULL};
  d.md = lms__report_open_in(r->out, "report.md", err);
  d.html = d.md ? lms__report_open_in(r->out, "report.html", err) : NULL;
  FILE *js = d.html ? lms__report_open_in(r->out, "report.json", err) : NULL;
  if (js == NULL) {
    fprintf(stderr, "lms report: %s\n", err);
    if (d.md) fclose(d.md);
    if (d.html) fclose(d.html);
    return 1;
  }
  lms__report_page(&d, r);
  lms__report_json(js, r);
  int bad_close = fclose(d.md) != 0;
  bad_close |= fclose(d.html) != 0;
  bad_close |= fclose(js) != 0;
  if (bad_close) {
    fprintf(stderr, "lms report: writing the report in '%s' failed\n", r->out);
    return 1;
  }
  return 0;
}

/* What the report wrote, and each timeline in a line. */
static void summary(const lms__report_t *r) {
  const char *o = r->out;
  printf("lms report: wrote %s/report.md, %s/report.html, %s/report.json\n",
         o, o, o);
  if (r->ch.skipped)
    printf("lms report: charts skipped: %s\n  (scripts and data are in %s: "
           "timeline.gp, links.gp, busy.gp)\n", r->ch.why, o);
  else
    printf("lms report: charts %s/timeline.png, %s/links.png, %s/busy.png\n",
           o, o, o);
  for (int i = 0; i < r->ntl; i++) {
    const lms__report_tline_t *t = &r->tls[i];
    printf("  %-8s %.1f ms per %s, GPU busy %.1f%%; in steps %u-%u the GPU "
           "waits %.1f of %.1f ms (%.0f%%)\n",
           t->link.name, ms(t->r.last.time_ns), r->unit,
           pct(t->r.last.compute_ns, t->r.last.time_ns), t->first,
           t->first + t->count - 1, ms(t->waiting), ms(t->t1 - t->t0),
           pct(t->waiting, t->t1 - t->t0));
  }
}

int lms__cli_report(const lms_options_t *base, int argc, char **argv) {
  lms__report_args_t *a = calloc(1, sizeof *a);
  lms__report_t *r = calloc(1, sizeof *r);
  lms__report_row_t *rows = NULL;
  if (a == NULL || r == NULL) {
    fprintf(stderr, "lms report: out of memory\n");
    free(a);
    free(r);
    return 1;
  }
  int rc = 2;
  char err[LMS__ERRBUF] = "";
  lms__workload_t w;
  lms__wl_init(&w, NULL);
  lms__stats_file_t run_sf;
  lms__report_measured_t run_m;
  if (lms__report_parse_args(argc, argv, a) != 0) goto done;
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
    lms__report_bad("--device cuda: the report replays on the simulated device; give a "
        "real run's --stats and --trace instead");
    goto done;
  }
  int have_run = a->stats[0] != '\0';
  if (have_run && lms__stats_file_read(a->stats, &run_sf, err) != LMS_OK) {
    lms__report_bad("--stats: %s", err);
    goto done;
  }
  {
    lms__simcmd_args_t sa;
    lms__simcmd_args_init(&sa);
    snprintf(sa.input, sizeof sa.input, "%s", a->input);
    sa.params = a->params;
    if (lms__simcmd_load(&sa, &w, err) != LMS_OK) {
      lms__report_bad("%s", err);
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
      lms__report_bad("%s and %s cover different spans (%s); give stats of the same "
          "kind, for the same number of iterations", first_sf->path,
          sf->path,
          (sf->iterations > 0) != (first_sf->iterations > 0)
              ? "a whole run and measured iterations"
              : "measured iterations after different warm-ups");
      goto done;
    }
  }
  r->out = a->out;
  r->w = &w;
  r->opts = opts;
  r->policy = opts->policy;
  r->compare = a->compare;
  r->steps_given = a->steps_given;
  r->have_run = have_run;
  r->first_sf = first_sf;
  r->whole_run = first_sf != NULL && first_sf->iterations == 0;
  r->per_iteration = first_sf != NULL && first_sf->iterations > 0;
  r->iters = r->whole_run       ? 1
             : r->per_iteration ? first_sf->warmup + first_sf->iterations
                                : a->iterations;
  r->unit = r->whole_run ? "run" : "iteration";
  r->capacity = opts->gpu_limit;
  if (r->capacity == 0 && have_run) r->capacity = run_sf.st.device_limit;
  if (r->capacity == 0 && a->nm > 0) r->capacity = a->m[0].sf.st.device_limit;
  if (r->capacity == 0) r->capacity = 16ull << 30;
  if (r->capacity < lms__wl_max_step_bytes(&w)) {
    lms__report_bad("a GPU of %llu bytes cannot hold the largest step of '%s' (%llu "
        "bytes); give a larger --gpu-limit",
        (unsigned long long)r->capacity, w.name,
        (unsigned long long)lms__wl_max_step_bytes(&w));
    goto done;
  }
  if (a->steps_given && a->step_first >= w.nsteps) {
    lms__report_bad("--steps: the first step %u is past the last step of '%s' (%u)",
        a->step_first, w.name, w.nsteps - 1);
    goto done;
  }
  if (lms__cli_out_dir(a->out, err) != 0) {
    fprintf(stderr, "lms report: %s\n", err);
    goto done;
  }
  rc = 1;
  /* The rows: measured runs first, each with its prediction, then the
   * predictions for every link asked for. */
  rows = calloc((size_t)a->nm + 1 + a->nlinks, sizeof *rows);
  if (rows == NULL) {
    fprintf(stderr, "lms report: out of memory\n");
    goto done;
  }
  size_t nr = 0;
  if (have_run) {
    memset(&run_m, 0, sizeof run_m);
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
  r->rows = rows;
  r->nr = nr;
  if (lms__report_build(r, a->links, a->nlinks, a->step_first,
                        a->steps_given ? a->step_count : DEFAULT_WINDOW) != 0)
    goto done;
  if (charts(r, err) != 0) {
    fprintf(stderr, "lms report: %s\n", err);
    goto done;
  }
  rc = write_report(r);
  if (rc == 0) summary(r);

done:
  lms__report_free(r);
  free(rows);
  lms__wl_free(&w);
  free(r);
  free(a);
  return rc;
}
