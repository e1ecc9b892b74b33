/* shared.c - one workload on N GPUs behind one host link (shared.h).
 *
 * Every run here is an ordinary replay (replay.c) on a simulated device
 * whose link is shared with the other GPUs' copy timeline; this file only
 * chooses the phases, finds the timeline the GPUs settle on and averages.
 *
 * Invariants: every timeline made here is freed before returning; the
 * alone run is never shared, so with one GPU the result is that run. */
#include "replay/shared.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/ctx.h"
#include "replay/linkboard.h"

/* Note [Finding the shared timeline]
 *
 * The other GPUs on the link run the same workload, so their copies follow
 * this GPU's timeline under sharing (Note [Shared link] in
 * device/linkshare.c), which is what is to be found.  Rounds: round 0 runs
 * alone and keeps its copy timeline; round r runs against N - 1 others
 * that follow the timeline of round r - 1, each at its phase, and keeps
 * its own.  The others of round 1 copy as a lone GPU does, less than they
 * will under sharing, so round 1 is discarded.  The later rounds do not
 * settle on one timeline: a few copies more or less in a burst shift the
 * period, which shifts where the others' bursts fall, and the iteration
 * time wanders by a few per cent from round to round (U-Net, pcie3:
 * 13.4 to 14.4 s with caffe-ibm's policy, 5.18 to 5.35 s with lms's).
 * So rounds 2 to SHARED_ROUNDS are taken as samples of the shared steady
 * state and averaged with the phases; the result gives their spread.
 *
 * Phases: the GPUs are independent jobs, so over an epoch the offset
 * between their iterations takes every value.  SHARED_PHASES offsets are
 * averaged; for N - 1 others they are the first points of the additive
 * sequence frac(1/2 + k a_j), a_j = g^-(j+1) with g the root of
 * x^N = x + 1 (for two GPUs the golden ratio), which spreads points
 * evenly in any number of dimensions and repeats run for run.  With two
 * GPUs the offsets are 0.12, 0.74, 0.35, 0.97, 0.59, 0.21, 0.83, 0.44 of
 * a period.
 *
 * In step (--in-step), as the ranks of one data-parallel job run, held
 * together by their collectives, the GPUs' iterations begin together.  A
 * timeline kept from one run cannot say where the next run's last
 * iteration begins, so there is one run and no rounds: at the end of each
 * iteration the others take this GPU's timeline of that iteration, begun
 * where it began, for the next.  That is what ranks running the same
 * workload do on a board (Note [Ranks on one link] in
 * replay/linkboard.c), and the test cli_link_ranks holds two and four ranks to
 * it.
 *
 * The share is put on the device once the first step of the first
 * (warm-up) iteration has been enqueued, through the replay's step hook,
 * so that the replay loop itself stays one; those first copies, and the
 * setup of persistent chunks before them, run alone.  Only the last
 * iteration is measured, so the figures do not depend on this. */

#define SHARED_PHASES 8
#define SHARED_ROUNDS 5

/* What the step hook does in one replay. */
typedef struct hook_state {
  const lms__link_share_t *share; /* NULL: alone */
  uint64_t calls, total, nsteps;
  lms__copy_timeline_t *tl;        /* receives the last iteration's */
  uint64_t period;                 /* unknown until the replay returns */
  lms__copy_span_t *spans[LMS__DIR_COUNT];
  size_t n[LMS__DIR_COUNT];
  char *err;
} hook_state_t;

