/* test_trace.c - the trace reader and writer (src/graph/trace.c,
 * docs/trace-format.md).
 *
 * A random workload written and read back must come back equal in every
 * field the format carries, and written again must give the same bytes.
 * The example in docs/trace-format.md is read from the document itself,
 * so the document cannot drift from the reader.  Every kind of malformed
 * input is a row of one table: each must fail with LMS_ERR_INVALID, a
 * message that starts with "t:LINE: " at the right line and names the
 * problem, and an empty workload.  Inputs at the edges of what is accepted
 * (longest names and lines, largest numbers, CRLF ends, no final newline)
 * must read. */
#include <criterion/criterion.h>
#include "check.h"
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph/graph.h"
#include "support.h"

#define HDR "lms-trace 1\n"
#define CHUNK0 "chunk 0 64 a persistent\n"

/* Reads len bytes of text as a trace labelled "t". */
static lms_status_t read_text(const char *text, size_t len,
                              lms__workload_t *w, char *err) {
  FILE *f = tmpfile();
  cr_assert(ne(ptr, f, NULL), "tmpfile");
  cr_assert(eq(sz, fwrite(text, 1, len, f), len));
  rewind(f);
  err[0] = '\0';
  lms_status_t st = lms__trace_read_file(f, "t", w, err);
  fclose(f);
  return st;
}

static lms_status_t read_str(const char *text, lms__workload_t *w,
                             char *err) {
  return read_text(text, strlen(text), w, err);
}

static void assert_empty(const lms__workload_t *w) {
  cr_assert(eq(str, (char *)w->name, ""));
  cr_assert(eq(u32, w->nchunks, 0));
  cr_assert(eq(u32, w->nsteps, 0));
  cr_assert(eq(u32, w->nrefs, 0));
  cr_assert(eq(ptr, w->chunks, NULL));
  cr_assert(eq(ptr, w->steps, NULL));
  cr_assert(eq(ptr, w->refs, NULL));
}

static void assert_ref(const lms__workload_t *w, uint32_t step, uint32_t i,
                       uint32_t chunk, unsigned access) {
  cr_assert(lt(u32, i, w->steps[step].nrefs), "step %u has %u references",
            step, w->steps[step].nrefs);
  const lms__wl_ref_t *r = &w->refs[w->steps[step].first_ref + i];
  cr_assert(eq(u32, r->chunk, chunk), "step %u reference %u", step, i);
  cr_assert(eq(uint, r->access, access), "step %u reference %u", step, i);
}

/* ---- Round trip ---------------------------------------------------------- */

static uint64_t rng;

static uint64_t rnd(void) { return lms_test_next(&rng); }

static void rnd_name(char *out, size_t max) {
  static const char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:/+-";
  size_t n = rnd() % (max + 1);
  if (rnd() % 8 == 0) n = max;
  for (size_t i = 0; i < n; i++)
    out[i] = alphabet[rnd() % (sizeof alphabet - 1)];
  out[n] = '\0';
  if (strcmp(out, "-") == 0) out[0] = 'x'; /* "-" reads back as "" */
}

/* A valid workload of a few hundred chunks and steps, with names of every
 * length, sizes and times up to their limits, and one step that names
 * every chunk (so that it needs refs lines).  One chunk has the largest
 * size, named at most 9 times, and the others at most 64 GiB, so that the
 * totals stay within theirs (Note [Workload totals]). */
static void random_workload(lms__workload_t *w, uint64_t seed) {
  rng = seed;
  char name[64];
  rnd_name(name, 63);
  lms__wl_init(w, name);
  uint32_t nchunks = 300 + (uint32_t)(rnd() % 200);
  for (uint32_t i = 0; i < nchunks; i++) {
    uint64_t size = rnd() % (LMS__WL_MAX_SIZE >> 12) + 1;
    if (i == 0) size = 1;
    if (i == 1) size = LMS__WL_MAX_SIZE;
    if (rnd() % 2) size %= 1u << 20;
    if (size == 0) size = 4096;
    rnd_name(name, LMS__WL_NAME - 1);
    cr_assert(eq(int, lms__wl_add_chunk(w, size, rnd() % 3 == 0, name, NULL),
                 LMS_OK));
  }
  uint32_t nsteps = 200 + (uint32_t)(rnd() % 300);
  uint32_t *order = malloc(nchunks * sizeof *order);
  cr_assert(ne(ptr, order, NULL));
  uint32_t largest_named = 0;
  for (uint32_t s = 0; s < nsteps; s++) {
    uint64_t ns = rnd() % (LMS__WL_MAX_STEP_NS + 1);
    if (s == 0) ns = 0;
    if (s == 1) ns = LMS__WL_MAX_STEP_NS;
    rnd_name(name, LMS__WL_NAME - 1);
    cr_assert(eq(int, lms__wl_add_step(w, ns, name), LMS_OK));
    uint32_t n = s == nsteps / 2 ? nchunks : (uint32_t)(rnd() % 7);
    /* A partial shuffle picks n distinct chunks in a random order. */
    for (uint32_t i = 0; i < nchunks; i++) order[i] = i;
    for (uint32_t i = 0; i < n; i++) {
      uint32_t j = i + (uint32_t)(rnd() % (nchunks - i));
      uint32_t t = order[i];
      order[i] = order[j];
      order[j] = t;
      if (order[i] == 1 && n != nchunks && ++largest_named > 8) continue;
      cr_assert(eq(int, lms__wl_add_ref(w, order[i], 1 + (unsigned)(rnd() % 3)),
                   LMS_OK));
    }
  }
  free(order);
  /* Every transient chunk is used, thanks to the step that names them
   * all; the workload must be valid for the writer to accept it. */
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__wl_validate(w, err), LMS_OK), "%s", err);
}

