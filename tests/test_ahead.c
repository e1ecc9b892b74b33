/* test_ahead.c - Note [A planned period] (graph/ahead.c): on random
 * periods, every plan holds what the note says, checked from its output
 * alone: each copy in serves a use that reads, follows its chunk's
 * departure and starts inside the gap, or at its use where the step
 * before has no room for it beside its own chunks; the room the plan
 * implies (each
 * step's chunks, the gaps kept, each copy in from its start to its use)
 * is within the capacity at every step but the one before the use of a
 * copy in that had no room even there; the bytes add up; a period that fits
 * moves nothing.  And the range tree's new query against a scan. */
#include <criterion/criterion.h>
#include "check.h"
#include <stdlib.h>
#include <string.h>

#include "core/rangetree.h"
#include "graph/ahead.h"
#include "lms/lms.h"

static uint64_t rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static uint64_t rnd_in(uint64_t *s, uint64_t lo, uint64_t hi) {
  return lo + rng(s) % (hi - lo + 1);
}

Test(rangetree, last_above_matches_a_scan) {
  enum { N = 97 };
  int64_t v[N] = {0}, maxw[4 * N], addw[4 * N];
  lms__rt_t t = {.max = maxw, .add = addw, .n = N};
  lms__rt_build(&t, v);
  uint64_t s = 0x5eed1234ull;
  for (int op = 0; op < 20000; op++) {
    size_t a = rnd_in(&s, 0, N - 1), b = rnd_in(&s, a + 1, N);
    if (rng(&s) % 2) {
      int64_t d = (int64_t)rnd_in(&s, 0, 200) - 100;
      lms__rt_add(&t, a, b, d);
      for (size_t i = a; i < b; i++) v[i] += d;
      continue;
    }
    int64_t x = (int64_t)rnd_in(&s, 0, 400) - 200;
    size_t want = SIZE_MAX;
    for (size_t i = a; i < b; i++)
      if (v[i] > x) want = i;
    cr_assert(eq(sz, lms__rt_last_above(&t, a, b, x), want),
              "op %d: [%zu, %zu) over %lld", op, a, b, (long long)x);
  }
}

/* A random period: keys of random sizes, some allocated once (their
 * first use in a period may read), the rest afresh (first use
 * overwrites), each step naming a few distinct keys. */
typedef struct period {
  uint32_t p, nk, nr;
  uint32_t step[600], key[600];
  unsigned acc[600];
  uint64_t size[40];
  uint8_t lives[40];
} period_t;

static void random_period(uint64_t seed, period_t *w) {
  uint64_t s = seed;
  memset(w, 0, sizeof *w);
  w->p = (uint32_t)rnd_in(&s, 1, 60);
  w->nk = (uint32_t)rnd_in(&s, 1, 40);
  for (uint32_t k = 0; k < w->nk; k++) {
    w->size[k] = rnd_in(&s, 1, 1000);
    w->lives[k] = rng(&s) % 2;
  }
  int seen[40] = {0};
  for (uint32_t t = 0; t < w->p; t++) {
    uint32_t n = (uint32_t)rnd_in(&s, 1, 6);
    int used[40] = {0};
    for (uint32_t i = 0; i < n && w->nr < 600; i++) {
      uint32_t k = (uint32_t)rnd_in(&s, 0, w->nk - 1);
      if (used[k]) continue;
      used[k] = 1;
      unsigned a = rng(&s) % 3 == 0   ? LMS_ACCESS_RW
                   : rng(&s) % 4 == 0 ? LMS_ACCESS_WRITE | LMS_ACCESS_OVERWRITE
                                      : LMS_ACCESS_READ;
      if (!w->lives[k] && !seen[k])
        a = LMS_ACCESS_WRITE | LMS_ACCESS_OVERWRITE;
      seen[k] = 1;
      w->step[w->nr] = t;
      w->key[w->nr] = k;
      w->acc[w->nr] = a;
      w->nr++;
    }
  }
}

/* The reference before r of the same key, on the cycle for a key that
 * lives on; UINT32_MAX when none. */
static uint32_t prev_use(const period_t *w, uint32_t r) {
  for (uint32_t i = r; i-- > 0;)
    if (w->key[i] == w->key[r]) return i;
  if (!w->lives[w->key[r]]) return UINT32_MAX;
  for (uint32_t i = w->nr; i-- > r + 1;)
    if (w->key[i] == w->key[r]) return i;
  return r; /* the key's only use: the gap is the whole cycle */
}

static uint64_t step_bytes(const period_t *w, uint32_t t) {
  uint64_t b = 0;
  for (uint32_t i = 0; i < w->nr; i++)
    if (w->step[i] == t) b += w->size[w->key[i]];
  return b;
}

/* A capacity from the largest step's bytes to every key's (or the largest
 * step's, if more). */
static uint64_t random_capacity(const period_t *w, uint64_t *s) {
  uint64_t largest = 0, all = 0;
  for (uint32_t t = 0; t < w->p; t++) {
    uint64_t b = step_bytes(w, t);
    if (b > largest) largest = b;
  }
  for (uint32_t k = 0; k < w->nk; k++) all += w->size[k];
  return rnd_in(s, largest, all > largest ? all : largest);
}