static int step_hook(void *arg, lms_ctx_t *ctx, uint32_t step) {
  hook_state_t *h = arg;
  (void)step;
  uint64_t call = h->calls++;
  lms_dev_t *sim = lms__dev_unwrap(ctx->dev);
  if (call == 0 && h->share != NULL &&
      lms__sim_share_link(sim, h->share) != LMS_OK) {
    lms__errf(h->err, "%s", sim->last_error);
    return 1;
  }
  /* After the last step of the next-to-last iteration: record the last. */
  if (call + 1 == h->total - h->nsteps) lms__sim_record_copies(sim, 1);
  if (call + 1 == h->total) {
    for (int d = 0; d < LMS__DIR_COUNT; d++) {
      const lms__copy_span_t *v;
      size_t n;
      lms__sim_copy_spans(sim, d, &v, &n);
      h->spans[d] = malloc((n ? n : 1) * sizeof *v);
      if (h->spans[d] == NULL) {
        lms__errf(h->err, "no host memory for the copy timeline");
        return 1;
      }
      if (n) memcpy(h->spans[d], v, n * sizeof *v);
      h->n[d] = n;
    }
    lms__sim_record_copies(sim, 0);
  }
  return 0;
}

/* One replay, shared as `share` says (NULL: alone); *tl gets the measured
 * iteration's copy timeline. */
static lms_status_t run_once(const lms__workload_t *w, const lms__opts_t *opts,
                             int iterations, int declare,
                             const lms__link_share_t *share,
                             lms__copy_timeline_t *tl,
                             lms__replay_result_t *r, char *err) {
  hook_state_t h;
  memset(&h, 0, sizeof h);
  h.share = share;
  h.nsteps = w->nsteps;
  h.total = (uint64_t)iterations * w->nsteps;
  h.err = err;
  lms_status_t st = lms__replay_run_hooked(w, opts, iterations, declare,
                                           step_hook, &h, r, err);
  if (st == LMS_OK) {
    /* The spans start where the last iteration's work does; the earliest
     * is as good an origin as any, since phases are relative. */
    uint64_t origin = UINT64_MAX;
    for (int d = 0; d < LMS__DIR_COUNT; d++)
      for (size_t i = 0; i < h.n[d]; i++)
        if (h.spans[d][i].start < origin) origin = h.spans[d][i].start;
    if (origin == UINT64_MAX) origin = 0;
    const lms__copy_span_t *spans[LMS__DIR_COUNT] = {h.spans[0], h.spans[1]};
    st = lms__copy_timeline_build(tl, origin, r->last.time_ns, spans, h.n);
    if (st != LMS_OK)
      lms__errf(err, "keeping the copy timeline: %s", lms_status_name(st));
  }
  for (int d = 0; d < LMS__DIR_COUNT; d++) free(h.spans[d]);
  return st;
}

/* The step a_j of other GPU j's phase sequence (Note [Finding the shared
 * timeline]): g^-(j+1), g > 1 the root of x^(others+1) = x + 1. */
static double phase_step(int others, int j) {
  double g = 1.5;
  for (int i = 0; i < 60; i++) {
    double f = pow(g, others + 1) - g - 1;
    double df = (others + 1) * pow(g, others) - 1;
    g -= f / df;
  }
  return pow(g, -(double)(j + 1));
}

static double gbps(double bytes, double ns) { return ns > 0 ? bytes / ns : 0; }

static lms_status_t run_in_step(const lms__workload_t *w,
                                const lms__opts_t *opts, int iterations,
                                int declare, int gpus,
                                lms__shared_result_t *out, char *err);

