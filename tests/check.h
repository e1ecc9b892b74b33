/* check.h - Criterion's assertions, with gt() mended.
 *
 * Criterion 2.4.1, the version Debian ships, expands gt(TYPE, a, b) in C
 * to !(a < b), which is a >= b (Snaipe/Criterion#473, fixed upstream
 * after that release): cr_assert(gt(u64, n, 0)) held for n == 0, so every
 * "at least one happened" check passed whatever happened.  Here gt is
 * b < a, right under either version.  Every test includes this header in
 * place of <criterion/new/assert.h>; test_check.c shows the mend holds. */
#ifndef LMS_TESTS_CHECK_H
#define LMS_TESTS_CHECK_H

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#ifndef __cplusplus
#undef CRI_BINOP_T_GT
#define CRI_BINOP_T_GT(Tag, Actual, Ref) (CRI_BINOP_LT_TAG(Tag, , Ref, Actual))
#endif

#endif
