/* test_placement.c - caffe-ibm's placement rule: a chunk is host-homed iff
 * LMS is on (lms_kb >= 0), the chunk is at least lms_kb * 1024 bytes, and
 * the device demand counting it (in_use + size) is strictly greater than
 * frac * capacity.  Each case sits on one edge of one of the three
 * conditions, with its neighbour on the other side of the edge, so that an
 * off-by-one (>= for >, > for >=, KB as 1000 bytes, truncation of the
 * product) turns at least one case around. */
#include <criterion/criterion.h>
#include "check.h"
#include <criterion/parameterized.h>
#include <stdint.h>

#include "alloc/alloc.h"

#define KIB ((uint64_t)1 << 10)
#define MIB ((uint64_t)1 << 20)
#define GIB ((uint64_t)1 << 30)

struct place_case {
  char what[96];
  int64_t lms_kb;
  double frac;
  uint64_t capacity;
  uint64_t size;
  uint64_t in_use;
  int host;
};

/* Checks one case, naming all it gives the rule when the rule disagrees. */
static void assert_case(const struct place_case *c) {
  lms__placement_t p = {
      .lms_kb = c->lms_kb, .frac = c->frac, .capacity = c->capacity};
  cr_assert(eq(int, lms__place_on_host(&p, c->size, c->in_use), c->host),
            "%s: lms_kb %lld, frac %.17g, capacity %llu, size %llu, in_use "
            "%llu (demand %llu)",
            c->what, (long long)c->lms_kb, c->frac,
            (unsigned long long)c->capacity, (unsigned long long)c->size,
            (unsigned long long)c->in_use,
            (unsigned long long)(c->size + c->in_use));
}

/* 0.4 of 16 GiB is 6871947673.6 bytes: a demand of 6871947673 is under
 * it and 6871947674 over.  caffe-ibm's documentation uses -lms_frac 0.4. */
#define FRAC04_LIMIT ((uint64_t)6871947673)

