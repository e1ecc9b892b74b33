/* bench_trace.c - the time to read (and so validate) traces chosen to be
 * hard for the reader: chunk IDs that all land in one stretch of a hash
 * table, and one step naming tens of thousands of chunks.  Prints seconds
 * per case; the reader should take time linear in the trace's size
 * whatever the IDs are (Note [Chunk IDs] in src/graph/trace.c).
 *
 *   build/bin/lms_bench_trace [IDS [WIDTH]]
 *
 * IDS chunks (default 1048576) are declared and then named once each by
 * steps of 64 references; WIDTH (default 65536) is the number of chunks a
 * single step names.  The "old-hash" IDs are chosen against the
 * multiplicative hash the reader once used (id * 2654435761, folded by
 * h ^ (h >> 16), masked to the table), so that all of them start their
 * probe within about a thousand slots of each other. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph/graph.h"

#define MAX_ID 2147483647u
#define REFS_PER_STEP 64
#define REFS_PER_LINE 256

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* The table size the old reader reached for n IDs: a power of two from
 * 64, at least twice the IDs. */
static unsigned old_table_bits(uint32_t n) {
  unsigned bits = 6;
  while ((1ull << bits) < 2ull * n) bits++;
  return bits;
}

/* n distinct IDs below 2^31 whose old hash, masked to the final table,
 * is as small as can be: the hash h ^ (h >> 16) is its own inverse, and
 * 2654435761 is odd, so each hash value names exactly one 32-bit ID. */
static void old_hash_ids(uint32_t *ids, uint32_t n) {
  const uint32_t inv = 244002641u; /* 2654435761 * inv == 1 mod 2^32 */
  unsigned bits = old_table_bits(n);
  uint32_t got = 0;
  for (uint32_t lo = 0; got < n; lo++) {
    for (uint64_t hi = 0; hi < (1ull << (32 - bits)) && got < n; hi++) {
      uint32_t g = (uint32_t)(hi << bits) | lo;
      uint32_t h = g ^ (g >> 16);
      uint32_t id = h * inv;
      if (id <= MAX_ID) ids[got++] = id;
    }
  }
}

/* n distinct random IDs (a random odd multiplier over a random start is a
 * permutation of 2^31 values). */
static void random_ids(uint32_t *ids, uint32_t n) {
  uint32_t a = (uint32_t)rnd() | 1u, b = (uint32_t)rnd();
  for (uint32_t i = 0; i < n; i++) ids[i] = (a * i + b) & MAX_ID;
}

/* IDs that differ only in their high bits (for a million, every one is 0
 * in the low 11), which defeats a table indexed by the ID's low bits. */
static void high_bit_ids(uint32_t *ids, uint32_t n) {
  unsigned bits = 0;
  while ((1ull << bits) < n) bits++;
  for (uint32_t i = 0; i < n; i++) ids[i] = i << (31 - bits);
}

/* Writes a trace declaring ids[0..n) and then naming each once, `per`
 * references to a step, at most REFS_PER_LINE to a line. */
static FILE *make_trace(const uint32_t *ids, uint32_t n, uint32_t per) {
  FILE *f = tmpfile();
  if (f == NULL) {
    perror("lms_bench_trace: tmpfile");
    exit(1);
  }
  fputs("lms-trace 1\nworkload bench\n", f);
  for (uint32_t i = 0; i < n; i++)
    fprintf(f, "chunk %u 4096 - persistent\n", ids[i]);
  for (uint32_t i = 0; i < n; i += per) {
    fprintf(f, "step 1000 -");
    for (uint32_t k = 0; k < per && i + k < n; k++) {
      if (k > 0 && k % REFS_PER_LINE == 0) fputs("\nrefs", f);
      fprintf(f, " %s:%u", k % 2 ? "r" : "rw", ids[i + k]);
    }
    fputc('\n', f);
  }
  if (fflush(f) != 0) {
    perror("lms_bench_trace: writing the trace");
    exit(1);
  }
  return f;
}

