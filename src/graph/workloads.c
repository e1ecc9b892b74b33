/* workloads.c - the built-in workloads: the source scenarios of
 * CONTEXT.md as chunks and steps (graph.h).
 *
 * "googlenet" is BVLC GoogLeNet's deploy net run by caffe at 1200x1200
 * on a P100 (the headline LMS scenario); "unet3d" is the 3D U-Net of the
 * TensorFlow LMS study on a V100.  Each is first described as a small
 * network of layers and tensors (net_t); lower() then writes the workload:
 * chunks for the tensors, the weights and (in training) their gradients,
 * one step per layer forward, a loss step, one step per layer backward in
 * reverse order, and for the U-Net one optimizer step per layer with
 * weights.  lms__wl_peak_live_bytes() sums what is live over an iteration.
 *
 * Invariants: a workload built here passes lms__wl_validate; a failed
 * build leaves the out workload empty and says in err which parameter is
 * out of range, naming the accepted range; step times come from FLOP
 * counts and each workload's device model (Note [GoogLeNet timing
 * calibration], Note [U-Net device model]), never from per-step tables;
 * every tensor is float32. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/net.h"

static void net_fail(net_t *n, lms_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void net_fail(net_t *n, lms_status_t st, const char *fmt, ...) {
  char msg[LMS__ERRBUF];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n->st == LMS_OK) lms__errf(n->err, "%s", msg);
  n->st = st;
}

static void net_init(net_t *n, int dims, int batch, char *err) {
  memset(n, 0, sizeof *n);
  n->dims = dims;
  n->batch = batch;
  n->ceil_pool = dims == 2;
  n->inplace = dims == 2;
  n->err = err;
}

static uint64_t kernel_volume(const net_t *n, int k) {
  uint64_t v = (uint64_t)k * (uint64_t)k;
  return n->dims == 3 ? v * (uint64_t)k : v;
}

/* Adds a tensor of c x d x h x w elements per image; -1 on failure. */
static int net_tensor(net_t *n, const char *name, int c, int d, int h, int w) {
  if (n->st != LMS_OK) return -1;
  if (n->nt == NET_MAX_TENSORS) {
    net_fail(n, LMS_ERR_INTERNAL, "network has more than %d tensors",
             NET_MAX_TENSORS);
    return -1;
  }
  if (c < 1 || d < 1 || h < 1 || w < 1) {
    net_fail(n, LMS_ERR_INVALID, "tensor '%s' would be empty (%d x %d x %d "
             "x %d)", name, c, d, h, w);
    return -1;
  }
  net_tensor_t *t = &n->t[n->nt];
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->c = c;
  t->d = d;
  t->h = h;
  t->w = w;
  t->elems = (uint64_t)n->batch * (uint64_t)c * (uint64_t)d * (uint64_t)h *
             (uint64_t)w;
  t->alias = -1;
  t->data = t->diff = NO_CHUNK;
  return n->nt++;
}

/* Adds a layer reading `in`; its outputs are the caller's to set. */
static net_layer_t *net_layer(net_t *n, const char *name, layer_kind_t kind,
                              const int *in, int nin) {
  if (n->st != LMS_OK) return NULL;
  if (n->nl == NET_MAX_LAYERS || nin > NET_MAX_IO) {
    net_fail(n, LMS_ERR_INTERNAL, "network has too many layers or inputs");
    return NULL;
  }
  net_layer_t *l = &n->l[n->nl++];
  memset(l, 0, sizeof *l);
  snprintf(l->name, sizeof l->name, "%.*s", (int)sizeof l->name - 1, name);
  l->kind = kind;
  for (int i = 0; i < nin; i++) l->in[i] = in[i];
  l->nin = nin;
  l->fwd_launches = 1;
  l->w = l->dw = l->m = l->v = NO_CHUNK;
  return l;
}

/* Output size of a convolution (caffe and "same"/"valid" padding alike
 * round down); 0 when the kernel does not fit. */
static int conv_out(int x, int k, int stride, int pad) {
  if (x + 2 * pad < k) return 0;
  return (x + 2 * pad - k) / stride + 1;
}

/* Output size of a pooling: caffe rounds up, then drops a last window
 * that would start in the padding; TensorFlow rounds down. */
static int pool_out(const net_t *n, int x, int k, int stride, int pad) {
  if (x + 2 * pad < k) return 0;
  if (!n->ceil_pool) return (x + 2 * pad - k) / stride + 1;
  int o = (x + 2 * pad - k + stride - 1) / stride + 1;
  if (pad > 0 && (o - 1) * stride >= x + pad) o--;
  return o;
}

/* A layer with weights and one output: its gradient costs a weight
 * gradient and, unless its input is the network's input, a data
 * gradient, each as much as the forward pass. */
static void set_weighted(net_t *n, net_layer_t *l, int out, uint64_t params,
                         double macs_per_out) {
  double el = (double)n->t[out].elems;
  l->out[0] = out;
  l->nout = 1;
  l->params = l->trainable = params;
  l->fwd_flops = 2.0 * macs_per_out * el + el; /* + the bias */
  l->bwd_flops = l->fwd_flops * (n->t[l->in[0]].no_diff ? 1.0 : 2.0);
  l->bwd_reads = BWD_READS_IN;
}

static int conv(net_t *n, const char *name, int in, int cout, int k,
                int stride, int pad) {
  if (n->st != LMS_OK) return -1;
  net_tensor_t x = n->t[in];
  int d = n->dims == 3 ? conv_out(x.d, k, stride, pad) : 1;
  int y = net_tensor(n, name, cout, d, conv_out(x.h, k, stride, pad),
                     conv_out(x.w, k, stride, pad));
  net_layer_t *l = net_layer(n, name, L_CONV, &in, 1);
  if (l == NULL) return -1;
  l->k = k;
  l->stride = stride;
  l->pad = pad;
  uint64_t kv = kernel_volume(n, k);
  set_weighted(n, l, y, kv * (uint64_t)x.c * (uint64_t)cout + (uint64_t)cout,
               (double)kv * x.c);
  return y;
}

/* A 2x2(x2) transposed convolution of stride 2: each output element
 * gets one kernel tap from each input channel. */
