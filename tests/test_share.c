/* test_share.c - GPUs sharing one host link (Note [Shared link] in
 * device/linkshare.c, Note [Finding the shared timeline] in
 * replay/shared.c): a copy's time beside the other GPUs' copies, the
 * timeline of a period, bytes unchanged by sharing, one GPU equal to the
 * run alone, and two GPUs slower per GPU but never above the link; and
 * calibrating the compute speed to a busy share (replay/calibrate.c). */
#include <criterion/criterion.h>
#include "check.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/ctx.h"
#include "core/link.h"
#include "device/device.h"
#include "graph/graph.h"
#include "replay/shared.h"
#include "support.h"

#define MS ((uint64_t)1000000)

/* pcie3: 12.2e6 bytes in 1 ms host to device, plus 10 us. */
static lms__link_t pcie3(void) {
  lms__link_t l;
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__link_parse("pcie3", &l, err), LMS_OK));
  return l;
}

/* The time of a copy of n bytes over pcie3 in direction dir, starting at
 * start, beside the others of sh (NULL: alone). */
static uint64_t pcie3_copy_ns(const lms__link_share_t *sh, int dir,
                              uint64_t start, size_t n) {
  lms__link_t l = pcie3();
  double gbps = dir == LMS__DIR_H2D ? l.h2d_gbps : l.d2h_gbps;
  return lms__share_copy_ns(sh, dir, start, l.latency_us, gbps, n);
}

/* A timeline of period 10 ms busy host to device over [0, 5 ms). */
static lms__copy_timeline_t half_busy(void) {
  lms__copy_span_t h2d[] = {{100 * MS, 105 * MS}};
  const lms__copy_span_t *spans[LMS__DIR_COUNT] = {h2d, NULL};
  size_t n[LMS__DIR_COUNT] = {1, 0};
  lms__copy_timeline_t tl;
  cr_assert(eq(int, lms__copy_timeline_build(&tl, 100 * MS, 10 * MS, spans, n),
               LMS_OK));
  return tl;
}

Test(share, alone_copy_is_latency_plus_bytes_over_rate) {
  cr_assert(eq(u64, pcie3_copy_ns(NULL, LMS__DIR_H2D, 0, 12200000), 1010000));
  /* Others that copy only the other way cost nothing. */
  lms__copy_timeline_t tl = half_busy();
  lms__link_share_t sh = {.others = 1, .timeline = &tl};
  cr_assert(eq(u64, pcie3_copy_ns(&sh, LMS__DIR_D2H, 0, 12900000), 1010000));
  /* Nor does a copy in their idle half. */
  cr_assert(
      eq(u64, pcie3_copy_ns(&sh, LMS__DIR_H2D, 6 * MS, 12200000), 1010000));
  lms__copy_timeline_free(&tl);
}

Test(share, copy_beside_others_moves_at_a_fair_share) {
  lms__copy_timeline_t tl = half_busy();
  /* One other GPU busy throughout the copy: half the rate. */
  lms__link_share_t sh = {.others = 1, .timeline = &tl};
  cr_assert(eq(u64, pcie3_copy_ns(&sh, LMS__DIR_H2D, 0, 12200000), 2010000));
  /* Three others, all in phase: a quarter. */
  lms__link_share_t sh3 = {.others = 3, .timeline = &tl};
  cr_assert(eq(u64, pcie3_copy_ns(&sh3, LMS__DIR_H2D, 0, 12200000), 4010000));
  /* Starting 1 ms before the other's busy stretch ends (t = 4 ms, data
   * from 4.01 ms): 0.99 ms at half rate moves 6.039e6 bytes, the rest at
   * the full rate takes 0.505 ms more. */
  cr_assert(
      eq(u64, pcie3_copy_ns(&sh, LMS__DIR_H2D, 4 * MS, 12200000), 1505000));
  /* A phase of 5 ms puts the other's busy half at [5, 10) ms. */
  sh.phase_ns[0] = 5 * MS;
  cr_assert(eq(u64, pcie3_copy_ns(&sh, LMS__DIR_H2D, 0, 12200000), 1010000));
  lms__copy_timeline_free(&tl);
}

