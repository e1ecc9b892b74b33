/* ahead.c - the planned period (ahead.h).
 *
 * Note [A planned period]
 * Once a schedule is known, its period says every chunk's uses, so the
 * choices the window made step by step (Note [Prefetch window] in plan.c)
 * can be made for the whole period at once, against the room the period
 * will have at every step, not the room there is now.  Looking ahead step
 * by step either stops too early (the window's working set counts a
 * gradient made and freed within two steps as held for the whole window,
 * and in backward the link idled for 14 ms of ResNet-50's 65 at 2x over
 * pcie5) or brings in what the steps before its use push out again
 * (bench/results/2026-11-24-sim-window-depth.md).
 *
 * Between two uses of a chunk (a gap) the chunk either stays, holding its
 * bytes at every step strictly inside the gap, or leaves after the first
 * use and, if the second reads it, comes back before it.  The plan:
 *   1. Room.  Each step holds its own chunks: occ(t) starts as the bytes
 *      of step t's chunks.
 *   2. What stays, and the least room each copy in needs.  Gaps taken
 *      by their end, each kept whole if every step inside it has room for
 *      it: the greedy of the lower bound (Note [A lower bound no policy
 *      can beat] in replay/bound.c), whole gaps instead of fractions.  A
 *      kept gap adds its bytes inside it.  A gap not kept whose second use
 *      reads takes room at the step before that use, so that the gaps
 *      ending later leave its copy in a step to arrive in.
 *   3. What leaves.  The first use of a gap not kept is marked: after
 *      that step the chunk leaves (written home if dirty), when the link
 *      out is free soonest, not when a later step needs its room.
 *   4. When it comes back.  The copies in, by their use, each start from
 *      the earliest step after the chunk left from which every step up to
 *      its use has room for it (at most `reach` steps ahead), and hold
 *      that room.  So a copy in never takes room a step before its use
 *      will need, and never waits for a step when the room is there
 *      sooner.
 * The period is a cycle: a chunk allocated once (key_lives) has a gap from
 * its last use round to its first in the next period; one allocated
 * afresh each period has none, and its room ends at its last use.  Steps
 * are positions on a range tree of the period's length, and a gap round
 * the end covers two ranges of it.  Times: O(r log p) for r references
 * and p steps, and O(r + p) memory.
 *
 * Room is counted in the bytes the caller gives for each key against the
 * capacity it gives (plan.c gives what each chunk takes of the budget,
 * and the budget less a margin).  A gap not kept costs its size in and,
 * if its chunk is dirty, its size out.  The order by end is optimal when
 * gaps may be kept in part, as in the bound; kept whole it can keep fewer
 * bytes than the best choice would (the bound's bytes, beside the plan's
 * in the sweep, say how many fewer; Note [Whole chunks kept]). */

/* Note [A copy in with no room before its use]
 * A gap not kept whose second use reads is fetched with room from the
 * step before that use (step 2 of Note [A planned period]).  Where that
 * step has no room for it, the fetch is late: counted, and still issued
 * at that step, where it takes the room of chunks kept for later steps,
 * which is worth it where a streamed weight would otherwise wait.  But
 * where the step's own chunks leave no room for it (occ, before anything
 * is kept), the copy cannot stay through that step: its outputs, made at
 * its acquire, push it out again, and it comes in twice (VGG-16's
 * training at 4x over pcie5 and nvlink2, under the plan: conv0's output,
 * 411 MB, beside a step of 924 MB under a budget of 1.30 GB).  Such a
 * copy starts at its use's own step and holds no room before it.  Tested by
 * planned::a_plan_alone_wastes_no_copy in tests/test_scheduler.c and
 * ahead::plans_keep_within_the_room_and_the_gaps. */

