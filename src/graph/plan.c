/* plan.c - the schedule at run time: what each step uses, when each chunk
 * is next needed, and prefetching the window ahead.
 *
 * Note [Three sources of a schedule]
 * Declared: a framework names the chunks of each step (lms_schedule_step);
 * the schedule is exact and repeats with its length as period.
 * Learned: every step's references are recorded; a step is known by its
 * signature, the sequence of (size, access) of its references, which does
 * not depend on chunk identities, so an iteration that allocates its
 * activations afresh still looks like the one before.  When a step's
 * signature equals that of the first recorded step, the steps recorded so
 * far are taken as the period; each later step is checked against the
 * step the period predicts, and a mismatch starts learning over from that
 * step.  Chunks are named by keys: the serial number of the chunk seen at
 * that place in the recorded period.  As each step of a later iteration
 * is seen, its chunks are bound to the keys of the predicted step, so a
 * freshly allocated activation takes over its predecessor's key; a
 * persistent chunk keeps its own serial as its key.  So the second
 * iteration already runs on a prediction, from the step after the first
 * repeated one.
 * Stack: with only allocations and frees to go by, the training stack
 * discipline says the newest live chunk is needed soonest (forward
 * allocates, backward frees in reverse), so a chunk's next use is ranked
 * by how many chunks were allocated after it, and prefetch brings in the
 * newest live chunks first.
 *
 * Note [Prefetch window]
 * At each step boundary the planner walks the next `steps` steps of the
 * schedule in order and asks the swap module to bring in each host-homed
 * chunk that is not resident and holds data, until the chunks ahead that
 * are prefetched but not yet used add up to the window's bytes, or a
 * prefetch finds no room.  The swap module takes room only from chunks
 * needed later than the one coming in (Note [Choosing victims]), so
 * prefetch never pushes out what is needed sooner and never goes past the
 * device budget: it allocates from the same capped device cache as every
 * other chunk, without blocking.
 *
 * Invariants: `live` maps the serial of every live chunk to the chunk;
 * when a schedule is active, 0 <= pos < period, and every key of its
 * references has a use list in ascending step order. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/map.h"
#include "core/log.h"
#include "core/options.h"
#include "core/period.h"
#include "core/rank.h"
#include "core/stats.h"
#include "graph/ahead.h"
#include "graph/graph.h"
#include "swap/swap.h"

/* ---- A map from 64-bit keys (never 0) to 64-bit values ------------------ */

/* Note [One hash map] in core/map.h. */
LMS__MAP(u64map, uint64_t, lms__map_zalloc, lms__map_release)

/* ---- The planner -------------------------------------------------------- */

int lms__plan_force;

typedef struct pref {
  uint64_t key;    /* a serial */
  uint64_t size;
  unsigned access;
} pref_t;

typedef struct pstep {
  uint32_t first, n;
  uint64_t sig;
  uint64_t serial; /* the last serial handed out when it was recorded */
  uint64_t ns;     /* its compute, when last seen */
} pstep_t;

typedef enum mode { MODE_NONE, MODE_LEARNING, MODE_ACTIVE } mode_t_;

/* Note [Ways to look ahead, measured]: the iterations a trial is in. */
enum {
  TRIAL_NONE,          /* no plan, or no trial yet */
  TRIAL_START,         /* until an iteration begins under the schedule */
  TRIAL_WINDOW,        /* the window looks ahead, until it settles */
  TRIAL_SPREAD,        /* the spread plan likewise (Note [Spread
                          out] in ahead.c) */
  TRIAL_ORDER,         /* the spread plan bringing chunks in by their
                          use (Note [Copies in by their use] in ahead.c) */
  TRIAL_PLAN,          /* the plan likewise */
  TRIAL_DENSE,         /* the plan deciding by density, where it decides
                          otherwise (Note [Whole chunks kept] in ahead.c) */
  TRIAL_DENSE_ORDER,   /* ... and that bringing chunks in by their use */
  TRIAL_DENSE_OUT,     /* the plan by density counting write-backs, where
                          it decides otherwise than by density (Note
                          [Whole chunks kept] in ahead.c) */
  TRIAL_DENSE_HOLD,    /* the plan by density holding the room of its
                          write-backs, where it decides otherwise than by
                          density (Note [Room a write-back holds] in
                          ahead.c) */
  TRIAL_DENSE_SEARCH,  /* the plan by density in order with the decisions
                          its time model finds faster, where it decides
                          otherwise than by density (Note [A plan
                          searched by its time] in ahead.c) */
  TRIAL_CUT,           /* the plan by end cut where it brings in the least,
                          where that is not step 0 and it decides
                          otherwise (Note [Where the cycle is cut] in
                          ahead.c) */
  TRIAL_LATE,          /* the plan chosen, its dirty chunks left until
                          their room is needed (Note [Leaving late]) */
  TRIAL_LATE2,         /* the next fastest likewise, where leaving late
                          did not make the one chosen faster */
  TRIAL_DONE,          /* the fastest looks ahead from now on */
  TRIAL_WATCH          /* ... watched: Note [The trial keeps score] */
};
/* The most iterations each way runs on trial. */
#define TRIAL_MAX 6u
/* Note [The trial keeps score]: the iterations after the trial not
 * counted, and the most counted. */
#define WATCH_SKIP 3u
#define WATCH_N 4u

/* Learning stops past this many references: a program with no period
 * that short gets no learned schedule rather than unbounded memory. */
#define PLAN_MAX_REFS (1u << 22)

struct lms__plan {
  lms__swap_t *swap;
  lms__policy_t policy;
  lms__window_t window;
  lms__sched_source_t source;
  int declared;          /* the schedule was declared through the API */
  int declared_started;  /* its step 0 has begun */
  int declare_pending;   /* steps declared since the schedule was built
                            (Note [Declaring is linear]) */
  uint64_t t;            /* absolute number of the current step */
  uint64_t gen;          /* a chunk's plan_key holds if its plan_gen is
                            this (drop_schedule moves it on) */

  /* The record: steps seen (learning) or the schedule (active). */
  pstep_t *steps;
  uint32_t nsteps, steps_cap;
  pref_t *refs;
  uint32_t nrefs, refs_cap;
  mode_t_ mode;
  uint32_t period;       /* active: steps [0, period) are the schedule */
  uint32_t pos;          /* active: position of the current step */
  uint64_t step_serial;  /* the last serial handed out before the current
                            step began */
  uint64_t acquire_serial; /* ... when the last acquire was seen */
  uint64_t relearns;
  /* Note [A false period]: steps checked since the period was taken (up
   * to one period), recorded past the schedule's as they were seen (the
   * period's length once one could not be recorded: it then counts as
   * checked out whole); and the first false period taken from this
   * record's start (0: none). */
  uint32_t pass_steps, pass_refs;
  uint32_t false_base;
  uint64_t false_periods; /* the times one was found false */

  /* The current step's references, as seen. */
  pref_t *cur;
  uint32_t ncur, cur_cap;

  /* Use lists per key of the active schedule. */
  u64map_t key_index;    /* key -> dense index */
  uint32_t *use_first, *use_count, *uses;

  u64map_t live;         /* serial -> (uintptr_t) chunk */
  /* The window's working set, kept as it slides (Note [Working set of
   * the window]): steps [ws_first, ws_first + ws_len) of the schedule,
   * cyclic; per key, how many of its references are in it. */
  uint32_t *ref_key;     /* dense key of each reference of the schedule */
  lms_chunk_t **key_chunk; /* per dense key: resolve(key), kept current */
  uint64_t *key_size;
  uint32_t *ws_count;
  uint32_t ws_first, ws_len;
  uint64_t ws_bytes;
  int ws_valid;
  u64map_t bind;         /* key -> serial of the chunk now playing it */
  lms__period_starts_t starts; /* learning: the steps a period may start
                                 at (Note [Where a period starts]) */
  int implicit;          /* the step closing was ended by an acquire */

  /* The trace being recorded, or NULL. */
  lms__workload_t *trace;
  u64map_t trace_ids;    /* serial -> chunk index + 1 in the trace */
  char trace_path[LMS__PATH_MAX];
  uint64_t pending_ns;   /* compute of the current step */
  uint64_t ahead_limit;  /* bytes the window looks ahead now; 0: not yet
                            (Note [A window that adapts]) */
  int64_t seen_late, seen_hits; /* the swap's counters at the last step */
  /* Note [Walking only what the window acts on]: per reference of the
   * schedule, its step and whether its chunk may need the window (a bit
   * set, with two levels of summary); per key, its references. */
  uint32_t *ref_step;
  uint32_t *key_refs_first, *key_refs;
  uint64_t *act[3];
  uint64_t horizon;      /* active: the first step past the window's
                            working set (Note [Working set of the window]);
                            LMS__NEVER when it all fits */
  /* Note [A planned period] in ahead.c: with the schedule policy, the
   * period's plan, and the fetches it has issued that are not done, by
   * the absolute step of the use they serve. */
  lms__ahead_t ahead;
  int have_plan;         /* ahead holds the plan of this schedule */
  int planned;           /* the plan looks ahead now, not the window */
  int late;              /* dirty chunks the plan sends away stay until
                            their room is needed (Note [Leaving late]) */
  uint64_t left_late;    /* the times one stayed so */
  uint64_t plan_in;      /* the chunk bytes the plan built brings in an
                            iteration */
  int spread;            /* ahead is the spread plan (Note [Spread
                            out] in ahead.c) */
  int order;             /* ... and its copies in go by their use (Note
                            [Copies in by their use] in ahead.c) */
  int dense;             /* ahead is the plan deciding by density (Note
                            [Whole chunks kept] in ahead.c): 1, 2
                            counting write-backs, 3 holding their room
                            (Note [Room a write-back holds]), 4 in order
                            and searched by its time (Note [A plan
                            searched by its time]) */
  int cut;               /* ahead is the plan by end cut where it brings
                            in the least (Note [Where the cycle is cut]
                            in ahead.c) */
  int saw_pieces;        /* a chunk made of pieces was acquired under
                            this schedule (Note [Chunks of pieces] in
                            swap/residency.c) */
  int trial;             /* Note [Ways to look ahead, measured] */
  uint64_t trial_start, trial_window_ns, trial_plan_ns, trial_spread_ns;
  uint64_t trial_late_ns; /* the faster plan leaving late */
  uint64_t trial_order_ns; /* the spread plan in order */
  uint64_t trial_dense_ns; /* the plan deciding by density */
  uint64_t trial_dorder_ns, trial_dorder_in; /* ... in order */
  uint64_t trial_dout_ns, trial_dout_in; /* ... counting write-backs */
  uint64_t trial_dhold_ns, trial_dhold_in; /* ... holding their room */
  uint64_t trial_dsearch_ns, trial_dsearch_in; /* ... searched */
  uint32_t searched;      /* decisions the last search changed */
  uint64_t trial_cut_ns, trial_cut_in; /* the plan by end cut where it
                             brings in the least */
  uint32_t cut_step;      /* ... its cut, once built on trial */
  uint64_t cut_plan_in;   /* ... the bytes it plans to bring in */
  int cut_alike;          /* ... it decides as the plan by end: not tried */
  int dense_alike;        /* the plan by density sends chunks away after
                             the uses the plan by end does: not tried */
  uint64_t end_plan_in, dense_plan_in; /* the bytes each plans to bring
                             in, once both were built on trial */
  /* The bytes each way brought in, its iteration timed on trial. */
  uint64_t trial_in0, trial_window_in, trial_plan_in, trial_dense_in;
  uint64_t trial_spread_in, trial_order_in, trial_late_in;
  uint64_t trial_late2_ns, trial_late2_in; /* the next fastest leaving late */
  int late_kind[2];      /* the kinds of plan tried leaving late */
  int late_left[2];      /* ... and whether each left a dirty chunk */
  uint64_t trial_left0;  /* left_late when the way on trial began */
  uint64_t sent_dirty;   /* dirty chunks a plan sent away, so far */
  uint64_t trial_dirty0; /* sent_dirty when the way on trial began */
  unsigned kind_dirty;   /* bit k: the kind kinds[k] sent a dirty chunk
                            away on trial (Note [Leaving late]) */
  uint64_t trial_prev;   /* the last iteration timed on trial */
  int window_back;       /* the window was kept after the plans ran: it
                            starts over (Note [Back to the window]) */
  uint64_t windows_back; /* the times it did */
  /* Note [The trial keeps score]: the way kept's iteration on trial; the
   * fastest other way on trial, as a kind (-1: the window) and whether
   * it leaves dirty chunks late, and its iteration on trial; the kept
   * way's iterations since the trial, how many of the last were slower
   * than that by 2 % and their sum. */
  uint64_t keep_ns, alt_ns, alt_in;
  int alt_kind, alt_late;
  uint32_t watch_n, watch_slow;
  uint64_t watch_sum;
  uint64_t ways_replaced; /* the times a way kept was replaced so */
  uint64_t replaced_ns;   /* ... the mean of the slow iterations then */
  uint32_t trial_n;      /* ... and how many the way now on trial ran */
  struct pending {
    uint32_t ref;
    uint64_t need;
  } *pend;
  uint32_t npend, pend_cap;

};

static int grow_arr(void **v, uint32_t *cap, uint32_t len, size_t elem) {
  if (len < *cap) return 0;
  uint32_t ncap = *cap ? *cap * 2 : 64;
  void *p = realloc(*v, (size_t)ncap * elem);
  if (p == NULL) return -1;
  *v = p;
  *cap = ncap;
  return 0;
}

static lms_chunk_t *live_chunk(const lms__plan_t *p, uint64_t serial) {
  uint64_t *v = u64map_find(&p->live, serial);
  return v ? (lms_chunk_t *)(uintptr_t)*v : NULL;
}

/* The chunk playing `key` now, or NULL. */
static lms_chunk_t *resolve(const lms__plan_t *p, uint64_t key) {
  uint64_t *b = u64map_find(&p->bind, key);
  return live_chunk(p, b ? *b : key);
}

static uint64_t step_sig(const pref_t *r, uint32_t n) {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t i = 0; i < n; i++) {
    h ^= r[i].size * 8 + r[i].access;
    h *= 1099511628211ull;
    h ^= h >> 29;
  }
  return h ^ n;
}

/* ---- Next use --------------------------------------------------------- */

static uint64_t next_use(void *arg, const lms_chunk_t *c) {
  const lms__plan_t *p = arg;
  if (p->mode == MODE_ACTIVE) {
    if (c->plan_key == 0 || c->plan_gen != p->gen) return LMS__NEVER;
    uint32_t ki = c->plan_kidx;
    const uint32_t *u = p->uses + p->use_first[ki];
    uint32_t n = p->use_count[ki];
    if (n == 0) return LMS__NEVER; /* only ever overwritten */
    /* The first use at or after pos; else the first one, next period. */
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
      uint32_t mid = (lo + hi) / 2;
      if (u[mid] < p->pos) lo = mid + 1;
      else hi = mid;
    }
    if (lo == n && c->serial != c->plan_key) {
      /* Its next use is in the next iteration, where a chunk allocated
       * afresh will play its part: this one is not needed again. */
      return LMS__NEVER;
    }
    uint64_t d = lo < n ? u[lo] - p->pos : u[0] + p->period - p->pos;
    return p->t + d;
  }
  if (p->source == LMS_SCHED_STACK && !p->declared)
    return p->t + (p->swap->serial - c->serial);
  return LMS__NEVER;
}

/* ---- The active schedule ------------------------------------------------ */

static void drop_schedule(lms__plan_t *p) {
  /* Every chunk's next use becomes unknown: the index goes. */
  if (p->swap->use_index) lms__swap_use_index(p->swap, 0);
  u64map_clear(&p->key_index);
  u64map_clear(&p->bind);
  free(p->use_first);
  free(p->use_count);
  free(p->uses);
  p->use_first = p->use_count = p->uses = NULL;
  free(p->ref_key);
  free(p->key_chunk);
  p->key_chunk = NULL;
  p->window_back = 0;
  free(p->key_size);
  free(p->ws_count);
  free(p->ref_step);
  free(p->key_refs_first);
  free(p->key_refs);
  for (int i = 0; i < 3; i++) free(p->act[i]);
  memset(p->act, 0, sizeof p->act);
  p->key_refs_first = p->key_refs = p->ref_step = NULL;
  p->ref_key = p->ws_count = NULL;
  p->key_size = NULL;
  p->ws_valid = 0;
  lms__ahead_free(&p->ahead);
  p->have_plan = p->planned = p->spread = p->order = p->dense = 0;
  p->trial = TRIAL_NONE;
  p->npend = 0;
  /* Every chunk's key lapses with the generation: O(1), not a walk over
   * every chunk (setup may relearn thousands of times). */
  p->gen++;
}

