/* test_bound.c - the lower bound of `lms sim` (Note [A lower bound no
 * policy can beat] in src/replay/bound.c): exact on small cases worked by
 * hand, and never above what any policy achieves, on the built-in
 * workloads and on random programs, at several capacities and links. */
#include <criterion/criterion.h>
#include "check.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/ctx.h"
#include "graph/graph.h"
#include "replay/replay.h"
#include "support.h"

#define MiB (1ull << 20)

static void step(lms__workload_t *w, uint64_t ns, const char *refs) {
  cr_assert(eq(int, lms__wl_add_step(w, ns, "s"), LMS_OK));
  /* refs: "r0 w1 b2": read, write (overwrite), both; digit: chunk. */
  for (const char *p = refs; *p; p++) {
    if (*p == ' ') continue;
    unsigned acc = *p == 'r'   ? LMS_ACCESS_READ
                   : *p == 'w' ? LMS_ACCESS_WRITE
                               : LMS_ACCESS_RW;
    p++;
    cr_assert(eq(int, lms__wl_add_ref(w, (uint32_t)(*p - '0'), acc), LMS_OK));
  }
}

/* A workload of chunks of `size` bytes, one for each letter of kinds ('p'
 * persistent, 't' transient), named A, B, ... in order, and the steps
 * given (NULL-ended, as step() reads them), each 1 us of compute. */
static void build(lms__workload_t *w, const char *name, uint64_t size,
                  const char *kinds, const char *const *steps) {
  lms__wl_init(w, name);
  for (int i = 0; kinds[i]; i++) {
    char chunk[2] = {(char)('A' + i), '\0'};
    uint32_t id;
    cr_assert(eq(int, lms__wl_add_chunk(w, size, kinds[i] == 't', chunk, &id),
                 LMS_OK));
  }
  for (int i = 0; steps[i]; i++) step(w, 1000, steps[i]);
}

/* The bound of w under `capacity` bytes, links of the rates given. */
static lms__lower_bound_t bound_of(const lms__workload_t *w, uint64_t capacity,
                                   double h2d, double d2h) {
  lms__lower_bound_t b;
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__lower_bound(w, capacity, h2d, d2h, 0.0, 0.0, &b, err),
               LMS_OK), "%s", err);
  return b;
}

/* The bound of w with room for every chunk: nothing moves either way. */
static lms__lower_bound_t room_for_all(const lms__workload_t *w,
                                       uint64_t capacity, double h2d,
                                       double d2h) {
  lms__lower_bound_t b = bound_of(w, capacity, h2d, d2h);
  cr_assert(eq(u64, b.h2d_bytes, 0));
  cr_assert(eq(u64, b.d2h_bytes, 0));
  return b;
}

Test(bound, read_only_chunks_taking_turns) {
  /* A, B of 1 MiB under 1 MiB: A, B, A.  In steady state B comes in
   * after A and A after B: 2 MiB in, nothing out. */
  lms__workload_t w;
  build(&w, "ab", MiB, "pp", (const char *[]){"r0", "r1", "r0", NULL});
  lms__lower_bound_t b = bound_of(&w, MiB, 1.0, 1.0);
  cr_assert(eq(u64, b.h2d_bytes, 2 * MiB));
  cr_assert(eq(u64, b.d2h_bytes, 0));
  /* 2 MiB at 1 byte per ns is 2.1 ms, more than the 3 us of compute;
   * and with the room full at every step no copy overlaps any step's
   * compute (Note [Idle while copies land]).  Cut at the second step and
   * the third: A comes in after the second's compute, B after the
   * third's and the first's, 2 MiB ns + 3 us, as a schedule takes. */
  cr_assert(eq(u64, b.time_ns, 2 * MiB + 3000));
  cr_assert(eq(u64, b.cut_ns, b.time_ns));
  cr_assert(eq(int, b.cut_nsteps, 2));
  cr_assert(eq(u32, b.cut_steps[0], 1));
  /* Twice the room: nothing moves. */
  b = room_for_all(&w, 2 * MiB, 1.0, 1.0);
  cr_assert(eq(u64, b.time_ns, 3000));
  lms__wl_free(&w);
}

Test(bound, half_a_chunk_of_room_keeps_nothing) {
  /* Eight blocks of 1 MiB streamed past, each read at its own step, with
   * room for 2.5 more beside it.  Taken in part, the gaps by their end
   * keep 1 + 1 + 0.5 (and 1 of the last, whose steps lie past the
   * iteration's), 4.5 MiB in; whole, the half of the third cannot stay:
   * 5 MiB, as with room for exactly 2. */
  lms__workload_t w;
  build(&w, "stream", MiB, "pppppppp",
        (const char *[]){"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", NULL});
  lms__lower_bound_t b = bound_of(&w, 3 * MiB + MiB / 2, 1.0, 1.0);
  cr_assert(eq(u64, b.h2d_bytes, 5 * MiB));
  cr_assert(eq(u64, bound_of(&w, 3 * MiB, 1.0, 1.0).h2d_bytes, 5 * MiB));
  /* Mixed sizes whose gcd is half a block: the half stays. */
  lms__wl_free(&w);
  lms__wl_init(&w, "stream-mixed");
  for (int i = 0; i < 8; i++) {
    uint32_t id;
    cr_assert(eq(int, lms__wl_add_chunk(&w, i == 7 ? MiB / 2 : MiB, 0, "c", &id),
                 LMS_OK));
  }
  for (int i = 0; i < 8; i++) step(&w, 1000, (const char[]){'r', (char)('0' + i), 0});
  b = bound_of(&w, 3 * MiB + MiB / 2, 1.0, 1.0);
  cr_assert(lt(u64, b.h2d_bytes, 5 * MiB));
  lms__wl_free(&w);
}

Test(bound, written_chunks_go_home_to_leave) {
  /* A, B written, then read, under room for one: each is written home
   * once and brought back once an iteration; the next iteration
   * overwrites them, but their bytes must still be kept. */
  lms__workload_t w;
  build(&w, "ab-dirty", MiB, "pp",
        (const char *[]){"w0", "w1", "r0", "r1", NULL});
  lms__lower_bound_t b = bound_of(&w, MiB, 1.0, 2.0);
  cr_assert(eq(u64, b.h2d_bytes, 2 * MiB));
  cr_assert(eq(u64, b.d2h_bytes, 2 * MiB));
  /* Cut at the first three steps: A goes home after the first step (0.5
   * MiB ns at 2 bytes a ns) and comes back after the second (1 MiB ns),
   * B comes back after the third (1 MiB ns), and with the room full each
   * copy waits for the step before it to end (Note [Idle while copies
   * land]): 2.5 MiB ns and the four steps' 4 us, for the cuts and the
   * chain (Note [A chain of cuts]) alike.  (A schedule takes 3 MiB ns + 4
   * us: B's write-back must end before A can come in to its room, which
   * the bound does not ask.) */
  cr_assert(eq(u64, b.cut_ns, 2 * MiB + MiB / 2 + 4000));
  cr_assert(eq(int, b.cut_nsteps, 3));
  cr_assert(eq(u64, b.chain_ns, b.cut_ns));
  cr_assert(eq(u32, b.chain_ncuts, 3));
  cr_assert(eq(u32, b.chain_steps[0], 0));
  cr_assert(eq(u32, b.chain_steps[2], 2));
  cr_assert(eq(u64, b.time_ns, b.chain_ns));
  /* Room for both: A and B stay; nothing moves at all. */
  room_for_all(&w, 2 * MiB, 1.0, 2.0);
  lms__wl_free(&w);
}