static lms__ahead_in_t input(const period_t *w, uint64_t capacity,
                             uint32_t reach) {
  return (lms__ahead_in_t){.period = w->p, .nrefs = w->nr, .nkeys = w->nk,
                           .ref_step = w->step, .ref_key = w->key,
                           .ref_access = w->acc, .key_size = w->size,
                           .key_lives = w->lives, .capacity = capacity,
                           .reach = reach};
}

/* Case by case the plan or the spread plan (Note [Spread out]), each
 * with copies in by their use or not (Note [Copies in by their use]),
 * the plan deciding by end or by density (Note [Whole chunks kept]). */
static void variant(lms__ahead_in_t *in, uint64_t *s) {
  in->spread = (int)rnd_in(s, 0, 1);
  in->in_order = (int)rnd_in(s, 0, 1);
  in->dense = (int)rnd_in(s, 0, 2);
  /* Note [Where the cycle is cut]: any step, or the one of several that
   * keeps the most. */
  in->cut = (uint32_t)rnd_in(s, 0, in->period - 1);
  in->cuts = (uint32_t)rnd_in(s, 0, 1) ? (uint32_t)rnd_in(s, 2, 64) : 1;
  /* Note [Room a write-back holds]: one case in three, steps of 1 ns to
   * 10 us and a link out that writes a chunk back in 0 to about 20 of
   * them. */
  /* Note [A plan searched by its time]: one case in four, decisions
   * forced at random. */
  static uint8_t force[600];
  in->force = NULL;
  if (rnd_in(s, 0, 3) == 0) {
    for (uint32_t r = 0; r < in->nrefs && r < 600; r++)
      force[r] = (uint8_t)rnd_in(s, 0, 2);
    in->force = force;
  }
  static uint64_t ns[600];
  in->step_ns = NULL;
  in->out_bps = 0.0;
  if (rnd_in(s, 0, 2) == 0) {
    for (uint32_t t = 0; t < in->period && t < 600; t++)
      ns[t] = rnd_in(s, 1, 10000);
    in->step_ns = ns;
    in->out_bps = (double)rnd_in(s, 1, 1000) * 1e6;
  }
}

Test(ahead, plans_keep_within_the_room_and_the_gaps) {
  uint64_t plans = 0, fetches = 0, kept = 0, late = 0, at_use = 0;
  for (uint64_t seed = 1; seed <= 3000; seed++) {
    period_t w;
    random_period(seed * 0x9e3779b97f4a7c15ull, &w);
    uint64_t s = seed, cap = random_capacity(&w, &s);
    uint32_t reach = (uint32_t)rnd_in(&s, 1, 70);
    lms__ahead_in_t in = input(&w, cap, reach);
    variant(&in, &s);
    lms__ahead_t a;
    cr_assert(eq(int, lms__ahead_build(&in, &a), LMS_OK));
    plans++;
    /* The gaps: from each reference to its key's next (a gap with a step
     * inside it is kept or marked at its first use). */
    uint64_t occ[60] = {0}, gap_bytes = 0, late_room[60] = {0};
    for (uint32_t t = 0; t < w.p; t++) occ[t] = step_bytes(&w, t);
    for (uint32_t r = 0; r < w.nr; r++) {
      uint32_t q = prev_use(&w, r);
      if (q == UINT32_MAX) continue;
      uint32_t from = w.step[q];
      uint32_t len = (w.step[r] + w.p - from) % w.p;
      if (len == 0) len = w.p;
      if (len <= 1) {
        cr_assert(eq(int, a.drop[q], 0), "seed %llu: ref %u dropped with no "
                  "step inside its gap", (unsigned long long)seed, q);
        continue;
      }
      gap_bytes += w.size[w.key[r]];
      if (!a.drop[q])
        for (uint32_t d = 1; d < len; d++) occ[(from + d) % w.p] += w.size[w.key[r]];
    }
    uint64_t fetched = 0;
    cr_assert(eq(u32, a.fetch_first[0], 0));
    cr_assert(eq(u32, a.fetch_first[w.p], a.nfetch));
    for (uint32_t t = 0; t < w.p; t++) {
      cr_assert(le(u32, a.fetch_first[t], a.fetch_first[t + 1]));
      for (uint32_t f = a.fetch_first[t]; f < a.fetch_first[t + 1]; f++) {
        uint32_t r = a.fetch_ref[f];
        cr_assert(lt(u32, r, w.nr));
        cr_assert(eq(int, w.acc[r] & LMS_ACCESS_OVERWRITE, 0),
                  "seed %llu: a copy in for an overwrite",
                  (unsigned long long)seed);
        uint32_t q = prev_use(&w, r);
        cr_assert(ne(u32, q, UINT32_MAX));
        cr_assert(eq(int, a.drop[q], 1), "seed %llu: ref %u fetched, its "
                  "chunk never left", (unsigned long long)seed, r);
        /* Issued strictly after the departure, before the use, within
         * the reach; or at the use's own step where the step before has
         * no room for it beside its own chunks (Note [A copy in with no
         * room before its use]). */
        uint32_t len = (w.step[r] + w.p - w.step[q]) % w.p;
        if (len == 0) len = w.p;
        uint32_t lead = (w.step[r] + w.p - t) % w.p;
        uint32_t before = (w.step[r] + w.p - 1) % w.p;
        if (lead == 0) {
          cr_assert(gt(u64, step_bytes(&w, before) + w.size[w.key[r]], cap),
                    "seed %llu: ref %u issued at its use, with room before",
                    (unsigned long long)seed, r);
          cr_assert(gt(u32, a.late_fetches, 0));
          at_use++;
        } else {
          cr_assert(le(u64, step_bytes(&w, before) + w.size[w.key[r]], cap),
                    "seed %llu: ref %u issued at %u, before a step with no "
                    "room for it", (unsigned long long)seed, r, t);
        }
        cr_assert(lt(u32, lead, len), "seed %llu: ref %u issued at %u, "
                  "gap %u..%u", (unsigned long long)seed, r, t, w.step[q],
                  w.step[r]);
        cr_assert(le(u32, lead, reach > 1 ? reach : 1));
        for (uint32_t d = 0; d < lead; d++) occ[(t + d) % w.p] += w.size[w.key[r]];
        /* A copy in with no room in the step before its use takes its
         * room anyway (late_fetches counts them), unless issued at its
         * use. */
        if (lead > 0) late_room[before] += w.size[w.key[r]];
        fetched += w.size[w.key[r]];
        fetches++;
      }
    }
    for (uint32_t t = 0; t < w.p; t++)
      cr_assert(le(u64, occ[t], cap + (a.late_fetches ? late_room[t] : 0)),
                "seed %llu: step %u holds %llu of %llu",
                (unsigned long long)seed, t, (unsigned long long)occ[t],
                (unsigned long long)cap);
    cr_assert(eq(u64, a.kept_bytes + a.drop_bytes, gap_bytes), "seed %llu",
              (unsigned long long)seed);
    cr_assert(eq(u64, a.fetch_bytes, fetched));
    kept += a.kept_bytes > 0;
    late += a.late_fetches > 0;
    lms__ahead_free(&a);
  }
  cr_log_info("%llu plans, %llu copies in, %llu keeping some gap, %llu with "
              "a late copy, %llu copies in at their use",
              (unsigned long long)plans, (unsigned long long)fetches,
              (unsigned long long)kept, (unsigned long long)late,
              (unsigned long long)at_use);
  /* The cases did exercise both keeping and sending away, and copies in
   * with no room before their use. */
  cr_assert(gt(u64, fetches, 1000));
  cr_assert(gt(u64, kept, 1000));
  cr_assert(gt(u64, at_use, 10));
}