lms_status_t lms__replay_shared(const lms__workload_t *w,
                                const lms__opts_t *opts, int iterations,
                                int declare, int gpus, int in_step,
                                lms__shared_result_t *out, char *err) {
  memset(out, 0, sizeof *out);
  if (gpus < 1 || gpus > LMS__SHARE_MAX_GPUS) {
    lms__errf(err, "GPUs per link: %d; accepted: 1 to %d", gpus,
              LMS__SHARE_MAX_GPUS);
    return LMS_ERR_INVALID;
  }
  if (iterations < 2 || iterations > LMS__REPLAY_MAX_ITERS) {
    lms__errf(err, "iterations: %d; a shared link needs 2 to %d (one to "
              "settle, the last measured)", iterations, LMS__REPLAY_MAX_ITERS);
    return LMS_ERR_INVALID;
  }
  if (in_step && gpus > 1)
    return run_in_step(w, opts, iterations, declare, gpus, out, err);
  out->gpus = gpus;
  lms__copy_timeline_t alone_tl;
  memset(&alone_tl, 0, sizeof alone_tl);
  lms_status_t st;
  if (gpus == 1) {
    st = lms__replay_run(w, opts, iterations, declare, &out->alone, err);
  } else {
    st = run_once(w, opts, iterations, declare, NULL, &alone_tl, &out->alone,
                  err);
  }
  if (st != LMS_OK) return st;
  const lms__replay_iter_t *a = &out->alone.last;
  out->alone_h2d_gbps = gbps((double)a->bytes_h2d, (double)a->h2d_busy_ns);
  out->alone_d2h_gbps = gbps((double)a->bytes_d2h, (double)a->d2h_busy_ns);
  if (gpus == 1) {
    out->phases = out->samples = 1;
    out->iter_ns = out->iter_min_ns = out->iter_max_ns = (double)a->time_ns;
    out->compute_ns = (double)a->compute_ns;
    out->bytes_h2d = (double)a->bytes_h2d;
    out->bytes_d2h = (double)a->bytes_d2h;
    out->h2d_gbps = out->alone_h2d_gbps;
    out->d2h_gbps = out->alone_d2h_gbps;
    out->link_h2d_gbps = gbps((double)a->bytes_h2d, (double)a->time_ns);
    out->link_d2h_gbps = gbps((double)a->bytes_d2h, (double)a->time_ns);
    return LMS_OK;
  }

  int others = gpus - 1;
  double steps[LMS__SHARE_MAX_GPUS];
  for (int j = 0; j < others; j++) steps[j] = phase_step(others, j);
  double sum_iter = 0, sum_compute = 0, sum_h2d = 0, sum_d2h = 0;
  double busy_h2d = 0, busy_d2h = 0, rate_h2d = 0, rate_d2h = 0;
  out->iter_min_ns = INFINITY;
  out->iter_max_ns = 0;
  out->rounds = SHARED_ROUNDS;
  for (int k = 0; k < SHARED_PHASES && st == LMS_OK; k++) {
    lms__copy_timeline_t prev = alone_tl; /* not owned while it is alone's */
    int prev_owned = 0;
    for (int round = 1; round <= SHARED_ROUNDS; round++) {
      lms__link_share_t sh;
      memset(&sh, 0, sizeof sh);
      sh.others = others;
      sh.timeline = &prev;
      for (int j = 0; j < others; j++) {
        double u = fmod(0.5 + (double)(k + 1) * steps[j], 1.0);
        sh.phase_ns[j] = (uint64_t)(u * (double)prev.period_ns);
      }
      lms__copy_timeline_t next;
      lms__replay_result_t r;
      st = run_once(w, opts, iterations, declare, &sh, &next, &r, err);
      if (prev_owned) lms__copy_timeline_free(&prev);
      prev_owned = 0;
      if (st != LMS_OK) break;
      prev = next;
      prev_owned = 1;
      if (round == 1) continue; /* the others still copied as if alone */
      const lms__replay_iter_t *l = &r.last;
      double t = (double)l->time_ns;
      sum_iter += t;
      if (t < out->iter_min_ns) out->iter_min_ns = t;
      if (t > out->iter_max_ns) out->iter_max_ns = t;
      sum_compute += (double)l->compute_ns;
      sum_h2d += (double)l->bytes_h2d;
      sum_d2h += (double)l->bytes_d2h;
      busy_h2d += (double)l->h2d_busy_ns;
      busy_d2h += (double)l->d2h_busy_ns;
      rate_h2d += gbps((double)l->bytes_h2d, t);
      rate_d2h += gbps((double)l->bytes_d2h, t);
      out->samples++;
    }
    if (prev_owned) lms__copy_timeline_free(&prev);
    if (st == LMS_OK) out->phases = k + 1;
  }
  lms__copy_timeline_free(&alone_tl);
  if (st != LMS_OK) return st;
  double n = (double)out->samples;
  out->iter_ns = sum_iter / n;
  out->compute_ns = sum_compute / n;
  out->bytes_h2d = sum_h2d / n;
  out->bytes_d2h = sum_d2h / n;
  out->h2d_gbps = gbps(sum_h2d, busy_h2d);
  out->d2h_gbps = gbps(sum_d2h, busy_d2h);
  out->link_h2d_gbps = (double)gpus * rate_h2d / n;
  out->link_d2h_gbps = (double)gpus * rate_d2h / n;
  return LMS_OK;
}

