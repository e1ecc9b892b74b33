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
 * context, which no runtime above it survives.  Which calls are counted,
 * and which pass through uncounted, is the decorator base's (Note
 * [Decorating a device] in wrap.c). */
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
  lms__dev_wrap_t w; /* first: the device callers hold */
  pthread_mutex_t mu;
  uint64_t calls[LMS__DEVOP_COUNT];
  uint64_t total_calls;
  uint64_t fail_op[LMS__DEVOP_COUNT]; /* 0: none */
  uint64_t fail_any;                  /* 0: none */
} faulty_t;

#define F(d) ((faulty_t *)(d))

/* Counts the call; the injected failure if it is the one chosen. */
static lms_status_t enter(lms__dev_wrap_t *w, lms__dev_op_t op) {
  faulty_t *f = (faulty_t *)w;
  pthread_mutex_lock(&f->mu);
  uint64_t n = ++f->calls[op];
  uint64_t total = ++f->total_calls;
  int hit = (f->fail_op[op] != 0 && n == f->fail_op[op]) ||
            (f->fail_any != 0 && total == f->fail_any);
  pthread_mutex_unlock(&f->mu);
  if (!hit) return LMS_OK;
  lms__errf(w->head.last_error,
            "injected failure: %s call %" PRIu64 " (call %" PRIu64
            " of any operation)", lms__dev_op_names[op], n, total);
  LMS_LOG(DEBUG, DEVICE, "%s: %s", w->inner->ops->name, w->head.last_error);
  return lms__fault_status(op);
}

static void faulty_fini(lms__dev_wrap_t *w) {
  faulty_t *f = (faulty_t *)w;
  pthread_mutex_destroy(&f->mu);
  free(f);
}

static const lms__dev_wrap_hooks_t fault_hooks = {.enter = enter,
                                                  .fini = faulty_fini};

int lms__dev_is_faulty(const lms_dev_t *d) {
  return lms__dev_is_wrap(d) &&
         ((const lms__dev_wrap_t *)d)->hooks == &fault_hooks;
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
  lms__dev_wrap_init(&f->w, inner, &fault_hooks);
  *out = &f->w.head;
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
