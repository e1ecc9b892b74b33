/* test_period.c - Note [A period in the launch trace]: a repeating launch
 * sequence is found within two periods, including one whose kernels recur
 * inside an iteration and one kernel run over many buffers; the prediction is the launch a period before, with
 * its allocations; a launch off the prediction ends the period, which is
 * found again; periods too long to hold are not claimed.  And Note [Where a
 * period starts]: a loop is taken at the first repeat of its first event,
 * and a loop after a setup that never comes back only through the second
 * start, which moves each time the record doubles. */
#include <criterion/criterion.h>
#include "check.h"

#include "core/period.h"

static lms__period_t g_p;

static uint64_t note(uintptr_t fn, uint64_t ptr) {
  return lms__period_note(&g_p, fn, &ptr, ptr != 0);
}

Test(period, distinct_kernels_lock_after_two_periods) {
  lms__period_init(&g_p);
  uint64_t locked_at = 0;
  for (uint64_t i = 0; i < 40; i++) {
    uint64_t per = note(100 + i % 5, 0x1000 * (i % 5 + 1));
    if (per != 0 && locked_at == 0) locked_at = i + 1;
    if (locked_at) cr_assert(eq(u64, per, 5), "launch %llu", (unsigned long long)i);
  }
  /* The first repeat starts at launch 6; its run reaches 5 at launch 10. */
  cr_assert(eq(u64, locked_at, 10));
  cr_assert(eq(u64, g_p.locks, 1));
  /* 40 launches seen: the next is function 100 + 40 % 5 with its pointer. */
  for (uint64_t k = 1; k <= 5; k++) {
    const lms__launch_rec_t *r = lms__period_predict(&g_p, k);
    cr_assert(r != NULL);
    cr_assert(eq(u64, (uint64_t)r->fn, 100 + (39 + k) % 5));
    cr_assert(eq(u32, r->nptrs, 1));
    cr_assert(eq(u64, r->ptrs[0], 0x1000 * ((39 + k) % 5 + 1)));
  }
  cr_assert(eq(ptr, (void *)lms__period_predict(&g_p, 6), NULL));
  cr_assert(eq(ptr, (void *)lms__period_predict(&g_p, 0), NULL));
}

Test(period, kernels_recurring_inside_an_iteration) {
  /* A B A C A B A C ...: A recurs every 2, the period is 4. */
  const uintptr_t seq[4] = {1, 2, 1, 3};
  lms__period_init(&g_p);
  uint64_t per = 0;
  for (int i = 0; i < 16; i++) per = note(seq[i % 4], 0);
  cr_assert(eq(u64, per, 4));
  /* A layer-like sequence: conv, relu used by every layer, 3 layers plus
   * a distinct head: period 7. */
  const uintptr_t net[7] = {10, 11, 10, 11, 10, 11, 12};
  lms__period_init(&g_p);
  for (int i = 0; i < 35; i++) per = note(net[i % 7], 0);
  cr_assert(eq(u64, per, 7));
  cr_assert(eq(u64, (uint64_t)lms__period_predict(&g_p, 1)->fn, net[35 % 7]));
}

Test(period, one_kernel_over_many_buffers_has_their_period) {
  lms__period_init(&g_p);
  uint64_t per = 0;
  for (uint64_t i = 0; i < 30; i++) per = note(42, 0x100000 * (i % 6 + 1));
  cr_assert(eq(u64, per, 6));
  /* 30 launches: the next is buffer 30 % 6 = 0's. */
  cr_assert(eq(u64, lms__period_predict(&g_p, 1)->ptrs[0], 0x100000));
  cr_assert(eq(u64, lms__period_predict(&g_p, 3)->ptrs[0], 0x300000));
}

Test(period, a_launch_off_the_prediction_ends_the_period) {
  lms__period_init(&g_p);
  for (int i = 0; i < 12; i++) note(1 + i % 3, 0);
  cr_assert(eq(u64, g_p.period, 3));
  cr_assert(eq(u64, note(99, 0), 0));
  cr_assert(eq(u64, g_p.breaks, 1));
  cr_assert(eq(ptr, (void *)lms__period_predict(&g_p, 1), NULL));
  /* The loop goes on from where it was: found again. */
  for (int i = 0; i < 12; i++) note(1 + i % 3, 0);
  cr_assert(eq(u64, g_p.period, 3));
  cr_assert(eq(u64, g_p.locks, 2));
}

Test(period, one_kernel_run_twice_is_not_a_loop) {
  lms__period_init(&g_p);
  cr_assert(eq(u64, note(7, 0), 0));
  cr_assert(eq(u64, note(7, 0), 0));
  cr_assert(eq(u64, note(7, 0), 1));
}

Test(period, pointers_past_the_kept_number_are_dropped) {
  lms__period_init(&g_p);
  const uint64_t ptrs[6] = {1, 2, 3, 4, 5, 6};
  for (int i = 0; i < 6; i++) {
    lms__period_note(&g_p, 5, ptrs, 6);
    lms__period_note(&g_p, 6, NULL, 0);
  }
  const lms__launch_rec_t *r = lms__period_predict(&g_p, 1);
  cr_assert(r != NULL);
  cr_assert(eq(u64, (uint64_t)r->fn, 5));
  cr_assert(eq(u32, r->nptrs, LMS__PERIOD_PTRS));
  cr_assert(eq(u64, r->ptrs[LMS__PERIOD_PTRS - 1], LMS__PERIOD_PTRS));
  cr_assert(eq(u32, lms__period_predict(&g_p, 2)->nptrs, 0));
}