/* Note [Walking only what the window acts on]
 * The window's walk (prefetch()) visits every reference of the steps it
 * reaches, up to window.steps of them, at every step: O(window) a step,
 * and at 1,000,000 references an iteration that was 40 % of `lms sim`'s
 * time though nearly every reference visited was of a chunk already
 * resident.  A reference matters to the walk only if its chunk is
 * host-homed, not overwritten there, and either resident because
 * prefetched (its bytes count ahead) or away with bytes to bring in: a
 * reference of a resident chunk not prefetched, or of one with nothing
 * to bring, lets the walk go on unchanged, or stops it where the next
 * reference that matters would stop it too (both past the near steps,
 * with the bytes ahead already over the limit), and neither prefetches.
 * So a bit per reference says whether it may matter, and the walk goes
 * from set bit to set bit, O(1) each with two levels of summary words.
 * A bit is set again whenever its chunk may have come to matter: when a
 * key is bound to another chunk, when a chunk leaves the device
 * (lms__plan_on_change from residency.c), when one is prefetched.  A bit
 * left set where nothing matters only costs a visit, so nothing clears
 * them but a look.  Each change costs the references of the chunk's key:
 * O(1) amortised per reference, as long as a chunk has a few references
 * an iteration. */
static void act_set(lms__plan_t *p, uint32_t i, int on) {
  uint64_t m = 1ull << (i & 63);
  if (on) {
    p->act[0][i >> 6] |= m;
    p->act[1][i >> 12] |= 1ull << ((i >> 6) & 63);
    p->act[2][i >> 18] |= 1ull << ((i >> 12) & 63);
  } else if (p->act[0][i >> 6] & m) {
    p->act[0][i >> 6] &= ~m;
    if (p->act[0][i >> 6] == 0) {
      p->act[1][i >> 12] &= ~(1ull << ((i >> 6) & 63));
      if (p->act[1][i >> 12] == 0)
        p->act[2][i >> 18] &= ~(1ull << ((i >> 12) & 63));
    }
  }
}

static uint32_t ctz64(uint64_t x) { return (uint32_t)__builtin_ctzll(x); }

/* The first set bit at or after i and before `end`, else `end`. */
static uint32_t act_next(const lms__plan_t *p, uint32_t i, uint32_t end) {
  if (i >= end) return end;
  uint32_t w = i >> 6;
  uint64_t x = p->act[0][w] & (~0ull << (i & 63));
  if (x == 0) {
    /* The next word with a bit, through the summaries. */
    uint32_t w1 = w + 1, s = w1 >> 6;
    uint64_t y = (w1 & 63) ? p->act[1][s] & (~0ull << (w1 & 63)) : 0;
    if ((w1 & 63) == 0 || y == 0) {
      uint32_t s1 = (w1 & 63) ? s + 1 : s, t = s1 >> 6;
      uint32_t nsum = (p->nrefs + 4095) >> 12;
      if (s1 >= nsum) return end;
      uint64_t z = p->act[2][t] & (~0ull << (s1 & 63));
      uint32_t ntop = (nsum + 63) >> 6;
      while (z == 0) {
        if (++t >= ntop) return end;
        z = p->act[2][t];
      }
      s = (t << 6) + ctz64(z);
      y = p->act[1][s];
    }
    w = (s << 6) + ctz64(y);
    x = p->act[0][w];
  }
  uint32_t r = (w << 6) + ctz64(x);
  return r < end ? r : end;
}

/* May reference i matter to the window's walk?  (A look: see the note.) */
static int act_of(const lms__plan_t *p, uint32_t i) {
  const lms_chunk_t *c = p->key_chunk[p->ref_key[i]];
  return c != NULL && c->host_homed &&
         !(p->refs[i].access & LMS_ACCESS_OVERWRITE) &&
         (c->dptr != NULL ? c->prefetched : c->has_data);
}

static void act_key(lms__plan_t *p, uint32_t k) {
  if (p->act[0] == NULL) return;
  for (uint32_t j = p->key_refs_first[k]; j < p->key_refs_first[k + 1]; j++)
    act_set(p, p->key_refs[j], act_of(p, p->key_refs[j]));
}

/* key_chunk[k] = c, and the bits of k's references looked at again if it
 * changed. */
static void set_key_chunk(lms__plan_t *p, uint32_t k, lms_chunk_t *c) {
  if (p->key_chunk[k] == c) return;
  p->key_chunk[k] = c;
  act_key(p, k);
}

/* Note [Ways to look ahead, measured]
 * The window (Note [Prefetch window]) decides step by step from the room
 * there is now; the period's plan (Note [A planned period] in ahead.c)
 * decides for the whole period from the room every step will have.
 * Neither is faster everywhere.  Over the five-trace sweep the plan
 * moves fewer bytes where the budget is tight (ResNet-50 at 10x: 2.32 GB
 * in an iteration against 2.90) and where training's two directions take
 * turns; the window is faster where the link is fast enough that its
 * extra copies cost little (GPT-2 at 4x over NVLink-C2C), since the plan
 * keeps every step as full as it can and leaves its copies little lead,
 * and on GoogLeNet's built-in training (bench/results/
 * 2026-11-24-sim-planned-period.md).  The plan counts bytes, not time, and
 * a second plan that spreads what stays among what leaves (Note [Spread
 * out] in ahead.c) is faster where a copy takes about a step's compute
 * and no better where it takes many.  So which is faster
 * for a program is measured, not guessed: from the first whole iteration
 * of a schedule the window looks ahead until two of its iterations in a
 * row, timed on the device clock between the starts of iterations, agree
 * within 1 % (at most TRIAL_MAX), then the spread plan likewise, then the
 * spread plan bringing chunks in by their use (Note [Copies in by their
 * use] in ahead.c), then the plan (one that cannot be built for want of
 * memory is skipped, and if none can, the window is kept), then the plan
 * deciding by density where it sends a chunk away after other uses than
 * the plan by end does (Note [Whole chunks kept] in ahead.c) and then
 * that bringing chunks in by their use, then the plan by density
 * counting write-backs where it decides otherwise than by density
 * (the same Note), then the plan by density holding the room of its
 * write-backs while they run, likewise, where the device says how fast
 * its link out is (Note [Room a write-back holds] in ahead.c), then,
 * where chunks are made of
 * pieces, the plan by end cut at the step where it brings in the least,
 * where that is not step 0 and it decides otherwise (Note [Where the
 * cycle is cut] in ahead.c), then the plan chosen of them leaving its
 * dirty chunks late, and where that was not 2 % faster, the next fastest
 * plan leaving them late (Note [Leaving late]).  Of the plans, the
 * fastest of the plan by density (by bytes a step, counting
 * write-backs, and holding their room), the spread plan, each in order and the plan cut
 * elsewhere is chosen if its last
 * timed iteration was 2 % faster than the plan's
 * (more than the 1 % either may still move), else the plan.  Each is
 * held to the plan, not to the one tried before it: held in a chain,
 * ResNet-50 at 4x over pcie5 kept the plan by density, 2 % faster than
 * the plan, where the spread plan in order was 2 % faster again.  The
 * plan chosen looks ahead if 2 % faster than the window, or if no
 * slower and it brought in 1 % fewer bytes (Note [Ties go to fewer
 * bytes]); the faster plan leaving late likewise against the window,
 * and only if 2 % faster than the plan chosen where that alone would do;
 * the plan chosen is built again if it is not the one last tried.  Measuring the window
 * before it settles chose wrongly: its adaptive bytes ahead (Note [A
 * window that adapts]) take a few iterations to find their level.  A
 * new schedule starts a new trial.  The replay does not call an
 * iteration settled during a trial (lms__plan_info's `deciding`), and
 * goes on for up to 64 iterations (LMS__REPLAY_SETTLE_MAX) so that a
 * trial of up to ten ways (eleven with pieces) and a settling after it
 * fit (of the twenty traces' 240 runs, 9 did not settle in 48 and 13
 * with waits measured; in 64, 4, the batch-4 decoder of experts at 4x,
 * and 3, the 7B decoder at 2x over nvlink2, the 1.1B decoder at 4x over
 * nvlink2 and speech recognition at 4x over pcie3; at 48 the 7B
 * decoder's runs at 4x stopped before the way kept had wandered; and 27
 * and 29 once six alike iterations whose chunks differ were no longer
 * taken as settled (Note [A settled iteration] in replay/replay.c), a
 * mean of 32.8 and 34.0 iterations a run:
 * bench/results/2026-12-04-sim-belady-for-large.md.  Before, a run of
 * the nine traces of bench/workloads/gen_traces.py took 39,
 * with waits measured; 37 before the eighth way, 40 before the seventh;
 * of the fifteen, once the plan by density went on trial wherever it decides
 * otherwise, 39 at most with waits measured and a mean of 25.3, and
 * without, a mean of 24.0, the batch-4 decoder of experts at 4x over
 * c2c not settling in 48; of the twenty's 240 runs, with the plan by
 * density counting write-backs on trial, a mean of 27.7, 25.8 before,
 * and with waits measured 28.8 and 27.0, 13 runs not settling in 48
 * against 11; with the plan holding write-backs' room on trial 28.9
 * against 27.6, and 30.0 against 28.7 with waits measured, the same 9
 * and 13 runs not settling).
 *
 * Note [Ties go to fewer bytes]
 * Two ways within 2 % of each other's time are a tie the trial cannot
 * break by time, and the window wins ties.  A 7B decoder's decoding step
 * at 10x over pcie3, with waits seen after the fact as on a GPU, took
 * 1700.2 ms an iteration with the window and 1666.8 with the plan, 1.97 %
 * less: the window was kept, and brought in 20.73 GB an iteration, more
 * than LRU's 20.33, where the plan brought in 20.32
 * (bench/results/2026-11-28-sim-whole-chunks-kept.md).  The bytes a way
 * moves cost what the timing does not see: a link shared with other
 * ranks, and time wherever the link turns out slower than on trial.  So
 * a plan no slower than the window that brought in 1 % fewer bytes in its
 * timed iteration is kept too.  Held within 2 % either way, it kept
 * plans 0.3-1.4 % slower than the window (the 3D U-Net's at 192^3 under
 * 16 GiB), so only a plan no slower is.  In the eight traces' sweep
 * without waits measured it changes no run; with them, the decoder's at
 * 10x over pcie3.
 *
 * Note [The trial keeps score]
 * The trial times each way over a few iterations and keeps the fastest;
 * nothing timed it again.  But a way can go on to be slower than on
 * trial: the window, whose victims and bytes ahead depend on what the
 * iterations before it left on the device, took 31.5 ms an iteration on
 * trial for a 7B decoder's decoding step at 2x over NVLink-C2C and then
 * wandered (which layers stay turns from one iteration to the next) to
 * 33.5, where the plan by density counting write-backs had taken 32.4 on
 * trial.  So once the trial is over the way kept is watched: if each of
 * four iterations in a row is 2 % slower than the fastest other way's
 * iteration on trial (the window, a plan, or a plan leaving late), or no
 * faster than it while that way brought in 1 % fewer bytes on trial (as
 * the trial breaks its ties: Note [Ties go to fewer bytes]), that way
 * looks ahead instead, built again (the window starting over, Note
 * [Back to the window]).  The first three iterations after the trial are
 * not counted: the window starting over, and its bytes ahead finding
 * their level (Note [A window that adapts]), take that long.  Each of
 * four, not their mean: with the mean of four, the 1.1B decoder at 2x
 * over NVLink with waits measured left the window (28.8 ms on trial) for
 * the plan leaving late (29.1 ms on trial, one iteration of a cycle of
 * two averaging 30.6) while the window was still settling, 9.9 % slower.
 * Once only: the way that replaced another is not watched, since two
 * ways each slower than on trial would take turns for good; a new
 * schedule starts a new trial.  Over the twenty traces' 240 runs the
 * watch moved seven runs, all faster (the 7B decoder at 2x over c2c
 * 3.2 %, pcie5 1.9 %, streaming at 10x over c2c 2.8 %), and with waits
 * measured five, all faster (the diffusion model's inference at 2x over
 * nvlink2 11.3 %, the 1.1B decoder at 2x over pcie5 6.5 %); the 7B
 * decoder at 4x over pcie5 and c2c no longer brings in more than LRU
 * (bench/results/2026-12-02-sim-keeps-score.md).
 *
 * While watched, the run is held (lms__plan_info's `held`) in the three
 * iterations not counted and in a run of slow ones: a sim run is not
 * called settled at the end of such an iteration, though the iterations
 * count towards a settling after it, so that a way whose iterations take
 * turns being slow and not settles as a cycle (a way kept as fast as on
 * trial is watched for good); the way that replaces another starts that
 * count over.  It was not held at all, and a sim run
 * could settle on a way the watch was about to replace, reporting what
 * the program does not go on to take: the ViT
 * fine-tune at 10x over pcie3 with waits measured settled at 2551.7 ms
 * an iteration on the window (2236.8 on trial) two iterations before the
 * watch would have counted its fourth slow one; held, the plan by
 * density holding its write-backs' room (2262.0 on trial) replaces the
 * window and the run settles at 2256.2.  With that and the ties on
 * bytes, over the twenty-two traces' 264 runs 17 moved by 0.1 % or more,
 * 16 faster (EfficientNet-B0 at 4x and 10x over pcie5 and nvlink2
 * 3.3-3.7 %; the one slower, the 7B decoder at 4x over pcie3, 0.7 %, a
 * run that does not settle in 64), and with waits measured 29, 21 faster
 * (the diffusion model's inference at 2x over pcie5 13.2 %, the ViT's
 * 11.6 %) and 8 slower by at most 1.0 %.  The 7B decoder at 10x over
 * nvlink2 no longer brings in more than LRU, nor, with waits measured,
 * the served decoder at 2x over pcie5 and nvlink2.  Runs take a mean of
 * 33.9 iterations instead of 32.0, and with waits measured 35.4 instead
 * of 34.2, of which 33 do not settle in 64 against 38 (28 without, as
 * before: bench/results/2026-12-04-sim-watch-holds-the-run.md).
 * Cost: O(1) an iteration. */

/* Two iterations of one way within 1 % of each other, or the sixth. */
static int trial_settled(lms__plan_t *p, uint64_t took) {
  uint64_t prev = p->trial_prev;
  p->trial_prev = took;
  if (++p->trial_n >= TRIAL_MAX) return 1;
  if (p->trial_n < 2) return 0;
  uint64_t hi = took > prev ? took : prev, lo = took > prev ? prev : took;
  return hi - lo <= hi / 100;
}

static double out_rate(const lms__plan_t *p);
static int build_plan(lms__plan_t *p, int spread, int order, int dense,
                      int cut);

/* What a chunk of n bytes takes of the budget: a small one its share of a
 * segment with what it may waste (Note [What the budget wastes] in
 * alloc/devcache.c), a large one its size rounded to the block unit. */
static uint64_t budget_take(const lms__plan_t *p, uint64_t n) {
  return n <= p->swap->cache.small_max
             ? n + n / 16
             : (n + LMS__BLOCK_ROUND - 1) / LMS__BLOCK_ROUND * LMS__BLOCK_ROUND;
}

/* The kinds of plan on trial: the plan (0), the plan by density, the
 * spread plan, and each of the last two bringing chunks in by their
 * use. */
