/* test_fit.c - a memory runtime never refuses a request that fits.
 *
 * Random programs of host-homed chunks, with sizes a device cache finds
 * awkward (just above powers of two, 768x768 fp32 matrices, odd multiples
 * of 512, small ones beside large ones), run step after step under
 * budgets down to 1.05x their largest step.  Every acquire must succeed
 * while the budget minus the bytes the step has acquired so far holds the
 * request (Note [What the budget wastes] in src/alloc/devcache.c bounds
 * the difference), and every chunk's bytes must survive every swap. */
#include <criterion/criterion.h>
#include "check.h"
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

/* A size of one of the awkward kinds. */
static size_t awkward_size(uint64_t *rng, int small_too) {
  uint64_t r = lms_test_next(rng);
  int kind = (int)(r % (small_too ? 6 : 5));
  r = lms_test_next(rng);
  switch (kind) {
    case 0: /* just above a power of two, 1 MiB to 8 MiB */
      return (MIB << (r % 4)) + 1 + (size_t)(r >> 8) % 512;
    case 1: /* a 768x768 fp32 matrix, or one a little over */
      return 768 * 768 * 4 + (size_t)(r % 3) * 4096;
    case 2: /* 1.125, 1.5 or 3 MiB */
      return (size_t[]){MIB + MIB / 8, MIB + MIB / 2, 3 * MIB}[r % 3];
    case 3: /* any size from 1 MiB + 1 to 12 MiB */
      return MIB + 1 + (size_t)(r % (11 * MIB));
    case 4: /* an odd multiple of 512 */
      return (size_t)(2 * (r % 4096) + 1) * 512;
    default: /* small: 1 byte to 256 KiB */
      return 1 + (size_t)(r % (256 * KIB));
  }
}

typedef struct fit_case {
  uint64_t seed;
  int small_too;   /* small chunks among the large ones */
  double headroom; /* budget over the largest step */
} fit_case_t;

enum { NCHUNK = 24, NSTEP = 60, MAXREF = 5 };

static void run_case(const fit_case_t *fc) {
  uint64_t rng = fc->seed;
  size_t size[NCHUNK];
  for (int i = 0; i < NCHUNK; i++) size[i] = awkward_size(&rng, fc->small_too);
  /* The steps: up to MAXREF distinct chunks each. */
  int ref[NSTEP][MAXREF], nref[NSTEP];
  size_t largest = 0;
  for (int t = 0; t < NSTEP; t++) {
    nref[t] = 1 + (int)(lms_test_next(&rng) % MAXREF);
    size_t bytes = 0;
    for (int k = 0; k < nref[t]; k++) {
      int c;
      int dup;
      do {
        c = (int)(lms_test_next(&rng) % NCHUNK);
        dup = 0;
        for (int j = 0; j < k; j++) dup |= ref[t][j] == c;
      } while (dup);
      ref[t][k] = c;
      bytes += size[c];
    }
    if (bytes > largest) largest = bytes;
  }
  size_t budget = (size_t)((double)largest * fc->headroom);
  char limit[32];
  snprintf(limit, sizeof limit, "%zuB", budget);
  lms_ctx_t *ctx = lms_test_ctx(limit, "0", NULL);
  cr_assert(ctx != NULL);
  lms_stream_t s;
  cr_assert(eq(int, lms_stream_create(ctx, &s), LMS_OK));
  lms_chunk_t *c[NCHUNK];
  uint64_t sum[NCHUNK];
  int written[NCHUNK] = {0};
  for (int i = 0; i < NCHUNK; i++) {
    cr_assert(eq(int, lms_alloc(ctx, size[i], &c[i]), LMS_OK), "%s",
              lms_ctx_last_error(ctx));
    cr_assert(lms_chunk_host_homed(c[i]));
  }
  for (int round = 0; round < 2; round++)
    for (int t = 0; t < NSTEP; t++) {
      void *p[MAXREF];
      size_t acquired = 0;
      for (int k = 0; k < nref[t]; k++) {
        int i = ref[t][k];
        int write = !written[i] || (lms_test_next(&rng) & 1);
        lms_status_t st = lms_acquire(
            ctx, c[i], s, write ? LMS_ACCESS_WRITE : LMS_ACCESS_READ, &p[k]);
        /* It fits: the budget less what the step holds has room. */
        cr_assert(eq(int, st, LMS_OK),
                  "seed %llu round %d step %d: %zu bytes refused with %zu of "
                  "a %zu byte budget acquired: %s",
                  (unsigned long long)fc->seed, round, t, size[i], acquired,
                  budget, lms_ctx_last_error(ctx));
        acquired += size[i];
        if (written[i])
          cr_assert(eq(u64, lms_test_checksum(p[k], size[i]), sum[i]),
                    "seed %llu: chunk %d's bytes changed",
                    (unsigned long long)fc->seed, i);
        if (write) {
          lms_test_fill(p[k], size[i], lms_test_next(&rng));
          sum[i] = lms_test_checksum(p[k], size[i]);
          written[i] = 1;
        }
      }
      for (int k = 0; k < nref[t]; k++)
        cr_assert(eq(int, lms_release(ctx, c[ref[t][k]], s), LMS_OK));
    }
  lms_stats_t st;
  cr_assert(eq(int, lms_stats_get(ctx, &st), LMS_OK));
  cr_assert(le(i64, st.device_reserved.peak, (int64_t)budget));
  cr_assert(eq(i64, st.device_ooms.total, 0));
  /* Nothing was lost: a last read of every chunk. */
  for (int i = 0; i < NCHUNK; i++) {
    if (!written[i]) continue;
    lms_status_t rs;
    cr_assert(eq(u64, lms_test_read(ctx, c[i], s, &rs), sum[i]));
    cr_assert(eq(int, rs, LMS_OK));
  }
  for (int i = 0; i < NCHUNK; i++) cr_assert(eq(int, lms_free(ctx, c[i]), LMS_OK));
  lms_stream_destroy(ctx, s);
  cr_assert(eq(int, lms_ctx_destroy(ctx), LMS_OK));
}

