/* framework.c - the public API for memory a framework owns (lms.h,
 * "autograd mode"): saved tensors copied into host-homed chunks, read back
 * through ordinary acquires, and handed to the framework as DLPack
 * tensors whose deleter ends the acquire.
 *
 * Invariant: a DLPack tensor made here holds exactly one acquire of its
 * chunk, released by its deleter and by nothing else, so the chunk's
 * device copy cannot move while the framework can still read it. */
#include <stdlib.h>
#include <string.h>

#include "api/ctx.h"
#include "core/log.h"

int lms_offload_wanted(const lms_ctx_t *ctx, uint64_t size, uint64_t in_use,
                       uint64_t capacity) {
  if (ctx == NULL) return 0;
  lms__placement_t p = ctx->swap.placement;
  if (capacity != 0) p.capacity = capacity;
  return lms__place_on_host(&p, size, in_use);
}

lms_status_t lms_alloc_copy(lms_ctx_t *ctx, const void *src, size_t size,
                            lms_stream_t stream, lms_chunk_t **out) {
  if (ctx == NULL) return LMS_ERR_INVALID;
  if (out == NULL || src == NULL || stream == NULL) {
    lms__errf(ctx->err, "lms_alloc_copy: src, stream and out must not be "
              "NULL");
    return LMS_ERR_INVALID;
  }
  *out = NULL;
  pthread_mutex_lock(&ctx->lock);
  lms_status_t st = LMS_OK;
  if (!ctx->explicit_steps) st = lms__plan_acquire_step(ctx->plan);
  lms_chunk_t *c = NULL;
  if (st == LMS_OK)
    st = lms__swap_alloc_copy(&ctx->swap, src, size, stream, &c);
  if (st == LMS_OK && lms__plan_on_alloc(ctx->plan, c) != LMS_OK) {
    lms__swap_free(&ctx->swap, c);
    st = LMS_ERR_HOST_OOM;
    lms__errf(ctx->err, "lms_alloc_copy: no host memory for the planner's "
              "entry");
  } else if (st == LMS_OK) {
    lms__plan_on_acquire(ctx->plan, c,
                         LMS_ACCESS_WRITE | LMS_ACCESS_OVERWRITE);
    *out = c;
  }
  pthread_mutex_unlock(&ctx->lock);
  return st;
}

/* Takes ctx's lock and returns LMS_OK, the lock held, if chunk is live;
 * otherwise returns LMS_ERR_INVALID without the lock, having said so in
 * the context's last error as fn. */
static lms_status_t lock_live_chunk(lms_ctx_t *ctx, lms_chunk_t *chunk,
                                    const char *fn) {
  if (ctx == NULL) return LMS_ERR_INVALID;
  pthread_mutex_lock(&ctx->lock);
  if (lms__swap_is_chunk(chunk)) return LMS_OK;
  lms__errf(ctx->err, "%s: not a live chunk", fn);
  pthread_mutex_unlock(&ctx->lock);
  return LMS_ERR_INVALID;
}

lms_status_t lms_chunk_query(lms_ctx_t *ctx, lms_chunk_t *chunk) {
  lms_status_t st = lock_live_chunk(ctx, chunk, "lms_chunk_query");
  if (st != LMS_OK) return st;
  st = lms__swap_query(&ctx->swap, chunk);
  pthread_mutex_unlock(&ctx->lock);
  return st;
}

lms_status_t lms_free_when_released(lms_ctx_t *ctx, lms_chunk_t *chunk) {
  lms_status_t st = lock_live_chunk(ctx, chunk, "lms_free_when_released");
  if (st != LMS_OK) return st;
  if (chunk->pins > 0) {
    chunk->free_on_release = 1;
  } else {
    lms__plan_on_free(ctx->plan, chunk);
    st = lms__swap_free(&ctx->swap, chunk);
  }
  pthread_mutex_unlock(&ctx->lock);
  return st;
}

lms_status_t lms_trace_compute(lms_ctx_t *ctx, uint64_t ns) {
  if (ctx == NULL) return LMS_ERR_INVALID;
  pthread_mutex_lock(&ctx->lock);
  lms__plan_on_compute(ctx->plan, ns);
  pthread_mutex_unlock(&ctx->lock);
  return LMS_OK;
}

/* ---- DLPack ------------------------------------------------------------ */

/* The DLPack 0.x ABI, as its specification lays it out. */
enum { DL_CPU = 1, DL_CUDA = 2 };

typedef struct dl_device {
  int32_t device_type;
  int32_t device_id;
} dl_device_t;

typedef struct dl_dtype {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} dl_dtype_t;

typedef struct dl_tensor {
  void *data;
  dl_device_t device;
  int32_t ndim;
  dl_dtype_t dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
} dl_tensor_t;

typedef struct dl_managed {
  dl_tensor_t dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct dl_managed *self);
} dl_managed_t;

