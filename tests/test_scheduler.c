/* test_scheduler.c - the scheduler's promises, on the simulated device.
 *
 * Prefetch and eviction never take the device past its budget (a property
 * over seeded random workloads, checked after every step), and a budget
 * that holds the largest step 1.5 times lets every step run; a chunk that
 * is acquired stays resident at the same address until its release,
 * however hard prefetch and demand push; a learned schedule predicts the
 * built-in workloads' second iteration; with prefetch off,
 * furthest-next-use victims move no more bytes than least-recently-used
 * ones on the built-ins, and fetch no more on random workloads of equal
 * chunks (Note [Where Belady's rule is optimal]); bytes survive prefetch,
 * eviction and write-back under declared and learned schedules; the stack
 * discipline alone prefetches a backward pass; the on-demand policy never
 * prefetches and drops what was only read; and a learned schedule is
 * learned again when the program changes; and the runtime writes the
 * steps it ran as a trace that reads back and replays.
 *
 * Random cases come from a seeded generator and every failure message
 * names the seed, so a failing case can be replayed alone.  Large built-in
 * workloads run with --sim-bytes off: timing and accounting only. */
#include <criterion/criterion.h>
#include "check.h"
#include <criterion/parameterized.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/ctx.h"
#include "graph/graph.h"
#include "replay/replay.h"
#include "support.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

/* ---- Seeded random numbers ---------------------------------------------- */

typedef struct rng {
  uint64_t s;
} rng_t;