static int upconv(net_t *n, const char *name, int in, int cout) {
  if (n->st != LMS_OK) return -1;
  net_tensor_t x = n->t[in];
  int y = net_tensor(n, name, cout, n->dims == 3 ? 2 * x.d : 1, 2 * x.h,
                     2 * x.w);
  net_layer_t *l = net_layer(n, name, L_UPCONV, &in, 1);
  if (l == NULL) return -1;
  set_weighted(n, l, y,
               kernel_volume(n, 2) * (uint64_t)x.c * (uint64_t)cout +
                   (uint64_t)cout,
               (double)x.c);
  return y;
}

static int fc(net_t *n, const char *name, int in, int nout) {
  if (n->st != LMS_OK) return -1;
  net_tensor_t x = n->t[in];
  uint64_t nin = (uint64_t)x.c * (uint64_t)x.d * (uint64_t)x.h * (uint64_t)x.w;
  int y = net_tensor(n, name, nout, 1, 1, 1);
  net_layer_t *l = net_layer(n, name, L_FC, &in, 1);
  if (l == NULL) return -1;
  set_weighted(n, l, y, nin * (uint64_t)nout + (uint64_t)nout, (double)nin);
  return y;
}

/* A layer without weights whose output has the input's shape (the input
 * itself when in place), costing `per_el` FLOPs an element each way. */
static int eltwise(net_t *n, const char *name, layer_kind_t kind, int in,
                   int inplace, double per_el, unsigned bwd_reads) {
  if (n->st != LMS_OK) return -1;
  net_tensor_t x = n->t[in];
  int y = inplace ? in : net_tensor(n, name, x.c, x.d, x.h, x.w);
  net_layer_t *l = net_layer(n, name, kind, &in, 1);
  if (l == NULL) return -1;
  l->out[0] = y;
  l->nout = 1;
  l->fwd_flops = l->bwd_flops = per_el * (double)n->t[y].elems;
  l->bwd_reads = bwd_reads;
  return y;
}

static int relu(net_t *n, const char *name, int in) {
  return eltwise(n, name, L_RELU, in, n->inplace, 1.0, BWD_READS_OUT);
}

/* Cross-channel LRN: a running sum of squares over the window, then a
 * power and a product, about 8 FLOPs an element. */
static int lrn(net_t *n, const char *name, int in) {
  return eltwise(n, name, L_LRN, in, 0, 8.0, BWD_READS_IN | BWD_READS_OUT);
}

/* Batch normalization in training: statistics, normalization, scale and
 * shift, about 8 FLOPs an element.  Its weights are gamma, beta and the
 * two moving averages, of which gamma and beta have gradients. */
static int bnorm(net_t *n, const char *name, int in) {
  int y = eltwise(n, name, L_BN, in, 0, 8.0, BWD_READS_IN);
  if (y < 0) return -1;
  net_layer_t *l = &n->l[n->nl - 1];
  l->params = 4u * (uint64_t)n->t[y].c;
  l->trainable = 2u * (uint64_t)n->t[y].c;
  return y;
}

static int pool(net_t *n, const char *name, layer_kind_t kind, int in, int k,
                int stride, int pad) {
  if (n->st != LMS_OK) return -1;
  net_tensor_t x = n->t[in];
  int d = n->dims == 3 ? pool_out(n, x.d, k, stride, pad) : 1;
  int y = net_tensor(n, name, x.c, d, pool_out(n, x.h, k, stride, pad),
                     pool_out(n, x.w, k, stride, pad));
  net_layer_t *l = net_layer(n, name, kind, &in, 1);
  if (l == NULL) return -1;
  l->out[0] = y;
  l->nout = 1;
  l->k = k;
  l->stride = stride;
  l->pad = pad;
  /* One comparison or addition per window element. */
  l->fwd_flops = l->bwd_flops =
      (double)kernel_volume(n, k) * (double)n->t[y].elems;
  l->bwd_reads = kind == L_MAXPOOL ? BWD_READS_IN | BWD_READS_OUT : 0;
  return y;
}

/* Concatenation along channels: a copy each way. */
static int concat(net_t *n, const char *name, const int *in, int nin) {
  if (n->st != LMS_OK) return -1;
  int c = 0;
  for (int i = 0; i < nin; i++) c += n->t[in[i]].c;
  net_tensor_t x = n->t[in[0]];
  int y = net_tensor(n, name, c, x.d, x.h, x.w);
  net_layer_t *l = net_layer(n, name, L_CONCAT, in, nin);
  if (l == NULL) return -1;
  l->out[0] = y;
  l->nout = 1;
  l->fwd_flops = l->bwd_flops = (double)n->t[y].elems;
  return y;
}

/* caffe's Split, inserted where a blob feeds several layers: the k
 * outputs share the input's data (no kernel runs forward) but each has
 * its own gradient, which the backward step sums into the input's. */
static void split(net_t *n, int in, int k, int *out) {
  if (n->st != LMS_OK) return;
  char name[2 * LMS__WL_NAME];
  snprintf(name, sizeof name, "%s_split", n->t[in].name);
  net_layer_t *l = net_layer(n, name, L_SPLIT, &in, 1);
  if (l == NULL) return;
  for (int i = 0; i < k && n->st == LMS_OK; i++) {
    net_tensor_t x = n->t[in];
    char top[2 * LMS__WL_NAME];
    snprintf(top, sizeof top, "%s_split_%d", x.name, i);
    out[i] = net_tensor(n, top, x.c, x.d, x.h, x.w);
    if (out[i] < 0) return;
    n->t[out[i]].alias = in;
    l->out[i] = out[i];
  }
  l->nout = k;
  l->fwd_launches = 0;
  l->bwd_flops = (double)(k - 1) * (double)n->t[in].elems;
}

/* ---- Lowering a network to a workload --------------------------------- */

typedef struct lower_opts {
  int train;
  int transient;      /* 1: activations and gradients are allocated at
                         first use and freed after the last (TensorFlow) */
  int adam;           /* one Adam update step per layer with weights */
  double overhead_ns; /* per step that runs a kernel */
  double flops_per_s;
  /* Training: the loss step reads loss_in and labels, and writes the
   * loss and loss_in's gradient. */
  const char *loss_name;
  int loss_in, labels;
  double loss_flops_per_el;
} lower_opts_t;