Test(bound, every_dirty_run_that_leaves_goes_home) {
  /* Activations A and C (transient) are each written, read at once, and
   * read again after B (read only) has filled the room.  Whatever a
   * policy does, each leaves while dirty or went home before: 2 MiB go
   * home an iteration, though the gap right after each write needs no
   * room and at no one step are both away. */
  lms__workload_t w;
  build(&w, "two-dirty-runs", MiB, "tpt",
        (const char *[]){"w0", "r0", "r1", "r0", "w2", "r2", "r1", "r2", NULL});
  lms__lower_bound_t b = bound_of(&w, MiB, 1.0, 1.0);
  cr_assert(eq(u64, b.d2h_bytes, 2 * MiB));
  /* With room for all three nothing leaves (or comes in). */
  room_for_all(&w, 3 * MiB, 1.0, 1.0);
  lms__wl_free(&w);
}

Test(bound, training_splits_at_its_peak) {
  /* Forward writes four 1 MiB activations (compute 1 us each), backward
   * reads them in reverse, under room for two: at the first backward step
   * two had to go home, after forward's compute, and come back during
   * backward's.  The split bound exceeds each direction's alone. */
  lms__workload_t w;
  build(&w, "stack", MiB, "tttt",
        (const char *[]){"w0", "r0 w1", "r1 w2", "r2 w3", "r3", "r2", "r1",
                         "r0", NULL});
  lms__lower_bound_t b;
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__lower_bound(&w, 2 * MiB, 1.0, 1.0, 0.0, 0.0, &b, err),
               LMS_OK));
  uint64_t alone = b.h2d_bytes > b.d2h_bytes ? b.h2d_bytes : b.d2h_bytes;
  cr_assert(gt(u64, b.split_ns, alone), "split %llu, alone %llu",
            (unsigned long long)b.split_ns, (unsigned long long)alone);
  cr_assert(ge(u64, b.time_ns, b.split_ns));
  lms__wl_free(&w);
}

Test(bound, every_copy_pays_the_latency) {
  /* Four chunks of 4 KiB read in turn under room for one: each comes in
   * once an iteration, four copies.  At 1 byte/ns and 10 us each, 10 us
   * x 4 is added to the bytes' time; with no latency, the bytes' time
   * alone. */
  lms__workload_t w;
  build(&w, "latency", 4096, "pppp",
        (const char *[]){"r0", "r1", "r2", "r3", NULL});
  lms__lower_bound_t b;
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__lower_bound(&w, 4096, 1.0, 1.0, 0.0, 0.0, &b, err),
               LMS_OK));
  cr_assert(eq(u64, b.h2d_bytes, 4 * 4096));
  cr_assert(eq(u64, b.h2d_copies, 4));
  /* The room full at every step, each copy waits for the step before
   * it to end (Note [Idle while copies land]). */
  cr_assert(eq(u64, b.time_ns, 4 * 4096 + 4000));
  cr_assert(eq(int, lms__lower_bound(&w, 4096, 1.0, 1.0, 0.0, 10.0, &b, err),
               LMS_OK));
  cr_assert(eq(u64, b.time_ns, 4 * 4096 + 4 * 10000));
  cr_assert(eq(int, lms__lower_bound(&w, 4096, 1.0, 1.0, 0.0, -1.0, &b, err),
               LMS_ERR_INVALID));
  lms__wl_free(&w);

  /* With a chunk of 1 MiB besides, read in a fifth step, under 1 MiB: the
   * relaxation keeps all but 4 KiB of the large chunk and none of the
   * small ones, 5 x 4 KiB not kept; the fewest copies of that many bytes
   * take the largest gaps first, and the large one alone holds them: one
   * copy's latency, not five. */
  lms__wl_init(&w, "mixed");
  uint32_t id;
  for (int i = 0; i < 4; i++)
    cr_assert(eq(int, lms__wl_add_chunk(&w, 4096, 0, "s", &id), LMS_OK));
  cr_assert(eq(int, lms__wl_add_chunk(&w, MiB, 0, "L", &id), LMS_OK));
  const char *steps5[] = {"r0", "r1", "r2", "r3", "r4"};
  for (int i = 0; i < 5; i++) step(&w, 1000, steps5[i]);
  cr_assert(eq(int, lms__lower_bound(&w, MiB, 1.0, 1.0, 0.0, 10.0, &b, err),
               LMS_OK));
  cr_assert(eq(u64, b.h2d_bytes, 5 * 4096));
  cr_assert(eq(u64, b.h2d_copies, 1));
  cr_assert(eq(u64, b.time_ns, 5 * 4096 + 10000));
  lms__wl_free(&w);
}

Test(bound, refuses_nonsense) {
  lms__workload_t w;
  lms__wl_init(&w, "empty");
  lms__lower_bound_t b;
  char err[LMS__ERRBUF] = "";
  cr_assert(eq(int, lms__lower_bound(&w, MiB, 1.0, 1.0, 0.0, 0.0, &b, err),
               LMS_ERR_INVALID));
  cr_assert(strstr(err, "lower bound") != NULL);
  lms__wl_free(&w);
}

Test(bound, training_cycle_cuts_between_forward_and_backward) {
  /* Two layers: forward reads weights W1, W2 and writes activations X1,
   * X2; backward reads them and updates the weights (rw), all 1 MiB,
   * under room for one step (2 MiB).  Around the cycle, W1 and X1 must be
   * absent when the second forward step starts: both dirty (W1 from the
   * last backward step, X1 from the first forward step), so 2 MiB went
   * home between the last backward step and the second forward step, and
   * 2 MiB come back after it, before the last backward step: 4 MiB at 1
   * byte per ns, one after the other.  The byte bounds (3 MiB each way)
   * and the split within the iteration (3 MiB) miss it. */
  lms__workload_t w;
  build(&w, "two-layers", MiB, "pptt",
        (const char *[]){"r0 w2", "r1 w3", "r3 b1", "r2 b0", NULL});
  lms__lower_bound_t b = bound_of(&w, 2 * MiB, 1.0, 1.0);
  cr_assert(eq(u64, b.h2d_bytes, 3 * MiB));
  cr_assert(eq(u64, b.d2h_bytes, 3 * MiB));
  cr_assert(eq(u64, b.split_ns, 3 * MiB));
  /* Cut at the second forward step and the last backward step, the room
   * full at each step (Note [Idle while copies land]): W1 and X1 come
   * back once the second forward step and the first backward step have
   * computed, no step hiding any of it, and had gone home before the
   * second forward step, none of it while the last backward step
   * computed: 4 MiB ns + 3 us.  A schedule takes 4 MiB ns + 4 us. */
  cr_assert(eq(u64, b.cut_ns, 4 * MiB + 3000), "cut %llu",
            (unsigned long long)b.cut_ns);
  cr_assert(eq(int, b.cut_nsteps, 2));
  cr_assert(eq(u32, b.cut_steps[0], 1));
  cr_assert(eq(u32, b.cut_steps[1], 3));
  cr_assert(eq(u64, b.chain_ns, b.cut_ns));
  cr_assert(eq(u64, b.time_ns, b.cut_ns));
  /* With room for everything nothing need be absent. */
  b = room_for_all(&w, 4 * MiB, 1.0, 1.0);
  cr_assert(eq(u64, b.cut_ns, 0));
  cr_assert(eq(u64, b.time_ns, 4000));
  lms__wl_free(&w);
}

