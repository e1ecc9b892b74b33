/* layers.c - the kernels of `lms bench net`'s GoogLeNet: each step's
 * chunks acquired from lms (or plain memory), its layer forward or
 * backward on cuDNN and cuBLAS, the softmax loss, and the release. */
#include "cli/bench_net/net.h"

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

/* Note [What bench net computed]
 * A run that is fast but computes something else proves nothing, and
 * the configurations differ in exactly what could break the numbers:
 * plain memory, lms chunks swapped through the host, and (--discard)
 * chunks given up after their last use.  So after the measured
 * iterations each run computes one more, untimed, and reads back inside
 * the steps that make them (before the step releases its chunks, which
 * a discard may give up next): the loss, and the sum and sum of squares
 * of every weight gradient in training, or of the network's output in a
 * forward-only run.  The inputs and weights are the same functions of
 * their indexes in every run, so every configuration at one batch must
 * agree (bench.c), within what cuDNN's choice of algorithm can change
 * in float rounding. */
static int add_sums(bn_t *b, const float *dptr, size_t bytes) {
  enum { SLICE = 16 << 20 };
  float *h = malloc(SLICE);
  if (h == NULL) {
    lms__errf(b->err, "no host memory to check the results");
    return -1;
  }
  for (size_t off = 0; off < bytes; off += SLICE) {
    size_t n = bytes - off < SLICE ? bytes - off : SLICE;
    cudaError_t e = cudaMemcpyAsync(h, (const char *)dptr + off, n,
                                    cudaMemcpyDeviceToHost, b->s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(b->s);
    if (e != cudaSuccess) {
      free(h);
      lms__errf(b->err, "reading the results: %s", cudaGetErrorString(e));
      return -1;
    }
    for (size_t i = 0; i < n / sizeof(float); i++) {
      b->sum += h[i];
      b->sumsq += (double)h[i] * h[i];
    }
  }
  free(h);
  return 0;
}

static int check_step(bn_t *b, uint32_t si) {
  net_t *n = b->n;
  if (si == (uint32_t)n->nl) {
    float v = 0;
    CU(b, cudaMemcpyAsync(&v, b->bufs[b->loss_chunk].dptr, sizeof v,
                          cudaMemcpyDeviceToHost, b->s), "reading the loss");
    CU(b, cudaStreamSynchronize(b->s), "reading the loss");
    b->loss = v;
    return 0;
  }
  if (si > (uint32_t)n->nl) {
    const net_layer_t *l = &n->l[n->nl - 1 - (int)(si - (uint32_t)n->nl - 1)];
    if (l->dw == NO_CHUNK) return 0;
    return add_sums(b, b->bufs[l->dw].dptr, b->bufs[l->dw].bytes);
  }
  /* Forward only: the last layer's output. */
  if (b->loss_in >= 0 || si != (uint32_t)n->nl - 1) return 0;
  int y = n->l[si].out[0];
  return add_sums(b, data_of(b, y), b->bufs[n->t[y].data].bytes);
}

int lms__gnet_check(bn_t *b) {
  b->checking = 1;
  b->loss = b->sum = b->sumsq = 0;
  int rc = 0;
  for (uint32_t si = 0; rc == 0 && si < b->w.nsteps; si++)
    rc = lms__gnet_step(b, si);
  b->checking = 0;
  if (rc == 0) CU(b, cudaStreamSynchronize(b->s), "cudaStreamSynchronize");
  return rc;
}

/* Runs step si: acquires its chunks, times its kernels, releases them. */
int lms__gnet_step(bn_t *b, uint32_t si) {
  net_t *n = b->n;
  int rc = acquire_step(b, si);
  if (rc != 0) return rc;
  CU(b, cudaEventRecord(b->ev[2 * si], b->s), "cudaEventRecord");
  if (si < (uint32_t)n->nl) rc = forward(b, (int)si);
  else if (si == (uint32_t)n->nl) rc = loss(b);
  else rc = backward(b, n->nl - 1 - (int)(si - (uint32_t)n->nl - 1));
  if (rc != 0) return rc;
  CU(b, cudaEventRecord(b->ev[2 * si + 1], b->s), "cudaEventRecord");
  if (b->checking && check_step(b, si) != 0) return -1;
  return release_step(b, si);
}