typedef struct lowering {
  const net_t *n;
  const lower_opts_t *o;
  lms__workload_t *w;
  char *err;
  double flops;
} lowering_t;

static lms_status_t lw_chunk(lowering_t *lw, uint64_t elems, int transient,
                             const char *name, const char *suffix,
                             uint32_t *id) {
  char full[2 * LMS__WL_NAME];
  snprintf(full, sizeof full, "%s%s", name, suffix);
  /* No overflow: a tensor has at most 4096 x 1024 x 1024^3 elements. */
  if (elems > LMS__WL_MAX_SIZE / F32_BYTES) {
    lms__errf(lw->err, "%s: chunk '%s' would be %llu bytes, more than the "
              "%llu a chunk may hold: use a smaller batch (now %d) or size",
              lw->w->name, full, (unsigned long long)(elems * F32_BYTES),
              (unsigned long long)LMS__WL_MAX_SIZE, lw->n->batch);
    return LMS_ERR_INVALID;
  }
  lms_status_t st =
      lms__wl_add_chunk(lw->w, elems * F32_BYTES, transient, full, id);
  if (st != LMS_OK) lms__errf(lw->err, "no host memory for chunk '%s'", full);
  return st;
}

static lms_status_t lw_step(lowering_t *lw, const char *name,
                            const char *suffix, double flops, int launches) {
  char full[2 * LMS__WL_NAME];
  snprintf(full, sizeof full, "%s%s", name, suffix);
  double ns = launches ? lw->o->overhead_ns + flops / lw->o->flops_per_s * 1e9
                       : 0.0;
  if (!(ns <= (double)LMS__WL_MAX_STEP_NS)) {
    lms__errf(lw->err, "%s: step '%s' would take %.3g s at device_flops "
              "%.4g, more than the %.0f s a step may: use a smaller batch or "
              "size or a larger device_flops", lw->w->name, full, ns / 1e9,
              lw->o->flops_per_s, (double)LMS__WL_MAX_STEP_NS / 1e9);
    return LMS_ERR_INVALID;
  }
  lms_status_t st = lms__wl_add_step(lw->w, (uint64_t)llround(ns), full);
  if (st != LMS_OK) lms__errf(lw->err, "no host memory for step '%s'", full);
  lw->flops += flops;
  return st;
}

static lms_status_t lw_ref(lowering_t *lw, uint32_t chunk, unsigned access) {
  lms_status_t st = lms__wl_add_ref(lw->w, chunk, access);
  if (st != LMS_OK) lms__errf(lw->err, "no host memory for a reference");
  return st;
}

/* The chunks of a tensor: its data unless it shares another's, and its
 * gradient in training. */
static lms_status_t lw_tensor_chunks(lowering_t *lw, net_tensor_t *t) {
  int transient = lw->o->transient;
  if (t->data == NO_CHUNK) {
    if (t->alias >= 0) {
      t->data = lw->n->t[t->alias].data;
    } else {
      LMS_CHECK(lw_chunk(lw, t->elems, transient, t->name, "", &t->data));
    }
  }
  if (lw->o->train && !t->no_diff && t->diff == NO_CHUNK)
    LMS_CHECK(lw_chunk(lw, t->elems, transient, t->name, ".diff", &t->diff));
  return LMS_OK;
}

static lms_status_t lw_forward(lowering_t *lw, net_t *n) {
  for (int i = 0; i < n->nl; i++) {
    net_layer_t *l = &n->l[i];
    LMS_CHECK(lw_step(lw, l->name, "", l->fwd_flops, l->fwd_launches));
    for (int j = 0; j < l->nin; j++)
      LMS_CHECK(lw_ref(lw, n->t[l->in[j]].data, LMS_ACCESS_READ));
    if (l->w != NO_CHUNK) {
      /* Batch normalization in training updates its moving averages. */
      unsigned a = l->kind == L_BN && lw->o->train ? LMS_ACCESS_RW
                                                    : LMS_ACCESS_READ;
      LMS_CHECK(lw_ref(lw, l->w, a));
    }
    /* An in-place output merges with the input's reference into a read
     * and write; a Split's outputs are its input's data, only read. */
    for (int j = 0; j < l->nout; j++)
      if (n->t[l->out[j]].alias < 0)
        LMS_CHECK(lw_ref(lw, n->t[l->out[j]].data, LMS_ACCESS_WRITE));
  }
  return LMS_OK;
}

static lms_status_t lw_backward(lowering_t *lw, net_t *n) {
  for (int i = n->nl - 1; i >= 0; i--) {
    net_layer_t *l = &n->l[i];
    LMS_CHECK(lw_step(lw, l->name, ".bwd", l->bwd_flops, 1));
    for (int j = 0; j < l->nout; j++) {
      net_tensor_t *y = &n->t[l->out[j]];
      if (!y->diff_written) {
        lms__errf(lw->err, "'%s' runs backward before any step wrote the "
                  "gradient of '%s'", l->name, y->name);
        return LMS_ERR_INTERNAL;
      }
      LMS_CHECK(lw_ref(lw, y->diff, LMS_ACCESS_READ));
      if (l->bwd_reads & BWD_READS_OUT)
        LMS_CHECK(lw_ref(lw, y->data, LMS_ACCESS_READ));
    }
    if (l->bwd_reads & BWD_READS_IN)
      for (int j = 0; j < l->nin; j++)
        LMS_CHECK(lw_ref(lw, n->t[l->in[j]].data, LMS_ACCESS_READ));
    if (l->w != NO_CHUNK) LMS_CHECK(lw_ref(lw, l->w, LMS_ACCESS_READ));
    if (l->dw != NO_CHUNK) LMS_CHECK(lw_ref(lw, l->dw, LMS_ACCESS_WRITE));
    /* The first step to reach an input's gradient writes it; a later one
     * (an in-place layer, or a second consumer in TensorFlow) adds to
     * it. */
    for (int j = 0; j < l->nin; j++) {
      net_tensor_t *x = &n->t[l->in[j]];
      if (x->no_diff) continue;
      LMS_CHECK(lw_ref(lw, x->diff,
                       x->diff_written ? LMS_ACCESS_RW : LMS_ACCESS_WRITE));
      x->diff_written = 1;
    }
  }
  return LMS_OK;
}

