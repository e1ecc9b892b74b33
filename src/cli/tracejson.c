/* tracejson.c - a recorded timeline (replay/timeline.h) as a Chrome trace:
 * the JSON Trace Event Format that Perfetto (ui.perfetto.dev),
 * chrome://tracing and PyTorch's profiler viewers open, zoomable over the
 * whole iteration where `lms report`'s picture shows a few steps.
 *
 * One process, the GPU on its link; three threads, one per engine: the
 * kernels (each named after its step), the copies in and the copies out
 * (each with its bytes).  Every span is a complete event ("ph": "X") with
 * its start and duration in microseconds from the start of the
 * recording; the engines' names and order are metadata events ("M").  As
 * each engine runs one piece of work at a time, its events never overlap,
 * and the gaps on the kernels' thread are the GPU waiting (test
 * cli_report checks both, and that the copies' bytes are the iteration's).
 *
 * Invariants: the output is one JSON object, {"traceEvents": [...], ...},
 * written whole or not at all (the caller removes a partial file). */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/report.h"

void lms__cli_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
    else if (*c < 0x20) fprintf(f, "\\u%04x", *c);
    else fputc(*c, f);
  }
  fputc('"', f);
}

static const char *const kThread[LMS__TL_ENGINES] = {
    "compute (kernels)", "host to device (copies in)",
    "device to host (copies out)"};
static const char *const kCat[LMS__TL_ENGINES] = {"compute", "h2d", "d2h"};

static double us(uint64_t ns) { return (double)ns / 1e3; }

int lms__report_trace_json(FILE *f, const lms__timeline_t *tl,
                           const lms__workload_t *w, const char *link) {
  fprintf(f, "{\"displayTimeUnit\": \"ms\",\n \"otherData\": {\"workload\": ");
  lms__cli_json_string(f, w->name);
  fprintf(f, ", \"link\": ");
  lms__cli_json_string(f, link);
  fprintf(f, ", \"recorded_ns\": %llu, \"truncated\": %d},\n \"traceEvents\": [",
          (unsigned long long)(tl->end_ns - tl->origin_ns), tl->truncated);
  fprintf(f, "\n  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, "
             "\"tid\": 0, \"args\": {\"name\": ");
  char proc[256];
  snprintf(proc, sizeof proc, "lms: %s on %s", w->name, link);
  lms__cli_json_string(f, proc);
  fprintf(f, "}}");
  for (int e = 0; e < LMS__TL_ENGINES; e++) {
    fprintf(f, ",\n  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, "
               "\"tid\": %d, \"args\": {\"name\": \"%s\"}}", e + 1, kThread[e]);
    fprintf(f, ",\n  {\"name\": \"thread_sort_index\", \"ph\": \"M\", "
               "\"pid\": 1, \"tid\": %d, \"args\": {\"sort_index\": %d}}",
            e + 1, e);
  }
  for (size_t i = 0; i < tl->n; i++) {
    const lms__tl_span_t *s = &tl->spans[i];
    if (s->engine >= LMS__TL_ENGINES) continue;
    uint64_t t0 = s->start_ns > tl->origin_ns ? s->start_ns - tl->origin_ns : 0;
    fprintf(f, ",\n  {\"name\": ");
    if (s->engine == LMS__TL_COMPUTE && s->step < w->nsteps) {
      lms__cli_json_string(f, w->steps[s->step].name);
    } else {
      char name[64];
      snprintf(name, sizeof name, "%s %.2f MB",
               s->engine == LMS__TL_H2D ? "in" : "out",
               (double)s->bytes / 1e6);
      lms__cli_json_string(f, name);
    }
    fprintf(f, ", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, "
               "\"dur\": %.3f, \"pid\": 1, \"tid\": %d, \"args\": "
               "{\"step\": %u, \"bytes\": %llu, \"start_ns\": %llu, "
               "\"dur_ns\": %llu}}",
            kCat[s->engine], us(t0), us(s->end_ns - s->start_ns),
            s->engine + 1, s->step, (unsigned long long)s->bytes,
            (unsigned long long)t0,
            (unsigned long long)(s->end_ns - s->start_ns));
  }
  fprintf(f, "\n ]\n}\n");
  return ferror(f) ? -1 : 0;
}