ParameterizedTestParameters(placement, rule_edges) {
  static struct place_case cases[] = {
      /* The size threshold: at least lms_kb KiB, counted in 1024s. */
      {"size exactly at the threshold", 1024, 0.0, 16 * GIB, MIB, 0, 1},
      {"size one byte under the threshold", 1024, 0.0, 16 * GIB, MIB - 1, 0,
       0},
      {"threshold is KiB, not 1000 bytes", 1, 0.0, 16 * GIB, 1000, 0, 0},
      {"size one KiB exactly", 1, 0.0, 16 * GIB, 1024, 0, 1},
      {"size under the threshold even on a full device", 1024, 0.0, 16 * GIB,
       MIB - 1, 16 * GIB, 0},

      /* The demand edge: strictly greater than frac * capacity. */
      {"demand exactly half of capacity", 0, 0.5, 16 * GIB, 4096,
       8 * GIB - 4096, 0},
      {"demand one byte over half of capacity", 0, 0.5, 16 * GIB, 4097,
       8 * GIB - 4096, 1},
      {"in_use one byte more makes the demand over", 0, 0.5, 16 * GIB, 4096,
       8 * GIB - 4095, 1},
      {"demand exactly a quarter", 0, 0.25, 1000, 50, 200, 0},
      {"demand one byte over a quarter", 0, 0.25, 1000, 51, 200, 1},
      {"demand exactly three quarters", 0, 0.75, 4 * GIB, GIB, 2 * GIB, 0},
      {"demand one byte over three quarters", 0, 0.75, 4 * GIB, GIB + 1,
       2 * GIB, 1},
      {"size alone past the fraction", 0, 0.5, 16 * GIB, 8 * GIB + 1, 0, 1},
      {"in_use alone past the fraction still needs size", 1024, 0.5,
       16 * GIB, MIB - 1, 16 * GIB, 0},

      /* LMS off: a negative threshold never offloads. */
      {"lms_kb -1, huge chunk, full device", -1, 0.0, 16 * GIB, 8 * GIB,
       16 * GIB, 0},
      {"lms_kb -1, one byte", -1, 0.0, 16 * GIB, 1, 0, 0},
      {"lms_kb -1024 is off as well", -1024, 0.0, 16 * GIB, 64 * MIB,
       16 * GIB, 0},

      /* lms_kb 0 and frac 0: every chunk of at least one byte. */
      {"lms_kb 0, frac 0, one byte on an empty device", 0, 0.0, 16 * GIB, 1, 0,
       1},
      {"lms_kb 0, frac 0, one byte on a tiny device", 0, 0.0, 1, 1, 0, 1},
      {"lms_kb 0, frac 0, large chunk", 0, 0.0, 16 * GIB, GIB, 5 * GIB, 1},

      /* frac 1.0: only demand beyond the whole capacity. */
      {"frac 1, demand equal to capacity", 0, 1.0, 16 * GIB, 4 * GIB,
       12 * GIB, 0},
      {"frac 1, demand one byte over capacity", 0, 1.0, 16 * GIB,
       4 * GIB + 1, 12 * GIB, 1},
      {"frac 1, chunk the size of the device", 0, 1.0, 16 * GIB, 16 * GIB, 0,
       0},
      {"frac 1, one byte on a full device", 0, 1.0, 16 * GIB, 1, 16 * GIB, 1},

      /* A huge threshold: 10^10 KiB is about 9.3 TiB. */
      {"huge lms_kb, 16 GiB chunk", 10000000000, 0.0, 16 * GIB, 16 * GIB,
       16 * GIB, 0},
      {"huge lms_kb, 1 TiB chunk", 10000000000, 0.0, 16 * GIB, 1024 * GIB, 0,
       0},
      {"huge lms_kb, one byte under its threshold", 10000000000, 0.0,
       16 * GIB, 10240000000000 - 1, 0, 0},
      {"huge lms_kb, exactly its threshold", 10000000000, 0.0, 16 * GIB,
       10240000000000, 0, 1},

      /* caffe-ibm's example: -lms 1000 -lms_frac 0.4 on 16 GiB. */
      {"frac 0.4, demand just under 0.4 of 16 GiB", 1000, 0.4, 16 * GIB,
       1000 * KIB, FRAC04_LIMIT - 1000 * KIB, 0},
      {"frac 0.4, demand just over 0.4 of 16 GiB", 1000, 0.4, 16 * GIB,
       1000 * KIB, FRAC04_LIMIT - 1000 * KIB + 1, 1},
      {"frac 0.4, chunk under 1000 KiB on a full device", 1000, 0.4, 16 * GIB,
       1000 * KIB - 1, 16 * GIB, 0},
      {"frac 0.4, big chunk on an empty device", 1000, 0.4, 16 * GIB,
       256 * MIB, 0, 0},
      {"frac 0.4, big chunk past 0.4 on its own", 1000, 0.4, 16 * GIB,
       FRAC04_LIMIT + 1, 0, 1},
  };
  return cr_make_param_array(struct place_case, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct place_case *c, placement, rule_edges) {
  assert_case(c);
}

/* The fraction is written in decimal (-lms_frac 0.57) and means that
 * decimal: with a 100 MiB budget, 57 percent is exactly 59768832 bytes, and
 * a demand of exactly that is not past it.  The nearest double to 0.57 is
 * a little less than 0.57, so a product taken in doubles lands just under
 * the edge and would offload a chunk whose demand is exactly at it. */
ParameterizedTestParameters(placement, decimal_fraction_edges) {
  static struct place_case cases[] = {
      {"0.57 of 100 MiB, demand exactly at it", 0, 0.57, 100 * MIB, MIB,
       59768832 - MIB, 0},
      {"0.57 of 100 MiB, one byte over", 0, 0.57, 100 * MIB, MIB + 1,
       59768832 - MIB, 1},
      {"0.29 of 100 MiB, demand exactly at it", 0, 0.29, 100 * MIB, MIB,
       30408704 - MIB, 0},
      {"0.29 of 100 MiB, one byte over", 0, 0.29, 100 * MIB, MIB + 1,
       30408704 - MIB, 1},
      {"0.41 of 10^10 bytes, demand exactly at it", 0, 0.41, 10000000000,
       MIB, 4100000000 - MIB, 0},
      {"0.41 of 10^10 bytes, one byte over", 0, 0.41, 10000000000, MIB + 1,
       4100000000 - MIB, 1},
      {"0.4 of 10^10 bytes, demand exactly at it", 0, 0.4, 10000000000, MIB,
       4000000000 - MIB, 0},
      {"0.4 of 10^10 bytes, one byte over", 0, 0.4, 10000000000, MIB + 1,
       4000000000 - MIB, 1},
  };
  return cr_make_param_array(struct place_case, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct place_case *c, placement, decimal_fraction_edges) {
  assert_case(c);
}

/* The rule is monotone: growing either the chunk (past the threshold) or
 * the device's use never moves a host-homed chunk back to the device, and
 * for a fixed chunk the switch happens exactly once, at frac * capacity. */
Test(placement, switches_once_at_the_fraction) {
  lms__placement_t p = {.lms_kb = 4, .frac = 0.5, .capacity = 1 << 20};
  const uint64_t size = 4096;
  uint64_t first_host = UINT64_MAX;
  for (uint64_t in_use = 0; in_use <= (1u << 20); in_use += 1) {
    int host = lms__place_on_host(&p, size, in_use);
    if (host && first_host == UINT64_MAX) first_host = in_use;
    if (first_host != UINT64_MAX)
      cr_assert(eq(int, host, 1), "back to the device at in_use %llu",
                (unsigned long long)in_use);
  }
  cr_assert(eq(u64, first_host, (1u << 19) - size + 1));
}
