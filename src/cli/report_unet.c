/* report_unet.c - the report's comparison with the published 3D U-Net
 * figures: computed once (lms__report_unet_build), then written into the
 * page and into report.json by the two functions below it.
 *
 * Note [The published U-Net comparison]
 * CONTEXT.md holds TensorFlow LMS's 3D U-Net at 192^3 on x86 with PCIe
 * Gen3 and on the AC922 with NVLink 2.0: the epoch times, the GPU busy
 * shares, and the same runs with two GPUs behind each PCIe switch.  For
 * the built-in U-Net at that size the report sets beside them: the pcie3
 * and nvlink2 rows' ratio and busy shares, on-demand and lms; the same at
 * the compute speed that makes on-demand swapping on pcie3 as busy as the
 * x86 run was (Note [Calibrating compute to a busy share]); and `lms sim
 * --gpus-per-link 2`'s prediction of two GPUs on one pcie3 link, at the
 * model's speed and calibrated.  The calibration scales the workload's
 * compute; the build puts it back, so what the other parts of the report
 * say of the workload is its own. */
#include <stdlib.h>
#include <string.h>

#include "cli/report_parts.h"
#include "replay/shared.h"

/* Published, CONTEXT.md: TensorFlow LMS, 3D U-Net at 192^3, epoch time on
 * one GPU, and GPU busy over 30 batches (x86 with one GPU per PCIe Gen3
 * bus; AC922 with 4 GPUs on 150 GB/s NVLink 2.0). */
#define UNET_X86_EPOCH_S 1467.0
#define UNET_AC922_EPOCH_S 590.0
#define UNET_X86_BUSY 29.1
#define UNET_AC922_BUSY 73.5
/* The same runs with two GPUs sharing each PCIe Gen3 link: the copy
 * throughput each GPU saw, the GPU busy share, and the epoch time of 8
 * GPUs (two per link) against 4 GPUs (one per link). */
#define UNET_SHARE_H2D_ALONE 10.9
#define UNET_SHARE_H2D 7.6
#define UNET_SHARE_D2H_ALONE 11.7
#define UNET_SHARE_D2H 8.2
#define UNET_SHARE_BUSY 22.6
#define UNET_SHARE_EPOCH_ALONE_S 1506.0
#define UNET_SHARE_EPOCH_S 2076.0

/* A ratio and the busy shares of a pair of runs, x86 against AC922. */
typedef struct pair {
  int ok;
  double ratio, busy_x86, busy_ac922;
  uint64_t x86_ns, ac922_ns;
} pair_t;

struct lms__report_unet {
  pair_t at_model[2];          /* on-demand, lms at the model's speed */
  pair_t calibrated;           /* on-demand at the calibrated speed */
  lms__calibration_t cal;
  double model_flops, cal_flops; /* the device's speed: model, calibrated */
  lms__shared_result_t shared[2]; /* at the model's speed; calibrated */
  int shared_ok[2];
  char why[LMS__ERRBUF];
};

static pair_t pair_of(const lms__replay_result_t *x,
                      const lms__replay_result_t *y) {
  pair_t p = {0};
  if (x == NULL || y == NULL) return p;
  p.ok = 1;
  p.ratio = (double)x->last.time_ns / (double)y->last.time_ns;
  p.busy_x86 = pct(x->last.compute_ns, x->last.time_ns);
  p.busy_ac922 = pct(y->last.compute_ns, y->last.time_ns);
  p.x86_ns = x->last.time_ns;
  p.ac922_ns = y->last.time_ns;
  return p;
}

/* The pcie3 and nvlink2 rows of the U-Net at 192^3, or 0. */
static int rows_of(const lms__report_t *r, const lms__report_row_t **p3,
                   const lms__report_row_t **n2) {
  *p3 = *n2 = NULL;
  for (size_t i = 0; i < r->nr; i++) {
    if (r->rows[i].m != NULL || !r->rows[i].ok) continue;
    if (strcmp(r->rows[i].link.name, "pcie3") == 0) *p3 = &r->rows[i];
    if (strcmp(r->rows[i].link.name, "nvlink2") == 0) *n2 = &r->rows[i];
  }
  return strncmp(r->w->name, "unet3d-192-b1-train", 19) == 0 && *p3 && *n2;
}