/* Adam, about 12 FLOPs a weight: moments, bias correction, update. */
static lms_status_t lw_adam(lowering_t *lw, net_t *n) {
  for (int i = 0; i < n->nl; i++) {
    net_layer_t *l = &n->l[i];
    if (l->dw == NO_CHUNK) continue;
    char name[2 * LMS__WL_NAME];
    snprintf(name, sizeof name, "adam/%s", l->name);
    LMS_CHECK(lw_step(lw, name, "", 12.0 * (double)l->trainable, 1));
    LMS_CHECK(lw_ref(lw, l->dw, LMS_ACCESS_READ));
    LMS_CHECK(lw_ref(lw, l->w, LMS_ACCESS_RW));
    LMS_CHECK(lw_ref(lw, l->m, LMS_ACCESS_RW));
    LMS_CHECK(lw_ref(lw, l->v, LMS_ACCESS_RW));
  }
  return LMS_OK;
}

static lms_status_t lw_all(lowering_t *lw, net_t *n) {
  const lower_opts_t *o = lw->o;
  /* Chunks in the order caffe and TensorFlow create them: the inputs,
   * then per layer its weights and its outputs. */
  for (int i = 0; i < n->nt; i++)
    if (n->t[i].no_diff) LMS_CHECK(lw_tensor_chunks(lw, &n->t[i]));
  for (int i = 0; i < n->nl; i++) {
    net_layer_t *l = &n->l[i];
    if (l->params > 0) {
      LMS_CHECK(lw_chunk(lw, l->params, 0, l->name, ".w", &l->w));
      if (o->train && l->trainable > 0) {
        LMS_CHECK(lw_chunk(lw, l->trainable, 0, l->name, ".w.diff", &l->dw));
        if (o->adam) {
          LMS_CHECK(lw_chunk(lw, l->trainable, 0, l->name, ".w.m", &l->m));
          LMS_CHECK(lw_chunk(lw, l->trainable, 0, l->name, ".w.v", &l->v));
        }
      }
    }
    for (int j = 0; j < l->nout; j++)
      LMS_CHECK(lw_tensor_chunks(lw, &n->t[l->out[j]]));
  }
  LMS_CHECK(lw_forward(lw, n));
  if (!o->train) return LMS_OK;

  net_tensor_t *y = &n->t[o->loss_in];
  uint32_t loss;
  LMS_CHECK(lw_chunk(lw, 1, o->transient, o->loss_name, "", &loss));
  LMS_CHECK(lw_step(lw, o->loss_name, "",
                    o->loss_flops_per_el * (double)y->elems, 1));
  LMS_CHECK(lw_ref(lw, y->data, LMS_ACCESS_READ));
  LMS_CHECK(lw_ref(lw, n->t[o->labels].data, LMS_ACCESS_READ));
  LMS_CHECK(lw_ref(lw, loss, LMS_ACCESS_WRITE));
  LMS_CHECK(lw_ref(lw, y->diff, LMS_ACCESS_WRITE));
  y->diff_written = 1;

  LMS_CHECK(lw_backward(lw, n));
  if (o->adam) LMS_CHECK(lw_adam(lw, n));
  return LMS_OK;
}

/* Writes network n into w (initialized, empty) and checks the result;
 * on failure err says why and w is left for the caller to free. */
static lms_status_t lower(net_t *n, const lower_opts_t *o,
                          lms__workload_t *w, char *err) {
  lowering_t lw = {.n = n, .o = o, .w = w, .err = err, .flops = 0.0};
  LMS_CHECK(lw_all(&lw, n));
  if (!(lw.flops < 18e18)) {
    lms__errf(err, "%s: %.3g FLOPs an iteration is more than a 64-bit "
              "count holds: use a smaller batch (now %d) or size", w->name,
              lw.flops, n->batch);
    return LMS_ERR_INVALID;
  }
  w->flops = (uint64_t)llround(lw.flops);
  w->device_flops = o->flops_per_s;
  return lms__wl_validate(w, err);
}

/* ---- Parameter checks -------------------------------------------------- */

#define WL_MAX_BATCH 4096

static lms_status_t check_common(const char *wl, const lms__wl_params_t *p,
                                 char *err) {
  if (p == NULL) {
    lms__errf(err, "%s: no parameters given", wl);
    return LMS_ERR_INVALID;
  }
  if (p->batch < 1 || p->batch > WL_MAX_BATCH) {
    lms__errf(err, "%s: batch %d is out of range; accepted: 1 to %d", wl,
              p->batch, WL_MAX_BATCH);
    return LMS_ERR_INVALID;
  }
  if (p->train != 0 && p->train != 1) {
    lms__errf(err, "%s: train %d is not accepted; accepted: 0 (forward "
              "only) or 1 (forward and backward)", wl, p->train);
    return LMS_ERR_INVALID;
  }
  if (!(p->device_flops >= 0.0) || !isfinite(p->device_flops)) {
    lms__errf(err, "%s: device_flops %g is not accepted; accepted: a finite "
              "number of FLOP/s, 0 for the workload's default", wl,
              p->device_flops);
    return LMS_ERR_INVALID;
  }
  return LMS_OK;
}

/* Lowers the built network n into out unless building it failed; frees
 * out on failure. */
static lms_status_t finish(net_t *n, const lower_opts_t *o,
                           lms__workload_t *out, char *err) {
  lms_status_t st = n->st;
  if (st == LMS_OK) st = lower(n, o, out, err);
  if (st != LMS_OK) lms__wl_free(out);
  return st;
}

/* ---- GoogLeNet in caffe ------------------------------------------------ */