static void assert_same(const lms__workload_t *a, const lms__workload_t *b) {
  cr_assert(eq(str, (char *)a->name, (char *)b->name));
  cr_assert(eq(u32, a->nchunks, b->nchunks));
  cr_assert(eq(u32, a->nsteps, b->nsteps));
  cr_assert(eq(u32, a->nrefs, b->nrefs));
  for (uint32_t i = 0; i < a->nchunks; i++) {
    cr_assert(eq(u64, a->chunks[i].size, b->chunks[i].size), "chunk %u", i);
    cr_assert(eq(int, a->chunks[i].transient, b->chunks[i].transient),
              "chunk %u", i);
    cr_assert(eq(str, (char *)a->chunks[i].name, (char *)b->chunks[i].name),
              "chunk %u", i);
  }
  for (uint32_t s = 0; s < a->nsteps; s++) {
    cr_assert(eq(u64, a->steps[s].compute_ns, b->steps[s].compute_ns),
              "step %u", s);
    cr_assert(eq(str, (char *)a->steps[s].name, (char *)b->steps[s].name),
              "step %u", s);
    cr_assert(eq(u32, a->steps[s].first_ref, b->steps[s].first_ref),
              "step %u", s);
    cr_assert(eq(u32, a->steps[s].nrefs, b->steps[s].nrefs), "step %u", s);
  }
  for (uint32_t i = 0; i < a->nrefs; i++) {
    cr_assert(eq(u32, a->refs[i].chunk, b->refs[i].chunk), "ref %u", i);
    cr_assert(eq(uint, a->refs[i].access, b->refs[i].access), "ref %u", i);
  }
}

/* Writes w into a string (malloc'd) with lms__trace_write_file. */
static char *write_string(const lms__workload_t *w, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  cr_assert(ne(ptr, f, NULL));
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__trace_write_file(f, w, err), LMS_OK), "%s", err);
  fclose(f);
  return buf;
}

ParameterizedTestParameters(trace_roundtrip, random_workload) {
  static uint64_t seeds[] = {1, 0x9E3779B97F4A7C15ull, 20261122};
  return cr_make_param_array(uint64_t, seeds, sizeof seeds / sizeof seeds[0]);
}

ParameterizedTest(uint64_t *seed, trace_roundtrip, random_workload) {
  lms__workload_t w, back;
  random_workload(&w, *seed);
  char path[] = "/tmp/lms_test_trace_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(ge(int, fd, 0), "mkstemp");
  close(fd);
  char err[LMS__ERRBUF];
  lms_status_t wst = lms__trace_write(path, &w, err);
  lms_status_t rst = wst == LMS_OK ? lms__trace_read(path, &back, err)
                                   : LMS_ERR_INTERNAL;
  unlink(path);
  cr_assert(eq(int, wst, LMS_OK), "%s", err);
  cr_assert(eq(int, rst, LMS_OK), "%s", err);
  assert_same(&w, &back);

  /* Written again, the workload read back gives the same text. */
  size_t la, lb;
  char *a = write_string(&w, &la);
  char *b = write_string(&back, &lb);
  cr_assert(eq(sz, la, lb));
  cr_assert(eq(int, memcmp(a, b, la), 0));
  cr_assert(ne(ptr, strstr(a, "\nrefs "), NULL),
            "the step naming every chunk continues on refs lines");
  free(a);
  free(b);
  lms__wl_free(&w);
  lms__wl_free(&back);
}

/* Names outside the alphabet are written with '_' for each bad character,
 * and empty names as "-", which reads back empty. */
Test(trace_write, names_are_made_readable) {
  lms__workload_t w, back;
  lms__wl_init(&w, "my net #1");
  uint32_t a, b;
  cr_assert(eq(int, lms__wl_add_chunk(&w, 8, 0, "conv 1,w\t\xc3\xa9", &a),
               LMS_OK));
  cr_assert(eq(int, lms__wl_add_chunk(&w, 8, 1, "", &b), LMS_OK));
  cr_assert(eq(int, lms__wl_add_step(&w, 5, NULL), LMS_OK));
  cr_assert(eq(int, lms__wl_add_ref(&w, b, LMS_ACCESS_WRITE), LMS_OK));
  cr_assert(eq(int, lms__wl_add_ref(&w, a, LMS_ACCESS_RW), LMS_OK));
  size_t len;
  char *text = write_string(&w, &len);
  cr_assert(ne(ptr, strstr(text, "workload my_net__1\n"), NULL), "%s", text);
  cr_assert(ne(ptr, strstr(text, "chunk 0 8 conv_1_w___ persistent\n"), NULL),
            "%s", text);
  cr_assert(ne(ptr, strstr(text, "chunk 1 8 - transient\n"), NULL), "%s",
            text);
  cr_assert(ne(ptr, strstr(text, "step 5 - w:1 rw:0\n"), NULL), "%s", text);
  char err[LMS__ERRBUF];
  cr_assert(eq(int, read_text(text, len, &back, err), LMS_OK), "%s", err);
  cr_assert(eq(str, back.name, "my_net__1"));
  cr_assert(eq(str, back.chunks[0].name, "conv_1_w___"));
  cr_assert(eq(str, back.chunks[1].name, ""));
  cr_assert(eq(str, back.steps[0].name, ""));
  assert_ref(&back, 0, 0, 1, LMS_ACCESS_WRITE);
  assert_ref(&back, 0, 1, 0, LMS_ACCESS_RW);
  free(text);
  lms__wl_free(&w);
  lms__wl_free(&back);
}

