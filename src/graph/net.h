/* net.h - the built-in networks as layers and tensors, before they are
 * lowered to workloads (workloads.c).
 *
 * workloads.c describes each source network once, as layers reading and
 * writing float32 tensors, and lowers it to chunks and steps.  The same
 * description is what `lms bench net` runs on cuDNN and cuBLAS, so that
 * the program measured on a GPU and the workload the simulator replays
 * are one network: lms__net_googlenet() returns both, the chunk of each
 * tensor and weight set in the network (data, diff, w, dw) and one step
 * per layer forward, a loss step in training, and one step per layer
 * backward in reverse order.
 *
 * Invariants: tensors are NCHW (NCDHW in 3-D), batch-major; a weighted
 * layer's chunk holds its filter (or matrix) first and its bias after it;
 * a Split's outputs share their input's data; an in-place layer's output
 * is its input. */
#ifndef LMS_GRAPH_NET_H
#define LMS_GRAPH_NET_H

#include "graph/graph.h"

/* Every tensor here is float32. */
#define F32_BYTES 4u

#define NET_MAX_TENSORS 320
#define NET_MAX_LAYERS 256
/* The most inputs or outputs of one layer: GoogLeNet's concatenations
 * and splits have four. */
#define NET_MAX_IO 4

#define NO_CHUNK UINT32_MAX

/* ---- A network of layers and tensors ---------------------------------- */

typedef enum layer_kind {
  L_CONV,
  L_UPCONV, /* 2x2x2 transposed convolution, stride 2 */
  L_FC,
  L_MAXPOOL,
  L_AVEPOOL,
  L_LRN,
  L_BN,
  L_RELU,
  L_SIGMOID,
  L_DROPOUT,
  L_CONCAT,
  L_SPLIT, /* caffe's Split: outputs share the input's data */
  L_SOFTMAX
} layer_kind_t;

/* What a layer's backward step reads besides its output's gradient. */
#define BWD_READS_IN 1u  /* the input data */
#define BWD_READS_OUT 2u /* the output data */

typedef struct net_tensor {
  char name[LMS__WL_NAME];
  int c, d, h, w;  /* per image; d = 1 in a 2-D network */
  uint64_t elems;  /* over the whole batch */
  int alias;       /* -1, or the tensor whose data this one shares */
  int no_diff;     /* the network's input and the labels: no gradient */
  uint32_t data;   /* chunks, set by lower() */
  uint32_t diff;
  int diff_written; /* lower(): a backward step has written the diff */
} net_tensor_t;

typedef struct net_layer {
  char name[LMS__WL_NAME];
  layer_kind_t kind;
  int in[NET_MAX_IO], nin;
  int out[NET_MAX_IO], nout; /* an in-place layer has out[0] == in[0] */
  uint64_t params;           /* weight elements, bias included; 0: none */
  uint64_t trainable;        /* of those, the ones with a gradient */
  double fwd_flops, bwd_flops;
  unsigned bwd_reads;
  int fwd_launches; /* 0: the forward pass runs no kernel (Split) */
  /* Geometry of a convolution or pooling (square windows), for the
   * programs that run the network (`lms bench net`). */
  int k, stride, pad;
  uint32_t w, dw, m, v; /* weights, gradient, Adam's two moments */
} net_layer_t;

typedef struct net {
  int dims;      /* 2: images (c, h, w); 3: volumes (c, d, h, w) */
  int batch;
  int ceil_pool; /* caffe rounds pooled sizes up, TensorFlow down */
  int inplace;   /* caffe runs ReLU in place */
  lms_status_t st; /* the first failure; later calls then do nothing */
  char *err;
  int nt, nl;
  net_tensor_t t[NET_MAX_TENSORS];
  net_layer_t l[NET_MAX_LAYERS];
} net_t;

/* GoogLeNet (Note [GoogLeNet blob memory and the published figures] in
 * workloads.c) as network n and as workload out (p->size 0: 1200).  In
 * training *loss_in is the classifier's output and *labels the label
 * tensor (-1 otherwise).  On failure err says why and out is empty. */
lms_status_t lms__net_googlenet(const lms__wl_params_t *p, net_t *n,
                                lms__workload_t *out, int *loss_in,
                                int *labels, char *err);

/* Step indices of layer i of n in its lowered workload. */
static inline uint32_t lms__net_fwd_step(const net_t *n, int i) {
  (void)n;
  return (uint32_t)i;
}
static inline uint32_t lms__net_bwd_step(const net_t *n, int i) {
  return (uint32_t)(n->nl + 1 + (n->nl - 1 - i));
}

#endif