/* Note [Spread out]
 * The plan above counts bytes, not time: any choice of what stays that
 * keeps as many bytes is as good to it.  The order by end keeps runs.
 * The weight blocks of a model streamed past once an iteration (48 blocks
 * of 48 MiB, each read once, room for 24): blocks 0-22 stay, 23-47 come
 * in one after another.  While the kept run computes the link has nothing
 * to do, and then the copies in come back to back with nothing to hide
 * behind; over a link that moves a block in about two steps' compute
 * (NVLink-C2C) that iteration took 1.47 of the lower bound.  Training:
 * what forward wrote last is read first in backward, so it stays, and
 * forward's last steps have nothing to send home while the link out is
 * what forward waits for, and backward's first steps nothing to fetch.
 * The spread plan takes the gaps at even intervals of their order by end
 * (by the bit-reversed rank: first, middle, quarters, ...), so what
 * stays alternates with what leaves all through the period, and the
 * copies run while what stays computes, with room as Note [Two buffers]
 * gives it.  Taken so only among gaps alike (one size, one length), as
 * it first was, streaming gained as much and training nothing, since no
 * two of its gaps are alike: spreading them all, ResNet-50 at 2x over
 * pcie5 went from 59.9 ms (the plan leaving late) to 56.6 (1.307 -> 1.234
 * of the lower bound), and at 4x from 1.253 to 1.214
 * (bench/results/2026-11-25-sim-spread-out.md).  Over a link ten times
 * slower spreading is no better (each copy takes many steps' compute
 * wherever it is), and it moves more bytes, so both plans are timed
 * (Note [Ways to look ahead, measured] in plan.c); `spread` builds the
 * second.
 *
 * Note [Two buffers]
 * A copy in given room only from the step before its use (step 2 of Note
 * [A planned period]) overlaps one step's compute.  Where a copy takes
 * longer, as a 48 MiB block over NVLink-C2C (2.2 steps), the step waits
 * for it unless room was there earlier; room given to every copy in from
 * a fixed number of steps before its use holds too much where copies in
 * are next to each other and too little where kept blocks lie between
 * them.  Streaming at 2x over c2c took 1.098 of the lower bound with a
 * lead of one step and 1.138 with two; under 1.77x, 1.536 and 1.117.
 * What keeps the link busy is two buffers: one block computing while the
 * next arrives.  So the spread plan first decides as the plan does; then
 * it gives each copy in room from the use of the copy in before it, round
 * the cycle, but not before the step after its chunk left nor more than
 * the reach before its use (all of that where every step between has
 * room, else from the step before its own use), before anything is kept,
 * and decides what stays in the room left.  A gap that no longer fits
 * becomes a copy in, and the pass is made again with it, until a pass
 * adds none (at most TWO_BUFFER_PASSES; the copies in only grow).  After
 * a pass that added none, the room reserved while deciding holds at any
 * step the copy in whose use it is and the next, two buffers, where no
 * two copies in share a use (step 4 may then start a copy earlier still
 * where room is left).
 * Streaming at 2x over c2c keeps 21 of its 48 blocks, the most that leave
 * room for two (22 leave room for 1.9), and its iteration is the time of
 * its 27 copies in back to back: 1.080 of the lower bound; under 1.77x,
 * 1.091.  Cost: one decision of the plan per pass, O(r log p) each.
 *
 * Note [Copies in by their use]
 * Step 4 starts each copy in as early as room allows.  But a copy engine
 * runs its copies one after another in the order they were queued, so a
 * copy queued early for a use far ahead holds up every copy queued after
 * it, whatever their uses.  In GPT-2 medium's training at 2x over pcie5
 * the spread plan fetched the optimiser's state as soon as backward had
 * freed room for it, and the link in, which backward waits for, carried
 * it ahead of backward's own activations: 372.4 ms an iteration on
 * trial, 1.346 of the lower bound.  In order (`in_order`), no copy in
 * starts before the first step of the room of any copy in whose use
 * comes earlier (each copy's room as the decision gave it, or where this
 * rule moved it); moving a copy later only shortens the room it holds,
 * so nothing else changes.  Copies in then queue by their use, as the
 * link should run them, and the optimiser's state comes in during the
 * optimiser, behind the last of backward's: settled, 341.0 and 343.9 ms
 * by turns (1.243; on trial over nvlink2 331.3 ms against 304.7, and
 * ResNet-50 at 4x over pcie5 85.6 against 81.1).  It loses where the
 * link had idle time the early copy used: ResNet-50 at 2x over pcie5,
 * 56.6 ms against 57.7 on trial, its optimiser's copies in now waiting
 * behind backward's last with no compute left to hide them.  So the
 * spread plan is timed both ways (Note [Ways to look ahead, measured] in
 * plan.c).  Order is by use within one period unrolled from step 0: a
 * copy in for a chunk's first use in the period serves the next
 * period's, and is ordered after every copy in for this period's uses;
 * issued early in the next period, it may queue behind a copy for a
 * later use issued before it.  Copies used at one step are not held
 * back for each other.  O(1) a copy in
 * (bench/results/2026-11-25-sim-copies-in-order.md).
 * The plan by density (Note [Whole chunks kept]) is timed in order too.
 * VGG-16's training at 2x over pcie5 brings in two of fc0's weight,
 * gradient and momentum (411 MB each) for the optimiser's step at the
 * end of the iteration, the second only from the step after the first,
 * since room for both comes only then; three copies for the steps after it, with room
 * earlier, went ahead of it on the link, and the step waited 19.5 ms.
 * In order: 117.3 -> 113.5 ms (1.423 -> 1.377 of the lower bound).  On
 * DLRM at 2x the same order holds a 402 MB table's copy behind a
 * backward step's, and it comes late for the next forward: 86.2 -> 89.4
 * ms (bench/results/2026-11-29-sim-home-before-leaving.md).
 *
 * Note [Whole chunks kept]
 * The order by end keeps the most bytes where gaps may be kept in part.
 * Kept whole, the gaps decided first can leave a little too little room
 * for a larger one, and where chunks are large beside the budget that
 * costs much.  A recommendation model's training step at 2x (eight
 * embedding tables of 67-805 MB, each read in forward and updated in
 * backward, under 1.57 GiB): in the order by end the top MLP's
 * activations stay, then the forward-to-update gaps of the tables that
 * come first, and the 805 MB table has room for neither of its gaps; the
 * plan brings in 3.89 GB an iteration.  Deciding first the gaps that
 * hold the most bytes a step inside them (their size over the steps
 * inside), the 805 MB table stays for good with the activations beside
 * it: 3.78 GB.  Under the same rules (every gap kept whole or its copy
 * in given room at the step before its use), the best of every subset
 * of the 20 gaps of 50 MB or more kept, the smaller gaps then decided by
 * end, brings in 3.58 GB (bench/workloads/whole_keep.py); the lower
 * bound, which keeps parts, 2.71
 * (bench/results/2026-11-28-sim-whole-chunks-kept.md).  Neither order
 * is better everywhere (by density ResNet-50's plan at 2x brings in
 * 1.40 GB against 1.36), and fewer bytes are not always less time, so the
 * plan by density (`dense`) is a way of its own on trial (Note [Ways to
 * look ahead, measured] in plan.c), tried wherever it decides otherwise
 * than the plan by end.  Tried only where it brought in fewer bytes, it
 * missed where keeping the large gaps first costs bytes but saves time:
 * a diffusion model's 25 denoising steps at 2x over pcie3 plan 11.08 GB
 * in by density and 11.01 by end (and bring in 11.79 and 11.04), and
 * take 1096.7 ms against 1208.9, since what stays by density is the
 * large weights of the levels with little compute, and the small ones
 * streamed past the levels with much hide their copies; VGG-16 at 4x
 * over pcie5, 1.351 -> 1.244 of the lower bound
 * (bench/results/2026-11-29-sim-dense-on-trial.md).  Its copies in
 * are then ordered by end for step 4.
 * Bytes a step are not all a gap saves: one not kept costs its bytes in
 * and, where its chunk is dirty, its bytes out as well.  A decoder's
 * key-value caches, read and written at every decoding step, each cost
 * twice what a weight of their size does to send away; by density alone
 * the 1.1B decoder at 2x over pcie5 kept weights and wrote 0.20 GB of
 * caches home an iteration.  Counting write-backs (`dense` 2), a gap
 * whose first use writes weighs twice: the decoder keeps its caches,
 * writes nothing home and brings in 1.90 GB against 2.05, 12 % faster
 * (tested by ahead::counting_write_backs_the_dirty_gap_stays).  Dirty
 * is guessed from the first use alone (a gap after a read of a chunk
 * kept since it was written is dirty too), and the guess is not better
 * everywhere: speech recognition at 2x moves more both ways so
 * (bench/results/2026-12-02-sim-victims.md).  So it is a way on trial
 * of its own, tried where it sends a chunk away after other uses than
 * the plan by density.  Cost: a sort of the gaps, O(g log g). */
