/* report_page.c - the page of a workload report, written once as Markdown
 * and as HTML side by side (Note [The report's two documents]): what was
 * run, the verdict per link, measured against predicted, every link's
 * figures, the timeline, the time against the GPU limit, the U-Net
 * comparison (report_unet.c) and the files.  Every figure comes from the
 * content report_build.c computed; report.json holds the same. */
#include <stdio.h>

#include "cli/report_parts.h"

static void intro(lms__doc_t *d, const lms__report_t *r) {
  const lms__workload_t *w = r->w;
  fprintf(d->html, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                   "<title>lms report: %s</title>\n<style>body{font-family:"
                   "sans-serif;max-width:1150px;margin:2em auto}table{border-"
                   "collapse:collapse}td,th{border:1px solid #ccc;padding:2px "
                   "8px;text-align:right}td:first-child{text-align:left}"
                   "img{max-width:100%%}</style></head><body>\n", w->name);
  char title[160];
  snprintf(title, sizeof title, "%s: %s",
           r->compare ? "NVLink vs PCIe" : "lms report", w->name);
  lms__doc_heading(d, 1, title);
  lms__doc_para(d, "%u steps, %u chunks, %.2f GB of chunks, %.1f ms of compute per "
           "%s; a %.1f GiB GPU, policy `%s`, -lms %lld. In memory (a GPU "
           "holding everything): %.1f ms per %s.",
       w->nsteps, w->nchunks, gb(r->chunk_bytes), ms(r->compute_ns),
       r->whole_run ? "run (the trace)" : "iteration",
       (double)r->capacity / (1ull << 30),
       lms__report_policy_name(r->policy),
       (long long)(r->opts->source[LMS__OPT_lms_kb] == LMS__SRC_DEFAULT
                       ? 0
                       : r->opts->lms_kb),
       ms(r->mem.last.time_ns), r->unit);
  char span[128];
  if (r->per_iteration)
    snprintf(span, sizeof span, "the run's trace for %d iterations, the "
             "last compared with the mean of the %d the run measured after "
             "%d of warm-up", r->iters, r->first_sf->iterations,
             r->first_sf->warmup);
  else
    snprintf(span, sizeof span, "%s", r->whole_run
                 ? "the run's trace, once"
                 : "the workload, the last of the iterations measured");
  lms__doc_para(d, "Predicted figures are replays through the runtime on the "
           "simulated device (`lms sim` gives the same numbers) of %s; %s",
       span,
       r->first_sf != NULL
           ? "measured figures are the stats files the runs wrote."
           : "no measured run was given (pass a real run's files: `--stats "
             "PATH --trace PATH`, or with `--compare-links`, `--native "
             "LINK=STATS` and `--emulated LINK=STATS`).");
}

/* Note [A report's verdict] (report_build.c): a sentence per link. */
static void verdict(lms__doc_t *d, const lms__report_t *r) {
  lms__doc_heading(d, 2, "Verdict");
  uint64_t mem_ns = r->mem.last.time_ns;
  if (r->best == NULL) {
    lms__doc_para(d, "No link ran the workload (see the table below).");
    return;
  }
  if (r->best != r->worst)
    lms__doc_para(d, "Fastest over %s at %.2fx the in-memory time, slowest over %s "
            "at %.2fx.",
         r->best->link.name, (double)r->best->lms.last.time_ns / (double)mem_ns,
         r->worst->link.name,
         (double)r->worst->lms.last.time_ns / (double)mem_ns);
  lms__doc_list_open(d);
  for (size_t i = 0; i < r->nr; i++) {
    const lms__report_row_t *row = &r->rows[i];
    if (row->m != NULL || !row->ok) continue;
    const lms__replay_result_t *x = &row->lms;
    if (row->verdict == LMS__VERDICT_MEMORY)
      lms__doc_item(d, "**%s**: %.1f ms per %s, %.2fx the in-memory time: the link "
              "costs next to nothing (GPU busy %.1f%%).",
           row->link.name, ms(x->last.time_ns), r->unit, row->x_memory,
           pct(x->last.compute_ns, x->last.time_ns));
    else if (row->verdict == LMS__VERDICT_LINK)
      lms__doc_item(d, "**%s**: %.1f ms per %s, %.2fx the in-memory time; no policy "
              "can take less than %.1f ms over this link at this capacity, "
              "and lms is within %.2fx of that: the link is the limit (a "
              "faster link or a larger GPU helps, a schedule cannot).",
           row->link.name, ms(x->last.time_ns), r->unit, row->x_memory,
           ms(x->lower.time_ns), row->x_lower);
    else
      lms__doc_item(d, "**%s**: %.1f ms per %s, %.2fx the in-memory time; no policy "
              "can take less than %.1f ms, and lms is at %.2fx of that: a "
              "better schedule could gain up to %.1f ms.",
           row->link.name, ms(x->last.time_ns), r->unit, row->x_memory,
           ms(x->lower.time_ns), row->x_lower,
           ms(x->last.time_ns - x->lower.time_ns));
  }
  lms__doc_list_close(d);
}

