/* test_victim.c - Note [One victim rule] (core/victim.c): a table of
 * cases, each a request and candidates in the order a front end walks
 * them, with the victim the note says; and random candidate sets, where
 * a walk asking lms__victim_better takes the candidate a stable sort by
 * (tier, then the tier's order) puts first. */
#include <criterion/criterion.h>
#include "check.h"
#include <stdlib.h>
#include <string.h>

#include "core/victim.h"

#define NEVER LMS__VICTIM_NEVER

static int walk(const lms__victim_ask_t *q, const lms__victim_t *c, int n) {
  int best = -1;
  for (int i = 0; i < n; i++)
    if (lms__victim_better(q, &c[i], best >= 0 ? &c[best] : NULL)) best = i;
  return best;
}

typedef struct vcase {
  const char *what;
  lms__victim_ask_t q;
  int n;
  lms__victim_t c[5];
  int victim; /* index, -1 none */
} vcase_t;

#define LIVE(u) {.next_use = (u)}
#define DEAD(u) {.next_use = (u), .dead = 1}
#define SPARED(u) {.next_use = (u), .spared = 1}

static const vcase_t cases[] = {
    {"the dead go first, even before a use long passed",
     {.now = 10, .need = 20}, 3, {LIVE(1), DEAD(50), LIVE(99)}, 1},
    {"of the dead, the first seen", {.now = 10, .need = 20}, 3,
     {LIVE(99), DEAD(50), DEAD(5)}, 1},
    {"a passed use before any wanted later", {.now = 10, .need = 20}, 3,
     {LIVE(99), LIVE(9), LIVE(30)}, 1},
    {"of passed uses, the longest passed", {.now = 10, .need = 20}, 3,
     {LIVE(9), LIVE(3), LIVE(7)}, 1},
    {"Belady: the furthest next use", {.now = 0, .need = 5}, 3,
     {LIVE(30), LIVE(90), LIVE(60)}, 1},
    {"never used again counts as furthest", {.now = 0, .need = 5}, 3,
     {LIVE(30), LIVE(NEVER), LIVE(60)}, 1},
    {"ties go to the first seen", {.now = 0, .need = 5}, 3,
     {LIVE(40), LIVE(60), LIVE(60)}, 1},
    {"nothing wanted sooner than the request", {.now = 0, .need = 50}, 3,
     {LIVE(10), LIVE(50), LIVE(20)}, -1},
    {"wanted later than the request only", {.now = 0, .need = 50}, 3,
     {LIVE(70), LIVE(49), LIVE(51)}, 0},
    {"a demand fetch takes any", {.now = 0, .need = NEVER}, 2,
     {LIVE(1), LIVE(2)}, 1},
    {"spared last", {.now = 0, .need = 5}, 3,
     {SPARED(90), LIVE(10), SPARED(80)}, 1},
    {"spared when nothing else", {.now = 0, .need = 5}, 3,
     {SPARED(80), LIVE(3), SPARED(90)}, 2},
    {"passed only: nothing wanted leaves",
     {.now = 10, .need = 20, .passed_only = 1}, 3,
     {LIVE(99), LIVE(NEVER), LIVE(15)}, -1},
    {"passed only: the dead and the passed",
     {.now = 10, .need = 20, .passed_only = 1}, 4,
     {LIVE(99), LIVE(8), LIVE(2), LIVE(15)}, 2},
    {"no candidates", {.now = 0, .need = NEVER}, 0, {LIVE(0)}, -1},
};

Test(victim, the_table_of_cases) {
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const vcase_t *v = &cases[k];
    cr_assert(eq(int, walk(&v->q, v->c, v->n), v->victim), "%s", v->what);
  }
}

static uint64_t rng(uint64_t *s) {
  *s += 0x9e3779b97f4a7c15ull;
  uint64_t z = *s;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* The tier and the order inside it, written from the note as one number,
 * smaller first (uses here are below 100, or never). */
typedef struct keyed {
  uint64_t rank;
  int at;
} keyed_t;

static int by_rank(const void *a, const void *b) {
  const keyed_t *x = a, *y = b;
  int r = (x->rank > y->rank) - (x->rank < y->rank);
  return r != 0 ? r : x->at - y->at;
}

Test(victim, a_walk_takes_what_the_sort_puts_first) {
  uint64_t s = 0x71c7, found = 0, none = 0, tiers[4] = {0};
  for (int k = 0; k < 20000; k++) {
    int n = (int)(rng(&s) % 9);
    lms__victim_t c[8];
    lms__victim_ask_t q = {.now = rng(&s) % 40,
                           .need = rng(&s) % 8 == 0 ? NEVER : rng(&s) % 80,
                           .passed_only = rng(&s) % 5 == 0};
    keyed_t order[8];
    int m = 0;
    for (int i = 0; i < n; i++) {
      c[i] = (lms__victim_t){.next_use = rng(&s) % 10 == 0 ? NEVER
                                                           : rng(&s) % 100,
                             .dead = rng(&s) % 7 == 0,
                             .spared = rng(&s) % 4 == 0};
      int tier = c[i].dead                      ? 0
                 : c[i].next_use < q.now        ? 1
                 : q.passed_only                ? -1
                 : q.need != NEVER && c[i].next_use <= q.need ? -1
                 : c[i].spared                  ? 3
                                                : 2;
      cr_assert(eq(int, lms__victim_tier(&q, &c[i]), tier));
      if (tier < 0) continue;
      uint64_t use = c[i].next_use == NEVER ? 100 : c[i].next_use;
      uint64_t within = tier == 0 ? 0 : tier == 1 ? use : 100 - use;
      order[m++] = (keyed_t){(uint64_t)tier * 1000 + within, i};
    }
    qsort(order, (size_t)m, sizeof order[0], by_rank);
    int want = m > 0 ? order[0].at : -1;
    int got = walk(&q, c, n);
    cr_assert(eq(int, got, want), "case %d", k);
    if (got >= 0) {
      found++;
      tiers[lms__victim_tier(&q, &c[got])]++;
    } else {
      none++;
    }
  }
  /* Every tier won somewhere, and some requests found no victim. */
  for (int t = 0; t < 4; t++) cr_assert(gt(u64, tiers[t], 100), "tier %d", t);
  cr_assert(gt(u64, none, 100));
  cr_assert(gt(u64, found, 10000));
}