/* Note [Room a write-back holds]
 * A chunk leaving dirty gives back its room only once its write-back
 * has ended, and the plan counted that room free from the step after the
 * one it left after.  Where steps are short beside a large chunk's copy
 * that is wrong for several steps: VGG-16's training at 2x over pcie5
 * (411 MB activations and weights, forward's steps about 1 ms, a 411 MB
 * write-back 9.6 ms at the 42.7 GB/s the link out runs at beside copies
 * in) lost 16.9 ms of forward's 36.7 waiting for room that the plan by
 * density had planned for (bench/results/2026-12-02-sim-vgg16-schedule.md).
 * So where the caller gives each step's compute (step_ns) and the link
 * out's rate (out_bps), a gap not kept whose first use writes (dirty is
 * guessed as for the weight of Note [Whole chunks kept]) also holds its
 * chunk's bytes at the steps after that use that begin before its
 * write-back can have ended: each step from the one after, while the
 * compute of the steps between is less than the chunk's size over the
 * rate, and never past the gap.  The later gaps and copies in then see
 * that room taken.  The write-back is taken to start when the step it
 * follows ends and to run alone on the link out; where write-backs queue
 * it ends later still, which the plan does not see.  Applied to every
 * plan, the sweep of the twenty traces was worse in 37 of 240 runs (DLRM
 * 3-7 %, VGG-16 over pcie3 11 %: the plans, greedy, keep less and find
 * nothing better to do with the room), so it is a way on trial of its own
 * (Note [Ways to look ahead, measured] in plan.c): the plan by density
 * holding the room of its write-backs, tried where it sends a chunk away
 * after other uses than the plan by density.  Against 5647e85, over the
 * twenty traces' 240 runs (bench/results/2026-12-03-sim-write-back-room.md):
 * kept in 7, VGG-16 at 2x over pcie5 6.1 % faster (1.339 -> 1.258 of
 * the lower bound), the pipeline stage at 4x and 10x 0.8-1.4 %; one run
 * 0.4 % slower; with waits measured 9 faster, 3 slower by 0.2 % at most.
 * Cost: O(k) for a gap whose hold spans k steps, at most its length. */
/* Note [A plan searched by its time]
 * The plans count bytes, and the trial times a few of them; between them
 * lie many others.  The programme of bench/workloads/lp_bound.py shows
 * better ones: in VGG-16's training at 2x over pcie5 it sends the fc6
 * gradient home during backward and brings it back during forward,
 * 1.2 GB more copying than the plans, where the link is idle and the room
 * is short (bench/results/2026-12-02-sim-vgg16-schedule.md).  Which of
 * two plans is faster is a question of time, so lms__ahead_time answers
 * it with a model: the period run three times from an empty device, each
 * step's compute as last seen; the copies in the plan issues at a step
 * waiting, by their use, until a step starts with room for them (the
 * runtime tries them at step boundaries and takes only clean room: Note
 * [A planned copy takes clean room] in swap/residency.c), then on one
 * queue in; the chunks of a step not on the device brought in at its
 * start once their room is free; the write-backs on one queue out (after
 * the step the chunk leaves after, or during it where that step only
 * reads it: Note [Home before leaving] in plan.c); a chunk's room free
 * when it leaves clean or once its write-back has ended; and a step
 * starting when the one before has ended and its chunks are in.  The
 * third period's time is the answer.  Each direction runs at its own
 * rate, both at once.  It is not the simulator: no copy's latency, no
 * device cache (room is bytes), no free reserve, and over a link not
 * duplex (pcie5: 87 GB/s both ways) both directions at full rate.  Over
 * the twenty traces' 240 runs, of each two ways the trial timed more than
 * 0.5 % apart the model put 81 % in the trial's order, its fastest was
 * within 1 % of the trial's fastest in 187 runs, and its times were a
 * median 1.00 of the trial's (a tenth under 0.95, a tenth over 1.06).
 * With the copies in starting at their step whatever the room, 77 % and
 * 182 runs; with that and each direction at its share of the both-ways
 * rate, 77 % and 181, and a tenth over 1.19.
 * The search (search_plan in plan.c): from the plan by density in order,
 * or the same counting write-backs where the model times that faster, the
 * gaps of chunks of at least 1/32 of the capacity, most bytes times
 * steps inside them first (at most SEARCH_FLIPS), are each decided the
 * other way in turn (`force`: sent away where kept, decided before the
 * others where sent away), and a plan so decided is kept where the model
 * times it 0.5 % faster; a second pass where the first changed anything.
 * The plan found is a way on trial of its own (Note [Ways to look ahead,
 * measured] in plan.c), "dense-s", tried where the search changed a
 * decision and the device gives its rates.  Over the twenty traces' 240
 * runs against beaad4a (bench/results/2026-12-03-sim-searched-plan.md):
 * kept in 13; 14 faster (VGG-16 at 2x over nvlink2 2.7 %, 1.322 -> 1.287
 * of the lower bound, and 1.23 of the programme's), one 1.0 % slower; with
 * waits measured 12 faster, none slower; GoogLeNet's built-in training
 * over pcie3 1251.0 -> 1188.4 ms.  Tried on trial wherever its plan
 * decided otherwise than by density, even with no decision changed, it
 * was kept where that plan (by density counting write-backs, in order)
 * won the trial by 0.7 % and settled 2.7 % slower.
 * Cost: O(r + p) a timing, O(f r log p) for f tries (f r at most
 * SEARCH_WORK). */