/* splitmix64: every seed, 0 included, gives a full-period stream. */
static uint64_t rnd(rng_t *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static uint64_t rnd_in(rng_t *r, uint64_t lo, uint64_t hi) {
  return lo + rnd(r) % (hi - lo + 1);
}

/* Log-uniform in [lo, hi): small and large sizes are equally common. */
static uint64_t rnd_size(rng_t *r, uint64_t lo, uint64_t hi) {
  int a = 63 - __builtin_clzll(lo), b = 63 - __builtin_clzll(hi - 1);
  uint64_t e = rnd_in(r, (uint64_t)a, (uint64_t)b);
  uint64_t v = (1ull << e) + rnd(r) % (1ull << e);
  return v < lo ? lo : v >= hi ? hi - 1 : v;
}

/* ---- Options and contexts ------------------------------------------------ */

/* Options for the simulated device with every chunk host-homed (-lms 0),
 * logging off and an NVLink 2.0 link, then the NULL-ended name/value
 * pairs given. */
static lms_options_t *options(const char *name, ...) {
  lms_options_t *o = NULL;
  cr_assert(eq(int, lms_options_create(&o), LMS_OK));
  static const char *const base[] = {"device", "sim", "lms", "0",
                                     "log", "none", "link", "nvlink2"};
  for (size_t i = 0; i < sizeof base / sizeof base[0]; i += 2)
    cr_assert(eq(int, lms_options_set(o, base[i], base[i + 1]), LMS_OK), "%s",
              lms_options_error(o));
  va_list ap;
  va_start(ap, name);
  for (const char *n = name; n != NULL; n = va_arg(ap, const char *)) {
    const char *v = va_arg(ap, const char *);
    cr_assert(eq(int, lms_options_set(o, n, v), LMS_OK), "%s",
              lms_options_error(o));
  }
  va_end(ap);
  return o;
}

static lms_ctx_t *context(lms_options_t *o) {
  lms_ctx_t *ctx = NULL;
  cr_assert(eq(int, lms_ctx_create(o, &ctx), LMS_OK));
  return ctx;
}

static lms_stats_t stats_of(lms_ctx_t *ctx) {
  lms_stats_t st;
  cr_assert(eq(int, lms_stats_get(ctx, &st), LMS_OK));
  return st;
}

/* prefetch hits over the acquires that needed data brought in, between
 * two snapshots; 1 when none did. */
static double hit_rate(const lms_stats_t *a, const lms_stats_t *b) {
  lms__replay_iter_t it = {
      .prefetch_hits = (uint64_t)(b->prefetch_hits.total - a->prefetch_hits.total),
      .prefetch_late = (uint64_t)(b->prefetch_late.total - a->prefetch_late.total),
      .demand_misses = (uint64_t)(b->demand_misses.total - a->demand_misses.total),
  };
  return lms__replay_hit_rate(&it);
}

static void limit_text(uint64_t bytes, char *buf, size_t n) {
  snprintf(buf, n, "%llu", (unsigned long long)bytes);
}

/* ---- Workloads ----------------------------------------------------------- */

typedef struct shape {
  uint64_t min_size, max_size; /* chunk sizes, log-uniform in [min, max) */
  int equal_sizes;             /* every chunk max_size bytes */
  int transient;               /* about a quarter of the chunks transient */
  uint32_t max_refs;           /* references per step, 1..6; 0 means 6 */
} shape_t;

/* A random workload: 8 to 40 chunks, 20 to 60 steps of 1 to 6 (or
 * max_refs) distinct chunks each, read (half), read-write (3 in 10) or
 * overwritten (1 in 5), 20 us to 2 ms of compute each; a transient
 * chunk's first reference overwrites it.  Step 0 names one chunk more
 * than any other step can, so that its signature (size and access of each
 * reference) recurs only where the next iteration begins and a learned
 * schedule finds the true period. */
static void random_workload(uint64_t seed, const shape_t *sh,
                            lms__workload_t *w) {
  rng_t r = {seed};
  lms__wl_init(w, "random");
  uint32_t nchunks = (uint32_t)rnd_in(&r, 8, 40);
  for (uint32_t i = 0; i < nchunks; i++) {
    uint64_t size = sh->equal_sizes ? sh->max_size
                                    : rnd_size(&r, sh->min_size, sh->max_size);
    int transient = sh->transient && rnd(&r) % 4 == 0;
    char name[16];
    uint32_t id;
    snprintf(name, sizeof name, "c%u", i);
    cr_assert(eq(int, lms__wl_add_chunk(w, size, transient, name, &id), LMS_OK));
  }
  uint32_t nsteps = (uint32_t)rnd_in(&r, 20, 60);
  for (uint32_t s = 0; s < nsteps; s++) {
    char name[16];
    snprintf(name, sizeof name, "s%u", s);
    cr_assert(eq(int, lms__wl_add_step(w, rnd_in(&r, 20000, 2000000), name),
                 LMS_OK));
    uint32_t most = sh->max_refs ? sh->max_refs : 6;
    uint32_t n = s == 0 ? most + 1 : (uint32_t)rnd_in(&r, 1, most), picked[7];
    for (uint32_t k = 0; k < n; k++) {
      uint32_t c;
      int again;
      do {
        c = (uint32_t)(rnd(&r) % nchunks);
        again = 0;
        for (uint32_t j = 0; j < k; j++) again |= picked[j] == c;
      } while (again);
      picked[k] = c;
      uint64_t a = rnd(&r) % 10;
      unsigned access = a < 5 ? LMS_ACCESS_READ
                        : a < 8 ? LMS_ACCESS_RW
                                : LMS_ACCESS_WRITE;
      cr_assert(eq(int, lms__wl_add_ref(w, c, access), LMS_OK));
    }
  }
  /* A transient chunk must be used, and like a layer's output it is
   * first written whole; one that is not used becomes persistent. */
  for (uint32_t i = 0; i < nchunks; i++) {
    int used = 0;
    for (uint32_t k = 0; k < w->nrefs && !used; k++) {
      if (w->refs[k].chunk != i) continue;
      used = 1;
      if (w->chunks[i].transient) w->refs[k].access = LMS_ACCESS_WRITE;
    }
    if (!used) w->chunks[i].transient = 0;
  }
  char err[LMS__ERRBUF] = "";
  cr_assert(eq(int, lms__wl_validate(w, err), LMS_OK), "seed %llu: %s",
            (unsigned long long)seed, err);
}

static int has_transient(const lms__workload_t *w) {
  for (uint32_t i = 0; i < w->nchunks; i++)
    if (w->chunks[i].transient) return 1;
  return 0;
}

static uint64_t max_chunk(const lms__workload_t *w) {
  uint64_t m = 0;
  for (uint32_t i = 0; i < w->nchunks; i++)
    if (w->chunks[i].size > m) m = w->chunks[i].size;
  return m;
}

typedef struct builtin {
  const char *name;
  int batch, train, size;
  const char *limit;
} builtin_t;

/* The built-in scenarios: GoogLeNet at batch 10 overflows a 16 GiB V100
 * when training and fits when only running forward; the 3D U-Net at 192^3
 * overflows it; GoogLeNet at batch 1 needs 7.9 GB for its largest step
 * (the classifier's backward) and 9.9 GB in all, so 8 GiB swaps. */
static const builtin_t builtins[] = {
    {"googlenet", 10, 1, 0, "16GiB"},
    {"googlenet", 10, 0, 0, "16GiB"},
    {"unet3d", 1, 1, 192, "16GiB"},
    {"googlenet", 1, 1, 0, "8GiB"},
};
#define NBUILTINS (sizeof builtins / sizeof builtins[0])

static void build_builtin(const builtin_t *b, lms__workload_t *w) {
  const lms__wl_builtin_t *bi = lms__wl_find_builtin(b->name);
  cr_assert(ne(ptr, (void *)bi, NULL), "built-in '%s'", b->name);
  lms__wl_params_t p = {.batch = b->batch, .train = b->train, .size = b->size};
  char err[LMS__ERRBUF] = "";
  cr_assert(eq(int, bi->build(&p, w, err), LMS_OK), "%s: %s", b->name, err);
}

/* Replays w and insists that it succeeds; `what` names the case. */
static void replay(const lms__workload_t *w, lms_options_t *o, int iterations,
                   int declare, lms__replay_hook_t hook, void *arg,
                   lms__replay_result_t *out, const char *what) {
  char err[LMS__ERRBUF] = "";
  lms_status_t st = lms__replay_run_hooked(w, &o->v, iterations, declare, hook,
                                           arg, out, err);
  cr_assert(eq(int, st, LMS_OK), "%s: %s: %s", what, lms_status_name(st), err);
  cr_assert(eq(int, out->iterations, iterations), "%s", what);
}

/* ---- Residency checks shared by the hooks --------------------------------- */

typedef struct watch {
  const char *what;       /* names the case in failures */
  uint64_t limit;
  uint64_t calls;         /* steps seen */
  int ondemand;           /* also check the on-demand rules */
  char why[512];
} watch_t;

/* After a replayed step every acquire is released.  Checks the budget,
 * the device cache's own invariants, and swap.h's: no chunk is left
 * pinned, an unpinned resident host-homed chunk is on the LRU list and
 * nothing else is, and resident_bytes adds up.  Under the on-demand
 * policy nothing was ever prefetched, and only chunks whose last acquire
 * wrote stay resident once released. */
static int check_step(void *arg, lms_ctx_t *ctx, uint32_t step) {
  watch_t *wt = arg;
  const lms__swap_t *s = &ctx->swap;
  const lms_stats_t *st = &s->stats;
  wt->calls++;
#define FAIL(...)                                                             \
  do {                                                                        \
    int n_ = snprintf(wt->why, sizeof wt->why, "%s, step %u: ", wt->what,     \
                      step);                                                  \
    snprintf(wt->why + n_, sizeof wt->why - (size_t)n_, __VA_ARGS__);         \
    return 1;                                                                 \
  } while (0)
  if (st->device_limit != wt->limit)
    FAIL("device_limit %llu, asked for %llu",
         (unsigned long long)st->device_limit, (unsigned long long)wt->limit);
  if (st->device_reserved.current > (int64_t)st->device_limit)
    FAIL("device_reserved %lld over the limit %llu",
         (long long)st->device_reserved.current,
         (unsigned long long)st->device_limit);
  if (st->device_reserved.peak > (int64_t)st->device_limit)
    FAIL("device_reserved peaked at %lld, over the limit %llu",
         (long long)st->device_reserved.peak,
         (unsigned long long)st->device_limit);
  if (st->device_allocated.current > (int64_t)st->device_limit)
    FAIL("device_allocated %lld over the limit %llu",
         (long long)st->device_allocated.current,
         (unsigned long long)st->device_limit);
  if (lms__devcache_check(&s->cache) != 0)
    FAIL("the device cache's invariants do not hold");
  uint64_t resident = 0, in_lru = 0;
  for (const lms_chunk_t *c = s->all; c != NULL; c = c->all_next) {
    if (c->pins != 0)
      FAIL("chunk %llu still pinned %d time(s) after the step",
           (unsigned long long)c->serial, c->pins);
    int evictable = c->host_homed && c->dptr != NULL;
    if (evictable != c->in_lru)
      FAIL("chunk %llu: resident %d, host-homed %d, on the LRU list %d",
           (unsigned long long)c->serial, c->dptr != NULL, c->host_homed,
           c->in_lru);
    if (evictable) resident += c->size;
    if (wt->ondemand && evictable && !c->last_wrote)
      FAIL("on demand: chunk %llu was only read and is still resident",
           (unsigned long long)c->serial);
  }
  for (const lms_chunk_t *c = s->lru_head; c != NULL; c = c->lru_next) in_lru++;
  uint64_t listed = 0;
  for (const lms_chunk_t *c = s->all; c != NULL; c = c->all_next)
    listed += c->in_lru;
  if (in_lru != listed)
    FAIL("%llu chunks on the LRU list, %llu marked", (unsigned long long)in_lru,
         (unsigned long long)listed);
  if ((int64_t)resident != st->resident_bytes.current)
    FAIL("resident host-homed bytes %llu, resident_bytes says %lld",
         (unsigned long long)resident, (long long)st->resident_bytes.current);
  if (wt->ondemand && st->prefetches.total != 0)
    FAIL("on demand: %lld prefetches", (long long)st->prefetches.total);
  /* Note [Victims by next use]: the index holds exactly the LRU list,
   * each chunk keyed by its next use, or by this step for one released in
   * it (re-keyed when the next step begins). */
  if (s->use_index && s->index_built) {
    if (s->by_use.count != in_lru)
      FAIL("%zu chunks indexed by next use, %llu on the LRU list",
           s->by_use.count, (unsigned long long)in_lru);
    for (const lms_chunk_t *c = s->lru_head; c != NULL; c = c->lru_next) {
      uint64_t u = s->next_use(s->next_use_arg, c);
      int in = c->index_gen == s->index_gen;
      if (!in || (c->use_key != u && c->use_key != s->step))
        FAIL("chunk %llu indexed %d with next use %llu; it is %llu",
             (unsigned long long)c->serial, in,
             (unsigned long long)c->use_key, (unsigned long long)u);
    }
    if (lms__avl_check(&s->by_use) != 0) FAIL("the next-use index is broken");
  }
  /* Victims come in LRU order while no schedule is active only if every
   * chunk's next use is the same (pick_victim's flat_use). */
  if (s->flat_use && s->next_use != NULL)
    for (const lms_chunk_t *c = s->lru_head; c != NULL; c = c->lru_next)
      if (s->next_use(s->next_use_arg, c) != LMS__NEVER)
        FAIL("victims in LRU order, but chunk %llu is next used at step %llu",
             (unsigned long long)c->serial,
             (unsigned long long)s->next_use(s->next_use_arg, c));
#undef FAIL
  return 0;
}

/* ---- 1. Prefetch never exceeds the budget -------------------------------- */

#define BUDGET_CASES 100
#define BUDGET_SEED 0x5eed0001ull

typedef struct budget_tally {
  uint64_t ran, refused, prefetches, swapped;
  uint64_t planned[2]; /* replays the plan, and the spread plan, looked
                          ahead in to the end */
  char first[1024]; /* the first refusals */
} budget_tally_t;

/* Random workloads under random budgets from 1.2 x their largest step to
 * all their bytes, random windows, LRU and schedule victims, each checked
 * after every step by check_step.  A replay refused with "device out of
 * memory" is counted, the steps before the refusal checked all the same. */
static void budget_cases(budget_tally_t *t, uint64_t lo_tenths) {
  /* The third: the schedule policy with the period's plan looking ahead
   * from the start (Note [A planned period] in graph/ahead.c), the spread
   * plan in every other case (Note [Spread out]). */
  static const char *const policies[] = {"lru", "schedule", "schedule"};
  const shape_t sh = {.min_size = 4 * KiB, .max_size = 4 * MiB, .transient = 1};
  memset(t, 0, sizeof *t);
  for (uint64_t k = 0; k < BUDGET_CASES; k++) {
    uint64_t seed = BUDGET_SEED + k;
    lms__workload_t w;
    random_workload(seed, &sh, &w);
    rng_t r = {seed ^ 0xb0d6e7ull};
    uint64_t biggest = lms__wl_max_step_bytes(&w);
    uint64_t lo = biggest * lo_tenths / 10;
    uint64_t hi = lms__wl_chunk_bytes(&w);
    uint64_t limit = hi > lo ? rnd_in(&r, lo, hi) : lo;
    char limit_s[32], window[32];
    limit_text(limit, limit_s, sizeof limit_s);
    snprintf(window, sizeof window, "%u,%u%%", (unsigned)rnd_in(&r, 1, 32),
             (unsigned)rnd_in(&r, 1, 100));
    for (size_t p = 0; p < 3; p++) {
      char what[192];
      /* The plan and the spread plan, each also leaving late (Note
       * [Leaving late]), each also with copies in by their use (Note
       * [Copies in by their use] in graph/ahead.c), and the plan deciding
       * by density (Note [Whole chunks kept] there), also in order:
       * lms__plan_force 2 to 12. */
      int force = p < 2 ? 0 : 2 + (int)(k % 11);
      int base = force == 10 || force == 12 ? 2
                 : force == 11              ? 4
                 : force >= 6               ? force - 4
                                            : force;
      int order = (force >= 6 && force <= 9) || force == 12,
          dense = force >= 10;
      int spread = base == 3 || base == 5, late = base >= 4;
      snprintf(what, sizeof what,
               "seed %llu (policy %s%s%s%s, limit %s = %.2f x the largest "
               "step, window %s, %u chunks, %u steps)",
               (unsigned long long)seed, policies[p],
               spread ? " spread plan" : dense ? " planned by density"
               : force ? " planned" : "",
               order ? " in order" : "", late ? " leaving late" : "", limit_s,
               (double)limit / (double)biggest, window, w.nchunks, w.nsteps);
      lms_options_t *o = options("gpu-limit", limit_s, "policy", policies[p],
                                 "prefetch-window", window, "sim-bytes", "off",
                                 NULL);
      watch_t wt = {.what = what, .limit = limit};
      lms__replay_result_t res;
      char err[LMS__ERRBUF] = "";
      lms__plan_force = force;
      lms_status_t st = lms__replay_run_hooked(&w, &o->v, 3, 0, check_step,
                                               &wt, &res, err);
      lms__plan_force = 0;
      lms_options_destroy(o);
      t->ran++;
      if (force && st == LMS_OK)
        t->planned[spread] += strcmp(res.ahead, spread  ? "spread"
                                                : dense ? "dense"
                                                        : "plan") == 0 &&
                              res.late == late && res.order == order;
      /* The hook found nothing wrong at any step that ran. */
      cr_assert(eq(str, wt.why, ""), "%s", wt.why);
      if (st == LMS_ERR_DEVICE_OOM) {
        if (t->refused++ < 2) {
          size_t n = strlen(t->first);
          snprintf(t->first + n, sizeof t->first - n, "\n  %s: %.300s", what,
                   err);
        }
        continue;
      }
      cr_assert(eq(int, st, LMS_OK), "%s: %s: %s", what, lms_status_name(st),
                err);
      cr_assert(eq(u64, wt.calls, 3ull * w.nsteps), "%s", what);
      cr_assert(le(u64, res.device_peak, res.budget), "%s", what);
      cr_assert(eq(u64, res.budget, limit), "%s", what);
      for (int i = 0; i < 3; i++) t->prefetches += res.iter[i].prefetches;
      t->swapped += res.last.bytes_h2d > 0;
    }
    lms__wl_free(&w);
  }
}

/* After every step the device holds no more than the budget, in segments
 * and in blocks, and the residency invariants hold. */
Test(budget, prefetch_and_eviction_stay_under_the_limit, .timeout = 300) {
  budget_tally_t t;
  budget_cases(&t, 12);
  cr_log_info("%llu replays, %llu refused, %llu prefetches",
              (unsigned long long)t.ran, (unsigned long long)t.refused,
              (unsigned long long)t.prefetches);
  /* The property is about prefetch under pressure: both happened, and
   * each of the period's plans looked ahead in most of its replays (the
   * plan, by end or by density, in six cases of ten, the spread plan in
   * four, each leaving late in some). */
  cr_assert(gt(u64, t.prefetches, 1000));
  cr_assert(gt(u64, t.swapped, BUDGET_CASES / 2));
  cr_assert(gt(u64, t.planned[0], BUDGET_CASES / 4));
  cr_assert(gt(u64, t.planned[1], BUDGET_CASES / 4));
}

/* A budget that holds the largest step 1.5 times lets every replay
 * finish: the step's chunks can be made to fit by evicting the others.
 * Closer to the step's own size a chunk cannot be moved once acquired, so
 * the acquired chunks of a step can leave the free bytes in pieces none of
 * which holds the next one; at 1.2 times that refused about 1.5 % of these
 * replays (3 of 200) when this was written, and the property test above
 * runs them anyway. */
Test(budget, every_replay_within_the_budget_finishes, .timeout = 300) {
  budget_tally_t t;
  budget_cases(&t, 15);
  cr_assert(eq(u64, t.refused, 0),
            "%llu of %llu replays were refused with device out of memory "
            "although each budget holds the largest step 1.5 times or more; "
            "the first:%s", (unsigned long long)t.refused,
            (unsigned long long)t.ran, t.first);
}

/* The smallest form of the refusals above.  A 2.5 MiB chunk, resident in
 * a 4 MiB segment, leaves 1.5 MiB of a 4 MiB budget; a 512 KiB chunk then
 * goes into that gap, right after it.  When a step holds the small chunk
 * and needs 2.75 MiB, evicting the big one frees only the 2.5 MiB before
 * the small chunk, and 3.25 MiB of the step do not fit 4 MiB.  The small
 * chunk at the far end of the gap, or anywhere else that leaves 2.75 MiB
 * in one piece, and the step fits. */
Test(budget, a_step_within_the_budget_is_not_refused) {
  lms_options_t *o = options("gpu-limit", "4MiB", "policy", "lru", NULL);
  lms_ctx_t *ctx = context(o);
  lms_options_destroy(o);
  lms_stream_t s;
  cr_assert(eq(int, lms_stream_create(ctx, &s), LMS_OK));
  lms_chunk_t *big, *small, *next;
  lms_status_t st;
  cr_assert(eq(int, lms_alloc(ctx, 2560 * KiB, &big), LMS_OK));
  cr_assert(eq(int, lms_alloc(ctx, 512 * KiB, &small), LMS_OK));
  cr_assert(eq(int, lms_alloc(ctx, 2816 * KiB, &next), LMS_OK));
  lms_test_write(ctx, big, s, 1, &st);
  cr_assert(eq(int, st, LMS_OK));
  uint64_t sum = lms_test_write(ctx, small, s, 2, &st);
  cr_assert(eq(int, st, LMS_OK));
  void *ps = NULL, *pn = NULL;
  cr_assert(eq(int, lms_acquire(ctx, small, s, LMS_ACCESS_READ, &ps), LMS_OK));
  cr_assert(lms_chunk_resident(ctx, big));
  long long gap = (long long)((char *)ps - (char *)big->dptr);
  st = lms_acquire(ctx, next, s, LMS_ACCESS_WRITE | LMS_ACCESS_OVERWRITE, &pn);
  /* Expected rather than asserted, so that a refusal still ends the
   * context cleanly below. */
  cr_expect(eq(int, st, LMS_OK), "3.25 MiB acquired at once under a 4 MiB "
            "budget (the small chunk %lld bytes from the start of the big "
            "one's block): %s: %s", gap, lms_status_name(st),
            lms_ctx_last_error(ctx));
  if (st == LMS_OK) cr_expect(eq(int, lms_release(ctx, next, s), LMS_OK));
  cr_expect(eq(u64, lms_test_checksum(ps, 512 * KiB), sum));
  cr_expect(eq(int, lms_release(ctx, small, s), LMS_OK));
  lms_stream_destroy(ctx, s);
  cr_assert(eq(int, lms_ctx_destroy(ctx), LMS_OK));
}

/* ---- 2. A chunk in use is never evicted ----------------------------------- */

/* One chunk is held from step 0 of a declared schedule, in which it is not
 * used again until the next iteration: the furthest next use of all, the
 * first victim Belady's rule would pick if it could.  Twelve others, two
 * per step, stream through a budget that holds the held chunk and three
 * more; prefetch runs at every step boundary.  The held chunk stays
 * resident at the same address with the same bytes until released. */
Test(pins, held_chunk_outlives_prefetch_and_eviction) {
  static const char *const policies[] = {"ondemand", "lru", "schedule"};
  for (size_t p = 0; p < 3; p++) {
    lms_options_t *o = options("gpu-limit", "2560KiB", "policy", policies[p],
                               "prefetch-window", "16,90%", NULL);
    lms_ctx_t *ctx = context(o);
    lms_options_destroy(o);
    lms_stream_t s;
    cr_assert(eq(int, lms_stream_create(ctx, &s), LMS_OK));
    enum { N = 12 };
    lms_chunk_t *held, *c[N];
    uint64_t sum[N];
    lms_status_t st;
    cr_assert(eq(int, lms_alloc(ctx, 1 * MiB, &held), LMS_OK));
    for (int i = 0; i < N; i++) {
      cr_assert(eq(int, lms_alloc(ctx, 384 * KiB, &c[i]), LMS_OK));
      sum[i] = lms_test_write(ctx, c[i], s, 100 + (uint64_t)i, &st);
      cr_assert(eq(int, st, LMS_OK));
    }
    lms_step_ref_t ref[2] = {{held, LMS_ACCESS_RW}};
    cr_assert(eq(int, lms_schedule_step(ctx, ref, 1, 100000), LMS_OK));
    for (int i = 0; i < N; i += 2) {
      lms_step_ref_t two[2] = {{c[i], LMS_ACCESS_READ},
                               {c[i + 1], LMS_ACCESS_READ}};
      cr_assert(eq(int, lms_schedule_step(ctx, two, 2, 100000), LMS_OK));
    }
    lms_stats_t s0 = stats_of(ctx);
    for (int round = 0; round < 3; round++) {
      void *ph = NULL;
      cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
      cr_assert(eq(int, lms_acquire(ctx, held, s, LMS_ACCESS_RW, &ph), LMS_OK));
      lms_test_fill(ph, 1 * MiB, 7 + (uint64_t)round);
      uint64_t hsum = lms_test_checksum(ph, 1 * MiB);
      for (int i = 0; i < N; i += 2) {
        cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
        for (int j = i; j < i + 2; j++) {
          uint64_t got = lms_test_read(ctx, c[j], s, &st);
          cr_assert(eq(int, st, LMS_OK), "%s: %s", policies[p],
                    lms_ctx_last_error(ctx));
          cr_assert(eq(u64, got, sum[j]), "%s: chunk %d", policies[p], j);
        }
        lms_compute(ctx, s, 100000);
        cr_assert(lms_chunk_resident(ctx, held), "%s, round %d, step %d",
                  policies[p], round, i / 2 + 1);
        cr_assert(eq(ptr, held->dptr, ph), "%s, round %d, step %d",
                  policies[p], round, i / 2 + 1);
        cr_assert(eq(int, held->pins, 1));
        cr_assert(eq(u64, lms_test_checksum(ph, 1 * MiB), hsum), "%s",
                  policies[p]);
      }
      /* A nested acquire returns the same address. */
      void *again = NULL;
      cr_assert(eq(int, lms_acquire(ctx, held, s, LMS_ACCESS_READ, &again),
                   LMS_OK));
      cr_assert(eq(ptr, again, ph));
      cr_assert(eq(int, lms_release(ctx, held, s), LMS_OK));
      cr_assert(eq(int, lms_release(ctx, held, s), LMS_OK));
      cr_assert(eq(u64, lms_test_read(ctx, held, s, &st), hsum), "%s",
                policies[p]);
    }
    lms_stats_t s1 = stats_of(ctx);
    /* The others really were evicted and brought back around it. */
    cr_assert(gt(i64, s1.swaps_in.total - s0.swaps_in.total, 2 * N),
              "%s", policies[p]);
    if (p > 0)
      cr_assert(gt(i64, s1.prefetches.total - s0.prefetches.total, 0), "%s",
                policies[p]);
    else
      cr_assert(eq(i64, s1.prefetches.total, 0));
    cr_assert(le(i64, s1.device_reserved.peak, (int64_t)s1.device_limit));
    lms_stream_destroy(ctx, s);
    cr_assert(eq(int, lms_ctx_destroy(ctx), LMS_OK));
  }
}

/* ---- A driver for workloads through the public API ------------------------ */

typedef struct drive {
  /* Inputs. */
  const char *what;
  int declare;       /* lms_schedule_step for every step, else learned */
  int holds;         /* hold random chunks across steps */
  int iterations;
  uint64_t seed;
  /* Outputs. */
  uint64_t reads, mismatches, held_steps;
  lms_stats_t before, after; /* around the iterations */
  char why[512];
} drive_t;

typedef struct hold {
  int chunk;         /* -1: none */
  void *dptr;
  lms_stream_t stream; /* the one it was acquired on */
  int steps_left;
} hold_t;

static unsigned acquire_flags(unsigned access) {
  return access == LMS_ACCESS_WRITE ? LMS_ACCESS_WRITE | LMS_ACCESS_OVERWRITE
                                    : access;
}

/* Every acquired chunk is resident; every held one where it was.  0 with
 * `why` set if not. */
static int pins_hold(lms_ctx_t *ctx, const hold_t *h, int nh,
                     lms_chunk_t **chunks, char *why, size_t n) {
  for (const lms_chunk_t *c = ctx->swap.all; c != NULL; c = c->all_next) {
    if (c->pins > 0 && (c->dptr == NULL || !lms_chunk_resident(ctx, c))) {
      snprintf(why, n, "chunk %llu pinned %d times but not resident",
               (unsigned long long)c->serial, c->pins);
      return 0;
    }
  }
  for (int i = 0; i < nh; i++) {
    if (h[i].chunk < 0) continue;
    if (chunks[h[i].chunk]->dptr != h[i].dptr) {
      snprintf(why, n, "held chunk %d moved from %p to %p", h[i].chunk,
               h[i].dptr, (void *)chunks[h[i].chunk]->dptr);
      return 0;
    }
  }
  return 1;
}

/* Runs the persistent-chunk workload w through the public API, the way a
 * framework would: every chunk is written once, then each step acquires
 * its chunks (reads check the bytes against what was last written, writes
 * fill new bytes), enqueues its compute and releases them.  Steps
 * alternate between two streams.  With `holds`, a random chunk is now and
 * then acquired for reading and held across 1 to 5 steps.  Returns 0 with
 * d->why set at the first failure. */
static int drive(drive_t *d, const lms__workload_t *w, lms_options_t *o) {
  lms_ctx_t *ctx = context(o);
  lms_stream_t s[2];
  cr_assert(eq(int, lms_stream_create(ctx, &s[0]), LMS_OK));
  cr_assert(eq(int, lms_stream_create(ctx, &s[1]), LMS_OK));
  lms_chunk_t **chunks = calloc(w->nchunks, sizeof *chunks);
  uint64_t *sum = calloc(w->nchunks, sizeof *sum);
  cr_assert(chunks != NULL && sum != NULL);
  rng_t r = {d->seed ^ 0xd71e5ull};
  lms_status_t st;
  int ok = 1;
  hold_t h[2] = {{-1, NULL, NULL, 0}, {-1, NULL, NULL, 0}};
  char why[256];
  for (uint32_t i = 0; i < w->nchunks; i++) {
    cr_assert(eq(int, lms_alloc(ctx, w->chunks[i].size, &chunks[i]), LMS_OK),
              "%s: %s", d->what, lms_ctx_last_error(ctx));
    sum[i] = lms_test_write(ctx, chunks[i], s[0], rnd(&r), &st);
    cr_assert(eq(int, st, LMS_OK), "%s: %s", d->what, lms_ctx_last_error(ctx));
  }
  if (d->declare) {
    lms_step_ref_t refs[8];
    for (uint32_t t = 0; t < w->nsteps; t++) {
      const lms__wl_step_t *step = &w->steps[t];
      for (uint32_t k = 0; k < step->nrefs; k++) {
        const lms__wl_ref_t *ref = &w->refs[step->first_ref + k];
        refs[k].chunk = chunks[ref->chunk];
        refs[k].access = acquire_flags(ref->access);
      }
      cr_assert(eq(int, lms_schedule_step(ctx, refs, step->nrefs,
                                          step->compute_ns), LMS_OK));
    }
  }
  d->before = stats_of(ctx);
#define STOP(...)                                                             \
  do {                                                                        \
    int n_ = snprintf(d->why, sizeof d->why, "%s, iteration %d, step %u: ",   \
                      d->what, it, t);                                        \
    snprintf(d->why + n_, sizeof d->why - (size_t)n_, __VA_ARGS__);           \
    ok = 0;                                                                   \
    goto out;                                                                 \
  } while (0)
  for (int it = 0; it < d->iterations; it++) {
    for (uint32_t t = 0; t < w->nsteps; t++) {
      const lms__wl_step_t *step = &w->steps[t];
      lms_stream_t sx = s[t % 2];
      if ((st = lms_step_begin(ctx)) != LMS_OK)
        STOP("lms_step_begin: %s", lms_ctx_last_error(ctx));
      if (d->holds) {
        for (int i = 0; i < 2; i++) {
          if (h[i].chunk >= 0 || rnd(&r) % 4 != 0) continue;
          int c = (int)(rnd(&r) % w->nchunks);
          if (h[1 - i].chunk == c) continue;
          if ((st = lms_acquire(ctx, chunks[c], sx, LMS_ACCESS_READ,
                                &h[i].dptr)) != LMS_OK)
            STOP("holding chunk %d: %s", c, lms_ctx_last_error(ctx));
          if (lms_test_checksum(h[i].dptr, w->chunks[c].size) != sum[c])
            d->mismatches++;
          h[i].chunk = c;
          h[i].stream = sx;
          h[i].steps_left = (int)rnd_in(&r, 1, 5);
        }
      }
      void *p[8];
      for (uint32_t k = 0; k < step->nrefs; k++) {
        const lms__wl_ref_t *ref = &w->refs[step->first_ref + k];
        size_t n = w->chunks[ref->chunk].size;
        if ((st = lms_acquire(ctx, chunks[ref->chunk], sx,
                              acquire_flags(ref->access), &p[k])) != LMS_OK)
          STOP("acquire of chunk %u: %s", ref->chunk, lms_ctx_last_error(ctx));
        if (ref->access & LMS_ACCESS_READ) {
          d->reads++;
          if (lms_test_checksum(p[k], n) != sum[ref->chunk]) d->mismatches++;
        }
        if (ref->access & LMS_ACCESS_WRITE) {
          lms_test_fill(p[k], n, rnd(&r));
          sum[ref->chunk] = lms_test_checksum(p[k], n);
        }
      }
      if (!pins_hold(ctx, h, 2, chunks, why, sizeof why))
        STOP("after the step's acquires: %s", why);
      lms_compute(ctx, sx, step->compute_ns);
      for (uint32_t k = 0; k < step->nrefs; k++) {
        uint32_t c = w->refs[step->first_ref + k].chunk;
        if ((st = lms_release(ctx, chunks[c], sx)) != LMS_OK)
          STOP("release of chunk %u: %s", c, lms_ctx_last_error(ctx));
      }
      if (!pins_hold(ctx, h, 2, chunks, why, sizeof why))
        STOP("after the step's releases: %s", why);
      for (int i = 0; i < 2; i++) {
        if (h[i].chunk < 0) continue;
        d->held_steps++;
        if (--h[i].steps_left > 0) continue;
        /* A step may have written it since: compare with the latest. */
        if (lms_test_checksum(h[i].dptr, w->chunks[h[i].chunk].size) !=
            sum[h[i].chunk])
          d->mismatches++;
        if ((st = lms_release(ctx, chunks[h[i].chunk], h[i].stream)) != LMS_OK)
          STOP("releasing held chunk %d: %s", h[i].chunk,
               lms_ctx_last_error(ctx));
        h[i].chunk = -1;
      }
    }
  }
#undef STOP
  for (int i = 0; i < 2; i++)
    if (h[i].chunk >= 0)
      cr_assert(eq(int, lms_release(ctx, chunks[h[i].chunk], h[i].stream),
                   LMS_OK));
  /* Everything once more, after the last write-backs. */
  for (uint32_t i = 0; i < w->nchunks; i++) {
    uint64_t got = lms_test_read(ctx, chunks[i], s[0], &st);
    cr_assert(eq(int, st, LMS_OK), "%s: %s", d->what, lms_ctx_last_error(ctx));
    d->reads++;
    if (got != sum[i]) d->mismatches++;
  }
  d->after = stats_of(ctx);
out:
  lms_stream_destroy(ctx, s[0]);
  lms_stream_destroy(ctx, s[1]);
  cr_assert(eq(int, lms_ctx_destroy(ctx), LMS_OK));
  free(chunks);
  free(sum);
  return ok;
}

#define HOLD_CASES 20
#define HOLD_SEED 0x401d0001ull

/* Random programs that hold chunks across steps under a tight budget: at
 * every step, after the acquires and after the releases, every pinned
 * chunk is resident and every held one at the address its acquire gave. */
Test(pins, held_chunks_stay_put_in_random_programs, .timeout = 300) {
  static const char *const policies[] = {"lru", "schedule", "ondemand"};
  const shape_t sh = {.min_size = 4 * KiB, .max_size = 1 * MiB};
  uint64_t held_steps = 0, moved = 0;
  for (uint64_t k = 0; k < HOLD_CASES; k++) {
    uint64_t seed = HOLD_SEED + k;
    lms__workload_t w;
    random_workload(seed, &sh, &w);
    /* Room for the largest step and two held chunks, with a margin for
     * the device cache's segments; a third of the data at most. */
    uint64_t need = (lms__wl_max_step_bytes(&w) + 2 * max_chunk(&w)) * 5 / 4 +
                    4 * MiB;
    uint64_t limit = lms__wl_chunk_bytes(&w) / 3;
    if (limit < need) limit = need;
    char limit_s[32];
    limit_text(limit, limit_s, sizeof limit_s);
    for (size_t p = 0; p < 3; p++) {
      char what[128];
      snprintf(what, sizeof what, "seed %llu (policy %s, limit %s)",
               (unsigned long long)seed, policies[p], limit_s);
      lms_options_t *o = options("gpu-limit", limit_s, "policy", policies[p],
                                 "prefetch-window", "8,50%", NULL);
      drive_t d = {.what = what, .holds = 1, .iterations = 3, .seed = seed};
      int ok = drive(&d, &w, o);
      lms_options_destroy(o);
      cr_assert(ok, "%s", d.why);
      cr_assert(eq(u64, d.mismatches, 0), "%s", what);
      held_steps += d.held_steps;
      moved += (uint64_t)(d.after.swaps_in.total - d.before.swaps_in.total);
    }
    lms__wl_free(&w);
  }
  cr_assert(gt(u64, held_steps, 500));
  cr_assert(gt(u64, moved, 1000));
}

/* ---- 3. A learned schedule predicts the second iteration ----------------- */

/* The schedule is learned during the first iteration and used from the
 * second.  Over NVLink 2.0 the link keeps up with these workloads' compute,
 * so a data fetch that is not a prefetch hit is a wrong or late decision:
 * the hit rate must reach 95 %.  Over PCIe 3 the link is the bottleneck
 * and prefetches may arrive late, but they must still have been issued:
 * at most 5 % of the fetches may be demand misses. */
Test(learned, predicts_the_builtins_second_iteration, .timeout = 300) {
  int swapped = 0;
  for (size_t i = 0; i < NBUILTINS; i++) {
    const builtin_t *b = &builtins[i];
    lms__workload_t w;
    build_builtin(b, &w);
    for (int slow = 0; slow < 2; slow++) {
      const char *link = slow ? "pcie3" : "nvlink2";
      lms_options_t *o = options("gpu-limit", b->limit, "policy", "schedule",
                                 "sim-bytes", "off", "link", link, NULL);
      lms__replay_result_t res;
      replay(&w, o, 3, 0, NULL, NULL, &res, w.name);
      lms_options_destroy(o);
      const lms__replay_iter_t *it = &res.iter[1];
      uint64_t need = it->prefetch_hits + it->prefetch_late + it->demand_misses;
      char what[160];
      snprintf(what, sizeof what, "%s at %s over %s: iteration 2 hits %llu, "
               "late %llu, misses %llu", w.name, b->limit, link,
               (unsigned long long)it->prefetch_hits,
               (unsigned long long)it->prefetch_late,
               (unsigned long long)it->demand_misses);
      cr_log_info("%s", what);
      cr_assert(eq(str, res.schedule, "learned"), "%s", what);
      cr_assert(eq(u32, res.period, w.nsteps), "%s", what);
      if (need == 0) {
        /* Nothing to bring in: nothing moved at all. */
        cr_assert(eq(u64, it->bytes_h2d, 0), "%s", what);
        cr_assert(eq(u64, it->bytes_d2h, 0), "%s", what);
        cr_assert(eq(u64, it->prefetches, 0), "%s", what);
        continue;
      }
      swapped += !slow;
      if (slow)
        cr_assert(le(dbl, (double)it->demand_misses / (double)need, 0.05),
                  "%s", what);
      else
        cr_assert(ge(dbl, lms__replay_hit_rate(it), 0.95), "%s", what);
    }
    lms__wl_free(&w);
  }
  /* Three of the four do not fit and had to be predicted. */
  cr_assert(eq(int, swapped, 3));
}

/* ---- 4. Belady moves no more bytes than LRU ------------------------------- */

/* The last of 3 iterations with prefetch off, the schedule declared when
 * the workload allows (no transient chunks), else learned. */
static lms__replay_iter_t moved(const lms__workload_t *w, const char *limit,
                               const char *policy, const char *what) {
  lms_options_t *o = options("gpu-limit", limit, "policy", policy,
                             "prefetch-window", "0", "sim-bytes", "off", NULL);
  lms__replay_result_t res;
  int declare = !has_transient(w);
  replay(w, o, 3, declare, NULL, NULL, &res, what);
  lms_options_destroy(o);
  cr_assert(eq(str, res.schedule, declare ? "declared" : "learned"), "%s",
            what);
  cr_assert(eq(u32, res.period, w->nsteps), "%s", what);
  cr_assert(eq(u64, res.last.prefetches, 0), "%s", what);
  return res.last;
}

/* Unrestricted, case by case, on the built-ins.  Today both policies move
 * exactly the same bytes on all four (their forward-then-mirrored-backward
 * order leaves LRU no worse a choice, and requests over 1 MiB go through
 * the range eviction of Note [Evicting a range] under either policy), so
 * this guards against the schedule policy falling behind there; the
 * random test below is the one that tells the two rules apart. */
Test(belady, builtins_move_no_more_than_lru, .timeout = 300) {
  for (size_t i = 0; i < NBUILTINS; i++) {
    lms__workload_t w;
    build_builtin(&builtins[i], &w);
    lms__replay_iter_t si = moved(&w, builtins[i].limit, "schedule", w.name);
    lms__replay_iter_t li = moved(&w, builtins[i].limit, "lru", w.name);
    uint64_t sched = si.bytes_h2d + si.bytes_d2h;
    uint64_t lru = li.bytes_h2d + li.bytes_d2h;
    cr_log_info("%s at %s: schedule %llu bytes, lru %llu", w.name,
                builtins[i].limit, (unsigned long long)sched,
                (unsigned long long)lru);
    cr_assert(le(u64, sched, lru), "%s at %s: schedule moved %llu bytes, "
              "lru %llu", w.name, builtins[i].limit,
              (unsigned long long)sched, (unsigned long long)lru);
    lms__wl_free(&w);
  }
}

#define BELADY_CASES 30
#define BELADY_SEED 0xbe1ad70001ull

/* Note [Where Belady's rule is optimal]
 * Furthest-next-use victims minimise the number of fetches when every
 * chunk has the same size: that is Belady's theorem, and it is what this
 * test holds the schedule policy to, on random workloads of 1 MiB chunks
 * (transient ones learned, the rest declared) under random budgets from
 * 1.2 x the largest step to everything live.  Two things the theorem does
 * not cover are left out, each for a counterexample found with this
 * generator:
 *  - Chunks of different sizes: evicting one large chunk or several small
 *    ones is a knapsack choice, not a next-use order.  With sizes from
 *    4 KiB to 4 MiB, seed 816494084185 (limit 12540241) fetches 14.5 MB
 *    in its last iteration under the schedule policy and 9.5 MB under LRU.
 *  - Write-backs: the rule counts fetches, and a dirty victim also costs
 *    its write-back.  With 1 MiB chunks and at most 3 per step, seed
 *    816494084196 (limit 32054115) fetches 2 MiB under both policies but
 *    writes back 2 MiB under the schedule policy and 1 MiB under LRU.
 * So each case compares the bytes fetched (bytes_h2d); the bytes moved
 * both ways are compared over all the cases together, and on the
 * built-ins above, unrestricted, case by case. */
/* A budget drawn at random (from `seed`) between tenths/10 of w's largest
 * step and its peak of live bytes. */
static uint64_t random_limit(const lms__workload_t *w, uint64_t seed,
                             uint64_t tenths) {
  rng_t r = {seed};
  uint64_t lo = lms__wl_max_step_bytes(w) * tenths / 10;
  uint64_t hi = lms__wl_peak_live_bytes(w);
  return hi > lo ? rnd_in(&r, lo, hi) : lo;
}

Test(belady, random_equal_chunks_fetch_no_more_than_lru, .timeout = 300) {
  const shape_t sh = {.max_size = 1 * MiB, .equal_sizes = 1, .transient = 1};
  uint64_t sched_total = 0, lru_total = 0, fetched = 0, learned = 0;
  for (uint64_t k = 0; k < BELADY_CASES; k++) {
    uint64_t seed = BELADY_SEED + k;
    lms__workload_t w;
    random_workload(seed, &sh, &w);
    uint64_t limit = random_limit(&w, seed ^ 0x11a17ull, 12);
    char limit_s[32], what[96];
    limit_text(limit, limit_s, sizeof limit_s);
    snprintf(what, sizeof what, "seed %llu (limit %s, %s)",
             (unsigned long long)seed, limit_s,
             has_transient(&w) ? "learned" : "declared");
    lms__replay_iter_t sched = moved(&w, limit_s, "schedule", what);
    lms__replay_iter_t lru = moved(&w, limit_s, "lru", what);
    cr_assert(le(u64, sched.bytes_h2d, lru.bytes_h2d),
              "%s: schedule fetched %llu bytes, lru %llu", what,
              (unsigned long long)sched.bytes_h2d,
              (unsigned long long)lru.bytes_h2d);
    sched_total += sched.bytes_h2d + sched.bytes_d2h;
    lru_total += lru.bytes_h2d + lru.bytes_d2h;
    fetched += lru.bytes_h2d > 0;
    learned += has_transient(&w);
    lms__wl_free(&w);
  }
  cr_log_info("random: schedule moved %llu bytes, lru %llu",
              (unsigned long long)sched_total, (unsigned long long)lru_total);
  cr_assert(le(u64, sched_total, lru_total));
  /* Most cases had to fetch, and both sources of a schedule were used. */
  cr_assert(gt(u64, fetched, BELADY_CASES * 2 / 3));
  cr_assert(gt(u64, learned, 0));
  cr_assert(lt(u64, learned, BELADY_CASES));
}

/* Notes [Victims by next use] and [Range eviction by index] in
 * residency.c and [Walking only what the window acts on] in plan.c: the
 * indexes must choose the very victims, and prefetch the very chunks, the
 * walks and scans they replace chose.  Random programs of chunks from
 * 256 KiB to 6 MiB, or all of 2 MiB + 4 KiB (range eviction is for
 * requests over 1 MiB; equal sizes make ties), under both policies with
 * the default prefetch window and under a random budget, and three
 * built-ins, replayed with the indexes and with the walks: the same time
 * and the same bytes both ways, and the indexes did choose victims. */
Test(index, choices_match_the_reference_walks, .timeout = 300) {
  /* Sizes log-uniform, and all equal (ties: one size, one state). */
  const shape_t shapes[2] = {
      {.min_size = 256 * 1024, .max_size = 6 * MiB, .transient = 1},
      {.max_size = 2 * MiB + 4096, .equal_sizes = 1, .transient = 1}};
  const char *policies[] = {"schedule", "lru"};
  uint64_t ranges0 = lms__swap_indexed_ranges;
  for (uint64_t k = 0; k < 16; k++) {
    uint64_t seed = 0x1d3e0001ull + k;
    lms__workload_t w;
    random_workload(seed, &shapes[k % 2], &w);
    uint64_t limit = random_limit(&w, seed ^ 0x5eedull, 11);
    char limit_s[32], what[96];
    limit_text(limit, limit_s, sizeof limit_s);
    for (int p = 0; p < 2; p++) {
      lms__replay_result_t res[2];
      for (int ref = 0; ref < 2; ref++) {
        snprintf(what, sizeof what, "seed %llu (limit %s, %s, %s)",
                 (unsigned long long)seed, limit_s, policies[p],
                 ref ? "walks" : "indexes");
        lms_options_t *o = options("gpu-limit", limit_s, "policy",
                                   policies[p], "sim-bytes", "off", NULL);
        lms__swap_reference = ref;
        replay(&w, o, 3, !has_transient(&w), NULL, NULL, &res[ref], what);
        lms__swap_reference = 0;
        lms_options_destroy(o);
      }
      cr_assert(eq(u64, res[0].last.time_ns, res[1].last.time_ns),
                "%s: %llu ns with the indexes, %llu with the walks", what,
                (unsigned long long)res[0].last.time_ns,
                (unsigned long long)res[1].last.time_ns);
      cr_assert(eq(u64, res[0].last.bytes_h2d, res[1].last.bytes_h2d), "%s",
                what);
      cr_assert(eq(u64, res[0].last.bytes_d2h, res[1].last.bytes_d2h), "%s",
                what);
    }
    lms__wl_free(&w);
  }
  cr_assert(gt(u64, lms__swap_indexed_ranges, ranges0));
  /* Longer periods and larger chunks: the built-ins (the U-Net
   * smaller). */
  const builtin_t longer[] = {{"googlenet", 1, 1, 0, "8GiB"},
                              {"googlenet", 10, 1, 0, "16GiB"},
                              {"unet3d", 1, 1, 48, "400MiB"}};
  for (size_t b = 0; b < sizeof longer / sizeof longer[0]; b++) {
    lms__workload_t w;
    build_builtin(&longer[b], &w);
    lms__replay_result_t res[2];
    for (int ref = 0; ref < 2; ref++) {
      lms_options_t *o = options("gpu-limit", longer[b].limit, "sim-bytes",
                                 "off", NULL);
      lms__swap_reference = ref;
      replay(&w, o, 3, 0, NULL, NULL, &res[ref], longer[b].name);
      lms__swap_reference = 0;
      lms_options_destroy(o);
    }
    cr_assert(eq(u64, res[0].last.time_ns, res[1].last.time_ns), "%s %s",
              longer[b].name, longer[b].limit);
    cr_assert(eq(u64, res[0].last.bytes_h2d, res[1].last.bytes_h2d), "%s",
              longer[b].name);
    cr_assert(eq(u64, res[0].last.bytes_d2h, res[1].last.bytes_d2h), "%s",
              longer[b].name);
    lms__wl_free(&w);
  }
}

/* ---- 5. Bytes survive prefetch, eviction and write-back ------------------- */

typedef struct integrity_case {
  int declare;
  int policy; /* 0: schedule, 1: lru */
} integrity_case_t;

ParameterizedTestParameters(integrity, bytes_survive_prefetch) {
  static integrity_case_t cases[] = {{1, 0}, {0, 0}, {1, 1}, {0, 1}};
  return cr_make_param_array(integrity_case_t, cases,
                             sizeof cases / sizeof cases[0]);
}

#define INTEGRITY_SEEDS 4
#define INTEGRITY_SEED 0x1d7e0001ull

/* Chunks of 64 KiB to 1 MiB under a quarter of their total, real bytes,
 * prefetch 8 steps ahead: every read sees what was last written, and
 * prefetch, write-back and drops all happened. */
ParameterizedTest(integrity_case_t *pc, integrity, bytes_survive_prefetch,
                  .timeout = 300) {
  static const char *const policies[] = {"schedule", "lru"};
  const shape_t sh = {.min_size = 64 * KiB, .max_size = 1 * MiB};
  lms_stats_t sum = {0};
  uint64_t reads = 0;
  for (uint64_t k = 0; k < INTEGRITY_SEEDS; k++) {
    uint64_t seed = INTEGRITY_SEED + k;
    lms__workload_t w;
    random_workload(seed, &sh, &w);
    uint64_t limit = lms__wl_chunk_bytes(&w) / 4;
    uint64_t need = lms__wl_max_step_bytes(&w) * 5 / 4 + 4 * MiB;
    if (limit < need) limit = need;
    char limit_s[32], what[128];
    limit_text(limit, limit_s, sizeof limit_s);
    snprintf(what, sizeof what, "seed %llu (%s, policy %s, limit %s)",
             (unsigned long long)seed, pc->declare ? "declared" : "learned",
             policies[pc->policy], limit_s);
    lms_options_t *o = options("gpu-limit", limit_s, "policy",
                               policies[pc->policy], "prefetch-window",
                               "8,50%", NULL);
    drive_t d = {.what = what, .declare = pc->declare, .iterations = 5,
                 .seed = seed};
    int ok = drive(&d, &w, o);
    lms_options_destroy(o);
    cr_assert(ok, "%s", d.why);
    cr_assert(eq(u64, d.mismatches, 0), "%s: %llu of %llu reads wrong", what,
              (unsigned long long)d.mismatches, (unsigned long long)d.reads);
    reads += d.reads;
#define ADD(f) sum.f.total += d.after.f.total - d.before.f.total
    ADD(prefetches);
    ADD(prefetch_hits);
    ADD(swaps_out);
    ADD(drops);
    ADD(demand_misses);
#undef ADD
    lms__wl_free(&w);
  }
  cr_log_info("%s/%s: %llu reads; prefetches %lld, hits %lld, misses %lld, "
              "written back %lld, dropped %lld",
              pc->declare ? "declared" : "learned", policies[pc->policy],
              (unsigned long long)reads, (long long)sum.prefetches.total,
              (long long)sum.prefetch_hits.total,
              (long long)sum.demand_misses.total, (long long)sum.swaps_out.total,
              (long long)sum.drops.total);
  cr_assert(gt(u64, reads, 1000));
  cr_assert(gt(i64, sum.prefetches.total, 0));
  cr_assert(gt(i64, sum.prefetch_hits.total, 0));
  cr_assert(gt(i64, sum.swaps_out.total, 0));
  cr_assert(gt(i64, sum.drops.total, 0));
}

/* ---- 6. The stack discipline prefetches a backward pass ------------------- */

/* A network of L layers: forward step i reads the previous activation and
 * weight i and overwrites activation i (transient, 1 MiB); backward step
 * i, in reverse, reads activation i and weight i, and the replay frees the
 * activation after it, so activations are freed in the reverse order of
 * their allocation.  8 MiB of activations pass through a 4 MiB budget. */
enum { STACK_LAYERS = 8 };

static void stack_workload(lms__workload_t *w) {
  lms__wl_init(w, "stack");
  uint32_t input, wt[STACK_LAYERS], act[STACK_LAYERS];
  cr_assert(eq(int, lms__wl_add_chunk(w, 1 * MiB, 0, "input", &input), LMS_OK));
  for (int i = 0; i < STACK_LAYERS; i++) {
    char name[16];
    snprintf(name, sizeof name, "w%d", i);
    cr_assert(eq(int, lms__wl_add_chunk(w, 64 * KiB, 0, name, &wt[i]), LMS_OK));
    snprintf(name, sizeof name, "a%d", i);
    cr_assert(eq(int, lms__wl_add_chunk(w, 1 * MiB, 1, name, &act[i]), LMS_OK));
  }
  for (int i = 0; i < STACK_LAYERS; i++) {
    cr_assert(eq(int, lms__wl_add_step(w, 300000, "fwd"), LMS_OK));
    lms__wl_add_ref(w, i == 0 ? input : act[i - 1], LMS_ACCESS_READ);
    lms__wl_add_ref(w, wt[i], LMS_ACCESS_READ);
    lms__wl_add_ref(w, act[i], LMS_ACCESS_WRITE);
  }
  for (int i = STACK_LAYERS - 1; i >= 0; i--) {
    cr_assert(eq(int, lms__wl_add_step(w, 600000, "bwd"), LMS_OK));
    lms__wl_add_ref(w, act[i], LMS_ACCESS_READ);
    lms__wl_add_ref(w, wt[i], LMS_ACCESS_RW);
  }
  char err[LMS__ERRBUF] = "";
  cr_assert(eq(int, lms__wl_validate(w, err), LMS_OK), "%s", err);
}

typedef struct backward {
  uint32_t nsteps;
  uint64_t calls;
  lms_stats_t start, end; /* the last iteration's backward pass */
} backward_t;

static int note_backward(void *arg, lms_ctx_t *ctx, uint32_t step) {
  backward_t *b = arg;
  b->calls++;
  if (step == STACK_LAYERS - 1) b->start = ctx->swap.stats;
  if (step == b->nsteps - 1) b->end = ctx->swap.stats;
  return 0;
}

static backward_t run_stack(const lms__workload_t *w, const char *source) {
  lms_options_t *o = options("gpu-limit", "4MiB", "policy", "schedule",
                             "schedule", source, NULL);
  backward_t b = {.nsteps = w->nsteps};
  lms__replay_result_t res;
  replay(w, o, 3, 0, note_backward, &b, &res, source);
  lms_options_destroy(o);
  cr_assert(eq(u64, b.calls, 3ull * w->nsteps));
  cr_assert(eq(str, res.schedule, strcmp(source, "stack") == 0 ? "stack"
                                                                : "none"));
  return b;
}

Test(stack, backward_is_prefetched_without_declarations) {
  lms__workload_t w;
  stack_workload(&w);
  backward_t on = run_stack(&w, "stack"), off = run_stack(&w, "off");
  int64_t on_hits = on.end.prefetch_hits.total - on.start.prefetch_hits.total;
  int64_t on_miss = on.end.demand_misses.total - on.start.demand_misses.total;
  int64_t off_hits = off.end.prefetch_hits.total - off.start.prefetch_hits.total;
  int64_t off_miss = off.end.demand_misses.total - off.start.demand_misses.total;
  cr_log_info("backward: stack hits %lld misses %lld; off hits %lld misses "
              "%lld", (long long)on_hits, (long long)on_miss,
              (long long)off_hits, (long long)off_miss);
  cr_assert(gt(i64, on_hits, 0));
  cr_assert(lt(i64, on_miss, off_miss));
  cr_assert(eq(i64, off_hits, 0));
  /* The backward pass did need data brought back. */
  cr_assert(gt(i64, off_miss, 0));
  lms__wl_free(&w);
}

/* ---- 7. The on-demand policy ---------------------------------------------- */

#define ONDEMAND_CASES 20
#define ONDEMAND_SEED 0x0d0d0001ull

/* Random workloads and GoogLeNet under the on-demand policy with a
 * window set and schedules known: no prefetch ever, and after every step
 * the only resident host-homed chunks are those last acquired to write. */
Test(ondemand, never_prefetches_and_drops_what_was_read, .timeout = 300) {
  const shape_t sh = {.min_size = 4 * KiB, .max_size = 4 * MiB, .transient = 1};
  uint64_t misses = 0;
  for (uint64_t k = 0; k <= ONDEMAND_CASES; k++) {
    lms__workload_t w;
    char limit_s[32], what[96];
    if (k < ONDEMAND_CASES) {
      uint64_t seed = ONDEMAND_SEED + k;
      random_workload(seed, &sh, &w);
      /* Three times the largest step: room enough that the device cache's
       * fragmentation (see budget tests) does not refuse a step. */
      limit_text(lms__wl_max_step_bytes(&w) * 3, limit_s, sizeof limit_s);
      snprintf(what, sizeof what, "seed %llu (limit %s)",
               (unsigned long long)seed, limit_s);
    } else {
      build_builtin(&builtins[3], &w);
      snprintf(limit_s, sizeof limit_s, "%s", builtins[3].limit);
      snprintf(what, sizeof what, "%s", w.name);
    }
    uint64_t limit;
    char err[LMS__ERRBUF];
    cr_assert(eq(int, lms__parse_size("limit", limit_s, &limit, err), LMS_OK));
    lms_options_t *o = options("gpu-limit", limit_s, "policy", "ondemand",
                               "prefetch-window", "64,90%", "sim-bytes", "off",
                               NULL);
    watch_t wt = {.what = what, .limit = limit, .ondemand = 1};
    lms__replay_result_t res;
    replay(&w, o, 3, !has_transient(&w), check_step, &wt, &res, what);
    lms_options_destroy(o);
    cr_assert(eq(u64, wt.calls, 3ull * w.nsteps), "%s: %s", what, wt.why);
    for (int i = 0; i < 3; i++) {
      cr_assert(eq(u64, res.iter[i].prefetches, 0), "%s", what);
      cr_assert(eq(u64, res.iter[i].prefetch_hits, 0), "%s", what);
      cr_assert(eq(u64, res.iter[i].prefetch_late, 0), "%s", what);
      misses += res.iter[i].demand_misses;
    }
    lms__wl_free(&w);
  }
  cr_assert(gt(u64, misses, 1000));
}

Test(ondemand, a_chunk_only_read_leaves_at_release) {
  lms_options_t *o = options("gpu-limit", "8MiB", "policy", "ondemand", NULL);
  lms_ctx_t *ctx = context(o);
  lms_options_destroy(o);
  lms_stream_t s;
  cr_assert(eq(int, lms_stream_create(ctx, &s), LMS_OK));
  lms_chunk_t *a, *b;
  lms_status_t st;
  cr_assert(eq(int, lms_alloc(ctx, 1 * MiB, &a), LMS_OK));
  cr_assert(eq(int, lms_alloc(ctx, 1 * MiB, &b), LMS_OK));
  uint64_t sa = lms_test_write(ctx, a, s, 1, &st);
  uint64_t sb = lms_test_write(ctx, b, s, 2, &st);
  /* There is room for both; what was just written stays. */
  cr_assert(lms_chunk_resident(ctx, a));
  cr_assert(lms_chunk_resident(ctx, b));
  /* A schedule that names both, so a prefetching policy would bring them. */
  lms_step_ref_t ra = {a, LMS_ACCESS_READ}, rb = {b, LMS_ACCESS_READ};
  cr_assert(eq(int, lms_schedule_step(ctx, &ra, 1, 1000), LMS_OK));
  cr_assert(eq(int, lms_schedule_step(ctx, &rb, 1, 1000), LMS_OK));
  for (int round = 0; round < 3; round++) {
    cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
    cr_assert(eq(u64, lms_test_read(ctx, a, s, &st), sa));
    cr_assert(not(lms_chunk_resident(ctx, a)), "round %d", round);
    cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
    cr_assert(eq(u64, lms_test_read(ctx, b, s, &st), sb));
    cr_assert(not(lms_chunk_resident(ctx, b)), "round %d", round);
    cr_assert(not(lms_chunk_resident(ctx, a)), "round %d", round);
  }
  /* Held for reading it stays; the release lets it go. */
  void *p;
  cr_assert(eq(int, lms_acquire(ctx, a, s, LMS_ACCESS_READ, &p), LMS_OK));
  cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
  cr_assert(lms_chunk_resident(ctx, a));
  cr_assert(eq(int, lms_release(ctx, a, s), LMS_OK));
  cr_assert(not(lms_chunk_resident(ctx, a)));
  /* Written, it stays until read. */
  sa = lms_test_write(ctx, a, s, 3, &st);
  cr_assert(lms_chunk_resident(ctx, a));
  cr_assert(eq(u64, lms_test_read(ctx, a, s, &st), sa));
  cr_assert(not(lms_chunk_resident(ctx, a)));
  lms_stats_t x = stats_of(ctx);
  cr_assert(eq(i64, x.prefetches.total, 0));
  /* Rounds 2 and 3 fetch a and b again, then the held read and the
   * rewrite fetch a: 6 misses; the first round found both resident. */
  cr_assert(eq(i64, x.demand_misses.total, 6));
  lms_stream_destroy(ctx, s);
  cr_assert(eq(int, lms_ctx_destroy(ctx), LMS_OK));
}

/* ---- 8. A changed program is learned again -------------------------------- */

/* A program runs pattern A (12 chunks of about 640 KiB) for 3 iterations,
 * then pattern B (9 of about 900 KiB) for 3, under a 6 MiB budget that
 * holds neither pattern's 7.5 to 8 MiB. */
typedef struct pattern {
  int nchunks, nsteps;
  size_t size;
  lms_chunk_t *c[16];
  uint64_t sum[16];
} pattern_t;

static void pattern_init(lms_ctx_t *ctx, lms_stream_t s, pattern_t *pt,
                         int nchunks, size_t size, uint64_t seed) {
  pt->nchunks = pt->nsteps = nchunks;
  pt->size = size;
  lms_status_t st;
  for (int i = 0; i < nchunks; i++) {
    /* Sizes differ by a block so that no two steps look alike. */
    cr_assert(eq(int, lms_alloc(ctx, size + (size_t)i * 512, &pt->c[i]),
                 LMS_OK));
    pt->sum[i] = lms_test_write(ctx, pt->c[i], s, seed + (uint64_t)i, &st);
    cr_assert(eq(int, st, LMS_OK));
  }
}

/* One iteration: step i reads chunks i and i + 1 (mod n). */
static void pattern_run(lms_ctx_t *ctx, lms_stream_t s, pattern_t *pt) {
  lms_status_t st;
  for (int i = 0; i < pt->nsteps; i++) {
    cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
    for (int j = i; j < i + 2; j++) {
      int c = j % pt->nchunks;
      cr_assert(eq(u64, lms_test_read(ctx, pt->c[c], s, &st), pt->sum[c]));
    }
    lms_compute(ctx, s, 400000);
  }
  cr_assert(eq(int, lms_stream_sync(ctx, s), LMS_OK));
}

Test(learned, a_changed_program_is_learned_again) {
  lms_options_t *o = options("gpu-limit", "6MiB", "policy", "schedule", NULL);
  lms_ctx_t *ctx = context(o);
  lms_options_destroy(o);
  lms_stream_t s;
  cr_assert(eq(int, lms_stream_create(ctx, &s), LMS_OK));
  pattern_t a, b;
  pattern_init(ctx, s, &a, 12, 640 * KiB, 10);
  pattern_init(ctx, s, &b, 9, 900 * KiB, 50);
  lms__plan_info_t info;
  lms_stats_t st[7];
  st[0] = stats_of(ctx);
  for (int it = 0; it < 3; it++) {
    pattern_run(ctx, s, &a);
    st[it + 1] = stats_of(ctx);
  }
  lms__plan_info(ctx->plan, &info);
  cr_assert(eq(str, (char *)info.source, "learned"));
  cr_assert(eq(u32, info.period, 12));
  cr_assert(eq(u64, info.relearns, 0));
  double a3 = hit_rate(&st[2], &st[3]);
  for (int it = 0; it < 3; it++) {
    pattern_run(ctx, s, &b);
    st[it + 4] = stats_of(ctx);
  }
  lms__plan_info(ctx->plan, &info);
  double b1 = hit_rate(&st[3], &st[4]), b2 = hit_rate(&st[4], &st[5]),
         b3 = hit_rate(&st[5], &st[6]);
  cr_log_info("hit rates: A3 %.3f, B1 %.3f, B2 %.3f, B3 %.3f; B3 late %lld, misses %lld", a3, b1, b2, b3,
              (long long)(st[6].prefetch_late.total - st[5].prefetch_late.total),
              (long long)(st[6].demand_misses.total - st[5].demand_misses.total));
  cr_assert(eq(str, (char *)info.source, "learned"));
  cr_assert(eq(u32, info.period, 9));
  cr_assert(ge(u64, info.relearns, 1));
  cr_assert(ge(dbl, a3, 0.95));
  /* B's first iteration ran on A's schedule, then none: mostly misses.
   * From B's second on the new period predicts again: the schedule
   * becomes active at B2's first step, too late to bring in the two
   * chunks that step reads, so at least 7 of B2's 9 fetches are hits. */
  cr_assert(lt(dbl, b1, 0.5));
  cr_assert(ge(dbl, b2, 7.0 / 9.0 - 1e-9));
  /* B's third iteration is fully predicted: every chunk brought in was
   * prefetched, none had to be fetched on demand.  Under this budget of
   * six or seven of B's chunks the free reserve (Note [Free reserve])
   * may leave one prefetch in eight late. */
  cr_assert(eq(i64, st[6].demand_misses.total - st[5].demand_misses.total, 0));
  cr_assert(ge(dbl, b3, 0.85));
  lms_stream_destroy(ctx, s);
  cr_assert(eq(int, lms_ctx_destroy(ctx), LMS_OK));
}

/* Steps of a program, each reading the chunks named by one string:
 * 'x' the token chunk, '0'..'9' chunk e[0..9]; each step begins with
 * lms_step_begin and computes 100 us. */
static void run_steps(lms_ctx_t *ctx, lms_stream_t s, lms_chunk_t *x,
                      lms_chunk_t **e, const uint64_t *esum, uint64_t xsum,
                      const char *const *steps, int n) {
  lms_status_t st;
  for (int i = 0; i < n; i++) {
    cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
    for (const char *c = steps[i]; *c; c++) {
      if (*c == 'x')
        cr_assert(eq(u64, lms_test_read(ctx, x, s, &st), xsum));
      else
        cr_assert(eq(u64, lms_test_read(ctx, e[*c - '0'], s, &st),
                     esum[*c - '0']), "step %d reads %c", i, *c);
    }
    lms_compute(ctx, s, 100000);
  }
  cr_assert(eq(int, lms_stream_sync(ctx, s), LMS_OK));
}

/* A program of `n` chunks e (`size` bytes and i x `step` more) and one
 * token chunk x of 256 KiB, under `limit`. */
static lms_ctx_t *experts(const char *limit, int n, size_t size, size_t step,
                          lms_stream_t *s, lms_chunk_t **x, uint64_t *xsum,
                          lms_chunk_t **e, uint64_t *esum) {
  lms_options_t *o = options("gpu-limit", limit, "policy", "schedule", NULL);
  lms_ctx_t *ctx = context(o);
  lms_options_destroy(o);
  cr_assert(eq(int, lms_stream_create(ctx, s), LMS_OK));
  lms_status_t st;
  cr_assert(eq(int, lms_alloc(ctx, 256 * KiB, x), LMS_OK));
  *xsum = lms_test_write(ctx, *x, *s, 7, &st);
  for (int i = 0; i < n; i++) {
    cr_assert(eq(int, lms_alloc(ctx, size + (size_t)i * step, &e[i]), LMS_OK));
    esum[i] = lms_test_write(ctx, e[i], *s, 100 + (uint64_t)i, &st);
    cr_assert(eq(int, st, LMS_OK));
  }
  return ctx;
}

/* The planner's info once the program is done; the context goes. */
static lms__plan_info_t finish(lms_ctx_t *ctx, lms_stream_t s) {
  lms__plan_info_t info;
  lms__plan_info(ctx->plan, &info);
  lms_stream_destroy(ctx, s);
  cr_assert(eq(int, lms_ctx_destroy(ctx), LMS_OK));
  return info;
}

/* Note [A false period] in graph/plan.c: an iteration of four "tokens",
 * each a step reading x and then steps reading experts of distinct sizes,
 * other experts in each token and three or four of them.  The step
 * reading x repeats three times an iteration, each repeat a false period
 * (its next steps differ); learning goes on from the same start and the
 * whole iteration of 13 steps is the period, with no learning over. */
Test(learned, a_false_period_gives_way_to_the_whole_one) {
  static const char *const it[] = {"x", "0", "1", "x", "0", "2",
                                   "x", "1", "2", "x", "0", "1", "2"};
  lms_stream_t s;
  lms_chunk_t *x, *e[4];
  uint64_t xsum, esum[4];
  lms_ctx_t *ctx = experts("64MiB", 4, 512 * KiB, 4096, &s, &x, &xsum, e, esum);
  for (int k = 0; k < 4; k++) run_steps(ctx, s, x, e, esum, xsum, it, 13);
  lms__plan_info_t info = finish(ctx, s);
  cr_assert(eq(str, (char *)info.source, "learned"));
  cr_assert(eq(u32, info.period, 13));
  cr_assert(ge(u64, info.false_periods, 2));
  cr_assert(eq(u64, info.relearns, 0));
}

/* The same where every token's steps look alike: experts of one size,
 * two a token, other ones each time (a mixture-of-experts decoder at
 * batch 1).  A step checked against the schedule that reads another live
 * expert where the schedule has an older one does not repeat it (Note
 * [Same shape, other chunk]): one token's steps are a false period, and
 * the period is the iteration's 12 steps.  Checked by signature alone,
 * the token was kept as the period, and its prediction of which expert
 * comes next was wrong at every other token.  Under a budget of two
 * experts beside x, the last iteration brings every expert in ahead. */
Test(learned, another_live_chunk_in_the_place_of_one_breaks_a_period) {
  static const char *const it[] = {"x", "0", "1", "x", "2", "3",
                                   "x", "0", "2", "x", "1", "3"};
  lms_stream_t s;
  lms_chunk_t *x, *e[4];
  uint64_t xsum, esum[4];
  lms_ctx_t *ctx = experts("3MiB", 4, 1 * MiB, 0, &s, &x, &xsum, e, esum);
  lms_stats_t a = stats_of(ctx), b = a;
  for (int k = 0; k < 6; k++) {
    a = b;
    run_steps(ctx, s, x, e, esum, xsum, it, 12);
    b = stats_of(ctx);
  }
  lms__plan_info_t info = finish(ctx, s);
  double hr = hit_rate(&a, &b);
  cr_log_info("period %u, false periods %llu, last iteration's hit rate %.3f",
              info.period, (unsigned long long)info.false_periods, hr);
  cr_assert(eq(u32, info.period, 12));
  cr_assert(ge(u64, info.false_periods, 1));
  cr_assert(ge(dbl, hr, 0.75));
}

/* A false period whose start never comes back: the program changed right
 * after it was taken (x 0 x 1, then a loop of 5 6 7 that never reads x).
 * The record kept from x's step is given up once it is 16 times the
 * false period long, and the loop's period of 3 is learned. */
Test(learned, a_false_period_from_a_start_gone_is_given_up) {
  static const char *const first[] = {"x", "0", "x", "1"};
  static const char *const loop[] = {"5", "6", "7"};
  lms_stream_t s;
  lms_chunk_t *x, *e[8];
  uint64_t xsum, esum[8];
  lms_ctx_t *ctx = experts("64MiB", 8, 512 * KiB, 4096, &s, &x, &xsum, e, esum);
  run_steps(ctx, s, x, e, esum, xsum, first, 4);
  for (int k = 0; k < 20; k++) run_steps(ctx, s, x, e, esum, xsum, loop, 3);
  lms__plan_info_t info = finish(ctx, s);
  cr_assert(eq(u32, info.period, 3));
  cr_assert(ge(u64, info.false_periods, 1));
  cr_assert(ge(u64, info.relearns, 1));
}

/* ---- The runtime's trace -------------------------------------------------- */

/* A program of three chunks and four steps, run twice with --trace: the
 * file reads back with every chunk (sizes, a freed one transient), every
 * step's compute time and references in order, a plain write recorded as
 * "rw" (it may keep old bytes) and an overwrite as "w"; and it replays. */
Test(trace_runtime, written_at_destroy_reads_back_and_replays) {
  char path[] = "/tmp/lms_rt_trace_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  lms_options_t *o = options("gpu-limit", "1MiB", "trace", path, NULL);
  lms_ctx_t *ctx = context(o);
  lms_options_destroy(o);
  lms_stream_t s;
  cr_assert(eq(int, lms_stream_create(ctx, &s), LMS_OK));
  lms_chunk_t *a, *b, *t;
  cr_assert(eq(int, lms_alloc(ctx, 4096, &a), LMS_OK));
  cr_assert(eq(int, lms_alloc(ctx, 8192, &b), LMS_OK));
  void *p;
  for (int it = 0; it < 2; it++) {
    cr_assert(eq(int, lms_alloc(ctx, 512, &t), LMS_OK));
    cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
    cr_assert(eq(int, lms_acquire(ctx, a, s, LMS_ACCESS_READ, &p), LMS_OK));
    cr_assert(eq(int, lms_acquire(ctx, t, s,
                                  LMS_ACCESS_WRITE | LMS_ACCESS_OVERWRITE, &p),
                 LMS_OK));
    cr_assert(eq(int, lms_compute(ctx, s, 1000), LMS_OK));
    cr_assert(eq(int, lms_release(ctx, a, s), LMS_OK));
    cr_assert(eq(int, lms_release(ctx, t, s), LMS_OK));
    cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
    cr_assert(eq(int, lms_acquire(ctx, t, s, LMS_ACCESS_READ, &p), LMS_OK));
    cr_assert(eq(int, lms_acquire(ctx, b, s, LMS_ACCESS_WRITE, &p), LMS_OK));
    cr_assert(eq(int, lms_compute(ctx, s, 2000), LMS_OK));
    cr_assert(eq(int, lms_compute(ctx, s, 500), LMS_OK));
    cr_assert(eq(int, lms_release(ctx, t, s), LMS_OK));
    cr_assert(eq(int, lms_release(ctx, b, s), LMS_OK));
    cr_assert(eq(int, lms_free(ctx, t), LMS_OK));
  }
  cr_assert(eq(int, lms_stream_destroy(ctx, s), LMS_OK));
  cr_assert(eq(int, lms_ctx_destroy(ctx), LMS_OK));

  lms__workload_t w;
  char err[LMS__ERRBUF];
  lms_status_t st = lms__trace_read(path, &w, err);
  cr_assert(eq(int, st, LMS_OK), "%s", err);
  /* a, b, and one t per iteration; the t's were freed: transient. */
  cr_assert(eq(u32, w.nchunks, 4));
  cr_assert(eq(u64, w.chunks[0].size, 4096));
  cr_assert(eq(u64, w.chunks[1].size, 8192));
  cr_assert(eq(int, w.chunks[0].transient, 0));
  cr_assert(eq(int, w.chunks[2].transient, 1));
  cr_assert(eq(int, w.chunks[3].transient, 1));
  cr_assert(eq(u32, w.nsteps, 4));
  for (uint32_t k = 0; k < 4; k++) {
    const lms__wl_step_t *step = &w.steps[k];
    uint32_t tk = 2 + k / 2; /* this iteration's t */
    cr_assert(eq(u32, step->nrefs, 2), "step %u", k);
    const lms__wl_ref_t *r = &w.refs[step->first_ref];
    if (k % 2 == 0) {
      cr_assert(eq(u64, step->compute_ns, 1000), "step %u", k);
      cr_assert(eq(u32, r[0].chunk, 0));
      cr_assert(eq(uint, r[0].access, LMS_ACCESS_READ));
      cr_assert(eq(u32, r[1].chunk, tk));
      cr_assert(eq(uint, r[1].access, LMS_ACCESS_WRITE), "an overwrite is 'w'");
    } else {
      cr_assert(eq(u64, step->compute_ns, 2500), "step %u", k);
      cr_assert(eq(u32, r[0].chunk, tk));
      cr_assert(eq(uint, r[0].access, LMS_ACCESS_READ));
      cr_assert(eq(u32, r[1].chunk, 1));
      cr_assert(eq(uint, r[1].access, LMS_ACCESS_RW), "a plain write is 'rw'");
    }
  }
  /* The trace replays under the scheduler. */
  lms_options_t *o2 = options("gpu-limit", "1MiB", NULL);
  lms__replay_result_t res;
  st = lms__replay_run(&w, &o2->v, 2, 0, &res, err);
  lms_options_destroy(o2);
  cr_assert(eq(int, st, LMS_OK), "%s", err);
  cr_assert(eq(u64, res.last.compute_ns, 7000));
  lms__wl_free(&w);
  unlink(path);
}

/* ---- Declared schedules through the API ---------------------------------- */

/* A declared schedule is used from the next step on (prefetch brings the
 * chunk of the step after next before it is acquired) and replaces
 * learning; clearing it goes back to learning.  Bad references are
 * refused with the reason. */
Test(declared, declare_use_and_clear) {
  lms_options_t *o = options("gpu-limit", "1MiB", "policy", "schedule",
                             "prefetch-window", "4,100%", NULL);
  lms_ctx_t *ctx = context(o);
  lms_options_destroy(o);
  lms_stream_t s;
  cr_assert(eq(int, lms_stream_create(ctx, &s), LMS_OK));
  enum { N = 6 };
  lms_chunk_t *c[N];
  uint64_t sum[N];
  lms_status_t st;
  for (int i = 0; i < N; i++) {
    cr_assert(eq(int, lms_alloc(ctx, 256 * KiB, &c[i]), LMS_OK));
    sum[i] = lms_test_write(ctx, c[i], s, 100 + (uint64_t)i, &st);
    cr_assert(eq(int, st, LMS_OK));
  }
  for (int i = 0; i < N; i++) {
    lms_step_ref_t ref = {c[i], LMS_ACCESS_READ};
    cr_assert(eq(int, lms_schedule_step(ctx, &ref, 1, 1000), LMS_OK));
  }
  lms__plan_info_t info;
  lms__plan_info(ctx->plan, &info);
  cr_assert(eq(str, (char *)info.source, "declared"));
  cr_assert(eq(u32, info.period, N));
  lms_stats_t before = stats_of(ctx);
  for (int it = 0; it < 3; it++) {
    for (int i = 0; i < N; i++) {
      cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
      /* The next chunk is on its way before its step begins. */
      cr_assert(eq(int, lms_chunk_resident(ctx, c[(i + 1) % N]), 1),
                "iteration %d step %d", it, i);
      cr_assert(eq(u64, lms_test_read(ctx, c[i], s, &st), sum[i]));
      cr_assert(eq(int, st, LMS_OK));
      cr_assert(eq(int, lms_compute(ctx, s, 1000), LMS_OK));
    }
  }
  lms_stats_t after = stats_of(ctx);
  cr_assert(gt(i64, after.prefetches.total - before.prefetches.total, 0));
  cr_assert(eq(i64, after.demand_misses.total - before.demand_misses.total, 0));

  lms_step_ref_t bad = {c[0], 0};
  cr_assert(eq(int, lms_schedule_step(ctx, &bad, 1, 0), LMS_ERR_INVALID));
  cr_assert(not(eq(ptr, strstr(lms_ctx_last_error(ctx), "access"), NULL)));
  bad.access = LMS_ACCESS_OVERWRITE;
  cr_assert(eq(int, lms_schedule_step(ctx, &bad, 1, 0), LMS_ERR_INVALID));
  cr_assert(eq(int, lms_schedule_step(ctx, NULL, 1, 0), LMS_ERR_INVALID));

  cr_assert(eq(int, lms_schedule_clear(ctx), LMS_OK));
  lms__plan_info(ctx->plan, &info);
  cr_assert(eq(str, (char *)info.source, "none"), "learning starts over");
  cr_assert(eq(u32, info.period, 0));
  for (int i = 0; i < N; i++) cr_assert(eq(int, lms_free(ctx, c[i]), LMS_OK));
  cr_assert(eq(int, lms_stream_destroy(ctx, s), LMS_OK));
  cr_assert(eq(int, lms_ctx_destroy(ctx), LMS_OK));
}

/* ---- Repeatability ---------------------------------------------------------- */

/* A replay gives the same time whatever ran before it in the process:
 * the simulated device hands out the same addresses for the same calls
 * (Note [Device addresses] in sim.c), so allocators that order blocks by
 * address decide the same way. */
Test(repeat, same_replay_same_time_in_one_process) {
  lms__workload_t w;
  char err[LMS__ERRBUF];
  lms__wl_params_t p = {.batch = 1, .train = 1, .size = 144};
  cr_assert(eq(int, lms__wl_find_builtin("unet3d")->build(&p, &w, err), LMS_OK),
            "%s", err);
  uint64_t t[3];
  const char *kb[3] = {"1024", "0", "1024"};
  for (int i = 0; i < 3; i++) {
    lms_options_t *o = options("gpu-limit", "6GiB", "link", "pcie3", "lms",
                               kb[i], "sim-bytes", "off", NULL);
    lms__replay_result_t r;
    cr_assert(eq(int, lms__replay_run(&w, &o->v, 2, 0, &r, err), LMS_OK), "%s",
              err);
    lms_options_destroy(o);
    t[i] = r.last.time_ns;
  }
  cr_assert(eq(u64, t[0], t[2]), "the same replay took %llu then %llu ns",
            (unsigned long long)t[0], (unsigned long long)t[2]);
  lms__wl_free(&w);
}

/* Note [Same shape, other chunk] in plan.c: a loop over many chunks of one
 * size repeats its step signature every step.  The learned period must be
 * the whole loop, so that from the second iteration on every chunk is
 * prefetched; taken for a one-step period, half the chunks would be
 * demand misses each iteration. */
static lms__workload_t equal_loop(uint32_t n, uint64_t bytes, uint64_t ns) {
  lms__workload_t w;
  lms__wl_init(&w, "equal-loop");
  for (uint32_t i = 0; i < n; i++) {
    uint32_t id;
    char name[16];
    snprintf(name, sizeof name, "c%u", i);
    cr_assert(eq(int, lms__wl_add_chunk(&w, bytes, 0, name, &id), LMS_OK));
  }
  for (uint32_t i = 0; i < n; i++) {
    char name[16];
    snprintf(name, sizeof name, "s%u", i);
    cr_assert(eq(int, lms__wl_add_step(&w, ns, name), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(&w, i, LMS_ACCESS_RW), LMS_OK));
  }
  return w;
}

Test(learned, a_loop_of_equal_chunks_is_one_period) {
  /* 32 chunks of 64 MiB through 1 GiB: twice the budget; each step's
   * compute (3 ms) is longer than moving a chunk each way over nvlink2. */
  lms__workload_t w = equal_loop(32, 64ull << 20, 3000000);
  char err[LMS__ERRBUF];
  lms_options_t *o = options("gpu-limit", "1GiB", "sim-bytes", "off", NULL);
  lms__replay_result_t r;
  cr_assert(eq(int, lms__replay_run(&w, &o->v, 3, 0, &r, err), LMS_OK), "%s",
            err);
  cr_assert(eq(u32, r.period, 32), "learned a period of %u steps, not 32",
            r.period);
  cr_assert(eq(u64, r.last.demand_misses, 0),
            "%llu demand misses in the third iteration",
            (unsigned long long)r.last.demand_misses);
  cr_assert(gt(u64, r.last.prefetch_hits, 0));
  /* Everything hidden: within 5 % of the compute. */
  cr_assert(le(dbl, (double)r.last.time_ns, 1.05 * 32 * 3e6),
            "iteration %.1f ms against 96 ms of compute",
            (double)r.last.time_ns / 1e6);
  lms_options_destroy(o);
  lms__wl_free(&w);
}

/* The other half of the rule: a fresh chunk that takes the role of one
 * still alive (an input batch loaded before the last is freed) does not
 * stop the period from being found. */
Test(learned, a_fresh_chunk_beside_the_old_one_keeps_the_period) {
  lms_options_t *o = options("gpu-limit", "64MiB", NULL);
  lms_ctx_t *ctx = context(o);
  lms_stream_t s;
  cr_assert(eq(int, lms_stream_create(ctx, &s), LMS_OK));
  enum { N = 6 };
  lms_chunk_t *w[N], *in = NULL, *prev = NULL;
  void *p;
  for (int i = 0; i < N; i++)
    cr_assert(eq(int, lms_alloc(ctx, 8u << 20, &w[i]), LMS_OK));
  for (int it = 0; it < 4; it++) {
    /* The next input comes while the previous one is still alive. */
    cr_assert(eq(int, lms_alloc(ctx, 4u << 20, &in), LMS_OK));
    for (int i = 0; i < N; i++) {
      cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
      lms_chunk_t *c = i == 0 ? in : w[i];
      cr_assert(eq(int, lms_acquire(ctx, c, s, i == 0 ? LMS_ACCESS_RW
                                                     : LMS_ACCESS_READ, &p),
                   LMS_OK));
      cr_assert(eq(int, lms_compute(ctx, s, 1000000), LMS_OK));
      cr_assert(eq(int, lms_release(ctx, c, s), LMS_OK));
    }
    if (prev != NULL) cr_assert(eq(int, lms_free(ctx, prev), LMS_OK));
    prev = in;
  }
  cr_assert(eq(int, lms_stream_sync(ctx, s), LMS_OK));
  lms__plan_info_t info;
  lms__plan_info(ctx->plan, &info);
  cr_assert(eq(u32, info.period, N), "period %u, wanted %d", info.period, N);
  cr_assert(eq(int, lms_free(ctx, prev), LMS_OK));
  for (int i = 0; i < N; i++) lms_free(ctx, w[i]);
  lms_stream_destroy(ctx, s);
  lms_ctx_destroy(ctx);
  lms_options_destroy(o);
}

/* Without lms_step_begin every acquire is a step.  Setup that makes and
 * writes one weight after another, all of one size, is no period: each
 * weight is made for the step that writes it, while the earlier ones
 * live on (Note [Same shape, other chunk]).  Counted from the acquire, a
 * weight looked made before its step and repeated step 0: a schedule was
 * taken and dropped every other weight.  A loop of reads afterwards is
 * still learned. */
Test(learned, setup_writing_new_weights_is_no_period) {
  lms_options_t *o = options("gpu-limit", "64MiB", NULL);
  lms_ctx_t *ctx = context(o);
  lms_stream_t s;
  cr_assert(eq(int, lms_stream_create(ctx, &s), LMS_OK));
  enum { N = 40 };
  lms_chunk_t *w[N];
  void *p;
  for (int i = 0; i < N; i++) {
    cr_assert(eq(int, lms_alloc(ctx, 2u << 20, &w[i]), LMS_OK));
    cr_assert(eq(int, lms_acquire(ctx, w[i], s,
                                  LMS_ACCESS_WRITE | LMS_ACCESS_OVERWRITE, &p),
                 LMS_OK));
    cr_assert(eq(int, lms_release(ctx, w[i], s), LMS_OK));
  }
  lms__plan_info_t info;
  lms__plan_info(ctx->plan, &info);
  cr_assert(eq(u64, info.relearns, 0), "%llu schedules dropped in setup",
            (unsigned long long)info.relearns);
  cr_assert(eq(u32, info.period, 0), "a period of %u steps in setup",
            info.period);
  /* Rounds of reading weights 0-9 in order: a period of 10, found
   * although the first step recorded, setup's, never comes back (Note
   * [Where a period starts]). */
  for (int it = 0; it < 8; it++)
    for (int i = 0; i < 10; i++) {
      cr_assert(eq(int, lms_acquire(ctx, w[i], s, LMS_ACCESS_READ, &p),
                   LMS_OK));
      cr_assert(eq(int, lms_release(ctx, w[i], s), LMS_OK));
    }
  lms__plan_info(ctx->plan, &info);
  cr_assert(eq(u32, info.period, 10), "period %u, wanted 10", info.period);
  cr_assert(eq(int, lms_stream_sync(ctx, s), LMS_OK));
  for (int i = 0; i < N; i++) lms_free(ctx, w[i]);
  lms_stream_destroy(ctx, s);
  lms_ctx_destroy(ctx);
  lms_options_destroy(o);
}

/* Note [Dead after the last use] in workload.c and [Dead bytes are not
 * written back] in residency.c: GoogLeNet at batch 10 training through a
 * 12 GiB GPU on pcie3.  Discarding each blob after its last use in the
 * iteration writes less back and brings less in, and is no slower; every
 * step still finds its chunks resident within the budget (check_step). */
Test(discard, dead_blobs_are_not_moved) {
  lms__workload_t w;
  lms__wl_init(&w, NULL);
  build_builtin(&(builtin_t){"googlenet", 10, 1, 0, "12GiB"}, &w);
  lms__replay_result_t kept, dropped;
  lms_options_t *o = options("gpu-limit", "12GiB", "link", "pcie3", "lms",
                             "8192", "lms_frac", "0", "sim-bytes", "off",
                             NULL);
  watch_t wt = {.what = "googlenet b10, dead blobs kept",
                .limit = 12ull << 30};
  replay(&w, o, 3, 0, check_step, &wt, &kept, wt.what);
  cr_assert(eq(str, wt.why, ""), "%s", wt.why);
  uint64_t bytes = 0;
  uint32_t n = lms__wl_mark_dead(&w, &bytes);
  cr_assert(gt(u32, n, 100), "only %u blobs found dead", n);
  watch_t wd = {.what = "googlenet b10, dead blobs discarded",
                .limit = 12ull << 30};
  replay(&w, o, 3, 0, check_step, &wd, &dropped, wd.what);
  cr_assert(eq(str, wd.why, ""), "%s", wd.why);
  cr_assert(eq(u64, wd.calls, 3ull * w.nsteps));
  cr_log_info("12 GiB, pcie3: %.1f -> %.1f ms, %.2f -> %.2f GB out, "
              "%.2f -> %.2f GB in", kept.last.time_ns / 1e6,
              dropped.last.time_ns / 1e6, kept.last.bytes_d2h / 1e9,
              dropped.last.bytes_d2h / 1e9, kept.last.bytes_h2d / 1e9,
              dropped.last.bytes_h2d / 1e9);
  cr_assert(lt(u64, dropped.last.bytes_d2h, kept.last.bytes_d2h / 2));
  cr_assert(lt(u64, dropped.last.bytes_h2d, kept.last.bytes_h2d));
  cr_assert(le(u64, dropped.last.time_ns, kept.last.time_ns));
  lms_options_destroy(o);
  lms__wl_free(&w);
}

/* Case i of a sweep: the built-ins first, under their limits, then
 * random programs of 4 KiB to 4 MiB chunks (seed + i) under 1.5x their
 * largest step plus 4 MiB; limit_s gets the limit as text. */
static void sweep_case(size_t i, uint64_t seed, lms__workload_t *w,
                       char *limit_s, size_t n) {
  if (i < NBUILTINS) {
    build_builtin(&builtins[i], w);
    snprintf(limit_s, n, "%s", builtins[i].limit);
    return;
  }
  const shape_t sh = {.min_size = 4 * KiB, .max_size = 4 * MiB,
                      .transient = 1};
  random_workload(seed + i, &sh, w);
  limit_text(lms__wl_max_step_bytes(w) * 3 / 2 + 4 * MiB, limit_s, n);
}

/* Note [Counters that add up] in replay.c: in every iteration, prefetches
 * issued plus those still open at its start equal hits, late arrivals and
 * wastes plus those open at its end; under every policy, on the built-ins
 * and on random programs, over the slowest and a fast link. */
static void check_counters(const lms__replay_result_t *res, const char *what) {
  for (int i = 0; i < res->iterations; i++) {
    const lms__replay_iter_t *it = &res->iter[i];
    cr_assert(eq(u64, it->prefetches + it->prefetch_open_before,
                 it->prefetch_hits + it->prefetch_late + it->prefetch_wasted +
                     it->prefetch_open_after),
              "%s, iteration %d: %llu prefetches + %llu open before, %llu "
              "hits + %llu late + %llu wasted + %llu open after", what, i + 1,
              (unsigned long long)it->prefetches,
              (unsigned long long)it->prefetch_open_before,
              (unsigned long long)it->prefetch_hits,
              (unsigned long long)it->prefetch_late,
              (unsigned long long)it->prefetch_wasted,
              (unsigned long long)it->prefetch_open_after);
    if (i > 0)
      cr_assert(eq(u64, it->prefetch_open_before,
                   res->iter[i - 1].prefetch_open_after), "%s", what);
  }
}

Test(learned, prefetch_counters_add_up_in_every_iteration, .timeout = 300) {
  static const char *const policies[] = {"lru", "schedule"};
  static const char *const links[] = {"pcie3", "nvlink2"};
  uint64_t opened = 0;
  for (size_t i = 0; i < NBUILTINS + 12; i++) {
    lms__workload_t w;
    char limit_s[32];
    sweep_case(i, 0xc0117e5ull, &w, limit_s, sizeof limit_s);
    for (size_t p = 0; p < 2; p++)
      for (size_t l = 0; l < 2; l++) {
        lms_options_t *o = options("gpu-limit", limit_s, "policy", policies[p],
                                   "link", links[l], "sim-bytes", "off", NULL);
        char what[160];
        snprintf(what, sizeof what, "%s under %s, %s over %s", w.name, limit_s,
                 policies[p], links[l]);
        lms__replay_result_t res;
        replay(&w, o, 5, 0, NULL, NULL, &res, what);
        lms_options_destroy(o);
        check_counters(&res, what);
        for (int k = 0; k < res.iterations; k++)
          opened += res.iter[k].prefetch_open_after;
      }
    lms__wl_free(&w);
  }
  /* Prefetches do cross iterations here, or the identity proves little. */
  cr_assert(gt(u64, opened, 0));
}

/* Note [Writing back ahead] in residency.c, as plan.c calls it: with room
 * for every chunk beside the free reserve nothing is evicted, so nothing
 * is written home ahead either (it was: GoogLeNet batch 10 under 32 GiB
 * wrote 3.96 GB an iteration for nothing). */
Test(clean_ahead, nothing_written_home_when_everything_fits) {
  const builtin_t b = {"googlenet", 1, 1, 0, NULL};
  lms__workload_t w;
  build_builtin(&b, &w);
  uint64_t room = lms__wl_chunk_bytes(&w) / 7 * 8 + (64ull << 20);
  char limit[32];
  limit_text(room, limit, sizeof limit);
  lms_options_t *o = options("gpu-limit", limit, "sim-bytes", "off", NULL);
  lms__replay_result_t r;
  replay(&w, o, 3, 0, NULL, NULL, &r, "googlenet b1 with room for all");
  cr_assert(eq(u64, r.last.bytes_d2h, 0), "%llu bytes written home",
            (unsigned long long)r.last.bytes_d2h);
  cr_assert(eq(u64, r.last.bytes_h2d, 0));
  lms_options_destroy(o);
  lms__wl_free(&w);
}

/* Note [Stalls measured after the fact] in residency.c: where the device
 * cannot say ahead how long a stream will wait for a prefetch (CUDA), the
 * wait is timed and counted once the stream has passed it.  The simulated
 * device with --sim-measured-waits answers as CUDA does; the late
 * prefetches and the stalls must still be seen (they were counted as hits,
 * and the adaptive window never shrank), in order, with the counters
 * adding up in every iteration. */
Test(measured, late_prefetches_are_seen_after_the_fact, .timeout = 300) {
  static const char *const links[] = {"pcie3", "nvlink2"};
  uint64_t late[2] = {0, 0}, stall[2] = {0, 0};
  for (size_t i = 0; i < NBUILTINS + 6; i++) {
    lms__workload_t w;
    char limit_s[32];
    sweep_case(i, 0x5a11ull, &w, limit_s, sizeof limit_s);
    for (size_t l = 0; l < 2; l++) {
      uint64_t run_late[2];
      for (int m = 0; m < 2; m++) {
        lms_options_t *o = options("gpu-limit", limit_s, "policy", "schedule",
                                   "link", links[l], "sim-bytes", "off",
                                   "sim-measured-waits", m ? "on" : "off",
                                   NULL);
        char what[160];
        snprintf(what, sizeof what, "%s under %s over %s, waits %s", w.name,
                 limit_s, links[l], m ? "measured" : "known ahead");
        lms__replay_result_t res;
        replay(&w, o, 4, 0, NULL, NULL, &res, what);
        lms_options_destroy(o);
        check_counters(&res, what);
        run_late[m] = 0;
        for (int k = 0; k < res.iterations; k++) {
          run_late[m] += res.iter[k].prefetch_late;
          stall[m] += res.iter[k].stall_ns;
        }
        late[m] += run_late[m];
      }
      cr_log_info("%s under %s over %s: late %llu known ahead, %llu measured",
                  w.name, limit_s, links[l], (unsigned long long)run_late[0],
                  (unsigned long long)run_late[1]);
      if (run_late[0] > 0)
        cr_assert(gt(u64, run_late[1], 0), "%s over %s: no late prefetch "
                  "measured, %llu known ahead", w.name, links[l],
                  (unsigned long long)run_late[0]);
    }
    lms__wl_free(&w);
  }
  cr_log_info("late %llu / %llu, stalls %.3f / %.3f ms (known / measured)",
              (unsigned long long)late[0], (unsigned long long)late[1],
              stall[0] / 1e6, stall[1] / 1e6);
  /* Some runs were late, or this proves nothing; measured, as many are
   * seen within a factor of two (the window reacts a little later). */
  cr_assert(gt(u64, late[0], 0));
  cr_assert(ge(u64, late[1] * 2, late[0]));
  cr_assert(le(u64, late[1], late[0] * 2));
  cr_assert(gt(u64, stall[1], 0));
}

/* Note [Recording the timeline] in replay/timeline.c: the recorder, a
 * decorator timing each kernel and copy with timed events, draws what the
 * device did: per engine, the spans are in order, never overlap, and add
 * up to the engine's busy time over the recorded iteration, and the
 * copies' bytes to the bytes moved; with waits known ahead and measured
 * after the fact alike. */
Test(timeline, spans_add_up_to_what_each_engine_did, .timeout = 300) {
  for (size_t i = 0; i < NBUILTINS; i++) {
    lms__workload_t w;
    build_builtin(&builtins[i], &w);
    for (int m = 0; m < 2; m++) {
      lms_options_t *o = options("gpu-limit", builtins[i].limit, "policy",
                                 "schedule", "link", "pcie3", "sim-bytes",
                                 "off", "sim-measured-waits", m ? "on" : "off",
                                 NULL);
      lms__timeline_t tl;
      lms__tl_init(&tl);
      lms__replay_result_t res;
      char err[LMS__ERRBUF] = "";
      cr_assert(eq(int, lms__replay_run_timeline(&w, &o->v, 3, &tl, &res, err),
                   LMS_OK), "%s: %s", w.name, err);
      lms_options_destroy(o);
      cr_assert(eq(int, tl.truncated, 0), "%s", w.name);
      uint64_t busy[LMS__TL_ENGINES] = {0}, bytes[LMS__TL_ENGINES] = {0};
      uint64_t last_end[LMS__TL_ENGINES] = {0};
      for (size_t k = 0; k < tl.n; k++) {
        const lms__tl_span_t *s = &tl.spans[k];
        cr_assert(le(u64, s->start_ns, s->end_ns));
        cr_assert(ge(u64, s->start_ns, tl.origin_ns));
        cr_assert(ge(u64, s->start_ns, last_end[s->engine]),
                  "%s: span %zu of engine %d overlaps the one before",
                  w.name, k, s->engine);
        last_end[s->engine] = s->end_ns;
        busy[s->engine] += s->end_ns - s->start_ns;
        bytes[s->engine] += s->bytes;
      }
      const lms__replay_iter_t *it = &res.last;
      cr_log_info("%s, waits %s: %zu spans; compute %.1f of %.1f ms, in "
                  "%.1f of %.1f, out %.1f of %.1f", w.name,
                  m ? "measured" : "known", tl.n, busy[0] / 1e6,
                  it->compute_ns / 1e6, busy[1] / 1e6, it->h2d_busy_ns / 1e6,
                  busy[2] / 1e6, it->d2h_busy_ns / 1e6);
      cr_assert(gt(sz, tl.n, 0));
      cr_assert(eq(u64, busy[LMS__TL_COMPUTE], it->compute_ns), "%s", w.name);
      cr_assert(eq(u64, busy[LMS__TL_H2D], it->h2d_busy_ns), "%s", w.name);
      cr_assert(eq(u64, busy[LMS__TL_D2H], it->d2h_busy_ns), "%s", w.name);
      cr_assert(eq(u64, bytes[LMS__TL_H2D], it->bytes_h2d), "%s", w.name);
      cr_assert(eq(u64, bytes[LMS__TL_D2H], it->bytes_d2h), "%s", w.name);
      lms__tl_free(&tl);
    }
    lms__wl_free(&w);
  }
}

/* ---- The period's plan ------------------------------------------------------ */

/* Note [A planned period] in graph/ahead.c: a training loop of eight
 * layers (each weight read in forward and backward and then updated; each
 * layer's output, allocated afresh every iteration, written in forward,
 * read by the next layer and again in backward) under a budget about half
 * its bytes, with the period's plan looking ahead from the iteration its
 * schedule is learned: every read sees the bytes last written, chunks
 * were written home and brought back ahead of use, and the device stayed
 * within the budget. */
static void train_planned(int force, const char *ahead) {
  int late = force == 11 || (force < 10 && (force >= 6 ? force - 4 : force) >= 4);
  enum { L = 8, ITERS = 8 };
  lms_options_t *o = options("gpu-limit", "6MiB", "policy", "schedule", NULL);
  lms__plan_force = force;
  lms_ctx_t *ctx = context(o);
  lms_options_destroy(o);
  lms_stream_t s;
  cr_assert(eq(int, lms_stream_create(ctx, &s), LMS_OK));
  lms_chunk_t *wt[L], *act[L + 1];
  uint64_t wsum[L], asum[L + 1];
  lms_status_t st;
  for (int i = 0; i < L; i++) {
    cr_assert(eq(int, lms_alloc(ctx, 256 * KiB + (size_t)i * 4096, &wt[i]),
                 LMS_OK));
    wsum[i] = lms_test_write(ctx, wt[i], s, 1000 + (uint64_t)i, &st);
    cr_assert(eq(int, st, LMS_OK));
  }
  for (int it = 0; it < ITERS; it++) {
    uint64_t seed = 100000 * (uint64_t)(it + 1);
    cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
    cr_assert(eq(int, lms_alloc(ctx, 1 * MiB, &act[0]), LMS_OK));
    asum[0] = lms_test_write(ctx, act[0], s, seed, &st);
    cr_assert(eq(int, st, LMS_OK));
    for (int i = 0; i < L; i++) {
      cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
      cr_assert(eq(u64, lms_test_read(ctx, act[i], s, &st), asum[i]),
                "iteration %d, forward %d: output %d", it, i, i);
      cr_assert(eq(u64, lms_test_read(ctx, wt[i], s, &st), wsum[i]),
                "iteration %d, forward %d: weight", it, i);
      cr_assert(eq(int, lms_alloc(ctx, 1 * MiB + (size_t)(i + 1) * 8192,
                                  &act[i + 1]), LMS_OK));
      asum[i + 1] = lms_test_write(ctx, act[i + 1], s, seed + 1 + (uint64_t)i,
                                   &st);
      cr_assert(eq(int, st, LMS_OK));
      lms_compute(ctx, s, 200000);
    }
    for (int i = L - 1; i >= 0; i--) {
      cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
      cr_assert(eq(u64, lms_test_read(ctx, act[i + 1], s, &st), asum[i + 1]),
                "iteration %d, backward %d: output %d", it, i, i + 1);
      cr_assert(eq(u64, lms_test_read(ctx, act[i], s, &st), asum[i]),
                "iteration %d, backward %d: input", it, i);
      cr_assert(eq(u64, lms_test_read(ctx, wt[i], s, &st), wsum[i]),
                "iteration %d, backward %d: weight", it, i);
      wsum[i] = lms_test_write(ctx, wt[i], s, seed + 500 + (uint64_t)i, &st);
      cr_assert(eq(int, st, LMS_OK));
      cr_assert(eq(int, lms_free(ctx, act[i + 1]), LMS_OK));
      lms_compute(ctx, s, 400000);
    }
    cr_assert(eq(int, lms_free(ctx, act[0]), LMS_OK));
  }
  cr_assert(eq(int, lms_stream_sync(ctx, s), LMS_OK));
  lms__plan_force = 0;
  lms__plan_info_t info;
  lms__plan_info(ctx->plan, &info);
  lms_stats_t sts = stats_of(ctx);
  cr_log_info("plan: period %u, written home %lld, brought in %lld, "
              "prefetches %lld (hits %lld, late %lld)", info.period,
              (long long)sts.swaps_out.total, (long long)sts.swaps_in.total,
              (long long)sts.prefetches.total,
              (long long)sts.prefetch_hits.total,
              (long long)sts.prefetch_late.total);
  cr_assert(eq(str, (char *)info.source, "learned"));
  cr_assert(eq(str, (char *)info.ahead, (char *)ahead));
  cr_assert(eq(int, info.late, late));
  cr_assert(eq(int, info.order, (force >= 6 && force <= 9) || force == 12));
  /* Note [Leaving late]: dirty chunks the plan sent away stayed, and
   * only when it leaves late. */
  if (late) cr_assert(gt(u64, info.left_late, 0));
  else cr_assert(eq(u64, info.left_late, 0));
  cr_assert(gt(i64, sts.swaps_out.total, 0));
  cr_assert(gt(i64, sts.prefetches.total, 0));
  cr_assert(le(i64, sts.device_reserved.peak, 6 << 20));
  for (int i = 0; i < L; i++)
    cr_assert(eq(int, lms_free(ctx, wt[i]), LMS_OK));
  lms_stream_destroy(ctx, s);
  cr_assert(eq(int, lms_ctx_destroy(ctx), LMS_OK));
}

Test(planned, training_loses_no_byte_and_keeps_the_budget) {
  train_planned(2, "plan");
}

/* The same under the spread plan (Note [Spread out]). */
Test(planned, training_loses_no_byte_under_the_spread_plan) {
  train_planned(3, "spread");
}

/* The same, the dirty chunks each plan sends away left until their room
 * is needed (Note [Leaving late] in graph/plan.c). */
Test(planned, training_loses_no_byte_leaving_late) {
  train_planned(4, "plan");
  train_planned(5, "spread");
}

/* The same, each plan bringing chunks in by their use (Note [Copies in
 * by their use] in graph/ahead.c), leaving late or not. */
Test(planned, training_loses_no_byte_with_copies_in_by_their_use) {
  train_planned(6, "plan");
  train_planned(7, "spread");
  train_planned(8, "plan");
  train_planned(9, "spread");
}

/* The same with the plan deciding by density (Note [Whole chunks kept] in
 * graph/ahead.c), leaving late or not, and bringing chunks in by their
 * use. */
Test(planned, training_loses_no_byte_with_the_plan_by_density) {
  train_planned(10, "dense");
  train_planned(11, "dense");
  train_planned(12, "dense");
}

/* Streaming inference as bench/workloads/gen_traces.py writes it: 48
 * weight blocks of 48 MiB, each read once an iteration by a step of
 * about 64 us, with a 6 MiB activation made afresh by each. */
static void streaming(lms__workload_t *w) {
  lms__wl_init(w, "streaming 48 x 48 MiB");
  uint32_t blk[48], x, y;
  for (int i = 0; i < 48; i++)
    cr_assert(eq(int, lms__wl_add_chunk(w, 48 * MiB, 0, "block", &blk[i]),
                 LMS_OK));
  cr_assert(eq(int, lms__wl_add_chunk(w, 6 * MiB, 1, "batch", &x), LMS_OK));
  cr_assert(eq(int, lms__wl_add_step(w, 20000, "load"), LMS_OK));
  cr_assert(eq(int, lms__wl_add_ref(w, x, LMS_ACCESS_WRITE), LMS_OK));
  for (int i = 0; i < 48; i++) {
    cr_assert(eq(int, lms__wl_add_chunk(w, 6 * MiB, 1, "out", &y), LMS_OK));
    cr_assert(eq(int, lms__wl_add_step(w, 64424, "block"), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, x, LMS_ACCESS_READ), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, blk[i], LMS_ACCESS_READ), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, y, LMS_ACCESS_WRITE), LMS_OK));
    x = y;
  }
  char err[LMS__ERRBUF] = "";
  cr_assert(eq(int, lms__wl_validate(w, err), LMS_OK), "%s", err);
}