Test(period, a_period_longer_than_kept_is_not_claimed) {
  lms__period_init(&g_p);
  const uint64_t P = LMS__PERIOD_MAX + 1;
  for (uint64_t i = 0; i < 3 * P; i++) note(1000 + i % P, 0);
  cr_assert(eq(u64, g_p.period, 0));
  cr_assert(eq(u64, g_p.locks, 0));
  /* The longest that is held: its Q keys are more than the key table's
   * slots, so a key whose slot another took has no distance, and the run
   * starts at the first key of the second pass that kept its slot (Note
   * [A period in the launch trace]: a lost distance only delays it).
   * Found within three passes, not two. */
  lms__period_init(&g_p);
  const uint64_t Q = LMS__PERIOD_MAX;
  cr_assert(gt(u64, Q, LMS__PERIOD_FNS));
  uint64_t found = 0;
  for (uint64_t i = 0; i < 3 * Q && found == 0; i++)
    if (note(1000 + i % Q, 0) == Q) found = i + 1;
  /* 0 if not found in three passes; never before the second ends. */
  cr_assert(ge(u64, found, 2 * Q), "found after %llu", (unsigned long long)found);
  /* A quarter as many keys as the table has slots, addresses 256 bytes
   * apart: a period of them locks after two passes if the first keys of
   * the second pass kept their slots.  A table that took the low bits
   * as they are would put them in 16 slots and lose nearly every
   * distance. */
  lms__period_init(&g_p);
  const uint64_t F = LMS__PERIOD_FNS / 4;
  found = 0;
  for (uint64_t i = 0; i < 3 * F && found == 0; i++)
    if (note(0x7f0000000000ull + 256 * (i % F), 0) == F) found = i + 1;
  cr_assert(ge(u64, found, 2 * F));
  cr_assert(le(u64, found, 2 * F + 8), "found after %llu", (unsigned long long)found);
}

/* ---- Note [Where a period starts] --------------------------------------- */

/* A record of event keys fed as the planner feeds steps: each event is
 * matched against the starts, and a match takes the events from the start
 * it repeats as the period (the record then drops what came before). */
typedef struct record {
  lms__period_starts_t s;
  uint64_t key[4096];
  uint32_t n;
  uint64_t now;
} record_t;

static int same_key(const void *ctx, uint32_t i) {
  const record_t *r = ctx;
  return r->key[i] == r->now;
}

/* Feeds keys seq(i) for i = 0, 1, ... until a period is taken (returns
 * it, and *at, the number of events fed) or `max` events pass (0). */
static uint32_t find_period(record_t *r, int alt_ok, uint64_t (*seq)(uint32_t),
                            uint32_t max, uint32_t *at) {
  lms__period_starts_init(&r->s);
  r->n = 0;
  for (uint32_t i = 0; i < max; i++) {
    r->now = seq(i);
    uint32_t from = lms__period_starts_match(&r->s, r->n, alt_ok, same_key, r);
    if (from != UINT32_MAX) {
      *at = i + 1;
      return r->n - from;
    }
    r->key[r->n++] = r->now;
    lms__period_starts_recorded(&r->s, r->n);
  }
  return 0;
}

static record_t g_r;

/* A loop of 7 from the first event. */
static uint64_t loop7(uint32_t i) { return 100 + i % 7; }
/* 150 events of setup that never come back, then a loop of 40. */
static uint64_t setup_then_loop(uint32_t i) {
  return i < 150 ? 5000 + i : 100 + (i - 150) % 40;
}
/* A loop whose first event comes back at once twice (a step of one shape
 * repeated), then the rest: the first repeat of event 0 is taken. */
static uint64_t repeat_first(uint32_t i) {
  return i < 2 ? 1 : 10 + i;
}

Test(period_starts, a_loop_from_the_first_event_is_found_at_its_first_repeat) {
  uint32_t at = 0;
  cr_assert(eq(u32, find_period(&g_r, 0, loop7, 1000, &at), 7));
  cr_assert(eq(u32, at, 8));
  at = 0;
  cr_assert(eq(u32, find_period(&g_r, 1, repeat_first, 1000, &at), 1));
  cr_assert(eq(u32, at, 2));
}

Test(period_starts, setup_that_never_comes_back_needs_the_second_start) {
  uint32_t at = 0;
  /* Without the second start the loop is never found. */
  cr_assert(eq(u32, find_period(&g_r, 0, setup_then_loop, 4000, &at), 0));
  /* With it: found within 4(L + P) events, the setup dropped. */
  cr_assert(eq(u32, find_period(&g_r, 1, setup_then_loop, 4000, &at), 40));
  cr_assert(le(u32, at, 4 * (150 + 40)), "found after %u events", at);
  cr_assert(gt(u32, at, 150 + 40));
}

Test(period_starts, the_second_start_moves_when_the_record_doubles) {
  lms__period_starts_t s;
  lms__period_starts_init(&s);
  for (uint32_t n = 1; n < LMS__PERIOD_ALT_FIRST; n++) {
    lms__period_starts_recorded(&s, n);
    cr_assert(eq(u32, s.alt, 0), "n %u", n);
  }
  uint32_t at = LMS__PERIOD_ALT_FIRST;
  for (uint32_t n = LMS__PERIOD_ALT_FIRST; n <= 8 * LMS__PERIOD_ALT_FIRST; n++) {
    lms__period_starts_recorded(&s, n);
    if (n == at) at *= 2;
    cr_assert(eq(u32, s.alt, at / 2 - 1), "n %u", n);
  }
}