Test(ahead, a_period_that_fits_moves_nothing) {
  for (uint64_t seed = 1; seed <= 500; seed++) {
    period_t w;
    random_period(seed * 0x2545f4914f6cdd1dull, &w);
    uint64_t all = 0;
    for (uint32_t k = 0; k < w.nk; k++) all += w.size[k];
    lms__ahead_in_t in = input(&w, all, 1000);
    lms__ahead_t a;
    cr_assert(eq(int, lms__ahead_build(&in, &a), LMS_OK));
    cr_assert(eq(u64, a.drop_bytes, 0), "seed %llu", (unsigned long long)seed);
    cr_assert(eq(u32, a.nfetch, 0));
    for (uint32_t r = 0; r < w.nr; r++) cr_assert(eq(int, a.drop[r], 0));
    lms__ahead_free(&a);
  }
}

/* A period written by hand: its p steps, nk keys of the sizes and lives
 * given, and its n references in order. */
typedef struct hand_ref {
  uint32_t step, key;
  unsigned acc;
} hand_ref_t;

static void hand_period(period_t *w, uint32_t p, uint32_t nk,
                        const uint64_t *size, const uint8_t *lives,
                        const hand_ref_t *refs, uint32_t n) {
  memset(w, 0, sizeof *w);
  w->p = p;
  w->nk = nk;
  memcpy(w->size, size, nk * sizeof *size);
  memcpy(w->lives, lives, nk * sizeof *lives);
  for (uint32_t i = 0; i < n; i++) {
    w->step[i] = refs[i].step;
    w->key[i] = refs[i].key;
    w->acc[i] = refs[i].acc;
  }
  w->nr = n;
}

/* Note [Whole chunks kept]: a chunk B of 90 bytes read at steps 0 and 6
 * of 7, and two of 20, A written at step 1 and read at 4 and C written at
 * 2 and read at 5, with T of 1 byte at every step, under 111 bytes.  The
 * gaps of A and C end first, so the order by end keeps both, and then B
 * does not fit at step 2 (T, C, A and B: 131): it brings in 90 bytes and
 * keeps 40.  By density B (18 bytes a step inside its gap, against their
 * 10) is decided first and fits beside each step's own; A and C then do
 * not: 40 bytes in, 90 kept, and C's copy in has no room at step 4 (B,
 * T and A already fill it). */
