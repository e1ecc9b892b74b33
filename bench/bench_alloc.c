/* bench_alloc.c - the cost of the allocation fast path and of acquiring a
 * chunk that is already resident, on the simulated device with nothing to
 * swap (limit far above the working set).  Prints the median and 99th
 * percentile of each operation in nanoseconds of host time.
 *
 *   build/bin/lms_bench_alloc [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lms/lms.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void report(const char *what, uint64_t *t, size_t n) {
  qsort(t, n, sizeof *t, cmp_u64);
  printf("  %-40s median %6llu ns   p99 %7llu ns   (%zu samples)\n", what,
         (unsigned long long)t[n / 2], (unsigned long long)t[n * 99 / 100], n);
}

static lms_ctx_t *make_ctx(const char *lms_kb) {
  lms_options_t *o = NULL;
  lms_ctx_t *ctx = NULL;
  if (lms_options_create(&o) != LMS_OK ||
      lms_options_set(o, "device", "sim") != LMS_OK ||
      lms_options_set(o, "gpu-limit", "4GiB") != LMS_OK ||
      lms_options_set(o, "lms", lms_kb) != LMS_OK ||
      lms_ctx_create(o, &ctx) != LMS_OK) {
    fprintf(stderr, "lms_bench_alloc: setup failed: %s\n",
            o ? lms_options_error(o) : "no memory");
    exit(1);
  }
  lms_options_destroy(o);
  return ctx;
}

int main(int argc, char **argv) {
  size_t rounds = 20000;
  if (argc > 1) {
    char *end = NULL;
    rounds = strtoul(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0' || argv[1][0] == '-') rounds = 0;
  }
  if (rounds < 100 || rounds > 10000000) {
    fprintf(stderr, "lms_bench_alloc: ROUNDS must be 100..10000000\n");
    return 2;
  }
  static const size_t sizes[] = {4096, 65536, 1 << 20};
  uint64_t *t = malloc(rounds * sizeof *t);
  if (t == NULL) return 1;
  printf("lms_bench_alloc: host time per call, simulated device, nothing "
         "to swap\n");
  for (int host = 0; host < 2; host++) {
    lms_ctx_t *ctx = make_ctx(host ? "0" : "-1");
    lms_stream_t s;
    lms_stream_create(ctx, &s);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
      char what[96];
      /* Warm the caches, then time alloc+free pairs. */
      for (size_t i = 0; i < 1000; i++) {
        lms_chunk_t *c;
        lms_alloc(ctx, sizes[k], &c);
        lms_free(ctx, c);
      }
      for (size_t i = 0; i < rounds; i++) {
        lms_chunk_t *c;
        uint64_t t0 = now_ns();
        lms_alloc(ctx, sizes[k], &c);
        lms_free(ctx, c);
        t[i] = now_ns() - t0;
      }
      snprintf(what, sizeof what, "alloc+free %7zu B, %s-homed", sizes[k],
               host ? "host" : "device");
      report(what, t, rounds);
      lms_chunk_t *c;
      void *p;
      lms_alloc(ctx, sizes[k], &c);
      lms_acquire(ctx, c, s, LMS_ACCESS_READ, &p);
      lms_release(ctx, c, s);
      for (size_t i = 0; i < rounds; i++) {
        uint64_t t0 = now_ns();
        lms_acquire(ctx, c, s, LMS_ACCESS_RW, &p);
        lms_release(ctx, c, s);
        t[i] = now_ns() - t0;
      }
      snprintf(what, sizeof what, "acquire+release resident %7zu B, %s", sizes[k],
               host ? "host" : "dev");
      report(what, t, rounds);
      lms_free(ctx, c);
    }
    lms_stream_destroy(ctx, s);
    lms_ctx_destroy(ctx);
  }
  free(t);
  return 0;
}