typedef struct dl_owner {
  dl_managed_t m; /* first: the deleter finds the owner by its address */
  lms_ctx_t *ctx;
  lms_chunk_t *chunk;
  lms_stream_t stream;
  int64_t shape[LMS_TENSOR_MAX_DIMS];
  int64_t strides[LMS_TENSOR_MAX_DIMS];
} dl_owner_t;

static void dl_delete(dl_managed_t *m) {
  dl_owner_t *o = (dl_owner_t *)(void *)m;
  lms_status_t st = lms_release(o->ctx, o->chunk, o->stream);
  if (st != LMS_OK)
    LMS_LOG(ERROR, CORE, "a DLPack tensor's release failed: %s",
            lms_ctx_last_error(o->ctx));
  free(o);
}

/* The bytes the tensor reaches from its first element, or a message. */
static const char *desc_extent(const lms_tensor_desc_t *d, uint64_t *bytes) {
  if (d->ndim < 0 || d->ndim > LMS_TENSOR_MAX_DIMS)
    return "ndim must be 0 to 16";
  static const uint8_t codes[] = {0, 1, 2, 4, 5, 6};
  int code_ok = 0;
  for (size_t i = 0; i < sizeof codes; i++) code_ok |= d->dtype_code == codes[i];
  uint8_t b = d->dtype_bits;
  if (!code_ok || !(b == 8 || b == 16 || b == 32 || b == 64 || b == 128))
    return "dtype must be DLPack's int, uint, float, bfloat, complex or bool "
           "of 8 to 128 bits";
  uint64_t last = 0; /* the offset of the last element, in elements */
  for (int i = 0; i < d->ndim; i++) {
    if (d->shape[i] < 0 || d->strides[i] < 0)
      return "shape and strides must not be negative";
    if (d->shape[i] == 0) {
      *bytes = 0;
      return NULL;
    }
    uint64_t step;
    if (__builtin_mul_overflow((uint64_t)(d->shape[i] - 1),
                               (uint64_t)d->strides[i], &step) ||
        __builtin_add_overflow(last, step, &last))
      return "shape times strides overflows";
  }
  uint64_t elem = b / 8u;
  if (__builtin_add_overflow(last, 1, &last) ||
      __builtin_mul_overflow(last, elem, bytes))
    return "shape times strides overflows";
  return NULL;
}

lms_status_t lms_acquire_dlpack(lms_ctx_t *ctx, lms_chunk_t *chunk,
                                lms_stream_t stream,
                                const lms_tensor_desc_t *desc,
                                void **managed) {
  if (ctx == NULL) return LMS_ERR_INVALID;
  if (desc == NULL || managed == NULL) {
    lms__errf(ctx->err, "lms_acquire_dlpack: desc and managed must not be "
              "NULL");
    return LMS_ERR_INVALID;
  }
  *managed = NULL;
  if (!lms__swap_is_chunk(chunk)) {
    lms__errf(ctx->err, "lms_acquire_dlpack: not a live chunk");
    return LMS_ERR_INVALID;
  }
  uint64_t extent = 0, end;
  const char *bad = desc_extent(desc, &extent);
  if (bad == NULL && (__builtin_add_overflow(desc->byte_offset, extent, &end) ||
                      (extent > 0 && end > chunk->size)))
    bad = "the tensor reaches past the chunk's bytes";
  if (bad != NULL) {
    lms__errf(ctx->err, "lms_acquire_dlpack: %s (chunk of %zu bytes)", bad,
              chunk->size);
    return LMS_ERR_INVALID;
  }
  dl_owner_t *o = calloc(1, sizeof *o);
  if (o == NULL) {
    lms__errf(ctx->err, "lms_acquire_dlpack: no host memory");
    return LMS_ERR_HOST_OOM;
  }
  void *dptr = NULL;
  lms_status_t st = lms_acquire(ctx, chunk, stream, LMS_ACCESS_READ, &dptr);
  if (st != LMS_OK) {
    free(o);
    return st;
  }
  o->ctx = ctx;
  o->chunk = chunk;
  o->stream = stream;
  memcpy(o->shape, desc->shape, sizeof o->shape);
  memcpy(o->strides, desc->strides, sizeof o->strides);
  int cuda = strcmp(ctx->dev->ops->name, "cuda") == 0;
  o->m.dl_tensor = (dl_tensor_t){
      /* Frameworks take the offset in the pointer, as their own exports
       * put it. */
      .data = (char *)dptr + desc->byte_offset,
      .device = {.device_type = cuda ? DL_CUDA : DL_CPU,
                 .device_id = cuda ? desc->device_id : 0},
      .ndim = desc->ndim,
      .dtype = {.code = desc->dtype_code, .bits = desc->dtype_bits, .lanes = 1},
      .shape = o->shape,
      .strides = o->strides,
      .byte_offset = 0,
  };
  o->m.manager_ctx = o;
  o->m.deleter = dl_delete;
  *managed = &o->m;
  return LMS_OK;
}