static int last_info(void *arg, lms_ctx_t *ctx, uint32_t step) {
  (void)step;
  lms__plan_info(ctx->plan, arg);
  return 0;
}

/* Replays w under the schedule policy until it settles, over `link`
 * under `limit`, with the simulated device moving no bytes; *info is the
 * planner's at the last step. */
static lms_status_t settle_with(const lms__workload_t *w, lms_options_t *o,
                                int declare, lms__plan_info_t *info,
                                lms__replay_result_t *res, char *err) {
  memset(info, 0, sizeof *info);
  lms_status_t st = lms__replay_run_hooked(w, &o->v, LMS__REPLAY_SETTLE,
                                           declare, last_info, info, res, err);
  lms_options_destroy(o);
  return st;
}

static lms_status_t settle(const lms__workload_t *w, const char *limit,
                           const char *link, int declare,
                           lms__plan_info_t *info, lms__replay_result_t *res,
                           char *err) {
  return settle_with(w,
                     options("gpu-limit", limit, "policy", "schedule", "link",
                             link, "sim-bytes", "off", NULL),
                     declare, info, res, err);
}

/* A chain trained as VGG is: L layers, each output (act bytes, halving
 * every two layers) read by the next layer and again in backward; each
 * weight (wt bytes, but three times act for the last layer but one, as
 * VGG's first classifier layer) read in forward and backward, its
 * gradient accumulated in backward, and both read by the update at the
 * end. */