Test(share, timeline_wraps_and_merges) {
  lms__copy_span_t h2d[] = {{18, 25}, {10, 12}, {11, 14}};
  lms__copy_span_t d2h[] = {{3, 4}};
  const lms__copy_span_t *spans[LMS__DIR_COUNT] = {h2d, d2h};
  size_t n[LMS__DIR_COUNT] = {3, 1};
  lms__copy_timeline_t tl;
  /* Origin 10, period 10: [18, 25) wraps to [8, 10) and [0, 5); [10, 12)
   * and [11, 14) merge to [0, 4), and so into [0, 5); [3, 4) comes before
   * the origin and lands at [3, 4). */
  cr_assert(eq(int, lms__copy_timeline_build(&tl, 10, 10, spans, n), LMS_OK));
  cr_assert(eq(sz, tl.n[LMS__DIR_H2D], 2));
  cr_assert(eq(u64, tl.busy[0][0].start, 0));
  cr_assert(eq(u64, tl.busy[0][0].end, 5));
  cr_assert(eq(u64, tl.busy[0][1].start, 8));
  cr_assert(eq(u64, tl.busy[0][1].end, 10));
  cr_assert(eq(sz, tl.n[LMS__DIR_D2H], 1));
  cr_assert(eq(u64, tl.busy[1][0].start, 3));
  double next;
  cr_assert(eq(int, lms__copy_timeline_at(&tl, 0, 4.5, &next), 1));
  cr_assert(eq(dbl, next, 0.5));
  cr_assert(eq(int, lms__copy_timeline_at(&tl, 0, 6.0, &next), 0));
  cr_assert(eq(dbl, next, 2.0));
  lms__copy_timeline_free(&tl);
  cr_assert(eq(int, lms__copy_timeline_build(&tl, 0, 0, spans, n),
               LMS_ERR_INVALID));
}

Test(share, device_refuses_a_malformed_share) {
  lms__sim_config_t cfg = {.capacity = 1 << 20, .link = pcie3()};
  lms_dev_t *d = NULL;
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__sim_create(&cfg, &d, err), LMS_OK));
  lms__link_share_t sh = {.others = LMS__SHARE_MAX_GPUS};
  cr_assert(eq(int, lms__sim_share_link(d, &sh), LMS_ERR_INVALID));
  cr_assert(strstr(d->last_error, "accepted: 0 to 7") != NULL, "%s",
            d->last_error);
  cr_assert(eq(int, lms__sim_share_link(d, NULL), LMS_OK));
  d->ops->destroy(d);
}

/* Chunks larger than the budget together, written, evicted and read back
 * through a link shared with a GPU that copies all the time: the copies
 * take longer and every byte arrives. */
Test(share, bytes_survive_a_shared_link) {
  lms__copy_span_t busy[] = {{0, 1000 * MS}};
  const lms__copy_span_t *spans[LMS__DIR_COUNT] = {busy, busy};
  size_t n[LMS__DIR_COUNT] = {1, 1};
  lms__copy_timeline_t tl;
  cr_assert(eq(int, lms__copy_timeline_build(&tl, 0, 1000 * MS, spans, n),
               LMS_OK));
  lms__link_share_t sh = {.others = 1, .timeline = &tl};
  uint64_t sums[2][6];
  uint64_t copy_ns[2];
  for (int shared = 0; shared < 2; shared++) {
    lms_ctx_t *ctx = lms_test_ctx("4MiB", "0", NULL);
    cr_assert(ctx != NULL);
    if (shared)
      cr_assert(eq(int, lms__sim_share_link(ctx->dev, &sh), LMS_OK));
    lms_stream_t s;
    cr_assert(eq(int, lms_stream_create(ctx, &s), LMS_OK));
    lms_chunk_t *c[6];
    lms_status_t st = LMS_OK;
    for (int i = 0; i < 6; i++) {
      cr_assert(eq(int, lms_alloc(ctx, 1 << 20, &c[i]), LMS_OK));
      uint64_t want = lms_test_write(ctx, c[i], s, 77 + (uint64_t)i, &st);
      cr_assert(eq(int, st, LMS_OK));
      sums[shared][i] = want;
    }
    for (int round = 0; round < 2; round++)
      for (int i = 0; i < 6; i++) {
        uint64_t got = lms_test_read(ctx, c[i], s, &st);
        cr_assert(eq(int, st, LMS_OK));
        cr_assert(eq(u64, got, sums[shared][i]), "chunk %d round %d", i,
                  round);
      }
    lms_stream_sync(ctx, s);
    lms__sim_report_t r;
    lms__sim_report(ctx->dev, &r);
    cr_assert(gt(u64, r.bytes_h2d, 0));
    copy_ns[shared] = r.h2d_busy_ns + r.d2h_busy_ns;
    for (int i = 0; i < 6; i++) lms_free(ctx, c[i]);
    lms_stream_destroy(ctx, s);
    cr_assert(eq(int, lms_ctx_destroy(ctx), LMS_OK));
  }
  for (int i = 0; i < 6; i++) cr_assert(eq(u64, sums[0][i], sums[1][i]));
  cr_assert(gt(u64, copy_ns[1], copy_ns[0] + copy_ns[0] / 2),
            "shared %llu ns, alone %llu ns", (unsigned long long)copy_ns[1],
            (unsigned long long)copy_ns[0]);
  lms__copy_timeline_free(&tl);
}