Test(bound, both_ways_at_once_share_the_link) {
  /* Four 1 MiB chunks updated in turn (rw) under room for one: each comes
   * in and goes home once an iteration, 4 MiB each way at 1 byte/ns
   * each.  Where the two ways together move at most 1.2 bytes/ns, the 8
   * MiB take 8 MiB / 1.2 at least (Note [Both ways at once in the bound]
   * in src/replay/cuts.c), more than either way alone; where they move 2
   * or more (the sum of each alone) nothing changes. */
  lms__workload_t w;
  build(&w, "updates", MiB, "pppp",
        (const char *[]){"b0", "b1", "b2", "b3", NULL});
  lms__lower_bound_t alone, shared, full;
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__lower_bound(&w, MiB, 1.0, 1.0, 0.0, 0.0, &alone, err),
               LMS_OK), "%s", err);
  cr_assert(eq(int, lms__lower_bound(&w, MiB, 1.0, 1.0, 1.2, 0.0, &shared, err),
               LMS_OK), "%s", err);
  cr_assert(eq(int, lms__lower_bound(&w, MiB, 1.0, 1.0, 2.0, 0.0, &full, err),
               LMS_OK), "%s", err);
  cr_assert(eq(u64, shared.h2d_bytes, alone.h2d_bytes));
  cr_assert(eq(u64, shared.d2h_bytes, alone.d2h_bytes));
  cr_assert(gt(u64, alone.h2d_bytes, 0));
  cr_assert(gt(u64, alone.d2h_bytes, 0));
  uint64_t want = (uint64_t)((double)(alone.h2d_bytes + alone.d2h_bytes) / 1.2);
  cr_assert(eq(u64, shared.both_ns, want));
  cr_assert(ge(u64, shared.time_ns, want));
  cr_assert(gt(u64, shared.time_ns, alone.time_ns), "shared %llu, alone %llu",
            (unsigned long long)shared.time_ns,
            (unsigned long long)alone.time_ns);
  /* A part of the cycle gains it too: the cut's and the chain's bounds
   * rise with it. */
  cr_assert(gt(u64, shared.chain_ns > shared.cut_ns ? shared.chain_ns
                                                    : shared.cut_ns,
               alone.chain_ns > alone.cut_ns ? alone.chain_ns : alone.cut_ns));
  cr_assert(eq(u64, alone.both_ns, 0));
  cr_assert(eq(u64, full.both_ns, 0));
  cr_assert(eq(u64, full.time_ns, alone.time_ns));
  cr_assert(eq(u64, full.cut_ns, alone.cut_ns));
  cr_assert(eq(u64, full.chain_ns, alone.chain_ns));
  /* A shared rate that is not a number or below zero is refused. */
  cr_assert(eq(int, lms__lower_bound(&w, MiB, 1.0, 1.0, -1.0, 0.0, &full, err),
               LMS_ERR_INVALID));
  cr_assert(eq(int, lms__lower_bound(&w, MiB, 1.0, 1.0, NAN, 0.0, &full, err),
               LMS_ERR_INVALID));
  lms__wl_free(&w);
}

/* ---- The cuts counted directly ------------------------------------ */

/* Positions on four iterations unrolled: step s of iteration i is
 * i * n + s.  The use of chunk c at or before position x (-1: none) and
 * the one after x, as a transient chunk lives (within one iteration) or a
 * persistent one (across them). */
static int64_t use_at(const lms__workload_t *w, uint32_t c, int64_t x) {
  uint32_t n = w->nsteps, s = (uint32_t)(x % n);
  const lms__wl_step_t *st = &w->steps[s];
  for (uint32_t k = 0; k < st->nrefs; k++)
    if (w->refs[st->first_ref + k].chunk == c) return st->first_ref + k;
  return -1;
}

typedef struct seen {
  int live;            /* across x: a use before and after, bytes not dead */
  int reads;           /* the use after reads */
  int64_t next;        /* its position */
  int dirty;           /* bytes written by the program are on it */
  int64_t wrote;       /* where they were written */
} seen_t;

static seen_t look(const lms__workload_t *w, uint32_t c, int64_t x) {
  seen_t v = {0};
  int64_t n = w->nsteps, lo = w->chunks[c].transient ? x / n * n : x - n + 1;
  int64_t hi = w->chunks[c].transient ? x / n * n + n - 1 : x + n - 1;
  if (use_at(w, c, x) >= 0) return v;
  int64_t prev = -1, next = -1;
  for (int64_t y = x - 1; y >= lo && prev < 0; y--)
    if (use_at(w, c, y) >= 0) prev = y;
  for (int64_t y = x + 1; y <= hi && next < 0; y++)
    if (use_at(w, c, y) >= 0) next = y;
  if (prev < 0 || next < 0) return v;
  if (w->refs[use_at(w, c, prev)].dead_after) return v;
  v.live = 1;
  v.next = next;
  v.reads = (w->refs[use_at(w, c, next)].access & LMS_ACCESS_READ) != 0;
  for (int64_t y = prev; y >= lo; y--) {
    int64_t r = use_at(w, c, y);
    if (r < 0) continue;
    if (y != prev && w->refs[r].dead_after) break;
    if (w->refs[r].access & LMS_ACCESS_WRITE) {
      v.dirty = 1;
      v.wrote = y;
      break;
    }
  }
  return v;
}

