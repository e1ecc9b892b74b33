/* test_check.c - the assertions the suites rely on compare as they say
 * (check.h): gt is strictly greater, ge and le include equality, for the
 * types the suites use. */
#include <stdint.h>

#include "check.h"

Test(check, gt_is_strict) {
  uint64_t zero = 0, one = 1;
  int64_t minus = -1;
  double half = 0.5;
  cr_assert(not(gt(u64, zero, 0)));
  cr_assert(not(gt(u64, one, 1)));
  cr_assert(gt(u64, one, 0));
  cr_assert(not(gt(i64, minus, 0)));
  cr_assert(not(gt(int, 0, 0)));
  cr_assert(gt(int, 1, 0));
  cr_assert(not(gt(dbl, half, 0.5)));
  cr_assert(gt(dbl, half, 0.25));
  cr_assert(not(gt(sz, (size_t)3, 3)));
}

Test(check, ge_and_le_include_equality) {
  uint64_t two = 2;
  cr_assert(ge(u64, two, 2));
  cr_assert(not(ge(u64, two, 3)));
  cr_assert(le(u64, two, 2));
  cr_assert(not(le(u64, two, 1)));
  cr_assert(lt(u64, two, 3));
  cr_assert(not(lt(u64, two, 2)));
}
