/* replay.h - running a workload through the runtime on the simulated
 * device: what `lms sim`, `lms demo` and the scheduler's tests measure.
 *
 * A replay creates a context from the options given (the simulated device,
 * its link and capacity, the policy, the window), allocates the workload's
 * chunks through the public API, and runs its steps for a number of
 * iterations: at each step it marks the step, acquires the step's chunks
 * (a "w" reference as an overwrite), enqueues the step's compute time,
 * releases them and discards those marked dead after the step
 * (lms__wl_mark_dead).  Transient chunks are allocated once their first
 * step has begun and freed after their last one, in every iteration.  The host waits for
 * the device at the end of each iteration, as a training loop reading its
 * loss does, and each iteration's time is the device clock between those
 * waits.  Nothing here moves real data unless the options ask for it. */
#ifndef LMS_REPLAY_REPLAY_H
#define LMS_REPLAY_REPLAY_H

#include <stdint.h>

#include "core/options.h"
#include "graph/graph.h"
#include "replay/cuts.h"
#include "replay/timeline.h"

#define LMS__REPLAY_MAX_ITERS 64
/* `iterations` for a replay that runs until two iterations in a row agree
 * and the last ends as it began, or a cycle of them (Note [A
 * settled iteration] in replay.c), from the third, at most the most
 * below. */
#define LMS__REPLAY_SETTLE 0
#define LMS__REPLAY_SETTLE_MIN 3
#define LMS__REPLAY_SETTLE_MAX 64
/* The longest cycle of iterations taken as settled (Note [A settled
 * iteration] in replay.c). */
#define LMS__REPLAY_CYCLE_MAX 6

typedef struct lms__replay_iter {
  uint64_t time_ns;
  uint64_t compute_ns;     /* the compute engine's busy time */
  uint64_t bytes_h2d, bytes_d2h;
  uint64_t h2d_busy_ns, d2h_busy_ns;
  uint64_t stall_ns;
  uint64_t prefetches, prefetch_hits, prefetch_late, prefetch_wasted;
  /* Prefetched chunks not yet used or evicted when the iteration began
   * and when it ended: prefetches + open_before = hits + late + wasted +
   * open_after (Note [Counters that add up] in replay.c). */
  uint64_t prefetch_open_before, prefetch_open_after;
  uint64_t demand_misses, cache_hits;
  /* Which chunks were on the device when it ended, each as dirty and as
   * prefetched, as one number (Note [A settled iteration] in replay.c). */
  uint64_t residency;
  /* At its end the ways to look ahead were on trial, or the way kept
   * might yet be replaced (Note [The trial keeps score] in
   * graph/plan.c): the run could not settle there. */
  int held;
} lms__replay_iter_t;

/* The fewest bytes each way and the least time any policy can take for
 * one iteration of a workload under a capacity (Note [A lower bound no
 * policy can beat] in bound.c). */
typedef struct lms__lower_bound {
  uint64_t h2d_bytes, d2h_bytes;
  uint64_t h2d_copies, d2h_copies; /* the fewest copies that move them */
  uint64_t time_ns;     /* the largest of the bounds below and compute */
  uint64_t split_ns;    /* the iteration split at split_step */
  uint32_t split_step;
  uint64_t cut_ns;      /* the cycle cut at cut_steps (Note [Cuts around
                           the cycle] in cuts.c) */
  uint32_t cut_steps[3];
  int cut_nsteps;       /* 2 or 3; 0 when nothing need be absent */
  uint64_t chain_ns;    /* any number of cuts, each part alone (Note [A
                           chain of cuts] in cuts.c) */
  uint32_t chain_steps[LMS__CHAIN_SHOWN]; /* its first cuts */
  uint32_t chain_ncuts;
  uint64_t both_ns;     /* the fewest bytes both ways over the rate they
                           share, where the link has one (Note [Both ways
                           at once in the bound] in cuts.c); else 0 */
} lms__lower_bound_t;

/* both_gbps: what the two ways move at once, 0 where each keeps its own
 * rate (lms__link_t's both_gbps). */
lms_status_t lms__lower_bound(const lms__workload_t *w, uint64_t capacity,
                              double h2d_gbps, double d2h_gbps,
                              double both_gbps, double latency_us,
                              lms__lower_bound_t *out, char *err);