/* A figure the stats file holds, or "-". */
static const char *held(const lms__stats_file_t *sf, const char *field,
                        char *buf, size_t n, const char *fmt, double v) {
  if (!lms__stats_file_has(sf, field)) return "-";
  snprintf(buf, n, fmt, v);
  return buf;
}

/* Measured runs beside their predictions. */
static void measured(lms__doc_t *d, const lms__report_t *r) {
  if (r->first_sf == NULL) return;
  lms__doc_heading(d, 2, "Measured and predicted");
  static const char *const head[] = {
      "run", "link", "measured ms", "predicted ms", "error",
      "GPU busy meas.", "GPU busy pred.", "H2D GB meas.", "H2D GB pred.",
      "D2H GB meas.", "D2H GB pred.", "stall ms meas.", "stall ms pred."};
  lms__doc_table_head(d, 13, head);
  for (size_t i = 0; i < r->nr; i++) {
    const lms__report_row_t *row = &r->rows[i];
    if (row->m == NULL) continue;
    const lms__stats_file_t *sf = &row->m->sf;
    const lms_stats_t *s = &sf->st;
    if (!row->ok) {
      lms__doc_table_row(d, "%s\t%s\t%.1f\tfailed: %.100s\t\t\t\t\t\t\t\t\t",
                row->m->kind, row->link.name, ms(s->elapsed_ns), row->fail);
      continue;
    }
    const lms__replay_iter_t *p = &row->lms.last;
    double e = (double)p->time_ns / (double)s->elapsed_ns - 1.0;
    /* What the stats file left out is shown as absent, not as 0. */
    char h2d[24], d2h[24], stall[24];
    lms__doc_table_row(d,
              "%s (`%s`)\t%s\t%.1f\t%.1f\t%+.1f%%\t%.1f%%\t%.1f%%\t%s\t"
              "%.2f\t%s\t%.2f\t%s\t%.1f",
              row->m->kind, sf->path, row->link.name, ms(s->elapsed_ns),
              ms(p->time_ns), 100.0 * e, pct(r->compute_ns, s->elapsed_ns),
              pct(p->compute_ns, p->time_ns),
              held(sf, "bytes_h2d", h2d, sizeof h2d, "%.2f",
                   gb((uint64_t)s->bytes_h2d.total)),
              gb(p->bytes_h2d),
              held(sf, "bytes_d2h", d2h, sizeof d2h, "%.2f",
                   gb((uint64_t)s->bytes_d2h.total)),
              gb(p->bytes_d2h),
              held(sf, "stall_ns", stall, sizeof stall, "%.1f",
                   ms((uint64_t)s->stall_ns.total)),
              ms(p->stall_ns));
  }
  lms__doc_table_end(d);
  lms__doc_para(d, "error: predicted over measured, minus one. Measured GPU busy "
           "is the trace's compute time over the %s's measured time%s.",
       r->unit, r->per_iteration ? "" : "; whole-run stats hold totals, so the "
                                        "run's setup counts in its time");
}