static uint64_t gcd(uint64_t a, uint64_t b) {
  while (b != 0) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* The room across step p, x = n + p: the capacity less the step's bytes,
 * taken down to a multiple of the gcd of the sizes of the chunks live
 * across it, as only whole chunks stay (Note [A lower bound no policy
 * can beat]). */
static int64_t room_at(const lms__workload_t *w, uint64_t capacity,
                       const uint64_t *step_bytes, int64_t p) {
  int64_t r = (int64_t)(capacity - step_bytes[p]);
  uint64_t g = 0;
  for (uint32_t c = 0; c < w->nchunks; c++)
    if (look(w, c, (int64_t)w->nsteps + p).live) g = gcd(g, w->chunks[c].size);
  if (g > 1 && r > 0) r -= r % (int64_t)g;
  return r;
}

/* The most both ways move at once, from Note [Both ways at once] in
 * src/device/sim.c: the way that starts second gets the shared rate less
 * the first's, at least a tenth of its own and at most its own. */
static double shared_rate(double ri, double ro, double both) {
  if (both <= 0) return ri + ro;
  double h_first = ri + fmin(fmax(both - ri, ro / 10), ro);
  double d_first = ro + fmin(fmax(both - ro, ri / 10), ri);
  return fmax(h_first, d_first);
}

/* The base of each term of the part from step `from` to step `to`
 * (indices that may pass n, round the cycle), from Note [Idle while
 * copies land] in src/replay/cuts.c: 0 its compute; 1 that less what its
 * inner steps hide of copies in (each at most its compute at the rate in
 * and its room), as time; 2 its first step's compute; 3 its compute less
 * what its inner steps hide of both ways over the rate they share. */
static void part_bases(const lms__workload_t *w, uint64_t capacity,
                       const uint64_t *step_bytes, int64_t from, int64_t to,
                       double ri, double ro, double rs, double base[4]) {
  int64_t n = w->nsteps;
  double first = (double)w->steps[from % n].compute_ns;
  double inner = 0, hide_in = 0, hide_both = 0;
  for (int64_t y = from + 1; y < to; y++) {
    double c = (double)w->steps[y % n].compute_ns;
    int64_t r = room_at(w, capacity, step_bytes, y % n);
    double h = fmin(ri * c, r > 0 ? (double)r : 0);
    inner += c;
    hide_in += h;
    hide_both += fmin(rs * c, h + ro * c);
  }
  base[0] = first + inner;
  base[1] = first + inner - hide_in / ri;
  base[2] = first;
  base[3] = first + inner - hide_both / rs;
}

/* The least of a x in + b x out over picks of r bytes among in-only (up
 * to fi), out-only (up to fo) and both, tried in steps of `unit`. */
static double least(int64_t r, int64_t fi, int64_t fo, double a, double b,
                    int64_t unit) {
  if (r <= 0) return 0.0;
  double best = -1;
  for (int64_t x = 0; x <= fi && x <= r; x += unit) {
    int64_t y = r - x < fo ? r - x : fo, both = r - x - y;
    double cost = a * (double)(x + both) + b * (double)(y + both);
    if (best < 0 || cost < best) best = cost;
  }
  return best;
}

/* The bound of the cycle cut at k steps (2 or 3, in order) from its
 * definition (Note [Cuts around the cycle] in src/replay/cuts.c):
 * each part takes its compute, its bytes in or its bytes out, and a cut
 * whose neighbours both take its charges takes the pick cheapest for
 * both. */
static double cuts_at(const lms__workload_t *w, uint64_t capacity,
                      const uint64_t *step_bytes, const int64_t *cut, int k,
                      double ri, double ro, double rs, int64_t unit) {
  int64_t n = w->nsteps, x[5];
  for (int i = 0; i < k; i++) x[i + 1] = n + cut[i];
  x[0] = x[k] - n;
  x[k + 1] = x[1] + n;
  int64_t in[3] = {0}, out[3] = {0}, both[3] = {0}, rest[3];
  double base[3][4];
  for (int i = 0; i < k; i++) {
    part_bases(w, capacity, step_bytes, x[i + 1], x[i + 2], ri, ro, rs,
               base[i]);
    for (uint32_t c = 0; c < w->nchunks; c++) {
      seen_t v = look(w, c, x[i + 1]);
      if (!v.live) continue;
      int64_t sz = (int64_t)w->chunks[c].size;
      int r = v.reads && v.next <= x[i + 2], o = v.dirty && v.wrote >= x[i];
      in[i] += r ? sz : 0;
      out[i] += o ? sz : 0;
      both[i] += r && o ? sz : 0;
    }
    rest[i] = in[i] + out[i] - both[i] - room_at(w, capacity, step_bytes, cut[i]);
  }
  /* Each part: 0 its compute, 1 its bytes in, 2 its bytes out, 3 both
   * over the rate they share (Note [Both ways at once in the bound]),
   * each way over its base. */
  double best = 0;
  int choices = k == 2 ? 16 : 64;
  for (int ch = 0; ch < choices; ch++) {
    int t[3];
    for (int i = 0, v = ch; i < k; i++, v /= 4) t[i] = v % 4;
    double sum = 0;
    for (int i = 0; i < k; i++) {
      sum += base[i][t[i]];
      int before = t[(i + k - 1) % k];
      double a = t[i] == 1 ? 1 / ri : t[i] == 3 ? 1 / rs : 0;
      double b = before == 2 ? 1 / ro : before == 3 ? 1 / rs : 0;
      sum += least(rest[i], in[i] - both[i], out[i] - both[i], a, b, unit);
    }
    if (sum > best) best = sum;
  }
  return best;
}

/* The largest over every pair and triple of cuts, if any step has bytes
 * that must be absent (else 0, as lms__lower_bound reports it). */
static double cuts_directly(const lms__workload_t *w, uint64_t capacity,
                            double ri, double ro, double rs, int64_t unit) {
  int64_t n = w->nsteps;
  uint64_t *step_bytes = calloc((size_t)n, sizeof *step_bytes);
  for (int64_t s = 0; s < n; s++)
    for (uint32_t k = 0; k < w->steps[s].nrefs; k++)
      step_bytes[s] += w->chunks[w->refs[w->steps[s].first_ref + k].chunk].size;
  int any = 0;
  for (int64_t p = 0; p < n && !any; p++) {
    int64_t absent = -room_at(w, capacity, step_bytes, p);
    for (uint32_t c = 0; c < w->nchunks; c++)
      if (look(w, c, n + p).live) absent += (int64_t)w->chunks[c].size;
    any = absent > 0;
  }
  double best = 0;
  for (int64_t a = 0; any && a < n; a++)
    for (int64_t b = a + 1; b < n; b++) {
      double v = cuts_at(w, capacity, step_bytes, (int64_t[]){a, b}, 2, ri, ro,
                         rs, unit);
      if (v > best) best = v;
      for (int64_t c = b + 1; c < n; c++) {
        v = cuts_at(w, capacity, step_bytes, (int64_t[]){a, b, c}, 3, ri, ro,
                    rs, unit);
        if (v > best) best = v;
      }
    }
  free(step_bytes);
  return best;
}

/* A random program of `nsteps` steps over NC chunks of multiples of
 * CUT_UNIT bytes, or with `round` all persistent, of one size and taken
 * in turn (step s uses chunk s % NC), so that nearly every step ties in
 * the bytes absent across it; its compute and accesses are random either
 * way. */
enum { NC = 10 };
#define CUT_UNIT ((int64_t)64 * 1024)

static uint64_t random_program(lms__workload_t *w, uint64_t *rng, int nsteps,
                               int round) {
  static const unsigned kinds[] = {LMS_ACCESS_READ, LMS_ACCESS_WRITE,
                                   LMS_ACCESS_RW};
  lms__wl_init(w, "cuts");
  uint64_t total = 0;
  for (int c = 0; c < NC; c++) {
    uint64_t size = (1 + (round ? 3 : lms_test_next(rng) % 16)) * (uint64_t)CUT_UNIT;
    int transient = !round && lms_test_next(rng) % 3 == 0;
    uint32_t id;
    lms__wl_add_chunk(w, size, transient, "c", &id);
    total += size;
  }
  int seen[NC] = {0};
  for (int s = 0; s < nsteps; s++) {
    lms__wl_add_step(w, 1000 + lms_test_next(rng) % 400000, "s");
    int k = round ? 1 : 1 + (int)(lms_test_next(rng) % 3);
    for (int j = 0; j < k; j++) {
      int c = round ? s % NC : (int)(lms_test_next(rng) % NC);
      unsigned acc = kinds[lms_test_next(rng) % 3];
      if (!seen[c] && w->chunks[c].transient) acc = LMS_ACCESS_WRITE;
      seen[c] = 1;
      lms__wl_add_ref(w, (uint32_t)c, acc);
    }
  }
  return total;
}

/* The search's cuts against their definition, for w under capacity
 * total / `over` (a multiple of the unit, at least the largest step);
 * 1 if the cuts decided the bound. */
static int check_cuts(const lms__workload_t *w, uint64_t total, uint64_t over,
                      double ri, double ro, double both, int trial) {
  uint64_t step = lms__wl_max_step_bytes(w);
  /* Every byte count a multiple of the unit, which the picks step by. */
  uint64_t cap = total / over / (uint64_t)CUT_UNIT * (uint64_t)CUT_UNIT;
  if (cap < step) cap = step;
  lms__lower_bound_t b;
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__lower_bound(w, cap, ri, ro, both, 0.0, &b, err),
               LMS_OK), "%s", err);
  double want = cuts_directly(w, cap, ri, ro, shared_rate(ri, ro, both),
                              CUT_UNIT);
  double got = (double)b.cut_ns;
  int same = got <= want + 1.0 && got >= want - 1.0;
  cr_assert(same, "trial %d: cuts %llu, by definition %.1f", trial,
            (unsigned long long)b.cut_ns, want);
  return b.time_ns == b.cut_ns && b.cut_ns > 0;
}