/* The 3D U-Net at 48^3 on a 400 MiB device over pcie3: copy-bound. */
static lms__workload_t wl;

static void wl_up(void) {
  const lms__wl_builtin_t *b = lms__wl_find_builtin("unet3d");
  cr_assert(b != NULL);
  lms__wl_params_t p = {.batch = 1, .train = 1, .size = 48};
  char err[LMS__ERRBUF] = "";
  lms__wl_init(&wl, NULL);
  cr_assert(eq(int, b->build(&p, &wl, err), LMS_OK), "%s", err);
}

static void wl_down(void) { lms__wl_free(&wl); }

static lms_options_t *opts_for(const char *policy) {
  lms_options_t *o = NULL;
  cr_assert(eq(int, lms_options_create(&o), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "gpu-limit", "400MiB"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "lms", "0"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "link", "pcie3"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "policy", policy), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "sim-bytes", "off"), LMS_OK));
  return o;
}

Test(share, one_gpu_is_the_run_alone, .init = wl_up, .fini = wl_down) {
  lms_options_t *o = opts_for("schedule");
  lms__replay_result_t plain;
  char err[LMS__ERRBUF] = "";
  cr_assert(eq(int, lms__replay_run(&wl, &o->v, 3, 0, &plain, err), LMS_OK),
            "%s", err);
  static lms__shared_result_t one, two;
  cr_assert(eq(int, lms__replay_shared(&wl, &o->v, 3, 0, 1, 0, &one, err),
               LMS_OK), "%s", err);
  cr_assert(eq(u64, one.alone.last.time_ns, plain.last.time_ns));
  cr_assert(eq(dbl, one.iter_ns, (double)plain.last.time_ns));
  cr_assert(eq(dbl, one.bytes_h2d, (double)plain.last.bytes_h2d));
  cr_assert(eq(dbl, one.h2d_gbps, one.alone_h2d_gbps));
  cr_assert(eq(dbl, one.d2h_gbps, one.alone_d2h_gbps));
  /* The alone run of a shared replay (recording its copies through the
   * step hook) is the plain run too. */
  cr_assert(eq(int, lms__replay_shared(&wl, &o->v, 3, 0, 2, 0, &two, err),
               LMS_OK), "%s", err);
  cr_assert(eq(u64, two.alone.last.time_ns, plain.last.time_ns));
  cr_assert(eq(u64, two.alone.last.bytes_h2d, plain.last.bytes_h2d));
  cr_assert(eq(u64, two.alone.last.h2d_busy_ns, plain.last.h2d_busy_ns));
  lms_options_destroy(o);
}

Test(share, two_gpus_slow_each_other_within_the_link, .init = wl_up,
     .fini = wl_down) {
  const char *policies[] = {"ondemand", "schedule"};
  for (int p = 0; p < 2; p++) {
    lms_options_t *o = opts_for(policies[p]);
    static lms__shared_result_t r;
    char err[LMS__ERRBUF] = "";
    cr_assert(eq(int, lms__replay_shared(&wl, &o->v, 3, 0, 2, 0, &r, err),
                 LMS_OK), "%s", err);
    const char *pol = policies[p];
    cr_assert(eq(int, r.samples, r.phases * (r.rounds - 1)));
    cr_assert(gt(dbl, r.alone_h2d_gbps, 11.0), "%s", pol);
    cr_assert(lt(dbl, r.h2d_gbps, 0.95 * r.alone_h2d_gbps), "%s: %.2f vs %.2f",
              pol, r.h2d_gbps, r.alone_h2d_gbps);
    cr_assert(lt(dbl, r.d2h_gbps, 0.95 * r.alone_d2h_gbps), "%s", pol);
    /* Sharing costs time.  A phase may come out a little faster: the
     * policy is not monotone in the link's speed (copies arriving later
     * make the adaptive window look less far ahead, which can move fewer
     * bytes; the schedule policy here: 87.01 ms shared at its best phase,
     * 87.38 alone), but not by more than 1 %. */
    cr_assert(ge(dbl, r.iter_min_ns, 0.99 * (double)r.alone.last.time_ns),
              "%s: %.0f against %llu ns alone", pol, r.iter_min_ns,
              (unsigned long long)r.alone.last.time_ns);
    cr_assert(gt(dbl, r.iter_ns, 1.02 * (double)r.alone.last.time_ns), "%s",
              pol);
    /* Both GPUs together stay within the link, each way. */
    cr_assert(le(dbl, r.link_h2d_gbps, 12.2), "%s: %.2f", pol, r.link_h2d_gbps);
    cr_assert(le(dbl, r.link_d2h_gbps, 12.9), "%s: %.2f", pol, r.link_d2h_gbps);
    /* The workload is the same: the bytes moved hardly change. */
    cr_assert(lt(dbl, r.bytes_h2d, 1.1 * (double)r.alone.last.bytes_h2d));
    lms_options_destroy(o);
  }
}