lms__report_unet_t *lms__report_unet_build(const lms__report_t *r) {
  const lms__report_row_t *p3, *n2;
  if (!rows_of(r, &p3, &n2)) return NULL;
  lms__report_unet_t *u = calloc(1, sizeof *u);
  lms__workload_t *w = r->w;
  uint64_t *base = malloc((size_t)w->nsteps * sizeof *base);
  if (u == NULL || base == NULL) {
    free(u);
    free(base);
    return NULL;
  }
  for (uint32_t s = 0; s < w->nsteps; s++) base[s] = w->steps[s].compute_ns;
  u->model_flops = w->device_flops;
  u->at_model[0] = pair_of(p3->od_ok ? &p3->od : NULL,
                           n2->od_ok ? &n2->od : NULL);
  u->at_model[1] = pair_of(&p3->lms, &n2->lms);
  /* The shared-link model compares fixed iterations, as lms sim
   * --gpus-per-link does: three unless --iterations says otherwise. */
  int iters = r->iters == LMS__REPLAY_SETTLE ? LMS__REPLAY_SETTLE_MIN : r->iters;
  lms__opts_t o;
  lms__report_run_opts(&o, r->opts, &p3->link, r->capacity,
                       LMS_POLICY_ONDEMAND);
  u->shared_ok[0] =
      lms__replay_shared(w, &o, iters, 0, 2, 0, &u->shared[0], u->why) == LMS_OK;
  lms__replay_result_t *x86 = malloc(2 * sizeof *x86);
  int cal_ok =
      x86 != NULL &&
      lms__replay_calibrate(w, &o, iters, 0, UNET_X86_BUSY / 100.0, &u->cal,
                            u->why) == LMS_OK &&
      lms__report_run(w, r->opts, &p3->link, r->capacity, LMS_POLICY_ONDEMAND,
                      iters, NULL, &x86[0], u->why) == LMS_OK &&
      lms__report_run(w, r->opts, &n2->link, r->capacity, LMS_POLICY_ONDEMAND,
                      iters, NULL, &x86[1], u->why) == LMS_OK;
  if (x86 == NULL) snprintf(u->why, sizeof u->why, "no host memory");
  if (cal_ok) {
    u->calibrated = pair_of(&x86[0], &x86[1]);
    u->cal_flops = w->device_flops;
    u->shared_ok[1] = lms__replay_shared(w, &o, iters, 0, 2, 0, &u->shared[1],
                                         u->why) == LMS_OK;
  }
  free(x86);
  lms__wl_set_speed(w, base, u->model_flops, 1.0);
  free(base);
  return u;
}

void lms__report_unet_free(lms__report_unet_t *u) { free(u); }

/* Copy throughput both ways together: all bytes over the time copies were
 * in flight, one direction's after the other's. */
static double both_ways(double h2d_bytes, double h2d_gbps, double d2h_bytes,
                        double d2h_gbps) {
  double t = (h2d_gbps > 0 ? h2d_bytes / h2d_gbps : 0) +
             (d2h_gbps > 0 ? d2h_bytes / d2h_gbps : 0);
  return t > 0 ? (h2d_bytes + d2h_bytes) / t : 0;
}

static double change(double now, double was) {
  return was > 0 ? 100.0 * (now / was - 1.0) : 0.0;
}

/* A shared-link run's figures, alone against shared. */
typedef struct share {
  double h2d, d2h, copy, time, busy_alone, busy;
} share_t;