static void chain_training(lms__workload_t *w, int L, uint64_t act,
                           uint64_t wt) {
  lms__wl_init(w, "chain");
  uint32_t x[33], wts[32], g[32];
  cr_assert(le(int, L, 32));
  cr_assert(eq(int, lms__wl_add_chunk(w, act, 0, "input", &x[0]), LMS_OK));
  for (int i = 0; i < L; i++) {
    uint64_t ws = i == L - 2 ? 3 * act : wt, as = act >> (i / 2);
    cr_assert(eq(int, lms__wl_add_chunk(w, ws, 0, "w", &wts[i]), LMS_OK));
    cr_assert(eq(int, lms__wl_add_chunk(w, ws, 0, "g", &g[i]), LMS_OK));
    cr_assert(eq(int, lms__wl_add_chunk(w, as, 1, "out", &x[i + 1]), LMS_OK));
  }
  for (int i = 0; i < L; i++) {
    cr_assert(eq(int, lms__wl_add_step(w, 500000, "fwd"), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, x[i], LMS_ACCESS_READ), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, wts[i], LMS_ACCESS_READ), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, x[i + 1], LMS_ACCESS_WRITE), LMS_OK));
  }
  uint32_t dy = 0;
  for (int i = L - 1; i >= 0; i--) {
    uint32_t dx;
    cr_assert(eq(int, lms__wl_add_chunk(w, act >> (i / 2), 1, "grad", &dx), LMS_OK));
    cr_assert(eq(int, lms__wl_add_step(w, 1000000, "bwd"), LMS_OK));
    if (i < L - 1)
      cr_assert(eq(int, lms__wl_add_ref(w, dy, LMS_ACCESS_READ), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, x[i + 1], LMS_ACCESS_READ), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, x[i], LMS_ACCESS_READ), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, wts[i], LMS_ACCESS_READ), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, g[i], LMS_ACCESS_RW), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, dx, LMS_ACCESS_WRITE), LMS_OK));
    dy = dx;
  }
  for (int i = 0; i < L; i++) {
    cr_assert(eq(int, lms__wl_add_step(w, 20000, "sgd"), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, wts[i], LMS_ACCESS_RW), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, g[i], LMS_ACCESS_READ), LMS_OK));
  }
  char err[LMS__ERRBUF] = "";
  cr_assert(eq(int, lms__wl_validate(w, err), LMS_OK), "%s", err);
}

