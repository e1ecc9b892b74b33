/* period.c - the period of a sequence of events (period.h), the part of
 * the learned prefetch that needs no driver.  The preload feeds it each
 * kernel launch's function handle and the managed allocations it was
 * handed; the stable allocator, each allocation and free (Note [Learned
 * prefetch from the allocation order] in src/stable/stable.c).  It
 * predicts the events to come.  Handle mode's planner asks it where a
 * period of the steps it records may start (Note [Where a period starts]).
 *
 * Invariants: rec holds the last LMS__PERIOD_LEN events, event i at
 * i % LMS__PERIOD_LEN; a period in force is at most LMS__PERIOD_MAX and
 * every one of the last `period` launches matched the launch a period
 * before it. */
#include <string.h>

#include "core/hash.h"
#include "core/period.h"

/* Note [A period in the launch trace]
 *
 * Rationale: a training loop launches the same kernels in the same order
 * every iteration, and with a caching allocator (PyTorch's, or a program
 * that allocates once) hands them the same buffers; so once the period
 * is known, the launches of the last iteration say which allocations the
 * next launches will touch, which is what prefetch needs.  Nothing else
 * is known without framework help: no layers, no steps.
 *
 * Detection, O(1) per launch: a candidate period P and the run of
 * consecutive launches whose key (below) equals the one P launches
 * before.  A launch that breaks the run (or the first with no candidate)
 * takes as its new candidate the distance to the previous launch with its
 * own key, with a run of 1; when the run reaches P, a whole period has
 * repeated and P is in force.  A launch that differs from the prediction
 * ends it, and detection goes on from that launch.  The distance to the
 * previous launch with the same key is not always the period (a kernel
 * used by several layers recurs within an iteration), but a wrong
 * candidate is broken within a period, and the breaking launch proposes
 * its own distance; in A B A C, the B after the second A proposes 4.
 * Periods longer than LMS__PERIOD_MAX launches are not found.
 *
 * A launch is known by its key: the function and the managed allocations
 * it was handed, together.  The function alone would not do: one kernel
 * run over many buffers (a GEMM for every layer) would look like a period
 * of one launch, whose prediction, the last launch's buffer, is always
 * wrong.  A program that allocates afresh at other addresses each
 * iteration has then no period among its managed launches, which only
 * costs the prefetch (such buffers are read in place, as without it). */

static size_t fn_slot(uint64_t k) { return lms__hash_slot(k, LMS__PERIOD_FNS); }

void lms__period_init(lms__period_t *p) { memset(p, 0, sizeof *p); }

/* The launch before this one with the same key (index + 1; 0 none), and
 * remembers this one.  The table forgets on collision: a lost distance
 * only delays detection. */
static uint64_t last_of(lms__period_t *p, uint64_t key, uint64_t now) {
  size_t i = fn_slot(key);
  uint64_t prev = p->fn_key[i] == key ? p->fn_last[i] : 0;
  p->fn_key[i] = key;
  p->fn_last[i] = now + 1;
  return prev;
}

static uint64_t launch_key(uintptr_t fn, const uint64_t *ptrs, unsigned n) {
  uint64_t k = (uint64_t)fn;
  for (unsigned i = 0; i < n; i++) {
    k ^= ptrs[i] + 0x9e3779b97f4a7c15ull + (k << 6) + (k >> 2);
    k *= 0xff51afd7ed558ccdull;
  }
  return k;
}