enum {
  KIND_DENSE = 1,
  KIND_SPREAD = 2,
  KIND_IN_ORDER = 4, /* a bit of KIND_ORDER and KIND_DENSE_ORDER */
  KIND_ORDER = KIND_SPREAD | KIND_IN_ORDER,
  KIND_DENSE_ORDER = KIND_DENSE | KIND_IN_ORDER,
  KIND_CUT = 8,      /* the plan by end cut where it brings in the least */
  KIND_OUT = 16,     /* a bit of KIND_DENSE_OUT */
  KIND_DENSE_OUT = KIND_DENSE | KIND_OUT, /* counting write-backs */
  KIND_HOLD = 32,    /* a bit of KIND_DENSE_HOLD */
  KIND_DENSE_HOLD = KIND_DENSE | KIND_HOLD, /* holding write-backs' room */
  KIND_SEARCH = 64,  /* a bit of KIND_DENSE_SEARCH */
  KIND_DENSE_SEARCH = KIND_DENSE | KIND_SEARCH /* searched by its time */
};
static const int kinds[] = {0, KIND_DENSE, KIND_SPREAD, KIND_ORDER,
                            KIND_DENSE_ORDER, KIND_CUT, KIND_DENSE_OUT,
                            KIND_DENSE_HOLD, KIND_DENSE_SEARCH};
#define NKINDS ((int)(sizeof kinds / sizeof kinds[0]))

/* A kind's timed iteration on trial (UINT64_MAX: not timed, as a plan
 * that could not be built) and the bytes it brought in. */
static uint64_t kind_ns(const lms__plan_t *p, int k) {
  uint64_t t = k == 0                 ? p->trial_plan_ns
               : k == KIND_CUT         ? p->trial_cut_ns
               : k == KIND_DENSE_OUT   ? p->trial_dout_ns
               : k == KIND_DENSE_HOLD  ? p->trial_dhold_ns
               : k == KIND_DENSE_SEARCH ? p->trial_dsearch_ns
               : k == KIND_DENSE       ? p->trial_dense_ns
               : k == KIND_DENSE_ORDER ? p->trial_dorder_ns
               : k == KIND_SPREAD      ? p->trial_spread_ns
                                       : p->trial_order_ns;
  return t ? t : UINT64_MAX;
}

static uint64_t kind_in(const lms__plan_t *p, int k) {
  return k == 0                 ? p->trial_plan_in
         : k == KIND_CUT         ? p->trial_cut_in
         : k == KIND_DENSE_OUT   ? p->trial_dout_in
         : k == KIND_DENSE_HOLD  ? p->trial_dhold_in
         : k == KIND_DENSE_SEARCH ? p->trial_dsearch_in
         : k == KIND_DENSE       ? p->trial_dense_in
         : k == KIND_DENSE_ORDER ? p->trial_dorder_in
         : k == KIND_SPREAD      ? p->trial_spread_in
                                 : p->trial_order_in;
}

/* The kind the trial would keep of the eight timed (-1 for none): the
 * fastest of the plan by density, the spread plan and each in order, the
 * plan by density counting write-backs or holding their room, and the
 * plan cut where it brings in the least, if
 * 2 % faster than the plan; else the plan.  Each held to the plan, not to
 * the one before it: held in a chain, ResNet-50 at 4x over pcie5 kept
 * the plan by density where the spread plan in order was 2.0 % faster
 * than it. */
static int kind_best(const lms__plan_t *p) {
  uint64_t a = kind_ns(p, 0), best = UINT64_MAX;
  int k = -1;
  for (int i = 1; i < NKINDS; i++)
    if (kind_ns(p, kinds[i]) < best) best = kind_ns(p, kinds[k = i]);
  if (k >= 0 && best < a / 50 * 49) return kinds[k];
  return a == UINT64_MAX ? -1 : 0;
}

/* The fastest kind timed but `not` (-1 for none). */
static int kind_second(const lms__plan_t *p, int not) {
  uint64_t best = UINT64_MAX;
  int k = -1;
  for (int i = 0; i < NKINDS; i++)
    if (kinds[i] != not && kind_ns(p, kinds[i]) < best)
      best = kind_ns(p, kinds[k = i]);
  return k < 0 ? -1 : kinds[k];
}

/* The bit of kind_dirty for kind k. */
static unsigned kind_bit(int k) {
  for (int i = 0; i < NKINDS; i++)
    if (kinds[i] == k) return 1u << i;
  return 0;
}

/* The way on trial that just ended, of kind k (-1: the window), sent a
 * dirty chunk away or not; the next begins. */
static void trial_dirty(lms__plan_t *p, int k) {
  if (k >= 0 && p->sent_dirty != p->trial_dirty0) p->kind_dirty |= kind_bit(k);
  p->trial_dirty0 = p->sent_dirty;
}

/* The plan of that kind is built: the one there, or built anew. */
static int plan_ready(lms__plan_t *p, int kind) {
  int spread = (kind & KIND_SPREAD) != 0,
      order = (kind & KIND_IN_ORDER) != 0,
      dense = (kind & KIND_DENSE) ? ((kind & KIND_OUT)      ? 2
                                     : (kind & KIND_HOLD)   ? 3
                                     : (kind & KIND_SEARCH) ? 4
                                                            : 1)
                                  : 0,
      cut = (kind & KIND_CUT) != 0;
  return (p->have_plan && spread == p->spread && order == p->order &&
          dense == p->dense && cut == p->cut) ||
         build_plan(p, spread, order, dense, cut);
}

/* The kind looking ahead now (-1: the window), as plan_ready takes it. */
static int ahead_kind(const lms__plan_t *p) {
  if (!p->planned) return -1;
  return (p->spread ? KIND_SPREAD : 0) | (p->order ? KIND_IN_ORDER : 0) |
         (p->dense ? KIND_DENSE : 0) | (p->dense == 2 ? KIND_OUT : 0) |
         (p->dense == 3 ? KIND_HOLD : 0) | (p->dense == 4 ? KIND_SEARCH : 0) |
         (p->cut ? KIND_CUT : 0);
}

/* What a kind is called in the log (-1: the window). */
static const char *kind_name(int kind) {
  return kind < 0                      ? "window"
         : (kind & KIND_SPREAD)         ? "spread plan"
         : kind == KIND_DENSE_OUT       ? "plan by density counting write-backs"
         : kind == KIND_DENSE_HOLD      ? "plan by density holding write-backs' room"
         : kind == KIND_DENSE_SEARCH    ? "plan by density searched by its time"
         : (kind & KIND_DENSE)          ? "plan by density"
         : kind == KIND_CUT             ? "plan cut where it brings in the least"
                                        : "plan";
}

/* Note [The trial keeps score]: the way kept is watched if another was
 * timed on trial; w, best and c are the window's, the plan chosen's and
 * the faster leaving late's timed iterations (UINT64_MAX: none), kind the
 * kind kept if a plan looks ahead. */
static void watch_start(lms__plan_t *p, uint64_t w, uint64_t best,
                        uint64_t c, int kind) {
  p->keep_ns = !p->planned ? w : p->late ? c : best;
  p->alt_ns = UINT64_MAX;
  p->watch_n = p->watch_slow = 0;
  p->watch_sum = 0;
  if (p->planned && w > 0 && w < p->alt_ns) {
    p->alt_ns = w;
    p->alt_in = p->trial_window_in;
    p->alt_kind = -1;
    p->alt_late = 0;
  }
  for (int i = 0; i < NKINDS; i++)
    if ((!p->planned || p->late || kinds[i] != kind) &&
        kind_ns(p, kinds[i]) < p->alt_ns) {
      p->alt_ns = kind_ns(p, kinds[i]);
      p->alt_in = kind_in(p, kinds[i]);
      p->alt_kind = kinds[i];
      p->alt_late = 0;
    }
  for (int j = 0; j < 2; j++) {
    uint64_t t = j == 0 ? p->trial_late_ns : p->trial_late2_ns;
    if (t && p->late_left[j] && p->late_kind[j] >= 0 && t < p->alt_ns &&
        !(p->planned && p->late && p->late_kind[j] == kind)) {
      p->alt_ns = t;
      p->alt_in = j == 0 ? p->trial_late_in : p->trial_late2_in;
      p->alt_kind = p->late_kind[j];
      p->alt_late = 1;
    }
  }
  if (p->alt_ns != UINT64_MAX && p->keep_ns != UINT64_MAX)
    p->trial = TRIAL_WATCH;
}

/* Note [The trial keeps score]: one more iteration of the way kept. */
static void watch_step(lms__plan_t *p, uint64_t took, uint64_t in) {
  if (++p->watch_n <= WATCH_SKIP) return;
  /* Slow: 2 % slower than the other way was on trial, or no faster while
   * that one brought in 1 % fewer bytes (Note [Ties go to fewer bytes]). */
  if (took <= p->alt_ns / 49 * 50 &&
      (took < p->alt_ns || p->alt_in >= in / 100 * 99)) {
    p->watch_slow = 0;
    p->watch_sum = 0;
    return;
  }
  p->watch_sum += took;
  if (++p->watch_slow < WATCH_N) return;
  uint64_t mean = p->watch_sum / WATCH_N;
  p->trial = TRIAL_DONE;
  p->ways_replaced++;
  p->replaced_ns = mean;
  LMS_LOG(INFO, GRAPH, "the way kept took %.3f ms an iteration over its "
          "last %u (%.3f ms on trial): the %s%s%s, %.3f ms on trial, looks "
          "ahead instead", (double)mean / 1e6, WATCH_N,
          (double)p->keep_ns / 1e6, kind_name(p->alt_kind),
          p->alt_kind >= 0 && (p->alt_kind & KIND_IN_ORDER) ? " in order"
                                                            : "",
          p->alt_late ? " leaving late" : "", (double)p->alt_ns / 1e6);
  p->planned = 0;
  p->late = 0;
  p->npend = 0;
  if (p->alt_kind >= 0 && plan_ready(p, p->alt_kind)) {
    p->planned = 1;
    p->late = p->alt_late;
  } else {
    /* The window, or a plan that cannot be built for want of memory:
     * the window starts over (Note [Back to the window]). */
    p->window_back = 1;
  }
}

/* The way chosen when the trial ends: of the plans, as kind_best
 * chooses, looking ahead only if 2 % faster than the window or as fast
 * and bringing in 1 % fewer bytes (Note [Ties go to fewer bytes]); of the
 * plans leaving late, the faster, chosen likewise against the window, and
 * only if 2 % faster than the plan chosen where that alone would do. */
static void trial_decide(lms__plan_t *p) {
  int kind = kind_best(p), lk = p->late_kind[0];
  /* A plan that left no dirty chunk late was that plan timed again: its
   * time does not count as leaving late's. */
  uint64_t w = p->trial_window_ns, wi = p->trial_window_in,
           best = kind < 0 ? UINT64_MAX : kind_ns(p, kind),
           in = kind < 0 ? 0 : kind_in(p, kind),
           c = p->trial_late_ns && p->late_left[0] ? p->trial_late_ns
                                                   : UINT64_MAX,
           ci = p->trial_late_in;
  if (p->trial_late2_ns && p->late_left[1] && p->trial_late2_ns < c) {
    c = p->trial_late2_ns;
    ci = p->trial_late2_in;
    lk = p->late_kind[1];
  }
  int plan_wins = best < w / 50 * 49 || (best <= w && in < wi / 100 * 99);
  int late_wins = c < w / 50 * 49 || (c <= w && ci < wi / 100 * 99);
  int late = late_wins && (c < best / 50 * 49 || !plan_wins);
  p->trial = TRIAL_DONE;
  p->planned = 0;
  p->late = 0;
  p->npend = 0;
  if (late) kind = lk;
  if ((late || plan_wins) && kind >= 0 && plan_ready(p, kind)) {
    p->planned = 1;
    p->late = late;
  }
  p->window_back = kind_best(p) >= 0 && !p->planned;
  watch_start(p, w, best, c, kind);
  LMS_LOG(INFO, GRAPH, "an iteration took %.3f ms with the window, %.3f ms "
          "with the period's plan, %.3f ms with it cut at step %u "
          "(0: not tried, as where it decides as the plan does), %.3f ms "
          "with it deciding by density (0: not tried, likewise), "
          "%.3f ms with that bringing chunks in by their use and %.3f ms "
          "with it counting write-backs (0: not tried, likewise), %.3f ms "
          "with it holding write-backs' room (0: not tried, likewise), "
          "%.3f ms with it searched by its time (0: not tried, likewise), "
          "%.3f ms with the spread plan, %.3f ms "
          "with it bringing chunks in by their use, %.3f ms with the "
          "one chosen of them leaving dirty chunks late and %.3f ms with "
          "the next fastest leaving them late (0: not tried): the %s%s%s "
          "looks ahead", (double)w / 1e6, (double)p->trial_plan_ns / 1e6,
          (double)p->trial_cut_ns / 1e6, p->cut_step,
          (double)p->trial_dense_ns / 1e6, (double)p->trial_dorder_ns / 1e6,
          (double)p->trial_dout_ns / 1e6, (double)p->trial_dhold_ns / 1e6,
          (double)p->trial_dsearch_ns / 1e6,
          (double)p->trial_spread_ns / 1e6, (double)p->trial_order_ns / 1e6,
          (double)p->trial_late_ns / 1e6, (double)p->trial_late2_ns / 1e6,
          kind_name(ahead_kind(p)), p->planned && p->order ? " in order" : "",
          p->planned && p->late ? " leaving late" : "");
}

/* Note [Leaving late]: a plan again, its dirty chunks left until their
 * room is needed: `which` 0 the plan chosen, 1 the next fastest.  With
 * no plan of that kind the trial ends. */
static void trial_late_start(lms__plan_t *p, int which) {
  int kind = which == 0 ? kind_best(p) : kind_second(p, p->late_kind[0]);
  p->trial_n = 0;
  if (kind >= 0 && !(p->kind_dirty & kind_bit(kind))) {
    /* It sends no dirty chunk away: leaving late, it would be that plan
     * timed again.  The next fastest, if this was the one chosen. */
    p->late_kind[which] = kind;
    if (which == 0) trial_late_start(p, 1);
    else trial_decide(p);
    return;
  }
  if (kind < 0 || !plan_ready(p, kind)) {
    trial_decide(p);
    return;
  }
  p->late_kind[which] = kind;
  p->trial_left0 = p->left_late;
  p->trial = which == 0 ? TRIAL_LATE : TRIAL_LATE2;
  p->planned = 1;
  p->late = 1;
  p->npend = 0;
}

/* The drop flags of the plan in ahead, copied (NULL: none, or no
 * memory), to tell whether a plan built after it decides otherwise. */
static uint8_t *drops_now(const lms__plan_t *p) {
  uint8_t *d = p->have_plan ? malloc((size_t)p->nrefs + 1) : NULL;
  if (d != NULL) memcpy(d, p->ahead.drop, (size_t)p->nrefs);
  return d;
}

static int same_drops(const lms__plan_t *p, const uint8_t *d) {
  return d != NULL && memcmp(d, p->ahead.drop, (size_t)p->nrefs) == 0;
}

/* Note [Where the cycle is cut] in ahead.c: where a chunk made of pieces
 * was acquired under this schedule, the plan by end cut where it brings
 * in the least goes on trial where that is not step 0 and it sends a
 * chunk away after other uses than the plan by end (built again to
 * compare: the plan by density may be in ahead now); else, or where
 * either cannot be built for want of memory, leaving late is next.
 * O(k r log p) for the k cuts tried. */
static void trial_cut_start(lms__plan_t *p) {
  p->trial_n = 0;
  if (!p->saw_pieces) {
    trial_late_start(p, 0);
    return;
  }
  uint8_t *end_drop = build_plan(p, 0, 0, 0, 0) ? drops_now(p) : NULL;
  int built = end_drop != NULL && build_plan(p, 0, 0, 0, 1);
  p->cut_step = built ? p->ahead.cut : 0;
  p->cut_plan_in = built ? p->plan_in : 0;
  p->cut_alike = built && (p->ahead.cut == 0 || same_drops(p, end_drop));
  free(end_drop);
  if (built && !p->cut_alike) {
    p->trial = TRIAL_CUT;
    p->planned = 1;
    return;
  }
  trial_late_start(p, 0);
}

/* A plan by density of kind `dense` (build_plan's) goes on trial as
 * `trial` where it sends a chunk away after other uses than the plan by
 * density (both built again to compare); 1 if it did, 0 where they are
 * alike or either cannot be built for want of memory. */