/* The kth of the VGG-shaped chains of the tests below, of L layers, and
 * its budget: outputs of 8 MiB and 0, 4 or 8 KiB more, under 1.10, 1.15,
 * 1.20 or 1.25 times the largest step. */
static void chain_case(lms__workload_t *w, int L, int k, char *limit_s,
                       size_t n) {
  chain_training(w, L, 8 * MiB + 4096 * (uint64_t)(k % 3), MiB / 2);
  limit_text(lms__wl_max_step_bytes(w) * (uint64_t)(22 + k % 4) / 20,
             limit_s, n);
}

/* The plan by end run alone (not on trial, not leaving late) over
 * pcie3 until it settles: it brings something in, and brings in what it
 * planned. */
static lms__replay_result_t plan_alone(const lms__workload_t *w,
                                       const char *limit_s,
                                       const char *what) {
  lms__plan_info_t info;
  lms__replay_result_t res;
  char err[LMS__ERRBUF] = "";
  lms__plan_force = 2;
  lms_status_t st = settle(w, limit_s, "pcie3", 0, &info, &res, err);
  lms__plan_force = 0;
  cr_assert(eq(int, st, LMS_OK), "%s: %s", what, err);
  cr_assert(eq(str, (char *)res.ahead, "plan"), "%s", what);
  cr_assert(gt(u64, info.plan_in, 0), "%s: the plan brings nothing in", what);
  cr_assert(eq(u64, res.last.bytes_h2d, info.plan_in), "%s", what);
  return res;
}