static share_t share_of(const lms__shared_result_t *r) {
  const lms__replay_iter_t *a = &r->alone.last;
  double both_alone = both_ways((double)a->bytes_h2d, r->alone_h2d_gbps,
                                (double)a->bytes_d2h, r->alone_d2h_gbps);
  double both = both_ways(r->bytes_h2d, r->h2d_gbps, r->bytes_d2h,
                          r->d2h_gbps);
  return (share_t){
      .h2d = change(r->h2d_gbps, r->alone_h2d_gbps),
      .d2h = change(r->d2h_gbps, r->alone_d2h_gbps),
      .copy = change(both, both_alone),
      .time = change(r->iter_ns, (double)a->time_ns),
      .busy_alone = pct(a->compute_ns, a->time_ns),
      .busy = r->iter_ns > 0 ? 100.0 * r->compute_ns / r->iter_ns : 0};
}

static share_t share_published(void) {
  return (share_t){
      .h2d = change(UNET_SHARE_H2D, UNET_SHARE_H2D_ALONE),
      .d2h = change(UNET_SHARE_D2H, UNET_SHARE_D2H_ALONE),
      .copy = change(both_ways(1, UNET_SHARE_H2D, 1, UNET_SHARE_D2H),
                     both_ways(1, UNET_SHARE_H2D_ALONE, 1,
                               UNET_SHARE_D2H_ALONE)),
      .time = change(UNET_SHARE_EPOCH_S, UNET_SHARE_EPOCH_ALONE_S),
      .busy_alone = UNET_X86_BUSY,
      .busy = UNET_SHARE_BUSY};
}

/* ---- The page ---------------------------------------------------------- */

static const char *const kHead[] = {
    "", "x86 PCIe Gen3", "AC922 NVLink 2.0", "AC922 / x86 time ratio",
    "ratio error", "GPU busy x86", "GPU busy AC922", "busy error (points)"};

/* The head of a U-Net comparison table and its published row. */
static void published_rows(lms__doc_t *d) {
  lms__doc_table_head(d, 8, kHead);
  lms__doc_table_row(d, "published (TFLMS)\t%.0f s per epoch\t%.0f s per epoch\t"
               "%.2fx\t-\t%.1f%%\t%.1f%%\t-",
            UNET_X86_EPOCH_S, UNET_AC922_EPOCH_S,
            UNET_X86_EPOCH_S / UNET_AC922_EPOCH_S, UNET_X86_BUSY,
            UNET_AC922_BUSY);
}

static void pair_row(lms__doc_t *d, const char *label, const pair_t *p,
                     const char *fitted) {
  double pub = UNET_X86_EPOCH_S / UNET_AC922_EPOCH_S;
  lms__doc_table_row(d, "%s\t%.1f ms per iteration\t%.1f ms per iteration\t"
                "%.2fx\t%+.0f%%\t%.1f%%%s\t%.1f%%\t%+.1f / %+.1f",
            label, ms(p->x86_ns), ms(p->ac922_ns), p->ratio,
            100.0 * (p->ratio / pub - 1.0), p->busy_x86, fitted,
            p->busy_ac922, p->busy_x86 - UNET_X86_BUSY,
            p->busy_ac922 - UNET_AC922_BUSY);
}

static void share_row(lms__doc_t *d, const char *label, const share_t *s,
                      double alone_h2d, double h2d, double alone_d2h,
                      double d2h, double before, double after,
                      const char *unit) {
  lms__doc_table_row(d, "%s\t%.1f -> %.1f (%+.0f%%)\t%.1f -> %.1f (%+.0f%%)\t"
               "%+.1f%%\t%+.1f%% (%.0f -> %.0f %s)\t%.1f%% -> %.1f%%",
            label, alone_h2d, h2d, s->h2d, alone_d2h, d2h, s->d2h, s->copy,
            s->time, before, after, unit, s->busy_alone, s->busy);
}

static void shared_predicted(lms__doc_t *d, const char *label,
                             const lms__shared_result_t *r) {
  share_t s = share_of(r);
  share_row(d, label, &s, r->alone_h2d_gbps, r->h2d_gbps, r->alone_d2h_gbps,
            r->d2h_gbps, ms(r->alone.last.time_ns), r->iter_ns / 1e6, "ms");
}