static int trial_beside_dense(lms__plan_t *p, int dense, int trial) {
  p->trial_n = 0;
  uint8_t *dense_drop = build_plan(p, 0, 0, 1, 0) ? drops_now(p) : NULL;
  int built = dense_drop != NULL && build_plan(p, 0, 0, dense, 0);
  /* The plan searched by its time: only where the search changed a
   * decision of the plan it started from. */
  int alike = built && ((dense == 4 && p->searched == 0) ||
                        same_drops(p, dense_drop));
  free(dense_drop);
  if (!built || alike) return 0;
  p->trial = trial;
  p->planned = 1;
  return 1;
}

/* Note [A plan searched by its time] in ahead.c: the plan by density in
 * order searched by its time goes on trial wherever the search changed
 * a decision of the plan it started from, the plan so decides otherwise
 * than the plan by density, and the device says how fast its link is;
 * else the plan cut elsewhere is next.  O(f r log r) for f tries of r
 * references. */
static void trial_dsearch_start(lms__plan_t *p) {
  if (out_rate(p) <= 0.0 || !trial_beside_dense(p, 4, TRIAL_DENSE_SEARCH))
    trial_cut_start(p);
}

/* Note [Room a write-back holds] in ahead.c: the plan by density holding
 * the room of its write-backs goes on trial wherever it decides otherwise
 * than the plan by density and the device says how fast its link out
 * is; else the plan cut elsewhere is next.  O(r log r) for r
 * references. */
static void trial_dhold_start(lms__plan_t *p) {
  if (out_rate(p) <= 0.0 || !trial_beside_dense(p, 3, TRIAL_DENSE_HOLD))
    trial_dsearch_start(p);
}

/* Note [Whole chunks kept] in ahead.c: the plan by density counting
 * write-backs goes on trial wherever it decides otherwise than the plan
 * by density; else the plan holding write-backs' room is next.
 * O(r log r) for r references. */
static void trial_dout_start(lms__plan_t *p) {
  if (!trial_beside_dense(p, 2, TRIAL_DENSE_OUT)) trial_dhold_start(p);
}

/* Note [Whole chunks kept] in ahead.c: the plan deciding by density goes
 * on trial wherever it decides otherwise than the plan by end (in ahead
 * now: the trial builds it just before), whatever the bytes each brings
 * in: a chunk sent away after other uses.  Where both send every chunk
 * away after the same uses, or where it cannot be built for want of
 * memory, leaving late is next; with no memory to compare the two, it
 * is tried.  O(r) for r references. */
static void trial_dense_start(lms__plan_t *p) {
  p->trial_n = 0;
  p->end_plan_in = p->plan_in;
  uint8_t *end_drop = drops_now(p);
  int built = build_plan(p, 0, 0, 1, 0);
  p->dense_plan_in = built ? p->plan_in : 0;
  p->dense_alike = built && same_drops(p, end_drop);
  free(end_drop);
  if (built && !p->dense_alike) {
    p->trial = TRIAL_DENSE;
    p->planned = 1;
    return;
  }
  trial_dout_start(p);
}

/* The trial goes on with the plan of that kind; a spread plan that cannot
 * be built is skipped for the plan, and with none the trial ends. */
static void trial_next_plan(lms__plan_t *p, int spread, int order) {
  p->trial_n = 0;
  if (spread && build_plan(p, 1, order, 0, 0)) {
    p->trial = order ? TRIAL_ORDER : TRIAL_SPREAD;
  } else if (build_plan(p, 0, 0, 0, 0)) {
    p->trial = TRIAL_PLAN;
  } else {
    trial_decide(p);
    return;
  }
  p->planned = 1;
}

static void trial_step(lms__plan_t *p) {
  uint64_t now = p->swap->dev->ops->now_ns(p->swap->dev);
  uint64_t took = now - p->trial_start;
  uint64_t in0 = p->trial_in0;
  p->trial_in0 = (uint64_t)p->swap->stats.bytes_h2d.total;
  uint64_t in = p->trial_in0 - in0;
  switch (p->trial) {
  case TRIAL_START:
    p->trial = TRIAL_WINDOW;
    p->trial_n = 0;
    break;
  case TRIAL_WINDOW:
    if (!trial_settled(p, took)) break;
    p->trial_window_ns = took;
    p->trial_window_in = in;
    trial_dirty(p, -1);
    trial_next_plan(p, 1, 0);
    break;
  case TRIAL_SPREAD:
    if (!trial_settled(p, took)) break;
    p->trial_spread_ns = took;
    p->trial_spread_in = in;
    trial_dirty(p, KIND_SPREAD);
    trial_next_plan(p, 1, 1);
    break;
  case TRIAL_ORDER:
    if (!trial_settled(p, took)) break;
    p->trial_order_ns = took;
    p->trial_order_in = in;
    trial_dirty(p, KIND_ORDER);
    trial_next_plan(p, 0, 0);
    break;
  case TRIAL_PLAN:
    if (!trial_settled(p, took)) break;
    p->trial_plan_ns = took;
    p->trial_plan_in = in;
    trial_dirty(p, 0);
    trial_dense_start(p);
    break;
  case TRIAL_DENSE:
    if (!trial_settled(p, took)) break;
    p->trial_dense_ns = took;
    p->trial_dense_in = in;
    trial_dirty(p, KIND_DENSE);
    /* The same in order (Note [Copies in by their use] in ahead.c). */
    p->trial_n = 0;
    if (build_plan(p, 0, 1, 1, 0)) {
      p->trial = TRIAL_DENSE_ORDER;
      p->planned = 1;
    } else {
      trial_dout_start(p);
    }
    break;
  case TRIAL_DENSE_ORDER:
    if (!trial_settled(p, took)) break;
    p->trial_dorder_ns = took;
    p->trial_dorder_in = in;
    trial_dirty(p, KIND_DENSE_ORDER);
    trial_dout_start(p);
    break;
  case TRIAL_DENSE_OUT:
    if (!trial_settled(p, took)) break;
    p->trial_dout_ns = took;
    p->trial_dout_in = in;
    trial_dirty(p, KIND_DENSE_OUT);
    trial_dhold_start(p);
    break;
  case TRIAL_DENSE_HOLD:
    if (!trial_settled(p, took)) break;
    p->trial_dhold_ns = took;
    p->trial_dhold_in = in;
    trial_dirty(p, KIND_DENSE_HOLD);
    trial_dsearch_start(p);
    break;
  case TRIAL_DENSE_SEARCH:
    if (!trial_settled(p, took)) break;
    p->trial_dsearch_ns = took;
    p->trial_dsearch_in = in;
    trial_dirty(p, KIND_DENSE_SEARCH);
    trial_cut_start(p);
    break;
  case TRIAL_CUT:
    if (!trial_settled(p, took)) break;
    p->trial_cut_ns = took;
    p->trial_cut_in = in;
    trial_dirty(p, KIND_CUT);
    trial_late_start(p, 0);
    break;
  case TRIAL_LATE:
    if (!trial_settled(p, took)) break;
    p->trial_late_ns = took;
    p->trial_late_in = in;
    p->late_left[0] = p->left_late != p->trial_left0;
    /* Note [Leaving late]: where it did not make the plan chosen 2 %
     * faster, the next fastest is tried leaving late. */
    if (took >= kind_ns(p, p->late_kind[0]) / 50 * 49)
      trial_late_start(p, 1);
    else
      trial_decide(p);
    break;
  case TRIAL_LATE2:
    if (!trial_settled(p, took)) break;
    p->trial_late2_ns = took;
    p->trial_late2_in = in;
    p->late_left[1] = p->left_late != p->trial_left0;
    trial_decide(p);
    break;
  case TRIAL_WATCH:
    watch_step(p, took, in);
    break;
  default:
    return;
  }
  p->trial_start = now;
}

/* Note [A planned period] in ahead.c: built under the schedule policy
 * with a window.  It counts each chunk in the bytes of the budget it
 * takes: a small one shares a segment, whose waste is under 1/16 of it
 * (Note [What the budget wastes] in alloc/devcache.c); a large one is
 * rounded to LMS__BLOCK_ROUND.  It plans for the budget less 1/64, a
 * margin: planned for the whole budget, ResNet-50 at 10x over nvlink2
 * took 1.37 of the lower bound instead of 1.26 (why was not measured;
 * the device cache can leave free bytes in pieces, which the plan does
 * not see).
 * A copy in starts at most window.steps steps ahead.  A chunk live when
 * the period is learned is one allocated once (it plays its own key).
 * The spread plan is Note [Spread out], `order` Note [Copies in by their
 * use] in ahead.c.  Returns 1 with the plan in
 * p->ahead, or 0 with none (no memory for it), when the window alone
 * looks ahead. */
int lms__plan_spread_fails;
int lms__plan_end_fails;

/* The link's rates in, out and both ways at once, bytes a second (0
 * where the device gives none); 0 where it gives no rate out (Notes
 * [Room a write-back holds] and [A plan searched by its time] in
 * ahead.c). */
static int link_of(const lms__plan_t *p, double *in, double *out,
                   double *both) {
  lms_dev_t *d = p->swap->dev;
  *in = *out = *both = 0.0;
  return d->ops->link_rates != NULL &&
         d->ops->link_rates(d, in, out, both) == LMS_OK && *out > 0.0;
}

/* Note [Room a write-back holds] in ahead.c: the rate a write-back runs
 * at while copies in run beside it, bytes a second; 0 where the device
 * does not say. */
static double out_rate(const lms__plan_t *p) {
  double in, out, both;
  if (!link_of(p, &in, &out, &both)) return 0.0;
  if (both > 0.0 && in > 0.0 && both < in + out) out = both * out / (in + out);
  return out;
}

#define SEARCH_FLIPS 48          /* gaps whose decision is tried the other way */
#define SEARCH_WORK 4000000ull   /* references planned over all the tries */
#define SEARCH_GAIN 0.995        /* a try is taken where it is this much faster */
#define SEARCH_PASSES 2          /* over the gaps, while one changes a decision */

/* Note [A plan searched by its time] in ahead.c: from the plan built in
 * p->ahead from *in (by density, in order), or the same counting
 * write-backs where the model times that faster, the large gaps (their
 * chunk at least 1/32 of the capacity), most bytes times steps inside
 * first, each decided the other way in turn and kept so where the model
 * times the plan faster; the plan found is left in p->ahead and the
 * decisions changed counted in p->searched.  O(f r log p) for f tries of
 * r references, f at most SEARCH_WORK / r. */
static void search_plan(lms__plan_t *p, lms__ahead_in_t *in,
                        const uint64_t *sns) {
  double hi, ho, both;
  uint32_t nr = p->nrefs, per = p->period;
  p->searched = 0;
  if (!link_of(p, &hi, &ho, &both) || !(hi > 0.0) || nr == 0) return;
  uint32_t tries = SEARCH_FLIPS;
  if (SEARCH_WORK / SEARCH_PASSES / nr < tries)
    tries = (uint32_t)(SEARCH_WORK / SEARCH_PASSES / nr);
  if (tries == 0) return;
  uint8_t *force = calloc((size_t)nr + 1, 1);
  uint32_t *prev = malloc(((size_t)in->nkeys + 1) * sizeof *prev);
  uint32_t *first = malloc(((size_t)in->nkeys + 1) * sizeof *first);
  struct cand { uint64_t w; uint32_t ref; } *c =
      malloc(((size_t)nr + 1) * sizeof *c);
  uint32_t nc = 0;
  if (force == NULL || prev == NULL || first == NULL || c == NULL) goto done;
  uint64_t big = in->capacity / 32;
  for (uint32_t k = 0; k < in->nkeys; k++) prev[k] = first[k] = UINT32_MAX;
  /* Each gap by its first reference, weighed by its bytes times the
   * steps inside it. */
  for (uint32_t i = 0; i < nr; i++) {
    uint32_t k = in->ref_key[i], at = in->ref_step[i], from = prev[k];
    if (first[k] == UINT32_MAX) first[k] = i;
    prev[k] = i;
    if (from == UINT32_MAX) continue;
    uint32_t len = at - in->ref_step[from];
    if (len > 1 && in->key_size[k] >= big)
      c[nc++] = (struct cand){in->key_size[k] * (len - 1), from};
  }
  for (uint32_t k = 0; k < in->nkeys; k++) {
    if (!in->key_lives[k] || prev[k] == UINT32_MAX) continue;
    uint32_t len = in->ref_step[first[k]] + per - in->ref_step[prev[k]];
    if (len > 1 && in->key_size[k] >= big)
      c[nc++] = (struct cand){in->key_size[k] * (len - 1), prev[k]};
  }
  /* Largest first: a selection of `tries`, O(tries n). */
  if (nc > tries) {
    for (uint32_t i = 0; i < tries; i++) {
      uint32_t m = i;
      for (uint32_t j = i + 1; j < nc; j++)
        if (c[j].w > c[m].w) m = j;
      struct cand x = c[i];
      c[i] = c[m];
      c[m] = x;
    }
    nc = tries;
  }
  double best = lms__ahead_time(in, &p->ahead, sns, hi, ho);
  if (!(best > 0.0)) goto done;
  /* Where the model times it faster, the search starts from the plan
   * counting write-backs, in order.  (From the plan holding write-backs'
   * room too, three runs of the twenty traces' 240 were slower and none
   * faster: bench/results/2026-12-03-sim-searched-plan.md.) */
  lms__ahead_in_t alt = *in;
  alt.dense = 2;
  lms__ahead_t t0;
  if (lms__ahead_build(&alt, &t0) == LMS_OK) {
    double ns = lms__ahead_time(&alt, &t0, sns, hi, ho);
    if (ns > 0.0 && ns < best) {
      best = ns;
      lms__ahead_free(&p->ahead);
      p->ahead = t0;
      *in = alt;
    } else {
      lms__ahead_free(&t0);
    }
  }
  LMS_LOG(DEBUG, GRAPH, "search from %.3f ms by the model (by density%s)",
          best / 1e6, in->dense == 2 ? " counting write-backs" : "");
  in->force = force;
  int more = 1;
  for (uint32_t pass = 0; pass < SEARCH_PASSES && more; pass++) {
    more = 0;
    for (uint32_t i = 0; i < nc; i++) {
      uint32_t r = c[i].ref;
      if (force[r] != 0) continue; /* decided otherwise already */
      force[r] = p->ahead.drop[r] ? 2 : 1;
      lms__ahead_t t;
      if (lms__ahead_build(in, &t) != LMS_OK) {
        force[r] = 0;
        more = 0;
        break;
      }
      double ns = lms__ahead_time(in, &t, sns, hi, ho);
      if (ns > 0.0 && ns < best * SEARCH_GAIN) {
        best = ns;
        lms__ahead_free(&p->ahead);
        p->ahead = t;
        p->searched++;
        more = 1;
      } else {
        force[r] = 0;
        lms__ahead_free(&t);
      }
    }
  }
  in->force = NULL;
  LMS_LOG(DEBUG, GRAPH, "searched %u gaps: %u decided otherwise, %.3f ms "
          "an iteration by the model", nc, p->searched, best / 1e6);
done:
  free(force);
  free(prev);
  free(first);
  free(c);
}

/* Note [Where the cycle is cut] in ahead.c: the steps the plan cut
 * where it brings in the least may try. */
#define PLAN_CUTS 16u

/* Builds the plan of a kind into p->ahead: spread or not, in order or
 * not, deciding by end (dense 0) or by density as p->dense says, cut or
 * not; 1 if built. */