Test(bound, cuts_match_their_definition) {
  /* Random programs of at most 16 steps, some with bytes dead after
   * their last use. */
  uint64_t rng = 0xc07;
  int bound_by_cuts = 0;
  for (int trial = 0; trial < 60; trial++) {
    lms__workload_t w;
    uint64_t total = random_program(&w, &rng, 4 + (int)(lms_test_next(&rng) % 13), 0);
    if (trial % 2) lms__wl_mark_dead(&w, NULL);
    /* A third of them over a link whose two ways share a rate. */
    double ri = 1.0 + (double)(trial % 3), ro = 1.0 + (double)(trial % 2);
    bound_by_cuts += check_cuts(&w, total, 2 + (uint64_t)trial % 3, ri, ro,
                                trial % 3 == 2 ? 0.7 * (ri + ro) : 0.0,
                                trial);
    lms__wl_free(&w);
  }
  /* The programs are varied enough that the cuts decide some bounds. */
  cr_assert(gt(int, bound_by_cuts, 0));
}

Test(bound, cuts_found_among_steps_alike) {
  /* Programs of 52 steps taking ten chunks in turn: nearly every step
   * ties in the bytes absent across it, and the best cuts lie where the
   * compute says, anywhere in the iteration.  Small enough that every
   * step is tried, so the search must find what the definition does. */
  uint64_t rng = 0xa11e;
  int bound_by_cuts = 0;
  for (int trial = 0; trial < 4; trial++) {
    lms__workload_t w;
    uint64_t total = random_program(&w, &rng, 52, 1);
    bound_by_cuts += check_cuts(&w, total, 2 + (uint64_t)trial % 2, 1.0,
                                1.0 + (double)(trial % 2),
                                trial >= 2 ? 1.4 : 0.0, trial);
    lms__wl_free(&w);
  }
  cr_assert(gt(int, bound_by_cuts, 0));
}

/* The chain of k cuts (any k >= 2, in order) from its definition (Note
 * [A chain of cuts] in src/replay/cuts.c): each part alone takes the
 * largest of its compute, the bytes its first cut must bring in within
 * it and the bytes its last cut must have sent home within it, or its
 * compute and the time it must wait for what its steps cannot hide
 * (Note [Idle while copies land]). */
static double chain_at(const lms__workload_t *w, uint64_t capacity,
                       const uint64_t *step_bytes, const int64_t *cut, int k,
                       double ri, double ro, double rs) {
  int64_t n = w->nsteps, x[LMS__CHAIN_SHOWN + 2];
  for (int i = 0; i < k; i++) x[i + 1] = n + cut[i];
  x[0] = x[k] - n;
  x[k + 1] = x[1] + n;
  int64_t in[LMS__CHAIN_SHOWN], out[LMS__CHAIN_SHOWN];
  for (int i = 0; i < k; i++) {
    in[i] = out[i] = -room_at(w, capacity, step_bytes, cut[i]);
    for (uint32_t c = 0; c < w->nchunks; c++) {
      seen_t v = look(w, c, x[i + 1]);
      if (!v.live) continue;
      int64_t sz = (int64_t)w->chunks[c].size;
      if (v.reads && v.next <= x[i + 2]) in[i] += sz;
      if (v.dirty && v.wrote >= x[i]) out[i] += sz;
    }
  }
  double sum = 0;
  for (int i = 0; i < k; i++) {
    double base[4];
    part_bases(w, capacity, step_bytes, x[i + 1], x[i + 2], ri, ro, rs, base);
    double bi = in[i] > 0 ? (double)in[i] : 0;
    double bo = out[(i + 1) % k] > 0 ? (double)out[(i + 1) % k] : 0;
    /* Each way over its base (Note [Idle while copies land]), and both
     * over the rate they share (Note [Both ways at once in the bound]),
     * which without one is never the largest. */
    sum += fmax(fmax(base[0], base[3] + (bi + bo) / rs),
                fmax(base[1] + bi / ri, base[2] + bo / ro));
  }
  return sum;
}

/* A case of the chain tests: a random program of n steps, its capacity
 * (total / 2-4 of its chunks' bytes when tight, else total less 1/4-1/8),
 * the links' rates, its bound and each step's bytes (step_bytes, freed
 * by the caller). */
typedef struct chain_case {
  lms__workload_t w;
  uint64_t cap, *step_bytes;
  double ri, ro, both, rs; /* both: the link's shared rate (0: none) */
  lms__lower_bound_t b;
} chain_case_t;

static void chain_case(chain_case_t *c, uint64_t *rng, int trial, int n,
                       int tight) {
  uint64_t total = random_program(&c->w, rng, n, 0);
  if (trial % 2) lms__wl_mark_dead(&c->w, NULL);
  c->cap = tight ? total / (2 + (uint64_t)trial % 3)
                 : total - total / (4 + (uint64_t)trial % 5);
  if (c->cap < lms__wl_max_step_bytes(&c->w))
    c->cap = lms__wl_max_step_bytes(&c->w);
  c->ri = 1.0 + (double)(trial % 3);
  c->ro = 1.0 + (double)(trial % 2);
  /* Every fourth over a link whose two ways share a rate. */
  c->both = trial % 4 == 3 ? 0.6 * (c->ri + c->ro) : 0.0;
  c->rs = shared_rate(c->ri, c->ro, c->both);
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__lower_bound(&c->w, c->cap, c->ri, c->ro, c->both,
                                     0.0, &c->b, err), LMS_OK), "%s", err);
  c->step_bytes = calloc((size_t)n, sizeof *c->step_bytes);
  for (int st = 0; st < n; st++)
    for (uint32_t k = 0; k < c->w.steps[st].nrefs; k++)
      c->step_bytes[st] +=
          c->w.chunks[c->w.refs[c->w.steps[st].first_ref + k].chunk].size;
}

Test(bound, chain_matches_its_definition) {
  /* Random programs of at most 12 steps: every set of two cuts or more. */
  uint64_t rng = 0xc4a1;
  int above_cuts = 0;
  for (int trial = 0; trial < 40; trial++) {
    chain_case_t cc;
    int n = 4 + (int)(lms_test_next(&rng) % 9);
    chain_case(&cc, &rng, trial, n, 1);
    lms__workload_t w = cc.w;
    lms__lower_bound_t b = cc.b;
    uint64_t cap = cc.cap, *step_bytes = cc.step_bytes;
    double ri = cc.ri, ro = cc.ro;
    double want = 0;
    int want_k = 0;
    for (uint32_t set = 0; set < (1u << n); set++) {
      int64_t cut[16];
      int k = 0;
      for (int st = 0; st < n; st++)
        if (set >> st & 1) cut[k++] = st;
      if (k < 2) continue;
      double v = chain_at(&w, cap, step_bytes, cut, k, ri, ro, cc.rs);
      if (v > want) {
        want = v;
        want_k = k;
      }
    }
    free(step_bytes);
    /* Nothing absent anywhere: no chain, as no cuts. */
    if (b.cut_nsteps == 0) want = 0;
    double got = (double)b.chain_ns;
    int same = got <= want + 1.0 && got >= want - 1.0;
    cr_assert(same, "trial %d (%d steps): chain %llu of %u cuts, by "
              "definition %.1f of %d", trial, n,
              (unsigned long long)b.chain_ns, b.chain_ncuts, want, want_k);
    cr_assert(le(u64, b.chain_ns, b.time_ns));
    above_cuts += b.chain_ns > b.cut_ns + 1 && b.chain_ncuts > 3;
    lms__wl_free(&w);
  }
  /* Some chains of four cuts or more gave more than two or three could. */
  cr_assert(gt(int, above_cuts, 0));
}