void lms__report_unet_page(lms__doc_t *d, const lms__report_t *r) {
  const lms__report_unet_t *u = r->unet;
  if (u == NULL) return;
  double pub = UNET_X86_EPOCH_S / UNET_AC922_EPOCH_S;
  lms__doc_heading(d, 2, "Against the published 3D U-Net figures");
  lms__doc_para(d, "TensorFlow LMS, 3D U-Net at 192^3, one model per GPU: an "
           "epoch took %.0f s on x86 with PCIe Gen3 and %.0f s on the "
           "POWER9 AC922 with NVLink 2.0 (%.2fx); the GPU was busy %.1f %% "
           "of the time on x86 and %.1f %% on the AC922. Predicted: the "
           "built-in U-Net on `pcie3` and `nvlink2` (the AC922's 4-GPU "
           "link). The simulator predicts an iteration, not an epoch; the "
           "ratio and the busy share do not depend on the epoch's length.",
       UNET_X86_EPOCH_S, UNET_AC922_EPOCH_S, pub, UNET_X86_BUSY,
       UNET_AC922_BUSY);
  published_rows(d);
  if (u->at_model[0].ok)
    pair_row(d, "predicted, on-demand swapping (every tensor moved, no "
                "prefetch)", &u->at_model[0], "");
  pair_row(d, "predicted, lms (prefetch by schedule)", &u->at_model[1], "");
  lms__doc_table_end(d);
  lms__doc_para(d, "TFLMS swapped every activation out in the forward pass and "
           "brought it back ahead of its use in the backward pass; the "
           "on-demand row moves every tensor with no prefetch, the lms "
           "row prefetches by the learned schedule and keeps what fits. "
           "The published x86 and AC922 runs also differ in CPU and "
           "software, which no link model holds.");

  if (u->calibrated.ok) {
    lms__doc_heading(d, 3, "Calibrated to the x86 profile");
    lms__doc_para(d, "The rows above time compute by the workload's model of the "
            "device (%.2f TFLOP/s). One published figure fixes it instead: "
            "on-demand swapping on pcie3 is busy %.1f %% of its time, as "
            "the x86 run was, when compute runs %.3gx as fast (%.2f TFLOP/s; "
            "%d runs, Note [Calibrating compute to a busy share]). "
            "Everything else below is predicted at that speed; the fitted "
            "figure is marked. The V100's fp32 peak is 15.7 TFLOP/s, which "
            "cuDNN's 3-D convolutions do not reach: the factor stands as "
            "much for TFLMS moving more bytes per FLOP than the model's "
            "tensors do, which a busy share cannot tell apart from speed.",
         u->cal_flops / u->cal.speedup / 1e12, UNET_X86_BUSY,
         u->cal.speedup, u->cal_flops / 1e12, u->cal.runs);
    published_rows(d);
    pair_row(d, "predicted, on-demand swapping, calibrated", &u->calibrated,
             " (fitted)");
    lms__doc_table_end(d);
  } else {
    lms__doc_para(d, "The calibration to the x86 profile failed: %s.", u->why);
  }

  lms__doc_heading(d, 3, "Two GPUs sharing one PCIe Gen3 link");
  share_t p = share_published();
  lms__doc_para(d, "Published: with two GPUs behind each PCIe switch the copy "
          "throughput each GPU saw fell about 30 %% each way and an epoch "
          "took %.0f %% longer (8 GPUs, two per link, %.0f s; 4 GPUs, one "
          "per link, %.0f s). Predicted: `lms sim --gpus-per-link 2` on "
          "pcie3 with on-demand swapping (Note [Shared link]). Copy "
          "throughput is bytes over the time a GPU's copies were in flight; "
          "\"both ways\" counts all its copies, the published one assuming "
          "equal bytes each way, as TFLMS moved each tensor out and back.",
       p.time, UNET_SHARE_EPOCH_S, UNET_SHARE_EPOCH_ALONE_S);
  static const char *const shead[] = {
      "", "host->GPU GB/s", "GPU->host GB/s", "copy throughput, both ways",
      "time per epoch / iteration", "GPU busy alone -> shared"};
  lms__doc_table_head(d, 6, shead);
  share_row(d, "published (TFLMS)", &p, UNET_SHARE_H2D_ALONE, UNET_SHARE_H2D,
            UNET_SHARE_D2H_ALONE, UNET_SHARE_D2H, UNET_SHARE_EPOCH_ALONE_S,
            UNET_SHARE_EPOCH_S, "s");
  if (u->shared_ok[0])
    shared_predicted(d, "predicted, on-demand, the model's speed",
                     &u->shared[0]);
  if (u->shared_ok[1])
    shared_predicted(d, "predicted, on-demand, calibrated", &u->shared[1]);
  lms__doc_table_end(d);
  if (!u->shared_ok[0] || (u->calibrated.ok && !u->shared_ok[1]))
    lms__doc_para(d, "A shared-link run failed: %s.", u->why);
  lms__doc_para(d, "On-demand swapping writes back every tensor it gives up that was "
          "written (gradients included) and reads back only what a later "
          "layer needs, so it moves about twice the bytes out that it moves "
          "in: its device-to-host copies meet the other GPU's more often "
          "than its host-to-device copies do, and the loss splits unevenly "
          "between the directions where TFLMS's was even. Both ways "
          "together, and in time and busy share, the prediction is what to "
          "compare.");
}