ParameterizedTestParameters(fit, awkward_sizes_under_tight_budgets) {
  enum { N = 32 };
  static fit_case_t cases[N];
  static const double headroom[] = {1.05, 1.1, 1.5, 3.0};
  for (int i = 0; i < N; i++)
    cases[i] = (fit_case_t){.seed = 0x5eed0000u + (uint64_t)i,
                            .small_too = i % 2,
                            .headroom = headroom[i % 4]};
  return cr_make_param_array(fit_case_t, cases, N);
}

ParameterizedTest(fit_case_t *fc, fit, awkward_sizes_under_tight_budgets) {
  run_case(fc);
}

/* The shapes the device cache once refused at every budget: many equal
 * chunks just over a power of two, or of a 768x768 matrix, each step
 * holding one of them, under a budget that holds a tenth of them. */
typedef struct shape_case {
  size_t size;
  int count;
  double headroom; /* budget over the bytes of all the chunks */
} shape_case_t;

ParameterizedTestParameters(fit, equal_awkward_chunks) {
  static shape_case_t cases[] = {
      /* Large: under 512 bytes of waste each. */
      {768 * 768 * 4, 100, 1.01}, {MIB + 1, 100, 1.01},
      {2 * MIB + 1, 60, 1.01},    {4 * MIB + 1, 40, 1.01},
      {MIB + MIB / 8, 100, 1.01}, {MIB + MIB / 2, 100, 1.01},
      {3 * MIB, 60, 1.01},        {768 * KIB, 100, 1.01},
      {640 * KIB + 1, 100, 1.01}, {200 * KIB + 1, 200, 1.01},
      /* Small ones share segments: under 1/16 of them wasted. */
      {100 * KIB + 1, 300, 1.07}, {24 * KIB + 1, 1000, 1.07},
      {5000, 2000, 1.07},
  };
  return cr_make_param_array(shape_case_t, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(shape_case_t *sc, fit, equal_awkward_chunks) {
  /* All of them live at once where the budget holds them all: no chunk
   * may be evicted for want of room, and no request refused. */
  size_t total = sc->size * (size_t)sc->count;
  char limit[32];
  snprintf(limit, sizeof limit, "%zuB", (size_t)((double)total * sc->headroom));
  lms_ctx_t *ctx = lms_test_ctx(limit, "0", NULL);
  cr_assert(ctx != NULL);
  lms_stream_t s;
  cr_assert(eq(int, lms_stream_create(ctx, &s), LMS_OK));
  lms_chunk_t **c = calloc((size_t)sc->count, sizeof *c);
  void **p = calloc((size_t)sc->count, sizeof *p);
  cr_assert(c != NULL && p != NULL);
  for (int i = 0; i < sc->count; i++) {
    cr_assert(eq(int, lms_alloc(ctx, sc->size, &c[i]), LMS_OK));
    cr_assert(eq(int, lms_acquire(ctx, c[i], s, LMS_ACCESS_WRITE, &p[i]), LMS_OK),
              "%zu-byte chunk %d of %d refused under a %s budget: %s",
              sc->size, i, sc->count, limit, lms_ctx_last_error(ctx));
    memset(p[i], i & 0xff, sc->size);
  }
  for (int i = 0; i < sc->count; i++) {
    cr_assert(eq(int, ((unsigned char *)p[i])[sc->size - 1], i & 0xff));
    cr_assert(eq(int, lms_release(ctx, c[i], s), LMS_OK));
  }
  lms_stats_t st;
  cr_assert(eq(int, lms_stats_get(ctx, &st), LMS_OK));
  cr_assert(eq(i64, st.swaps_out.total, 0));
  for (int i = 0; i < sc->count; i++) cr_assert(eq(int, lms_free(ctx, c[i]), LMS_OK));
  free(c);
  free(p);
  lms_stream_destroy(ctx, s);
  cr_assert(eq(int, lms_ctx_destroy(ctx), LMS_OK));
}
