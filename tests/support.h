/* support.h - helpers shared by the Criterion suites. */
#ifndef LMS_TESTS_SUPPORT_H
#define LMS_TESTS_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

/* The checksum the suites compare chunks with: the host reference of the
 * GPU checksum kernel (kernels/lms_kernels.h). */
uint64_t lms_test_checksum(const void *p, size_t n);
/* The next number of a xorshift64 sequence; *state must not be 0. */
uint64_t lms_test_next(uint64_t *state);
/* Fills n bytes with a pattern derived from seed (xorshift). */
void lms_test_fill(void *p, size_t n, uint64_t seed);



#include "lms/lms.h"

/* A context on the simulated device.  Each argument is an option value in
 * its text form, or NULL to leave the option at its default. */
lms_ctx_t *lms_test_ctx(const char *gpu_limit, const char *lms_kb,
                        const char *host_limit);
/* The fixture of the handle-mode suites (test_swap.c, test_framework.c):
 * a context on the simulated device with gpu_limit of memory and every
 * chunk placed on it (lms 0), and one stream.  On failure nothing is left
 * open. */
lms_status_t lms_test_open(const char *gpu_limit, lms_ctx_t **ctx,
                           lms_stream_t *s);
/* Destroys the stream and the context that lms_test_open made. */
lms_status_t lms_test_close(lms_ctx_t *ctx, lms_stream_t s);
/* The stats of a live context.  They cannot be refused one; should they
 * be, the test aborts, which Criterion reports as a crash. */
lms_stats_t lms_test_stats(lms_ctx_t *ctx);
/* Acquires c for writing on s, fills it from seed, releases it; returns
 * the checksum of what was written, or 0 with *st set on failure. */
uint64_t lms_test_write(lms_ctx_t *ctx, lms_chunk_t *c, lms_stream_t s,
                        uint64_t seed, lms_status_t *st);
/* Acquires c for reading on s and returns the checksum of its bytes. */
uint64_t lms_test_read(lms_ctx_t *ctx, lms_chunk_t *c, lms_stream_t s,
                       lms_status_t *st);
#endif