static void links(lms__doc_t *d, const lms__report_t *r) {
  const char *policy = lms__report_policy_name(r->policy);
  int err_col = r->measured;
  lms__doc_heading(d, 2, r->compare ? "Side by side: every link"
                                    : "Per link (predicted)");
  char c_ms[40], c_od[40];
  snprintf(c_ms, sizeof c_ms, "%s ms per %s", policy, r->unit);
  snprintf(c_od, sizeof c_od, "on-demand ms per %s", r->unit);
  const char *head[] = {"link", "H2D/D2H GB/s", "source", c_ms,
                        "x in memory", "bound ms", "lower bound ms",
                        "GPU busy", "H2D GB", "D2H GB", "stall ms", c_od,
                        "on-demand busy", "error"};
  /* The error column only where a measured run gives it one. */
  lms__doc_table_head(d, err_col ? 14 : 13, head);
  for (size_t i = 0; i < r->nr; i++) {
    const lms__report_row_t *row = &r->rows[i];
    char src[64], odc[32] = "-", odb[32] = "-", errc[32] = "-";
    if (row->m != NULL)
      snprintf(src, sizeof src, "%s (measured %.1f ms)", row->m->kind,
               ms(row->m->sf.st.elapsed_ns));
    else
      snprintf(src, sizeof src, "predicted");
    if (!row->ok) {
      lms__doc_table_row(d, "%s\t%.1f/%.1f\t%s\tfailed: %.120s\t\t\t\t\t\t\t\t\t%s",
                row->link.name, row->link.h2d_gbps, row->link.d2h_gbps, src,
                row->fail, err_col ? "\t" : "");
      continue;
    }
    const lms__replay_iter_t *l = &row->lms.last;
    if (row->od_ok) {
      snprintf(odc, sizeof odc, "%.1f", ms(row->od.last.time_ns));
      snprintf(odb, sizeof odb, "%.1f%%",
               pct(row->od.last.compute_ns, row->od.last.time_ns));
    }
    if (row->m != NULL)
      snprintf(errc, sizeof errc, "%+.1f%%",
               100.0 * ((double)l->time_ns / (double)row->m->sf.st.elapsed_ns -
                        1.0));
    lms__doc_table_row(d, "%s\t%.1f/%.1f\t%s\t%.1f\t%.2fx\t%.1f\t%.1f\t%.1f%%\t%.2f\t"
                  "%.2f\t%.1f\t%s\t%s%s%s",
              row->link.name, row->link.h2d_gbps, row->link.d2h_gbps, src,
              ms(l->time_ns), (double)l->time_ns / (double)r->mem.last.time_ns,
              ms(row->lms.overlap_bound_ns), ms(row->lms.lower.time_ns),
              pct(l->compute_ns, l->time_ns), gb(l->bytes_h2d),
              gb(l->bytes_d2h), ms(l->stall_ns), odc, odb,
              err_col ? "\t" : "", err_col ? errc : "");
  }
  lms__doc_table_end(d);
  lms__doc_para(d, "x in memory: time over the in-memory time; bound: max(compute, "
           "H2D bytes / rate, D2H bytes / rate), which no schedule of these "
           "copies beats; lower bound: the least time any policy can take "
           "at this capacity over this link (the fewest bytes and copies "
           "that must move, and the copies each part must hold when the %s "
           "is cut at one step, or its cycle at two steps or more); GPU busy: compute over the %s's time; on-demand: "
           "caffe-ibm's swapping (in when used, no prefetch) for contrast.",
       r->unit, r->unit);
  lms__doc_image(d, "links.png", "bytes and time per link", r->drawn_links,
                 r->ch.why);
  lms__doc_image(d, "busy.png", "GPU busy per link", r->drawn_busy, r->ch.why);
}

