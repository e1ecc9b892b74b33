/* report_json.c - report.json: the figures of a workload report
 * (report_build.c computed them), for programs to read.  The page says the
 * same in sentences and tables (report_page.c). */
#include <stdio.h>

#include "cli/report_parts.h"

static const char *const kVerdictKey[] = {"in_memory", "link_bound",
                                          "schedule_bound"};

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

static void verdicts(FILE *js, const lms__report_t *r) {
  fprintf(js, "\n \"verdict\": [");
  int first = 1;
  for (size_t i = 0; r->best != NULL && i < r->nr; i++) {
    const lms__report_row_t *row = &r->rows[i];
    if (row->m != NULL || !row->ok) continue;
    fprintf(js, "%s\n  {\"link\": \"%s\", \"x_in_memory\": %.4f, "
                "\"x_lower_bound\": %.4f, \"verdict\": \"%s\"}",
            first ? "" : ",", row->link.name, row->x_memory, row->x_lower,
            kVerdictKey[row->verdict]);
    first = 0;
  }
  fprintf(js, "],");
}

/* A figure the stats file holds, or null. */
static void counter(FILE *js, const lms__stats_file_t *sf, const char *field,
                    const char *key, int64_t v) {
  if (lms__stats_file_has(sf, field))
    fprintf(js, "\"%s\": %lld, ", key, (long long)v);
  else
    fprintf(js, "\"%s\": null, ", key);
}

static void measured(FILE *js, const lms__report_t *r) {
  fprintf(js, "\n \"measured\": [");
  int first = 1;
  for (size_t i = 0; i < r->nr; i++) {
    const lms__report_row_t *row = &r->rows[i];
    if (row->m == NULL || !row->ok) continue;
    const lms__stats_file_t *sf = &row->m->sf;
    const lms_stats_t *s = &sf->st;
    double e = (double)row->lms.last.time_ns / (double)s->elapsed_ns - 1.0;
    fprintf(js, "%s\n  {\"kind\": \"%s\", \"link\": \"%s\", "
                "\"elapsed_ns\": %llu, ",
            first ? "" : ",", row->m->kind, row->link.name,
            (unsigned long long)s->elapsed_ns);
    counter(js, sf, "bytes_h2d", "bytes_h2d", s->bytes_h2d.total);
    counter(js, sf, "bytes_d2h", "bytes_d2h", s->bytes_d2h.total);
    counter(js, sf, "stall_ns", "stall_ns", s->stall_ns.total);
    fprintf(js, "\"error\": %.4f, ", e);
    json_run(js, "predicted", &row->lms);
    fputc('}', js);
    first = 0;
  }
  fprintf(js, "],\n \"links\": [");
}

static void links(FILE *js, const lms__report_t *r) {
  int first = 1;
  for (size_t i = 0; i < r->nr; i++) {
    const lms__report_row_t *row = &r->rows[i];
    if (!row->ok || row->m != NULL) continue;
    fprintf(js, "%s\n  {\"link\": \"%s\", \"h2d_gbps\": %.3f, "
                "\"d2h_gbps\": %.3f, ",
            first ? "" : ",", row->link.name, row->link.h2d_gbps,
            row->link.d2h_gbps);
    json_run(js, "lms", &row->lms);
    if (row->od_ok) {
      fputs(", ", js);
      json_run(js, "ondemand", &row->od);
    }
    fputc('}', js);
    first = 0;
  }
  fprintf(js, "\n ],\n \"timelines\": [");
}

static void timelines(FILE *js, const lms__report_t *r) {
  for (int i = 0; i < r->ntl; i++) {
    const lms__report_tline_t *t = &r->tls[i];
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
  fprintf(js, "\n ]");
}

static void limits(FILE *js, const lms__report_t *r) {
  fprintf(js, ",\n \"limits\": [");
  for (int k = 0; k < r->nlimits; k++) {
    for (int i = 0; i < r->limits[k].n; i++) {
      const lms__limit_point_t *p = &r->limits[k].points[i];
      fprintf(js, "%s\n  {\"link\": \"%s\", \"gpu_limit\": %llu, ",
              k + i ? "," : "", r->limits[k].link,
              (unsigned long long)p->capacity);
      if (p->ok)
        fprintf(js, "\"iteration_ns\": %llu, \"lower_bound_ns\": %llu}",
                (unsigned long long)p->time_ns,
                (unsigned long long)p->lower_ns);
      else
        fprintf(js, "\"iteration_ns\": null, \"lower_bound_ns\": null}");
    }
  }
  fprintf(js, "\n ]");
}

void lms__report_json(FILE *js, const lms__report_t *r) {
  fprintf(js, "{\"workload\": \"%s\", \"unit\": \"%s\", \"capacity\": %llu, "
              "\"policy\": \"%s\", \"in_memory_ns\": %llu,",
          r->w->name, r->unit, (unsigned long long)r->capacity,
          lms__report_policy_name(r->policy),
          (unsigned long long)r->mem.last.time_ns);
  verdicts(js, r);
  measured(js, r);
  links(js, r);
  timelines(js, r);
  limits(js, r);
  lms__report_unet_json(js, r);
  fprintf(js, "\n}\n");
}