Test(ahead, by_density_a_large_chunk_stays_where_by_end_it_does_not) {
  period_t w;
  const uint64_t size[4] = {1, 90, 20, 20}; /* T, B, A, C */
  const uint8_t lives[4] = {1, 1, 0, 0};
  const unsigned R = LMS_ACCESS_READ, W = LMS_ACCESS_WRITE | LMS_ACCESS_OVERWRITE;
  const hand_ref_t refs[] = {
      {0, 0, R}, {0, 1, R}, {1, 0, R}, {1, 2, W}, {2, 0, R}, {2, 3, W},
      {3, 0, R}, {4, 0, R}, {4, 2, R}, {5, 0, R}, {5, 3, R}, {6, 0, R},
      {6, 1, R}};
  hand_period(&w, 7, 4, size, lives, refs, sizeof refs / sizeof refs[0]);
  uint64_t in_bytes[2], kept[2], late[2];
  uint8_t b_left[2];
  for (int dense = 0; dense < 2; dense++) {
    lms__ahead_in_t in = input(&w, 111, 7);
    in.dense = dense;
    lms__ahead_t a;
    cr_assert(eq(int, lms__ahead_build(&in, &a), LMS_OK));
    in_bytes[dense] = a.fetch_bytes;
    kept[dense] = a.kept_bytes;
    late[dense] = a.late_fetches;
    b_left[dense] = a.drop[1]; /* B's use at step 0 */
    lms__ahead_free(&a);
  }
  cr_assert(eq(u64, in_bytes[0], 90));
  cr_assert(eq(u64, kept[0], 40));
  cr_assert(eq(u64, late[0], 0));
  cr_assert(eq(int, b_left[0], 1));
  cr_assert(eq(u64, in_bytes[1], 40));
  cr_assert(eq(u64, kept[1], 90));
  cr_assert(eq(u64, late[1], 1));
  cr_assert(eq(int, b_left[1], 0));
}

/* Note [Whole chunks kept]: a weight W read and a cache K read and
 * written at step 0 of 4, 10 bytes each, T of 1 byte at every step and a
 * fresh X of 10 at step 2, under 21 bytes: at step 2 one of the two gaps
 * (each holding 10 bytes at three steps) has room.  By density alone they
 * are alike and the one first in the period, W's, stays: K goes home
 * after step 0, written back, and comes in again.  Counting write-backs
 * (dense 2) K's gap saves 20 bytes moved kept and W's 10: K stays, and
 * W, clean, is only brought in. */
Test(ahead, counting_write_backs_the_dirty_gap_stays) {
  period_t w;
  const uint64_t size[4] = {1, 10, 10, 10}; /* T, W, K, X */
  const uint8_t lives[4] = {1, 1, 1, 0};
  const unsigned R = LMS_ACCESS_READ, RW = LMS_ACCESS_READ | LMS_ACCESS_WRITE,
                 W = LMS_ACCESS_WRITE | LMS_ACCESS_OVERWRITE;
  const hand_ref_t refs[] = {
      {0, 0, R}, {0, 1, R}, {0, 2, RW}, {1, 0, R},
      {2, 0, R}, {2, 3, W}, {3, 0, R}};
  hand_period(&w, 4, 4, size, lives, refs, sizeof refs / sizeof refs[0]);
  for (int dense = 1; dense <= 2; dense++) {
    lms__ahead_in_t in = input(&w, 21, 4);
    in.dense = dense;
    lms__ahead_t a;
    cr_assert(eq(int, lms__ahead_build(&in, &a), LMS_OK));
    /* refs 1 and 2: W's use and K's */
    cr_assert(eq(int, a.drop[1], dense == 1 ? 0 : 1), "dense %d", dense);
    cr_assert(eq(int, a.drop[2], dense == 1 ? 1 : 0), "dense %d", dense);
    cr_assert(eq(u64, a.kept_bytes, 10), "dense %d", dense);
    cr_assert(eq(u64, a.fetch_bytes, 10), "dense %d", dense);
    lms__ahead_free(&a);
  }
}

/* Note [Room a write-back holds]: A (60 bytes) is written at step 0 and
 * read at 3 of 5, C (60) read at step 2, B (50) read at 1 and 4, T (1
 * byte) at every step, under 120.  A does not fit beside C at step 2 and
 * leaves after step 0, dirty; then B's gap (steps 2 and 3) has room.  But
 * where A's write-back outlasts step 1 (10 ns of compute against 100 ns
 * for 60 bytes at 600 MB/s), A's room is still taken at step 2, and B
 * does not fit there beside C: it leaves too.  A write-back done within
 * step 1 (1000 ns) holds step 1 alone, where B has room. */
Test(ahead, a_write_back_holds_its_room_while_it_runs) {
  period_t w;
  const uint64_t size[4] = {1, 60, 50, 60}; /* T, A, B, C */
  const uint8_t lives[4] = {1, 1, 1, 1};
  const unsigned R = LMS_ACCESS_READ, RW = LMS_ACCESS_READ | LMS_ACCESS_WRITE;
  const hand_ref_t refs[] = {
      {0, 0, R}, {0, 1, RW}, {1, 0, R}, {1, 2, R}, {2, 0, R},
      {2, 3, R}, {3, 0, R}, {3, 1, R}, {4, 0, R}, {4, 2, R}};
  hand_period(&w, 5, 4, size, lives, refs, sizeof refs / sizeof refs[0]);
  const uint64_t slow[5] = {1000, 10, 10, 1000, 1000},
                 fast[5] = {1000, 1000, 10, 1000, 1000};
  const uint64_t *ns[3] = {NULL, slow, fast};
  for (int k = 0; k < 3; k++) {
    lms__ahead_in_t in = input(&w, 120, 4);
    in.step_ns = ns[k];
    in.out_bps = ns[k] != NULL ? 6e8 : 0.0;
    lms__ahead_t a;
    cr_assert(eq(int, lms__ahead_build(&in, &a), LMS_OK));
    /* refs 1 and 3: A's write at step 0, B's read at step 1 */
    cr_assert(eq(int, a.drop[1], 1), "case %d", k);
    cr_assert(eq(int, a.drop[3], k == 1 ? 1 : 0), "case %d", k);
    lms__ahead_free(&a);
  }
}