/* Note [GoogLeNet blob memory and the published figures]
 *
 * The net is BVLC GoogLeNet's deploy.prototxt unchanged, at S x S input
 * (S = 1200 in the scenario).  Pooling rounds up, as caffe does; conv1
 * gives 600 x 600, pool1 300, pool2 150, pool3 75, pool4 37.  pool5 is
 * the deploy net's 7x7 stride-1 average pooling, which caffe does not
 * adapt to the input: at 1200 it leaves 1024 x 31 x 31, and
 * loss3/classifier has 984,064 inputs and 3.94 GB of weights.
 *
 * The published "Memory required for data" (17.3 MB at the input, 1.59 GB
 * at the end for batch 1; 172.8 MB and 15.84 GB for batch 10) is caffe's
 * Net::Init count: the input plus every top of every layer, in-place
 * tops (ReLU, Dropout) and the tops of the Split layers caffe inserts
 * before each inception module included, although those share their
 * bottom's data.  That count for this net is 1.588 GB at batch 1 (the
 * published 1.59) and 15.88 GB at batch 10 (0.25 % above the published
 * 15.84).  With global average pooling at pool5 instead it would be 1.580
 * GB and 15.80 GB: batch 10 is as close either way, batch 1 rounds to the
 * published figure only with the deploy net's 7x7 pooling, so that is the
 * one built.  The test suite recomputes caffe's count from the steps.
 *
 * The chunks are what caffe allocates: the input and each top that is
 * neither in place nor a Split's (0.787 GB an image), the weights as one
 * chunk a layer (3.96 GB, nearly all of it the classifier) and, in
 * training, a gradient beside each of them and beside each Split top.
 * Caffe keeps every blob for the whole run, so every chunk is
 * persistent.  The input's gradient is left out: no layer computes it,
 * and caffe allocates a gradient only when something touches it.
 * Internal buffers (max pooling's argmax, LRN's scale, Dropout's mask)
 * are left out too; a backward step reads the data they stand for instead
 * (max pooling reads its input and output).
 *
 * Training replaces the deploy net's final Softmax ("prob") with one
 * SoftmaxWithLoss step between the forward and backward passes, and has
 * no solver update: it is the forward-backward pass `caffe time` runs.
 *
 * Limitation: the forward workload at batch 10 holds 11.8 GB (7.87 GB of
 * blobs and the weights), which fits a 16 GB P100, whereas the scenario
 * reports batch 10 out of memory without LMS.  The `caffe time` of that
 * era ran every layer's Backward after the timed forward pass, which
 * allocates gradients; the training workload (27.8 GB at batch 10) is
 * the one that does not fit. */

/* Note [GoogLeNet timing calibration]
 *
 * A step takes overhead + flops / device_flops, and a forward Split
 * (pointer sharing, no kernel) takes nothing.  FLOPs: 2 per multiply-add
 * in convolutions and the classifier, plus one per output for the bias;
 * one per window element in pooling; 8 an element for LRN; 1 for ReLU,
 * Dropout and concatenation; 5 for Softmax.  Backward costs as much as
 * forward, twice for layers with weights (data and weight gradient),
 * except conv1, whose input needs no gradient; a Split's backward sums
 * its k gradients, k - 1 FLOPs an element.
 *
 * The two unknowns come from the two published forward times of the
 * deploy net at 1200 x 1200 on the P100: 45.4 ms at batch 1 and 263.5 ms
 * at batch 10 (run with -lms 160000000, which swaps almost nothing, so
 * taken as the in-memory time).  With N steps that run a kernel and F(b)
 * forward FLOPs at batch b, 45.4 ms = N o + F(1) / D and 263.5 ms = N o +
 * F(10) / D; googlenet_calibrate() solves them on the network it builds,
 * giving o = 149 us for each of the 142 steps and D = 3.85 TFLOP/s for
 * F(1) = 93.4 GFLOPs (the P100's fp32 peak is 9.3-10.6 TFLOP/s).  The
 * large overhead stands for what a batch of one leaves of the GPU idle.
 * Backward steps and the loss step take the same o; a device_flops
 * parameter replaces D and keeps o.  Counting FLOPs undercounts the
 * memory-bound layers (pooling, LRN, ReLU); the calibration folds that
 * into o and D for the forward pass as a whole. */

#define GN_DEFAULT_SIZE 1200
/* pool5's 7x7 window needs pool4 to leave 7x7, which takes 224 x 224. */
#define GN_MIN_SIZE 224
#define GN_MAX_SIZE 4096
#define GN_CAL_SIZE 1200
#define GN_CAL_T1_NS 45.4e6
#define GN_CAL_T10_NS 263.5e6

static void nm(char *buf, size_t len, const char *a, const char *b) {
  snprintf(buf, len, "%s/%s", a, b);
}

static int inception(net_t *n, const char *m, int in, int c1, int c3r,
                     int c3, int c5r, int c5, int cp) {
  char b[2 * LMS__WL_NAME];
  int s[4] = {-1, -1, -1, -1}, br[4];
  split(n, in, 4, s);
  if (n->st != LMS_OK) return -1;
  nm(b, sizeof b, m, "1x1");
  br[0] = conv(n, b, s[0], c1, 1, 1, 0);
  nm(b, sizeof b, m, "relu_1x1");
  br[0] = relu(n, b, br[0]);
  nm(b, sizeof b, m, "3x3_reduce");
  br[1] = conv(n, b, s[1], c3r, 1, 1, 0);
  nm(b, sizeof b, m, "relu_3x3_reduce");
  br[1] = relu(n, b, br[1]);
  nm(b, sizeof b, m, "3x3");
  br[1] = conv(n, b, br[1], c3, 3, 1, 1);
  nm(b, sizeof b, m, "relu_3x3");
  br[1] = relu(n, b, br[1]);
  nm(b, sizeof b, m, "5x5_reduce");
  br[2] = conv(n, b, s[2], c5r, 1, 1, 0);
  nm(b, sizeof b, m, "relu_5x5_reduce");
  br[2] = relu(n, b, br[2]);
  nm(b, sizeof b, m, "5x5");
  br[2] = conv(n, b, br[2], c5, 5, 1, 2);
  nm(b, sizeof b, m, "relu_5x5");
  br[2] = relu(n, b, br[2]);
  nm(b, sizeof b, m, "pool");
  br[3] = pool(n, b, L_MAXPOOL, s[3], 3, 1, 1);
  nm(b, sizeof b, m, "pool_proj");
  br[3] = conv(n, b, br[3], cp, 1, 1, 0);
  nm(b, sizeof b, m, "relu_pool_proj");
  br[3] = relu(n, b, br[3]);
  if (n->st != LMS_OK) return -1;
  nm(b, sizeof b, m, "output");
  return concat(n, b, br, 4);
}

