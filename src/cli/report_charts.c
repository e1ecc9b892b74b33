/* report_charts.c - the charts of `lms report`'s workload report: the
 * timeline of kernels and copies, bytes and time per link, GPU busy per
 * link, each a gnuplot script and its data beside the PNG (plot.h). */
#include <errno.h>
#include <string.h>

#include "cli/report_parts.h"

FILE *lms__report_open_in(const char *dir, const char *name, char *err) {
  char path[LMS__PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (f == NULL)
    lms__errf(err, "cannot write '%s': %s", path, strerror(errno));
  return f;
}

int lms__report_draw(lms__report_charts_t *c, const char *script,
                     const char *png) {
  char why[640];
  if (lms__plot_run(&c->plot, c->dir, script, png, why, sizeof why) == 0)
    return 1;
  if (!c->skipped) snprintf(c->why, sizeof c->why, "%s", why);
  c->skipped = 1;
  return 0;
}

static const char kStyle[] =
    "set terminal pngcairo size 1100,%d font 'sans,10' noenhanced\n"
    "set output '%s'\n"
    "set style fill solid 0.85 border -1\n"
    "set grid ytics lc rgb '#dddddd'\n";

/* Bars per link, clustered, as links.gp and busy.gp draw them. */
static const char kHistograms[] =
    "set datafile missing '-'\n"
    "set style data histograms\n"
    "set style histogram clustered gap 1\n"
    "set xtics rotate by -30 nomirror\n";

/* The data of one timeline: index 0 kernels, 1 copies in, 2 copies out,
 * 3 compute waiting; x in ms from the window's start. */
static void timeline_data(FILE *f, const lms__report_tline_t *t,
                          const lms__workload_t *w) {
  static const double rows[3] = {2, 1, 0};
  fprintf(f, "# %s on %s: steps %u to %u; x_ms y half_width_ms half_height "
             "label\n", w->name, t->link.name, t->first,
          t->first + t->count - 1);
  uint64_t span = t->t1 > t->t0 ? t->t1 - t->t0 : 1;
  for (int e = 0; e < 3; e++) {
    fprintf(f, "# %s\n", e == 0 ? "kernels" : e == 1 ? "copies host to device"
                                                     : "copies device to host");
    int any = 0;
    for (size_t i = 0; i < t->tl.n; i++) {
      const lms__tl_span_t *s = &t->tl.spans[i];
      if (s->engine != e) continue;
      uint64_t a = s->start_ns, b = s->end_ns;
      if (e == LMS__TL_COMPUTE &&
          (s->step < t->first || s->step >= t->first + t->count))
        continue;
      if (b <= t->t0 || a >= t->t1) continue;
      if (a < t->t0) a = t->t0;
      if (b > t->t1) b = t->t1;
      double x0 = ms(a - t->t0), x1 = ms(b - t->t0);
      char label[16] = "";
      if (e == LMS__TL_COMPUTE && (double)(b - a) > 0.04 * (double)span)
        snprintf(label, sizeof label, "%u", s->step);
      fprintf(f, "%.6f %g %.6f 0.3 \"%s\"\n", (x0 + x1) / 2, rows[e],
              (x1 - x0) / 2, label);
      any = 1;
    }
    /* gnuplot skips an empty block with a warning; a zero-width box far
     * left keeps every block present and silent. */
    if (!any) fprintf(f, "-1 %g 0 0 \"\"\n", rows[e]);
    fprintf(f, "\n\n");
  }
  fprintf(f, "# compute waiting\n");
  int any = 0;
  uint64_t prev = t->t0;
  for (size_t i = 0; i < t->tl.n; i++) {
    const lms__tl_span_t *s = &t->tl.spans[i];
    if (!lms__report_shown_kernel(t, s)) continue;
    if (s->start_ns > prev) {
      double x0 = ms(prev - t->t0), x1 = ms(s->start_ns - t->t0);
      fprintf(f, "%.6f 2 %.6f 0.3 \"\"\n", (x0 + x1) / 2, (x1 - x0) / 2);
      any = 1;
    }
    if (s->end_ns > prev) prev = s->end_ns;
  }
  if (!any) fprintf(f, "-1 2 0 0 \"\"\n");
}

static void timeline_plot(FILE *g, const char *dat, const lms__report_tline_t *t,
                          double xmax, int key) {
  fprintf(g,
          "set title \"%s link (%.1f/%.1f GB/s): steps %u-%u, the GPU waits "
          "%.1f of %.1f ms (%.0f%%)\"\n",
          t->link.name, t->link.h2d_gbps, t->link.d2h_gbps, t->first,
          t->first + t->count - 1, ms(t->waiting), ms(t->t1 - t->t0),
          pct(t->waiting, t->t1 - t->t0));
  fprintf(g, "set xrange [0:%.6f]\n", xmax);
  fprintf(g, "%s\n", key ? "set key at screen 0.5, screen 0.01 center "
                               "bottom horizontal\nset bmargin 6"
                         : "unset key\nset bmargin 3");
  fprintf(g,
          "plot '%s' index 0 using 1:2:3:4 with boxxyerror lc rgb '#2e7d32' "
          "title 'kernel (label: step)', \\\n"
          "     '' index 3 using 1:2:3:4 with boxxyerror lc rgb '#e53935' "
          "title 'GPU waiting for data', \\\n"
          "     '' index 1 using 1:2:3:4 with boxxyerror lc rgb '#1e88e5' "
          "title 'copy host to device', \\\n"
          "     '' index 2 using 1:2:3:4 with boxxyerror lc rgb '#fb8c00' "
          "title 'copy device to host', \\\n"
          "     '' index 0 using 1:(2.5):5 with labels font ',8' notitle\n",
          dat);
}

/* timeline.gp: one panel per recorded link, the same steps in each. */
int lms__report_timeline_chart(lms__report_charts_t *c, lms__report_tline_t *t, int n,
                          const lms__workload_t *w, char *err) {
  double xmax = 0;
  for (int i = 0; i < n; i++) {
    char name[64];
    snprintf(name, sizeof name, "timeline-%s.dat", t[i].link.name);
    FILE *f = lms__report_open_in(c->dir, name, err);
    if (f == NULL) return -1;
    timeline_data(f, &t[i], w);
    if (fclose(f) != 0) {
      lms__errf(err, "writing '%s/%s' failed", c->dir, name);
      return -1;
    }
    if (ms(t[i].t1 - t[i].t0) > xmax) xmax = ms(t[i].t1 - t[i].t0);
    /* The whole iteration, for Perfetto and chrome://tracing. */
    snprintf(name, sizeof name, "timeline-%s.json", t[i].link.name);
    f = lms__report_open_in(c->dir, name, err);
    if (f == NULL) return -1;
    int bad = lms__report_trace_json(f, &t[i].tl, w, t[i].link.name);
    if (fclose(f) != 0 || bad) {
      lms__errf(err, "writing '%s/%s' failed", c->dir, name);
      return -1;
    }
  }
  FILE *g = lms__report_open_in(c->dir, "timeline.gp", err);
  if (g == NULL) return -1;
  fprintf(g, "# The kernels and copies of a few steps, as the simulated "
             "device recorded them.\n# Redraw: gnuplot timeline.gp\n");
  fprintf(g, kStyle, 120 + 300 * n, "timeline.png");
  fprintf(g, "set xlabel 'time from the start of the window (ms)'\n"
             "set ytics ('compute' 2, 'host to device' 1, 'device to host' 0)\n"
             "set yrange [-0.6:2.8]\nset grid xtics\n");
  fprintf(g, "set multiplot layout %d,1 title \"%s: kernels and copies\"\n", n,
          w->name);
  for (int i = 0; i < n; i++) {
    char name[64];
    snprintf(name, sizeof name, "timeline-%s.dat", t[i].link.name);
    timeline_plot(g, name, &t[i], xmax * 1.01, i == n - 1);
  }
  fprintf(g, "unset multiplot\n");
  if (fclose(g) != 0) {
    lms__errf(err, "writing '%s/timeline.gp' failed", c->dir);
    return -1;
  }
  return 0;
}

/* links.dat, links.gp (bytes and time per link) and busy.gp. */
int lms__report_link_charts(lms__report_charts_t *c, const lms__report_row_t *rows, size_t n,
                             const char *unit, const char *policy, const lms__workload_t *w,
                             uint64_t inmem_ns, char *err) {
  FILE *f = lms__report_open_in(c->dir, "links.dat", err);
  if (f == NULL) return -1;
  fprintf(f, "# link h2d_gb d2h_gb lms_ms ondemand_ms in_memory_ms "
             "lms_busy_pct ondemand_busy_pct measured_ms measured_busy_pct\n");
  for (size_t i = 0; i < n; i++) {
    const lms__report_row_t *r = &rows[i];
    if (!r->ok) continue;
    char label[64];
    if (r->m != NULL)
      snprintf(label, sizeof label, "%s (%s)", r->link.name, r->m->kind);
    else
      snprintf(label, sizeof label, "%s", r->link.name);
    fprintf(f, "\"%s\" %.4f %.4f %.3f ", label, gb(r->lms.last.bytes_h2d),
            gb(r->lms.last.bytes_d2h), ms(r->lms.last.time_ns));
    if (r->od_ok)
      fprintf(f, "%.3f ", ms(r->od.last.time_ns));
    else
      fprintf(f, "- ");
    fprintf(f, "%.3f %.2f ", ms(inmem_ns),
            pct(r->lms.last.compute_ns, r->lms.last.time_ns));
    if (r->od_ok)
      fprintf(f, "%.2f ", pct(r->od.last.compute_ns, r->od.last.time_ns));
    else
      fprintf(f, "- ");
    if (r->m != NULL)
      fprintf(f, "%.3f %.2f\n", ms(r->m->sf.st.elapsed_ns),
              pct(lms__wl_compute_ns(w), r->m->sf.st.elapsed_ns));
    else
      fprintf(f, "- -\n");
  }
  if (fclose(f) != 0) {
    lms__errf(err, "writing '%s/links.dat' failed", c->dir);
    return -1;
  }
  int measured = 0;
  for (size_t i = 0; i < n; i++) measured |= rows[i].m != NULL;
  FILE *g = lms__report_open_in(c->dir, "links.gp", err);
  if (g == NULL) return -1;
  fprintf(g, "# Bytes moved and time per link.  Redraw: gnuplot links.gp\n");
  fprintf(g, kStyle, 500, "links.png");
  fputs(kHistograms, g);
  fprintf(g,
          "set key outside bottom center horizontal maxrows 2\n"
          "set multiplot layout 1,2 title \"%s\"\n"
          "set title 'bytes over the link per %s'\n"
          "set ylabel 'GB (10^9 bytes)'\nset yrange [0:*]\n"
          "plot 'links.dat' using 2:xtic(1) title 'host to device' lc rgb "
          "'#1e88e5', '' using 3 title 'device to host' lc rgb '#fb8c00'\n"
          "set title 'time per %s'\nset ylabel 'ms'\n"
          "set key outside bottom center horizontal maxrows 2\n"
          "plot 'links.dat' using 4:xtic(1) title 'lms (predicted)' lc rgb "
          "'#2e7d32', '' using 5 title 'on-demand swapping (predicted)' lc "
          "rgb '#9e9e9e', '' using 6 title 'in memory' lc rgb '#6a1b9a'%s\n"
          "unset multiplot\n",
          w->name, unit, unit,
          measured ? ", '' using 9 title 'measured' lc rgb '#000000'" : "");
  if (fclose(g) != 0) {
    lms__errf(err, "writing '%s/links.gp' failed", c->dir);
    return -1;
  }
  g = lms__report_open_in(c->dir, "busy.gp", err);
  if (g == NULL) return -1;
  fprintf(g, "# GPU busy per link.  Redraw: gnuplot busy.gp\n");
  fprintf(g, kStyle, 420, "busy.png");
  fputs(kHistograms, g);
  fprintf(g,
          "set key outside bottom center horizontal\n"
          "set title \"%s: GPU busy (compute time over the %s's time)\"\n"
          "set ylabel 'GPU busy (%%)'\nset yrange [0:105]\n"
          "plot 'links.dat' using 7:xtic(1) title 'lms (%s, predicted)' lc "
          "rgb '#2e7d32', "
          "'' using 8 title 'on-demand swapping (predicted)' lc rgb '#9e9e9e', "
          "%s"
          "'' using ($0-%s):7:(sprintf('%%.0f', $7)) with labels offset "
          "0,0.7 font ',8' notitle, "
          "'' using ($0%s):8:(sprintf('%%.0f', $8)) with labels offset "
          "0,0.7 font ',8' notitle%s\n",
          w->name, unit, policy,
          measured ? "'' using 10 title 'measured' lc rgb '#000000', " : "",
          /* Bar centres: two bars of width 1/3, or three of width 1/4. */
          measured ? "0.25" : "0.17", measured ? "" : "+0.17",
          measured ? ", '' using ($0+0.25):10:(sprintf('%.0f', $10)) with "
                     "labels offset 0,0.7 font ',8' notitle"
                   : "");
  if (fclose(g) != 0) {
    lms__errf(err, "writing '%s/busy.gp' failed", c->dir);
    return -1;
  }
  return 0;
}
