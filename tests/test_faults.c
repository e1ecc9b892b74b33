/* test_faults.c - fault injection over a scripted scenario: the device's
 * Nth call fails, for every N the scenario makes.  Each failure must come
 * back from the API as a status or be absorbed and counted (device_errors);
 * either way no chunk's bytes change, a retry of the failed call succeeds,
 * and the context stays usable afterwards. */
#include <criterion/criterion.h>
#include "check.h"
#include <stdio.h>
#include <string.h>

#include "api/ctx.h"
#include "support.h"

#define NCHUNK 4

typedef struct run {
  lms_ctx_t *ctx;
  lms_stream_t s[2];
  lms_chunk_t *c[NCHUNK];
  uint64_t sum[NCHUNK];
  unsigned surfaced;   /* calls that returned an error status */
  unsigned mismatches; /* reads whose bytes differed */
  unsigned retries_failed;
} run_t;

/* Calls `call` and, if it fails, once more: the fault is one-shot, so the
 * retry must succeed. */
#define TRY(r, call)                                                          \
  do {                                                                        \
    lms_status_t st_ = (call);                                                \
    if (st_ != LMS_OK) {                                                      \
      (r)->surfaced++;                                                        \
      if ((call) != LMS_OK) (r)->retries_failed++;                            \
    }                                                                         \
  } while (0)

static void write_chunk(run_t *r, int i, lms_stream_t s, uint64_t seed) {
  void *p = NULL;
  TRY(r, lms_acquire(r->ctx, r->c[i], s, LMS_ACCESS_WRITE, &p));
  if (p == NULL) return;
  lms_test_fill(p, lms_chunk_size(r->c[i]), seed);
  r->sum[i] = lms_test_checksum(p, lms_chunk_size(r->c[i]));
  TRY(r, lms_compute(r->ctx, s, 5000));
  TRY(r, lms_release(r->ctx, r->c[i], s));
}

static void check_chunk(run_t *r, int i, lms_stream_t s) {
  void *p = NULL;
  TRY(r, lms_acquire(r->ctx, r->c[i], s, LMS_ACCESS_READ, &p));
  if (p == NULL) return;
  if (lms_test_checksum(p, lms_chunk_size(r->c[i])) != r->sum[i]) r->mismatches++;
  TRY(r, lms_compute(r->ctx, s, 3000));
  TRY(r, lms_release(r->ctx, r->c[i], s));
}

/* Four 700 KiB chunks through a 2 MiB budget on two streams: swap-ins,
 * write-backs, drops, two chunks held at once, a free and a reallocation. */
static void scenario(run_t *r) {
  for (int i = 0; i < NCHUNK; i++) {
    TRY(r, lms_alloc(r->ctx, 700 << 10, &r->c[i]));
    write_chunk(r, i, r->s[i % 2], 100 + (uint64_t)i);
  }
  for (int i = 0; i < NCHUNK; i++) check_chunk(r, i, r->s[(i + 1) % 2]);
  write_chunk(r, 1, r->s[0], 200);
  void *a = NULL, *b = NULL;
  TRY(r, lms_acquire(r->ctx, r->c[2], r->s[1], LMS_ACCESS_READ, &a));
  TRY(r, lms_acquire(r->ctx, r->c[3], r->s[1], LMS_ACCESS_RW, &b));
  if (a != NULL && b != NULL) {
    if (lms_test_checksum(a, 700 << 10) != r->sum[2]) r->mismatches++;
    memcpy(b, a, 4096);
    r->sum[3] = lms_test_checksum(b, 700 << 10);
  }
  TRY(r, lms_release(r->ctx, r->c[3], r->s[1]));
  TRY(r, lms_release(r->ctx, r->c[2], r->s[1]));
  TRY(r, lms_free(r->ctx, r->c[0]));
  r->c[0] = NULL;
  TRY(r, lms_alloc(r->ctx, 300 << 10, &r->c[0]));
  write_chunk(r, 0, r->s[1], 300);
  for (int i = NCHUNK; i-- > 0;) check_chunk(r, i, r->s[i % 2]);
  TRY(r, lms_stream_sync(r->ctx, r->s[0]));
  TRY(r, lms_stream_sync(r->ctx, r->s[1]));
}