/* The deploy net, in prototxt order; in training without "prob".
 * Returns the classifier's output. */
static int googlenet_net(net_t *n, int size, int train) {
  int x = net_tensor(n, "data", 3, 1, size, size);
  if (x < 0) return -1;
  n->t[x].no_diff = 1;
  x = conv(n, "conv1/7x7_s2", x, 64, 7, 2, 3);
  x = relu(n, "conv1/relu_7x7", x);
  x = pool(n, "pool1/3x3_s2", L_MAXPOOL, x, 3, 2, 0);
  x = lrn(n, "pool1/norm1", x);
  x = conv(n, "conv2/3x3_reduce", x, 64, 1, 1, 0);
  x = relu(n, "conv2/relu_3x3_reduce", x);
  x = conv(n, "conv2/3x3", x, 192, 3, 1, 1);
  x = relu(n, "conv2/relu_3x3", x);
  x = lrn(n, "conv2/norm2", x);
  x = pool(n, "pool2/3x3_s2", L_MAXPOOL, x, 3, 2, 0);
  x = inception(n, "inception_3a", x, 64, 96, 128, 16, 32, 32);
  x = inception(n, "inception_3b", x, 128, 128, 192, 32, 96, 64);
  x = pool(n, "pool3/3x3_s2", L_MAXPOOL, x, 3, 2, 0);
  x = inception(n, "inception_4a", x, 192, 96, 208, 16, 48, 64);
  x = inception(n, "inception_4b", x, 160, 112, 224, 24, 64, 64);
  x = inception(n, "inception_4c", x, 128, 128, 256, 24, 64, 64);
  x = inception(n, "inception_4d", x, 112, 144, 288, 32, 64, 64);
  x = inception(n, "inception_4e", x, 256, 160, 320, 32, 128, 128);
  x = pool(n, "pool4/3x3_s2", L_MAXPOOL, x, 3, 2, 0);
  x = inception(n, "inception_5a", x, 256, 160, 320, 32, 128, 128);
  x = inception(n, "inception_5b", x, 384, 192, 384, 48, 128, 128);
  x = pool(n, "pool5/7x7_s1", L_AVEPOOL, x, 7, 1, 0);
  x = eltwise(n, "pool5/drop_7x7_s1", L_DROPOUT, x, 1, 1.0, 0);
  x = fc(n, "loss3/classifier", x, 1000);
  if (!train) eltwise(n, "prob", L_SOFTMAX, x, 0, 5.0, BWD_READS_OUT);
  return n->st == LMS_OK ? x : -1;
}

/* Solves Note [GoogLeNet timing calibration] for the per-step overhead
 * (ns) and the device speed (FLOP/s). */
static lms_status_t googlenet_calibrate(net_t *n, double *overhead_ns,
                                        double *flops_per_s, char *err) {
  static const int batch[2] = {1, 10};
  double flops[2] = {0.0, 0.0};
  int launches = 0;
  for (int i = 0; i < 2; i++) {
    net_init(n, 2, batch[i], err);
    if (googlenet_net(n, GN_CAL_SIZE, 0) < 0) return n->st;
    launches = 0;
    for (int j = 0; j < n->nl; j++) {
      flops[i] += n->l[j].fwd_flops;
      launches += n->l[j].fwd_launches;
    }
  }
  double d = (flops[1] - flops[0]) / ((GN_CAL_T10_NS - GN_CAL_T1_NS) / 1e9);
  double o = (GN_CAL_T1_NS - flops[0] / d * 1e9) / launches;
  if (!(d > 0.0) || !(o > 0.0)) {
    lms__errf(err, "googlenet: calibration gave %g FLOP/s and %g ns a step",
              d, o);
    return LMS_ERR_INTERNAL;
  }
  *overhead_ns = o;
  *flops_per_s = d;
  return LMS_OK;
}

lms_status_t lms__net_googlenet(const lms__wl_params_t *p, net_t *n,
                                lms__workload_t *out, int *loss_in,
                                int *labels, char *err) {
  char scratch[LMS__ERRBUF];
  if (err == NULL) err = scratch;
  lms__wl_init(out, NULL);
  if (loss_in) *loss_in = -1;
  if (labels) *labels = -1;
  LMS_CHECK(check_common("googlenet", p, err));
  int size = p->size ? p->size : GN_DEFAULT_SIZE;
  if (size < GN_MIN_SIZE || size > GN_MAX_SIZE) {
    lms__errf(err, "googlenet: size %d is out of range; accepted: %d to %d "
              "(0 for %d): pool5's 7x7 window needs at least %d", p->size,
              GN_MIN_SIZE, GN_MAX_SIZE, GN_DEFAULT_SIZE, GN_MIN_SIZE);
    return LMS_ERR_INVALID;
  }
  lower_opts_t o = {.train = p->train, .loss_name = "loss3/loss3",
                    .loss_flops_per_el = 10.0, .labels = -1};
  LMS_CHECK(googlenet_calibrate(n, &o.overhead_ns, &o.flops_per_s, err));
  if (p->device_flops > 0.0) o.flops_per_s = p->device_flops;
  net_init(n, 2, p->batch, err);
  o.loss_in = googlenet_net(n, size, p->train);
  if (p->train) {
    o.labels = net_tensor(n, "label", 1, 1, 1, 1);
    if (o.labels >= 0) n->t[o.labels].no_diff = 1;
  }
  char name[64];
  snprintf(name, sizeof name, "googlenet-%d-b%d-%s", size, p->batch,
           p->train ? "train" : "fwd");
  lms__wl_init(out, name);
  LMS_CHECK(finish(n, &o, out, err));
  if (loss_in) *loss_in = p->train ? o.loss_in : -1;
  if (labels) *labels = o.labels;
  return LMS_OK;
}

