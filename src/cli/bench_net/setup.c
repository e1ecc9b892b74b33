/* setup.c - `lms bench net`'s GoogLeNet on cuDNN: the tensor, filter,
 * convolution and pooling descriptors of every layer, and the fastest
 * algorithm of each convolution that fits the workspace.
 *
 * Note [cuDNN pooling and caffe's rounding]
 * Caffe rounds pooled sizes up; cuDNN rounds down.  A pooling whose
 * caffe size is one more than cuDNN's at the layer's padding is run with
 * one more padding on each side, which gives caffe's size: the windows
 * move by one pixel, the cost does not change.  The average pooling's
 * backward reads neither x nor y; cuDNN still takes pointers, so the
 * gradients (same shapes, acquired) are passed in their place. */
#include "cli/bench_net/net.h"

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

/* Note [cuDNN pooling and caffe's rounding] (above). */
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

int lms__gnet_setup(bn_t *b) {
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

void lms__gnet_teardown(bn_t *b) {
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