/* ---- report.json -------------------------------------------------------- */

static void pair_json(FILE *js, const char *key, const pair_t *p) {
  double pub = UNET_X86_EPOCH_S / UNET_AC922_EPOCH_S;
  fprintf(js, ",\n \"%s\": {\"ratio\": %.4f, \"ratio_error\": "
              "%.4f, \"busy_x86\": %.2f, \"busy_ac922\": %.2f}",
          key, p->ratio, p->ratio / pub - 1.0, p->busy_x86, p->busy_ac922);
}

static void share_json(FILE *js, const char *key, const share_t *s) {
  fprintf(js, ",\n \"%s\": {\"h2d_change\": %.4f, \"d2h_change\": %.4f, "
              "\"copy_change\": %.4f, \"time_change\": %.4f, "
              "\"busy_alone\": %.2f, \"busy_shared\": %.2f}",
          key, s->h2d / 100.0, s->d2h / 100.0, s->copy / 100.0,
          s->time / 100.0, s->busy_alone, s->busy);
}

void lms__report_unet_json(FILE *js, const lms__report_t *r) {
  const lms__report_unet_t *u = r->unet;
  if (u == NULL) return;
  fprintf(js, ",\n \"unet_published\": {\"ratio\": %.4f, \"busy_x86\": "
              "%.1f, \"busy_ac922\": %.1f}",
          UNET_X86_EPOCH_S / UNET_AC922_EPOCH_S, UNET_X86_BUSY,
          UNET_AC922_BUSY);
  if (u->at_model[0].ok) pair_json(js, "unet_ondemand", &u->at_model[0]);
  pair_json(js, "unet_lms", &u->at_model[1]);
  if (u->calibrated.ok) {
    const pair_t *p = &u->calibrated;
    fprintf(js, ",\n \"unet_calibrated\": {\"speedup\": %.6g, "
                "\"device_flops\": %.6g, \"runs\": %d, \"ratio\": %.4f, "
                "\"ratio_error\": %.4f, \"busy_x86\": %.2f, "
                "\"busy_ac922\": %.2f}",
            u->cal.speedup, u->cal_flops, u->cal.runs, p->ratio,
            p->ratio / (UNET_X86_EPOCH_S / UNET_AC922_EPOCH_S) - 1.0,
            p->busy_x86, p->busy_ac922);
  }
  share_t p = share_published();
  share_json(js, "unet_shared_published", &p);
  for (int k = 0; k < 2; k++) {
    if (!u->shared_ok[k]) continue;
    share_t s = share_of(&u->shared[k]);
    share_json(js, k == 0 ? "unet_shared_ondemand" : "unet_shared_calibrated",
               &s);
  }
}