/* The writer refuses what the reader would refuse, and reports files it
 * cannot open or fill. */
Test(trace_write, refusals) {
  lms__workload_t w;
  char err[LMS__ERRBUF];
  lms__wl_init(&w, "empty");
  cr_assert(eq(int, lms__wl_add_chunk(&w, 8, 0, "a", NULL), LMS_OK));
  FILE *f = tmpfile();
  cr_assert(ne(ptr, f, NULL));
  cr_assert(eq(int, lms__trace_write_file(f, &w, err), LMS_ERR_INVALID));
  cr_assert(ne(ptr, strstr(err, "no steps"), NULL), "%s", err);
  cr_assert(eq(long, ftell(f), 0), "nothing is written");
  fclose(f);

  cr_assert(eq(int, lms__wl_add_step(&w, 1, "s"), LMS_OK));
  cr_assert(eq(int, lms__wl_add_ref(&w, 0, LMS_ACCESS_READ), LMS_OK));
  cr_assert(eq(int, lms__trace_write("/nonexistent-lms-dir/x.trace", &w, err),
               LMS_ERR_INVALID));
  cr_assert(ne(ptr, strstr(err, "cannot open /nonexistent-lms-dir/x.trace "
                                "for writing: "), NULL), "%s", err);
  if (access("/dev/full", W_OK) == 0) {
    cr_assert(eq(int, lms__trace_write("/dev/full", &w, err),
                 LMS_ERR_INVALID));
    cr_assert(ne(ptr, strstr(err, "/dev/full"), NULL), "%s", err);
  }
  lms__wl_free(&w);
}

/* ---- Accepted input ---------------------------------------------------- */

/* The example in docs/trace-format.md, found next to this file. */
static char *doc_example(void) {
  const char *me = __FILE__;
  const char *slash = strrchr(me, '/');
  char path[4096];
  snprintf(path, sizeof path, "%.*s/../docs/trace-format.md",
           slash ? (int)(slash - me) : 1, slash ? me : ".");
  FILE *f = fopen(path, "r");
  cr_assert(ne(ptr, f, NULL), "cannot open %s", path);
  static char doc[1 << 16];
  size_t n = fread(doc, 1, sizeof doc - 1, f);
  fclose(f);
  doc[n] = '\0';
  char *start = strstr(doc, "```\nlms-trace 1\n");
  cr_assert(ne(ptr, start, NULL), "no example in %s", path);
  start += 4;
  char *end = strstr(start, "```");
  cr_assert(ne(ptr, end, NULL));
  *end = '\0';
  return start;
}

Test(trace_read, the_documented_example) {
  lms__workload_t w;
  char err[LMS__ERRBUF];
  cr_assert(eq(int, read_str(doc_example(), &w, err), LMS_OK), "%s", err);
  cr_assert(eq(str, w.name, "tiny-mlp"));
  static const struct {
    const char *name;
    uint64_t size;
    int transient;
  } chunks[] = {{"w1", 4096, 0},  {"w2", 4096, 0},  {"x", 65536, 0},
                {"h1", 65536, 1}, {"y", 65536, 1},  {"dw1", 4096, 0},
                {"dw2", 4096, 0}};
  cr_assert(eq(u32, w.nchunks, 7));
  for (uint32_t i = 0; i < 7; i++) {
    cr_assert(eq(str, w.chunks[i].name, (char *)chunks[i].name));
    cr_assert(eq(u64, w.chunks[i].size, chunks[i].size));
    cr_assert(eq(int, w.chunks[i].transient, chunks[i].transient));
  }
  cr_assert(eq(u32, w.nsteps, 5));
  cr_assert(eq(str, w.steps[0].name, "fc1.fwd"));
  cr_assert(eq(u64, w.steps[0].compute_ns, 120000));
  cr_assert(eq(str, w.steps[4].name, "sgd/update"));
  cr_assert(eq(u64, w.steps[4].compute_ns, 5000));
  enum { R = LMS_ACCESS_READ, W = LMS_ACCESS_WRITE, RW = LMS_ACCESS_RW };
  /* IDs 0, 1, 10, 11, 12, 20, 21 are chunks 0 to 6. */
  assert_ref(&w, 0, 0, 2, R);
  assert_ref(&w, 0, 1, 0, R);
  assert_ref(&w, 0, 2, 3, W);
  assert_ref(&w, 1, 2, 4, W);
  cr_assert(eq(u32, w.steps[2].nrefs, 4), "the refs line continues step 2");
  assert_ref(&w, 2, 0, 4, R);
  assert_ref(&w, 2, 2, 6, W);
  assert_ref(&w, 2, 3, 3, RW);
  assert_ref(&w, 3, 3, 5, W);
  assert_ref(&w, 4, 0, 0, RW);
  assert_ref(&w, 4, 3, 6, R);
  cr_assert(eq(u32, w.nrefs, 18));
  lms__wl_free(&w);
}