uint64_t lms__period_note(lms__period_t *p, uintptr_t fn,
                          const uint64_t *ptrs, unsigned nptrs) {
  uint64_t n = p->n;
  lms__launch_rec_t *r = &p->rec[n % LMS__PERIOD_LEN];
  r->fn = fn;
  r->nptrs = nptrs < LMS__PERIOD_PTRS ? nptrs : LMS__PERIOD_PTRS;
  for (unsigned i = 0; i < r->nptrs; i++) r->ptrs[i] = ptrs[i];
  r->key = launch_key(fn, r->ptrs, r->nptrs);
  uint64_t prev = last_of(p, r->key, n);
  int match = p->cand > 0 && n >= p->cand &&
              p->rec[(n - p->cand) % LMS__PERIOD_LEN].key == r->key;
  if (match) {
    p->run++;
  } else {
    if (p->period > 0) p->breaks++;
    p->period = 0;
    p->cand = prev > 0 && n - (prev - 1) <= LMS__PERIOD_MAX ? n - (prev - 1)
                                                             : 0;
    p->run = p->cand > 0 ? 1 : 0;
  }
  /* A period of one needs two repeats: one is only a kernel run twice. */
  if (p->period == 0 && p->cand > 0 && p->run >= p->cand && p->run >= 2) {
    p->period = p->cand;
    p->locks++;
  }
  p->n = n + 1;
  return p->period;
}

const lms__launch_rec_t *lms__period_predict(const lms__period_t *p,
                                             uint64_t ahead) {
  if (p->period == 0 || ahead == 0 || ahead > p->period || p->n == 0)
    return NULL;
  /* Launch n - 1 + ahead repeats launch n - 1 + ahead - period, which is
   * among the last `period` launches recorded. */
  uint64_t want = p->n - 1 + ahead - p->period;
  return &p->rec[want % LMS__PERIOD_LEN];
}

/* Note [Where a period starts]
 * Handle mode's planner (src/graph/plan.c) records each step whole and
 * takes a period at the first step that repeats a start, then checks
 * every later step against the step the period predicts; a step off it
 * starts learning over.  So the second iteration already runs on a
 * prediction, one period sooner than the run above allows.  That suits
 * its record and not the launches': a step is known by its signature and
 * its chunks (Note [Same shape, other chunk] in plan.c), which a step of
 * another layer seldom repeats, while one kernel on one workspace recurs
 * many times an iteration, and the launch ring keeps too little of each
 * launch to tell them apart.
 *
 * The first start is event 0, the first recorded.  A program whose first
 * events never come back (setup that writes each weight once, then the
 * loop) would record until the planner's limit and stop learning.
 * Taking any earlier event with the signature as a start instead finds
 * short false periods inside an iteration (UNet-3D's layers of one shape:
 * a period of 3 taken and dropped again and again), and each drop throws
 * the record away.  So there is one second start: the event recorded when
 * the record reaches LMS__PERIOD_ALT_FIRST events, moved to the latest
 * event each time the record doubles.  An event that repeats it closes
 * the period from there, and the events before it are dropped; event 0
 * still comes first.  The planner asks for the second start only where
 * acquires end the steps: a program that marks its steps marks the
 * loop's first (lms_step_begin starts learning over), and there a second
 * start cost the PyTorch transformer test 68 chunks fetched on demand.
 * Past a setup of L events the second start lies in the loop once the
 * record is past 2L, and a loop of P events is found by 4(L + P) events
 * at most.  O(1) an event. */

void lms__period_starts_init(lms__period_starts_t *s) {
  s->alt = 0;
  s->alt_at = LMS__PERIOD_ALT_FIRST;
}

void lms__period_starts_recorded(lms__period_starts_t *s, uint32_t n) {
  if (n < s->alt_at) return;
  s->alt = n - 1;
  s->alt_at = s->alt_at > UINT32_MAX / 2 ? UINT32_MAX : 2 * s->alt_at;
}

uint32_t lms__period_starts_match(const lms__period_starts_t *s, uint32_t n,
                                  int alt_ok,
                                  int (*same)(const void *ctx, uint32_t i),
                                  const void *ctx) {
  if (n > 0 && same(ctx, 0)) return 0;
  if (alt_ok && s->alt > 0 && s->alt < n && same(ctx, s->alt)) return s->alt;
  return UINT32_MAX;
}