/* Past CHAIN_MAX (640) steps the chain takes its cuts among the pairs'
 * candidates only (Note [A chain of cuts] in replay/cuts.c), a branch the
 * definition above, counting every set of cuts, cannot reach.  What it
 * reports must still be a chain worth what it says: the cuts it names,
 * counted from the definition, give its value. */
Test(bound, a_long_chain_is_worth_its_cuts) {
  uint64_t rng = 0x10ca1;
  int checked = 0;
  for (int trial = 0; trial < 12; trial++) {
    chain_case_t cc;
    int n = 660 + (int)(lms_test_next(&rng) % 200);
    chain_case(&cc, &rng, trial, n, 0);
    lms__lower_bound_t b = cc.b;
    cr_log_info("trial %d: %d steps, a chain of %u cuts", trial, n,
                b.chain_ncuts);
    if (b.chain_ncuts < 2 || b.chain_ncuts > LMS__CHAIN_SHOWN) {
      free(cc.step_bytes);
      lms__wl_free(&cc.w);
      continue;
    }
    int64_t cut[LMS__CHAIN_SHOWN];
    for (uint32_t i = 0; i < b.chain_ncuts; i++) {
      cut[i] = b.chain_steps[i];
      cr_assert(lt(i64, cut[i], n));
      if (i > 0) cr_assert(gt(i64, cut[i], cut[i - 1]), "trial %d", trial);
    }
    double want = chain_at(&cc.w, cc.cap, cc.step_bytes, cut,
                           (int)b.chain_ncuts, cc.ri, cc.ro, cc.rs);
    free(cc.step_bytes);
    double got = (double)b.chain_ns;
    cr_assert(got <= want + 1.0 && got >= want - 1.0,
              "trial %d (%d steps): chain %llu of %u cuts, its cuts by "
              "definition %.1f", trial, n, (unsigned long long)b.chain_ns,
              b.chain_ncuts, want);
    checked++;
    lms__wl_free(&cc.w);
  }
  /* Chains short enough to name whole were found and checked. */
  cr_assert(gt(int, checked, 3));
}

/* ---- Never above any policy ------------------------------------------ */

static lms_options_t *options(const char *limit, const char *link,
                              const char *policy) {
  lms_options_t *o = NULL;
  cr_assert(eq(int, lms_options_create(&o), LMS_OK));
  const char *kv[] = {"device", "sim", "lms", "0", "log", "none",
                      "sim-bytes", "off", "gpu-limit", limit,
                      "link", link, "policy", policy};
  for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i += 2)
    cr_assert(eq(int, lms_options_set(o, kv[i], kv[i + 1]), LMS_OK), "%s",
              lms_options_error(o));
  return o;
}

/* Runs whose bound the cuts around the cycle decided, and those whose
 * bound a chain of cuts decided. */
static int by_cuts, by_chain;

static void check_never_above(const lms__workload_t *w, const char *limit) {
  /* pcie5's two ways share 87 GB/s (Note [Both ways at once in the
   * bound] in replay/cuts.c). */
  static const char *const links[] = {"pcie3", "nvlink2", "pcie5"};
  static const char *const policies[] = {"ondemand", "lru", "schedule"};
  for (size_t l = 0; l < 3; l++)
    for (size_t p = 0; p < 3; p++) {
      lms_options_t *o = options(limit, links[l], policies[p]);
      lms__replay_result_t r;
      char err[LMS__ERRBUF];
      cr_assert(eq(int, lms__replay_run(w, &o->v, 3, 0, &r, err), LMS_OK),
                "%s %s %s: %s", w->name, links[l], policies[p], err);
      const char *what = policies[p];
      cr_assert(le(u64, r.lower.h2d_bytes, r.last.bytes_h2d),
                "%s %s %s at %s: bound %llu B in, run %llu", w->name,
                links[l], what, limit, (unsigned long long)r.lower.h2d_bytes,
                (unsigned long long)r.last.bytes_h2d);
      cr_assert(le(u64, r.lower.d2h_bytes, r.last.bytes_d2h),
                "%s %s %s at %s: bound %llu B out, run %llu", w->name,
                links[l], what, limit, (unsigned long long)r.lower.d2h_bytes,
                (unsigned long long)r.last.bytes_d2h);
      by_chain += r.lower.chain_ns == r.lower.time_ns &&
                  r.lower.time_ns > r.lower.cut_ns &&
                  r.lower.time_ns > r.lower.split_ns;
      by_cuts += (r.lower.cut_ns == r.lower.time_ns ||
                  r.lower.chain_ns == r.lower.time_ns) &&
                 r.lower.time_ns > r.lower.split_ns;
      cr_assert(le(u64, r.lower.time_ns, r.last.time_ns),
                "%s %s %s at %s: bound %llu ns, run %llu", w->name, links[l],
                what, limit, (unsigned long long)r.lower.time_ns,
                (unsigned long long)r.last.time_ns);
      /* The bound is never below compute, and the overlap bound of a run
       * is never below the least any run can take in bytes. */
      cr_assert(ge(u64, r.lower.time_ns, lms__wl_compute_ns(w)));
      cr_log_info("%s %s %s at %s: %.3fx the bound (in %llu of %llu B, "
                  "out %llu of %llu B)", w->name, links[l], what, limit,
                  (double)r.last.time_ns / (double)r.lower.time_ns,
                  (unsigned long long)r.lower.h2d_bytes,
                  (unsigned long long)r.last.bytes_h2d,
                  (unsigned long long)r.lower.d2h_bytes,
                  (unsigned long long)r.last.bytes_d2h);
      lms_options_destroy(o);
    }
}

Test(bound, never_above_a_policy_on_the_builtins, .timeout = 600) {
  static const char *const names[] = {"googlenet", "unet3d"};
  static const char *const limits[] = {"16GiB", "12GiB"};
  for (size_t i = 0; i < 2; i++) {
    lms__workload_t w;
    lms__wl_params_t prm = {.batch = i == 0 ? 10 : 1, .train = 1,
                            .size = i == 0 ? 0 : 144};
    char err[LMS__ERRBUF];
    cr_assert(eq(int, lms__wl_find_builtin(names[i])->build(&prm, &w, err),
                 LMS_OK), "%s", err);
    for (size_t c = 0; c < 2; c++) {
      if (lms__wl_max_step_bytes(&w) > (c == 0 ? 16ull : 12ull) << 30) continue;
      check_never_above(&w, limits[c]);
    }
    lms__wl_free(&w);
  }
}

/* A program whose chunks are each written first in an iteration, two a
 * step, then used at random over `nsteps` steps; its capacity as a
 * --gpu-limit in `limit`. */
