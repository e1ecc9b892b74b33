/* report_limits.c - `lms report`'s answer to "how much GPU does this
 * workload need": the iteration time against the GPU limit.
 *
 * Note [How much GPU a workload needs]
 * A workload cannot run under the bytes of its largest step, and needs no
 * swapping at all once every chunk fits; between the two the time falls
 * as the limit grows.  The report runs the workload at LIMIT_POINTS limits
 * spaced evenly on a log scale from 1.05x the largest step to 1.25x the
 * bytes of all chunks (room for all of them beside the eighth the runtime
 * keeps free, Note [Free reserve] in plan.c), on the links of its
 * timelines, and draws the iteration time beside the lower bound at each
 * limit (what no policy beats) and the in-memory time as a line.  A limit
 * the workload does not run under is shown as such, not dropped.  The
 * times need not fall at every step up: the schedule is a heuristic, and
 * the chart shows where it is not monotone in the limit. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/report.h"

int lms__report_limits(const lms__workload_t *w, const lms__opts_t *base,
                       const lms__link_t *link, lms__policy_t policy,
                       int iterations, lms__limit_point_t *out) {
  uint64_t lo = lms__wl_max_step_bytes(w), hi = lms__wl_chunk_bytes(w);
  if (lo == 0 || hi == 0 || lo == UINT64_MAX || hi == UINT64_MAX) return 0;
  lo += lo / 20;
  hi += hi / 4;
  if (hi < lo) hi = lo;
  /* The replays write no files of their own. */
  lms__opts_t b;
  lms__opts_copy(&b, base);
  b.stats = b.stats_buf;
  b.stats_buf[0] = '\0';
  b.trace = b.trace_buf;
  b.trace_buf[0] = '\0';
  b.device = LMS_DEVICE_SIM;
  int n = 0;
  for (int i = 0; i < LMS__LIMIT_POINTS; i++) {
    double f = (double)i / (LMS__LIMIT_POINTS - 1);
    uint64_t cap = (uint64_t)((double)lo * pow((double)hi / (double)lo, f));
    if (n > 0 && cap <= out[n - 1].capacity) continue;
    lms__limit_point_t *p = &out[n++];
    memset(p, 0, sizeof *p);
    p->capacity = cap;
    char err[LMS__ERRBUF] = "";
    lms__replay_result_t r;
    p->ok = lms__simcmd_one(w, &b, link, cap, policy, iterations, 0, &r, err) ==
            LMS_OK;
    if (p->ok) {
      p->time_ns = r.last.time_ns;
      p->lower_ns = r.lower.time_ns;
      p->bytes_h2d = r.last.bytes_h2d;
      p->bytes_d2h = r.last.bytes_d2h;
    } else {
      /* The start of the message is what the report shows. */
      snprintf(p->why, sizeof p->why, "%.*s", (int)sizeof p->why - 1, err);
    }
  }
  return n;
}

/* Closes f, written as dir/name: -1 with err when it did not all go. */
static int finish(FILE *f, const char *dir, const char *name, char *err) {
  if (fclose(f) == 0) return 0;
  lms__errf(err, "writing '%s/%s' failed", dir, name);
  return -1;
}

int lms__report_limits_chart(const char *dir, const lms__limit_set_t *sets,
                             int nsets, const char *wname, uint64_t inmem_ns,
                             char *err) {
  FILE *f = lms__report_open_in(dir, "limits.dat", err);
  if (f == NULL) return -1;
  fprintf(f, "# one block per link: gpu_limit_gib lms_ms lower_bound_ms "
             "in_memory_ms ('-': did not run)\n");
  for (int s = 0; s < nsets; s++) {
    fprintf(f, "# %s\n", sets[s].link);
    for (int i = 0; i < sets[s].n; i++) {
      const lms__limit_point_t *p = &sets[s].points[i];
      fprintf(f, "%.4f ", (double)p->capacity / (double)(1ull << 30));
      if (p->ok)
        fprintf(f, "%.3f %.3f ", (double)p->time_ns / 1e6,
                (double)p->lower_ns / 1e6);
      else
        fprintf(f, "- - ");
      fprintf(f, "%.3f\n", (double)inmem_ns / 1e6);
    }
    fprintf(f, "\n\n");
  }
  if (finish(f, dir, "limits.dat", err) != 0) return -1;
  FILE *g = lms__report_open_in(dir, "limits.gp", err);
  if (g == NULL) return -1;
  fprintf(g, "# Iteration time against the GPU limit.  Redraw: gnuplot "
             "limits.gp\n"
             "set terminal pngcairo size 1100,420 font 'sans,10' noenhanced\n"
             "set output 'limits.png'\n"
             "set grid lc rgb '#dddddd'\nset datafile missing '-'\n"
             "set logscale x 2\nset xlabel 'GPU limit (GiB)'\n"
             "set ylabel 'ms per iteration'\nset yrange [0:*]\n"
             "set key outside right top\n"
             "set title \"%s: how much GPU it needs\"\nplot ", wname);
  static const char *const colour[] = {"#c62828", "#1565c0"};
  for (int s = 0; s < nsets; s++)
    fprintf(g, "'limits.dat' index %d using 1:2 with linespoints lw 2 lc "
               "rgb '%s' title 'lms over %s', '' index %d using 1:3 with "
               "lines dt 2 lc rgb '%s' title 'lower bound over %s', ",
            s, colour[s % 2], sets[s].link, s, colour[s % 2], sets[s].link);
  fprintf(g, "'limits.dat' index 0 using 1:4 with lines lw 1 lc rgb "
             "'#6a1b9a' title 'in memory'\n");
  return finish(g, dir, "limits.gp", err);
}
