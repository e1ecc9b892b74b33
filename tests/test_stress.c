/* test_stress.c - integrity under concurrency: 4 threads on 2 streams do
 * 100,000 (25,000 under ThreadSanitizer) random allocate / free / acquire
 * / write / read / release operations on the simulated device, under a
 * GPU limit several times smaller than the live data, and every chunk's
 * bytes are checked against the checksum of what was last written to it.  It runs twice: with the
 * default options, and with prefetch driven by the stack schedule (the
 * newest live chunks are brought back in at every step), so that prefetch
 * copies, their evictions and the threads' own acquires interleave.
 *
 * Note [Stress seeds]
 * Each thread's sequence of operations comes from a generator seeded from
 * LMS_STRESS_SEED (a decimal or 0x-prefixed number; a fixed default when
 * unset), so that CI can run the test under several seeds and a failure
 * can be run again with the seed it printed: every assertion names it.
 * The threads' interleaving still varies from run to run; the seed fixes
 * what each thread asks for, not when. */
#ifndef LMS_STRESS_STANDALONE
#include <criterion/criterion.h>
#include "check.h"
#endif
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

/* Note [Stress under ThreadSanitizer]
 * Criterion cannot start under ThreadSanitizer: its arena is mapped where
 * the sanitizer's shadow memory lives, and every test program aborts with
 * "Could not initialize inheritable arena" (Snaipe/Criterion#274).  So that
 * this test, the one that runs threads against one context, can still be
 * run under it (`make test-tsan`), LMS_STRESS_STANDALONE builds it as a
 * plain program: the few Criterion macros it uses become the checks below,
 * and main() runs each Test in turn, exiting 1 if any check failed. */
#ifdef LMS_STRESS_STANDALONE
#define eq(type, a, b) ((a) == (b))
#define ge(type, a, b) ((a) >= (b))
#define gt(type, a, b) ((a) > (b))
#define le(type, a, b) ((a) <= (b))
/* The optional message always starts with a string literal, which "" is
 * joined to; with none, the message is "". */