Test(share, gpus_per_link_out_of_range_is_refused, .init = wl_up,
     .fini = wl_down) {
  lms_options_t *o = opts_for("schedule");
  static lms__shared_result_t r;
  char err[LMS__ERRBUF] = "";
  cr_assert(eq(int, lms__replay_shared(&wl, &o->v, 3, 0, 0, 0, &r, err),
               LMS_ERR_INVALID));
  cr_assert(strstr(err, "1 to 8") != NULL, "%s", err);
  cr_assert(eq(int, lms__replay_shared(&wl, &o->v, 3, 0, 9, 0, &r, err),
               LMS_ERR_INVALID));
  cr_assert(eq(int, lms__replay_shared(&wl, &o->v, 1, 0, 2, 0, &r, err),
               LMS_ERR_INVALID));
  cr_assert(strstr(err, "iterations") != NULL, "%s", err);
  lms_options_destroy(o);
}

/* Note [Calibrating compute to a busy share]: the run after calibrating
 * is as busy as asked, the compute was scaled by the factor reported, a
 * lower share needs a faster device, and a share out of reach or out of
 * range is refused with the workload left as it was. */
Test(share, calibration_reaches_the_busy_share_asked, .init = wl_up,
     .fini = wl_down) {
  lms_options_t *o = opts_for("ondemand");
  uint64_t before = lms__wl_compute_ns(&wl);
  double flops = wl.device_flops;
  char err[LMS__ERRBUF] = "";
  lms__calibration_t c40, c25;
  cr_assert(eq(int, lms__replay_calibrate(&wl, &o->v, 3, 0, 0.40, &c40, err),
               LMS_OK), "%s", err);
  cr_assert(le(dbl, fabs(c40.busy - 0.40), LMS__CALIBRATE_TOLERANCE),
            "busy %.4f", c40.busy);
  cr_assert(gt(dbl, c40.busy_slow, 0.40));
  cr_assert(lt(dbl, c40.busy_fast, 0.40));
  /* The workload now runs at that speed: a plain replay is that busy. */
  lms__replay_result_t r;
  cr_assert(eq(int, lms__replay_run(&wl, &o->v, 3, 0, &r, err), LMS_OK));
  cr_assert(eq(dbl, (double)r.last.compute_ns / (double)r.last.time_ns,
               c40.busy));
  double scaled = (double)lms__wl_compute_ns(&wl) * c40.speedup;
  cr_assert(le(dbl, fabs(scaled - (double)before), 1e-6 * (double)before +
                                                      wl.nsteps * c40.speedup),
            "%.0f vs %llu", scaled, (unsigned long long)before);
  cr_assert(le(dbl, fabs(wl.device_flops - flops * c40.speedup),
               1e-9 * wl.device_flops));
  /* Calibrating again starts from the scaled workload: 25 % needs it
   * faster still. */
  cr_assert(eq(int, lms__replay_calibrate(&wl, &o->v, 3, 0, 0.25, &c25, err),
               LMS_OK), "%s", err);
  cr_assert(le(dbl, fabs(c25.busy - 0.25), LMS__CALIBRATE_TOLERANCE));
  cr_assert(gt(dbl, c25.speedup, 1.0));
  lms_options_destroy(o);
}

Test(share, calibration_out_of_reach_is_refused, .init = wl_up,
     .fini = wl_down) {
  lms_options_t *o = opts_for("schedule");
  /* Room for everything: nothing is copied twice, the GPU never waits
   * long, and a low share cannot be had at any speed. */
  cr_assert(eq(int, lms_options_set(o, "gpu-limit", "8GiB"), LMS_OK));
  uint64_t before = lms__wl_compute_ns(&wl);
  double flops = wl.device_flops;
  char err[LMS__ERRBUF] = "";
  lms__calibration_t c;
  cr_assert(eq(int, lms__replay_calibrate(&wl, &o->v, 3, 0, 0.05, &c, err),
               LMS_ERR_INVALID));
  cr_assert(strstr(err, "cannot be reached") != NULL, "%s", err);
  cr_assert(eq(u64, lms__wl_compute_ns(&wl), before));
  cr_assert(eq(dbl, wl.device_flops, flops));
  cr_assert(eq(int, c.runs, 2));
  const double bad[] = {0.0, 1.0, -0.5, 2.0, NAN};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cr_assert(eq(int, lms__replay_calibrate(&wl, &o->v, 3, 0, bad[i], &c,
                                            err),
                 LMS_ERR_INVALID));
    cr_assert(strstr(err, "accepted") != NULL, "%s", err);
  }
  cr_assert(eq(u64, lms__wl_compute_ns(&wl), before));
  lms_options_destroy(o);
}
