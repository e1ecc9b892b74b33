/* bench_net.c - `lms bench net`: the source scenario on a real GPU.
 *
 * Runs GoogLeNet (the network of workloads.c, Note [GoogLeNet blob memory
 * and the published figures]) at 1200x1200 on cuDNN (convolutions,
 * pooling, LRN, ReLU, softmax) and cuBLAS (the classifier), the way caffe
 * does: every blob is allocated once and kept, the forward pass and, in
 * training, a softmax loss and the backward pass, with no solver update
 * (what `caffe time` runs).  Each configuration is run at each batch:
 *   plain       every blob in cudaMalloc'ed memory, counted against the
 *               GPU limit: caffe without LMS;
 *   lms:KB      every blob an lms chunk through the handle-mode API
 *               (lms_acquire / lms_release on the compute stream), with
 *               -lms KB (lms_frac 0) and the options given.
 * It reports, per run: the time of an iteration and of its forward pass,
 * both per image, GPU busy % (the compute stream's kernel time over the
 * iteration's wall time), bytes each way, prefetches that were late and
 * demand misses; then the per-image ratio of the scenario (batch 10 with
 * lms against batch 1 plain, 0.58 for caffe-ibm on the P100).
 *
 * Note [One network, measured and simulated]
 * The acquires of each step are the references of the step in the
 * lowered workload (lms__net_googlenet), in its order and access, and the
 * kernels are the layer's.  So the trace this command writes is the
 * built-in workload with each step's time replaced by the time its
 * kernels took on this GPU (events around them, after the stream's waits
 * for copies), and the prediction printed beside each lms run is that
 * trace replayed by the simulator over the link this run had: the rates
 * measured here, or the emulated link's (--link) when copies are slowed.
 *
 * Note [cuDNN pooling and caffe's rounding]
 * Caffe rounds pooled sizes up; cuDNN rounds down.  A pooling whose
 * caffe size is one more than cuDNN's at the layer's padding is run with
 * one more padding on each side, which gives caffe's size: the windows
 * move by one pixel, the cost does not change.  The average pooling's
 * backward reads neither x nor y; cuDNN still takes pointers, so the
 * gradients (same shapes, acquired) are passed in their place.
 *
 * Invariants: a kernel touches only chunks its step acquired; device
 * memory outside lms is the cuDNN workspace alone, and the lms budget is
 * the GPU limit less that workspace; a run that does not fit says so and
 * the next one runs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/ctx.h"
#include "cli/cli.h"
#include "cli/report.h"
#include "core/log.h"

#define BN_MAX_CONFIGS 8
#define BN_MAX_BATCHES 8

typedef struct bn_args {
  int batches[BN_MAX_BATCHES], nbatches;
  int64_t configs[BN_MAX_CONFIGS]; /* -2: plain; else -lms KB */
  int nconfigs;
  int size, train, iterations;
  int discard; /* lms runs discard dead blobs (Note [Dead after the last use]) */
  char trace_dir[LMS__PATH_MAX];
} bn_args_t;

#if defined(LMS_HAVE_CUDA) && defined(LMS_HAVE_CUDNN)
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
} bn_result_t;

static double now_ms(void) {
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

/* ---- Descriptors ------------------------------------------------------ */

static int set_tensor(bn_t *b, cudnnTensorDescriptor_t d, int n, int c, int h,
                      int w) {
  DNN(b, cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n,
                                    c, h, w),
      "cudnnSetTensor4dDescriptor");
  return 0;
}

static int ws_fit(size_t need) { return need <= BN_WS_BYTES; }