/* Reads f once; returns the seconds taken, exits if the read fails. */
static double time_read(FILE *f, const char *what, uint32_t want_refs) {
  lms__workload_t w;
  char err[LMS__ERRBUF];
  rewind(f);
  double t0 = now_s();
  lms_status_t st = lms__trace_read_file(f, what, &w, err);
  double t = now_s() - t0;
  if (st != LMS_OK || w.nrefs != want_refs) {
    fprintf(stderr, "lms_bench_trace: %s: %s\n", what,
            st != LMS_OK ? err : "wrong number of references");
    exit(1);
  }
  lms__wl_free(&w);
  return t;
}

static void bench_ids(const char *what, void (*gen)(uint32_t *, uint32_t),
                      uint32_t n) {
  uint32_t *ids = malloc((size_t)n * sizeof *ids);
  if (ids == NULL) {
    fprintf(stderr, "lms_bench_trace: no memory for %u IDs\n", n);
    exit(1);
  }
  gen(ids, n);
  FILE *f = make_trace(ids, n, REFS_PER_STEP);
  double t = time_read(f, what, n);
  printf("  %-44s %10.3f s\n", what, t);
  fclose(f);
  free(ids);
}

static void sequential_ids(uint32_t *ids, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) ids[i] = i;
}

/* One step naming `width` chunks, read from a trace; then the same step
 * built through lms__wl_add_ref with every chunk named twice (a read,
 * then a write, merged), and validated on its own. */
static void bench_wide(uint32_t width) {
  uint32_t *ids = calloc(width, sizeof *ids);
  if (ids == NULL) exit(1);
  sequential_ids(ids, width);
  FILE *f = make_trace(ids, width, width);
  char what[64];
  snprintf(what, sizeof what, "one step naming %u chunks: read", width);
  printf("  %-44s %10.3f s\n", what, time_read(f, what, width));
  fclose(f);
  free(ids);

  lms__workload_t w;
  lms__wl_init(&w, "wide");
  for (uint32_t i = 0; i < width; i++)
    if (lms__wl_add_chunk(&w, 4096, 0, "", NULL) != LMS_OK) exit(1);
  if (lms__wl_add_step(&w, 1000, "") != LMS_OK) exit(1);
  double t0 = now_s();
  for (uint32_t i = 0; i < width; i++)
    if (lms__wl_add_ref(&w, i, LMS_ACCESS_READ) != LMS_OK) exit(1);
  for (uint32_t i = 0; i < width; i++)
    if (lms__wl_add_ref(&w, i, LMS_ACCESS_WRITE) != LMS_OK) exit(1);
  double t_add = now_s() - t0;
  char err[LMS__ERRBUF];
  t0 = now_s();
  lms_status_t st = lms__wl_validate(&w, err);
  double t_val = now_s() - t0;
  if (st != LMS_OK || w.nrefs != width) {
    fprintf(stderr, "lms_bench_trace: wide step: %s\n",
            st != LMS_OK ? err : "references were not merged");
    exit(1);
  }
  snprintf(what, sizeof what, "%u x 2 merged lms__wl_add_ref", width);
  printf("  %-44s %10.3f s\n", what, t_add);
  snprintf(what, sizeof what, "lms__wl_validate, %u-wide step", width);
  printf("  %-44s %10.3f s\n", what, t_val);
  lms__wl_free(&w);
}

static uint32_t parse_count(const char *s, uint32_t lo, uint32_t hi) {
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || *end != '\0' || s[0] == '-' || v < lo || v > hi) {
    fprintf(stderr, "lms_bench_trace: '%s': accepted: a whole number from "
            "%u to %u\n", s, lo, hi);
    exit(2);
  }
  return (uint32_t)v;
}

int main(int argc, char **argv) {
  uint32_t n = argc > 1 ? parse_count(argv[1], 1024, 1u << 24) : 1u << 20;
  uint32_t width = argc > 2 ? parse_count(argv[2], 1, 1u << 24) : 1u << 16;
  setvbuf(stdout, NULL, _IOLBF, 0); /* each figure as it comes */
  printf("reading traces of %u chunks, %u references a step:\n", n,
         REFS_PER_STEP);
  bench_ids("sequential IDs", sequential_ids, n);
  bench_ids("random IDs", random_ids, n);
  bench_ids("IDs differing in their high bits", high_bit_ids, n);
  bench_ids("IDs colliding in the old hash", old_hash_ids, n);
  printf("a wide step:\n");
  bench_wide(width);
  return 0;
}