/* What the format allows at its edges, in one file. */
Test(trace_read, edges_that_are_accepted) {
  char name47[48], name63[64];
  memset(name47, 'n', 47);
  name47[47] = '\0';
  memset(name63, 'W', 63);
  name63[63] = '\0';
  char text[1024];
  snprintf(text, sizeof text,
           "\r\n  # leading comments and blank lines\r\n\t\r\n"
           "  lms-trace\t001  \r\n"
           "workload %s\r\n"
           "chunk 2147483647 281474976710656 %s persistent\r\n"
           "chunk\t7\t1\t-\ttransient\r\n"
           "  # a comment between records; # inside fields is not one\n"
           "step 10000000000000 - \n"
           "chunk 0 0000000000000000000000042 A-z.0:9/+_ transient\n"
           "step 0 s1 rw:2147483647 w:7\n"
           "# comments may sit between a step and its refs lines\n"
           "refs r:0\n"
           "refs w:000\n" /* the same ID later in the file is fine ... */
           "step 3 s2 r:0", /* ... and the last line needs no end */
           name63, name47);
  lms__workload_t w;
  char err[LMS__ERRBUF];
  lms_status_t st = read_str(text, &w, err);
  cr_assert(eq(int, st, LMS_ERR_INVALID), "refs w:000 repeats chunk 0");
  cr_assert(ne(ptr, strstr(err, "t:14: the step names chunk 0 twice"), NULL),
            "%s", err);
  char *cut = strstr(text, "refs w:000\n");
  memmove(cut, cut + strlen("refs w:000\n"), strlen(cut) + 1 -
          strlen("refs w:000\n"));
  cr_assert(eq(int, read_str(text, &w, err), LMS_OK), "%s", err);
  cr_assert(eq(str, w.name, name63));
  cr_assert(eq(u32, w.nchunks, 3));
  cr_assert(eq(u64, w.chunks[0].size, LMS__WL_MAX_SIZE));
  cr_assert(eq(str, w.chunks[0].name, name47));
  cr_assert(eq(int, w.chunks[0].transient, 0));
  cr_assert(eq(u64, w.chunks[1].size, 1));
  cr_assert(eq(str, w.chunks[1].name, ""), "'-' is the empty name");
  cr_assert(eq(int, w.chunks[1].transient, 1));
  cr_assert(eq(u64, w.chunks[2].size, 42), "leading zeros are ignored");
  cr_assert(eq(str, w.chunks[2].name, "A-z.0:9/+_"));
  cr_assert(eq(u32, w.nsteps, 3));
  cr_assert(eq(u64, w.steps[0].compute_ns, LMS__WL_MAX_STEP_NS));
  cr_assert(eq(u32, w.steps[0].nrefs, 0), "a step may name no chunk");
  cr_assert(eq(u64, w.steps[1].compute_ns, 0));
  cr_assert(eq(u32, w.steps[1].nrefs, 3));
  assert_ref(&w, 1, 0, 0, LMS_ACCESS_RW);
  assert_ref(&w, 1, 1, 1, LMS_ACCESS_WRITE);
  assert_ref(&w, 1, 2, 2, LMS_ACCESS_READ);
  assert_ref(&w, 2, 0, 2, LMS_ACCESS_READ);
  lms__wl_free(&w);
}

/* A line of exactly the limit reads; one byte more does not, and a far
 * longer line without an end fails the same way without trouble. */
Test(trace_read, line_length_limit) {
  size_t limit = 65536;
  char *text = malloc(limit + 4096 + (1u << 20));
  cr_assert(ne(ptr, text, NULL));
  lms__workload_t w;
  char err[LMS__ERRBUF];

  size_t n = 0;
  n += (size_t)sprintf(text + n, HDR "#");
  memset(text + n, 'c', limit - 1);
  n += limit - 1;
  n += (size_t)sprintf(text + n, "\r\n" CHUNK0 "step 1 s r:0\n");
  cr_assert(eq(int, read_text(text, n, &w, err), LMS_OK), "%s", err);
  lms__wl_free(&w);

  n = 0;
  n += (size_t)sprintf(text + n, HDR "#");
  memset(text + n, 'c', limit);
  n += limit;
  n += (size_t)sprintf(text + n, "\n" CHUNK0 "step 1 s r:0\n");
  cr_assert(eq(int, read_text(text, n, &w, err), LMS_ERR_INVALID));
  cr_assert(ne(ptr, strstr(err, "t:2: line is longer than 65536 bytes"),
               NULL), "%s", err);
  assert_empty(&w);

  n = 0;
  n += (size_t)sprintf(text + n, HDR CHUNK0 "step 1 s");
  for (size_t i = 0; i < (1u << 20) / 4; i++) {
    memcpy(text + n, " r:0", 4);
    n += 4;
  }
  cr_assert(eq(int, read_text(text, n, &w, err), LMS_ERR_INVALID));
  cr_assert(ne(ptr, strstr(err, "t:3: line is longer"), NULL), "%s", err);
  assert_empty(&w);
  free(text);
}

/* ---- Rejected input ---------------------------------------------------- */

struct bad_case {
  char what[48];
  char text[160];
  size_t len;
  unsigned line;
  char word[128];
};

#define TEXT(s) s, sizeof(s) - 1
#define STEP0 "step 1 s r:0\n"

