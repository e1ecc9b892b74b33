/* faults.c - fault injection for any device: the "OP:N[,OP:N]" spec that
 * --fail takes, and a device that wraps another and makes the chosen calls
 * fail.
 *
 * The simulated device injects its own faults (sim.c) because it counts
 * its calls under its own lock.  The CUDA device cannot: its calls go to
 * the driver.  So with --fail, the CUDA device is wrapped (open.c), and the
 * runtime above it meets the same failures, counted the same way, as on
 * the simulated device.
 *
 * Note [Injecting faults above a real device]
 * A call chosen to fail returns before it reaches the inner device, so it
 * has changed nothing, which is what a real device promises of a failure
 * it reports at the call: cudaMallocAsync out of memory, cudaHostAlloc
 * refused, a copy or event call rejected.  The status is the one the real
 * device gives when it runs out of what the call asks for: DEVICE_OOM for
 * dev_alloc, HOST_OOM for host_alloc, DEVICE for the rest.  Failures in
 * flight (a copy that faults after it started) cannot be injected this
 * way; CUDA reports those as sticky errors that end the whole CUDA
 * context, which no runtime above it survives.  dev_free_after counts as
 * a dev_free call, since it is one, deferred, and event_create_timed as an
 * event_create call.  wait_cost, event_elapsed, now_ns,
 * set_budget and destroy are passed through uncounted: they cannot fail
 * or change nothing (device.h); so are ext_register and ext_unregister,
 * which only tell the simulated device what it may check copies
 * against. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "device/device.h"

const char *const lms__dev_op_names[LMS__DEVOP_COUNT] = {
#define OP_NAME_(name) #name,
    LMS__DEV_OPS_MAP(OP_NAME_)
#undef OP_NAME_
};

/* The spec also accepts this name: "any:N" fails the Nth call of any
 * operation. */
#define ANY_NAME "any"

lms_status_t lms__fault_status(lms__dev_op_t op) {
  switch (op) {
  case LMS__DEVOP_dev_alloc:
    return LMS_ERR_DEVICE_OOM;
  case LMS__DEVOP_host_alloc:
    return LMS_ERR_HOST_OOM;
  default:
    return LMS_ERR_DEVICE;
  }
}

/* Formats the message (when err is given) and returns LMS_ERR_INVALID
 * from the parser. */
#define SPEC_FAIL(err, ...)                                                   \
  do {                                                                        \
    if ((err) != NULL) lms__errf((err), __VA_ARGS__);                         \
    return LMS_ERR_INVALID;                                                   \
  } while (0)