/* ---- Ranks on one link, each its own process --------------------------- */

typedef struct board_hook {
  lms__link_board_t *board;  /* NULL: the others are this GPU, in step */
  int others;                /* with no board: how many */
  double wait_s;             /* for the others to join, and each round */
  uint32_t nsteps;
  uint64_t calls;
  uint64_t origin;           /* this period's start on the device's clock */
  lms__board_view_t view;    /* the others' timelines now shared with */
  char *err;
} board_hook_t;

/* The others' latest timelines into v: from the board, or with none, this
 * GPU's own (tl, kept) for each of them, begun where it began. */
static int others_now(board_hook_t *h, lms__copy_timeline_t *tl,
                      lms__board_view_t *v) {
  memset(v, 0, sizeof *v);
  if (h->board == NULL) {
    v->timeline[0] = *tl;
    memset(tl, 0, sizeof *tl);
    v->n = h->others;
    for (int j = 0; j < v->n; j++) v->origin[j] = h->origin;
    return 0;
  }
  lms_status_t st = lms__board_post(h->board, tl, h->origin);
  lms__copy_timeline_free(tl);
  if (st != LMS_OK) {
    lms__errf(h->err, "posting the copy timeline: %s", lms_status_name(st));
    return 1;
  }
  if (lms__board_wait(h->board, h->wait_s, h->err) != LMS_OK) return 1;
  if (lms__board_others(h->board, v) != LMS_OK) {
    lms__errf(h->err, "no host memory for the others' timelines");
    return 1;
  }
  return 0;
}

/* At the end of each iteration: post its timeline, wait for the others'
 * and share the link with them for the next. */
static int board_step(void *arg, lms_ctx_t *ctx, uint32_t step) {
  board_hook_t *h = arg;
  lms_dev_t *sim = lms__dev_unwrap(ctx->dev);
  uint64_t call = h->calls++;
  if (call == 0) {
    h->origin = lms_now_ns(ctx);
    lms__sim_record_copies(sim, 1);
  }
  if (step + 1 != h->nsteps) return 0;
  uint64_t now = lms_now_ns(ctx);
  if (now <= h->origin) return 0;
  const lms__copy_span_t *spans[LMS__DIR_COUNT];
  size_t n[LMS__DIR_COUNT];
  for (int d = 0; d < LMS__DIR_COUNT; d++)
    lms__sim_copy_spans(sim, d, &spans[d], &n[d]);
  lms__copy_timeline_t tl;
  if (lms__copy_timeline_build(&tl, h->origin, now - h->origin, spans, n) !=
      LMS_OK) {
    lms__errf(h->err, "no host memory for the copy timeline");
    return 1;
  }
  lms__board_view_t v;
  if (others_now(h, &tl, &v) != 0) return 1;
  lms__sim_record_copies(sim, 1); /* the next period's, from here */
  h->origin = now;
  /* The new view takes the old one's place; the old one's timelines are
   * freed once the device has been given the new ones (it reads them only
   * when a copy is enqueued, on this thread). */
  lms__board_view_t old = h->view;
  h->view = v;
  lms__link_share_t sh;
  memset(&sh, 0, sizeof sh);
  sh.others = h->view.n;
  for (int j = 0; j < h->view.n; j++) {
    sh.each[j] = &h->view.timeline[h->board != NULL ? j : 0];
    sh.phase_ns[j] = h->view.origin[j];
  }
  int failed = lms__sim_share_link(sim, &sh) != LMS_OK;
  if (failed) lms__errf(h->err, "%s", sim->last_error);
  lms__board_view_free(&old);
  return failed;
}