static int build_plan(lms__plan_t *p, int spread, int order, int dense,
                      int cut) {
  static int end_builds;
  lms__ahead_free(&p->ahead);
  p->have_plan = p->spread = p->order = p->dense = p->cut = 0;
  int end_fails = !spread && !dense && lms__plan_end_fails > 0 &&
                  ++end_builds >= lms__plan_end_fails;
  if ((spread && lms__plan_spread_fails) || end_fails) {
    p->planned = 0;
    return 0;
  }
  uint32_t nkeys = (uint32_t)p->key_index.len;
  unsigned *acc = malloc(((size_t)p->nrefs + 1) * sizeof *acc);
  uint8_t *lives = calloc((size_t)nkeys + 1, 1);
  uint64_t *cost = malloc(((size_t)nkeys + 1) * sizeof *cost);
  /* Note [Room a write-back holds] in ahead.c: the steps' compute, for
   * the plan that holds write-backs' room alone. */
  uint64_t *sns =
      dense >= 3 ? malloc(((size_t)p->period + 1) * sizeof *sns) : NULL;
  if (acc != NULL && lives != NULL && cost != NULL &&
      (dense < 3 || sns != NULL)) {
    for (uint32_t i = 0; sns != NULL && i < p->period; i++)
      sns[i] = p->steps[i].ns;
    for (uint32_t i = 0; i < p->nrefs; i++) acc[i] = p->refs[i].access;
    uint64_t cap = p->swap->placement.capacity;
    for (uint32_t k = 0; k < nkeys; k++) {
      lives[k] = p->key_chunk[k] != NULL;
      cost[k] = budget_take(p, p->key_size[k]);
    }
    lms__ahead_in_t in = {
        .period = p->period, .nrefs = p->nrefs, .nkeys = nkeys,
        .ref_step = p->ref_step, .ref_key = p->ref_key, .ref_access = acc,
        .key_size = cost, .key_lives = lives,
        .capacity = cap - cap / 64, .reach = p->window.steps,
        .spread = spread, .in_order = order || dense == 4,
        .dense = dense >= 3 ? 1 : dense, .cut = 0, .cuts = cut ? PLAN_CUTS : 1,
        .step_ns = dense == 3 ? sns : NULL,
        .out_bps = dense == 3 ? out_rate(p) : 0.0};
    p->have_plan = lms__ahead_build(&in, &p->ahead) == LMS_OK;
    if (p->have_plan && dense == 4) search_plan(p, &in, sns);
    p->spread = p->have_plan && spread;
    p->order = p->have_plan && order;
    p->plan_in = 0;
    for (uint32_t f = 0; p->have_plan && f < p->ahead.nfetch; f++)
      p->plan_in += p->key_size[p->ref_key[p->ahead.fetch_ref[f]]];
    p->dense = p->have_plan && !spread ? dense : 0;
    p->cut = p->have_plan && cut && !dense && !spread;
    if (p->have_plan)
      LMS_LOG(DEBUG, GRAPH, "%s%s of %u steps: %llu bytes kept, %llu sent "
              "away, %llu brought in, %llu fetches late",
              spread  ? "spread plan"
              : dense == 2 ? "planned period by density counting write-backs"
              : dense ? "planned period by density"
              : cut   ? "planned period cut where it brings in the least"
                      : "planned period",
              order ? " in order" : "", p->period,
              (unsigned long long)p->ahead.kept_bytes,
              (unsigned long long)p->ahead.drop_bytes,
              (unsigned long long)p->ahead.fetch_bytes,
              (unsigned long long)p->ahead.late_fetches);
  }
  if (p->cut)
    LMS_LOG(DEBUG, GRAPH, "... cut at step %u", p->ahead.cut);
  free(acc);
  free(lives);
  free(cost);
  free(sns);
  p->npend = 0;
  if (!p->have_plan) p->planned = 0;
  return p->have_plan;
}

static void plan_period(lms__plan_t *p) {
  if (p->policy != LMS_POLICY_SCHEDULE || p->window.steps == 0) return;
  /* 6 to 9: 2 to 5 with copies in by their use; 10 and 11: 2 and 4 by
   * density; 12: 2 by density with copies in by their use; 13: 2 cut
   * where it brings in the least. */
  int f = lms__plan_force;
  int force = f == 10 || f == 12 || f == 13 ? 2
              : f == 11                     ? 4
              : f >= 6                      ? f - 4
                                            : f;
  build_plan(p, force == 3 || force == 5, (f >= 6 && f <= 9) || f == 12,
             f >= 10 && f <= 12, f == 13);
  p->planned = p->have_plan && lms__plan_force >= 2;
  p->trial = !p->have_plan         ? TRIAL_NONE
             : lms__plan_force != 0 ? TRIAL_DONE
                                    : TRIAL_START;
  p->trial_start = p->swap->dev->ops->now_ns(p->swap->dev);
  p->trial_window_ns = p->trial_plan_ns = p->trial_spread_ns = 0;
  p->trial_late_ns = p->trial_order_ns = p->trial_dense_ns = 0;
  p->trial_window_in = p->trial_plan_in = p->trial_dense_in = 0;
  p->trial_spread_in = p->trial_order_in = p->trial_late_in = 0;
  p->trial_late2_ns = p->trial_late2_in = 0;
  p->trial_dorder_ns = p->trial_dorder_in = 0;
  p->trial_dout_ns = p->trial_dout_in = 0;
  p->trial_dhold_ns = p->trial_dhold_in = 0;
  p->trial_dsearch_ns = p->trial_dsearch_in = 0;
  p->trial_cut_ns = p->trial_cut_in = 0;
  p->cut_step = 0;
  p->cut_plan_in = 0;
  p->cut_alike = 0;
  p->saw_pieces = 0;
  p->dense_alike = 0;
  p->end_plan_in = p->dense_plan_in = 0;
  p->late_kind[0] = p->late_kind[1] = -1;
  p->late_left[0] = p->late_left[1] = 0;
  p->kind_dirty = 0;
  p->trial_dirty0 = p->sent_dirty;
  p->late = p->planned && force >= 4;
}

/* Makes steps [0, period) the schedule: builds the use lists per key. */
static int activate(lms__plan_t *p, uint32_t period) {
  drop_schedule(p);
  uint32_t nrefs = period ? p->steps[period - 1].first + p->steps[period - 1].n : 0;
  uint32_t nkeys = 0;
  for (uint32_t i = 0; i < nrefs; i++) {
    if (u64map_find(&p->key_index, p->refs[i].key) != NULL) continue;
    if (u64map_put(&p->key_index, p->refs[i].key, nkeys++) != 0) return -1;
  }
  p->use_first = calloc(nkeys + 1, sizeof *p->use_first);
  p->use_count = calloc(nkeys + 1, sizeof *p->use_count);
  p->uses = calloc(nrefs + 1, sizeof *p->uses);
  p->ref_key = calloc(nrefs + 1, sizeof *p->ref_key);
  p->key_size = calloc(nkeys + 1, sizeof *p->key_size);
  p->ws_count = calloc(nkeys + 1, sizeof *p->ws_count);
  p->key_chunk = calloc(nkeys + 1, sizeof *p->key_chunk);
  p->ref_step = calloc(nrefs + 1, sizeof *p->ref_step);
  p->key_refs_first = calloc(nkeys + 2, sizeof *p->key_refs_first);
  p->key_refs = calloc(nrefs + 1, sizeof *p->key_refs);
  p->act[0] = calloc(((size_t)nrefs >> 6) + 2, sizeof *p->act[0]);
  p->act[1] = calloc(((size_t)nrefs >> 12) + 2, sizeof *p->act[1]);
  p->act[2] = calloc(((size_t)nrefs >> 18) + 2, sizeof *p->act[2]);
  if (!p->ref_step || !p->key_refs_first || !p->key_refs || !p->act[0] ||
      !p->act[1] || !p->act[2])
    return -1;
  if (!p->use_first || !p->use_count || !p->uses || !p->ref_key ||
      !p->key_size || !p->ws_count || !p->key_chunk)
    return -1;
  for (uint32_t i = 0; i < nrefs; i++) {
    uint32_t k = (uint32_t)*u64map_find(&p->key_index, p->refs[i].key);
    p->ref_key[i] = k;
    p->key_size[k] = p->refs[i].size;
    p->use_count[k]++;
  }
  p->ws_valid = 0;
  for (uint32_t k = 1; k < nkeys; k++)
    p->use_first[k] = p->use_first[k - 1] + p->use_count[k - 1];
  memset(p->use_count, 0, (nkeys + 1) * sizeof *p->use_count);
  for (uint32_t s = 0; s < period; s++) {
    for (uint32_t i = 0; i < p->steps[s].n; i++) {
      const pref_t *ref = &p->refs[p->steps[s].first + i];
      uint64_t k = p->ref_key[p->steps[s].first + i];
      uint32_t *cnt = &p->use_count[k];
      /* Note [Next use means next read]: a step that overwrites the chunk
       * needs a block, not the bytes, so only steps that read count. */
      if (ref->access & LMS_ACCESS_OVERWRITE) continue;
      /* A key used twice in one step is listed once for it. */
      if (*cnt > 0 && p->uses[p->use_first[k] + *cnt - 1] == s) continue;
      p->uses[p->use_first[k] + (*cnt)++] = s;
    }
  }
  /* Persistent chunks play their own keys. */
  for (uint32_t i = 0; i < nrefs; i++) {
    lms_chunk_t *c = live_chunk(p, p->refs[i].key);
    p->key_chunk[p->ref_key[i]] = c;
    if (c != NULL) {
      c->plan_key = p->refs[i].key;
      c->plan_gen = p->gen;
      c->plan_kidx = p->ref_key[i];
    }
  }
  /* Note [Walking only what the window acts on]. */
  for (uint32_t st = 0; st < period; st++)
    for (uint32_t i = 0; i < p->steps[st].n; i++)
      p->ref_step[p->steps[st].first + i] = st;
  for (uint32_t i = 0; i < nrefs; i++) p->key_refs_first[p->ref_key[i] + 1]++;
  for (uint32_t k = 0; k < nkeys; k++)
    p->key_refs_first[k + 1] += p->key_refs_first[k];
  for (uint32_t i = 0; i < nrefs; i++)
    p->key_refs[p->key_refs_first[p->ref_key[i]] + p->ws_count[p->ref_key[i]]++] = i;
  memset(p->ws_count, 0, (nkeys + 1) * sizeof *p->ws_count);
  p->nsteps = period;
  p->nrefs = nrefs;
  p->pass_steps = p->pass_refs = 0;
  for (uint32_t i = 0; i < nrefs; i++) act_set(p, i, act_of(p, i));
  p->period = period;
  p->mode = MODE_ACTIVE;
  p->swap->flat_use = 0;
  plan_period(p);
  return 0;
}

/* Binds the chunks seen in the current step to the keys of schedule step
 * `pos`. */
static void bind_current(lms__plan_t *p, uint32_t pos) {
  p->steps[pos].ns = p->pending_ns;
  const pstep_t *st = &p->steps[pos];
  for (uint32_t i = 0; i < st->n && i < p->ncur; i++) {
    uint64_t key = p->refs[st->first + i].key;
    uint32_t k = p->ref_key[st->first + i];
    lms_chunk_t *c = live_chunk(p, p->cur[i].key);
    if (c == NULL) continue;
    if (c->plan_gen != p->gen) c->plan_key = 0;
    if (c->plan_key != 0 && c->plan_key != key) {
      /* The chunk changes role; its old key's binding goes with it. */
      uint64_t *b = u64map_find(&p->bind, c->plan_key);
      if (b != NULL && *b == c->serial) u64map_del(&p->bind, c->plan_key);
      set_key_chunk(p, c->plan_kidx, resolve(p, c->plan_key));
    }
    c->plan_key = key;
    c->plan_kidx = k;
    c->plan_gen = p->gen;
    if (u64map_put(&p->bind, key, c->serial) != 0) c->plan_key = 0;
    set_key_chunk(p, k, resolve(p, key));
  }
}

/* Appends the current step to the record (learning mode). */
static int record_current(lms__plan_t *p, uint64_t sig) {
  if (p->nrefs + p->ncur > PLAN_MAX_REFS) return -1;
  if (grow_arr((void **)&p->steps, &p->steps_cap, p->nsteps, sizeof *p->steps))
    return -1;
  for (uint32_t i = 0; i < p->ncur; i++) {
    if (grow_arr((void **)&p->refs, &p->refs_cap, p->nrefs, sizeof *p->refs))
      return -1;
    p->refs[p->nrefs++] = p->cur[i];
  }
  p->steps[p->nsteps].first = p->nrefs - p->ncur;
  p->steps[p->nsteps].n = p->ncur;
  p->steps[p->nsteps].sig = sig;
  p->steps[p->nsteps].serial = p->swap->serial;
  p->steps[p->nsteps].ns = p->pending_ns;
  p->nsteps++;
  lms__period_starts_recorded(&p->starts, p->nsteps);
  return 0;
}

static void restart_learning(lms__plan_t *p) {
  drop_schedule(p);
  p->swap->flat_use = 0; /* the scan is right whatever the keys */
  lms__period_starts_init(&p->starts);
  p->nsteps = p->nrefs = 0;
  p->period = p->pos = 0;
  p->false_base = 0;
  p->mode = p->source == LMS_SCHED_LEARN ? MODE_LEARNING : MODE_NONE;
}

/* Note [A false period]
 * A period is taken at the first step that repeats the record's start,
 * and checked step by step from then on.  A program whose iteration
 * holds the start's step more than once, each time among different
 * steps, shows a false period there: a mixture-of-experts decoder that
 * decodes eight tokens an iteration (bench/workloads/gen_traces.py's
 * moe-decode) repeats its first token's embedding step at every token,
 * but each token runs other experts, so the period of one token (122
 * steps of 962) breaks a few steps into the next token.  Learning over
 * from the step that broke it found another token-long false period from
 * there, and so on for good: no schedule was ever kept, and at 2x over
 * pcie5 the decoder took 2.10 of its lower bound under the window alone.
 * So a period that breaks before one whole period of steps has checked
 * out was false, not a change in the program: the record is kept, the
 * steps checked are appended to it as they were seen, and learning goes
 * on from the same start, where the next step that repeats it proposes a
 * longer period (the decoder's 239, 359, ..., 839 and then 962, which
 * holds: 1.07 of the bound).  A period that breaks after a whole period
 * checked out is a change in the program, and learning starts over from
 * the step that broke it, as before.  A record kept so that grows past
 * FALSE_SPAN times the first false period from its start without a
 * period that holds is taken for a change too, and learning starts over
 * from the step then closing.
 * A step checked against the period repeats the step it predicts only as
 * learning asks it to (Note [Same shape, other chunk]): by signature,
 * and with no older live chunk in the place of the one predicted.  By
 * signature alone, the same decoder at batch 1 (moe-decode-b1), whose
 * tokens each run two experts of one size, kept one token (66 steps of
 * 528) as its period and bound each next token's experts to the keys of
 * the last one's: every prediction of which expert comes next was wrong,
 * and at 2x over pcie5 it brought in 28.5 GB an iteration, where LRU
 * brought in 10.2 GB, and took 6.4 times its lower bound.  Checked so,
 * each token is a false period and the iteration is found: 4.8 GB, 1.09
 * of the bound (bench/results/2026-11-29-sim-home-before-leaving.md).
 * Each false period costs one plan built (O(r log p)) and a copy of the
 * steps checked, O(r) for r references. */
#define FALSE_SPAN 16

/* The current step, checked against the period's, recorded past the
 * schedule (Note [A false period]).  -1 if memory runs out. */
static int record_checked(lms__plan_t *p, uint64_t sig) {
  uint32_t at = p->nsteps + p->pass_steps, ref_at = p->nrefs + p->pass_refs;
  if (ref_at + p->ncur > PLAN_MAX_REFS) return -1;
  if (grow_arr((void **)&p->steps, &p->steps_cap, at, sizeof *p->steps))
    return -1;
  for (uint32_t i = 0; i < p->ncur; i++) {
    if (grow_arr((void **)&p->refs, &p->refs_cap, ref_at + i, sizeof *p->refs))
      return -1;
    p->refs[ref_at + i] = p->cur[i];
  }
  p->steps[at] = (pstep_t){.first = ref_at, .n = p->ncur, .sig = sig,
                           .serial = p->swap->serial};
  p->pass_steps++;
  p->pass_refs += p->ncur;
  return 0;
}

/* The period in force broke: learning goes on from the record's start
 * with the steps checked appended (1), or, where the period had checked
 * out whole, its record could not be kept or the record is already long,
 * starts over (0). */