lms_status_t lms__fault_spec_parse(const char *spec, uint64_t *fail_op,
                                   uint64_t *fail_any, char *err) {
  char ops[LMS__ERRBUF / 2];
  size_t used = 0;
  ops[0] = '\0';
  for (int i = 0; i <= LMS__DEVOP_COUNT; i++) {
    const char *name = i < LMS__DEVOP_COUNT ? lms__dev_op_names[i] : ANY_NAME;
    int w = snprintf(ops + used, sizeof ops - used, "%s%s", i ? ", " : "",
                     name);
    if (w < 0 || (size_t)w >= sizeof ops - used) break;
    used += (size_t)w;
  }
  /* Quoted parts are cut short so the list of operations always fits. */
  enum { QMAX = 48 };
  int slen = (int)strnlen(spec, QMAX);
  const char *p = spec;
  for (;;) {
    const char *end = strchr(p, ',');
    if (end == NULL) end = p + strlen(p);
    int elen = (int)(end - p) < QMAX ? (int)(end - p) : QMAX;
    const char *colon = memchr(p, ':', (size_t)(end - p));
    if (end == p)
      SPEC_FAIL(err, "fault spec '%.*s' has an empty entry; form "
                     "OP:N[,OP:N] with N >= 1, OP one of: %s",
                slen, spec, ops);
    if (colon == NULL)
      SPEC_FAIL(err, "fault spec: '%.*s' in '%.*s' lacks ':N'; form "
                     "OP:N[,OP:N] with N >= 1, OP one of: %s",
                elen, p, slen, spec, ops);
    size_t nlen = (size_t)(colon - p);
    int op = -1;
    for (int i = 0; i <= LMS__DEVOP_COUNT; i++) {
      const char *name = i < LMS__DEVOP_COUNT ? lms__dev_op_names[i] : ANY_NAME;
      if (strlen(name) == nlen && memcmp(name, p, nlen) == 0) op = i;
    }
    int qlen = (int)nlen < QMAX ? (int)nlen : QMAX;
    if (op < 0)
      SPEC_FAIL(err, "fault spec: unknown operation '%.*s' in '%.*s'; "
                     "accepted operations: %s",
                qlen, p, slen, spec, ops);
    uint64_t n = 0;
    int bad = colon + 1 == end;
    for (const char *q = colon + 1; q < end && !bad; q++) {
      if (*q < '0' || *q > '9' || n > (UINT64_MAX - 9) / 10)
        bad = 1;
      else
        n = n * 10 + (uint64_t)(*q - '0');
    }
    if (bad || n == 0)
      SPEC_FAIL(err, "fault spec: '%.*s' in '%.*s' needs a call number "
                     "N >= 1 after ':'; form OP:N[,OP:N], OP one of: %s",
                elen, p, slen, spec, ops);
    uint64_t *slot = op < LMS__DEVOP_COUNT ? &fail_op[op] : fail_any;
    if (*slot != 0)
      SPEC_FAIL(err, "fault spec: operation '%.*s' appears twice in '%.*s'; "
                     "name each of these at most once: %s",
                qlen, p, slen, spec, ops);
    *slot = n;
    if (*end == '\0') break;
    p = end + 1;
  }
  return LMS_OK;
}

/* ---- The wrapping device ----------------------------------------------- */

typedef struct faulty {
  lms_dev_t head;
  lms_dev_ops_t ops; /* the inner device's optional ops decide ours */
  lms_dev_t *inner;
  pthread_mutex_t mu;
  uint64_t calls[LMS__DEVOP_COUNT];
  uint64_t total_calls;
  uint64_t fail_op[LMS__DEVOP_COUNT]; /* 0: none */
  uint64_t fail_any;                  /* 0: none */
} faulty_t;

static void faulty_destroy(lms_dev_t *d);

int lms__dev_is_faulty(const lms_dev_t *d) {
  return d != NULL && d->ops != NULL && d->ops->destroy == faulty_destroy;
}

lms_dev_t *lms__dev_unwrap(lms_dev_t *d) {
  return lms__dev_is_faulty(d) ? ((faulty_t *)d)->inner : d;
}

/* Counts the call; the injected failure if it is the one chosen. */
static lms_status_t enter(faulty_t *f, lms__dev_op_t op) {
  pthread_mutex_lock(&f->mu);
  uint64_t n = ++f->calls[op];
  uint64_t total = ++f->total_calls;
  int hit = (f->fail_op[op] != 0 && n == f->fail_op[op]) ||
            (f->fail_any != 0 && total == f->fail_any);
  pthread_mutex_unlock(&f->mu);
  if (!hit) return LMS_OK;
  lms__errf(f->head.last_error,
            "injected failure: %s call %" PRIu64 " (call %" PRIu64
            " of any operation)", lms__dev_op_names[op], n, total);
  LMS_LOG(DEBUG, DEVICE, "%s: %s", f->inner->ops->name, f->head.last_error);
  return lms__fault_status(op);
}

/* The inner call's status, with its message when it failed. */
static lms_status_t passed(faulty_t *f, lms_status_t st) {
  if (st != LMS_OK && st != LMS_NOT_READY)
    memcpy(f->head.last_error, f->inner->last_error, LMS__ERRBUF);
  return st;
}