ParameterizedTestParameters(trace_read, rejects) {
  static struct bad_case cases[] = {
      /* The header. */
      {"empty file", TEXT(""), 1, "the trace is empty"},
      {"only comments", TEXT("# a\n\n  # b\n"), 3, "no header"},
      {"wrong magic", TEXT("lms_trace 1\n"), 1, "expected the header"},
      {"record before the header", TEXT("# c\n" CHUNK0 STEP0), 2,
       "expected the header 'lms-trace 1' before any record; got 'chunk'"},
      {"version 2", TEXT("lms-trace 2\n" CHUNK0 STEP0), 1,
       "unsupported trace version '2'; this reader accepts version 1"},
      {"version 0", TEXT("lms-trace 0\n"), 1, "unsupported trace version"},
      {"version 1.0", TEXT("lms-trace 1.0\n"), 1, "unsupported"},
      {"version past 64 bits", TEXT("lms-trace 18446744073709551617\n"), 1,
       "unsupported"},
      {"header without version", TEXT("lms-trace\n"), 1, "VERSION field"},
      {"header with a field more", TEXT("lms-trace 1 x\n"), 1,
       "unexpected field 'x'"},
      {"second header", TEXT(HDR CHUNK0 HDR), 3, "second header"},
      /* Truncated records. */
      {"file cut inside a chunk line", TEXT(HDR "chunk 3 12"), 2,
       "chunk line ends before its NAME field; expected: chunk ID BYTES "
       "NAME persistent|transient"},
      {"chunk without ID", TEXT(HDR "chunk\n"), 2, "its ID field"},
      {"chunk without size", TEXT(HDR "chunk 3\n"), 2, "its BYTES field"},
      {"chunk without lifetime", TEXT(HDR "chunk 3 12 a\n"), 2,
       "its persistent|transient field"},
      {"step without time", TEXT(HDR CHUNK0 "step\n"), 3, "its NS field"},
      {"step without name", TEXT(HDR CHUNK0 "step 5"), 3, "its NAME field"},
      {"workload without name", TEXT(HDR "workload\n"), 2, "its NAME field"},
      {"refs without REF", TEXT(HDR CHUNK0 STEP0 "refs  \n"), 4,
       "its REF field"},
      /* Records. */
      {"unknown record", TEXT(HDR "chunks 0 1 a persistent\n"), 2,
       "unknown record 'chunks'; accepted: workload, chunk, step, refs"},
      {"upper-case keyword", TEXT(HDR "CHUNK 0 1 a persistent\n"), 2,
       "unknown record 'CHUNK'"},
      {"unknown lifetime", TEXT(HDR "chunk 0 1 a Transient\n"), 2,
       "lifetime 'Transient' is not known; accepted: persistent or "
       "transient"},
      {"chunk with a field more", TEXT(HDR "chunk 0 1 a persistent x\n"), 2,
       "unexpected field 'x'"},
      {"workload with a field more", TEXT(HDR "workload a b\n"), 2,
       "unexpected field 'b'"},
      {"workload after a chunk", TEXT(HDR CHUNK0 "workload w\n"), 3,
       "before any chunk or step"},
      {"second workload", TEXT(HDR "workload a\nworkload b\n"), 3,
       "second workload line (the first is line 2)"},
      {"CR inside a line", TEXT(HDR "chunk 0 1 a\rb persistent\n"), 2,
       "character '\\x0d'"},
      {"CRLF ends count lines",
       TEXT("lms-trace 1\r\n# c\r\n" CHUNK0 "bogus\r\n"), 4,
       "unknown record 'bogus';"},
      /* Numbers. */
      {"negative size", TEXT(HDR "chunk 0 -5 a persistent\n"), 2,
       "chunk size '-5' is negative; accepted: a decimal number from 1 to "
       "281474976710656"},
      {"size with a plus", TEXT(HDR "chunk 0 +5 a persistent\n"), 2,
       "'+5' has a sign"},
      {"zero size", TEXT(HDR "chunk 0 0 a persistent\n"), 2,
       "chunk size '0' is out of range"},
      {"size past 256 TiB", TEXT(HDR "chunk 0 281474976710657 a persistent\n"),
       2, "'281474976710657' is out of range"},
      {"size past 64 bits",
       TEXT(HDR "chunk 0 99999999999999999999 a persistent\n"), 2,
       "'99999999999999999999' is out of range"},
      {"size with junk", TEXT(HDR "chunk 0 12abc a persistent\n"), 2,
       "'12abc' is not a decimal number"},
      {"hexadecimal size", TEXT(HDR "chunk 0 0x10 a persistent\n"), 2,
       "'0x10' is hexadecimal"},
      {"size with a suffix", TEXT(HDR "chunk 0 4KiB a persistent\n"), 2,
       "not a decimal number"},
      {"size with a fraction", TEXT(HDR "chunk 0 1.5 a persistent\n"), 2,
       "not a decimal number"},
      {"chunk ID past 2^31 - 1", TEXT(HDR "chunk 2147483648 1 a persistent\n"),
       2, "chunk ID '2147483648' is out of range; accepted: a decimal number "
       "from 0 to 2147483647"},
      {"negative chunk ID", TEXT(HDR "chunk -1 1 a persistent\n"), 2,
       "chunk ID '-1' is negative"},
      {"step time past the limit", TEXT(HDR CHUNK0 "step 10000000000001 s\n"),
       3, "step time '10000000000001' is out of range"},
      {"negative step time", TEXT(HDR CHUNK0 "step -1 s\n"), 3,
       "step time '-1' is negative"},
      /* Chunk IDs and references. */
      {"chunk ID declared twice",
       TEXT(HDR CHUNK0 "chunk 1 8 b persistent\nchunk 0 8 c persistent\n"),
       4, "chunk ID 0 is declared twice (first on line 2)"},
      {"undeclared chunk", TEXT(HDR CHUNK0 "step 1 s r:0 r:7\n"), 3,
       "reference 'r:7' names chunk 7, which no chunk line above declares"},
      {"chunk declared after its use", TEXT(HDR STEP0 CHUNK0), 2,
       "which no chunk line above declares"},
      {"reference x:0", TEXT(HDR CHUNK0 "step 1 s x:0\n"), 3,
       "reference 'x:0' has the access 'x'; accepted: r:ID, w:ID or rw:ID"},
      {"reference R:0", TEXT(HDR CHUNK0 "step 1 s R:0\n"), 3,
       "has the access 'R'"},
      {"reference wr:0", TEXT(HDR CHUNK0 "step 1 s wr:0\n"), 3,
       "has the access 'wr'"},
      {"reference r:", TEXT(HDR CHUNK0 "step 1 s r:\n"), 3,
       "reference 'r:' has no chunk ID"},
      {"reference rw:", TEXT(HDR CHUNK0 "step 1 s rw:\n"), 3,
       "reference 'rw:' has no chunk ID"},
      {"reference r0", TEXT(HDR CHUNK0 "step 1 s r0\n"), 3,
       "reference 'r0' has no ':'"},
      {"reference r:abc", TEXT(HDR CHUNK0 "step 1 s r:abc\n"), 3,
       "'abc' is not a decimal number"},
      {"reference r:-1", TEXT(HDR CHUNK0 "step 1 s r:-1\n"), 3,
       "'-1' is negative"},
      {"chunk named twice in a step", TEXT(HDR CHUNK0 "step 1 s r:0 w:0\n"), 3,
       "the step names chunk 0 twice; name a chunk once per step, as rw:0"},
      {"chunk named again on a refs line",
       TEXT(HDR CHUNK0 STEP0 "refs rw:0\n"), 4, "names chunk 0 twice"},
      {"refs before any step", TEXT(HDR CHUNK0 "refs r:0\n"), 3,
       "a refs line must follow a step line"},
      {"refs after a chunk line",
       TEXT(HDR CHUNK0 STEP0 "chunk 1 1 b persistent\nrefs r:1\n"), 5,
       "a refs line must follow a step line"},
      /* Names. */
      {"chunk name of 48 characters",
       TEXT(HDR "chunk 0 1 nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn "
                "persistent\n"),
       2, "is 48 characters long; accepted: 1 to 47 characters of A-Z"},
      {"step name of 48 characters",
       TEXT(HDR CHUNK0 "step 1 nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn\n"),
       3, "step name"},
      {"workload name of 64 characters",
       TEXT(HDR "workload wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww"
                "wwwwwwwwww\n"),
       2, "is 64 characters long; accepted: 1 to 63"},
      {"name with #", TEXT(HDR "chunk 0 1 a#b persistent\n"), 2,
       "chunk name 'a#b' has the character '#' at position 2"},
      {"name with a comma", TEXT(HDR CHUNK0 "step 1 a,b r:0\n"), 3,
       "has the character ','"},
      {"name not in ASCII", TEXT(HDR "chunk 0 1 caf\xc3\xa9 persistent\n"), 2,
       "has the character '\\xc3' at position 4"},
      {"name with a control character", TEXT(HDR "chunk 0 1 a\x01 persistent\n"),
       2, "character '\\x01'"},
      /* Bytes. */
      {"NUL byte", TEXT(HDR "chunk 0 1 a\0b persistent\n"), 2,
       "NUL byte at column 12"},
      {"NUL byte in a comment", TEXT(HDR CHUNK0 STEP0 "# \0\n"), 4,
       "NUL byte at column 3"},
      /* The whole file. */
      {"no steps", TEXT(HDR CHUNK0), 2, "the trace has no steps"},
      {"no steps, trailing comment", TEXT(HDR CHUNK0 "# end\n\n"), 4,
       "no steps"},
      {"unused transient chunk",
       TEXT(HDR CHUNK0 "chunk 5 8 t transient\nchunk 6 8 u persistent\n"
            STEP0),
       3, "transient chunk 5 ('t') is used by no step"},
  };
  return cr_make_param_array(struct bad_case, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct bad_case *c, trace_read, rejects) {
  lms__workload_t w;
  char err[LMS__ERRBUF];
  lms_status_t st = read_text(c->text, c->len, &w, err);
  cr_assert(eq(int, st, LMS_ERR_INVALID), "%s: %s", c->what, err);
  char prefix[32];
  snprintf(prefix, sizeof prefix, "t:%u: ", c->line);
  cr_assert(eq(int, strncmp(err, prefix, strlen(prefix)), 0),
            "%s: expected '%s...', got '%s'", c->what, prefix, err);
  cr_assert(ne(ptr, strstr(err, c->word), NULL),
            "%s: expected '%s' in '%s'", c->what, c->word, err);
  assert_empty(&w);
}

/* ---- Files ------------------------------------------------------------- */

Test(trace_read, missing_file) {
  lms__workload_t w;
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__trace_read("/nonexistent-lms-dir/none.trace", &w,
                                    err), LMS_ERR_INVALID));
  cr_assert(eq(str, err, "cannot open /nonexistent-lms-dir/none.trace: No "
                         "such file or directory"));
  assert_empty(&w);
}