/* Runs w alone into out->alone, then beside the others as h says, and
 * fills out with this GPU's last iteration (one sample). */
static lms_status_t run_beside(const lms__workload_t *w,
                               const lms__opts_t *opts, int iterations,
                               int declare, int gpus, board_hook_t *h,
                               lms__shared_result_t *out, char *err) {
  lms_status_t st = lms__replay_run(w, opts, iterations, declare, &out->alone,
                                    err);
  if (st != LMS_OK) return st;
  h->nsteps = w->nsteps;
  h->err = err;
  lms__replay_result_t r;
  st = lms__replay_run_hooked(w, opts, iterations, declare, board_step, h, &r,
                              err);
  if (st != LMS_OK) return st;
  const lms__replay_iter_t *l = &r.last, *a = &out->alone.last;
  out->gpus = gpus;
  out->phases = out->samples = 1;
  out->rounds = iterations;
  out->in_step = 1;
  out->board = h->board != NULL;
  out->iter_ns = out->iter_min_ns = out->iter_max_ns = (double)l->time_ns;
  out->compute_ns = (double)l->compute_ns;
  out->bytes_h2d = (double)l->bytes_h2d;
  out->bytes_d2h = (double)l->bytes_d2h;
  out->h2d_gbps = gbps((double)l->bytes_h2d, (double)l->h2d_busy_ns);
  out->d2h_gbps = gbps((double)l->bytes_d2h, (double)l->d2h_busy_ns);
  out->alone_h2d_gbps = gbps((double)a->bytes_h2d, (double)a->h2d_busy_ns);
  out->alone_d2h_gbps = gbps((double)a->bytes_d2h, (double)a->d2h_busy_ns);
  /* In step every GPU moves what this one does; on a board, this rank's
   * share (the others print their own). */
  double k = h->board != NULL ? 1.0 : (double)gpus;
  out->link_h2d_gbps = k * gbps((double)l->bytes_h2d, (double)l->time_ns);
  out->link_d2h_gbps = k * gbps((double)l->bytes_d2h, (double)l->time_ns);
  return LMS_OK;
}

lms_status_t lms__replay_board(const lms__workload_t *w,
                               const lms__opts_t *opts, int iterations,
                               int declare, const char *group, int ranks,
                               int rank, double wait_s,
                               lms__shared_result_t *out, char *err) {
  memset(out, 0, sizeof *out);
  if (iterations < 2 || iterations > LMS__REPLAY_MAX_ITERS) {
    lms__errf(err, "iterations: %d; a shared link needs 2 to %d (one to "
              "settle, the last measured)", iterations, LMS__REPLAY_MAX_ITERS);
    return LMS_ERR_INVALID;
  }
  board_hook_t h;
  memset(&h, 0, sizeof h);
  h.wait_s = wait_s;
  lms_status_t st = lms__board_join(group, ranks, rank, &h.board, err);
  if (st != LMS_OK) return st;
  st = run_beside(w, opts, iterations, declare, ranks, &h, out, err);
  /* Leaving before the view goes: the device that read it is gone. */
  lms__board_leave(h.board);
  lms__board_view_free(&h.view);
  return st;
}

static lms_status_t run_in_step(const lms__workload_t *w,
                                const lms__opts_t *opts, int iterations,
                                int declare, int gpus,
                                lms__shared_result_t *out, char *err) {
  board_hook_t h;
  memset(&h, 0, sizeof h);
  h.others = gpus - 1;
  memset(out, 0, sizeof *out);
  lms_status_t st = run_beside(w, opts, iterations, declare, gpus, &h, out, err);
  lms__board_view_free(&h.view);
  return st;
}