static int keep_learning(lms__plan_t *p) {
  uint32_t period = p->period;
  if (p->pass_steps >= period ||
      (p->false_base > 0 &&
       (uint64_t)period + p->pass_steps >= (uint64_t)FALSE_SPAN * p->false_base))
    return 0;
  uint32_t base = p->false_base ? p->false_base : period;
  drop_schedule(p);
  p->swap->flat_use = 0;
  p->nsteps = period + p->pass_steps;
  p->nrefs += p->pass_refs;
  p->pass_steps = p->pass_refs = 0;
  lms__period_starts_recorded(&p->starts, p->nsteps);
  p->period = p->pos = 0;
  p->false_base = base;
  p->false_periods++;
  p->mode = MODE_LEARNING;
  return 1;
}

/* Note [Same shape, other chunk]
 * A signature leaves chunk identity out, so that an iteration that
 * allocates its tensors afresh is still recognised.  But a loop over many
 * chunks of one size (layers of equal width, a sweep over equal blocks)
 * repeats its signature every step, and taking the first repeat as the
 * period would make every chunk one key and leave nothing to prefetch.
 * So a step repeats step 0 only if each chunk it uses is the one step 0
 * used, or step 0's chunk has been freed, or the chunk is newer than step
 * 0 (allocated after it was recorded: a fresh tensor taking the role of
 * one still alive, as when an input batch is loaded before the last one
 * is freed).  An older, live chunk in step 0's place means another step of
 * the same shape.  So is a chunk made in the step itself while step 0's
 * is alive: a framework saving one activation per step for backward
 * (autograd mode, lms_alloc_copy) allocates a fresh chunk of the same
 * size in every layer of a stack of equal layers, and only once step 0's
 * chunk has been freed (after its backward) can a fresh one take its
 * part. */
static int repeats_step(const lms__plan_t *p, uint32_t j) {
  const pstep_t *s0 = &p->steps[j];
  for (uint32_t i = 0; i < s0->n && i < p->ncur; i++) {
    uint64_t was = p->refs[s0->first + i].key, now = p->cur[i].key;
    if (was != now && live_chunk(p, was) != NULL &&
        (now <= s0->serial || now > p->step_serial))
      return 0;
  }
  return 1;
}

/* Whether the step just closed, of signature sig, repeats recorded step j
 * (the test core/period.c asks of a start). */
typedef struct same_step {
  const lms__plan_t *p;
  uint64_t sig;
} same_step_t;

static int same_step(const void *ctx, uint32_t j) {
  const same_step_t *x = ctx;
  return x->p->steps[j].sig == x->sig && repeats_step(x->p, j);
}

/* Note [Where a period starts] in core/period.c: the starts a period may
 * take; drop_prefix leaves the steps before the one taken. */
static void drop_prefix(lms__plan_t *p, uint32_t j) {
  if (j == 0) return;
  uint32_t base = p->steps[j].first;
  memmove(p->steps, p->steps + j, (size_t)(p->nsteps - j) * sizeof *p->steps);
  p->nsteps -= j;
  for (uint32_t i = 0; i < p->nsteps; i++) p->steps[i].first -= base;
  memmove(p->refs, p->refs + base, (size_t)(p->nrefs - base) * sizeof *p->refs);
  p->nrefs -= base;
}

/* The step just finished (p->cur) is closed: learned, checked, bound. */
static void close_step(lms__plan_t *p) {
  if (p->declared) {
    if (p->mode == MODE_ACTIVE && p->declared_started &&
        p->steps[p->pos].n == p->ncur)
      bind_current(p, p->pos);
    return;
  }
  if (p->mode == MODE_NONE || p->ncur == 0) return;
  uint64_t sig = step_sig(p->cur, p->ncur);
  if (p->mode == MODE_ACTIVE) {
    if (p->steps[p->pos].sig == sig && repeats_step(p, p->pos)) {
      /* Note [A false period]: the first period's steps, as seen. */
      if (p->pass_steps < p->period && record_checked(p, sig) != 0)
        p->pass_steps = p->period; /* not recorded: it counts as whole */
      bind_current(p, p->pos);
      return;
    }
    uint32_t period = p->period, pos = p->pos;
    if (keep_learning(p)) {
      LMS_LOG(INFO, GRAPH, "learned schedule (period %u) stopped matching at "
              "step %u within its first period: a longer one is looked for",
              period, pos);
    } else {
      LMS_LOG(INFO, GRAPH, "learned schedule (period %u) stopped matching at "
              "step %u; learning again", p->period, p->pos);
      p->relearns++;
      restart_learning(p);
    }
  } else if (p->false_base > 0 &&
             (uint64_t)p->nsteps >= (uint64_t)FALSE_SPAN * p->false_base) {
    /* A record kept past false periods that grew too long: the program
     * changed (Note [A false period]). */
    p->relearns++;
    restart_learning(p);
  }
  const same_step_t same = {p, sig};
  uint32_t from = lms__period_starts_match(&p->starts, p->nsteps, p->implicit,
                                           same_step, &same);
  if (from != UINT32_MAX) {
    drop_prefix(p, from);
    uint32_t period = p->nsteps;
    if (activate(p, period) == 0) {
      p->pos = 0;
      /* Note [A false period]: this step is the first checked. */
      if (record_checked(p, sig) != 0) p->pass_steps = p->period;
      bind_current(p, 0);
      LMS_LOG(INFO, GRAPH, "learned a schedule of %u steps", period);
      return;
    }
    restart_learning(p);
  }
  if (record_current(p, sig) != 0) {
    LMS_LOG(WARN, GRAPH, "no period within %u references (or no memory): "
            "learning stops", PLAN_MAX_REFS);
    restart_learning(p);
    p->mode = MODE_NONE;
  }
}

/* ---- Prefetch ----------------------------------------------------------- */

static uint64_t window_bytes(const lms__plan_t *p) {
  return lms__window_cap(&p->window, p->swap->placement.capacity);
}

/* Prefetches c for step `need`; 1 to go on, 0 to stop, -1 on failure. */
static int prefetch_one(lms__plan_t *p, lms_chunk_t *c, unsigned access,
                        uint64_t need, uint64_t *ahead, uint64_t limit,
                        lms_status_t *st) {
  if (c == NULL || !c->host_homed) return 1;
  /* An overwrite needs no old bytes: its block comes at the acquire. */
  if (access & LMS_ACCESS_OVERWRITE) return 1;
  /* The step that begins and the next are always brought in, whatever
   * the bytes: the window bounds looking further ahead. */
  int near = need <= p->t + 1;
  if (c->dptr != NULL) {
    if (c->prefetched) *ahead += c->size;
    return near || *ahead <= limit;
  }
  if (!c->has_data) return 1;
  if (!near && *ahead + c->size > limit) return 0;
  *st = lms__swap_prefetch(p->swap, c, need, 0);
  if (*st == LMS_NOT_READY) {
    *st = LMS_OK;
    return 0;
  }
  if (*st != LMS_OK) return -1;
  *ahead += c->size;
  return 1;
}

/* Adds (d = 1) or takes away (d = -1) schedule step `pos` from the
 * window's working set. */
static void ws_step(lms__plan_t *p, uint32_t pos, int d) {
  const pstep_t *st = &p->steps[pos];
  for (uint32_t i = 0; i < st->n; i++) {
    uint32_t k = p->ref_key[st->first + i];
    if (d > 0) {
      if (p->ws_count[k]++ == 0) p->ws_bytes += p->key_size[k];
    } else if (--p->ws_count[k] == 0) {
      p->ws_bytes -= p->key_size[k];
    }
  }
}

/* How many steps from pos on fit the budget together (Note [Working set of
 * the window]): the window slides with pos and grows while the next step
 * keeps its distinct bytes within `budget`, so each step enters and leaves
 * it once an iteration, O(1) amortised per reference, plus one step
 * tried and taken out again per call. */
static uint32_t window_reach(lms__plan_t *p, uint32_t n, uint64_t budget) {
  if (!p->ws_valid || p->ws_len > p->period) {
    memset(p->ws_count, 0,
           (p->key_index.len + 1) * sizeof *p->ws_count);
    p->ws_bytes = 0;
    p->ws_first = p->pos;
    p->ws_len = 0;
    p->ws_valid = 1;
  }
  /* Slide the start to pos: the steps passed leave. */
  while (p->ws_first != p->pos && p->ws_len > 0) {
    ws_step(p, p->ws_first, -1);
    p->ws_first = (p->ws_first + 1) % p->period;
    p->ws_len--;
  }
  p->ws_first = p->pos;
  /* A smaller n (the window changed) drops the steps past it. */
  while (p->ws_len > n) {
    p->ws_len--;
    ws_step(p, (p->ws_first + p->ws_len) % p->period, -1);
  }
  /* Over the budget already (the steps ahead grew, a budget shrank):
   * shrink from the far end. */
  while (p->ws_len > 0 && p->ws_bytes > budget) {
    p->ws_len--;
    ws_step(p, (p->ws_first + p->ws_len) % p->period, -1);
  }
  while (p->ws_len < n) {
    uint32_t next = (p->ws_first + p->ws_len) % p->period;
    ws_step(p, next, 1);
    if (p->ws_bytes > budget) {
      ws_step(p, next, -1);
      break;
    }
    p->ws_len++;
  }
  return p->ws_len;
}

/* Note [Leaving late]
 * The plan sends a chunk away right after the use that begins a gap it
 * does not keep, so that its write-back starts as early as it can.  But
 * write-backs run one after another on the copy stream out, in the order
 * they were queued, and the block a chunk leaves is pending until its own
 * is done: whatever takes it waits for every write-back queued before.
 * In ResNet-50 training at 2x over pcie5 the optimiser's steps send away
 * the gradients and momenta they write (0.2 GB), and the next forward,
 * which must write home 1.1 GB of activations in 10.5 ms of compute,
 * found those 4 ms of write-backs ahead of its own: it waited at its
 * twelfth step, the link out then ran without a break until the 28th,
 * and the last 6 ms of forward computed with the link idle.  Left
 * resident instead, a dirty chunk leaves when an allocation needs its
 * room and the victims by next use pick it (Note [Victims by next use] in
 * residency.c), so write-backs are queued as room is needed; the host,
 * being ahead of the device, still queues them well before the device
 * gets there.  61.6 ms became 57.5 (51.1 from 56.5 over nvlink2); leaving
 * late only the optimiser's chunks gains as much.  Where the budget is
 * tight the early write-backs are what keep the link out busy (ResNet-50
 * at 10x over pcie3: 332.5 ms sending them away at once, 358.9 leaving
 * them), so neither is right everywhere: after the plans' trial (Note
 * [Ways to look ahead, measured]) the faster plan runs again leaving its
 * dirty chunks late, and is kept so only if 2 % faster.  Leaving late
 * can change which plan is the fastest: in the 3D U-Net's training at
 * 144^3 under 6 GiB over pcie3 with -lms 8192, the plan by density
 * (2451.2 ms) was the fastest and took 2493.9 ms leaving late, the spread
 * plan 2533.9 and 2247.1.  So where leaving late does not make the plan
 * chosen 2 % faster, the next fastest plan runs leaving late too, and
 * the faster of the two is the one held to the window and to the plan
 * chosen (bench/results/2026-11-28-sim-whole-chunks-kept.md).  A plan
 * on trial leaving late that left no dirty chunk late (streaming
 * inference has none) is that plan timed again, and its time is not
 * taken as leaving late's: counted, the spread plan timed twice, 29.975
 * ms both times, was kept over the window's 30.620 on streaming at 4x
 * over nvlink2, though it had not been 2 % faster than the plan (30.104)
 * when timed the first time, and the window, kept before, settles at
 * 29.2.  Nor is such a plan timed: a plan that sent no dirty chunk away
 * in its own iterations on trial (kind_dirty) is not tried leaving late,
 * and where it was the one chosen the next fastest is, if that one sent
 * any.  Streaming inference, which writes no chunk it keeps, settles
 * four iterations sooner (52 fewer over its twelve runs of the sweep),
 * and no run of the eight traces' sweep changes its time
 * (bench/results/2026-11-28-sim-leaving-before-room.md).  Clean chunks
 * leave as planned: nothing is queued for them and their blocks are free
 * at once (bench/results/2026-11-25-sim-leaving-late.md). */

/* Note [Leaving before making room]
 * At a step boundary the room for the outputs of the step that begins
 * is made first (Note [Room ahead]), from victims by next use.  Under a
 * plan, the chunks it sends away after the step just done must have left
 * by then: their room is the room the plan gave those outputs.  Made
 * before they left, it took the chunk used furthest ahead, which the
 * plan most often keeps, and that came back later at the cost of a copy
 * each way.  In VGG-16's training at 2x over pcie3 under the plan by
 * density, the room for conv11's output took conv1's (411 MB, kept from
 * forward to backward) where conv10's input and weight were to leave:
 * 3.05 GB came in an iteration where the plan brings in 2.64; with the
 * chunks sent away first, 2.74, and 412.8 ms became 392.6.  The test
 * planned::a_plan_brings_in_what_it_planned holds a plan run alone to
 * its bytes (bench/results/2026-11-28-sim-leaving-before-room.md). */

/* Note [Home before leaving]
 * A dirty chunk the plan sends away after a step was written home when it
 * left, after that step, and the step after it waited for the copy if it
 * needed the room.  Where the step it leaves after only reads it, its
 * bytes are final when that step begins, and the copy home can run while
 * the step computes: it is queued at the step boundary before (the copy
 * reads the block; the step's kernels read it too), the chunk stays
 * resident and clean, and leaves after the step as a drop.  Training
 * writes an activation and has the next layer read it: VGG-16's first
 * convolution's output, 411 MB, 7.8 ms over pcie5, went home while the
 * second convolution, 2.4 ms, ran instead of after it.  Queued earlier
 * still (after the chunk's last write, however far ahead of its
 * leaving), the copies of chunks that leave much later held up on the
 * link out the copies of those that leave now: the mixed-precision
 * decoder at 2x over pcie3 went from 1.066 to 1.213 of its lower bound.
 * A step ahead, of the nine traces' 108 runs, 22 gained up to 2.4 % and
 * two lost 0.9 % and 1.8 % (in the second the trial chose another way)
 * (bench/results/2026-11-29-sim-home-before-leaving.md).  Not where the
 * plan leaves dirty chunks late (Note [Leaving late]), which keeps them
 * dirty until their room is needed on purpose.  The test
 * planned::home_before_leaving_overlaps_the_step holds the copies to the
 * same bytes and the iteration to less time. */
int lms__plan_home_late;

/* The chunks the plan sends away after the step just done leave (the
 * dirty ones only when their room is needed, if the plan leaves late),
 * and those it sends away after the step that begins, which only reads
 * them, go home now (Note [Home before leaving]). */
static lms_status_t planned_drops(lms__plan_t *p) {
  const lms__ahead_t *a = &p->ahead;
  uint32_t prev = (p->pos + p->period - 1) % p->period;
  const pstep_t *ps = &p->steps[prev];
  for (uint32_t i = ps->first; i < ps->first + ps->n; i++) {
    if (!a->drop[i]) continue;
    lms_chunk_t *c = p->key_chunk[p->ref_key[i]];
    if (c != NULL && c->dirty) p->sent_dirty++;
    if (c != NULL && p->late && c->dirty) {
      p->left_late++;
      continue;
    }
    if (c != NULL) LMS_CHECK(lms__swap_drop(p->swap, c));
  }
  /* Note [Home before leaving]. */
  const pstep_t *ns = &p->steps[p->pos];
  for (uint32_t i = ns->first;
       i < ns->first + ns->n && !p->late && !lms__plan_home_late; i++) {
    if (!a->drop[i] || (p->refs[i].access & LMS_ACCESS_WRITE)) continue;
    lms_chunk_t *c = p->key_chunk[p->ref_key[i]];
    int wrote = 0;
    if (c != NULL) LMS_CHECK(lms__swap_write_home(p->swap, c, &wrote));
    p->sent_dirty += (uint64_t)wrote;
  }
  return LMS_OK;
}