/* Note [Where the cycle is cut]
 * The period is a cycle, and the order by end (step 2 of Note [A planned
 * period]) needs a step to start from.  From step 0, the gaps round the
 * end of the period (a weight's from its update to the next forward, an
 * embedding table's from backward to the next forward) end last and
 * take the room the others left.  On a line of steps the order by end is
 * optimal for gaps kept in part; on a cycle only where no gap is across
 * the step it starts from, and where every step has one across it the
 * step chosen moves what stays.  Cut at its first step, a recommendation
 * model's training at 2x (DLRM: eight tables of 67-805 MB read in
 * forward and updated in backward in the same order, under 1.57 GiB)
 * plans 3.89 GB in; cut at step 28, the best of those tried below, 3.51
 * (the plan by density, 3.78); its tables made of 32 MiB pieces (Note
 * [Chunks of pieces] in swap/residency.c), 3.55 from step 0 and 2.95 cut
 * at step 27, against the lower bound's 2.71.
 * So the plan by end may be cut elsewhere: of up to `cuts` steps (`cut`
 * first, then the LEAST_ACROSS steps with the fewest bytes of gaps across
 * them, the nearest to a line, then steps at even intervals), the cut
 * whose plan brings in the fewest bytes, the first of equals.  All of
 * its decisions are those of the period turned to begin at the cut
 * (tested by ahead::a_cut_is_the_period_turned); the copies in are then
 * issued in order of their use from step 0, as any plan's are.
 * Fewer bytes planned is not less time where whole chunks of hundreds of
 * MB wait for each other's write-backs: DLRM cut at its best step took
 * 107.6 ms on trial against 108.9 from step 0 and 83.8 by density, over
 * pcie5, its 805 MB table now streamed whole behind a whole write-back.
 * Over nineteen traces x 3 capacities x 4 links with whole chunks, in
 * builds tried and not landed, the plan by end cut so in place of step 0
 * was faster in 4 runs and slower in 9 (by up to 2.1 and 1.9 %); as a
 * way on trial of its own, kept in 1 run, faster in 1 and slower in 2
 * (the trial's next fastest plan left late changed).  With chunks made
 * of pieces copies overlap a piece at a time and bytes are time: DLRM at
 * 2x 5.6-10.8 % faster over the four links.  So the plan cut so is a way
 * on trial of its own (Note [Ways to look ahead, measured] in plan.c)
 * where a chunk made of pieces was acquired under the schedule, tried
 * where it decides otherwise than the plan from step 0
 * (bench/results/2026-12-01-sim-cut.md).  Cost: O(k g log g) for k
 * cuts and g gaps, and k is held to CUT_WORK / g (a period of a million
 * references tries four). */
#include "graph/ahead.h"

#include <stdlib.h>
#include <string.h>

#include "core/rangetree.h"
#include "lms/lms.h"

typedef struct gap {
  uint64_t size;
  uint32_t start, end; /* steps of the two uses; end may be past period */
  uint32_t from, to;   /* their references */
  uint32_t room;       /* a fetch: the first step of its room so far */
  uint32_t cs, ce;     /* start and end counted from the cut (Note [Where
                          the cycle is cut]) */
  uint32_t weight;     /* what a byte of it saves kept, for the order by
                          density: 2 where its first use writes and
                          write-backs are counted, else 1 */
} gap_t;

/* Note [Spread out]: the gaps, in order by end, taken in bit-reversed
 * order of their rank.  O(g log g). */
static int spread_out(gap_t *g, uint32_t n) {
  gap_t *was = malloc(((size_t)n + 1) * sizeof *was);
  if (was == NULL) return -1;
  memcpy(was, g, (size_t)n * sizeof *g);
  uint32_t bits = 0, k = 0;
  while (bits < 32 && (1ull << bits) < n) bits++;
  for (uint64_t i = 0; i < (1ull << bits); i++) {
    uint32_t r = 0;
    for (uint32_t j = 0; j < bits; j++)
      r |= (uint32_t)((i >> j) & 1u) << (bits - 1 - j);
    if (r < n) g[k++] = was[r];
  }
  free(was);
  return 0;
}

static int by_end(const void *a, const void *b) {
  const gap_t *x = a, *y = b;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  if (x->start != y->start) return x->start > y->start ? -1 : 1;
  return x->from < y->from ? -1 : x->from > y->from;
}

/* Note [Where the cycle is cut]: by end counted from the cut. */
static int by_cut_end(const void *a, const void *b) {
  const gap_t *x = a, *y = b;
  if (x->ce != y->ce) return x->ce < y->ce ? -1 : 1;
  if (x->cs != y->cs) return x->cs > y->cs ? -1 : 1;
  return x->from < y->from ? -1 : x->from > y->from;
}

/* Note [Whole chunks kept]: bytes a step held inside the gap, times
 * its weight, most first; ties by end. */
static int by_density(const void *a, const void *b) {
  const gap_t *x = a, *y = b;
  double dx = (double)x->size * x->weight / (double)(x->end - x->start - 1),
         dy = (double)y->size * y->weight / (double)(y->end - y->start - 1);
  if (dx != dy) return dx > dy ? -1 : 1;
  return by_end(a, b);
}

/* Positions [a, b) of the doubled timeline (b - a <= p) on the cycle. */
static void circ_add(lms__rt_t *t, uint32_t p, uint32_t a, uint32_t b,
                     int64_t d) {
  if (a >= b) return;
  if (a >= p) {
    lms__rt_add(t, a - p, b - p, d);
  } else if (b <= p) {
    lms__rt_add(t, a, b, d);
  } else {
    lms__rt_add(t, a, p, d);
    lms__rt_add(t, 0, b - p, d);
  }
}

static int64_t circ_max(const lms__rt_t *t, uint32_t p, uint32_t a,
                        uint32_t b) {
  if (a >= p) return lms__rt_max(t, a - p, b - p);
  if (b <= p) return lms__rt_max(t, a, b);
  int64_t x = lms__rt_max(t, a, p), y = lms__rt_max(t, 0, b - p);
  return x > y ? x : y;
}