/* Messages from a file name its path; a very long path is cut from the
 * front so that the reason still fits. */
Test(trace_read, messages_name_the_path) {
  char path[] = "/tmp/lms_test_trace_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(ge(int, fd, 0));
  static const char text[] = HDR "chunk 0 -5 a persistent\n";
  cr_assert(eq(long, (long)write(fd, text, sizeof text - 1),
               (long)sizeof text - 1));
  close(fd);
  lms__workload_t w;
  char err[LMS__ERRBUF], expect[256];
  lms_status_t st = lms__trace_read(path, &w, err);
  unlink(path);
  cr_assert(eq(int, st, LMS_ERR_INVALID));
  snprintf(expect, sizeof expect, "%s:2: chunk size '-5' is negative", path);
  cr_assert(ne(ptr, strstr(err, expect), NULL), "%s", err);
  assert_empty(&w);

  char label[400];
  memset(label, 'L', sizeof label - 1);
  label[sizeof label - 1] = '\0';
  FILE *f = tmpfile();
  cr_assert(ne(ptr, f, NULL));
  fputs(text, f);
  rewind(f);
  cr_assert(eq(int, lms__trace_read_file(f, label, &w, err), LMS_ERR_INVALID));
  fclose(f);
  cr_assert(eq(int, strncmp(err, "...LLL", 6), 0), "%s", err);
  cr_assert(ne(ptr, strstr(err, ":2: chunk size '-5' is negative; accepted: "
                                "a decimal number from 1 to 281474976710656"),
               NULL), "%s", err);
}