enum { NEVER_NC = 24 };
static void never_above_program(lms__workload_t *w, uint64_t *rng, int trial,
                                int nsteps, char limit[32]) {
  char name[32];
  snprintf(name, sizeof name, "random-%d", trial);
  lms__wl_init(w, name);
  uint64_t total = 0;
  for (int c = 0; c < NEVER_NC; c++) {
    uint64_t size = (1 + lms_test_next(rng) % 64) * 64 * 1024;
    uint32_t id;
    int transient = (int)(lms_test_next(rng) % 3 == 0);
    cr_assert(eq(int, lms__wl_add_chunk(w, size, transient, "c", &id),
                 LMS_OK));
    total += size;
  }
  int seen[NEVER_NC] = {0};
  for (int c = 0; c < NEVER_NC; c += 2) {
    cr_assert(eq(int, lms__wl_add_step(w, 50000, "init"), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, (uint32_t)c, LMS_ACCESS_WRITE),
                 LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, (uint32_t)c + 1, LMS_ACCESS_WRITE),
                 LMS_OK));
    seen[c] = seen[c + 1] = 1;
  }
  for (int s = 0; s < nsteps; s++) {
    cr_assert(eq(int, lms__wl_add_step(w, 20000 + lms_test_next(rng) % 400000,
                                       "s"), LMS_OK));
    int k = 1 + (int)(lms_test_next(rng) % 3);
    int used[NEVER_NC] = {0};
    for (int j = 0; j < k; j++) {
      int c = (int)(lms_test_next(rng) % NEVER_NC);
      if (used[c]) continue;
      used[c] = 1;
      unsigned acc;
      if (w->chunks[c].transient && !seen[c]) acc = LMS_ACCESS_WRITE;
      else acc = (unsigned[]){LMS_ACCESS_READ, LMS_ACCESS_WRITE,
                              LMS_ACCESS_RW}[lms_test_next(rng) % 3];
      if (!w->chunks[c].transient && !seen[c] && acc == LMS_ACCESS_READ)
        acc = LMS_ACCESS_RW;
      seen[c] = 1;
      cr_assert(eq(int, lms__wl_add_ref(w, (uint32_t)c, acc), LMS_OK));
    }
  }
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__wl_validate(w, err), LMS_OK), "%s", err);
  /* Some with bytes dead after their last use, as the replay of a
   * program that discards them sees them. */
  if (trial % 3 == 2) lms__wl_mark_dead(w, NULL);
  uint64_t step = lms__wl_max_step_bytes(w);
  uint64_t cap = total / (2 + (uint64_t)trial % 4);
  if (cap < step + step / 8) cap = step + step / 8;
  snprintf(limit, 32, "%lluB", (unsigned long long)cap);
}

/* `trials` programs of `nsteps` random steps, each held to every policy
 * (check_never_above). */
static void never_above_programs(uint64_t seed, int trials, int nsteps) {
  uint64_t rng = seed;
  for (int trial = 0; trial < trials; trial++) {
    lms__workload_t w;
    char limit[32];
    never_above_program(&w, &rng, trial, nsteps, limit);
    check_never_above(&w, limit);
    lms__wl_free(&w);
  }
}

Test(bound, never_above_a_policy_on_random_programs, .timeout = 600) {
  never_above_programs(0xb0b0, 40, 40);
  /* The cuts (Note [Cuts around the cycle]) decided some of these
   * bounds, so a policy was held to them too. */
  cr_assert(gt(int, by_cuts, 0));
  cr_log_info("the cuts or their chains decided %d bounds", by_cuts);
}

/* Past CHAIN_MAX steps the chain searches the pairs' candidates only
 * (Note [A chain of cuts] in replay/cuts.c): held to every policy too. */
Test(bound, never_above_a_policy_on_long_programs, .timeout = 600) {
  never_above_programs(0x1009, 4, 700); /* 712 steps: past CHAIN_MAX */
  /* The chain of the long branch, above the cuts and the split, was the
   * bound of some of these runs, so a policy was held to it. */
  cr_assert(gt(int, by_chain, 0));
  cr_log_info("a chain decided %d bounds", by_chain);
}

/* ---- Settled iterations (Note [A settled iteration] in replay.c) ------ */

/* A run that never settles reports the iteration nearest the mean time
 * of the later half of those since its trial ended, at least the last
 * eight: a whole one (its bytes with its time), not the last, and over a
 * cycle longer than eight its mean, not a stretch of it. */
Test(settle, an_unsettled_run_reports_the_iteration_nearest_its_mean) {
  static lms__replay_result_t r;
  for (int n = 1; n <= 40; n++) {
    for (int first = -1; first < n; first += 3) {
      memset(&r, 0, sizeof r);
      r.iterations = n;
      for (int i = 0; i < n; i++) {
        r.iter[i].time_ns = (uint64_t)((i * 7919) % 1000 + 1);
        r.iter[i].bytes_h2d = (uint64_t)i;
      }
      int from = first >= 0 ? first + (n - first) / 2 : n;
      if (from > n - 8) from = n - 8;
      if (from < 0) from = 0;
      double mean = 0.0;
      for (int i = from; i < n; i++) mean += (double)r.iter[i].time_ns;
      mean /= (double)(n - from);
      int k = lms__replay_unsettled_index(&r, first);
      cr_assert(ge(int, k, from), "n %d first %d", n, first);
      cr_assert(lt(int, k, n), "n %d first %d", n, first);
      /* The same iteration's bytes with its time. */
      cr_assert(eq(u64, r.iter[k].bytes_h2d, (uint64_t)k));
      double dk = fabs((double)r.iter[k].time_ns - mean);
      for (int i = from; i < n; i++)
        cr_assert(le(dbl, dk, fabs((double)r.iter[i].time_ns - mean)),
                  "n %d first %d: iteration %d is nearer the mean than %d",
                  n, first, i, k);
    }
  }
  /* A cycle of twelve after a trial ending at 4: eight fast iterations,
   * one of 1300 and three slow.  The last eight's median is a fast one
   * (1000); the tail's mean is 1300. */
  memset(&r, 0, sizeof r);
  r.iterations = 48;
  for (int i = 0; i < 48; i++)
    r.iter[i].time_ns = i % 12 < 8 ? 1000 : i % 12 == 8 ? 1300 : 2000;
  int k = lms__replay_unsettled_index(&r, 4);
  cr_assert(eq(u64, r.iter[k].time_ns, 1300), "%llu",
            (unsigned long long)r.iter[k].time_ns);
}

/* Two iterations in a row that agree are settled, once the trial is
 * over (`first`); so are 2k after the trial and after the first
 * iteration that repeat a cycle of k, each agreeing with the one k
 * before it, for k up to LMS__REPLAY_CYCLE_MAX, and then the slowest of
 * the last k is measured; a longer cycle is not.  The cycle begins at
 * every phase, after `pre` iterations unlike it (none may settle it
 * early), and its copies agree within 0.5 % without being equal (every
 * other copy is 0.09 % slower, so the slowest of the last 2k can lie
 * outside the last k). */
