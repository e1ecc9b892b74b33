/* net.h - what the files of `lms bench net`'s GoogLeNet share: the
 * network's state on cuDNN and cuBLAS, a run's result, the error macros,
 * and the calls from one file to the next (setup.c: descriptors; layers.c:
 * the steps' kernels; run.c: one run; bench.c: every run and the table).
 * Built into lms-bench-net alone. */
#ifndef LMS_CLI_BENCH_NET_NET_H
#define LMS_CLI_BENCH_NET_NET_H

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/ctx.h"
#include "cli/bench_net.h"
#include "cli/report.h"
#include "core/log.h"
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "graph/net.h"
#include "lms_kernels.h"

#define BN_WARMUP 2
#define BN_WS_BYTES (256ull << 20)
#define BN_LRN_N 5
#define BN_LRN_ALPHA 1e-4
#define BN_LRN_BETA 0.75
#define BN_LRN_K 1.0


typedef struct bn_buf {
  size_t bytes;
  lms_chunk_t *chunk; /* lms runs */
  void *plain;        /* plain runs */
  void *dptr;         /* while acquired */
} bn_buf_t;

typedef struct bn_layer_rt {
  cudnnFilterDescriptor_t filt;
  cudnnConvolutionDescriptor_t conv;
  cudnnTensorDescriptor_t bias;
  cudnnPoolingDescriptor_t pool;
  cudnnConvolutionFwdAlgo_t fwd;
  cudnnConvolutionBwdDataAlgo_t bwd_data;
  cudnnConvolutionBwdFilterAlgo_t bwd_filt;
} bn_layer_rt_t;

typedef struct bn {
  net_t *n;
  lms__workload_t w;
  int loss_in, labels;
  uint32_t loss_chunk;
  bn_buf_t *bufs;
  lms_ctx_t *ctx; /* NULL in a plain run */
  cudaStream_t s;
  cudnnHandle_t dnn;
  cublasHandle_t blas;
  void *ws;
  cudnnTensorDescriptor_t td[NET_MAX_TENSORS];
  bn_layer_rt_t lr[NET_MAX_LAYERS];
  cudnnActivationDescriptor_t relu;
  cudnnLRNDescriptor_t lrn;
  cudaEvent_t *ev; /* 2 per step: start, end */
  cudaEvent_t ev_iter;
  uint64_t plain_used, limit;
  lms_stats_t st_begin, st_end; /* around the measured iterations */
  /* Note [What bench net computed] (layers.c): the check iteration's
   * figures, read inside the steps that make them. */
  int checking;
  double loss, sum, sumsq;
  char err[LMS__ERRBUF];
} bn_t;

typedef struct bn_result {
  int ok;           /* 1 ran; 0 out of memory; -1 failed */
  char why[LMS__ERRBUF];
  double iter_ms, fwd_ms, busy_ms;
  double gb_in, gb_out;
  int64_t late, misses, prefetches;
  double pred_ms;   /* < 0: none */
  double pool_gib;  /* device memory the CUDA pool held at its peak */
  /* Note [What bench net computed]: the loss (training) and the sum and
   * sum of squares of every weight gradient (training) or of the logits
   * (forward only). */
  int checked;
  double loss, sum, sumsq;
} bn_result_t;

static inline double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

#define DNN(b, call, what)                                                    \
  do {                                                                        \
    cudnnStatus_t s_ = (call);                                                \
    if (s_ != CUDNN_STATUS_SUCCESS) {                                         \
      lms__errf((b)->err, "%s: %s", (what), cudnnGetErrorString(s_));        \
      return -1;                                                              \
    }                                                                         \
  } while (0)

#define CU(b, call, what)                                                     \
  do {                                                                        \
    cudaError_t e_ = (cudaError_t)(call);                                     \
    if (e_ != cudaSuccess) {                                                  \
      lms__errf((b)->err, "%s: %s", (what), cudaGetErrorString(e_));         \
      return -1;                                                              \
    }                                                                         \
  } while (0)

#define BLAS(b, call, what)                                                   \
  do {                                                                        \
    cublasStatus_t s_ = (call);                                               \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                        \
      lms__errf((b)->err, "%s: cuBLAS status %d", (what), (int)s_);          \
      return -1;                                                              \
    }                                                                         \
  } while (0)

typedef struct bn_env {
  cudnnHandle_t dnn;
  cublasHandle_t blas;
  void *ws;
  double h2d_gbps, d2h_gbps; /* measured native rates */
  double both_gbps;          /* both ways at once, summed */
} bn_env_t;

/* The descriptors and algorithms of every layer (setup.c); -1 with b->err. */
int lms__gnet_setup(bn_t *b);
void lms__gnet_teardown(bn_t *b);
/* Step si of the workload: its chunks acquired, its kernels, released
 * (layers.c); -1 with b->err. */
int lms__gnet_step(bn_t *b, uint32_t si);
/* Runs one more iteration, untimed, that reads what the network computed
 * into b->loss, b->sum and b->sumsq (layers.c); -1 with b->err. */
int lms__gnet_check(bn_t *b);
/* One configuration at one batch (run.c). */
void lms__gnet_run_one(const lms_options_t *base, const bn_args_t *a,
                       const bn_env_t *env, int batch, int64_t config,
                       bn_result_t *r);

#endif