/* The last position of [a, b) over x, on the doubled timeline, or
 * UINT32_MAX. */
static uint32_t circ_last_above(const lms__rt_t *t, uint32_t p, uint32_t a,
                                uint32_t b, int64_t x) {
  size_t r;
  if (a >= p) {
    r = lms__rt_last_above(t, a - p, b - p, x);
    return r == SIZE_MAX ? UINT32_MAX : (uint32_t)r + p;
  }
  if (b > p) {
    r = lms__rt_last_above(t, 0, b - p, x);
    if (r != SIZE_MAX) return (uint32_t)r + p;
    b = p;
  }
  r = lms__rt_last_above(t, a, b, x);
  return r == SIZE_MAX ? UINT32_MAX : (uint32_t)r;
}

/* The step the copy in for x takes its room from, that room taken: b, or
 * x->end, holding none, where the step before its use has no room for it
 * beside its own chunks (Note [A copy in with no room before its use]).
 * One with no room from b is counted late. */
static uint32_t copy_room(lms__rt_t *t, uint32_t p, const int64_t *occ,
                          int64_t cap, const gap_t *x, uint32_t b,
                          lms__ahead_t *out) {
  if (circ_max(t, p, b, x->end) + (int64_t)x->size > cap) out->late_fetches++;
  if (occ[(x->end - 1) % p] + (int64_t)x->size > cap) b = x->end;
  circ_add(t, p, b, x->end, (int64_t)x->size);
  return b;
}

/* Note [A planned period], step 2: the gaps in the order given, but for
 * those already sent away (out->drop at their first use), each kept whole
 * if every step inside it has room for it.  One not kept whose second use
 * reads is fetched, with room from the step before its use, taken now as
 * the gaps after it are decided, and appended to f (which may be g: an
 * entry is written only after it was read).  Returns how many were
 * appended.  O(g log p). */
static uint32_t decide(const gap_t *g, uint32_t ng, lms__rt_t *t,
                       const int64_t *occ, int64_t cap,
                       const lms__ahead_in_t *in,
                       lms__ahead_t *out, gap_t *f) {
  uint32_t p = in->period, nf = 0;
  for (uint32_t i = 0; i < ng; i++) {
    gap_t x = g[i];
    if (out->drop[x.from]) continue;
    int forced_out = in->force != NULL && in->force[x.from] == 1;
    if (!forced_out &&
        circ_max(t, p, x.start + 1, x.end) + (int64_t)x.size <= cap) {
      circ_add(t, p, x.start + 1, x.end, (int64_t)x.size);
      out->kept_bytes += x.size;
      continue;
    }
    out->drop[x.from] = 1;
    out->drop_bytes += x.size;
    /* Note [Room a write-back holds]. */
    if (in->step_ns != NULL && in->out_bps > 0 &&
        (in->ref_access[x.from] & LMS_ACCESS_WRITE)) {
      double wb = (double)x.size / in->out_bps * 1e9, sum = 0;
      uint32_t e = x.start + 1;
      while (e < x.end && sum < wb) sum += (double)in->step_ns[e++ % p];
      if (e > x.start + 1) circ_add(t, p, x.start + 1, e, (int64_t)x.size);
    }
    /* Fetched only if the second use reads. */
    if (in->ref_access[x.to] & LMS_ACCESS_OVERWRITE) continue;
    x.room = copy_room(t, p, occ, cap, &x, x.end - 1, out);
    f[nf++] = x;
  }
  return nf;
}

/* Every gap undecided: nothing dropped, the room of the steps' own
 * chunks alone. */
static void undecide(lms__rt_t *t, const int64_t *occ, uint32_t nr,
                     lms__ahead_t *out) {
  memset(out->drop, 0, (size_t)nr);
  out->kept_bytes = out->drop_bytes = out->late_fetches = 0;
  lms__rt_build(t, occ);
}

#define TWO_BUFFER_PASSES 4 /* Note [Two buffers] */

/* Note [Two buffers]: the copies in f (n of them) sent away first, each
 * with room from the use of the copy in before it (uses: the n uses,
 * ascending), at most the reach before its own, where every step between
 * has room, else from the step before its own use.  O(n log p). */
static void two_buffers(gap_t *f, uint32_t n, const uint32_t *uses,
                        lms__rt_t *t, const int64_t *occ, int64_t cap,
                        uint32_t reach,
                        const lms__ahead_in_t *in, lms__ahead_t *out) {
  uint32_t p = in->period;
  for (uint32_t i = 0; i < n; i++) {
    gap_t *x = &f[i];
    /* The last use of a copy in before this one's, round the cycle. */
    uint32_t e = x->end % p, lo = 0, hi = n;
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (uses[mid] < e) lo = mid + 1;
      else hi = mid;
    }
    uint32_t u = lo > 0 ? uses[lo - 1] : uses[n - 1];
    uint32_t d = (e + p - u) % p, b = x->end - 1;
    uint32_t from = d == 0 || x->end - x->start - 1 < d ? x->start + 1
                                                        : x->end - d;
    if (x->end - from > reach) from = x->end - reach;
    if (from < b && circ_max(t, p, from, x->end) + (int64_t)x->size <= cap)
      b = from;
    x->room = copy_room(t, p, occ, cap, x, b, out);
    out->drop[x->from] = 1;
    out->drop_bytes += x->size;
  }
}

/* Note [Where the cycle is cut]: the gaps of order (n of them) by end
 * counted from step `cut`. */
static void cut_order(gap_t *order, uint32_t n, uint32_t p, uint32_t cut) {
  for (uint32_t i = 0; i < n; i++) {
    order[i].cs = (order[i].start + p - cut) % p;
    order[i].ce = order[i].cs + (order[i].end - order[i].start);
  }
  qsort(order, n, sizeof *order, by_cut_end);
}

#define MAX_CUTS 64          /* steps tried as the cut, at most */
#define LEAST_ACROSS 4       /* of them, those fewest bytes stay across */
#define CUT_WORK 4000000ull  /* gaps decided over all the cuts tried */