/* Note [A plan searched by its time]: A and B, 100 bytes each, read at
 * steps 0 and 1 of 2 (1000 ns of compute each), under 150 bytes: neither
 * gap has room, and each copy in starts at its own use (the step before
 * has the other chunk).  At 1 GB/s each way a copy takes 100 ns, and the
 * model's iteration is two copies and two steps: 2200 ns.  With A written
 * at step 0 it goes home after that step (100 ns), and B's copy waits
 * for its room: 2300 ns.  Under 250 bytes both stay: 2000 ns, the
 * compute alone. */
Test(ahead, the_model_times_a_plan_as_worked_by_hand) {
  period_t w;
  const uint64_t size[2] = {100, 100};
  const uint8_t lives[2] = {1, 1};
  const uint64_t ns[2] = {1000, 1000};
  const unsigned R = LMS_ACCESS_READ, RW = LMS_ACCESS_READ | LMS_ACCESS_WRITE;
  const struct {
    unsigned a_acc;
    uint64_t cap;
    double want;
  } cases[] = {{R, 150, 2200}, {RW, 150, 2300}, {R, 250, 2000}};
  for (int c = 0; c < 3; c++) {
    const hand_ref_t refs[] = {{0, 0, cases[c].a_acc}, {1, 1, R}};
    hand_period(&w, 2, 2, size, lives, refs, 2);
    lms__ahead_in_t in = input(&w, cases[c].cap, 2);
    lms__ahead_t a;
    cr_assert(eq(int, lms__ahead_build(&in, &a), LMS_OK));
    cr_assert(eq(u64, a.fetch_bytes, cases[c].cap < 200 ? 200 : 0),
              "case %d", c);
    double t = lms__ahead_time(&in, &a, ns, 1e9, 1e9);
    cr_assert(ieee_ulp_eq(dbl, t, cases[c].want, 4), "case %d: %.1f ns", c,
              t);
    /* No rates, no answer. */
    cr_assert(ieee_ulp_eq(dbl, lms__ahead_time(&in, &a, ns, 0.0, 1e9), 0.0,
                          4));
    lms__ahead_free(&a);
  }
}

/* Note [A plan searched by its time]: A and B (100 bytes) read at steps 0
 * and 1 of 3, C (10) at step 2, under 205 bytes.  By end A's gap is
 * decided first and stays, and B's then has no room at step 2 (C, A and
 * B: 210).  Forced first, B's stays and A's has none.  C's gap has no
 * room beside the two 100-byte chunks at step 0 or 1 either way: 110
 * bytes come in.  Forced away, A leaves, and its copy in takes its room
 * at step 2, where B's gap then has none: 210 bytes. */
Test(ahead, a_forced_decision_is_taken) {
  period_t w;
  const uint64_t size[3] = {100, 100, 10};
  const uint8_t lives[3] = {1, 1, 1};
  const unsigned R = LMS_ACCESS_READ;
  const hand_ref_t refs[] = {{0, 0, R}, {1, 1, R}, {2, 2, R}};
  hand_period(&w, 3, 3, size, lives, refs, 3);
  const uint8_t none[3] = {0, 0, 0}, b_first[3] = {0, 2, 0},
                a_away[3] = {1, 0, 0};
  const uint8_t *force[3] = {none, b_first, a_away};
  for (int k = 0; k < 3; k++) {
    lms__ahead_in_t in = input(&w, 205, 3);
    in.force = force[k];
    lms__ahead_t a;
    cr_assert(eq(int, lms__ahead_build(&in, &a), LMS_OK));
    cr_assert(eq(int, a.drop[0], k == 0 ? 0 : 1), "case %d", k);
    cr_assert(eq(int, a.drop[1], k == 1 ? 0 : 1), "case %d", k);
    cr_assert(eq(u64, a.fetch_bytes, k == 2 ? 210 : 110), "case %d", k);
    lms__ahead_free(&a);
  }
}

/* m blocks, each read once a period at its own step, allocated once; of
 * 100 bytes, or where `mixed` one in four of 200. */
static void blocks(period_t *w, uint32_t m, uint64_t *s, int mixed) {
  memset(w, 0, sizeof *w);
  w->p = w->nk = w->nr = m;
  for (uint32_t i = 0; i < m; i++) {
    w->size[i] = mixed && rnd_in(s, 0, 3) == 0 ? 200 : 100;
    w->lives[i] = 1;
    w->step[i] = w->key[i] = i;
    w->acc[i] = LMS_ACCESS_READ;
  }
}

