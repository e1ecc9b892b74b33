/* calibrate.c - choosing the simulated device's compute speed so that a
 * run is as busy as a measured profile says (replay.h).
 *
 * Invariants: on any failure the workload's compute times are those it
 * came with; every replay made is counted in the result. */
#include <math.h>
#include <stdlib.h>

#include "replay/replay.h"

/* Note [Calibrating compute to a busy share]
 *
 * Rationale: the simulator's compute times come from a model of the
 * device (a step's FLOPs over an assumed rate) or from a trace measured on
 * another GPU.  A published profile of a copy-bound run often gives
 * instead the share of time the GPU computed (the TFLMS 3D U-Net on x86
 * with PCIe Gen3: busy 29.1 %).  With the link's rate known, that one
 * figure fixes how fast the device computed: the faster the compute, the
 * larger the share of the iteration spent waiting for copies.  So the
 * compute times are scaled by one factor until a replay under the given
 * options is busy the target share; every other figure then predicted
 * (another link, GPUs sharing a link) uses nothing else fitted.
 *
 * The search: the busy share falls as the speedup grows, in practice; it
 * is not monotone by construction (a faster device can turn a prefetch
 * late, or change which victim is chosen), so the search is a bisection
 * on log(speedup) between LMS__CALIBRATE_MIN_SPEEDUP and
 * LMS__CALIBRATE_MAX_SPEEDUP, which ends at a crossing of the target
 * whatever the shape between.  The ends are run first: a target outside
 * the shares they give cannot be reached (a run that never waits is busy
 * near 100 % at every speed) and is refused with the range that can.
 * Each step halves the interval; CALIBRATE_MAX_RUNS replays (about 1e-9
 * of the interval in log terms) always suffice for the tolerance on the
 * workloads here, and the share reached is reported either way. */

#define CALIBRATE_MAX_RUNS 48

static lms_status_t busy_at(lms__workload_t *w, const uint64_t *base,
                            double base_flops, double speedup,
                            const lms__opts_t *opts, int iterations,
                            int declare, lms__calibration_t *out,
                            double *busy, char *err) {
  lms__wl_set_speed(w, base, base_flops, speedup);
  lms__replay_result_t *r = malloc(sizeof *r);
  if (r == NULL) {
    lms__errf(err, "no host memory for a calibration run");
    return LMS_ERR_HOST_OOM;
  }
  lms_status_t st = lms__replay_run(w, opts, iterations, declare, r, err);
  out->runs++;
  if (st == LMS_OK)
    *busy = r->last.time_ns > 0
                ? (double)r->last.compute_ns / (double)r->last.time_ns
                : 1.0;
  free(r);
  return st;
}

lms_status_t lms__replay_calibrate(lms__workload_t *w, const lms__opts_t *opts,
                                   int iterations, int declare, double target,
                                   lms__calibration_t *out, char *err) {
  *out = (lms__calibration_t){.target = target, .speedup = 1.0};
  if (!(target > 0.0 && target < 1.0)) {
    lms__errf(err, "a busy share of %g is not accepted; accepted: above 0 "
                   "and below 1 (above 0 and below 100 %%)", target);
    return LMS_ERR_INVALID;
  }
  if (w->nsteps == 0) {
    lms__errf(err, "workload '%s' has no steps to calibrate", w->name);
    return LMS_ERR_INVALID;
  }
  uint64_t *base = malloc((size_t)w->nsteps * sizeof *base);
  if (base == NULL) {
    lms__errf(err, "no host memory to calibrate");
    return LMS_ERR_HOST_OOM;
  }
  for (uint32_t s = 0; s < w->nsteps; s++) base[s] = w->steps[s].compute_ns;
  double base_flops = w->device_flops;
  double lo = log(LMS__CALIBRATE_MIN_SPEEDUP);
  double hi = log(LMS__CALIBRATE_MAX_SPEEDUP);
  double best = 1.0, best_busy = 0.0;
  lms_status_t st = busy_at(w, base, base_flops, exp(lo), opts, iterations,
                            declare, out, &out->busy_slow, err);
  if (st == LMS_OK)
    st = busy_at(w, base, base_flops, exp(hi), opts, iterations, declare,
                 out, &out->busy_fast, err);
  if (st != LMS_OK) goto fail;
  if (target > out->busy_slow || target < out->busy_fast) {
    lms__errf(err, "a GPU busy share of %.2f %% cannot be reached: from "
                   "%g to %g times the compute speed this run is busy "
                   "%.2f %% to %.2f %% of its time",
              100.0 * target, LMS__CALIBRATE_MIN_SPEEDUP,
              LMS__CALIBRATE_MAX_SPEEDUP, 100.0 * out->busy_fast,
              100.0 * out->busy_slow);
    st = LMS_ERR_INVALID;
    goto fail;
  }
  best = exp(lo);
  best_busy = out->busy_slow;
  if (fabs(out->busy_fast - target) < fabs(best_busy - target)) {
    best = exp(hi);
    best_busy = out->busy_fast;
  }
  while (out->runs < CALIBRATE_MAX_RUNS &&
         fabs(best_busy - target) > LMS__CALIBRATE_TOLERANCE) {
    double mid = 0.5 * (lo + hi), busy = 0.0;
    st = busy_at(w, base, base_flops, exp(mid), opts, iterations, declare,
                 out, &busy, err);
    if (st != LMS_OK) goto fail;
    if (fabs(busy - target) < fabs(best_busy - target)) {
      best = exp(mid);
      best_busy = busy;
    }
    if (busy > target) lo = mid; /* still too busy: compute faster */
    else hi = mid;
  }
  lms__wl_set_speed(w, base, base_flops, best);
  out->speedup = best;
  out->busy = best_busy;
  free(base);
  return LMS_OK;
fail:
  lms__wl_set_speed(w, base, base_flops, 1.0);
  free(base);
  return st;
}