/* Note [The plan says when]
 * The window brings in the chunks of the step that begins and of the
 * next whatever the room, so that a copy in has at least a step's compute
 * to hide behind.  Under a plan the copies it makes start where it gave
 * them room, and what the next step reads is either kept (resident),
 * brought in by the plan from where it has room (or at its use, Note [A
 * copy in with no room before its use] in ahead.c), or was pushed out
 * against the plan.  Brought in a step early whatever the room, such a
 * chunk took the room of one the plan keeps, which then came back the
 * same way a few steps later: a cycle of copies the plan never made, or
 * a copy pushed out again by the step's own outputs before its use.  In
 * the LSTM's training at 4x over pcie5, the plan forced, it brings in
 * 3.11 GB an iteration and the run brought in 3.78, five of its twelve
 * 134 MB weights and optimiser states each iteration, pushed out at the
 * optimiser's steps; with only the step that begins brought in whatever
 * the plan says, 3.24 GB and 280.3 -> 271.8 ms.  In VGG-16's training at
 * 4x over nvlink2 the backward of the first pooling layer reads conv1's
 * output (411 MB) and writes its input's gradient (411 MB); conv0's
 * output (411 MB), brought in for the next step during it, was pushed out
 * by that gradient at once, every iteration: with both notes, 127.7 ->
 * 119.5 ms and 4.89 -> 4.03 GB brought in, fewer than LRU's 4.74.  Where
 * the copy a step early found room it gave lead: the plan by density on
 * VGG-16 at 2x over nvlink2 took 100.6 ms with it and 102.1 without; the
 * copy a step early only into free room was tried and kept that run but
 * lost the LSTM's gain (bench/results/2026-11-29-sim-room-before-use.md).
 * Not where the plan leaves its dirty chunks late (Note [Leaving late]):
 * those it sends away stay until their room is needed, so what happens
 * is not what it planned anyway, and the copy for the next step is what
 * makes that room, and starts their write-backs, a step ahead.  ResNet-50
 * at 2x (1.24 GiB) over pcie5 took 57.5 ms leaving late with it and 60.9
 * without, and the trial then kept the plan, at 61.2 (tests/
 * cli_workloads.sh checks that run).  Tested by
 * planned::a_plan_alone_wastes_no_copy. */

/* The planned period at a step boundary (Note [A planned period] in
 * ahead.c), once the chunks sent away have left (planned_drops): the
 * fetches the plan starts here join those waiting, and those are tried
 * in order of use until one finds no room (the next would take room the
 * earlier one needs).  The chunks of the step that begins (and, leaving
 * late, of the next) are brought in whatever the plan says, as the
 * window does (Note [The plan says when]). */
static lms_status_t planned_prefetch(lms__plan_t *p) {
  const lms__ahead_t *a = &p->ahead;
  for (uint32_t f = a->fetch_first[p->pos]; f < a->fetch_first[p->pos + 1];
       f++) {
    uint32_t r = a->fetch_ref[f];
    if (grow_arr((void **)&p->pend, &p->pend_cap, p->npend, sizeof *p->pend))
      break;
    uint32_t d = (p->ref_step[r] + p->period - p->pos) % p->period;
    /* In order of need: a short insertion from the end. */
    uint32_t j = p->npend++;
    while (j > 0 && p->pend[j - 1].need > p->t + d) {
      p->pend[j] = p->pend[j - 1];
      j--;
    }
    p->pend[j] = (struct pending){r, p->t + d};
  }
  uint32_t kept = 0, j = 0;
  lms_status_t st = LMS_OK;
  for (; j < p->npend; j++) {
    struct pending e = p->pend[j];
    if (e.need < p->t) continue; /* its step has begun: the acquire's */
    lms_chunk_t *c = p->key_chunk[p->ref_key[e.ref]];
    /* Past the period's end only chunks that live on are the ones used. */
    if (c == NULL || (e.need - p->t > p->period - 1 - p->pos &&
                      c->serial != p->refs[e.ref].key))
      continue;
    /* Note [A planned copy takes clean room] in swap/residency.c. */
    st = lms__swap_prefetch(p->swap, c, e.need, LMS__PREFETCH_CLEAN);
    if (st == LMS_NOT_READY) {
      st = LMS_OK;
      break;
    }
    if (st != LMS_OK) break;
  }
  for (; j < p->npend; j++) p->pend[kept++] = p->pend[j];
  p->npend = kept;
  LMS_CHECK(st);
  /* Note [The plan says when]: the step that begins only, but where the
   * plan leaves dirty chunks late. */
  uint64_t ahead = 0;
  uint32_t nd = p->late ? 2u : 1u;
  for (uint32_t d = 0; d < nd && d < p->period; d++) {
    const pstep_t *s = &p->steps[(p->pos + d) % p->period];
    int next_iteration = p->pos + d >= p->period;
    for (uint32_t i = s->first; i < s->first + s->n; i++) {
      lms_chunk_t *c = p->key_chunk[p->ref_key[i]];
      if (c != NULL && next_iteration && c->serial != p->refs[i].key) continue;
      int r = prefetch_one(p, c, p->refs[i].access, p->t + d, &ahead, 0, &st);
      if (r <= 0) return st;
    }
  }
  return LMS_OK;
}

static lms_status_t prefetch(lms__plan_t *p) {
  p->horizon = LMS__NEVER;
  if (p->policy == LMS_POLICY_ONDEMAND || p->window.steps == 0) return LMS_OK;
  uint64_t limit = window_bytes(p), ahead = 0;
  /* Note [A window that adapts]: the window's bytes are a ceiling; the
   * bytes looked ahead follow the prefetches' fate.  A prefetch that was
   * late means the link, not the lead, is what the step waited for:
   * looking further ahead cannot make copies arrive sooner, and every
   * chunk brought in early holds room that what is reused (a weight
   * block streamed past every iteration) would otherwise keep, so the
   * traffic grows (streaming inference at 2x: 2.11 GB an iteration with
   * the whole window, 1.41 GB adapting, 1.22 GB at least).  So a step
   * that saw a late prefetch halves the bytes ahead, and a step whose
   * prefetches all arrived in time doubles them, between 1/64 of the
   * budget and the window's bytes.  The step that begins and the next are
   * brought in whatever the bytes (prefetch_one).  On a GPU a late
   * prefetch is seen a little after its step, when the timed events
   * around its wait are read (Note [Stalls measured after the fact] in
   * swap/residency.c); `--sim-measured-waits` runs that here. */
  if (p->mode == MODE_ACTIVE) {
    int64_t late = p->swap->stats.prefetch_late.total;
    int64_t hits = p->swap->stats.prefetch_hits.total;
    if (p->ahead_limit == 0) p->ahead_limit = limit;
    if (late > p->seen_late) p->ahead_limit /= 2;
    else if (hits > p->seen_hits) p->ahead_limit *= 2;
    uint64_t least = p->swap->placement.capacity / 64;
    if (p->ahead_limit < least) p->ahead_limit = least;
    if (p->ahead_limit > limit) p->ahead_limit = limit;
    p->seen_late = late;
    p->seen_hits = hits;
    limit = p->ahead_limit;
  }
  lms_status_t st = LMS_OK;
  if (p->mode == MODE_ACTIVE) {
    uint32_t n = p->window.steps < p->period ? p->window.steps : p->period;
    /* Note [Working set of the window]: a chunk brought in for step t + d
     * stays only if everything steps t .. t + d use fits beside it; past
     * that, the allocations of the steps in between would push it out
     * again before its use, and the copy would be wasted.  So the walk
     * stops at the step where the distinct bytes used so far exceed the
     * budget (less a margin for fragmentation). */
    uint64_t budget = p->swap->placement.capacity / 20 * 16;
    /* Note [Room ahead]: the outputs the step that begins will overwrite
     * need blocks but no copy; made at the acquire, that room would come
     * from victims whose write-backs the compute stream then waits for.
     * Made here, before the step's other work is enqueued, the write-backs
     * start one step earlier in the device's order.  (Looking further
     * ahead evicts chunks the steps in between still use.) */
    /* Note [Leaving before making room]. */
    if (p->planned) LMS_CHECK(planned_drops(p));
    uint64_t room = 0;
    const pstep_t *now = &p->steps[p->pos];
    for (uint32_t i = 0; i < now->n; i++) {
      const pref_t *ref = &p->refs[now->first + i];
      if (!(ref->access & LMS_ACCESS_OVERWRITE)) continue;
      lms_chunk_t *c = p->key_chunk[p->ref_key[now->first + i]];
      if (c == NULL || c->dptr == NULL) room += ref->size;
    }
    if (room > 0) LMS_CHECK(lms__swap_make_room(p->swap, room, p->t));
    if (p->planned) return planned_prefetch(p);
    uint32_t reach = window_reach(p, n, budget);
    /* Nothing past the walk: the working set fits, nothing need leave. */
    p->horizon = reach < n ? p->t + reach : LMS__NEVER;
    if (lms__swap_reference) {
      for (uint32_t d = 0; d < reach; d++) {
        const pstep_t *s = &p->steps[(p->pos + d) % p->period];
        int next_iteration = p->pos + d >= p->period;
        for (uint32_t i = 0; i < s->n; i++) {
          const pref_t *ref = &p->refs[s->first + i];
          lms_chunk_t *c = p->key_chunk[p->ref_key[s->first + i]];
          /* Past the end of the period only chunks that live on (playing
           * their own keys) are the ones the next iteration will use. */
          if (c != NULL && next_iteration && c->serial != ref->key) continue;
          int r = prefetch_one(p, c, ref->access, p->t + d, &ahead, limit, &st);
          if (r <= 0) return st;
        }
      }
      return st;
    }
    /* The same walk over the references that may matter (Note [Walking
     * only what the window acts on]): the steps reached from pos to the
     * period's end, then from its start. */
    if (reach == 0) return st;
    uint32_t last = p->pos + reach - 1;
    for (int part = 0; part < 2; part++) {
      uint32_t from = part == 0 ? p->steps[p->pos].first : 0;
      uint32_t to_step = part == 0 ? (last < p->period ? last : p->period - 1)
                                   : last - p->period;
      if (part == 1 && last < p->period) break;
      uint32_t end = p->steps[to_step].first + p->steps[to_step].n;
      for (uint32_t i = act_next(p, from, end); i < end;
           i = act_next(p, i + 1, end)) {
        const pref_t *ref = &p->refs[i];
        lms_chunk_t *c = p->key_chunk[p->ref_key[i]];
        uint32_t d = part == 0 ? p->ref_step[i] - p->pos
                               : p->ref_step[i] + p->period - p->pos;
        if (c != NULL && part == 1 && c->serial != ref->key) continue;
        int r = prefetch_one(p, c, ref->access, p->t + d, &ahead, limit, &st);
        if (r <= 0) return st;
      }
    }
  } else if (p->source == LMS_SCHED_STACK && !p->declared) {
    uint32_t n = 0;
    for (lms_chunk_t *c = p->swap->all; c != NULL && n < p->window.steps;
         c = c->all_next, n++) {
      int r = prefetch_one(p, c, LMS_ACCESS_READ, next_use(p, c), &ahead,
                           limit, &st);
      if (r <= 0) return st;
    }
  }
  return st;
}

/* ---- Events from the context ------------------------------------------ */

static void on_change(void *arg, const lms_chunk_t *c);

lms_status_t lms__plan_create(lms__swap_t *s, const lms__opts_t *o,
                              lms__plan_t **out) {
  lms__plan_t *p = calloc(1, sizeof *p);
  if (p == NULL) return LMS_ERR_HOST_OOM;
  p->swap = s;
  p->gen = 1;
  p->policy = o->policy;
  p->window = o->prefetch_window;
  p->source = o->schedule;
  p->mode = p->source == LMS_SCHED_LEARN ? MODE_LEARNING : MODE_NONE;
  lms__period_starts_init(&p->starts);
  if (o->trace != NULL && o->trace[0] != '\0') {
    p->trace = calloc(1, sizeof *p->trace);
    if (p->trace == NULL) {
      free(p);
      return LMS_ERR_HOST_OOM;
    }
    lms__wl_init(p->trace, "recorded");
    lms__path_expand(o->trace, p->trace_path, sizeof p->trace_path);
  }
  s->next_use = next_use;
  s->next_use_arg = p;
  s->on_change = on_change;
  *out = p;
  return LMS_OK;
}

lms_status_t lms__plan_destroy(lms__plan_t *p, char *err) {
  if (p == NULL) return LMS_OK;
  lms_status_t st = LMS_OK;
  if (p->trace != NULL) {
    if (p->ncur > 0 || p->pending_ns > 0) lms__plan_step(p);
    if (p->trace->nsteps == 0) {
      LMS_LOG(WARN, GRAPH, "--trace %s: the run had no steps; nothing "
              "written", p->trace_path);
    } else {
      st = lms__trace_write(p->trace_path, p->trace, err);
    }
    lms__wl_free(p->trace);
    free(p->trace);
  }
  drop_schedule(p);
  /* The swap outlives the plan: nothing of it may call back here. */
  p->swap->next_use = NULL;
  p->swap->next_use_arg = NULL;
  p->swap->on_change = NULL;
  u64map_free(&p->key_index);
  u64map_free(&p->bind);
  u64map_free(&p->live);
  u64map_free(&p->trace_ids);
  free(p->steps);
  free(p->refs);
  free(p->cur);
  free(p->pend);
  free(p);
  return st;
}

lms_status_t lms__plan_on_alloc(lms__plan_t *p, lms_chunk_t *c) {
  /* Note [Chunks of pieces] in swap/residency.c: the schedule sees the
   * pieces, each a chunk of its own. */
  if (c->npieces > 0) {
    for (uint32_t i = 0; i < c->npieces; i++) {
      lms_status_t st = lms__plan_on_alloc(p, c->pieces[i]);
      if (st != LMS_OK) {
        while (i-- > 0) lms__plan_on_free(p, c->pieces[i]);
        return st;
      }
    }
    return LMS_OK;
  }
  if (u64map_put(&p->live, c->serial, (uint64_t)(uintptr_t)c) != 0)
    return LMS_ERR_HOST_OOM;
  if (p->trace != NULL) {
    char name[32];
    uint32_t id;
    snprintf(name, sizeof name, "c%llu", (unsigned long long)c->serial);
    if (lms__wl_add_chunk(p->trace, c->size, 0, name, &id) != LMS_OK ||
        u64map_put(&p->trace_ids, c->serial, (uint64_t)id + 1) != 0) {
      u64map_del(&p->live, c->serial);
      return LMS_ERR_HOST_OOM;
    }
  }
  return LMS_OK;
}

/* c may have come to matter to the window's walk (Note [Walking only
 * what the window acts on]): the references of the keys it plays. */
static void on_change(void *arg, const lms_chunk_t *c) {
  lms__plan_t *p = arg;
  if (p->mode != MODE_ACTIVE || p->act[0] == NULL) return;
  if (c->plan_key != 0 && c->plan_gen == p->gen &&
      p->key_chunk[c->plan_kidx] == c)
    act_key(p, c->plan_kidx);
  uint64_t *k = u64map_find(&p->key_index, c->serial);
  if (k != NULL && (uint32_t)*k != c->plan_kidx && p->key_chunk[*k] == c)
    act_key(p, (uint32_t)*k);
}

void lms__plan_on_free(lms__plan_t *p, lms_chunk_t *c) {
  if (c->npieces > 0) {
    for (uint32_t i = 0; i < c->npieces; i++)
      if (c->pieces[i] != NULL) lms__plan_on_free(p, c->pieces[i]);
    return;
  }
  u64map_del(&p->live, c->serial);
  if (c->plan_gen != p->gen) c->plan_key = 0;
  if (c->plan_key != 0) {
    uint64_t *b = u64map_find(&p->bind, c->plan_key);
    if (b != NULL && *b == c->serial) u64map_del(&p->bind, c->plan_key);
  }
  if (p->mode == MODE_ACTIVE && p->key_chunk != NULL) {
    /* Keys that resolved to c: the one it played, and its own serial. */
    if (c->plan_key != 0)
      set_key_chunk(p, c->plan_kidx, resolve(p, c->plan_key));
    uint64_t *k = u64map_find(&p->key_index, c->serial);
    if (k != NULL) set_key_chunk(p, (uint32_t)*k, resolve(p, c->serial));
  }
  /* A chunk freed during its step stays in the step's references: they
   * are matched by position.  Its serial no longer resolves, so it binds
   * nothing. */
  if (p->trace != NULL) {
    uint64_t *id = u64map_find(&p->trace_ids, c->serial);
    if (id != NULL) p->trace->chunks[*id - 1].transient = 1;
  }
}