#define F(d) ((faulty_t *)(d))
/* Counts the call as `op`, fails it if chosen, else forwards it. */
#define FORWARD(d, op, call)                                                  \
  do {                                                                        \
    faulty_t *f_ = F(d);                                                      \
    lms_status_t st_ = enter(f_, LMS__DEVOP_##op);                            \
    if (st_ != LMS_OK) return st_;                                            \
    lms_dev_t *in_ = f_->inner;                                               \
    (void)in_;                                                                \
    return passed(f_, (call));                                                \
  } while (0)

static lms_status_t w_mem_info(lms_dev_t *d, size_t *fb, size_t *tb) {
  FORWARD(d, mem_info, in_->ops->mem_info(in_, fb, tb));
}
static lms_status_t w_dev_alloc(lms_dev_t *d, size_t size, void **out) {
  FORWARD(d, dev_alloc, in_->ops->dev_alloc(in_, size, out));
}
static lms_status_t w_dev_free(lms_dev_t *d, void *ptr) {
  FORWARD(d, dev_free, in_->ops->dev_free(in_, ptr));
}
static lms_status_t w_host_alloc(lms_dev_t *d, size_t size, void **out) {
  FORWARD(d, host_alloc, in_->ops->host_alloc(in_, size, out));
}
static lms_status_t w_host_free(lms_dev_t *d, void *ptr) {
  FORWARD(d, host_free, in_->ops->host_free(in_, ptr));
}
static lms_status_t w_stream_create(lms_dev_t *d, void **out) {
  FORWARD(d, stream_create, in_->ops->stream_create(in_, out));
}
static lms_status_t w_stream_destroy(lms_dev_t *d, void *s) {
  FORWARD(d, stream_destroy, in_->ops->stream_destroy(in_, s));
}
static lms_status_t w_stream_sync(lms_dev_t *d, void *s) {
  FORWARD(d, stream_sync, in_->ops->stream_sync(in_, s));
}
static lms_status_t w_stream_wait(lms_dev_t *d, void *s, void *ev) {
  FORWARD(d, stream_wait, in_->ops->stream_wait(in_, s, ev));
}
static lms_status_t w_copy_h2d(lms_dev_t *d, void *dst, const void *src,
                               size_t n, void *s) {
  FORWARD(d, copy_h2d, in_->ops->copy_h2d(in_, dst, src, n, s));
}
static lms_status_t w_copy_d2h(lms_dev_t *d, void *dst, const void *src,
                               size_t n, void *s) {
  FORWARD(d, copy_d2h, in_->ops->copy_d2h(in_, dst, src, n, s));
}
static lms_status_t w_event_create(lms_dev_t *d, void **out) {
  FORWARD(d, event_create, in_->ops->event_create(in_, out));
}
static lms_status_t w_event_destroy(lms_dev_t *d, void *ev) {
  FORWARD(d, event_destroy, in_->ops->event_destroy(in_, ev));
}
static lms_status_t w_event_record(lms_dev_t *d, void *ev, void *s) {
  FORWARD(d, event_record, in_->ops->event_record(in_, ev, s));
}
static lms_status_t w_event_query(lms_dev_t *d, void *ev) {
  FORWARD(d, event_query, in_->ops->event_query(in_, ev));
}
static lms_status_t w_event_sync(lms_dev_t *d, void *ev) {
  FORWARD(d, event_sync, in_->ops->event_sync(in_, ev));
}
static lms_status_t w_compute(lms_dev_t *d, void *s, uint64_t ns) {
  FORWARD(d, compute, in_->ops->compute(in_, s, ns));
}
static lms_status_t w_dev_free_after(lms_dev_t *d, void *ptr, void *ev) {
  FORWARD(d, dev_free, in_->ops->dev_free_after(in_, ptr, ev));
}
static lms_status_t w_event_create_timed(lms_dev_t *d, void **out) {
  FORWARD(d, event_create, in_->ops->event_create_timed(in_, out));
}
static lms_status_t w_event_elapsed(lms_dev_t *d, void *a, void *b,
                                    uint64_t *ns) {
  faulty_t *f = F(d);
  return passed(f, f->inner->ops->event_elapsed(f->inner, a, b, ns));
}
static lms_status_t w_wait_cost(lms_dev_t *d, void *s, void *ev,
                                uint64_t *ns) {
  faulty_t *f = F(d);
  return passed(f, f->inner->ops->wait_cost(f->inner, s, ev, ns));
}
static uint64_t w_now_ns(lms_dev_t *d) {
  return F(d)->inner->ops->now_ns(F(d)->inner);
}
static void w_set_budget(lms_dev_t *d, uint64_t bytes) {
  F(d)->inner->ops->set_budget(F(d)->inner, bytes);
}
static lms_status_t w_ext_register(lms_dev_t *d, const void *p, size_t n) {
  return F(d)->inner->ops->ext_register(F(d)->inner, p, n);
}
static lms_status_t w_ext_unregister(lms_dev_t *d, const void *p) {
  return F(d)->inner->ops->ext_unregister(F(d)->inner, p);
}
static void faulty_destroy(lms_dev_t *d) {
  faulty_t *f = F(d);
  f->inner->ops->destroy(f->inner);
  pthread_mutex_destroy(&f->mu);
  free(f);
}

lms_status_t lms__faulty_wrap(lms_dev_t *inner, const char *spec,
                              lms_dev_t **out, char *err) {
  faulty_t *f = calloc(1, sizeof *f);
  if (f == NULL) {
    lms__errf(err, "no host memory for the fault-injecting device");
    return LMS_ERR_HOST_OOM;
  }
  if (spec != NULL && spec[0] != '\0') {
    lms_status_t st = lms__fault_spec_parse(spec, f->fail_op, &f->fail_any,
                                            err);
    if (st != LMS_OK) {
      free(f);
      return st;
    }
  }
  if (pthread_mutex_init(&f->mu, NULL) != 0) {
    free(f);
    lms__errf(err, "cannot create the fault-injecting device's mutex");
    return LMS_ERR_INTERNAL;
  }
  const lms_dev_ops_t *io = inner->ops;
  f->ops = (lms_dev_ops_t){
      .version = LMS_DEV_OPS_VERSION,
      .name = io->name,
      .mem_info = w_mem_info,
      .dev_alloc = w_dev_alloc,
      .dev_free = w_dev_free,
      .host_alloc = w_host_alloc,
      .host_free = w_host_free,
      .stream_create = w_stream_create,
      .stream_destroy = w_stream_destroy,
      .stream_sync = w_stream_sync,
      .stream_wait = w_stream_wait,
      .copy_h2d = w_copy_h2d,
      .copy_d2h = w_copy_d2h,
      .event_create = w_event_create,
      .event_destroy = w_event_destroy,
      .event_record = w_event_record,
      .event_query = w_event_query,
      .event_sync = w_event_sync,
      .compute = w_compute,
      .wait_cost = io->wait_cost ? w_wait_cost : NULL,
      .now_ns = w_now_ns,
      .destroy = faulty_destroy,
      .dev_free_after = io->dev_free_after ? w_dev_free_after : NULL,
      .set_budget = io->set_budget ? w_set_budget : NULL,
      .ext_register = io->ext_register ? w_ext_register : NULL,
      .ext_unregister = io->ext_unregister ? w_ext_unregister : NULL,
      .event_create_timed =
          io->event_create_timed ? w_event_create_timed : NULL,
      .event_elapsed = io->event_elapsed ? w_event_elapsed : NULL,
  };
  f->head.ops = &f->ops;
  f->inner = inner;
  *out = &f->head;
  return LMS_OK;
}

void lms__faulty_fail_op(lms_dev_t *d, lms__dev_op_t op, uint64_t n) {
  if (!lms__dev_is_faulty(d) || (unsigned)op >= LMS__DEVOP_COUNT) return;
  pthread_mutex_lock(&F(d)->mu);
  F(d)->fail_op[op] = n;
  pthread_mutex_unlock(&F(d)->mu);
}

void lms__faulty_fail_any(lms_dev_t *d, uint64_t n) {
  if (!lms__dev_is_faulty(d)) return;
  pthread_mutex_lock(&F(d)->mu);
  F(d)->fail_any = n;
  pthread_mutex_unlock(&F(d)->mu);
}

uint64_t lms__faulty_calls(lms_dev_t *d, int op) {
  if (!lms__dev_is_faulty(d) || op < 0 || op > LMS__DEVOP_COUNT) return 0;
  pthread_mutex_lock(&F(d)->mu);
  uint64_t n = op == LMS__DEVOP_COUNT ? F(d)->total_calls : F(d)->calls[op];
  pthread_mutex_unlock(&F(d)->mu);
  return n;
}