/* Note [Spread out]: m blocks alike, each read once a period, with
 * room for some of them.  In the order by end they stay in one run, so
 * the others come in back to back; spread, the longest run of those that
 * come in is under 4 m / k for k that stay (the first 2^j of a
 * bit-reversed order are evenly spaced).  The spread plan keeps as many
 * or one fewer (the second of Note [Two buffers]'s buffers). */
Test(ahead, spread_plans_alternate_what_stays) {
  uint64_t s = 0x5b4eadull, cases = 0;
  for (int c = 0; c < 200; c++) {
    period_t w;
    uint32_t m = (uint32_t)rnd_in(&s, 6, 40);
    blocks(&w, m, &s, 0);
    uint64_t cap = 100 * rnd_in(&s, 3, m - 2);
    uint32_t kept[2] = {0, 0}, run[2] = {0, 0};
    for (int spread = 0; spread < 2; spread++) {
      lms__ahead_in_t in = input(&w, cap, m);
      in.spread = spread;
      lms__ahead_t a;
      cr_assert(eq(int, lms__ahead_build(&in, &a), LMS_OK));
      /* The longest run of dropped blocks, round the cycle. */
      for (uint32_t i = 0; i < m; i++) {
        kept[spread] += !a.drop[i];
        uint32_t n = 0;
        while (n < m && a.drop[(i + n) % m]) n++;
        if (n > run[spread]) run[spread] = n;
      }
      lms__ahead_free(&a);
    }
    cr_assert(le(u32, kept[1], kept[0]), "case %d: %u blocks, room %llu", c,
              m, (unsigned long long)cap);
    cr_assert(ge(u32, kept[1] + 1, kept[0]), "case %d: %u blocks, room %llu",
              c, m, (unsigned long long)cap);
    if (kept[0] == 0 || kept[0] == m) continue;
    cases++;
    cr_assert(eq(u32, run[0], m - kept[0]), "case %d", c);
    uint32_t k = kept[1];
    cr_assert(gt(u32, k, 0), "case %d", c);
    cr_assert(lt(u32, run[1], (4 * m + k - 1) / k), "case %d: %u of %u "
              "blocks stay, a run of %u comes in", c, k, m, run[1]);
  }
  cr_assert(gt(u64, cases, 150));
}

/* Note [Spread out]: training's shape, chunk i written at step i of a
 * forward and read at step 2m - 1 - i of the backward, so no two gaps are
 * alike.  In the order by end the innermost stay, the chunks written last,
 * and forward's last steps have nothing to send home; spread, the chunks
 * that stay are not one run of forward: the last is kept and some of the
 * last quarter leave (with room for four, so that the two buffers of the
 * copies in leave room to keep). */
Test(ahead, spread_keeps_chunks_from_all_of_a_nest) {
  uint64_t s = 0x5e1f00dull, cases = 0;
  for (int c = 0; c < 200; c++) {
    period_t w;
    memset(&w, 0, sizeof w);
    uint32_t m = (uint32_t)rnd_in(&s, 12, 40);
    w.p = 2 * m;
    w.nk = m;
    for (uint32_t i = 0; i < m; i++) w.size[i] = 100;
    for (uint32_t t = 0; t < 2 * m; t++) {
      uint32_t i = t < m ? t : 2 * m - 1 - t;
      w.step[w.nr] = t;
      w.key[w.nr] = i;
      w.acc[w.nr++] = t < m ? LMS_ACCESS_WRITE | LMS_ACCESS_OVERWRITE
                            : LMS_ACCESS_READ;
    }
    uint32_t k = (uint32_t)rnd_in(&s, 4, m / 2);
    int kept[2][40];
    uint32_t n[2] = {0, 0};
    for (int spread = 0; spread < 2; spread++) {
      lms__ahead_in_t in = input(&w, 100 * ((uint64_t)k + 1), w.p);
      in.spread = spread;
      lms__ahead_t a;
      cr_assert(eq(int, lms__ahead_build(&in, &a), LMS_OK));
      /* Chunk i's gap begins at its write, reference i; chunk m - 1,
       * read the step after, has none. */
      for (uint32_t i = 0; i + 1 < m; i++) {
        kept[spread][i] = !a.drop[i];
        n[spread] += (uint32_t)kept[spread][i];
      }
      lms__ahead_free(&a);
    }
    cr_assert(gt(u32, n[0], 0), "case %d", c);
    cr_assert(gt(u32, n[1], 0), "case %d", c);
    /* In order by end: the last n[0] written with a gap stay. */
    for (uint32_t i = 0; i + 1 < m; i++)
      cr_assert(eq(int, kept[0][i], i + 1 >= m - n[0]), "case %d: chunk %u",
                c, i);
    if (n[1] < 2) continue;
    cases++;
    uint32_t lo = m, left_late = 0;
    for (uint32_t i = 0; i + 1 < m; i++) {
      if (kept[1][i] && i < lo) lo = i;
      left_late += i >= m - m / 4 && !kept[1][i];
    }
    /* The innermost gap is the first of the spread order. */
    cr_assert(eq(int, kept[1][m - 2], 1), "case %d", c);
    cr_assert(gt(u32, m - 1 - lo, n[1]), "case %d: %u of %u chunks stay, in "
              "a run from %u", c, n[1], m, lo);
    cr_assert(gt(u32, left_late, 0), "case %d", c);
  }
  cr_assert(gt(u64, cases, 150));
}