/* The scenario's context on a simulated device inside the fault-injecting
 * wrapper that --fail puts around a CUDA device (faults.c). */
static lms_ctx_t *wrapped_ctx(void) {
  lms_options_t *o = NULL;
  lms_ctx_t *ctx = NULL;
  lms_dev_t *inner = NULL, *dev = NULL;
  char err[LMS__ERRBUF] = "";
  if (lms_options_create(&o) != LMS_OK) return NULL;
  if (lms_options_set(o, "device", "sim") == LMS_OK &&
      lms_options_set(o, "gpu-limit", "2MiB") == LMS_OK &&
      lms_options_set(o, "lms", "0") == LMS_OK &&
      lms_options_set(o, "log", "none") == LMS_OK &&
      lms__dev_open(&o->v, &inner, err) == LMS_OK) {
    if (lms__faulty_wrap(inner, NULL, &dev, err) != LMS_OK)
      inner->ops->destroy(inner);
    else if (lms__ctx_create_on(o, dev, &ctx) != LMS_OK)
      ctx = NULL;
  }
  lms_options_destroy(o);
  return ctx;
}

static int setup_on(run_t *r, int wrapped) {
  memset(r, 0, sizeof *r);
  r->ctx = wrapped ? wrapped_ctx() : lms_test_ctx("2MiB", "0", NULL);
  if (r->ctx == NULL) return -1;
  if (lms_stream_create(r->ctx, &r->s[0]) != LMS_OK ||
      lms_stream_create(r->ctx, &r->s[1]) != LMS_OK)
    return -1;
  return 0;
}

static int setup(run_t *r) { return setup_on(r, 0); }

static void teardown(run_t *r) {
  for (int i = 0; i < NCHUNK; i++) lms_free(r->ctx, r->c[i]);
  lms_stream_destroy(r->ctx, r->s[0]);
  lms_stream_destroy(r->ctx, r->s[1]);
  lms_status_t st = lms_ctx_destroy(r->ctx);
  cr_assert(eq(int, st, LMS_OK), "destroy: %s", lms_status_name(st));
}

static uint64_t device_calls(lms_ctx_t *ctx) {
  if (lms__dev_is_faulty(ctx->dev))
    return lms__faulty_calls(ctx->dev, LMS__DEVOP_COUNT);
  lms__sim_report_t rep;
  lms__sim_report(ctx->dev, &rep);
  return rep.total_calls;
}

/* Makes the next call of `op` fail. */
static void fail_next(run_t *r, lms__dev_op_t op) {
  lms__sim_report_t rep;
  lms__sim_report(r->ctx->dev, &rep);
  lms__sim_fail_op(r->ctx->dev, op, rep.calls[op] + 1);
}

/* Sets up a run with two chunks: c = r->c[0], 1 MiB written with `seed`,
 * and d = r->c[1], 1.5 MiB, which cannot share the 2 MiB budget with c.
 * Returns c's checksum; teardown frees both. */
static uint64_t two_chunks(run_t *r, uint64_t seed) {
  lms_status_t st;
  cr_assert(eq(int, setup(r), 0));
  cr_assert(eq(int, lms_alloc(r->ctx, 1 << 20, &r->c[0]), LMS_OK));
  cr_assert(eq(int, lms_alloc(r->ctx, 1536 << 10, &r->c[1]), LMS_OK));
  uint64_t sum = lms_test_write(r->ctx, r->c[0], r->s[0], seed, &st);
  cr_assert(eq(int, st, LMS_OK));
  return sum;
}

/* Makes the nth call of any operation, counted from the device's start,
 * fail. */
static void fail_any_call(lms_ctx_t *ctx, uint64_t n) {
  if (lms__dev_is_faulty(ctx->dev))
    lms__faulty_fail_any(ctx->dev, n);
  else
    lms__sim_fail_any(ctx->dev, n);
}