static int among(const uint32_t *c, uint32_t k, uint32_t x) {
  for (uint32_t q = 0; q < k; q++)
    if (c[q] == x) return 1;
  return 0;
}

/* Note [Where the cycle is cut]: the steps to try, `first` first, then
 * those with the fewest bytes of gaps across them, then steps at even
 * intervals; at most n (<= MAX_CUTS), written to c.  Returns how many,
 * 0 with no memory. */
static uint32_t cut_steps(const gap_t *g, uint32_t ng, uint32_t p,
                          uint32_t first, uint32_t n, uint32_t *c) {
  int64_t *across = calloc(2 * (size_t)p + 1, sizeof *across);
  if (across == NULL) return 0;
  for (uint32_t i = 0; i < ng; i++) {
    across[g[i].start + 1] += (int64_t)g[i].size;
    across[g[i].end] -= (int64_t)g[i].size;
  }
  for (size_t i = 1; i < 2 * (size_t)p; i++) across[i] += across[i - 1];
  for (uint32_t i = 0; i < p; i++) across[i] += across[i + p];
  uint32_t k = 0;
  c[k++] = first;
  for (uint32_t j = 0; j < LEAST_ACROSS && k < n; j++) {
    uint32_t best = UINT32_MAX;
    for (uint32_t i = 0; i < p; i++)
      if (!among(c, k, i) && (best == UINT32_MAX || across[i] < across[best]))
        best = i;
    if (best == UINT32_MAX) break;
    c[k++] = best;
  }
  for (uint32_t i = 0; i < n && k < n; i++) {
    uint32_t x = (uint32_t)((uint64_t)i * p / n);
    if (!among(c, k, x)) c[k++] = x;
  }
  free(across);
  return k;
}

/* Note [Where the cycle is cut]: of the steps cut_steps gives, the cut
 * whose plan by end brings in the fewest bytes (the first of equals),
 * each decided in full into order and scratch; the tree and out are
 * left undecided.  Returns 0, or -1 with no memory. */
static int best_cut(const gap_t *gaps, uint32_t ng, lms__rt_t *t,
                    const int64_t *occ, int64_t cap,
                    const lms__ahead_in_t *in, lms__ahead_t *out,
                    gap_t *order, uint32_t *cut) {
  uint32_t p = in->period, c[MAX_CUTS];
  uint32_t n = in->cuts < MAX_CUTS ? in->cuts : MAX_CUTS;
  uint64_t afford = CUT_WORK / (ng ? ng : 1);
  if (afford < n) n = afford > 1 ? (uint32_t)afford : 1;
  if (n <= 1) return 0;
  gap_t *scratch = malloc(((size_t)ng + 1) * sizeof *scratch);
  uint32_t k = scratch ? cut_steps(gaps, ng, p, *cut, n, c) : 0;
  if (k == 0) {
    free(scratch);
    return -1;
  }
  uint64_t least = UINT64_MAX;
  for (uint32_t i = 0; i < k; i++) {
    memcpy(order, gaps, (size_t)ng * sizeof *gaps);
    cut_order(order, ng, p, c[i]);
    undecide(t, occ, in->nrefs, out);
    uint32_t nf = decide(order, ng, t, occ, cap, in, out, scratch);
    uint64_t in_bytes = 0;
    for (uint32_t f = 0; f < nf; f++) in_bytes += scratch[f].size;
    if (in_bytes < least) {
      least = in_bytes;
      *cut = c[i];
    }
  }
  undecide(t, occ, in->nrefs, out);
  free(scratch);
  return 0;
}

/* The gaps forced to be decided first go to the front of order, each
 * part in the order it had.  O(n). */
static void force_first(gap_t *order, uint32_t n, const uint8_t *force) {
  uint32_t w = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (force[order[i].from] != 2) continue;
    gap_t x = order[i];
    memmove(order + w + 1, order + w, (size_t)(i - w) * sizeof *order);
    order[w++] = x;
  }
}

static int by_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

void lms__ahead_free(lms__ahead_t *a) {
  if (a == NULL) return;
  free(a->drop);
  free(a->fetch_first);
  free(a->fetch_ref);
  memset(a, 0, sizeof *a);
}