/* Note [Two buffers]: m blocks alike, each read once a period, some of
 * them of double size (a copy in of one must not wait for room either).
 * Under the spread plan every copy in is issued no later than the use of
 * the copy in before it, round the cycle, so it arrives while that one
 * computes; the plan, issuing each a step before its use, does not.  (A
 * block a step, so a plan that sends any away sends two or more: one
 * copy in alone would have none before it.) */
Test(ahead, spread_copies_in_start_with_the_one_before) {
  uint64_t s = 0x2b0ffe25ull, copies = 0, earlier = 0, plan_later = 0;
  for (int c = 0; c < 200; c++) {
    period_t w;
    uint32_t m = (uint32_t)rnd_in(&s, 6, 40);
    blocks(&w, m, &s, 1);
    uint64_t cap = 100 * rnd_in(&s, 6, m + 2);
    for (int spread = 1; spread >= 0; spread--) {
      lms__ahead_in_t in = input(&w, cap, m);
      in.spread = spread;
      lms__ahead_t a;
      cr_assert(eq(int, lms__ahead_build(&in, &a), LMS_OK));
      if (spread) cr_assert(eq(u64, a.late_fetches, 0), "case %d", c);
      /* Issue step and use of each copy in. */
      uint32_t at[40], use[40], n = 0;
      for (uint32_t t = 0; t < m; t++)
        for (uint32_t f = a.fetch_first[t]; f < a.fetch_first[t + 1]; f++) {
          at[n] = t;
          use[n++] = w.step[a.fetch_ref[f]];
        }
      for (uint32_t i = 0; i < n; i++) {
        /* The copy in used last before this one, round the cycle. */
        uint32_t back = m;
        for (uint32_t j = 0; j < n; j++) {
          uint32_t d = (use[i] + m - use[j]) % m;
          if (d > 0 && d < back) back = d;
        }
        uint32_t lead = (use[i] + m - at[i]) % m;
        if (lead == 0) lead = m;
        if (!spread) {
          plan_later += lead < back;
          continue;
        }
        cr_assert(ge(u32, lead, back), "case %d: the copy in for step %u "
                  "issued at %u, the one before it used at %u", c, use[i],
                  at[i], (use[i] + m - back) % m);
        copies++;
        earlier += back > 1;
      }
      lms__ahead_free(&a);
    }
  }
  /* More than a quarter of the copies in had kept blocks before them,
   * and the plan issued some of those after the one before was used. */
  cr_assert(gt(u64, earlier, copies / 4), "%llu of %llu",
            (unsigned long long)earlier, (unsigned long long)copies);
  cr_assert(gt(u64, plan_later, 0));
}

/* Note [Copies in by their use]: in order, a copy in for a later use is
 * never issued before one for an earlier use, the period unrolled from
 * step 0 (a copy in for a chunk's first use in the period serves the
 * next period's, after this one's last); without it some are. */
Test(ahead, copies_in_by_their_use_queue_in_that_order) {
  uint64_t pairs = 0, crossed = 0;
  for (uint64_t seed = 1; seed <= 2000; seed++) {
    period_t w;
    random_period(seed * 0x2545f4914f6cdd1dull, &w);
    uint64_t s = seed, cap = random_capacity(&w, &s);
    for (int order = 1; order >= 0; order--) {
      lms__ahead_in_t in = input(&w, cap, (uint32_t)rnd_in(&s, 1, w.p));
      in.spread = (int)rnd_in(&s, 0, 1);
      in.in_order = order;
      lms__ahead_t a;
      cr_assert(eq(int, lms__ahead_build(&in, &a), LMS_OK));
      /* Issue and use of each copy in on the unrolled timeline. */
      uint32_t at[600], use[600], n = 0;
      for (uint32_t t = 0; t < w.p; t++)
        for (uint32_t f = a.fetch_first[t]; f < a.fetch_first[t + 1]; f++) {
          uint32_t r = a.fetch_ref[f], u = w.step[r];
          int next = prev_use(&w, r) >= r; /* the key's first use */
          use[n] = u + (next ? w.p : 0);
          at[n++] = t + (next && t <= u ? w.p : 0);
        }
      for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < n; j++) {
          if (use[i] >= use[j]) continue;
          if (order) {
            cr_assert(le(u32, at[i], at[j]), "seed %llu: the copy in for "
                      "%u issued at %u, after the one for %u at %u",
                      (unsigned long long)seed, use[i], at[i], use[j],
                      at[j]);
            pairs++;
          } else {
            crossed += at[i] > at[j];
          }
        }
      lms__ahead_free(&a);
    }
  }
  cr_log_info("%llu ordered pairs; %llu crossed without the order",
              (unsigned long long)pairs, (unsigned long long)crossed);
  cr_assert(gt(u64, pairs, 10000));
  cr_assert(gt(u64, crossed, 100));
}