static void every_call_fails_in_turn(int wrapped) {
  run_t r;
  cr_assert(eq(int, setup_on(&r, wrapped), 0));
  uint64_t base = device_calls(r.ctx);
  scenario(&r);
  uint64_t calls = device_calls(r.ctx) - base;
  cr_assert(eq(u32, r.surfaced, 0), "the clean run failed");
  cr_assert(eq(u32, r.mismatches, 0));
  lms_stats_t clean;
  lms_stats_get(r.ctx, &clean);
  cr_assert(gt(i64, clean.swaps_out.total, 0));
  cr_assert(gt(i64, clean.drops.total, 0));
  teardown(&r);
  cr_log_info("the scenario makes %llu device calls", (unsigned long long)calls);
  cr_assert(gt(u64, calls, 50));

  unsigned surfaced_total = 0, absorbed_total = 0;
  for (uint64_t n = 1; n <= calls; n++) {
    cr_assert(eq(int, setup_on(&r, wrapped), 0));
    fail_any_call(r.ctx, base + n);
    scenario(&r);
    lms_stats_t st;
    lms_stats_get(r.ctx, &st);
    unsigned absorbed = r.surfaced == 0 && st.device_errors.total > 0;
    cr_assert(r.surfaced > 0 || absorbed,
              "call %llu failed and was neither reported nor counted: %s",
              (unsigned long long)n, r.ctx->dev->last_error);
    cr_assert(eq(u32, r.mismatches, 0), "bytes changed with call %llu failing",
              (unsigned long long)n);
    cr_assert(eq(u32, r.retries_failed, 0),
              "a retry after call %llu failed: %s", (unsigned long long)n,
              lms_ctx_last_error(r.ctx));
    /* Still usable: every chunk reads back, a new one goes round trip. */
    for (int i = 0; i < NCHUNK; i++) check_chunk(&r, i, r.s[0]);
    lms_chunk_t *extra = NULL;
    cr_assert(eq(int, lms_alloc(r.ctx, 1 << 20, &extra), LMS_OK));
    lms_status_t s1, s2;
    uint64_t w = lms_test_write(r.ctx, extra, r.s[1], 9, &s1);
    for (int i = 0; i < NCHUNK; i++) check_chunk(&r, i, r.s[1]);
    cr_assert(eq(u64, lms_test_read(r.ctx, extra, r.s[0], &s2), w));
    cr_assert(eq(int, s1, LMS_OK));
    cr_assert(eq(int, s2, LMS_OK));
    cr_assert(eq(u32, r.mismatches, 0));
    lms_free(r.ctx, extra);
    surfaced_total += r.surfaced > 0;
    absorbed_total += absorbed;
    teardown(&r);
  }
  cr_log_info("%llu injected failures: %u reported as a status, %u absorbed "
              "and counted", (unsigned long long)calls, surfaced_total,
              absorbed_total);
}

Test(faults, every_device_call_fails_in_turn, .timeout = 300) {
  every_call_fails_in_turn(0);
}

/* The same promises through the wrapper that injects faults above a device
 * that cannot inject its own (the CUDA device under --fail). */
Test(faults, every_call_fails_in_turn_through_the_wrapper, .timeout = 300) {
  every_call_fails_in_turn(1);
}

/* The wrapper's own contract: a chosen call fails with the status a real
 * device gives and never reaches the device beneath; the rest pass
 * through with their results and errors; the optional operations are
 * the inner device's; a bad spec leaves the inner device to the caller. */