lms_status_t lms__ahead_build(const lms__ahead_in_t *in, lms__ahead_t *out) {
  memset(out, 0, sizeof *out);
  uint32_t p = in->period, nr = in->nrefs, nk = in->nkeys;
  if (p == 0) return LMS_OK;
  uint32_t reach = in->reach ? in->reach : 1;
  lms__rt_t t = {.n = p};
  /* Per key its references in order (a counting sort), the gaps, and the
   * issue step of each fetch. */
  uint32_t *kfirst = calloc((size_t)nk + 1, sizeof *kfirst);
  uint32_t *krefs = malloc(((size_t)nr + 1) * sizeof *krefs);
  gap_t *gaps = malloc(((size_t)nr + 1) * sizeof *gaps);
  uint32_t *issue = malloc(((size_t)nr + 1) * sizeof *issue);
  /* The gaps in the order they are decided (the spread plan decides
   * more than once). */
  gap_t *order = malloc(((size_t)nr + 1) * sizeof *order);
  int64_t *occ = calloc(p, sizeof *occ);
  t.max = malloc(lms__rt_words(p) * sizeof *t.max);
  t.add = malloc(lms__rt_words(p) * sizeof *t.add);
  out->drop = calloc((size_t)nr + 1, 1);
  out->fetch_first = calloc((size_t)p + 1, sizeof *out->fetch_first);
  out->fetch_ref = malloc(((size_t)nr + 1) * sizeof *out->fetch_ref);
  lms_status_t st = LMS_ERR_HOST_OOM;
  if (!kfirst || !krefs || !gaps || !issue || !occ || !t.max || !t.add ||
      !order ||
      !out->drop || !out->fetch_first || !out->fetch_ref)
    goto done;
  out->period = p;

  for (uint32_t i = 0; i < nr; i++) {
    occ[in->ref_step[i]] += (int64_t)in->key_size[in->ref_key[i]];
    kfirst[in->ref_key[i] + 1]++;
  }
  for (uint32_t k = 0; k < nk; k++) kfirst[k + 1] += kfirst[k];
  for (uint32_t i = 0; i < nr; i++) krefs[kfirst[in->ref_key[i]]++] = i;
  for (uint32_t k = nk; k > 0; k--) kfirst[k] = kfirst[k - 1];
  kfirst[0] = 0;
  lms__rt_build(&t, occ);

  /* The gaps with a step inside them; one without is kept for nothing. */
  uint32_t ng = 0;
  for (uint32_t k = 0; k < nk; k++) {
    uint32_t a = kfirst[k], b = kfirst[k + 1];
    for (uint32_t j = a; j < b; j++) {
      uint32_t from = krefs[j], to;
      uint32_t s = in->ref_step[from], e;
      if (j + 1 < b) {
        to = krefs[j + 1];
        e = in->ref_step[to];
      } else {
        if (!in->key_lives[k]) break;
        to = krefs[a];
        e = in->ref_step[to] + p;
      }
      if (e <= s + 1) continue;
      uint32_t w = in->dense == 2 &&
                           (in->ref_access[from] & LMS_ACCESS_WRITE) ? 2 : 1;
      gaps[ng++] = (gap_t){in->key_size[k], s, e, from, to, 0, s, e, w};
    }
  }
  qsort(gaps, ng, sizeof *gaps, by_end);
  if (in->spread && spread_out(gaps, ng) != 0) goto done;

  int64_t cap = (int64_t)in->capacity;
  int dense = !in->spread && in->dense;
  /* Note [Where the cycle is cut]: the plan by end alone. */
  uint32_t cut = 0;
  if (!in->spread && !dense) {
    cut = in->cut < p ? in->cut : 0;
    if (in->cuts > 1 &&
        best_cut(gaps, ng, &t, occ, cap, in, out, order, &cut) != 0)
      goto done;
  }
  /* The fetched gaps go to the front of gaps[]. */
  memcpy(order, gaps, (size_t)ng * sizeof *gaps);
  if (dense) qsort(order, ng, sizeof *order, by_density);
  else if (cut != 0) cut_order(order, ng, p, cut);
  if (in->force != NULL) force_first(order, ng, in->force);
  out->cut = cut;
  uint32_t nf = decide(order, ng, &t, occ, cap, in, out, gaps);
  /* Note [Two buffers]: each pass gives the copies in of the one before
   * their second buffer, and decides the rest again; the copies in only
   * grow, so it ends when a pass adds none (or after TWO_BUFFER_PASSES). */
  for (int pass = 0; in->spread && nf > 0 && pass < TWO_BUFFER_PASSES;
       pass++) {
    /* Their uses, in issue[] until the issue steps are known. */
    for (uint32_t g = 0; g < nf; g++) issue[g] = gaps[g].end % p;
    qsort(issue, nf, sizeof *issue, by_u32);
    undecide(&t, occ, nr, out);
    two_buffers(gaps, nf, issue, &t, occ, cap, reach, in, out);
    uint32_t more = decide(order, ng, &t, occ, cap, in, out, gaps + nf);
    nf += more;
    if (more == 0) break;
  }
  if (in->spread || dense || cut != 0) qsort(gaps, nf, sizeof *gaps, by_end);
  /* Each fetch, in order of use, starts from the step after the last one
   * inside its reach with no room for it; in order (Note [Copies in by
   * their use]), not before `after`, the latest room of the fetches of
   * strictly earlier uses (`next`: of those so far), on the doubled
   * timeline and never past this fetch's end - 1. */
  uint32_t after = 0, next = 0;
  for (uint32_t g = 0; g < nf; g++) {
    const gap_t *x = &gaps[g];
    uint32_t lo = x->start + 1, from = x->room;
    if (x->end - lo > reach) lo = x->end - reach;
    if (g > 0 && x->end != gaps[g - 1].end) after = next;
    if (in->in_order && lo < after) lo = after;
    if (from < lo) from = lo; /* its room from x->room holds from lo too */
    if (from > next) next = from;
    if (lo < from) {
      uint32_t full = circ_last_above(&t, p, lo, from, cap - (int64_t)x->size);
      uint32_t at = full == UINT32_MAX ? lo : full + 1;
      circ_add(&t, p, at, from, (int64_t)x->size);
      from = at;
    }
    issue[g] = from % p;
    out->fetch_first[issue[g] + 1]++;
    out->fetch_bytes += x->size;
  }
  for (uint32_t s = 0; s < p; s++) out->fetch_first[s + 1] += out->fetch_first[s];
  /* Placed by issue step, each step's in order of use (the gaps are). */
  for (uint32_t g = 0; g < nf; g++)
    out->fetch_ref[out->fetch_first[issue[g]]++] = gaps[g].to;
  for (uint32_t s = p; s > 0; s--) out->fetch_first[s] = out->fetch_first[s - 1];
  out->fetch_first[0] = 0;
  out->nfetch = nf;
  st = LMS_OK;
done:
  free(kfirst);
  free(krefs);
  free(gaps);
  free(issue);
  free(order);
  free(occ);
  free(t.max);
  free(t.add);
  if (st != LMS_OK) lms__ahead_free(out);
  return st;
}

/* Note [A plan searched by its time]: a write-back queued, by its end;
 * and a planned copy in waiting for room, by the step of its use (on the
 * model's timeline of three periods). */
#define MODEL_PERIODS 3u /* the model runs the period so often, from empty */

typedef struct wb_q {
  double end;
  int64_t size;
} wb_q_t;

typedef struct wait_in {
  uint64_t need;
  uint32_t key;
} wait_in_t;

/* The time from t on when sz more bytes fit, the write-backs ended by
 * then given back. */
