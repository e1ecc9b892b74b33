/* support.c - see support.h. */
#include "support.h"

#include "lms_kernels.h"

#include <string.h>

uint64_t lms_test_checksum(const void *p, size_t n) {
  return lms_checksum_host(p, n);
}

uint64_t lms_test_next(uint64_t *state) {
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *state = x;
}

void lms_test_fill(void *p, size_t n, uint64_t seed) {
  unsigned char *b = p;
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  size_t i = 0;
  while (i < n) {
    lms_test_next(&x);
    size_t k = n - i < 8 ? n - i : 8;
    memcpy(b + i, &x, k);
    i += k;
  }
}

#include <stdio.h>
#include <stdlib.h>

lms_ctx_t *lms_test_ctx(const char *gpu_limit, const char *lms_kb,
                        const char *host_limit) {
  lms_options_t *o = NULL;
  lms_ctx_t *ctx = NULL;
  if (lms_options_create(&o) != LMS_OK) return NULL;
  if (lms_options_set(o, "device", "sim") != LMS_OK ||
      (gpu_limit && lms_options_set(o, "gpu-limit", gpu_limit) != LMS_OK) ||
      (lms_kb && lms_options_set(o, "lms", lms_kb) != LMS_OK) ||
      (host_limit && lms_options_set(o, "host-limit", host_limit) != LMS_OK) ||
      lms_options_set(o, "log", "none") != LMS_OK) {
    fprintf(stderr, "test options: %s\n", lms_options_error(o));
    lms_options_destroy(o);
    return NULL;
  }
  if (lms_ctx_create(o, &ctx) != LMS_OK) ctx = NULL;
  lms_options_destroy(o);
  return ctx;
}

lms_status_t lms_test_open(const char *gpu_limit, lms_ctx_t **ctx,
                           lms_stream_t *s) {
  *ctx = lms_test_ctx(gpu_limit, "0", NULL);
  if (*ctx == NULL) return LMS_ERR_INVALID;
  lms_status_t st = lms_stream_create(*ctx, s);
  if (st != LMS_OK) {
    lms_ctx_destroy(*ctx);
    *ctx = NULL;
  }
  return st;
}

lms_status_t lms_test_close(lms_ctx_t *ctx, lms_stream_t s) {
  lms_stream_destroy(ctx, s);
  return lms_ctx_destroy(ctx);
}

lms_stats_t lms_test_stats(lms_ctx_t *ctx) {
  lms_stats_t st;
  if (lms_stats_get(ctx, &st) != LMS_OK) {
    fprintf(stderr, "test: lms_stats_get refused a live context\n");
    abort();
  }
  return st;
}

uint64_t lms_test_write(lms_ctx_t *ctx, lms_chunk_t *c, lms_stream_t s,
                        uint64_t seed, lms_status_t *st) {
  void *p = NULL;
  *st = lms_acquire(ctx, c, s, LMS_ACCESS_WRITE, &p);
  if (*st != LMS_OK) return 0;
  size_t n = lms_chunk_size(c);
  lms_test_fill(p, n, seed);
  uint64_t sum = lms_test_checksum(p, n);
  *st = lms_release(ctx, c, s);
  return sum;
}

uint64_t lms_test_read(lms_ctx_t *ctx, lms_chunk_t *c, lms_stream_t s,
                       lms_status_t *st) {
  void *p = NULL;
  *st = lms_acquire(ctx, c, s, LMS_ACCESS_READ, &p);
  if (*st != LMS_OK) return 0;
  uint64_t sum = lms_test_checksum(p, lms_chunk_size(c));
  *st = lms_release(ctx, c, s);
  return sum;
}