Test(settle, iterations_that_take_turns_are_settled) {
  static lms__replay_result_t r;
  enum { LONGEST = LMS__REPLAY_CYCLE_MAX + 1 };
  uint64_t turn[LONGEST];
  for (int j = 0; j < LONGEST; j++) /* 0.85 % apart, no two alike */
    turn[j] = 341300 + (uint64_t)j * 2901;
  for (int period = 1; period <= LONGEST; period++)
    for (int first = 0; first <= 6; first++)
      for (int pre = 0; pre <= 3; pre++)
        for (int phase = 0; phase < period; phase++) {
          memset(&r, 0, sizeof r);
          int got = -1, n;
          for (n = 1; n <= 48 && got < 0; n++) {
            int c = n - 1 - pre; /* place in the cycle; < 0: before it */
            r.iterations = n;
            r.iter[n - 1].time_ns =
                c < 0 ? 500000 + (uint64_t)(n - 1) * 9000
                      : turn[(c + phase) % period] +
                            ((c / period) % 2 == 0 ? 300 : 0);
            r.iter[n - 1].bytes_h2d = r.iter[n - 1].bytes_d2h = 1000;
            got = lms__replay_steady(&r, first);
          }
          n--;
          if (period == LONGEST) {
            cr_assert(eq(int, got, -1), "first %d pre %d", first, pre);
            continue;
          }
          cr_assert(ge(int, got, 0), "period %d first %d pre %d", period,
                    first, pre);
          int start = first > 1 ? first : 1;
          if (pre > start) start = pre;
          int want_n = start + 2 * period;
          if (period == 1) {
            want_n = pre + 2;
            if (want_n < first + 1) want_n = first + 1;
            if (want_n < LMS__REPLAY_SETTLE_MIN)
              want_n = LMS__REPLAY_SETTLE_MIN;
          }
          cr_assert(eq(int, n, want_n), "period %d first %d pre %d", period,
                    first, pre);
          int last = n - 1;
          if (period == 1) {
            cr_assert(eq(int, got, last));
            continue;
          }
          uint64_t slowest = 0;
          for (int j = 0; j < period; j++)
            if (r.iter[last - j].time_ns > slowest)
              slowest = r.iter[last - j].time_ns;
          cr_assert(eq(u64, r.iter[got].time_ns, slowest),
                    "period %d first %d pre %d phase %d", period, first, pre,
                    phase);
          cr_assert(ge(int, got, last - period + 1));
        }
  /* Turns whose bytes either way differ are not a steady state. */
  for (int way = 0; way < 2; way++)
    for (int period = 1; period <= LMS__REPLAY_CYCLE_MAX; period++) {
      memset(&r, 0, sizeof r);
      for (int n = 1; n <= 16; n++) {
        r.iterations = n;
        r.iter[n - 1].time_ns = turn[(n - 1) % period];
        uint64_t drift = 1000 + (uint64_t)(n - 1) * 10;
        r.iter[n - 1].bytes_h2d = way == 0 ? drift : 1000;
        r.iter[n - 1].bytes_d2h = way == 1 ? drift : 1000;
        cr_assert(eq(int, lms__replay_steady(&r, 0), -1),
                  "way %d period %d n %d", way, period, n);
      }
    }
}

/* Iterations whose time and bytes agree but which leave other chunks on
 * the device than they found may be spending what an earlier one left,
 * not repeating (streaming inference under a quarter of its chunks'
 * bytes over pcie3 ran 145.6 ms five times so, then 149.7 and 153.8):
 * not settled, for one iteration or a cycle of k, however many agree,
 * until an iteration (or the cycle) ends where it began. */
Test(settle, iterations_that_move_the_residency_are_not_settled) {
  static lms__replay_result_t r;
  for (int period = 1; period <= LMS__REPLAY_CYCLE_MAX; period++)
    for (int drift = 0; drift < 2; drift++) {
      memset(&r, 0, sizeof r);
      int got = -1, n;
      for (n = 1; n <= 40 && got < 0; n++) {
        lms__replay_iter_t *i = &r.iter[n - 1];
        r.iterations = n;
        i->time_ns = 145600 + (uint64_t)((n - 1) % period) * 2000;
        i->bytes_h2d = 1762 + (uint64_t)((n - 1) % period) * 30;
        i->bytes_d2h = 1000;
        /* drifting: a new set at every end until the 20th, then the
         * cycle's own; else the cycle's own from the start */
        i->residency = drift && n <= 20 ? 0x1000u + (uint64_t)n
                                        : (uint64_t)((n - 1) % period);
        got = lms__replay_steady(&r, 0);
      }
      n--;
      cr_assert(ge(int, got, 0), "period %d drift %d", period, drift);
      /* A cycle whose ends agree needs its 2k iterations after the
       * drift; one iteration needs the one before it to end alike. */
      int least = period == 1 ? LMS__REPLAY_SETTLE_MIN : 2 * period + 1;
      if (drift) /* twenty alike but drifting: settled after them */
        least = 21 + period;
      cr_assert(eq(int, n, least), "period %d drift %d: settled at %d",
                period, drift, n);
      cr_assert(eq(u64, r.iter[n - 1].residency,
                   r.iter[n - 1 - period].residency),
                "period %d drift %d", period, drift);
    }
}

Test(settle, runs_until_two_iterations_agree) {
  lms__workload_t w;
  lms__wl_params_t prm = {.batch = 10, .train = 1};
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__wl_find_builtin("googlenet")->build(&prm, &w, err),
               LMS_OK), "%s", err);
  lms_options_t *o = options("16GiB", "pcie3", "schedule");
  lms__replay_result_t r;
  cr_assert(eq(int, lms__replay_run(&w, &o->v, LMS__REPLAY_SETTLE, 0, &r, err),
               LMS_OK), "%s", err);
  cr_assert(eq(int, r.settled, 1));
  cr_assert(ge(int, r.iterations, LMS__REPLAY_SETTLE_MIN));
  cr_assert(le(int, r.iterations, LMS__REPLAY_SETTLE_MAX));
  const lms__replay_iter_t *a = &r.iter[r.iterations - 2], *b = &r.last;
  double dt = (double)a->time_ns / (double)b->time_ns - 1.0;
  cr_assert(le(dbl, dt < 0 ? -dt : dt, 0.005));
  cr_assert(eq(u64, b->time_ns, r.iter[r.iterations - 1].time_ns));
  cr_assert(eq(int, r.measured, r.iterations - 1));
  /* Not at an iteration where the ways were on trial or the watch held
   * the run (Note [The trial keeps score] in graph/plan.c). */
  cr_assert(eq(int, b->held, 0));
  /* The iteration before the one that agreed did not agree with its own
   * predecessor, or the replay would have stopped there, unless the run
   * was held there. */
  if (r.iterations > LMS__REPLAY_SETTLE_MIN && !a->held) {
    const lms__replay_iter_t *c = &r.iter[r.iterations - 3];
    double d0 = (double)c->time_ns / (double)a->time_ns - 1.0;
    double h0 = (double)c->bytes_h2d / (double)(a->bytes_h2d + 1) - 1.0;
    double o0 = (double)c->bytes_d2h / (double)(a->bytes_d2h + 1) - 1.0;
    cr_assert(d0 > 0.005 || d0 < -0.005 || h0 > 0.005 || h0 < -0.005 ||
              o0 > 0.005 || o0 < -0.005);
  }
  /* A fixed number runs exactly that many and says nothing of settling. */
  cr_assert(eq(int, lms__replay_run(&w, &o->v, 5, 0, &r, err), LMS_OK));
  cr_assert(eq(int, r.iterations, 5));
  cr_assert(eq(int, r.settled, -1));
  lms_options_destroy(o);
  lms__wl_free(&w);
}