Test(faults, the_wrapper_stops_the_chosen_call_before_the_device) {
  char err[LMS__ERRBUF] = "";
  lms__sim_config_t cfg = {.capacity = 4u << 20,
                           .link = {.name = "t", .h2d_gbps = 10,
                                    .d2h_gbps = 10}};
  lms_dev_t *inner = NULL, *d = NULL;
  cr_assert(eq(int, lms__sim_create(&cfg, &inner, err), LMS_OK), "%s", err);
  cr_assert(eq(int, lms__faulty_wrap(inner, "dev_alloc:x", &d, err),
               LMS_ERR_INVALID));
  cr_assert(strstr(err, "needs a call number N >= 1") != NULL, "%s", err);
  cr_assert(eq(int, lms__faulty_wrap(inner, "dev_alloc:2,any:6", &d, err),
               LMS_OK), "%s", err);
  cr_assert(lms__dev_is_faulty(d));
  cr_assert(not(lms__dev_is_faulty(inner)));
  cr_assert(eq(ptr, lms__dev_unwrap(d), inner));
  cr_assert(eq(ptr, lms__dev_unwrap(inner), inner));
  cr_assert(eq(str, (char *)d->ops->name, "sim"));
  cr_assert(eq(int, d->ops->wait_cost != NULL, inner->ops->wait_cost != NULL));
  cr_assert(eq(int, d->ops->dev_free_after != NULL,
               inner->ops->dev_free_after != NULL));
  cr_assert(eq(int, d->ops->set_budget != NULL, inner->ops->set_budget != NULL));

  void *a = NULL, *b = NULL, *h = NULL;
  cr_assert(eq(int, d->ops->dev_alloc(d, 4096, &a), LMS_OK));
  cr_assert(eq(int, d->ops->dev_alloc(d, 4096, &b), LMS_ERR_DEVICE_OOM));
  cr_assert(eq(ptr, b, NULL));
  cr_assert(strstr(d->last_error, "injected failure: dev_alloc call 2") != NULL,
            "%s", d->last_error);
  lms__sim_report_t rep;
  lms__sim_report(inner, &rep);
  cr_assert(eq(u64, rep.calls[LMS__DEVOP_dev_alloc], 1),
            "the failed call reached the device");
  cr_assert(eq(u64, rep.dev_in_use, 4096));
  /* An error of the device beneath passes through with its message. */
  cr_assert(eq(int, d->ops->dev_alloc(d, 64u << 20, &b), LMS_ERR_DEVICE_OOM));
  cr_assert(strstr(d->last_error, "injected") == NULL, "%s", d->last_error);
  cr_assert(gt(sz, strlen(d->last_error), 0));
  /* The sixth call of any operation: host_alloc, with its own status. */
  cr_assert(eq(u64, lms__faulty_calls(d, LMS__DEVOP_COUNT), 3));
  size_t fb = 0, tb = 0;
  cr_assert(eq(int, d->ops->mem_info(d, &fb, &tb), LMS_OK));
  cr_assert(eq(sz, tb, 4u << 20));
  cr_assert(eq(int, d->ops->dev_free(d, a), LMS_OK));
  cr_assert(eq(int, d->ops->host_alloc(d, 4096, &h), LMS_ERR_HOST_OOM));
  cr_assert(strstr(d->last_error, "call 6 of any operation") != NULL, "%s",
            d->last_error);
  cr_assert(eq(int, d->ops->host_alloc(d, 4096, &h), LMS_OK));
  cr_assert(eq(u64, lms__faulty_calls(d, LMS__DEVOP_host_alloc), 2));
  lms__sim_report(inner, &rep);
  cr_assert(eq(u64, rep.calls[LMS__DEVOP_host_alloc], 1));
  /* Armed again by hand, as the scenario tests do. */
  lms__faulty_fail_op(d, LMS__DEVOP_host_free, 1);
  cr_assert(eq(int, d->ops->host_free(d, h), LMS_ERR_DEVICE));
  cr_assert(eq(int, d->ops->host_free(d, h), LMS_OK));
  d->ops->destroy(d); /* and inner with it */
}

