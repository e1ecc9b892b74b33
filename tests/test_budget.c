/* test_budget.c - core/budget.h, the one test of --gpu-limit: exact at
 * the edge, no limit at 0, the share taken off the top, and no sum that
 * wraps (a request of nearly 2^64 bytes beside a few held does not fit). */
#include <criterion/criterion.h>
#include "check.h"

#include "core/budget.h"

Test(budget, fits_exactly_to_the_limit_less_the_share) {
  const uint64_t G = 1ull << 30, MAX = UINT64_MAX;
  static const struct {
    uint64_t held, size, limit, share;
    int fits;
  } cases[] = {
      {0, G, G, 0, 1},          {0, G + 1, G, 0, 0},
      {G / 2, G / 2, G, 0, 1},  {G / 2, G / 2 + 1, G, 0, 0},
      {0, 0, G, 0, 1},          {G, 0, G, 0, 1},
      {G + 1, 0, G, 0, 0},      {0, MAX, 0, 0, 1},
      {MAX, MAX, 0, 0, 1},      {0, G / 4 * 3, G, G / 4, 1},
      {1, G / 4 * 3, G, G / 4, 0}, {0, 0, G, G, 0},
      {0, 1, G, 2 * G, 0},      {16, MAX - 8, MAX, 0, 0},
      {8, MAX - 8, MAX, 0, 1},  {MAX, 1, MAX, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    cr_assert(eq(int, lms__budget_fits(cases[i].held, cases[i].size,
                                       cases[i].limit, cases[i].share),
                 cases[i].fits),
              "case %zu", i);
}