static int setup_conv(bn_t *b, int li) {
  net_t *n = b->n;
  net_layer_t *l = &n->l[li];
  bn_layer_rt_t *r = &b->lr[li];
  net_tensor_t *x = &n->t[l->in[0]], *y = &n->t[l->out[0]];
  DNN(b, cudnnCreateFilterDescriptor(&r->filt), "cudnnCreateFilterDescriptor");
  DNN(b, cudnnSetFilter4dDescriptor(r->filt, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                    y->c, x->c, l->k, l->k),
      "cudnnSetFilter4dDescriptor");
  DNN(b, cudnnCreateConvolutionDescriptor(&r->conv),
      "cudnnCreateConvolutionDescriptor");
  DNN(b, cudnnSetConvolution2dDescriptor(r->conv, l->pad, l->pad, l->stride,
                                         l->stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                         CUDNN_DATA_FLOAT),
      "cudnnSetConvolution2dDescriptor");
  DNN(b, cudnnCreateTensorDescriptor(&r->bias), "cudnnCreateTensorDescriptor");
  if (set_tensor(b, r->bias, 1, y->c, 1, 1)) return -1;
  int on, oc, oh, ow;
  DNN(b, cudnnGetConvolution2dForwardOutputDim(r->conv, b->td[l->in[0]],
                                               r->filt, &on, &oc, &oh, &ow),
      "cudnnGetConvolution2dForwardOutputDim");
  if (oc != y->c || oh != y->h || ow != y->w) {
    lms__errf(b->err, "%s: cuDNN gives %dx%dx%d, the network %dx%dx%d",
              l->name, oc, oh, ow, y->c, y->h, y->w);
    return -1;
  }
  /* For each pass, the fastest algorithm by cuDNN's heuristics that fits
   * the workspace (the perf lists come sorted, fastest first). */
#define PICK(perf, got, out, what)                                            \
  do {                                                                        \
    int found_ = 0;                                                           \
    for (int i_ = 0; i_ < (got) && !found_; i_++)                             \
      if ((perf)[i_].status == CUDNN_STATUS_SUCCESS &&                        \
          ws_fit((perf)[i_].memory)) {                                        \
        (out) = (perf)[i_].algo;                                              \
        found_ = 1;                                                           \
      }                                                                       \
    if (!found_) {                                                            \
      lms__errf(b->err, "%s: no %s algorithm fits %llu MiB of workspace",     \
                l->name, (what), (unsigned long long)(BN_WS_BYTES >> 20));    \
      return -1;                                                              \
    }                                                                         \
  } while (0)
  cudnnConvolutionFwdAlgoPerf_t fp[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int got = 0;
  DNN(b, cudnnGetConvolutionForwardAlgorithm_v7(
             b->dnn, b->td[l->in[0]], r->filt, r->conv, b->td[l->out[0]],
             CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, fp),
      "cudnnGetConvolutionForwardAlgorithm_v7");
  PICK(fp, got, r->fwd, "forward");
  if (b->loss_in < 0) return 0; /* forward only: no backward algorithms */
  cudnnConvolutionBwdDataAlgoPerf_t dp[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  cudnnConvolutionBwdFilterAlgoPerf_t wp[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  DNN(b, cudnnGetConvolutionBackwardDataAlgorithm_v7(
             b->dnn, r->filt, b->td[l->out[0]], r->conv, b->td[l->in[0]],
             CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, dp),
      "cudnnGetConvolutionBackwardDataAlgorithm_v7");
  PICK(dp, got, r->bwd_data, "backward-data");
  DNN(b, cudnnGetConvolutionBackwardFilterAlgorithm_v7(
             b->dnn, b->td[l->in[0]], b->td[l->out[0]], r->conv, r->filt,
             CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, wp),
      "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
  PICK(wp, got, r->bwd_filt, "backward-filter");
#undef PICK
  return 0;
}

/* Note [cuDNN pooling and caffe's rounding]. */
static int setup_pool(bn_t *b, int li) {
  net_t *n = b->n;
  net_layer_t *l = &n->l[li];
  bn_layer_rt_t *r = &b->lr[li];
  net_tensor_t *x = &n->t[l->in[0]], *y = &n->t[l->out[0]];
  DNN(b, cudnnCreatePoolingDescriptor(&r->pool), "cudnnCreatePoolingDescriptor");
  cudnnPoolingMode_t mode = l->kind == L_MAXPOOL
                                ? CUDNN_POOLING_MAX
                                : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
  for (int pad = l->pad; pad <= l->pad + 1; pad++) {
    if (pad >= l->k) break;
    if ((x->h + 2 * pad - l->k) / l->stride + 1 != y->h) continue;
    DNN(b, cudnnSetPooling2dDescriptor(r->pool, mode, CUDNN_NOT_PROPAGATE_NAN,
                                       l->k, l->k, pad, pad, l->stride,
                                       l->stride),
        "cudnnSetPooling2dDescriptor");
    int on, oc, oh, ow;
    DNN(b, cudnnGetPooling2dForwardOutputDim(r->pool, b->td[l->in[0]], &on,
                                             &oc, &oh, &ow),
        "cudnnGetPooling2dForwardOutputDim");
    if (oh == y->h && ow == y->w) return 0;
  }
  lms__errf(b->err, "%s: no padding gives caffe's %dx%d from %dx%d", l->name,
            y->h, y->w, x->h, x->w);
  return -1;
}

static int setup_net(bn_t *b) {
  net_t *n = b->n;
  for (int i = 0; i < n->nt; i++) {
    DNN(b, cudnnCreateTensorDescriptor(&b->td[i]), "cudnnCreateTensorDescriptor");
    net_tensor_t *t = &n->t[i];
    if (set_tensor(b, b->td[i], n->batch, t->c, t->h, t->w)) return -1;
  }
  memset(b->lr, 0, sizeof b->lr);
  for (int i = 0; i < n->nl; i++) {
    net_layer_t *l = &n->l[i];
    switch (l->kind) {
      case L_CONV:
        if (setup_conv(b, i)) return -1;
        break;
      case L_MAXPOOL:
      case L_AVEPOOL:
        if (setup_pool(b, i)) return -1;
        break;
      case L_FC:
        DNN(b, cudnnCreateTensorDescriptor(&b->lr[i].bias),
            "cudnnCreateTensorDescriptor");
        if (set_tensor(b, b->lr[i].bias, 1, n->t[l->out[0]].c, 1, 1)) return -1;
        break;
      case L_RELU: case L_LRN: case L_CONCAT: case L_SPLIT: case L_DROPOUT:
      case L_SOFTMAX:
        break;
      default:
        lms__errf(b->err, "%s: this layer kind is not run by bench net",
                  l->name);
        return -1;
    }
  }
  DNN(b, cudnnCreateActivationDescriptor(&b->relu),
      "cudnnCreateActivationDescriptor");
  DNN(b, cudnnSetActivationDescriptor(b->relu, CUDNN_ACTIVATION_RELU,
                                      CUDNN_NOT_PROPAGATE_NAN, 0.0),
      "cudnnSetActivationDescriptor");
  DNN(b, cudnnCreateLRNDescriptor(&b->lrn), "cudnnCreateLRNDescriptor");
  DNN(b, cudnnSetLRNDescriptor(b->lrn, BN_LRN_N, BN_LRN_ALPHA, BN_LRN_BETA,
                               BN_LRN_K),
      "cudnnSetLRNDescriptor");
  return 0;
}

static void teardown_net(bn_t *b) {
  net_t *n = b->n;
  for (int i = 0; i < n->nt; i++)
    if (b->td[i]) cudnnDestroyTensorDescriptor(b->td[i]);
  for (int i = 0; i < n->nl; i++) {
    bn_layer_rt_t *r = &b->lr[i];
    if (r->filt) cudnnDestroyFilterDescriptor(r->filt);
    if (r->conv) cudnnDestroyConvolutionDescriptor(r->conv);
    if (r->bias) cudnnDestroyTensorDescriptor(r->bias);
    if (r->pool) cudnnDestroyPoolingDescriptor(r->pool);
  }
  if (b->relu) cudnnDestroyActivationDescriptor(b->relu);
  if (b->lrn) cudnnDestroyLRNDescriptor(b->lrn);
}

/* ---- Chunks ----------------------------------------------------------- */

static float *data_of(bn_t *b, int t) {
  return (float *)b->bufs[b->n->t[t].data].dptr;
}
static float *diff_of(bn_t *b, int t) {
  uint32_t c = b->n->t[t].diff;
  return c == NO_CHUNK ? NULL : (float *)b->bufs[c].dptr;
}

static unsigned acquire_access(unsigned wl_access) {
  /* In a workload a write alone overwrites (docs/trace-format.md). */
  if (wl_access == LMS_ACCESS_WRITE)
    return LMS_ACCESS_WRITE | LMS_ACCESS_OVERWRITE;
  return wl_access;
}

static int acquire_step(bn_t *b, uint32_t si) {
  const lms__wl_step_t *st = &b->w.steps[si];
  if (b->ctx != NULL && lms_step_begin(b->ctx) != LMS_OK) {
    lms__errf(b->err, "lms_step_begin: %s", lms_ctx_last_error(b->ctx));
    return -1;
  }
  for (uint32_t k = 0; k < st->nrefs; k++) {
    const lms__wl_ref_t *r = &b->w.refs[st->first_ref + k];
    bn_buf_t *buf = &b->bufs[r->chunk];
    if (b->ctx == NULL) {
      buf->dptr = buf->plain;
      continue;
    }
    lms_status_t s = lms_acquire(b->ctx, buf->chunk, (lms_stream_t)b->s,
                                 acquire_access(r->access), &buf->dptr);
    if (s != LMS_OK) {
      lms__errf(b->err, "step '%s': %s", st->name, lms_ctx_last_error(b->ctx));
      while (k-- > 0)
        lms_release(b->ctx, b->bufs[b->w.refs[st->first_ref + k].chunk].chunk,
                    (lms_stream_t)b->s);
      return s == LMS_ERR_DEVICE_OOM ? -2 : -1;
    }
  }
  return 0;
}

static int release_step(bn_t *b, uint32_t si) {
  const lms__wl_step_t *st = &b->w.steps[si];
  for (uint32_t k = 0; k < st->nrefs; k++) {
    const lms__wl_ref_t *ref = &b->w.refs[st->first_ref + k];
    bn_buf_t *buf = &b->bufs[ref->chunk];
    if (b->ctx != NULL &&
        lms_release(b->ctx, buf->chunk, (lms_stream_t)b->s) != LMS_OK) {
      lms__errf(b->err, "lms_release: %s", lms_ctx_last_error(b->ctx));
      return -1;
    }
    if (b->ctx != NULL && ref->dead_after &&
        lms_discard(b->ctx, buf->chunk) != LMS_OK) {
      lms__errf(b->err, "lms_discard: %s", lms_ctx_last_error(b->ctx));
      return -1;
    }
    buf->dptr = NULL;
  }
  return 0;
}

/* ---- Layers ----------------------------------------------------------- */

static const float kOne = 1.0f, kZero = 0.0f;

static int forward(bn_t *b, int li) {
  net_t *n = b->n;
  net_layer_t *l = &n->l[li];
  bn_layer_rt_t *r = &b->lr[li];
  int x = l->in[0], y = l->out[0];
  switch (l->kind) {
    case L_CONV: {
      float *w = (float *)b->bufs[l->w].dptr;
      size_t nw = l->params - (size_t)n->t[y].c;
      DNN(b, cudnnConvolutionForward(b->dnn, &kOne, b->td[x], data_of(b, x),
                                     r->filt, w, r->conv, r->fwd, b->ws,
                                     BN_WS_BYTES, &kZero, b->td[y],
                                     data_of(b, y)),
          l->name);
      DNN(b, cudnnAddTensor(b->dnn, &kOne, r->bias, w + nw, &kOne, b->td[y],
                            data_of(b, y)),
          l->name);
      return 0;
    }
    case L_RELU:
      DNN(b, cudnnActivationForward(b->dnn, b->relu, &kOne, b->td[x],
                                    data_of(b, x), &kZero, b->td[y],
                                    data_of(b, y)),
          l->name);
      return 0;
    case L_MAXPOOL:
    case L_AVEPOOL:
      DNN(b, cudnnPoolingForward(b->dnn, r->pool, &kOne, b->td[x], data_of(b, x),
                                 &kZero, b->td[y], data_of(b, y)),
          l->name);
      return 0;
    case L_LRN:
      DNN(b, cudnnLRNCrossChannelForward(b->dnn, b->lrn,
                                         CUDNN_LRN_CROSS_CHANNEL_DIM1, &kOne,
                                         b->td[x], data_of(b, x), &kZero,
                                         b->td[y], data_of(b, y)),
          l->name);
      return 0;
    case L_CONCAT: {
      net_tensor_t *ty = &n->t[y];
      size_t plane = (size_t)ty->h * (size_t)ty->w * sizeof(float), off = 0;
      for (int i = 0; i < l->nin; i++) {
        size_t part = (size_t)n->t[l->in[i]].c * plane;
        CU(b, cudaMemcpy2DAsync((char *)data_of(b, y) + off, (size_t)ty->c * plane,
                                data_of(b, l->in[i]), part, part,
                                (size_t)n->batch, cudaMemcpyDeviceToDevice, b->s),
           l->name);
        off += part;
      }
      return 0;
    }
    case L_FC: {
      net_tensor_t *tx = &n->t[x];
      int nin = tx->c * tx->h * tx->w, nout = n->t[y].c;
      float *w = (float *)b->bufs[l->w].dptr;
      BLAS(b, cublasSgemm(b->blas, CUBLAS_OP_T, CUBLAS_OP_N, nout, n->batch, nin,
                          &kOne, w, nin, data_of(b, x), nin, &kZero,
                          data_of(b, y), nout),
           l->name);
      DNN(b, cudnnAddTensor(b->dnn, &kOne, r->bias, w + (size_t)nin * nout,
                            &kOne, b->td[y], data_of(b, y)),
          l->name);
      return 0;
    }
    case L_SOFTMAX:
      DNN(b, cudnnSoftmaxForward(b->dnn, CUDNN_SOFTMAX_ACCURATE,
                                 CUDNN_SOFTMAX_MODE_INSTANCE, &kOne, b->td[x],
                                 data_of(b, x), &kZero, b->td[y], data_of(b, y)),
          l->name);
      return 0;
    case L_SPLIT:   /* outputs share the input's data */
    case L_DROPOUT: /* identity at inference scale, in place */
      return 0;
    default:
      lms__errf(b->err, "%s: not run by bench net", l->name);
      return -1;
  }
}

static int loss(bn_t *b) {
  int y = b->loss_in;
  int e = lms_kernel_softmax_loss(data_of(b, y), data_of(b, b->labels),
                                  b->n->batch, b->n->t[y].c, diff_of(b, y),
                                  (float *)b->bufs[b->loss_chunk].dptr, b->s);
  CU(b, e, "softmax loss");
  return 0;
}

static int backward(bn_t *b, int li) {
  net_t *n = b->n;
  net_layer_t *l = &n->l[li];
  bn_layer_rt_t *r = &b->lr[li];
  int x = l->in[0], y = l->out[0];
  float *dx = n->t[x].no_diff ? NULL : diff_of(b, x);
  switch (l->kind) {
    case L_CONV: {
      float *w = (float *)b->bufs[l->w].dptr;
      float *dw = (float *)b->bufs[l->dw].dptr;
      size_t nw = l->params - (size_t)n->t[y].c;
      DNN(b, cudnnConvolutionBackwardBias(b->dnn, &kOne, b->td[y], diff_of(b, y),
                                          &kZero, r->bias, dw + nw),
          l->name);
      DNN(b, cudnnConvolutionBackwardFilter(b->dnn, &kOne, b->td[x],
                                            data_of(b, x), b->td[y],
                                            diff_of(b, y), r->conv, r->bwd_filt,
                                            b->ws, BN_WS_BYTES, &kZero, r->filt,
                                            dw),
          l->name);
      if (dx != NULL)
        DNN(b, cudnnConvolutionBackwardData(b->dnn, &kOne, r->filt, w, b->td[y],
                                            diff_of(b, y), r->conv, r->bwd_data,
                                            b->ws, BN_WS_BYTES, &kZero, b->td[x],
                                            dx),
            l->name);
      return 0;
    }
    case L_RELU:
      /* In place: x is y, and dx is dy. */
      DNN(b, cudnnActivationBackward(b->dnn, b->relu, &kOne, b->td[y],
                                     data_of(b, y), b->td[y], diff_of(b, y),
                                     b->td[x], data_of(b, y), &kZero, b->td[x],
                                     dx),
          l->name);
      return 0;
    case L_MAXPOOL:
      DNN(b, cudnnPoolingBackward(b->dnn, r->pool, &kOne, b->td[y],
                                  data_of(b, y), b->td[y], diff_of(b, y),
                                  b->td[x], data_of(b, x), &kZero, b->td[x], dx),
          l->name);
      return 0;
    case L_AVEPOOL:
      /* Note [cuDNN pooling and caffe's rounding]: x and y are not read. */
      DNN(b, cudnnPoolingBackward(b->dnn, r->pool, &kOne, b->td[y],
                                  diff_of(b, y), b->td[y], diff_of(b, y),
                                  b->td[x], dx, &kZero, b->td[x], dx),
          l->name);
      return 0;
    case L_LRN:
      DNN(b, cudnnLRNCrossChannelBackward(b->dnn, b->lrn,
                                          CUDNN_LRN_CROSS_CHANNEL_DIM1, &kOne,
                                          b->td[y], data_of(b, y), b->td[y],
                                          diff_of(b, y), b->td[x], data_of(b, x),
                                          &kZero, b->td[x], dx),
          l->name);
      return 0;
    case L_CONCAT: {
      net_tensor_t *ty = &n->t[y];
      size_t plane = (size_t)ty->h * (size_t)ty->w * sizeof(float), off = 0;
      for (int i = 0; i < l->nin; i++) {
        size_t part = (size_t)n->t[l->in[i]].c * plane;
        CU(b, cudaMemcpy2DAsync(diff_of(b, l->in[i]), part,
                                (char *)diff_of(b, y) + off, (size_t)ty->c * plane,
                                part, (size_t)n->batch, cudaMemcpyDeviceToDevice,
                                b->s),
           l->name);
        off += part;
      }
      return 0;
    }
    case L_SPLIT: {
      size_t bytes = b->bufs[n->t[x].diff].bytes;
      CU(b, cudaMemcpyAsync(dx, diff_of(b, l->out[0]), bytes,
                            cudaMemcpyDeviceToDevice, b->s),
         l->name);
      for (int i = 1; i < l->nout; i++)
        DNN(b, cudnnAddTensor(b->dnn, &kOne, b->td[x], diff_of(b, l->out[i]),
                              &kOne, b->td[x], dx),
            l->name);
      return 0;
    }
    case L_FC: {
      net_tensor_t *tx = &n->t[x];
      int nin = tx->c * tx->h * tx->w, nout = n->t[y].c;
      float *w = (float *)b->bufs[l->w].dptr;
      float *dw = (float *)b->bufs[l->dw].dptr;
      BLAS(b, cublasSgemm(b->blas, CUBLAS_OP_N, CUBLAS_OP_T, nin, nout, n->batch,
                          &kOne, data_of(b, x), nin, diff_of(b, y), nout, &kZero,
                          dw, nin),
           l->name);
      DNN(b, cudnnConvolutionBackwardBias(b->dnn, &kOne, b->td[y], diff_of(b, y),
                                          &kZero, r->bias, dw + (size_t)nin * nout),
          l->name);
      if (dx != NULL)
        BLAS(b, cublasSgemm(b->blas, CUBLAS_OP_N, CUBLAS_OP_N, nin, n->batch, nout,
                            &kOne, w, nin, diff_of(b, y), nout, &kZero, dx, nin),
             l->name);
      return 0;
    }
    case L_DROPOUT: /* in place: dx is dy */
      return 0;
    default:
      lms__errf(b->err, "%s: no backward in bench net", l->name);
      return -1;
  }
}

/* Runs step si: acquires its chunks, times its kernels, releases them. */
static int run_step(bn_t *b, uint32_t si) {
  net_t *n = b->n;
  int rc = acquire_step(b, si);
  if (rc != 0) return rc;
  CU(b, cudaEventRecord(b->ev[2 * si], b->s), "cudaEventRecord");
  if (si < (uint32_t)n->nl) rc = forward(b, (int)si);
  else if (si == (uint32_t)n->nl) rc = loss(b);
  else rc = backward(b, n->nl - 1 - (int)(si - (uint32_t)n->nl - 1));
  if (rc != 0) return rc;
  CU(b, cudaEventRecord(b->ev[2 * si + 1], b->s), "cudaEventRecord");
  return release_step(b, si);
}

/* ---- One run ------------------------------------------------------------ */

/* The workload's chunk the loss step writes besides the gradient. */
static int find_loss_chunk(bn_t *b) {
  if (b->loss_in < 0) return 0;
  const lms__wl_step_t *st = &b->w.steps[b->n->nl];
  for (uint32_t k = 0; k < st->nrefs; k++) {
    const lms__wl_ref_t *r = &b->w.refs[st->first_ref + k];
    if (r->access == LMS_ACCESS_WRITE && r->chunk != b->n->t[b->loss_in].diff) {
      b->loss_chunk = r->chunk;
      return 0;
    }
  }
  lms__errf(b->err, "the loss step writes no loss chunk");
  return -1;
}

/* Checks Note [One network, measured and simulated]'s premise: step i is
 * layer i forward, then the loss, then the layers backward. */
static int check_steps(bn_t *b) {
  net_t *n = b->n;
  uint32_t want = (uint32_t)n->nl + (b->loss_in >= 0 ? 1u + (uint32_t)n->nl : 0u);
  if (b->w.nsteps != want) {
    lms__errf(b->err, "the workload has %u steps, the network %u", b->w.nsteps,
              want);
    return -1;
  }
  for (int i = 0; i < n->nl; i++) {
    char bw[2 * LMS__WL_NAME];
    snprintf(bw, sizeof bw, "%s.bwd", n->l[i].name);
    if (strncmp(b->w.steps[lms__net_fwd_step(n, i)].name, n->l[i].name,
                LMS__WL_NAME - 1) != 0 ||
        (b->loss_in >= 0 &&
         strncmp(b->w.steps[lms__net_bwd_step(n, i)].name, bw,
                 LMS__WL_NAME - 1) != 0)) {
      lms__errf(b->err, "step order differs from the network at '%s'",
                n->l[i].name);
      return -1;
    }
  }
  return 0;
}

/* Gives every weight and the input values, once. */
static int init_data(bn_t *b) {
  net_t *n = b->n;
  for (int i = 0; i < n->nl; i++) {
    net_layer_t *l = &n->l[i];
    if (l->w == NO_CHUNK) continue;
    bn_buf_t *buf = &b->bufs[l->w];
    void *p = buf->plain;
    if (b->ctx && lms_acquire(b->ctx, buf->chunk, (lms_stream_t)b->s,
                              LMS_ACCESS_WRITE | LMS_ACCESS_OVERWRITE,
                              &p) != LMS_OK) {
      lms__errf(b->err, "%s weights: %s", l->name, lms_ctx_last_error(b->ctx));
      return -2;
    }
    net_tensor_t *x = &n->t[l->in[0]];
    double fan_in = (double)x->c * (l->kind == L_CONV ? l->k * l->k : x->h * x->w);
    float a = (float)(1.0 / sqrt(fan_in));
    CU(b, lms_kernel_fill_f32(p, buf->bytes / 4, (uint64_t)i + 1, -a, a, b->s),
       "fill");
    if (b->ctx) lms_release(b->ctx, buf->chunk, (lms_stream_t)b->s);
  }
  for (int t = 0; t < n->nt; t++) {
    if (!n->t[t].no_diff) continue;
    bn_buf_t *buf = &b->bufs[n->t[t].data];
    void *p = buf->plain;
    if (b->ctx && lms_acquire(b->ctx, buf->chunk, (lms_stream_t)b->s,
                              LMS_ACCESS_WRITE | LMS_ACCESS_OVERWRITE,
                              &p) != LMS_OK) {
      lms__errf(b->err, "%s: %s", n->t[t].name, lms_ctx_last_error(b->ctx));
      return -2;
    }
    if (t == b->labels) {
      float lab[4096];
      int nb = n->batch < 4096 ? n->batch : 4096;
      for (int i = 0; i < nb; i++) lab[i] = (float)((i * 37) % 1000);
      CU(b, cudaMemcpyAsync(p, lab, (size_t)nb * sizeof(float),
                            cudaMemcpyHostToDevice, b->s),
         "labels");
      CU(b, cudaStreamSynchronize(b->s), "labels");
    } else {
      CU(b, lms_kernel_fill_f32(p, buf->bytes / 4, 0x1234 + (uint64_t)t, 0.0f,
                                1.0f, b->s),
         "fill");
    }
    if (b->ctx) lms_release(b->ctx, buf->chunk, (lms_stream_t)b->s);
  }
  return 0;
}

static int alloc_bufs(bn_t *b) {
  b->bufs = calloc(b->w.nchunks, sizeof *b->bufs);
  if (b->bufs == NULL) {
    lms__errf(b->err, "no host memory");
    return -1;
  }
  uint64_t total = 0;
  for (uint32_t i = 0; i < b->w.nchunks; i++) total += b->w.chunks[i].size;
  if (b->ctx == NULL && total > b->limit) {
    lms__errf(b->err, "out of memory: the blobs need %.2f GiB, the GPU limit "
              "leaves %.2f GiB after the workspace", (double)total / (1 << 30),
              (double)b->limit / (1 << 30));
    return -2;
  }
  for (uint32_t i = 0; i < b->w.nchunks; i++) {
    bn_buf_t *buf = &b->bufs[i];
    buf->bytes = b->w.chunks[i].size;
    if (b->ctx == NULL) {
      CU(b, cudaMalloc(&buf->plain, buf->bytes), "cudaMalloc");
    } else if (lms_alloc(b->ctx, buf->bytes, &buf->chunk) != LMS_OK) {
      lms__errf(b->err, "lms_alloc of '%s' (%zu bytes): %s", b->w.chunks[i].name,
                buf->bytes, lms_ctx_last_error(b->ctx));
      return -2;
    }
  }
  return 0;
}

static void free_bufs(bn_t *b) {
  if (b->bufs == NULL) return;
  for (uint32_t i = 0; i < b->w.nchunks; i++) {
    if (b->bufs[i].plain) cudaFree(b->bufs[i].plain);
    if (b->bufs[i].chunk && b->ctx) lms_free(b->ctx, b->bufs[i].chunk);
  }
  free(b->bufs);
  b->bufs = NULL;
}

/* Iterations of the whole workload; the measured ones fill r, and the last
 * one's step times go into the workload (Note [One network, measured and
 * simulated]). */
static int iterate(bn_t *b, int iterations, bn_result_t *r) {
  net_t *n = b->n;
  uint32_t last_fwd = (uint32_t)n->nl - 1;
  lms_stats_t s0, s1;
  double sum_iter = 0, sum_fwd = 0, sum_busy = 0;
  for (int it = 0; it < BN_WARMUP + iterations; it++) {
    if (b->ctx) lms_stats_get(b->ctx, &s0);
    double t0 = now_ms();
    CU(b, cudaEventRecord(b->ev_iter, b->s), "cudaEventRecord");
    for (uint32_t si = 0; si < b->w.nsteps; si++) {
      int rc = run_step(b, si);
      if (rc != 0) return rc;
    }
    CU(b, cudaStreamSynchronize(b->s), "cudaStreamSynchronize");
    double t1 = now_ms();
    if (it < BN_WARMUP) continue;
    float fwd = 0, busy = 0;
    CU(b, cudaEventElapsedTime(&fwd, b->ev_iter, b->ev[2 * last_fwd + 1]),
       "cudaEventElapsedTime");
    for (uint32_t si = 0; si < b->w.nsteps; si++) {
      float ms = 0;
      CU(b, cudaEventElapsedTime(&ms, b->ev[2 * si], b->ev[2 * si + 1]),
         "cudaEventElapsedTime");
      busy += ms;
      b->w.steps[si].compute_ns = (uint64_t)((double)ms * 1e6);
    }
    sum_iter += t1 - t0;
    sum_fwd += fwd;
    sum_busy += busy;
    if (b->ctx) {
      lms_stats_get(b->ctx, &s1);
      if (it == BN_WARMUP) b->st_begin = s0;
      b->st_end = s1;
      r->gb_in += (double)(s1.bytes_h2d.total - s0.bytes_h2d.total) / 1e9;
      r->gb_out += (double)(s1.bytes_d2h.total - s0.bytes_d2h.total) / 1e9;
      r->late += s1.prefetch_late.total - s0.prefetch_late.total;
      r->misses += s1.demand_misses.total - s0.demand_misses.total;
      r->prefetches += s1.prefetches.total - s0.prefetches.total;
    }
  }
  r->iter_ms = sum_iter / iterations;
  r->fwd_ms = sum_fwd / iterations;
  r->busy_ms = sum_busy / iterations;
  r->gb_in /= iterations;
  r->gb_out /= iterations;
  return 0;
}

typedef struct bn_env {
  cudnnHandle_t dnn;
  cublasHandle_t blas;
  void *ws;
  double h2d_gbps, d2h_gbps; /* measured native rates */
  double both_gbps;          /* both ways at once, summed */
} bn_env_t;

/* The simulator's prediction of the run just measured: the workload with
 * the measured step times, over the same link, budget and options. */
static double predict(const bn_t *b, const lms__opts_t *run_opts,
                      const bn_env_t *env, int iterations, char *why) {
  lms__opts_t o;
  lms__opts_copy(&o, run_opts);
  o.device = LMS_DEVICE_SIM;
  o.sim_bytes = 0;
  o.trace = o.trace_buf;
  o.trace_buf[0] = '\0';
  o.stats = NULL;
  if (run_opts->source[LMS__OPT_link] == LMS__SRC_DEFAULT) {
    char lerr[LMS__ERRBUF], text[64];
    snprintf(text, sizeof text, "%.3f/%.3f/%.3f", env->h2d_gbps,
             env->d2h_gbps, env->both_gbps);
    if (lms__link_parse(text, &o.link, lerr) != LMS_OK) {
      snprintf(why, LMS__ERRBUF, "%s", lerr);
      return -1.0;
    }
  }
  lms__replay_result_t *res = calloc(1, sizeof *res);
  if (res == NULL) return -1.0;
  lms_status_t st = lms__replay_run(&b->w, &o, BN_WARMUP + iterations, 0, res,
                                    why);
  double ms = st == LMS_OK ? (double)res->last.time_ns / 1e6 : -1.0;
  free(res);
  return ms;
}

static void run_one(const lms_options_t *base, const bn_args_t *a,
                    const bn_env_t *env, int batch, int64_t config,
                    bn_result_t *r) {
  memset(r, 0, sizeof *r);
  r->pred_ms = -1.0;
  bn_t *b = calloc(1, sizeof *b);
  net_t *n = calloc(1, sizeof *n);
  lms_options_t *o = NULL;
  if (b == NULL || n == NULL || lms_options_create(&o) != LMS_OK) {
    snprintf(r->why, sizeof r->why, "no host memory");
    r->ok = -1;
    free(b);
    free(n);
    return;
  }
  b->n = n;
  b->dnn = env->dnn;
  b->blas = env->blas;
  b->ws = env->ws;
  b->s = NULL;
  lms__opts_copy(&o->v, &base->v);
  uint64_t limit = base->v.gpu_limit ? base->v.gpu_limit : 16ull << 30;
  b->limit = limit > BN_WS_BYTES ? limit - BN_WS_BYTES : 0;
  lms__wl_params_t p = {.batch = batch, .train = a->train, .size = a->size};
  int rc = 0;
  if (lms__net_googlenet(&p, n, &b->w, &b->loss_in, &b->labels, b->err) != LMS_OK)
    rc = -1;
  if (rc == 0) rc = check_steps(b) || find_loss_chunk(b) ? -1 : 0;
  if (rc == 0 && a->discard && config != -2) lms__wl_mark_dead(&b->w, NULL);
  if (rc == 0 && config != -2) {
    char v[32];
    lms_options_set(o, "device", "cuda");
    snprintf(v, sizeof v, "%llu", (unsigned long long)b->limit);
    lms_options_set(o, "gpu-limit", v);
    snprintf(v, sizeof v, "%lld", (long long)config);
    lms_options_set(o, "lms", v);
    lms_options_set(o, "lms_frac", "0");
    if (a->trace_dir[0] != '\0') {
      /* The runtime's own record is not what is wanted here: this
       * command writes the measured workload itself. */
      lms_options_set(o, "trace", "");
    }
    lms_status_t cst = lms_ctx_create(o, &b->ctx);
    if (cst != LMS_OK) {
      snprintf(b->err, sizeof b->err, "lms_ctx_create: %s", lms_strerror(cst));
      rc = -1;
    }
  }
  if (rc == 0) {
    if (b->ctx) {
      lms_stream_t ls;
      if (lms_stream_create(b->ctx, &ls) != LMS_OK) {
        snprintf(b->err, sizeof b->err, "%s", lms_ctx_last_error(b->ctx));
        rc = -1;
      }
      b->s = (cudaStream_t)ls;
    } else if (cudaStreamCreateWithFlags(&b->s, cudaStreamNonBlocking) != cudaSuccess) {
      snprintf(b->err, sizeof b->err, "cudaStreamCreate failed");
      rc = -1;
    }
  }
  if (rc == 0 && (cudnnSetStream(b->dnn, b->s) != CUDNN_STATUS_SUCCESS ||
                  cublasSetStream(b->blas, b->s) != CUBLAS_STATUS_SUCCESS)) {
    snprintf(b->err, sizeof b->err, "cannot set the cuDNN/cuBLAS stream");
    rc = -1;
  }
  if (rc == 0) {
    b->ev = calloc(2 * (size_t)b->w.nsteps, sizeof *b->ev);
    rc = b->ev == NULL ? -1 : 0;
    for (uint32_t i = 0; rc == 0 && i < 2 * b->w.nsteps; i++)
      if (cudaEventCreate(&b->ev[i]) != cudaSuccess) rc = -1;
    if (rc == 0 && cudaEventCreate(&b->ev_iter) != cudaSuccess) rc = -1;
    if (rc != 0) snprintf(b->err, sizeof b->err, "cannot create events");
  }
  if (rc == 0) rc = setup_net(b);
  if (rc == 0) rc = alloc_bufs(b);
  if (rc == 0) rc = init_data(b);
  if (rc == 0) rc = iterate(b, a->iterations, r);
  if (b->ctx != NULL)
    r->pool_gib = (double)lms__cuda_pool_peak(b->ctx->dev) / (1 << 30);
  if (rc == 0 && b->ctx) {
    char why[LMS__ERRBUF] = "";
    r->pred_ms = predict(b, &b->ctx->opts, env, a->iterations, why);
    if (r->pred_ms < 0) fprintf(stderr, "lms bench net: no prediction: %s\n", why);
    if (a->trace_dir[0] != '\0') {
      char path[LMS__PATH_MAX + 64], terr[LMS__ERRBUF];
      snprintf(path, sizeof path, "%s/googlenet-b%d-%s-lms%lld.trace",
               a->trace_dir, batch, a->train ? "train" : "fwd",
               (long long)config);
      if (lms__trace_write(path, &b->w, terr) != LMS_OK)
        fprintf(stderr, "lms bench net: %s\n", terr);
      else
        fprintf(stderr, "lms bench net: wrote %s\n", path);
      /* Beside the trace, the stats of the measured iterations, for `lms
       * report` (Note [A measured iteration's stats]). */
      char *dot = strrchr(path, '.');
      if (dot != NULL) snprintf(dot, sizeof path - (size_t)(dot - path),
                                ".stats.json");
      if (lms__stats_file_write_iterations(
              path, &b->st_begin, &b->st_end, a->iterations, BN_WARMUP,
              (uint64_t)(r->iter_ms * 1e6), terr) != LMS_OK)
        fprintf(stderr, "lms bench net: %s\n", terr);
      else
        fprintf(stderr, "lms bench net: wrote %s\n", path);
    }
  }
  r->ok = rc == 0 ? 1 : rc == -2 ? 0 : -1;
  if (rc != 0) snprintf(r->why, sizeof r->why, "%s", b->err);
  if (b->s) cudaStreamSynchronize(b->s);
  (void)cudaGetLastError();
  free_bufs(b);
  if (b->ev) {
    for (uint32_t i = 0; i < 2 * b->w.nsteps; i++)
      if (b->ev[i]) cudaEventDestroy(b->ev[i]);
    free(b->ev);
  }
  if (b->ev_iter) cudaEventDestroy(b->ev_iter);
  teardown_net(b);
  if (b->ctx) {
    if (b->s) lms_stream_destroy(b->ctx, (lms_stream_t)b->s);
    lms_ctx_destroy(b->ctx);
  } else if (b->s) {
    cudaStreamDestroy(b->s);
  }
  lms__wl_free(&b->w);
  lms_options_destroy(o);
  free(n);
  free(b);
}

/* One 256 MiB copy each way, pinned, and one each way at once: the best
 * of three of each. */
static int measure_link(bn_env_t *env) {
  size_t nb = 256u << 20;
  void *h[2] = {NULL, NULL}, *d[2] = {NULL, NULL};
  cudaStream_t s[2] = {NULL, NULL};
  cudaEvent_t e0 = NULL, e1[2] = {NULL, NULL};
  int ok = cudaEventCreate(&e0) == cudaSuccess;
  for (int k = 0; k < 2 && ok; k++)
    ok = cudaHostAlloc(&h[k], nb, cudaHostAllocPortable) == cudaSuccess &&
         cudaMalloc(&d[k], nb) == cudaSuccess &&
         cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking) == cudaSuccess &&
         cudaEventCreate(&e1[k]) == cudaSuccess;
  double best[3] = {0, 0, 0};
  for (int dir = 0; ok && dir < 3; dir++)
    for (int rep = 0; ok && rep < 3; rep++) {
      cudaEventRecord(e0, s[0]);
      cudaStreamWaitEvent(s[1], e0, 0);
      if (dir != 1) cudaMemcpyAsync(d[0], h[0], nb, cudaMemcpyHostToDevice, s[0]);
      if (dir != 0) cudaMemcpyAsync(h[1], d[1], nb, cudaMemcpyDeviceToHost, s[1]);
      cudaEventRecord(e1[0], s[0]);
      cudaEventRecord(e1[1], s[1]);
      float ms0 = 0, ms1 = 0;
      ok = cudaEventSynchronize(e1[0]) == cudaSuccess &&
           cudaEventSynchronize(e1[1]) == cudaSuccess &&
           cudaEventElapsedTime(&ms0, e0, e1[0]) == cudaSuccess &&
           cudaEventElapsedTime(&ms1, e0, e1[1]) == cudaSuccess;
      double ms = ms0 > ms1 ? ms0 : ms1;
      double gbps = (double)nb * (dir == 2 ? 2.0 : 1.0) / (ms * 1e-3) / 1e9;
      if (ok && gbps > best[dir]) best[dir] = gbps;
    }
  env->h2d_gbps = best[0];
  env->d2h_gbps = best[1];
  env->both_gbps = best[2];
  if (e0) cudaEventDestroy(e0);
  for (int k = 0; k < 2; k++) {
    if (e1[k]) cudaEventDestroy(e1[k]);
    if (s[k]) cudaStreamDestroy(s[k]);
    cudaFree(d[k]);
    cudaFreeHost(h[k]);
  }
  return ok ? 0 : -1;
}

static void config_name(int64_t c, char *buf, size_t len) {
  if (c == -2) snprintf(buf, len, "plain");
  else snprintf(buf, len, "lms:%lld", (long long)c);
}

static int bench_net(const lms_options_t *base, const bn_args_t *a) {
  char why[256] = "";
  if (lms__cuda_device_count(why, sizeof why) <= 0) {
    fprintf(stderr, "lms bench net: needs a CUDA device (%s)\n", why);
    return LMS__EXIT_NO_GPU;
  }
  bn_env_t env;
  memset(&env, 0, sizeof env);
  if (cudnnCreate(&env.dnn) != CUDNN_STATUS_SUCCESS ||
      cublasCreate(&env.blas) != CUBLAS_STATUS_SUCCESS ||
      cudaMalloc(&env.ws, BN_WS_BYTES) != cudaSuccess || measure_link(&env) != 0) {
    fprintf(stderr, "lms bench net: cannot set up cuDNN, cuBLAS and the "
                    "workspace: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  uint64_t limit = base->v.gpu_limit ? base->v.gpu_limit : 16ull << 30;
  int throttled = base->v.source[LMS__OPT_link] != LMS__SRC_DEFAULT;
  printf("lms bench net: GoogLeNet %dx%d, %s, GPU limit %.1f GiB (%llu MiB of "
         "it the cuDNN workspace), %d iterations after %d warm-up\n",
         a->size, a->size, a->train ? "forward + backward" : "forward only",
         (double)limit / (1 << 30), (unsigned long long)(BN_WS_BYTES >> 20),
         a->iterations, BN_WARMUP);
  if (a->discard)
    printf("lms runs discard each blob after its last use in an iteration "
           "(--discard)\n");
  printf("link: measured %.1f GB/s host to device, %.1f GB/s device to host, "
         "%.1f GB/s both at once%s\n", env.h2d_gbps, env.d2h_gbps, env.both_gbps,
         throttled ? "; copies slowed to the --link given" : "");
  printf("%-14s %5s %9s %9s %9s %9s %6s %7s %7s %6s %6s %9s %6s %6s\n",
         "run", "batch", "iter ms", "fwd ms", "img ms", "fwd/img", "busy%",
         "GB in", "GB out", "late", "miss", "sim ms", "err%", "pool");
  double plain_b1_fwd = -1, plain_b1_iter = -1;
  double best_ratio_fwd = -1, best_ratio_iter = -1;
  char best_cfg[64] = "";
  int failures = 0;
  for (int ci = 0; ci < a->nconfigs; ci++)
    for (int bi = 0; bi < a->nbatches; bi++) {
      bn_result_t r;
      int batch = a->batches[bi];
      char name[32];
      config_name(a->configs[ci], name, sizeof name);
      fflush(stdout);
      run_one(base, a, &env, batch, a->configs[ci], &r);
      if (r.ok != 1) {
        printf("%-14s %5d   %s: %s\n", name, batch,
               r.ok == 0 ? "does not fit" : "failed", r.why);
        if (r.ok < 0) failures++;
        continue;
      }
      double err = r.pred_ms > 0 ? 100.0 * (r.pred_ms - r.iter_ms) / r.iter_ms : 0;
      printf("%-14s %5d %9.1f %9.1f %9.2f %9.2f %6.1f %7.2f %7.2f %6lld %6lld ",
             name, batch, r.iter_ms, r.fwd_ms, r.iter_ms / batch, r.fwd_ms / batch,
             100.0 * r.busy_ms / r.iter_ms, r.gb_in, r.gb_out,
             (long long)r.late, (long long)r.misses);
      if (r.pred_ms > 0) printf("%9.1f %+6.1f", r.pred_ms, err);
      else printf("%9s %6s", "-", "-");
      printf(" %6.2f\n", r.pool_gib);
      if (a->configs[ci] == -2 && batch == 1) {
        plain_b1_fwd = r.fwd_ms;
        plain_b1_iter = r.iter_ms;
      }
      if (a->configs[ci] != -2 && batch > 1 && plain_b1_fwd > 0) {
        double rf = r.fwd_ms / batch / plain_b1_fwd;
        if (best_ratio_fwd < 0 || rf < best_ratio_fwd) {
          best_ratio_fwd = rf;
          best_ratio_iter = r.iter_ms / batch / plain_b1_iter;
          snprintf(best_cfg, sizeof best_cfg, "%s at batch %d", name, batch);
        }
      }
      fflush(stdout);
    }
  if (best_ratio_fwd > 0)
    printf("per image, %s against batch 1 plain: forward %.2f, whole iteration "
           "%.2f (caffe-ibm on the P100, forward: 0.58)\n", best_cfg,
           best_ratio_fwd, best_ratio_iter);
  cudaFree(env.ws);
  cublasDestroy(env.blas);
  cudnnDestroy(env.dnn);
  return failures ? 1 : 0;
}

const char *lms__bench_net_where(void) {
  return "in this binary (linked with cuDNN and cuBLAS)";
}

#elif defined(LMS_BENCH_NET_BUILT)

/* Note [bench net in a binary of its own] (CMakeLists.txt): lms-bench-net
 * beside this binary (the build tree), or in the install's libexec/lms
 * (LMS_LIBEXECREL, relative to the bin directory); LMS_BENCH_NET names
 * it elsewhere.  0 with its path in buf, -1 with why in buf. */
#ifndef LMS_LIBEXECREL
#define LMS_LIBEXECREL "../libexec/lms"
#endif
#define BN_HELPER "lms-bench-net"

static int find_helper(char *buf, size_t size) {
  const char *env = getenv("LMS_BENCH_NET");
  if (env != NULL && env[0] != '\0') {
    if (access(env, X_OK) == 0) {
      snprintf(buf, size, "%s", env);
      return 0;
    }
    snprintf(buf, size, "LMS_BENCH_NET='%s': %s; accepted: the path of "
             BN_HELPER, env, strerror(errno));
    return -1;
  }
  char dir[LMS__PATH_MAX];
  if (lms__cli_exe_dir(dir, sizeof dir) != 0) {
    snprintf(buf, size, "cannot find lms's directory: %s; set LMS_BENCH_NET "
             "to the path of " BN_HELPER, strerror(errno));
    return -1;
  }
  static const char *const rels[] = {"/" BN_HELPER,
                                     "/" LMS_LIBEXECREL "/" BN_HELPER};
  for (size_t i = 0; i < sizeof rels / sizeof rels[0]; i++) {
    int n = snprintf(buf, size, "%s%s", dir, rels[i]);
    if (n > 0 && (size_t)n < size && access(buf, X_OK) == 0) return 0;
  }
  int n = snprintf(buf, size, "no " BN_HELPER " in %s or %s/" LMS_LIBEXECREL
                   " (it is built and installed with lms where cuDNN was "
                   "found); set LMS_BENCH_NET to its path", dir, dir);
  if (n < 0) buf[0] = '\0';
  return -1;
}

const char *lms__bench_net_where(void) {
  static char where[3 * LMS__PATH_MAX];
  char path[2 * LMS__PATH_MAX + 256];
  int found = find_helper(path, sizeof path) == 0;
  int n = snprintf(where, sizeof where, "%s%s", found ? "" : "not available: ",
                   path);
  return n < 0 ? "not available" : where;
}

/* Runs lms-bench-net in this process's place with the command line as
 * given: it is lms with cuDNN and cuBLAS, and parses the same flags. */
static int bench_net(const lms_options_t *base, const bn_args_t *a) {
  (void)base;
  (void)a;
  char path[2 * LMS__PATH_MAX + 256];
  if (find_helper(path, sizeof path) != 0) {
    fprintf(stderr, "lms bench net: %s\n", path);
    return LMS__EXIT_NO_GPU;
  }
  fflush(NULL);
  char *saved = lms__cli_argv[0];
  lms__cli_argv[0] = path;
  execv(path, lms__cli_argv);
  lms__cli_argv[0] = saved;
  fprintf(stderr, "lms bench net: cannot run %s: %s\n", path,
          strerror(errno));
  return 1;
}

#else /* no cuDNN */

const char *lms__bench_net_where(void) {
  return "not built (no CUDA toolkit, cuDNN or cuBLAS when lms was built)";
}

static int bench_net(const lms_options_t *base, const bn_args_t *a) {
  (void)base;
  (void)a;
  fprintf(stderr, "lms bench net: this build of lms has no CUDA device or no "
                  "cuDNN (nvcc or cudnn.h was not found when it was built)\n");
  return LMS__EXIT_NO_GPU;
}

#endif

/* ---- Arguments ---------------------------------------------------------- */

static int parse_int(const char *flag, const char *v, int lo, int hi, int *out) {
  char *e = NULL;
  long x = strtol(v, &e, 10);
  if (e == v || *e != '\0' || x < lo || x > hi) {
    fprintf(stderr, "lms bench net: %s '%s' is not accepted; accepted: a "
                    "whole number from %d to %d\n", flag, v, lo, hi);
    return -1;
  }
  *out = (int)x;
  return 0;
}

int lms__bench_net(const lms_options_t *base, int argc, char **argv) {
  bn_args_t a;
  memset(&a, 0, sizeof a);
  a.batches[0] = 1;
  a.batches[1] = 10;
  a.nbatches = 2;
  a.configs[0] = -2;
  a.configs[1] = 8192;
  a.configs[2] = 160000000;
  a.nconfigs = 3;
  a.train = 1;
  a.size = 1200;
  a.iterations = 3;
  for (int i = 0; i < argc; i++) {
    const char *f = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = strcmp(f, "--batch") == 0 || strcmp(f, "--size") == 0 ||
                strcmp(f, "--iterations") == 0 || strcmp(f, "--configs") == 0 ||
                strcmp(f, "--trace-dir") == 0;
    if (takes && v == NULL) {
      fprintf(stderr, "lms bench net: %s needs a value\n", f);
      return 2;
    }
    if (strcmp(f, "--forward") == 0) {
      a.train = 0;
    } else if (strcmp(f, "--discard") == 0) {
      a.discard = 1;
    } else if (strcmp(f, "--train") == 0) {
      a.train = 1;
    } else if (strcmp(f, "--size") == 0) {
      if (parse_int(f, v, 224, 4096, &a.size)) return 2;
    } else if (strcmp(f, "--iterations") == 0) {
      if (parse_int(f, v, 1, 50, &a.iterations)) return 2;
    } else if (strcmp(f, "--trace-dir") == 0) {
      if (lms__cli_path("bench net", "--trace-dir", v, a.trace_dir,
                        sizeof a.trace_dir))
        return 2;
      /* Made here, so that a run does not end with nothing written. */
      if (mkdir(v, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "lms bench net: --trace-dir '%s': cannot create "
                "the directory: %s\n", v, strerror(errno));
        return 2;
      }
    } else if (strcmp(f, "--batch") == 0 || strcmp(f, "--configs") == 0) {
      int is_batch = f[2] == 'b';
      char buf[256];
      if (lms__cli_list_fits("bench net", f, v, sizeof buf)) return 2;
      snprintf(buf, sizeof buf, "%s", v);
      int cnt = 0;
      for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
           tok = strtok_r(NULL, ",", &save)) {
        if (cnt == (is_batch ? BN_MAX_BATCHES : BN_MAX_CONFIGS)) {
          fprintf(stderr, "lms bench net: %s: at most %d values\n", f,
                  is_batch ? BN_MAX_BATCHES : BN_MAX_CONFIGS);
          return 2;
        }
        if (is_batch) {
          if (parse_int(f, tok, 1, 4096, &a.batches[cnt])) return 2;
        } else if (strcmp(tok, "plain") == 0) {
          a.configs[cnt] = -2;
        } else {
          char err[LMS__ERRBUF];
          if (strncmp(tok, "lms:", 4) != 0 ||
              lms__parse_kb(f, tok + 4, &a.configs[cnt], err) != LMS_OK ||
              a.configs[cnt] < 0) {
            fprintf(stderr, "lms bench net: --configs: '%s' is not accepted; "
                            "accepted: plain or lms:KB (KB >= 0), comma-"
                            "separated\n", tok);
            return 2;
          }
        }
        cnt++;
      }
      if (cnt == 0) {
        fprintf(stderr, "lms bench net: %s is empty\n", f);
        return 2;
      }
      if (is_batch) a.nbatches = cnt;
      else a.nconfigs = cnt;
    } else {
      fprintf(stderr, "lms bench net: unknown argument '%s'; accepted: "
                      "--batch N,.. --size N --forward --train --iterations N "
                      "--configs plain,lms:KB,.. --trace-dir DIR --discard\n",
              f);
      return 2;
    }
    if (takes) i++;
  }
  return bench_net(base, &a);
}


/* The flags of `lms bench net` and whether each takes a value. */
static const lms__cli_flag_t kBenchFlags[] = {{"--batch", 1},      {"--size", 1},    {"--iterations", 1},
                   {"--configs", 1},    {"--trace-dir", 1}, {"--forward", 0},
                   {"--train", 0},      {"--discard", 0}};

int lms__bench_extract_args(int *argc, char **argv, char **out) {
  return lms__cli_extract(argc, argv, out, kBenchFlags,
                          sizeof kBenchFlags / sizeof kBenchFlags[0]);
}