/* Note [Where the cycle is cut]: the plan by end cut at step c decides as
 * the plan by end of the same period turned to begin at c (every key
 * allocated once, so that turning it changes no gap): the same bytes
 * kept, sent away and brought in, the same copies late, and each use
 * the chunk leaves after is the turned period's.  Holds only if the cut
 * is where the order by end starts and nothing else moves. */
Test(ahead, a_cut_is_the_period_turned) {
  uint64_t differ = 0;
  for (uint64_t seed = 1; seed <= 1500; seed++) {
    period_t w, r;
    random_period(seed * 0x2545f4914f6cdd1dull, &w);
    uint64_t s = seed;
    for (uint32_t k = 0; k < w.nk; k++) w.lives[k] = 1;
    uint32_t c = (uint32_t)rnd_in(&s, 0, w.p - 1);
    /* The period turned: step t becomes (t - c) mod p, references in
     * order of their new steps, each step's in the order they were. */
    uint32_t to[600];
    r = w;
    r.nr = 0;
    for (uint32_t t = 0; t < w.p; t++)
      for (uint32_t i = 0; i < w.nr; i++) {
        if (w.step[i] != (t + c) % w.p) continue;
        to[i] = r.nr;
        r.step[r.nr] = t;
        r.key[r.nr] = w.key[i];
        r.acc[r.nr] = w.acc[i];
        r.nr++;
      }
    cr_assert(eq(u32, r.nr, w.nr));
    uint64_t cap = random_capacity(&w, &s);
    lms__ahead_in_t in = input(&w, cap, 1000), ir = input(&r, cap, 1000);
    in.cut = c;
    in.cuts = ir.cuts = 1;
    lms__ahead_t a, b, z;
    cr_assert(eq(int, lms__ahead_build(&in, &a), LMS_OK));
    cr_assert(eq(int, lms__ahead_build(&ir, &b), LMS_OK));
    in.cut = 0;
    cr_assert(eq(int, lms__ahead_build(&in, &z), LMS_OK));
    cr_assert(eq(u32, a.cut, c));
    cr_assert(eq(u64, a.kept_bytes, b.kept_bytes), "seed %llu, cut %u",
              (unsigned long long)seed, c);
    cr_assert(eq(u64, a.drop_bytes, b.drop_bytes), "seed %llu",
              (unsigned long long)seed);
    cr_assert(eq(u64, a.fetch_bytes, b.fetch_bytes), "seed %llu",
              (unsigned long long)seed);
    cr_assert(eq(u64, a.late_fetches, b.late_fetches), "seed %llu",
              (unsigned long long)seed);
    cr_assert(eq(u32, a.nfetch, b.nfetch), "seed %llu",
              (unsigned long long)seed);
    for (uint32_t i = 0; i < w.nr; i++)
      cr_assert(eq(int, a.drop[i], b.drop[to[i]]), "seed %llu: ref %u",
                (unsigned long long)seed, i);
    differ += memcmp(a.drop, z.drop, w.nr) != 0;
    lms__ahead_free(&a);
    lms__ahead_free(&b);
    lms__ahead_free(&z);
  }
  /* The cut did decide otherwise than step 0 in many of them. */
  cr_log_info("%llu of 1500 plans cut elsewhere than at step 0 decide "
              "otherwise", (unsigned long long)differ);
  cr_assert(gt(u64, differ, 100));
}

/* Note [Where the cycle is cut]: of the cuts tried, the plan keeps the
 * one that brings in the fewest bytes, step `cut` among them: never more
 * than the plan cut there alone, the same as that cut tried alone, and
 * fewer in some periods. */
Test(ahead, the_cut_tried_brings_in_no_more) {
  uint64_t fewer = 0;
  for (uint64_t seed = 1; seed <= 2000; seed++) {
    period_t w;
    random_period(seed * 0x9e3779b97f4a7c15ull + 7, &w);
    uint64_t s = seed, cap = random_capacity(&w, &s);
    lms__ahead_in_t in = input(&w, cap, (uint32_t)rnd_in(&s, 1, 70));
    in.cut = (uint32_t)rnd_in(&s, 0, w.p - 1);
    in.cuts = 1;
    lms__ahead_t one, many, again;
    cr_assert(eq(int, lms__ahead_build(&in, &one), LMS_OK));
    in.cuts = (uint32_t)rnd_in(&s, 2, 64);
    cr_assert(eq(int, lms__ahead_build(&in, &many), LMS_OK));
    cr_assert(le(u64, many.fetch_bytes, one.fetch_bytes), "seed %llu",
              (unsigned long long)seed);
    in.cut = many.cut;
    in.cuts = 1;
    cr_assert(eq(int, lms__ahead_build(&in, &again), LMS_OK));
    cr_assert(eq(u64, many.fetch_bytes, again.fetch_bytes), "seed %llu",
              (unsigned long long)seed);
    cr_assert(eq(int, memcmp(many.drop, again.drop, w.nr), 0), "seed %llu",
              (unsigned long long)seed);
    fewer += many.fetch_bytes < one.fetch_bytes;
    lms__ahead_free(&one);
    lms__ahead_free(&many);
    lms__ahead_free(&again);
  }
  cr_log_info("%llu of 2000 plans brought in fewer bytes cut elsewhere",
              (unsigned long long)fewer);
  cr_assert(gt(u64, fewer, 50));
}