/* ---- Hostile but valid input ------------------------------------------- */

/* Text built with printf-style appends, for traces too long for a table. */
typedef struct text {
  char *buf;
  size_t len;
  FILE *f;
} text_t;

static void text_open(text_t *t) {
  t->buf = NULL;
  t->len = 0;
  t->f = open_memstream(&t->buf, &t->len);
  cr_assert(ne(ptr, t->f, NULL));
}

static lms_status_t text_read(text_t *t, lms__workload_t *w, char *err) {
  cr_assert(eq(int, fflush(t->f), 0));
  return read_text(t->buf, t->len, w, err);
}

static void text_close(text_t *t) {
  fclose(t->f);
  free(t->buf);
}

/* n IDs below 2^31 that the reader's old hash (id * 2654435761, folded
 * by h ^ (h >> 16)) sent to the first slots of a table of 2^bits: each
 * is the ID whose hash is (hi << bits) | lo for the smallest lo.  The fold
 * is its own inverse and 244002641 is 2654435761's inverse mod 2^32, so
 * the IDs are distinct. */
static void old_hash_ids(uint32_t *ids, uint32_t n, unsigned bits) {
  uint32_t got = 0;
  for (uint32_t lo = 0; got < n; lo++) {
    for (uint64_t hi = 0; hi < (1ull << (32 - bits)) && got < n; hi++) {
      uint32_t g = (uint32_t)(hi << bits) | lo;
      uint32_t id = (g ^ (g >> 16)) * 244002641u;
      if (id <= 2147483647u) ids[got++] = id;
    }
  }
}

static unsigned access_of(uint32_t i) { return 1 + i % 3; }
static const char *access_tag_of(uint32_t i) {
  static const char *const tags[] = {"r", "w", "rw"};
  return tags[i % 3];
}

/* 32,768 IDs chosen so that a fixed hash (the one the reader used) sends
 * them all to one slot, declared and then named in another order: every
 * chunk keeps its size and every reference finds its chunk, and the IDs
 * that collide are still told apart when one is declared twice or one
 * never declared is named.  (On the old hash this read took seconds; Note
 * [Chunk IDs].) */
Test(trace_read, ids_chosen_to_collide) {
  enum { N = 1 << 15 };
  uint32_t *ids = malloc((N + 1) * sizeof *ids);
  cr_assert(ne(ptr, ids, NULL));
  old_hash_ids(ids, N + 1, 16); /* 16: the table's size for N IDs */
  text_t t;
  text_open(&t);
  fputs(HDR, t.f);
  for (uint32_t i = 0; i < N; i++)
    fprintf(t.f, "chunk %u %u c%u persistent\n", ids[i], 1 + i, i);
  /* Steps of 100 references, from the last chunk declared to the first. */
  for (uint32_t k = 0; k < N; k++) {
    uint32_t i = N - 1 - k;
    if (k % 100 == 0) fprintf(t.f, "%sstep %u s%u", k ? "\n" : "", k, k);
    fprintf(t.f, " %s:%u", access_tag_of(i), ids[i]);
  }
  fputc('\n', t.f);
  lms__workload_t w;
  char err[LMS__ERRBUF];
  cr_assert(eq(int, text_read(&t, &w, err), LMS_OK), "%s", err);
  cr_assert(eq(u32, w.nchunks, N));
  cr_assert(eq(u32, w.nrefs, N));
  cr_assert(eq(u32, w.nsteps, (N + 99) / 100));
  for (uint32_t i = 0; i < N; i++)
    cr_assert(eq(u64, w.chunks[i].size, 1 + i), "chunk %u", i);
  for (uint32_t k = 0; k < N; k++) {
    uint32_t i = N - 1 - k;
    assert_ref(&w, k / 100, k % 100, i, access_of(i));
  }
  lms__wl_free(&w);

  /* One of the colliding IDs declared again ... */
  char *base = t.buf;
  size_t base_len = t.len;
  text_t bad;
  text_open(&bad);
  fwrite(base, 1, base_len, bad.f);
  fprintf(bad.f, "chunk %u 1 again persistent\n", ids[N / 2]);
  cr_assert(eq(int, text_read(&bad, &w, err), LMS_ERR_INVALID));
  char want[128];
  snprintf(want, sizeof want, "chunk ID %u is declared twice (first on "
           "line %u)", ids[N / 2], 2 + N / 2);
  cr_assert(ne(ptr, strstr(err, want), NULL), "%s", err);
  text_close(&bad);
  /* ... and one that collides with them all but was never declared. */
  text_open(&bad);
  fwrite(base, 1, base_len, bad.f);
  fprintf(bad.f, "step 1 late r:%u\n", ids[N]);
  cr_assert(eq(int, text_read(&bad, &w, err), LMS_ERR_INVALID));
  snprintf(want, sizeof want, "names chunk %u, which no chunk line above "
           "declares", ids[N]);
  cr_assert(ne(ptr, strstr(err, want), NULL), "%s", err);
  text_close(&bad);
  text_close(&t);
  free(ids);
}

/* One step naming 65,536 chunks (on refs lines, as the writer breaks it)
 * and the next naming them all again, backwards: every reference is kept,
 * in order, with its own access, none merged into the step before; and
 * a chunk named twice at the very end of the wide step is still caught. */
