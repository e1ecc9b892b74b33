/* shared.h - one workload on N GPUs behind one host link: what the
 * sharing costs each GPU, found by replaying the workload on a simulated
 * device whose link is shared with N - 1 others running the same workload
 * (Note [Shared link] in device/linkshare.c, Note [Finding the shared
 * timeline] in shared.c).
 *
 * Invariant: with one GPU nothing is shared and every figure is the
 * workload's alone, bit for bit. */
#ifndef LMS_REPLAY_SHARED_H
#define LMS_REPLAY_SHARED_H

#include "device/device.h"
#include "replay/replay.h"

typedef struct lms__shared_result {
  int gpus;                 /* on the link, this one included */
  int phases;               /* phase offsets averaged over */
  int rounds;               /* rounds per phase, the first discarded */
  int samples;              /* runs averaged: phases x (rounds - 1) */
  int in_step;              /* the GPUs' iterations began together */
  int board;                /* one rank of a link group beside others, each
                               its own process: the link figures are its
                               own (Note [Ranks on one link]) */
  lms__replay_result_t alone;
  double alone_h2d_gbps;    /* bytes over the time copies were in flight */
  double alone_d2h_gbps;
  double iter_ns;           /* shared, the mean of the samples */
  double iter_min_ns, iter_max_ns;  /* their spread */
  double compute_ns;
  double bytes_h2d, bytes_d2h;         /* per GPU and iteration */
  double h2d_gbps, d2h_gbps;           /* per GPU: bytes over copy time */
  double link_h2d_gbps, link_d2h_gbps; /* all GPUs: bytes over time */
} lms__shared_result_t;

/* Runs w alone, then as one of `gpus` (1..LMS__SHARE_MAX_GPUS) GPUs on
 * one host link, for `iterations` (2..LMS__REPLAY_MAX_ITERS) each time;
 * with `in_step` the GPUs' iterations begin together, else at spread
 * phases.  err (LMS__ERRBUF) says what failed. */
lms_status_t lms__replay_shared(const lms__workload_t *w,
                                const lms__opts_t *opts, int iterations,
                                int declare, int gpus, int in_step,
                                lms__shared_result_t *out, char *err);

/* Runs w alone, then as one rank of link group `group` (Note [Ranks on
 * one link] in replay/linkboard.c), on which `ranks` ranks, each its own
 * process, are announced; `rank` names this one; it waits up to wait_s
 * seconds for them each time.  The result is this rank's: its alone run
 * and its last iteration beside the others (one sample).  err
 * (LMS__ERRBUF) says what failed, or which rank did not come. */
lms_status_t lms__replay_board(const lms__workload_t *w,
                               const lms__opts_t *opts, int iterations,
                               int declare, const char *group, int ranks,
                               int rank, double wait_s,
                               lms__shared_result_t *out, char *err);

#endif
