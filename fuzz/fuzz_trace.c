/* fuzz_trace.c - the trace reader and writer (src/graph/trace.c) on any
 * bytes at all.
 *
 * Properties, for every input:
 *  - the reader returns, without a sanitizer report, in time linear in the
 *    input (libFuzzer's -timeout catches a slow one);
 *  - a refused input leaves the workload empty and gives a message of the
 *    form "LABEL:LINE: reason" that fits its buffer;
 *  - an accepted input gives a workload lms__wl_validate accepts, which
 *    the writer writes; that text reads back to the same workload (names
 *    included: the reader takes only names of the writer's alphabet, and an
 *    absent workload name is written "-"), and writing it again gives the
 *    same text, byte for byte. */
#include <string.h>

#include "fuzz.h"
#include "graph/graph.h"

#define LABEL "fuzz-input"

/* Reads size bytes from a stream over them: fmemopen refuses a zero-size
 * buffer on some C libraries, so an empty input reads /dev/null. */
static lms_status_t read_bytes(const void *data, size_t size,
                               lms__workload_t *w, char *err) {
  FILE *f = size > 0 ? fmemopen((void *)data, size, "r")
                     : fopen("/dev/null", "r");
  FUZZ_CHECK(f != NULL, "cannot open a stream over the input");
  lms_status_t st = lms__trace_read_file(f, LABEL, w, err);
  fclose(f);
  return st;
}

/* Writes w into a buffer of its own; *len gets its length. */
static char *write_text(const lms__workload_t *w, size_t *len) {
  char *text = NULL;
  char err[LMS__ERRBUF];
  FILE *f = open_memstream(&text, len);
  FUZZ_CHECK(f != NULL, "open_memstream failed");
  lms_status_t st = lms__trace_write_file(f, w, err);
  FUZZ_CHECK(st == LMS_OK, "the writer refused a workload the reader "
             "accepted: %s", err);
  FUZZ_CHECK(fclose(f) == 0, "closing the memory stream failed");
  return text;
}

static void check_empty(const lms__workload_t *w, const char *err) {
  FUZZ_CHECK(w->nchunks == 0 && w->nsteps == 0 && w->nrefs == 0,
             "a refused trace left %u chunks, %u steps, %u refs", w->nchunks,
             w->nsteps, w->nrefs);
  FUZZ_CHECK(memchr(err, '\0', LMS__ERRBUF) != NULL,
             "the message is not terminated within its buffer");
  FUZZ_CHECK(strncmp(err, LABEL ":", strlen(LABEL) + 1) == 0,
             "the message does not begin with the label: %s", err);
}

static void check_same(const lms__workload_t *a, const lms__workload_t *b) {
  FUZZ_CHECK(strcmp(a->name, b->name) == 0 ||
                 (a->name[0] == '\0' && strcmp(b->name, "-") == 0),
             "workload name '%s' read back as '%s'", a->name, b->name);
  FUZZ_CHECK(a->nchunks == b->nchunks && a->nsteps == b->nsteps &&
                 a->nrefs == b->nrefs,
             "%u chunks, %u steps, %u refs read back as %u, %u, %u",
             a->nchunks, a->nsteps, a->nrefs, b->nchunks, b->nsteps,
             b->nrefs);
  for (uint32_t i = 0; i < a->nchunks; i++) {
    const lms__wl_chunk_t *x = &a->chunks[i], *y = &b->chunks[i];
    FUZZ_CHECK(x->size == y->size && x->transient == y->transient &&
                   strcmp(x->name, y->name) == 0,
               "chunk %u (%llu bytes, %s, '%s') read back as (%llu, %s, "
               "'%s')", i, (unsigned long long)x->size,
               x->transient ? "transient" : "persistent", x->name,
               (unsigned long long)y->size,
               y->transient ? "transient" : "persistent", y->name);
  }
  for (uint32_t s = 0; s < a->nsteps; s++) {
    const lms__wl_step_t *x = &a->steps[s], *y = &b->steps[s];
    FUZZ_CHECK(x->compute_ns == y->compute_ns && x->nrefs == y->nrefs &&
                   x->first_ref == y->first_ref &&
                   strcmp(x->name, y->name) == 0,
               "step %u ('%s', %llu ns, %u refs) read back as ('%s', %llu, "
               "%u)", s, x->name, (unsigned long long)x->compute_ns,
               x->nrefs, y->name, (unsigned long long)y->compute_ns,
               y->nrefs);
  }
  for (uint32_t r = 0; r < a->nrefs; r++)
    FUZZ_CHECK(a->refs[r].chunk == b->refs[r].chunk &&
                   a->refs[r].access == b->refs[r].access,
               "reference %u (chunk %u, access %u) read back as (%u, %u)", r,
               a->refs[r].chunk, a->refs[r].access, b->refs[r].chunk,
               b->refs[r].access);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lms__workload_t w, back;
  char err[LMS__ERRBUF];
  lms_status_t st = read_bytes(data, size, &w, err);
  if (st != LMS_OK) {
    FUZZ_CHECK(st == LMS_ERR_INVALID || st == LMS_ERR_HOST_OOM,
               "the reader returned %s", lms_status_name(st));
    check_empty(&w, err);
    lms__wl_free(&w);
    return 0;
  }
  FUZZ_CHECK(lms__wl_validate(&w, err) == LMS_OK,
             "the reader accepted a workload lms__wl_validate refuses: %s",
             err);
  size_t len = 0, len2 = 0;
  char *text = write_text(&w, &len);
  st = read_bytes(text, len, &back, err);
  FUZZ_CHECK(st == LMS_OK, "the writer's text does not read back: %s", err);
  check_same(&w, &back);
  char *text2 = write_text(&back, &len2);
  FUZZ_CHECK(len == len2 && memcmp(text, text2, len) == 0,
             "writing the read-back workload gives other text (%zu bytes, "
             "was %zu)", len2, len);
  free(text);
  free(text2);
  lms__wl_free(&back);
  lms__wl_free(&w);
  return 0;
}