Test(faults, injected_copy_failure_leaves_the_chunk_on_the_host) {
  run_t r;
  uint64_t sum = two_chunks(&r, 5);
  lms_chunk_t *c = r.c[0], *d = r.c[1];
  lms_status_t st;
  /* Push c out, then fail the copy that would bring it back. */
  lms_test_write(r.ctx, d, r.s[0], 6, &st);
  cr_assert(not(lms_chunk_resident(r.ctx, c)));
  fail_next(&r, LMS__DEVOP_copy_h2d);
  void *p = NULL;
  cr_assert(eq(int, lms_acquire(r.ctx, c, r.s[0], LMS_ACCESS_READ, &p), LMS_ERR_DEVICE));
  cr_assert(strstr(lms_ctx_last_error(r.ctx), "copy_h2d") != NULL, "%s",
            lms_ctx_last_error(r.ctx));
  cr_assert(not(lms_chunk_resident(r.ctx, c)));
  cr_assert(eq(u64, lms_test_read(r.ctx, c, r.s[0], &st), sum));
  cr_assert(eq(int, st, LMS_OK));
  teardown(&r);
}

Test(faults, injected_write_back_failure_keeps_the_device_copy) {
  run_t r;
  uint64_t sum = two_chunks(&r, 5);
  lms_chunk_t *c = r.c[0], *d = r.c[1];
  lms_status_t st;
  fail_next(&r, LMS__DEVOP_copy_d2h);
  void *p = NULL;
  /* d needs c's room; c's write-back fails, so d cannot come in. */
  cr_assert(eq(int, lms_acquire(r.ctx, d, r.s[0], LMS_ACCESS_WRITE, &p), LMS_ERR_DEVICE));
  cr_assert(lms_chunk_resident(r.ctx, c));
  cr_assert(eq(u64, lms_test_read(r.ctx, c, r.s[0], &st), sum));
  /* The retry writes c back and succeeds. */
  cr_assert(eq(int, lms_acquire(r.ctx, d, r.s[0], LMS_ACCESS_WRITE, &p), LMS_OK));
  lms_release(r.ctx, d, r.s[0]);
  cr_assert(not(lms_chunk_resident(r.ctx, c)));
  cr_assert(eq(u64, lms_test_read(r.ctx, c, r.s[0], &st), sum));
  teardown(&r);
}

/* A swap-in whose caller could not be made to wait leaves the chunk
 * resident with its copy in flight; freeing the chunk then must not make
 * the block reusable by others before that copy is done. */
Test(faults, untracked_swap_in_block_is_not_reused_early) {
  run_t r;
  two_chunks(&r, 1);
  lms_chunk_t *c = r.c[0], *d = r.c[1];
  lms_status_t st;
  lms_test_write(r.ctx, d, r.s[0], 2, &st);
  cr_assert(not(lms_chunk_resident(r.ctx, c)));
  lms_free(r.ctx, d);
  r.c[1] = NULL;
  /* d's block is returned to make room for c without a stream waiting on
   * it, so that the one stream_wait below is the caller's on the copy. */
  cr_assert(eq(int, lms_stream_sync(r.ctx, r.s[0]), LMS_OK));
  fail_next(&r, LMS__DEVOP_stream_wait);
  void *p = NULL;
  cr_assert(eq(int, lms_acquire(r.ctx, c, r.s[0], LMS_ACCESS_READ, &p),
               LMS_ERR_DEVICE));
  cr_assert(lms_chunk_resident(r.ctx, c));
  void *block = c->dptr;
  /* When all work queued so far, the swap-in copy included, is done. */
  lms__sim_report_t rep;
  lms__sim_report(r.ctx->dev, &rep);
  uint64_t copy_end = rep.now_ns;
  cr_assert(gt(u64, copy_end, lms_now_ns(r.ctx)));
  cr_assert(eq(int, lms_free(r.ctx, c), LMS_OK));
  void *q = NULL;
  cr_assert(eq(int, lms__devcache_alloc(&r.ctx->swap.cache, 1 << 20, NULL, &q),
               LMS_OK));
  cr_assert(q != block || lms_now_ns(r.ctx) >= copy_end,
            "the block came back at %llu ns, before its copy ended at %llu",
            (unsigned long long)lms_now_ns(r.ctx), (unsigned long long)copy_end);
  lms__devcache_free(&r.ctx->swap.cache, q, NULL);
  r.c[0] = NULL;
  teardown(&r);
}