/* Note [Leaving before making room] in graph/plan.c: the plan by end,
 * run alone (not on trial, not leaving late), brings in once settled the
 * bytes it planned and no more, on chains trained as VGG is (outputs
 * halving every two layers, one weight three times the first output)
 * of 6 to 9 layers, under budgets of 1.10 to 1.25 times the largest
 * step.  Where the room for a step's outputs was made before the chunks
 * the plan sends away after the step before had left, it took chunks the
 * plan keeps, and eight of these sixteen brought in more. */
Test(planned, a_plan_brings_in_what_it_planned) {
  for (int k = 0; k < 16; k++) {
    lms__workload_t w;
    char limit_s[32], what[96];
    chain_case(&w, 6 + k / 4, k, limit_s, sizeof limit_s);
    snprintf(what, sizeof what, "%d layers under %s", 6 + k / 4, limit_s);
    plan_alone(&w, limit_s, what);
    lms__wl_free(&w);
  }
}

/* Whether two steps in a row of w name more distinct bytes than `cap`. */
static int pair_overfills(const lms__workload_t *w, uint64_t cap) {
  uint32_t *seen = calloc(w->nchunks + 1, sizeof *seen);
  cr_assert(not(eq(ptr, seen, NULL)));
  int over = 0;
  for (uint32_t s = 0; s + 1 < w->nsteps && !over; s++) {
    uint64_t b = 0;
    for (uint32_t d = 0; d < 2; d++)
      for (uint32_t i = 0; i < w->steps[s + d].nrefs; i++) {
        uint32_t c = w->refs[w->steps[s + d].first_ref + i].chunk;
        if (seen[c] != s + 1) {
          seen[c] = s + 1;
          b += w->chunks[c].size;
        }
      }
    over = b > cap;
  }
  free(seen);
  return over;
}