Test(trace_read, a_step_naming_65536_chunks) {
  enum { N = 1 << 16 };
  text_t t;
  text_open(&t);
  fputs(HDR, t.f);
  for (uint32_t i = 0; i < N; i++)
    fprintf(t.f, "chunk %u 4096 - transient\n", 3 * i);
  fputs("step 1 wide", t.f);
  for (uint32_t i = 0; i < N; i++) {
    if (i > 0 && i % 256 == 0) fputs("\nrefs", t.f);
    fprintf(t.f, " %s:%u", access_tag_of(i), 3 * i);
  }
  fputs("\nstep 2 back", t.f);
  for (uint32_t k = 0; k < N; k++) {
    if (k > 0 && k % 256 == 0) fputs("\nrefs", t.f);
    fprintf(t.f, " %s:%u", access_tag_of(k + 1), 3 * (N - 1 - k));
  }
  fputc('\n', t.f);
  lms__workload_t w;
  char err[LMS__ERRBUF];
  cr_assert(eq(int, text_read(&t, &w, err), LMS_OK), "%s", err);
  cr_assert(eq(u32, w.nsteps, 2));
  cr_assert(eq(u32, w.steps[0].nrefs, N));
  cr_assert(eq(u32, w.steps[1].nrefs, N));
  cr_assert(eq(u32, w.nrefs, 2 * N));
  for (uint32_t i = 0; i < N; i++) {
    assert_ref(&w, 0, i, i, access_of(i));
    assert_ref(&w, 1, i, N - 1 - i, access_of(i + 1));
  }
  lms__wl_free(&w);
  text_close(&t);

  /* The wide step naming its first chunk again on its last line. */
  text_open(&t);
  fputs(HDR, t.f);
  for (uint32_t i = 0; i < N; i++)
    fprintf(t.f, "chunk %u 4096 - persistent\n", i);
  fputs("step 1 wide", t.f);
  for (uint32_t i = 0; i < N; i++) {
    if (i > 0 && i % 256 == 0) fputs("\nrefs", t.f);
    fprintf(t.f, " r:%u", i);
  }
  fputs("\nrefs w:0\n", t.f);
  cr_assert(eq(int, text_read(&t, &w, err), LMS_ERR_INVALID));
  char want[64];
  snprintf(want, sizeof want, "t:%u: the step names chunk 0 twice",
           1 + N + N / 256 + 1);
  cr_assert(ne(ptr, strstr(err, want), NULL), "%s", err);
  assert_empty(&w);
  text_close(&t);
}

/* Reads t, which must fail at `line` with `word` in the message. */
static void assert_refused(text_t *t, unsigned line, const char *word) {
  lms__workload_t w;
  char err[LMS__ERRBUF];
  cr_assert(eq(int, text_read(t, &w, err), LMS_ERR_INVALID), "%s", word);
  char prefix[32];
  snprintf(prefix, sizeof prefix, "t:%u: ", line);
  cr_assert(eq(int, strncmp(err, prefix, strlen(prefix)), 0),
            "expected '%s...', got '%s'", prefix, err);
  cr_assert(ne(ptr, strstr(err, word), NULL), "expected '%s' in '%s'", word,
            err);
  assert_empty(&w);
}

static void assert_reads(text_t *t) {
  lms__workload_t w;
  char err[LMS__ERRBUF];
  cr_assert(eq(int, text_read(t, &w, err), LMS_OK), "%s", err);
  lms__wl_free(&w);
}

/* Chunks of 1 PiB in all read; one byte more is refused at its line,
 * naming the limit (the largest chunks, 65,536 of them, once added up to
 * 0 bytes). */
Test(trace_read, chunks_past_1_PiB_in_all) {
  text_t t;
  text_open(&t);
  fputs(HDR, t.f);
  for (int i = 0; i < 4; i++)
    fprintf(t.f, "chunk %d 281474976710656 big persistent\n", i);
  fputs("step 1 s r:0 r:1 r:2 r:3\n", t.f);
  assert_reads(&t);
  fputs("chunk 4 1 one-more persistent\n", t.f);
  assert_refused(&t, 7, "chunk size 1 brings the trace's chunks to more "
                 "than 1125899906842624 bytes (1 PiB) in all; accepted: "
                 "chunk sizes summing to at most 1125899906842624");
  text_close(&t);
}

/* Steps of 10^7 s in all read; 1 ns more is refused at its line (1.9
 * million of the longest steps once wrapped the sum and printed a time of
 * 553255926290.4 ms). */
Test(trace_read, compute_past_10_million_s_in_all) {
  text_t t;
  text_open(&t);
  fputs(HDR CHUNK0, t.f);
  for (int i = 0; i < 1000; i++) fputs("step 10000000000000 s r:0\n", t.f);
  assert_reads(&t);
  fputs("step 1 one-more\n", t.f);
  assert_refused(&t, 1003, "step time 1 brings the trace's compute to more "
                 "than 10000000000000000 ns (10^7 s) in all; accepted: step "
                 "times summing to at most 10000000000000000 ns");
  text_close(&t);
}

/* Steps naming 4 PiB in all read, each step counting its chunks; one
 * reference more is refused at its line. */
Test(trace_read, steps_naming_past_4_PiB_in_all) {
  text_t t;
  text_open(&t);
  fputs(HDR "chunk 0 281474976710656 big persistent\n", t.f);
  for (int i = 0; i < 16; i++) fputs("step 1 s rw:0\n", t.f);
  assert_reads(&t);
  fputs("step 1 s r:0\n", t.f);
  assert_refused(&t, 19, "reference 'r:0' brings the bytes the steps name "
                 "to more than 4503599627370496 (4 PiB) in all, each step "
                 "counting the chunks it names; accepted: at most "
                 "4503599627370496");
  text_close(&t);
}