typedef struct lms__replay_result {
  int iterations;           /* run */
  int settled;              /* settle mode: 1 if they settled (Note [A
                               settled iteration] in replay.c), 0 if not;
                               -1 for a fixed number */
  int measured;             /* the index of the iteration measured: the
                               last, or as Note [A settled iteration]
                               says */
  lms__replay_iter_t iter[LMS__REPLAY_MAX_ITERS];
  lms__replay_iter_t last;  /* the measured iteration, iter[measured] */
  double h2d_gbps, d2h_gbps;
  uint64_t overlap_bound_ns; /* max(compute, h2d bytes / rate, d2h / rate) */
  lms__lower_bound_t lower;  /* no policy does better (lms__lower_bound) */
  uint64_t device_peak;      /* peak device bytes reserved */
  uint64_t budget;
  char schedule[16];         /* the planner's source at the end */
  char ahead[8];             /* what looked ahead at the end: "window",
                                "plan", "dense", "dense-w", "dense-h",
                                "dense-s", "cut" or "spread" */
  int late;                  /* whether that plan left dirty chunks late
                                (Note [Leaving late] in graph/plan.c) */
  int order;                 /* ... and brought chunks in by their use
                                (Note [Copies in by their use] in
                                graph/ahead.c) */
  uint64_t trial_window_ns;  /* the window's iteration on trial; 0: none
                                (Note [Back to the window] there) */
  uint64_t replaced;         /* the times the way kept after a trial was
                                replaced (Note [The trial keeps score]
                                there) */
  uint64_t replaced_ns;      /* ... the mean of the iterations it took
                                then; 0: never replaced */
  uint64_t plan_in;          /* the chunk bytes the plan looking ahead at
                                the end brings in an iteration as planned;
                                0 where the window looks ahead */
  uint32_t period;
} lms__replay_result_t;

/* 1 - late - misses over the acquires that needed data brought in:
 * hits / (hits + late + misses); 1 when there were none. */
double lms__replay_hit_rate(const lms__replay_iter_t *it);

/* Runs w for `iterations` (1..LMS__REPLAY_MAX_ITERS, or
 * LMS__REPLAY_SETTLE: until settled) under opts.  With
 * `declare`, the schedule is declared through lms_schedule_step instead
 * of learned.  err (LMS__ERRBUF) says what failed, e.g. out of memory. */
lms_status_t lms__replay_run(const lms__workload_t *w, const lms__opts_t *opts,
                             int iterations, int declare,
                             lms__replay_result_t *out, char *err);

/* Hooks for tests: called after every step with the context; a nonzero
 * return stops the replay with LMS_ERR_INTERNAL. */
typedef int (*lms__replay_hook_t)(void *arg, lms_ctx_t *ctx, uint32_t step);
lms_status_t lms__replay_run_hooked(const lms__workload_t *w,
                                    const lms__opts_t *opts, int iterations,
                                    int declare, lms__replay_hook_t hook,
                                    void *arg, lms__replay_result_t *out,
                                    char *err);

/* As lms__replay_run, learning the schedule, and records in tl (set up by
 * lms__tl_init) when each kernel and copy of the last iteration ran. */
lms_status_t lms__replay_run_timeline(const lms__workload_t *w,
                                      const lms__opts_t *opts, int iterations,
                                      lms__timeline_t *tl,
                                      lms__replay_result_t *out, char *err);

/* Note [Calibrating compute to a busy share] is in calibrate.c. */
typedef struct lms__calibration {
  double target;      /* the busy share asked for, 0..1 */
  double speedup;     /* compute times were divided by this */
  double busy;        /* the share reached at speedup */
  double busy_slow;   /* the share at the slowest speed tried */
  double busy_fast;   /* the share at the fastest */
  int runs;           /* replays made */
} lms__calibration_t;

#define LMS__CALIBRATE_MIN_SPEEDUP 1e-3
#define LMS__CALIBRATE_MAX_SPEEDUP 1e3
/* The share reached is within this of the target, unless the runs ran out. */
#define LMS__CALIBRATE_TOLERANCE 0.0005

/* Scales w's compute times so that a replay under opts is busy `target`
 * (above 0, below 1) of its last iteration's time, the compute engine's
 * busy time over the iteration time.  On LMS_OK, w runs at out->speedup
 * times its speed before the call.  LMS_ERR_INVALID, with w unchanged and
 * err saying which shares can be reached, when the target is outside what
 * speedups of LMS__CALIBRATE_MIN_SPEEDUP to LMS__CALIBRATE_MAX_SPEEDUP
 * give; a failed replay's status and message otherwise. */
lms_status_t lms__replay_calibrate(lms__workload_t *w, const lms__opts_t *opts,
                                   int iterations, int declare, double target,
                                   lms__calibration_t *out, char *err);

/* Whether r's iterations have settled (Note [A settled iteration] in
 * replay.c), those from `first` on run after the trial: the index of the
 * iteration to measure, or -1. */
int lms__replay_steady(const lms__replay_result_t *r, int first);

/* The iteration an unsettled run reports (Note [A settled iteration] in
 * replay.c), its trial over at iteration `first` (-1: not over): the one
 * nearest the mean time of the later half of those since, at least the
 * last eight; its index. */
int lms__replay_unsettled_index(const lms__replay_result_t *r, int first);

#endif