/* A chunk acquired again in one step merges into its first reference,
 * found through the step number and index it carries (cur_t, cur_i), so
 * a step of n references costs O(n), not O(n^2). */
void lms__plan_on_acquire(lms__plan_t *p, lms_chunk_t *c, unsigned access) {
  if (c->npieces > 0) {
    p->saw_pieces = 1;
    for (uint32_t i = 0; i < c->npieces; i++)
      if (c->pieces[i] != NULL) lms__plan_on_acquire(p, c->pieces[i], access);
    return;
  }
  p->acquire_serial = p->swap->serial;
  if (c->cur_t == p->t + 1 && c->cur_i < p->ncur &&
      p->cur[c->cur_i].key == c->serial) {
    pref_t *r = &p->cur[c->cur_i];
    /* A second acquire in one step that reads needs the old bytes. */
    if (access & LMS_ACCESS_READ) r->access &= ~LMS_ACCESS_OVERWRITE;
    r->access |= access & LMS_ACCESS_RW;
    return;
  }
  if (grow_arr((void **)&p->cur, &p->cur_cap, p->ncur, sizeof *p->cur)) return;
  c->cur_t = p->t + 1;
  c->cur_i = p->ncur;
  p->cur[p->ncur].key = c->serial;
  p->cur[p->ncur].size = c->size;
  p->cur[p->ncur].access = access & (LMS_ACCESS_RW | LMS_ACCESS_OVERWRITE);
  p->ncur++;
}

void lms__plan_on_compute(lms__plan_t *p, uint64_t ns) { p->pending_ns += ns; }

/* Note [Victims by next use] in residency.c: with a schedule active, the
 * index is rebuilt when an iteration begins (or the schedule was just
 * made), and otherwise the chunks the finished step used, whose next use
 * has moved on, are re-keyed; without one there is no index. */
static void reindex(lms__plan_t *p) {
  lms__swap_t *s = p->swap;
  /* next_use() below is LMS__NEVER for every chunk. */
  s->flat_use = p->mode != MODE_ACTIVE &&
                !(p->source == LMS_SCHED_STACK && !p->declared);
  if (p->mode != MODE_ACTIVE || p->policy != LMS_POLICY_SCHEDULE) {
    if (s->use_index) lms__swap_use_index(s, 0);
    return;
  }
  if (!s->use_index || p->pos == 0) {
    lms__swap_use_index(s, 1);
    return;
  }
  for (uint32_t i = 0; i < p->ncur; i++) {
    lms_chunk_t *c = live_chunk(p, p->cur[i].key);
    if (c != NULL) lms__swap_rekey(s, c);
  }
}

/* Appends the finished step to the trace being recorded. */
static void trace_step(lms__plan_t *p) {
  if (p->trace == NULL || (p->ncur == 0 && p->pending_ns == 0)) return;
  uint64_t ns = p->pending_ns;
  if (ns > LMS__WL_MAX_STEP_NS) ns = LMS__WL_MAX_STEP_NS;
  char name[32];
  snprintf(name, sizeof name, "s%u", p->trace->nsteps);
  if (lms__wl_add_step(p->trace, ns, name) != LMS_OK) return;
  for (uint32_t i = 0; i < p->ncur; i++) {
    uint64_t *id = u64map_find(&p->trace_ids, p->cur[i].key);
    /* In a trace "w" means the step overwrites the chunk; a write that
     * may keep old bytes is recorded as "rw". */
    unsigned acc = p->cur[i].access;
    if ((acc & LMS_ACCESS_WRITE) && !(acc & LMS_ACCESS_OVERWRITE))
      acc |= LMS_ACCESS_READ;
    if (id != NULL && (acc & LMS_ACCESS_RW) != 0)
      lms__wl_add_ref(p->trace, (uint32_t)(*id - 1), acc & LMS_ACCESS_RW);
  }
}

static lms_status_t settle_declared(lms__plan_t *p);

/* Note [Back to the window]
 * The trial times the window first, then the plans, so where it keeps
 * the window it hands it a device filled as the last plan on trial left
 * it, and the window's bytes ahead (Note [A window that adapts]) where
 * the plans' iterations took them.  From there the window does not
 * always find the cycle it was timed in: on a 7B decoder's decoding
 * step at 2x over pcie3 it took 917.1 ms an iteration on trial and
 * settled at 949.7 ms after it, bringing in 11.58 GB an iteration
 * instead of 11.18 (over nvlink2 169.9 and 175.8 ms), and which cycle it
 * fell into moved with any change to the plans on trial
 * (bench/results/2026-11-28-sim-whole-chunks-kept.md).  Sending away
 * only what the window did not hold when its trial ended, with its bytes
 * ahead of then, was tried first and did not always find it either.  So
 * the window, kept after the plans ran, starts over as it started on
 * trial: at the first step after the trial every chunk not in use leaves
 * (written home if dirty) and its bytes ahead start again from the
 * window's.  Over the eight traces' sweep it moved ten runs: eight of
 * the decoder's 0.9-3.9 % faster, one (10x over pcie5) 0.7 % slower, and
 * GPT-2 at 4x over nvlink2 0.4 % faster.  It does not make the window's
 * cycle unique: streaming at 10x over pcie3 settles 2.2 % slower than on
 * trial, with or without it.  Any plan having run is what counts, not
 * only the plan by end: where that one cannot be built after the spread
 * plans ran (host memory short by then), they have run all the same
 * (planned::the_window_starts_over_after_any_plan).
 * Those settled figures were each run's first two alike iterations.
 * Settled as Note [A settled iteration] in replay/replay.c now asks (the
 * same chunks on the device at both ends, or six alike), the decoder at
 * 2x over pcie3 and nvlink2 settles at 950.1 and 178.0 ms, 3.6 % and 4.8 %
 * slower than on trial, with the window starting over: which layers stay
 * turns from one iteration to the next, and the trial's six iterations
 * see a stretch of that (bench/results/2026-12-02-sim-settled.md).
 * Cost: once a trial, the device's bytes out and back in. */
static lms_status_t back_to_the_window(lms__plan_t *p) {
  p->window_back = 0;
  p->windows_back++;
  p->ahead_limit = 0;
  return lms__swap_evict_all(p->swap);
}

static lms_status_t step_at(lms__plan_t *p, uint64_t serial) {
  LMS_CHECK(settle_declared(p));
  trace_step(p);
  close_step(p);
  p->pending_ns = 0;
  p->step_serial = serial;
  p->t++;
  p->swap->step = p->t;
  lms__stat_add(&p->swap->stats.steps, 1);
  if (p->mode == MODE_ACTIVE) {
    if (p->declared && !p->declared_started) {
      p->declared_started = 1;
      p->pos = 0;
    } else {
      p->pos = (p->pos + 1) % p->period;
    }
  }
  if (p->mode == MODE_ACTIVE && p->pos == 0 && p->have_plan) trial_step(p);
  if (p->window_back) LMS_CHECK(back_to_the_window(p));
  reindex(p);
  p->ncur = 0;
  LMS_CHECK(prefetch(p));
  /* Note [Free reserve]: with the device full, every copy in waits for a
   * copy out, and on a slow link the two directions then take turns.  So
   * after prefetching, an eighth of the budget is kept free by evicting
   * what is not needed in the next two steps: its write-backs run while
   * the device computes, and the next prefetches find room at once.  It
   * costs capacity: under a budget a few chunks wide, a chunk now and then
   * comes back later than it would have (the relearning test shows one in
   * eight late, none missed).  Writing dirty chunks back early while
   * keeping them resident was tried instead and gained nothing: the room,
   * not the write-back, is what the next copy waits for.  The room is for
   * the window's prefetches, so it is no larger than the bytes the window
   * looks ahead now (Note [A window that adapts]): where prefetches come
   * late the link is the limit, and room held empty beyond what the
   * window will fill only pushes out what is reused (streaming at 2x held
   * three of its 24 weight blocks empty for good; the five-trace sweep's
   * median went from 1.107 to 1.069 of the lower bound, GoogLeNet b10 at
   * 16 GiB unchanged; bench/results/2026-11-24-sim-measured-waits.md). */
  if (p->mode == MODE_ACTIVE && p->policy != LMS_POLICY_ONDEMAND &&
      p->window.steps > 0 && !p->planned)
  {
    uint64_t reserve = p->swap->placement.capacity / 8;
    if (p->ahead_limit > 0 && p->ahead_limit < reserve)
      reserve = p->ahead_limit;
    LMS_CHECK(lms__swap_make_room(p->swap, reserve, p->t + 2));
  }
  /* Note [Writing back ahead] in residency.c: about the next victim.
   * There is none to write for when the most chunk bytes ever live at
   * once (the period's peak, once an iteration has run) fit on the device
   * beside the free reserve: nothing will be evicted, and each write
   * would be a copy for nothing (GoogLeNet batch 10 under 32 GiB, 25.9
   * GiB of chunks: 3.96 GB an iteration, 5.5 % slower over pcie3).  The
   * bytes live now would not do: after an update only the weights are,
   * and that is when writing them back ahead helps most. */
  int all_fit =
      p->swap->chunk_bytes_peak <= p->swap->placement.capacity / 8 * 7;
  if (p->mode == MODE_ACTIVE && p->policy == LMS_POLICY_SCHEDULE &&
      p->window.steps > 0 && p->horizon != LMS__NEVER && !all_fit &&
      !p->planned)
    return lms__swap_clean_ahead(p->swap, p->swap->placement.capacity / 256,
                                 p->horizon);
  return LMS_OK;
}

lms_status_t lms__plan_step(lms__plan_t *p) {
  p->implicit = 0;
  return step_at(p, p->swap->serial);
}

/* Note [Same shape, other chunk] continued: a program that does not mark
 * its steps makes each acquire a step, and makes a chunk before the
 * acquire that first writes it, so the chunk came after the previous
 * acquire, not after the step began; counted from the step's beginning
 * it looked like a fresh tensor taking the role of one still alive.  Then
 * setup, writing one new weight after another, repeated step 0 whenever
 * two weights had the same size: at 100,000 references an iteration the
 * learner took and dropped a schedule about 2,000 times before the
 * program's own steps began, each costing an index of every resident
 * chunk (Note [Victims by next use]). */
lms_status_t lms__plan_acquire_step(lms__plan_t *p) {
  p->implicit = 1;
  return step_at(p, p->acquire_serial);
}

lms_status_t lms__plan_declare(lms__plan_t *p, lms_chunk_t *const *chunks,
                               const unsigned *access, size_t n,
                               uint64_t compute_ns) {
  (void)compute_ns;
  if (!p->declared) {
    restart_learning(p);
    p->declared = 1;
    p->declared_started = 0;
  }
  /* Note [Declaring is linear]: the schedule was rebuilt after each step
   * declared, O(n^2) for n steps; now the steps are appended and it is
   * built once, when the next step begins (or the schedule is asked
   * about). */
  uint32_t saved_ncur = p->ncur;
  pref_t *saved = NULL;
  if (saved_ncur > 0) {
    saved = malloc(saved_ncur * sizeof *saved);
    if (saved == NULL) return LMS_ERR_HOST_OOM;
    memcpy(saved, p->cur, saved_ncur * sizeof *saved);
  }
  p->ncur = 0;
  for (size_t i = 0; i < n; i++) lms__plan_on_acquire(p, chunks[i], access[i]);
  /* The schedule so far is records [0, period), then those appended
   * since; append. */
  if (!p->declare_pending) p->nsteps = p->period;
  int bad = record_current(p, step_sig(p->cur, p->ncur)) != 0;
  p->declare_pending = !bad;
  p->ncur = 0;
  for (uint32_t i = 0; i < saved_ncur; i++) p->cur[p->ncur++] = saved[i];
  free(saved);
  if (bad) {
    restart_learning(p);
    p->declared = 0;
    return LMS_ERR_HOST_OOM;
  }
  p->pos = 0;
  return LMS_OK;
}

void lms__plan_relearn(lms__plan_t *p) {
  if (p->declared) return;
  p->ncur = 0;
  restart_learning(p);
}

/* Builds the schedule of the steps declared so far, if any are new. */
static lms_status_t settle_declared(lms__plan_t *p) {
  if (!p->declare_pending) return LMS_OK;
  p->declare_pending = 0;
  if (activate(p, p->nsteps) == 0) {
    p->pos = 0;
    return LMS_OK;
  }
  restart_learning(p);
  p->declared = 0;
  LMS_LOG(WARN, GRAPH, "no host memory for the declared schedule: "
          "learning instead");
  return LMS_ERR_HOST_OOM;
}

void lms__plan_declare_clear(lms__plan_t *p) {
  p->declare_pending = 0;
  p->declared = 0;
  p->declared_started = 0;
  restart_learning(p);
}

void lms__plan_info(const lms__plan_t *p, lms__plan_info_t *out) {
  memset(out, 0, sizeof *out);
  out->source = p->declared ? "declared"
                : p->mode == MODE_ACTIVE ? "learned"
                : p->source == LMS_SCHED_STACK ? "stack"
                : "none";
  out->period = p->declare_pending         ? p->nsteps
                : p->mode == MODE_ACTIVE ? p->period
                                         : 0;
  out->steps = p->t;
  out->relearns = p->relearns;
  out->false_periods = p->false_periods;
  out->ahead = !p->planned ? "window"
               : p->spread ? "spread"
               : p->dense == 2 ? "dense-w"
               : p->dense == 3 ? "dense-h"
               : p->dense == 4 ? "dense-s"
               : p->dense  ? "dense"
               : p->cut    ? "cut"
                           : "plan";
  out->deciding = p->trial > TRIAL_NONE && p->trial < TRIAL_DONE;
  /* Note [The trial keeps score]: the iterations the watch does not
   * count, and a run of slow ones that may replace the way kept, are not
   * yet what the program goes on to take. */
  out->held = p->trial == TRIAL_WATCH &&
              (p->watch_n <= WATCH_SKIP || p->watch_slow > 0);
  out->trial_window_ns = p->trial_window_ns;
  out->trial_plan_ns = p->trial_plan_ns;
  out->trial_spread_ns = p->trial_spread_ns;
  out->trial_late_ns = p->trial_late_ns;
  out->late = p->planned && p->late;
  out->order = p->planned && p->order;
  out->trial_order_ns = p->trial_order_ns;
  out->trial_dense_ns = p->trial_dense_ns;
  out->dense_alike = p->dense_alike;
  out->trial_cut_ns = p->trial_cut_ns;
  out->trial_cut_in = p->trial_cut_in;
  out->cut_step = p->cut_step;
  out->cut_plan_in = p->cut_plan_in;
  out->cut_alike = p->cut_alike;
  out->plan_cut = p->have_plan ? p->ahead.cut : 0;
  out->end_plan_in = p->end_plan_in;
  out->dense_plan_in = p->dense_plan_in;
  out->trial_dorder_ns = p->trial_dorder_ns;
  out->trial_dorder_in = p->trial_dorder_in;
  out->trial_dout_ns = p->trial_dout_ns;
  out->trial_dout_in = p->trial_dout_in;
  out->trial_dhold_ns = p->trial_dhold_ns;
  out->trial_dhold_in = p->trial_dhold_in;
  out->trial_dsearch_ns = p->trial_dsearch_ns;
  out->trial_dsearch_in = p->trial_dsearch_in;
  out->trial_window_in = p->trial_window_in;
  out->trial_plan_in = p->trial_plan_in;
  out->trial_dense_in = p->trial_dense_in;
  out->trial_spread_in = p->trial_spread_in;
  out->trial_order_in = p->trial_order_in;
  out->trial_late_in = p->trial_late_in;
  out->trial_late2_ns = p->trial_late2_ns;
  out->trial_late2_in = p->trial_late2_in;
  out->late_left[0] = p->late_left[0];
  out->late_left[1] = p->late_left[1];
  out->left_late = p->left_late;
  out->plan_in = p->have_plan ? p->plan_in : 0;
  out->kind_dirty = p->kind_dirty;
  out->windows_back = p->windows_back;
  out->ways_replaced = p->ways_replaced;
  out->replaced_ns = p->replaced_ns;
}