static void timelines(lms__doc_t *d, const lms__report_t *r) {
  if (r->ntl == 0) return;
  lms__doc_heading(d, 2, "Timeline");
  lms__doc_para(d, "The kernels of steps %u to %u of the measured %s and every "
           "copy beside them, as the simulated device recorded them "
           "(start and end of each piece of work read back from the "
           "device as it ran%s). Red on the compute row is the GPU "
           "waiting for data.%s",
       r->tls[0].first, r->tls[0].first + r->tls[0].count - 1, r->unit,
       r->have_run ? "; a real run's stats hold totals only, so this is its "
                     "trace replayed at the run's link" : "",
       r->steps_given ? "" : " The steps are the ones where compute "
                             "waited longest; choose others with "
                             "`--steps FIRST:COUNT`.");
  static const char *const head[] = {"link", "steps", "window ms",
                                     "GPU busy ms", "GPU waits ms",
                                     "GPU waits"};
  lms__doc_table_head(d, 6, head);
  for (int i = 0; i < r->ntl; i++) {
    const lms__report_tline_t *t = &r->tls[i];
    lms__doc_table_row(d, "%s\t%u-%u\t%.2f\t%.2f\t%.2f\t%.1f%%", t->link.name,
              t->first, t->first + t->count - 1, ms(t->t1 - t->t0),
              ms(t->busy), ms(t->waiting), pct(t->waiting, t->t1 - t->t0));
  }
  lms__doc_table_end(d);
  lms__doc_image(d, "timeline.png", "timeline of kernels and copies",
                 r->drawn_tl, r->ch.why);
  static const char *const shead[] = {"step", "name", "kernel ms",
                                      "waited before it ms"};
  lms__doc_table_head(d, 4, shead);
  const lms__report_tline_t *t = &r->tls[0];
  uint64_t prev = t->t0;
  for (size_t i = 0; i < t->tl.n; i++) {
    const lms__tl_span_t *s = &t->tl.spans[i];
    if (!lms__report_shown_kernel(t, s)) continue;
    lms__doc_table_row(d, "%u\t%s\t%.3f\t%.3f", s->step, r->w->steps[s->step].name,
              ms(s->end_ns - s->start_ns),
              ms(s->start_ns > prev ? s->start_ns - prev : 0));
    if (s->end_ns > prev) prev = s->end_ns;
  }
  lms__doc_table_end(d);
}

/* Note [How much GPU a workload needs] (report_limits.c). */
static void limits(lms__doc_t *d, const lms__report_t *r) {
  if (r->nlimits == 0) return;
  lms__doc_heading(d, 2, "How much GPU it needs");
  lms__doc_para(d, "The time per %s against the GPU limit, from just over its "
           "largest step to 1.25x all of its chunks (room for them all "
           "beside the eighth the runtime keeps free), with the least time "
           "any policy can take at each limit (Note [How much GPU a "
           "workload needs]).", r->unit);
  static const char *const head[] = {"link", "GPU limit GiB",
                                     "ms per iteration", "x in memory",
                                     "lower bound ms", "H2D GB", "D2H GB"};
  lms__doc_table_head(d, 7, head);
  for (int k = 0; k < r->nlimits; k++) {
    for (int i = 0; i < r->limits[k].n; i++) {
      const lms__limit_point_t *p = &r->limits[k].points[i];
      double gib = (double)p->capacity / (double)(1ull << 30);
      if (!p->ok)
        lms__doc_table_row(d, "%s\t%.2f\tdoes not run: %.100s\t\t\t\t",
                  r->limits[k].link, gib, p->why);
      else
        lms__doc_table_row(d, "%s\t%.2f\t%.1f\t%.2fx\t%.1f\t%.2f\t%.2f",
                  r->limits[k].link, gib, ms(p->time_ns),
                  (double)p->time_ns / (double)r->mem.last.time_ns,
                  ms(p->lower_ns), gb(p->bytes_h2d), gb(p->bytes_d2h));
    }
  }
  lms__doc_table_end(d);
  lms__doc_image(d, "limits.png", "iteration time against the GPU limit",
                 r->drawn_limits, r->ch.why);
}

void lms__report_page(lms__doc_t *d, const lms__report_t *r) {
  intro(d, r);
  verdict(d, r);
  measured(d, r);
  links(d, r);
  timelines(d, r);
  limits(d, r);
  lms__report_unet_page(d, r);
  lms__doc_heading(d, 2, "Files");
  lms__doc_para(d, "In `%s`: `report.md`, `report.html`, `report.json`; charts "
           "`timeline.png`, `links.png`, `busy.png`, each drawn by the "
           "gnuplot script of the same name (`.gp`, with its `.dat` data) "
           "-- redraw with `gnuplot NAME.gp` in this directory.",
       r->out);
  if (r->ch.skipped)
    lms__doc_para(d, "Note: charts were skipped: %s. The scripts and data are "
             "written; the tables above hold every figure.", r->ch.why);
  fputs("</body></html>\n", d->html);
}