/* Note [The plan says when] in graph/plan.c and Note [A copy in with no
 * room before its use] in graph/ahead.c: VGG-shaped chains (as above)
 * under budgets of 1.02 to 1.08 times the largest step, where some step
 * and the next name more bytes than the budget.  The plan by end, run
 * alone, brings in once settled what it planned and no copy in is
 * wasted.  Brought in for the next step whatever the room, or by the
 * plan a step before its use where that step had no room for it beside
 * its own chunks, a chunk took room the step that began needed for its
 * outputs, which pushed it out again before its use: without either
 * rule the test fails. */
Test(planned, a_plan_alone_wastes_no_copy) {
  int overfilled = 0;
  for (int k = 0; k < 12; k++) {
    lms__workload_t w;
    char limit_s[32], what[96];
    chain_training(&w, 6 + k / 3, 8 * MiB + 4096 * (uint64_t)(k % 3), MiB / 2);
    uint64_t cap = lms__wl_max_step_bytes(&w) * (uint64_t)(51 + k % 4) / 50;
    limit_text(cap, limit_s, sizeof limit_s);
    snprintf(what, sizeof what, "%d layers under %s", 6 + k / 3, limit_s);
    overfilled += pair_overfills(&w, cap);
    lms__replay_result_t res = plan_alone(&w, limit_s, what);
    cr_assert(eq(u64, res.last.prefetch_wasted, 0), "%s", what);
    lms__wl_free(&w);
  }
  cr_assert(ge(int, overfilled, 6), "only %d of 12 chains overfill", overfilled);
}

/* Note [Home before leaving] in graph/plan.c: VGG-shaped chains (as
 * above) under the plan, at budgets of 1.10 to 1.25 times the largest
 * step, over pcie3 and pcie5.  The activations the plan sends away after
 * the next layer reads them go home while that layer computes: the same
 * bytes move each way as when each is written home as it leaves, and
 * the iteration is faster in at least three in four (by up to 8 % when
 * this was written) and at most 1 % slower in any (the copy queued ahead
 * can hold up another on the link out: 0.05 % in two of the sixteen). */
Test(planned, home_before_leaving_overlaps_the_step) {
  int faster = 0, runs = 0;
  for (int k = 0; k < 8; k++) {
    lms__workload_t w;
    char limit_s[32], what[96];
    chain_case(&w, 6 + k / 2, k, limit_s, sizeof limit_s);
    for (int l = 0; l < 2; l++) {
      const char *link = l ? "pcie5" : "pcie3";
      snprintf(what, sizeof what, "%d layers under %s over %s", 6 + k / 2,
               limit_s, link);
      lms__plan_info_t info[2];
      lms__replay_result_t res[2];
      for (int late = 0; late < 2; late++) {
        char err[LMS__ERRBUF] = "";
        lms__plan_force = 2;
        lms__plan_home_late = late;
        lms_status_t st = settle(&w, limit_s, link, 0, &info[late], &res[late], err);
        lms__plan_force = 0;
        lms__plan_home_late = 0;
        cr_assert(eq(int, st, LMS_OK), "%s: %s", what, err);
        cr_assert(eq(str, (char *)res[late].ahead, "plan"), "%s", what);
      }
      cr_assert(gt(u64, res[1].last.bytes_d2h, 0), "%s: nothing went home", what);
      cr_assert(eq(u64, res[0].last.bytes_h2d, res[1].last.bytes_h2d), "%s", what);
      cr_assert(eq(u64, res[0].last.bytes_d2h, res[1].last.bytes_d2h), "%s", what);
      cr_assert(le(u64, res[0].last.time_ns, res[1].last.time_ns / 100 * 101),
                "%s: %llu ns written home ahead, %llu as they leave", what,
                (unsigned long long)res[0].last.time_ns,
                (unsigned long long)res[1].last.time_ns);
      faster += res[0].last.time_ns < res[1].last.time_ns;
      runs++;
    }
    lms__wl_free(&w);
  }
  cr_assert(ge(int, faster, runs * 3 / 4), "faster in %d of %d", faster, runs);
}

/* ... and with real bytes: every read of the chain's chunks, learned and
 * declared, sees what was last written, with activations written home
 * ahead of leaving and brought back in backward. */
Test(planned, bytes_survive_home_before_leaving) {
  for (int declare = 0; declare < 2; declare++) {
    lms__workload_t w;
    chain_training(&w, 7, MiB, MiB / 8);
    char limit_s[32], what[96];
    limit_text(lms__wl_max_step_bytes(&w) * 23 / 20, limit_s, sizeof limit_s);
    snprintf(what, sizeof what, "7 layers under %s, %s", limit_s,
             declare ? "declared" : "learned");
    lms_options_t *o = options("gpu-limit", limit_s, "policy", "schedule",
                               NULL);
    drive_t d = {.what = what, .declare = declare, .iterations = 6,
                 .seed = 7};
    lms__plan_force = 2;
    int ok = drive(&d, &w, o);
    lms__plan_force = 0;
    lms_options_destroy(o);
    cr_assert(ok, "%s", d.why);
    cr_assert(gt(u64, d.reads, 0), "%s", what);
    cr_assert(eq(u64, d.mismatches, 0), "%s: %llu of %llu reads wrong", what,
              (unsigned long long)d.mismatches, (unsigned long long)d.reads);
    cr_assert(gt(i64, d.after.swaps_out.total - d.before.swaps_out.total, 0),
              "%s: nothing went home", what);
    cr_assert(gt(i64, d.after.prefetches.total - d.before.prefetches.total, 0),
              "%s: nothing came back", what);
    lms__wl_free(&w);
  }
}

/* Note [Ways to look ahead, measured] in graph/plan.c: replays run
 * until they settle, of the built-ins, of streaming inference and of
 * random programs under tight budgets, with the default options: the
 * trial was over before the replay stopped, the five ways were timed
 * (seven where the plan by density sends a chunk away after other uses
 * than the plan does: it and it in order), and what looks ahead is the
 * one whose timed iteration
 * was fastest (a plan only by 2 % over the window, or no slower bringing
 * in 1 % fewer bytes; the fastest of the plan by density, the spread
 * plan and each in order only by 2 % over the plan; the faster of that and the next fastest plan
 * leaving late, the second tried only where the first did not gain 2 %
 * so, only by 2 % over not, and neither where it left no dirty chunk
 * late).  Where the window is kept after the plans
 * ran, it starts over (Note [Back to the window]), and settles no more
 * than 3 % slower than its iteration on trial. */
