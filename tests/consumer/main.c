/* A program that uses lms as a user would, built against an installed
 * prefix (tests/install_consume.sh): four 1 MiB chunks under a 2 MiB
 * budget on the simulated device, each written, swapped out by the others
 * and read back. */
#include <stdio.h>
#include <string.h>

#include <lms/lms.h>

#define CHECK(call)                                                          \
  do {                                                                       \
    lms_status_t st_ = (call);                                               \
    if (st_ != LMS_OK) {                                                     \
      fprintf(stderr, "%s: %s\n", #call, lms_status_name(st_));              \
      return 1;                                                              \
    }                                                                        \
  } while (0)

int main(void) {
  if (lms_version() != LMS_VERSION) {
    fprintf(stderr, "built against lms %d, running %d\n", LMS_VERSION,
            lms_version());
    return 1;
  }
  lms_options_t *o;
  lms_ctx_t *ctx;
  lms_stream_t s;
  lms_chunk_t *c[4];
  CHECK(lms_options_create(&o));
  CHECK(lms_options_set(o, "device", "sim"));
  CHECK(lms_options_set(o, "gpu-limit", "2MiB"));
  CHECK(lms_options_set(o, "lms", "0"));
  CHECK(lms_ctx_create(o, &ctx));
  lms_options_destroy(o);
  CHECK(lms_stream_create(ctx, &s));
  const size_t n = 1u << 20;
  for (int i = 0; i < 4; i++) {
    void *d;
    CHECK(lms_alloc(ctx, n, &c[i]));
    CHECK(lms_acquire(ctx, c[i], s, LMS_ACCESS_WRITE, &d));
    memset(d, 'a' + i, n);
    CHECK(lms_release(ctx, c[i], s));
  }
  for (int i = 0; i < 4; i++) {
    void *d;
    CHECK(lms_acquire(ctx, c[i], s, LMS_ACCESS_READ, &d));
    CHECK(lms_stream_sync(ctx, s));
    const unsigned char *b = d;
    for (size_t k = 0; k < n; k++)
      if (b[k] != (unsigned char)('a' + i)) {
        fprintf(stderr, "chunk %d byte %zu is %d\n", i, k, b[k]);
        return 1;
      }
    CHECK(lms_release(ctx, c[i], s));
  }
  CHECK(lms_ctx_destroy(ctx));
  printf("consumer ok: lms %d.%d.%d on %s\n", LMS_VERSION_MAJOR,
         LMS_VERSION_MINOR, LMS_VERSION_PATCH, "sim");
  return 0;
}