static lms_status_t build_googlenet(const lms__wl_params_t *p,
                                    lms__workload_t *out, char *err) {
  net_t *n = malloc(sizeof *n);
  if (n == NULL) {
    lms__wl_init(out, NULL);
    if (err) lms__errf(err, "googlenet: no host memory to describe the network");
    return LMS_ERR_HOST_OOM;
  }
  lms_status_t st = lms__net_googlenet(p, n, out, NULL, NULL, err);
  free(n);
  return st;
}

/* ---- The 3D U-Net in TensorFlow ---------------------------------------- */

/* Note [U-Net model]
 *
 * The 3D U-Net of Cicek et al. (2016) as the TFLMS study trained it on
 * BraTS: input 4 x S^3 (four MRI modalities), four levels of two 3x3x3
 * "same" convolutions (32/64, 64/128, 128/256, 256/512 channels), each
 * followed by batch normalization and ReLU, 2x2x2 max pooling between
 * levels; on the way up a 2x2x2 transposed convolution keeping the
 * channels, concatenation with the skip connection, and two convolutions
 * with the skip's channel count (256, 128, 64); then a 1x1x1 convolution
 * to 3 classes, a sigmoid, and the loss against 3 x S^3 labels.  Training
 * uses Adam, whose two moments per weight are modelled.  Forward only
 * (train 0) is inference: the forward steps, batch norm reading its
 * moving averages.
 *
 * TensorFlow allocates a tensor when an op produces it and frees it after
 * its last use, so activations, labels and gradients are transient and
 * their lifetimes follow from the steps: what each backward step reads is
 * what TensorFlow's gradient of that op takes.  A convolution's gradient
 * reads its input and weights, batch normalization's its input (the
 * convolution's output), ReLU's and the sigmoid's their output, max
 * pooling's its input and output, a concatenation's nothing but the
 * gradient.  Nothing else is kept: a batch-norm output dies at the ReLU
 * after it, and a transposed convolution's output at the concatenation.
 * A tensor feeding two ops (each level's last ReLU: the pooling and the
 * skip connection) gets its gradient written by the first backward step
 * and added to by the second, standing for TensorFlow's partial gradients
 * and their sum.  Weights, their gradients and Adam's moments are
 * persistent.
 *
 * That model holds 877 floats a voxel (of the input resolution, batch 1)
 * at the end of the forward pass and peaks at 996 in the first backward
 * steps of the top level, when the gradients of its 64-channel tensors
 * join them: 11.2 GiB at 144^3 and 26.3 GiB at 192^3, matching the
 * published result that 144^3 trains on a 16 GB V100 and 192^3 does not
 * without LMS.  160^3 comes to 15.3 GiB, inside 16 GiB by less than the
 * CUDA context, cuDNN's workspaces, the allocator's fragmentation and the
 * temporaries of a non-fused 3-D batch norm (none modelled) take; the
 * model does not decide whether it fits. */

/* Note [U-Net device model]
 *
 * A V100 (fp32 peak 15.7 TFLOP/s) at an assumed 50 % efficiency for
 * cuDNN's 3-D convolutions: 7.85 TFLOP/s, and 20 us of launch and
 * framework overhead a step.  These are not calibrated: CONTEXT.md gives
 * epoch times but not the number of steps in an epoch.  FLOPs are counted
 * as for GoogLeNet (Note [GoogLeNet timing calibration]), with 8 an
 * element for batch norm, 4 for the sigmoid, 10 for the Dice loss and 12
 * a weight for the Adam update. */

#define UN_DEFAULT_SIZE 192
#define UN_MIN_SIZE 16
#define UN_MAX_SIZE 1024
#define UN_PEAK_FLOPS 15.7e12
#define UN_EFFICIENCY 0.5
#define UN_OVERHEAD_NS 20e3

static int conv_bn_relu(net_t *n, const char *level, const char *which,
                        int in, int cout) {
  char b[2 * LMS__WL_NAME];
  snprintf(b, sizeof b, "%s/conv_%s", level, which);
  int x = conv(n, b, in, cout, 3, 1, 1);
  snprintf(b, sizeof b, "%s/bn_%s", level, which);
  x = bnorm(n, b, x);
  snprintf(b, sizeof b, "%s/relu_%s", level, which);
  return relu(n, b, x);
}

/* Returns the sigmoid's output. */
static int unet_net(net_t *n, int size) {
  static const int ch[4][2] = {{32, 64}, {64, 128}, {128, 256}, {256, 512}};
  char level[16], b[2 * LMS__WL_NAME];
  int skip[4];
  int x = net_tensor(n, "input", 4, size, size, size);
  if (x < 0) return -1;
  n->t[x].no_diff = 1;
  for (int i = 0; i < 4; i++) {
    snprintf(level, sizeof level, "down%d", i + 1);
    x = conv_bn_relu(n, level, "a", x, ch[i][0]);
    x = conv_bn_relu(n, level, "b", x, ch[i][1]);
    skip[i] = x;
    if (i < 3) {
      snprintf(b, sizeof b, "%s/pool", level);
      x = pool(n, b, L_MAXPOOL, x, 2, 2, 0);
    }
  }
  for (int i = 2; i >= 0 && n->st == LMS_OK; i--) {
    snprintf(level, sizeof level, "up%d", i + 1);
    snprintf(b, sizeof b, "%s/upconv", level);
    int cat[2] = {upconv(n, b, x, n->t[x].c), skip[i]};
    if (n->st != LMS_OK) break;
    snprintf(b, sizeof b, "%s/concat", level);
    x = concat(n, b, cat, 2);
    x = conv_bn_relu(n, level, "a", x, ch[i][1]);
    x = conv_bn_relu(n, level, "b", x, ch[i][1]);
  }
  x = conv(n, "final/conv", x, 3, 1, 1, 0);
  x = eltwise(n, "final/sigmoid", L_SIGMOID, x, 0, 4.0, BWD_READS_OUT);
  return n->st == LMS_OK ? x : -1;
}

