/* support.h - helpers shared by the Criterion suites. */
#ifndef LMS_TESTS_SUPPORT_H
#define LMS_TESTS_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a 64 over n bytes: the checksum the suites compare chunks with. */
uint64_t lms_test_checksum(const void *p, size_t n);
/* Fills n bytes with a pattern derived from seed (xorshift). */
void lms_test_fill(void *p, size_t n, uint64_t seed);

#endif