#define cr_expect(cond, ...)                                                  \
  ((cond) ? (void)0 : check_failed(__FILE__, __LINE__, #cond, "" __VA_ARGS__))
#define cr_assert(cond, ...)                                                  \
  do {                                                                        \
    if (!(cond)) {                                                            \
      check_failed(__FILE__, __LINE__, #cond, "" __VA_ARGS__);                \
      exit(1);                                                                \
    }                                                                         \
  } while (0)
#define cr_log_info(...) (fprintf(stderr, __VA_ARGS__), fputc('\n', stderr))
#define MAX_TESTS 8
static struct {
  const char *name;
  void (*fn)(void);
} g_tests[MAX_TESTS];
static int g_ntests, g_failed;
static void add_test(const char *name, void (*fn)(void)) {
  if (g_ntests < MAX_TESTS) {
    g_tests[g_ntests].name = name;
    g_tests[g_ntests++].fn = fn;
  }
}
#define Test(suite, name, ...)                                                \
  static void suite##_##name(void);                                          \
  __attribute__((constructor)) static void add_##suite##_##name(void) {       \
    add_test(#suite "::" #name, suite##_##name);                              \
  }                                                                           \
  static void suite##_##name(void)

/* Not declared as printf-like: "" alone, the message of a check without
 * one, is a zero-length format to the compiler's format warning. */
static void check_failed(const char *file, int line, const char *cond,
                         const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s:%d: check failed: %s", file, line, cond);
  if (fmt[0] != '\0') {
    fputs(": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
  }
  fputc('\n', stderr);
  g_failed = 1;
}
#endif

#define THREADS 4
#ifdef LMS_STRESS_STANDALONE
/* A quarter of the operations under ThreadSanitizer, which runs the test
 * ten times slower: still thousands of swaps and prefetches. */
#define OPS_PER_THREAD 6250
#else
#define OPS_PER_THREAD 25000
#endif
#define SLOTS 24                 /* chunks a thread may hold */
#define MAX_CHUNK (512u << 10)   /* 4 KiB .. 512 KiB */
#define GPU_LIMIT "6MiB"         /* live data reaches ~4 x 24 x 260 KiB */
#define DEFAULT_SEED 0x1234567ull

typedef struct worker {
  lms_ctx_t *ctx;
  lms_stream_t *streams;
  unsigned id;
  uint64_t rng;
  lms_chunk_t *chunk[SLOTS];
  uint64_t sum[SLOTS];
  uint64_t ops, reads, writes, mismatches, failures;
  uint64_t peak_live;
  lms_status_t first_failure;
  char failure[256];
} worker_t;

static atomic_ullong live_bytes, peak_live_bytes;

/* The seed of Note [Stress seeds]; the test fails, naming the variable and
 * the accepted form, on a value that is not a whole number. */
static unsigned long long stress_seed(void) {
  const char *text = getenv("LMS_STRESS_SEED");
  if (text == NULL || text[0] == '\0') return DEFAULT_SEED;
  char *end = NULL;
  errno = 0;
  unsigned long long seed = strtoull(text, &end, 0);
  cr_assert(text[0] != '-' && errno == 0 && end != text && *end == '\0',
            "LMS_STRESS_SEED='%s': accepted: a whole number from 0 to 2^64 - "
            "1, decimal or 0x-prefixed", text);
  return seed;
}

/* splitmix64: spreads consecutive seeds apart, and never gives the zero
 * that would stop the xorshift generator below. */
static uint64_t thread_rng(unsigned long long seed, unsigned thread) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (thread + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z != 0 ? z : 1;
}

static uint64_t next(worker_t *w) {
  w->rng ^= w->rng << 13;
  w->rng ^= w->rng >> 7;
  w->rng ^= w->rng << 17;
  return w->rng;
}

static void note_failure(worker_t *w, lms_status_t st, const char *what) {
  if (w->failures++ == 0) {
    w->first_failure = st;
    snprintf(w->failure, sizeof w->failure, "%s: %s: %s", what,
             lms_status_name(st), lms_ctx_last_error(w->ctx));
  }
}

static void add_live(int64_t d) {
  unsigned long long now = atomic_fetch_add(&live_bytes, (unsigned long long)d) + (unsigned long long)d;
  unsigned long long peak = atomic_load(&peak_live_bytes);
  while (now > peak && !atomic_compare_exchange_weak(&peak_live_bytes, &peak, now)) {
  }
}

static void *work(void *arg) {
  worker_t *w = arg;
  for (uint64_t op = 0; op < OPS_PER_THREAD; op++) {
    unsigned slot = (unsigned)(next(w) % SLOTS);
    lms_stream_t s = w->streams[next(w) % 2];
    lms_chunk_t *c = w->chunk[slot];
    unsigned kind = (unsigned)(next(w) % 10);
    lms_status_t st;
    w->ops++;
    if (c == NULL) {
      /* Allocate and write. */
      size_t n = 4096 + (size_t)(next(w) % (MAX_CHUNK - 4096));
      st = lms_alloc(w->ctx, n, &w->chunk[slot]);
      if (st != LMS_OK) {
        note_failure(w, st, "alloc");
        continue;
      }
      add_live((int64_t)n);
      w->sum[slot] = lms_test_write(w->ctx, w->chunk[slot], s, next(w), &st);
      if (st != LMS_OK) note_failure(w, st, "first write");
      w->writes++;
    } else if (kind == 0) {
      /* Verify, then free. */
      uint64_t got = lms_test_read(w->ctx, c, s, &st);
      if (st != LMS_OK) note_failure(w, st, "read before free");
      else if (got != w->sum[slot]) w->mismatches++;
      add_live(-(int64_t)lms_chunk_size(c));
      st = lms_free(w->ctx, c);
      if (st != LMS_OK) note_failure(w, st, "free");
      w->chunk[slot] = NULL;
    } else if (kind <= 4) {
      uint64_t got = lms_test_read(w->ctx, c, s, &st);
      if (st != LMS_OK) note_failure(w, st, "read");
      else if (got != w->sum[slot]) w->mismatches++;
      w->reads++;
    } else if (kind <= 6) {
      w->sum[slot] = lms_test_write(w->ctx, c, s, next(w), &st);
      if (st != LMS_OK) note_failure(w, st, "write");
      w->writes++;
    } else {
      /* Two chunks held at once: copy the head of one into the other, a
       * read-modify-write of the destination. */
      unsigned other = (unsigned)((slot + 1 + next(w) % (SLOTS - 1)) % SLOTS);
      lms_chunk_t *d = w->chunk[other];
      if (d == NULL) continue;
      void *ps = NULL, *pd = NULL;
      st = lms_acquire(w->ctx, c, s, LMS_ACCESS_READ, &ps);
      if (st != LMS_OK) {
        note_failure(w, st, "acquire source");
        continue;
      }
      st = lms_acquire(w->ctx, d, s, LMS_ACCESS_RW, &pd);
      if (st == LMS_OK) {
        if (lms_test_checksum(ps, lms_chunk_size(c)) != w->sum[slot] ||
            lms_test_checksum(pd, lms_chunk_size(d)) != w->sum[other])
          w->mismatches++;
        size_t n = lms_chunk_size(c) < lms_chunk_size(d) ? lms_chunk_size(c)
                                                         : lms_chunk_size(d);
        memcpy(pd, ps, n / 2);
        w->sum[other] = lms_test_checksum(pd, lms_chunk_size(d));
        lms_compute(w->ctx, s, 2000);
        if ((st = lms_release(w->ctx, d, s)) != LMS_OK) note_failure(w, st, "release dest");
      } else {
        note_failure(w, st, "acquire dest");
      }
      if ((st = lms_release(w->ctx, c, s)) != LMS_OK) note_failure(w, st, "release source");
      w->reads++;
      w->writes++;
    }
  }
  /* Final check of everything still held. */
  for (unsigned slot = 0; slot < SLOTS; slot++) {
    if (w->chunk[slot] == NULL) continue;
    lms_status_t st;
    uint64_t got = lms_test_read(w->ctx, w->chunk[slot], w->streams[0], &st);
    if (st != LMS_OK) note_failure(w, st, "final read");
    else if (got != w->sum[slot]) w->mismatches++;
    add_live(-(int64_t)lms_chunk_size(w->chunk[slot]));
    if (lms_free(w->ctx, w->chunk[slot]) != LMS_OK) note_failure(w, st, "final free");
  }
  return NULL;
}

static lms_ctx_t *stress_ctx(const char *schedule) {
  lms_options_t *o = NULL;
  lms_ctx_t *ctx = NULL;
  cr_assert(eq(int, lms_options_create(&o), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "device", "sim"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "gpu-limit", GPU_LIMIT), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "lms", "0"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "log", "none"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "schedule", schedule), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "prefetch-window", "8,30%"), LMS_OK));
  cr_assert(eq(int, lms_ctx_create(o, &ctx), LMS_OK));
  lms_options_destroy(o);
  return ctx;
}

/* Every assertion after the run says which seed to run again. */
#define SEED_MSG "schedule %s, LMS_STRESS_SEED=%llu", schedule, seed

static void stress(const char *schedule, int64_t min_prefetches) {
  unsigned long long seed = stress_seed();
  cr_log_info("schedule %s: LMS_STRESS_SEED=%llu", schedule, seed);
  atomic_store(&live_bytes, 0);
  atomic_store(&peak_live_bytes, 0);
  lms_ctx_t *ctx = stress_ctx(schedule);
  lms_stream_t streams[2];
  cr_assert(eq(int, lms_stream_create(ctx, &streams[0]), LMS_OK));
  cr_assert(eq(int, lms_stream_create(ctx, &streams[1]), LMS_OK));
  worker_t w[THREADS];
  pthread_t t[THREADS];
  memset(w, 0, sizeof w);
  for (unsigned i = 0; i < THREADS; i++) {
    w[i].ctx = ctx;
    w[i].streams = streams;
    w[i].id = i;
    w[i].rng = thread_rng(seed, i);
    cr_assert(eq(int, pthread_create(&t[i], NULL, work, &w[i]), 0));
  }
  uint64_t ops = 0, mismatches = 0, failures = 0, reads = 0;
  for (unsigned i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    ops += w[i].ops;
    reads += w[i].reads;
    mismatches += w[i].mismatches;
    failures += w[i].failures;
    cr_expect(eq(u64, w[i].failures, 0), "LMS_STRESS_SEED=%llu: thread %u: "
              "%s", seed, i, w[i].failure);
  }
  lms_stats_t st;
  lms_stats_get(ctx, &st);
  cr_log_info("schedule %s: ops %llu, reads %llu, peak live %llu bytes "
              "under a %s limit, swaps in %lld, written back %lld, dropped "
              "%lld, prefetches %lld (hits %lld)", schedule,
              (unsigned long long)ops, (unsigned long long)reads,
              (unsigned long long)atomic_load(&peak_live_bytes), GPU_LIMIT,
              (long long)st.swaps_in.total, (long long)st.swaps_out.total,
              (long long)st.drops.total, (long long)st.prefetches.total,
              (long long)st.prefetch_hits.total);
  cr_assert(ge(i64, st.prefetches.total, min_prefetches), SEED_MSG);
  cr_assert(eq(u64, ops, (uint64_t)THREADS * OPS_PER_THREAD), SEED_MSG);
  cr_assert(eq(u64, mismatches, 0), SEED_MSG);
  cr_assert(eq(u64, failures, 0), SEED_MSG);
  /* Several times the limit was live, and it moved. */
  cr_assert(ge(u64, atomic_load(&peak_live_bytes), 3ull * (6u << 20)),
            SEED_MSG);
  cr_assert(le(i64, st.device_reserved.peak, 6 << 20), SEED_MSG);
  cr_assert(gt(i64, st.swaps_out.total, 1000), SEED_MSG);
  cr_assert(gt(i64, st.drops.total, 1000), SEED_MSG);
  cr_assert(eq(i64, st.chunks.current, 0), SEED_MSG);
  lms_stream_destroy(ctx, streams[0]);
  lms_stream_destroy(ctx, streams[1]);
  cr_assert(eq(int, lms_ctx_destroy(ctx), LMS_OK));
}

Test(stress, four_threads_two_streams_no_byte_changes, .timeout = 600) {
  stress("learn", 0);
}

Test(stress, with_prefetch_no_byte_changes, .timeout = 600) {
  stress("stack", 1000);
}

#ifdef LMS_STRESS_STANDALONE
int main(void) {
  for (int i = 0; i < g_ntests; i++) {
    fprintf(stderr, "%s: running\n", g_tests[i].name);
    g_tests[i].fn();
  }
  fprintf(stderr, "%d tests, %s\n", g_ntests,
          g_failed ? "some checks failed" : "all passed");
  return g_failed ? 1 : 0;
}
#endif