Test(planned, the_faster_way_looks_ahead_after_the_trial, .timeout = 300) {
  const shape_t sh = {.min_size = 64 * KiB, .max_size = 4 * MiB,
                      .transient = 1};
  static const char *const ways[] = {"window",  "plan",    "spread", "dense",
                                     "dense-w", "dense-h", "dense-s"};
  uint64_t chose[7] = {0, 0, 0, 0, 0, 0, 0}, chose_late = 0, chose_order = 0;
  uint64_t replaced = 0;
  uint64_t tried_dense = 0, tried_late2 = 0, skipped_late = 0, tried_dout = 0;
  uint64_t tried_dhold = 0, tried_dsearch = 0;
  uint64_t dense_more = 0;
  for (int k = 0; k < 16; k++) {
    lms__workload_t w;
    char limit_s[32], what[160];
    /* The built-ins over NVLink 2.0, and GoogLeNet batch 1 under 8 GiB
     * over PCIe Gen3 too, where the plan was the faster when this was
     * written; streaming at 2x over NVLink-C2C, where the spread plan
     * was. */
    const char *link = k == (int)NBUILTINS ? "pcie3"
                       : k == 15           ? "c2c"
                                           : "nvlink2";
    if (k == 15) {
      streaming(&w);
      snprintf(limit_s, sizeof limit_s, "%llu",
               (unsigned long long)lms__wl_chunk_bytes(&w) / 2);
    } else if (k <= (int)NBUILTINS) {
      const builtin_t *b = &builtins[k < (int)NBUILTINS ? k : 3];
      build_builtin(b, &w);
      snprintf(limit_s, sizeof limit_s, "%s", b->limit);
    } else {
      uint64_t seed = 0x7a1a10000ull + (uint64_t)k;
      random_workload(seed, &sh, &w);
      limit_text(lms__wl_max_step_bytes(&w) * 11 / 10, limit_s,
                 sizeof limit_s);
    }
    snprintf(what, sizeof what, "case %d: %s under %s over %s", k, w.name,
             limit_s, link);
    lms__plan_info_t info;
    lms__replay_result_t res;
    char err[LMS__ERRBUF] = "";
    lms_status_t st = settle(&w, limit_s, link, !has_transient(&w), &info,
                             &res, err);
    cr_assert(eq(int, st, LMS_OK), "%s: %s", what, err);
    cr_log_info("%s: window %.3f ms, plan %.3f ms, by density %.3f ms "
                "(in order %.3f ms, counting write-backs %.3f ms, holding "
                "write-backs' room %.3f ms, searched by its time %.3f ms), "
                "spread plan %.3f ms, in order %.3f ms, "
                "leaving late %.3f ms: %s%s%s after %d iterations, settled "
                "at %.3f ms", what,
                (double)info.trial_window_ns / 1e6,
                (double)info.trial_plan_ns / 1e6,
                (double)info.trial_dense_ns / 1e6,
                (double)info.trial_dorder_ns / 1e6,
                (double)info.trial_dout_ns / 1e6,
                (double)info.trial_dhold_ns / 1e6,
                (double)info.trial_dsearch_ns / 1e6,
                (double)info.trial_spread_ns / 1e6,
                (double)info.trial_order_ns / 1e6,
                (double)info.trial_late_ns / 1e6, res.ahead,
                res.order ? " in order" : "", res.late ? " leaving late" : "",
                res.iterations, (double)res.last.time_ns / 1e6);
    cr_assert(eq(int, res.settled, 1), "%s", what);
    cr_assert(eq(int, info.deciding, 0), "%s", what);
    uint64_t wn = info.trial_window_ns, pn = info.trial_plan_ns,
             sn = info.trial_spread_ns, on = info.trial_order_ns,
             ln = info.trial_late_ns;
    cr_assert(gt(u64, wn, 0), "%s", what);
    cr_assert(gt(u64, pn, 0), "%s", what);
    cr_assert(gt(u64, sn, 0), "%s", what);
    cr_assert(gt(u64, on, 0), "%s", what);
    /* The kinds of plan: the plan, by density, spread, spread in order,
     * by density in order (tried only after by density), by density
     * counting write-backs, by density holding the room of its
     * write-backs and by density in order searched by its time (each
     * where it decides otherwise than by density); bit[] is each one's
     * bit of kind_dirty. */
    uint64_t t[8] = {pn, info.trial_dense_ns ? info.trial_dense_ns
                                             : UINT64_MAX, sn, on,
                     info.trial_dorder_ns ? info.trial_dorder_ns
                                          : UINT64_MAX,
                     info.trial_dout_ns ? info.trial_dout_ns : UINT64_MAX,
                     info.trial_dhold_ns ? info.trial_dhold_ns : UINT64_MAX,
                     info.trial_dsearch_ns ? info.trial_dsearch_ns
                                           : UINT64_MAX};
    uint64_t in[8] = {info.trial_plan_in,   info.trial_dense_in,
                      info.trial_spread_in, info.trial_order_in,
                      info.trial_dorder_in, info.trial_dout_in,
                      info.trial_dhold_in,  info.trial_dsearch_in};
    static const int bit[8] = {0, 1, 2, 3, 4, 6, 7, 8};
    uint64_t wi = info.trial_window_in;
    tried_dense += t[1] != UINT64_MAX;
    tried_dout += t[5] != UINT64_MAX;
    tried_dhold += t[6] != UINT64_MAX;
    tried_dsearch += t[7] != UINT64_MAX;
    cr_assert(eq(int, t[1] == UINT64_MAX, t[4] == UINT64_MAX), "%s", what);
    /* Note [Whole chunks kept] in graph/ahead.c: tried wherever it
     * decides otherwise, whatever the bytes: where the two plans bring in
     * different bytes they decide otherwise.  (Both are built here: no
     * host memory runs short.) */
    cr_assert(eq(int, t[1] == UINT64_MAX, info.dense_alike), "%s", what);
    if (info.dense_plan_in != info.end_plan_in)
      cr_assert(ne(u64, t[1], UINT64_MAX), "%s: %llu bytes planned by "
                "density, %llu by end, and not tried", what,
                (unsigned long long)info.dense_plan_in,
                (unsigned long long)info.end_plan_in);
    dense_more += t[1] != UINT64_MAX && info.dense_plan_in >= info.end_plan_in;
    int b = 1;
    for (int k = 2; k < 8; k++)
      if (t[k] < t[b]) b = k;
    if (!(t[b] < pn / 50 * 49)) b = 0;
    int r = -1;
    for (int k = 0; k < 8; k++)
      if (k != b && t[k] != UINT64_MAX && (r < 0 || t[k] < t[r])) r = k;
    /* Note [Leaving late]: a plan that sent no dirty chunk away on trial
     * is not tried leaving late; the next fastest is, where the plan
     * chosen was not or did not gain 2 % so. */
    int db = (info.kind_dirty >> bit[b]) & 1,
        dr = r >= 0 && ((info.kind_dirty >> bit[r]) & 1);
    if (db) cr_assert(gt(u64, ln, 0), "%s", what);
    else cr_assert(eq(u64, ln, 0), "%s", what);
    skipped_late += !db;
    int late2 = (!db || ln >= t[b] / 50 * 49) && dr;
    if (late2) cr_assert(gt(u64, info.trial_late2_ns, 0), "%s", what);
    else cr_assert(eq(u64, info.trial_late2_ns, 0), "%s", what);
    tried_late2 += late2;
    /* A plan that left no dirty chunk late does not count as leaving
     * late. */
    uint64_t c = info.late_left[0] ? ln : UINT64_MAX, ci = info.trial_late_in;
    int ck = b;
    if (late2 && info.late_left[1] && info.trial_late2_ns < c) {
      c = info.trial_late2_ns;
      ci = info.trial_late2_in;
      ck = r;
    }
    /* Note [Ties go to fewer bytes]. */
    int plan_wins = t[b] < wn / 50 * 49 || (t[b] <= wn && in[b] < wi / 100 * 99);
    int late_wins = c < wn / 50 * 49 || (c <= wn && ci < wi / 100 * 99);
    int late = late_wins && (c < t[b] / 50 * 49 || !plan_wins);
    int kind = late ? ck : b;
    int way = plan_wins || late
                  ? (kind == 0                ? 1
                     : kind == 5              ? 4
                     : kind == 6              ? 5
                     : kind == 7              ? 6
                     : kind == 1 || kind == 4 ? 3
                                              : 2)
                  : 0;
    int in_order = kind == 3 || kind == 4;
    /* Note [The trial keeps score] in graph/plan.c: the way chosen may
     * go on slower than another was on trial and be replaced, once; the
     * run, held while the watch counts, then settles on the one that
     * replaced it. */
    cr_assert(le(u64, res.replaced, 1), "%s", what);
    if (res.replaced) {
      cr_assert(ne(u64, res.replaced_ns, 0), "%s", what);
      cr_assert(strcmp(res.ahead, ways[way]) != 0 ||
                    res.late != (way > 0 && late) ||
                    res.order != (way > 0 && in_order),
                "%s: replaced by the way it was", what);
      replaced++;
      lms__wl_free(&w);
      continue;
    }
    cr_assert(eq(str, res.ahead, (char *)ways[way]), "%s", what);
    cr_assert(eq(int, res.late, way > 0 && late), "%s", what);
    cr_assert(eq(int, res.order, way > 0 && in_order), "%s", what);
    /* Note [Back to the window] in graph/plan.c. */
    if (way == 0)
      cr_assert(le(u64, res.last.time_ns, wn / 100 * 103),
                "%s: the window settled at %.3f ms, %.3f ms on trial", what,
                (double)res.last.time_ns / 1e6, (double)wn / 1e6);
    chose[way]++;
    chose_late += way > 0 && late;
    chose_order += way > 0 && in_order;
    lms__wl_free(&w);
  }
  cr_log_info("the plans left dirty chunks late in %llu cases, brought "
              "chunks in by their use in %llu; the plan by density was "
              "tried in %llu (planning no fewer bytes than the plan in "
              "%llu) and kept in %llu; the next fastest plan left "
              "them late in %llu; the plan chosen sent no dirty chunk away "
              "in %llu; the plan by density holding write-backs' room was "
              "tried in %llu and kept in %llu; the plan searched by its "
              "time was tried in %llu and kept in %llu; the way chosen "
              "was replaced after the trial in %llu",
              (unsigned long long)chose_late,
              (unsigned long long)chose_order, (unsigned long long)tried_dense,
              (unsigned long long)dense_more,
              (unsigned long long)chose[3], (unsigned long long)tried_late2,
              (unsigned long long)skipped_late,
              (unsigned long long)tried_dhold, (unsigned long long)chose[5],
              (unsigned long long)tried_dsearch,
              (unsigned long long)chose[6], (unsigned long long)replaced);
  /* Every outcome occurred: the choice is not fixed.  The plan by
   * density was timed where it plans no fewer bytes than the plan by end
   * (before, it was tried only where it planned fewer). */
  cr_assert(gt(u64, dense_more, 0));
  cr_assert(gt(u64, tried_dout, 0));
  cr_assert(gt(u64, tried_dhold, 0));
  cr_assert(gt(u64, tried_dsearch, 0));
  cr_assert(gt(u64, skipped_late, 0));
  cr_assert(gt(u64, chose[0], 0));
  cr_assert(gt(u64, chose[1], 0));
  cr_assert(gt(u64, chose[2], 0));
}

/* A recommendation model's training step shaped as DLRM's (bench/
 * workloads/gen_traces.py) at about 1/32 of its size: eight tables of
 * 2-24 MiB, each read in forward and updated in place in backward in the
 * same order, so that the gaps round the end of the period (update to
 * the next forward) are the ones the order by end from step 0 decides
 * last. */
static void tables_training(lms__workload_t *w) {
  static const uint64_t mib[8] = {3, 6, 12, 24, 2, 8, 16, 5};
  uint32_t t[8], a[8], idx[8], out[8], g[8], act;
  lms__wl_init(w, "tables");
  for (int i = 0; i < 8; i++) {
    uint64_t n = mib[i] * MiB + 4096;
    cr_assert(eq(int, lms__wl_add_chunk(w, n, 0, "table", &t[i]), LMS_OK));
    cr_assert(eq(int, lms__wl_add_chunk(w, n / 128, 0, "acc", &a[i]), LMS_OK));
    cr_assert(eq(int, lms__wl_add_chunk(w, 160 * KiB, 1, "idx", &idx[i]),
                 LMS_OK));
    cr_assert(eq(int, lms__wl_add_chunk(w, MiB / 2, 1, "out", &out[i]),
                 LMS_OK));
    cr_assert(eq(int, lms__wl_add_chunk(w, MiB / 2, 1, "grad", &g[i]),
                 LMS_OK));
  }
  cr_assert(eq(int, lms__wl_add_chunk(w, 4 * MiB, 1, "act", &act), LMS_OK));
  cr_assert(eq(int, lms__wl_add_step(w, 1000, "load"), LMS_OK));
  for (int i = 0; i < 8; i++)
    cr_assert(eq(int, lms__wl_add_ref(w, idx[i], LMS_ACCESS_WRITE), LMS_OK));
  for (int i = 0; i < 8; i++) {
    cr_assert(eq(int, lms__wl_add_step(w, 170000, "lookup"), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, idx[i], LMS_ACCESS_READ), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, t[i], LMS_ACCESS_READ), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, out[i], LMS_ACCESS_WRITE), LMS_OK));
  }
  cr_assert(eq(int, lms__wl_add_step(w, 2000000, "top"), LMS_OK));
  for (int i = 0; i < 8; i++)
    cr_assert(eq(int, lms__wl_add_ref(w, out[i], LMS_ACCESS_READ), LMS_OK));
  cr_assert(eq(int, lms__wl_add_ref(w, act, LMS_ACCESS_WRITE), LMS_OK));
  cr_assert(eq(int, lms__wl_add_step(w, 4000000, "top.bwd"), LMS_OK));
  cr_assert(eq(int, lms__wl_add_ref(w, act, LMS_ACCESS_READ), LMS_OK));
  for (int i = 0; i < 8; i++)
    cr_assert(eq(int, lms__wl_add_ref(w, g[i], LMS_ACCESS_WRITE), LMS_OK));
  for (int i = 0; i < 8; i++) {
    cr_assert(eq(int, lms__wl_add_step(w, 500000, "update"), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, g[i], LMS_ACCESS_READ), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, idx[i], LMS_ACCESS_READ), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, t[i], LMS_ACCESS_RW), LMS_OK));
    cr_assert(eq(int, lms__wl_add_ref(w, a[i], LMS_ACCESS_RW), LMS_OK));
  }
}

/* Note [Where the cycle is cut] in graph/ahead.c: where chunks are made of
 * pieces, the plan by end cut at the step where it brings in the least
 * goes on trial where that is not step 0 and decides otherwise, and plans
 * fewer bytes in than the plan from step 0; with whole chunks it is not
 * tried.  The tables' training cuts elsewhere under each of these
 * budgets.  (Which way the trial then keeps is the_faster_way_looks_
 * ahead_after_the_trial's rule; here it is only logged.) */
Test(planned, the_plan_cut_elsewhere_is_tried_with_pieces, .timeout = 300) {
  static const char *const limits[] = {"40MiB", "48MiB"};
  static const char *const links[] = {"pcie3", "pcie5"};
  lms__workload_t w;
  tables_training(&w);
  uint64_t kept = 0;
  for (int k = 0; k < 8; k++) {
    const char *limit = limits[k % 2], *link = links[k / 2 % 2];
    int pieces = k >= 4;
    char what[96], err[LMS__ERRBUF] = "";
    snprintf(what, sizeof what, "under %s over %s, %s", limit, link,
             pieces ? "pieces of 2 MiB" : "whole chunks");
    lms_options_t *o = options("gpu-limit", limit, "policy", "schedule",
                               "link", link, "sim-bytes", "off", NULL);
    if (pieces)
      cr_assert(eq(int, lms_options_set(o, "piece-size", "2MiB"), LMS_OK));
    lms__plan_info_t info;
    lms__replay_result_t res;
    lms_status_t st = settle_with(&w, o, 0, &info, &res, err);
    cr_assert(eq(int, st, LMS_OK), "%s: %s", what, err);
    cr_assert(eq(int, info.deciding, 0), "%s", what);
    cr_assert(gt(u64, info.trial_plan_ns, 0), "%s", what);
    cr_log_info("%s: plan %.3f ms, cut at step %u %.3f ms (%llu bytes "
                "planned in against %llu): %s", what,
                (double)info.trial_plan_ns / 1e6, info.cut_step,
                (double)info.trial_cut_ns / 1e6,
                (unsigned long long)info.cut_plan_in,
                (unsigned long long)info.end_plan_in, res.ahead);
    if (!pieces) {
      cr_assert(eq(u64, info.trial_cut_ns, 0), "%s", what);
      cr_assert(ne(str, (char *)res.ahead, "cut"), "%s", what);
      continue;
    }
    cr_assert(ne(u32, info.cut_step, 0), "%s", what);
    cr_assert(eq(int, info.cut_alike, 0), "%s", what);
    cr_assert(gt(u64, info.trial_cut_ns, 0), "%s", what);
    cr_assert(lt(u64, info.cut_plan_in, info.end_plan_in), "%s", what);
    kept += strcmp(res.ahead, "cut") == 0;
  }
  cr_log_info("the plan cut elsewhere was kept in %llu of 4",
              (unsigned long long)kept);
  lms__wl_free(&w);
}

/* Note [Back to the window] in graph/plan.c: the window, kept after a
 * trial where the plan by end could not be built (host memory short) but
 * the spread plans ran, starts over once, as it does after every plan
 * ran.  GoogleNet's training at batch 10 under 16 GiB over nvlink2 keeps
 * the window (the_faster_way_looks_ahead_after_the_trial, case 0). */
Test(planned, the_window_starts_over_after_any_plan) {
  const builtin_t *b = &builtins[0];
  for (int fails = 0; fails < 2; fails++) {
    lms__workload_t w;
    build_builtin(b, &w);
    lms__plan_info_t info;
    lms__replay_result_t res;
    char err[LMS__ERRBUF] = "";
    /* The first plan by end, built when the period is learned, starts
     * the trial; the second, after the spread plans, fails. */
    lms__plan_end_fails = fails ? 2 : 0;
    lms_status_t st = settle(&w, b->limit, "nvlink2", !has_transient(&w),
                             &info, &res, err);
    lms__plan_end_fails = 0;
    cr_assert(eq(int, st, LMS_OK), "%s", err);
    cr_assert(eq(int, info.deciding, 0));
    cr_assert(gt(u64, info.trial_spread_ns, 0));
    if (fails) cr_assert(eq(u64, info.trial_plan_ns, 0));
    else cr_assert(gt(u64, info.trial_plan_ns, 0));
    cr_assert(eq(str, res.ahead, "window"), "the plan by end %s",
              fails ? "failing" : "built");
    cr_assert(eq(u64, info.windows_back, 1), "the plan by end %s",
              fails ? "failing" : "built");
    cr_assert(le(u64, res.last.time_ns, info.trial_window_ns / 100 * 103));
    lms__wl_free(&w);
  }
}

/* Note [Ways to look ahead, measured]: a spread plan that cannot be built
 * (host memory runs out) is skipped, and the trial goes on to the plan and
 * ends; it does not wait for good with neither way looking ahead.  The
 * plan searched by its time (Note [A plan searched by its time] in
 * graph/ahead.c), where it was tried, is kept where it is 2 % faster than
 * the plan, and either where it is 2 % faster than the window. */
Test(planned, a_plan_that_cannot_be_built_is_skipped) {
  lms__workload_t w;
  streaming(&w);
  char limit_s[32];
  snprintf(limit_s, sizeof limit_s, "%llu",
           (unsigned long long)lms__wl_chunk_bytes(&w) / 2);
  lms__plan_info_t info;
  lms__replay_result_t res;
  char err[LMS__ERRBUF] = "";
  lms__plan_spread_fails = 1;
  lms_status_t st = settle(&w, limit_s, "c2c", 1, &info, &res, err);
  lms__plan_spread_fails = 0;
  cr_assert(eq(int, st, LMS_OK), "%s", err);
  cr_assert(eq(int, res.settled, 1));
  cr_assert(eq(int, info.deciding, 0));
  cr_assert(eq(u64, info.trial_spread_ns, 0));
  cr_assert(eq(u64, info.trial_order_ns, 0));
  cr_assert(gt(u64, info.trial_window_ns, 0));
  cr_assert(gt(u64, info.trial_plan_ns, 0));
  uint64_t sn = info.trial_dsearch_ns, pn = info.trial_plan_ns;
  int searched = sn > 0 && sn < pn / 50 * 49;
  uint64_t best = searched ? sn : pn;
  int plan = best < info.trial_window_ns / 50 * 49;
  cr_assert(eq(str, res.ahead,
               !plan ? "window" : searched ? "dense-s" : "plan"));
  lms__wl_free(&w);
}