static lms_status_t build_unet3d(const lms__wl_params_t *p,
                                 lms__workload_t *out, char *err) {
  char scratch[LMS__ERRBUF];
  if (err == NULL) err = scratch;
  lms__wl_init(out, NULL);
  LMS_CHECK(check_common("unet3d", p, err));
  int size = p->size ? p->size : UN_DEFAULT_SIZE;
  if (size < UN_MIN_SIZE || size > UN_MAX_SIZE || size % 16 != 0) {
    lms__errf(err, "unet3d: size %d is not accepted; accepted: a multiple of "
              "16 from %d to %d (0 for %d)", p->size, UN_MIN_SIZE,
              UN_MAX_SIZE, UN_DEFAULT_SIZE);
    return LMS_ERR_INVALID;
  }
  net_t *n = malloc(sizeof *n);
  if (n == NULL) {
    lms__errf(err, "unet3d: no host memory to describe the network");
    return LMS_ERR_HOST_OOM;
  }
  lower_opts_t o = {.train = p->train, .transient = 1, .adam = 1,
                    .overhead_ns = UN_OVERHEAD_NS,
                    .flops_per_s = p->device_flops > 0.0
                                       ? p->device_flops
                                       : UN_PEAK_FLOPS * UN_EFFICIENCY,
                    .loss_name = "loss", .loss_flops_per_el = 10.0};
  net_init(n, 3, p->batch, err);
  o.loss_in = unet_net(n, size);
  if (p->train) {
    o.labels = net_tensor(n, "labels", 3, size, size, size);
    if (o.labels >= 0) n->t[o.labels].no_diff = 1;
  }
  char name[64];
  snprintf(name, sizeof name, "unet3d-%d-b%d-%s", size, p->batch,
           p->train ? "train" : "fwd");
  lms__wl_init(out, name);
  lms_status_t st = finish(n, &o, out, err);
  free(n);
  return st;
}

/* ---- The table --------------------------------------------------------- */

const lms__wl_builtin_t lms__wl_builtins[] = {
    {"googlenet",
     "BVLC GoogLeNet deploy net in caffe, 1200x1200 input, on a P100 "
     "(calibrated); every blob persistent",
     build_googlenet},
    {"unet3d",
     "3D U-Net (BraTS, 4 channels, 192^3) trained in TensorFlow on a V100; "
     "activations freed after last use",
     build_unet3d},
    {NULL, NULL, NULL},
};

const lms__wl_builtin_t *lms__wl_find_builtin(const char *name) {
  if (name == NULL) return NULL;
  for (const lms__wl_builtin_t *b = lms__wl_builtins; b->name != NULL; b++)
    if (strcmp(b->name, name) == 0) return b;
  return NULL;
}

/* ---- Peak live bytes --------------------------------------------------- */

/* Note [Peak live bytes]
 *
 * Persistent chunks are live throughout; a transient chunk is live from
 * the start of the first step that names it to the end of the last, so
 * the peak is the largest sum over a step of the chunks live during it.
 * The sweep needs each transient chunk's first and last step; with the
 * memory for those tables it is linear.  The function cannot fail, so
 * when that memory cannot be had it falls back to deciding, reference by
 * reference, whether this is the chunk's first or last use by scanning
 * the other references: quadratic in their number, but exact. */

static uint64_t peak_fallback(const lms__workload_t *w, uint64_t base) {
  uint64_t live = base, peak = base;
  for (uint32_t s = 0; s < w->nsteps; s++) {
    const lms__wl_step_t *st = &w->steps[s];
    for (uint32_t i = st->first_ref; i < st->first_ref + st->nrefs; i++) {
      uint32_t c = w->refs[i].chunk;
      if (c >= w->nchunks || !w->chunks[c].transient) continue;
      int first = 1;
      for (uint32_t j = 0; j < st->first_ref && first; j++)
        first = w->refs[j].chunk != c;
      if (first) live += w->chunks[c].size;
    }
    if (live > peak) peak = live;
    for (uint32_t i = st->first_ref; i < st->first_ref + st->nrefs; i++) {
      uint32_t c = w->refs[i].chunk;
      if (c >= w->nchunks || !w->chunks[c].transient) continue;
      int last = 1;
      for (uint32_t j = st->first_ref + st->nrefs; j < w->nrefs && last; j++)
        last = w->refs[j].chunk != c;
      if (last) live -= w->chunks[c].size;
    }
  }
  return peak;
}

uint64_t lms__wl_peak_live_bytes(const lms__workload_t *w) {
  uint64_t base = 0;
  for (uint32_t i = 0; i < w->nchunks; i++)
    if (!w->chunks[i].transient) base += w->chunks[i].size;
  if (w->nsteps == 0) return base;

  uint32_t *last = malloc((size_t)(w->nchunks ? w->nchunks : 1) *
                          sizeof *last);
  /* born[s]: bytes that become live at step s; dies[s]: after it. */
  uint64_t *born = calloc((size_t)w->nsteps * 2, sizeof *born);
  if (last == NULL || born == NULL) {
    free(last);
    free(born);
    return peak_fallback(w, base);
  }
  uint64_t *dies = born + w->nsteps;
  for (uint32_t i = 0; i < w->nchunks; i++) last[i] = UINT32_MAX;
  for (uint32_t s = 0; s < w->nsteps; s++) {
    const lms__wl_step_t *st = &w->steps[s];
    for (uint32_t i = st->first_ref; i < st->first_ref + st->nrefs; i++) {
      uint32_t c = w->refs[i].chunk;
      if (c >= w->nchunks || !w->chunks[c].transient) continue;
      if (last[c] == UINT32_MAX) born[s] += w->chunks[c].size;
      last[c] = s;
    }
  }
  for (uint32_t i = 0; i < w->nchunks; i++)
    if (last[i] != UINT32_MAX) dies[last[i]] += w->chunks[i].size;
  uint64_t live = base, peak = base;
  for (uint32_t s = 0; s < w->nsteps; s++) {
    live += born[s];
    if (live > peak) peak = live;
    live -= dies[s];
  }
  free(last);
  free(born);
  return peak;
}