static double wb_room(const wb_q_t *q, size_t *qh, size_t qt, int64_t *used,
                      int64_t cap, int64_t sz, double t) {
  while (*used + sz > cap && *qh < qt) {
    if (q[*qh].end > t) t = q[*qh].end;
    *used -= q[*qh].size;
    (*qh)++;
  }
  return t;
}

/* Note [A plan searched by its time]: the iteration the model gives the
 * plan a built from in, in nanoseconds; 0 where it cannot say (no memory,
 * no rates).  O(r + p) for r references and p steps where the plan
 * issues its copies in by their use (each joins the waiting ones by an
 * insertion from the end). */
double lms__ahead_time(const lms__ahead_in_t *in, const lms__ahead_t *a,
                       const uint64_t *step_ns, double h2d, double d2h) {
  uint32_t p = in->period, nr = in->nrefs, nk = in->nkeys;
  if (p == 0 || !(h2d > 0) || !(d2h > 0)) return 0;
  uint8_t *res = calloc((size_t)nk + 1, 1), *dirty = calloc((size_t)nk + 1, 1);
  double *pend = malloc(((size_t)nk + 1) * sizeof *pend);
  uint32_t *last = malloc(((size_t)nk + 1) * sizeof *last);
  uint32_t *sfirst = calloc((size_t)p + 1, sizeof *sfirst);
  /* At most a write-back and a copy in a reference a period. */
  wb_q_t *q = malloc(((size_t)nr * MODEL_PERIODS + 1) * sizeof *q);
  wait_in_t *wait = malloc(((size_t)nr * MODEL_PERIODS + 1) * sizeof *wait);
  uint32_t nw = 0;
  double result = 0;
  if (!res || !dirty || !pend || !last || !sfirst || !q || !wait) goto done;
  for (uint32_t k = 0; k < nk; k++) pend[k] = -1;
  for (uint32_t i = 0; i < nr; i++) {
    last[in->ref_key[i]] = i;
    sfirst[in->ref_step[i] + 1]++;
  }
  for (uint32_t s = 0; s < p; s++) sfirst[s + 1] += sfirst[s];
  int64_t cap = (int64_t)in->capacity, used = 0;
  double in_free = 0, out_free = 0, tend = 0, mark = 0;
  size_t qh = 0, qt = 0;
  for (uint32_t g = 0; g < MODEL_PERIODS * p; g++) {
    uint32_t s = g % p;
    if (g == (MODEL_PERIODS - 1) * p) mark = tend;
    /* What has been written home by the step's start is room again. */
    while (qh < qt && q[qh].end <= tend) used -= q[qh++].size;
    /* The copies in the plan issues here join those waiting, by their
     * use, and start in that order while each has room; the rest wait
     * for the next step (as planned_prefetch in plan.c tries them).  One
     * whose use has begun is the acquire's, below. */
    for (uint32_t f = a->fetch_first[s]; f < a->fetch_first[s + 1]; f++) {
      uint32_t r = a->fetch_ref[f];
      uint64_t need = g + (in->ref_step[r] + p - s) % p;
      uint32_t j = nw++;
      while (j > 0 && wait[j - 1].need > need) {
        wait[j] = wait[j - 1];
        j--;
      }
      wait[j] = (wait_in_t){need, in->ref_key[r]};
    }
    uint32_t j = 0, kept = 0;
    for (; j < nw; j++) {
      uint32_t k = wait[j].key;
      if (res[k] || pend[k] >= 0 || wait[j].need <= g) continue;
      int64_t sz = (int64_t)in->key_size[k];
      if (used + sz > cap) break;
      double st = in_free > tend ? in_free : tend;
      in_free = st + (double)sz / h2d * 1e9;
      pend[k] = in_free;
      used += sz;
    }
    for (; j < nw; j++) wait[kept++] = wait[j];
    nw = kept;
    /* The step's chunks not on the device nor coming come now, each once
     * its room is free; the step starts once they are all in. */
    double start = tend;
    for (uint32_t i = sfirst[s]; i < sfirst[s + 1]; i++) {
      uint32_t k = in->ref_key[i];
      int64_t sz = (int64_t)in->key_size[k];
      if (!res[k] && pend[k] < 0) {
        double st = wb_room(q, &qh, qt, &used, cap, sz, tend);
        if ((in->ref_access[i] & LMS_ACCESS_READ) &&
            !(in->ref_access[i] & LMS_ACCESS_OVERWRITE)) {
          if (in_free > st) st = in_free;
          in_free = st + (double)sz / h2d * 1e9;
          pend[k] = in_free;
        } else {
          pend[k] = st;
        }
        used += sz;
      }
      if (pend[k] > start) start = pend[k];
    }
    tend = start + (double)step_ns[s];
    /* It leaves what it wrote dirty, and what the plan sends away after
     * it (and what is allocated afresh each period, after its last use)
     * leaves: clean, its room at once; dirty, once written home. */
    for (uint32_t i = sfirst[s]; i < sfirst[s + 1]; i++) {
      uint32_t k = in->ref_key[i];
      res[k] = 1;
      pend[k] = -1;
      if (in->ref_access[i] & LMS_ACCESS_WRITE) dirty[k] = 1;
    }
    for (uint32_t i = sfirst[s]; i < sfirst[s + 1]; i++) {
      uint32_t k = in->ref_key[i];
      int64_t sz = (int64_t)in->key_size[k];
      int gone = !in->key_lives[k] && last[k] == i;
      if (!a->drop[i] && !gone) continue;
      if (!res[k]) continue;
      res[k] = 0;
      if (dirty[k] && !gone) {
        /* Home before leaving: a chunk the step only reads goes home
         * while it computes. */
        double from = (in->ref_access[i] & LMS_ACCESS_WRITE) ? tend : start;
        double st = out_free > from ? out_free : from;
        out_free = st + (double)sz / d2h * 1e9;
        q[qt++] = (wb_q_t){out_free, sz};
      } else {
        used -= sz;
      }
      dirty[k] = 0;
    }
  }
  result = tend - mark;
done:
  free(wait);
  free(res);
  free(dirty);
  free(pend);
  free(last);
  free(sfirst);
  free(q);
  return result;
}
