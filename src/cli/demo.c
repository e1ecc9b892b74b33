/* demo.c - `lms demo`: a network whose activations do not fit the GPU limit
 * runs anyway, and no byte changes on the way.
 *
 * The workload has the shape of caffe's GoogleNet at 1200x1200, batch 10:
 * the input and the output blob of each stage (conv1 through inception 5b),
 * all kept live as caffe keeps them, 4.0 GB in all.  It runs at 1/16 of
 * that size under a GPU limit of 1/16 of 1.25 GiB (room for the largest
 * stage, conv1, and its input), so it fits a small machine while keeping
 * the ratio of data to capacity (3x) and of transfer time
 * to compute time: both bytes and compute times are scaled by the same
 * factor.  Compute times: the published 45.4 ms forward per image on the
 * P100, times 10 images, spread over the stages in proportion to their
 * output bytes; backward takes twice the forward time of a stage.
 *
 * The "kernels" are real work on the simulated device's memory: each
 * stage's output is a pattern derived from its input's bytes, and backward
 * recomputes each expected output and counts the bytes that differ. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/ctx.h"
#include "cli/cli.h"

#define BATCH 10
#define SCALE 16
#define FORWARD_NS_PER_IMAGE 45400000ull /* 45.4 ms, P100, batch 1 */

typedef struct stage {
  const char *name;
  unsigned channels;
  unsigned hw;
} stage_t;

static const stage_t stages[] = {
    {"data", 3, 1200},          {"conv1", 64, 600},
    {"pool1", 64, 300},         {"conv2_reduce", 64, 300},
    {"conv2", 192, 300},        {"pool2", 192, 150},
    {"inception_3a", 256, 150}, {"inception_3b", 480, 150},
    {"pool3", 480, 75},         {"inception_4a", 512, 75},
    {"inception_4b", 512, 75},  {"inception_4c", 512, 75},
    {"inception_4d", 528, 75},  {"inception_4e", 832, 75},
    {"pool4", 832, 38},         {"inception_5a", 832, 38},
    {"inception_5b", 1024, 38},
};
#define NSTAGES (sizeof stages / sizeof stages[0])

static uint64_t stage_bytes(size_t i) {
  return (uint64_t)stages[i].channels * stages[i].hw * stages[i].hw * 4u *
         BATCH;
}

typedef struct result {
  lms_status_t st;
  char err[LMS__ERRBUF];
  const char *failed_at;
  double iter_ms, inmem_ms, busy;
  lms_stats_t stats;
  uint64_t bytes_checked, bytes_changed;
} result_t;

/* The output of stage i: a pattern seeded by i and the input's leading
 * bytes, so a wrong input gives a wrong output. */
static void stage_kernel(unsigned char *out, size_t n, const unsigned char *in,
                         size_t in_n, size_t i) {
  uint64_t x = 0x9E3779B97F4A7C15ull * (i + 1);
  for (size_t k = 0; k < in_n && k < 4096; k++) x = (x ^ in[k]) * 1099511628211ull;
  for (size_t k = 0; k < n; k++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[k] = (unsigned char)x;
  }
}

static void run(const lms_options_t *base, const char *lms_kb,
                const char *link, uint64_t limit, result_t *r) {
  memset(r, 0, sizeof *r);
  lms_options_t *o = NULL;
  lms_ctx_t *ctx = NULL;
  lms_stream_t s = NULL;
  lms_chunk_t *chunk[NSTAGES] = {0};
  unsigned char *scratch = NULL;
  char limit_text[32];
  snprintf(limit_text, sizeof limit_text, "%llu", (unsigned long long)limit);
  r->st = lms_options_create(&o);
  if (r->st != LMS_OK) return;
  lms__opts_copy(&o->v, &base->v);
  /* The run without lms fails on purpose; its message is printed below
   * rather than logged, unless a log level was asked for. */
  if (o->v.source[LMS__OPT_log] == LMS__SRC_DEFAULT)
    lms_options_set(o, "log", "error");
  if ((r->st = lms_options_set(o, "device", "sim")) != LMS_OK ||
      (r->st = lms_options_set(o, "gpu-limit", limit_text)) != LMS_OK ||
      (r->st = lms_options_set(o, "lms", lms_kb)) != LMS_OK ||
      (r->st = lms_options_set(o, "link", link)) != LMS_OK) {
    snprintf(r->err, sizeof r->err, "%s", lms_options_error(o));
    goto out;
  }
  if ((r->st = lms_ctx_create(o, &ctx)) != LMS_OK) goto out;
  if ((r->st = lms_stream_create(ctx, &s)) != LMS_OK) goto fail;

  uint64_t total = 0, fwd_ns[NSTAGES], inmem = 0;
  for (size_t i = 0; i < NSTAGES; i++) total += stage_bytes(i);
  for (size_t i = 0; i < NSTAGES; i++) {
    fwd_ns[i] = (uint64_t)((double)FORWARD_NS_PER_IMAGE * BATCH *
                           (double)stage_bytes(i) / (double)total) / SCALE;
    inmem += 3 * fwd_ns[i];
  }
  uint64_t t0 = lms_now_ns(ctx);
  /* Forward: each stage reads its input and writes its output. */
  for (size_t i = 0; i < NSTAGES; i++) {
    size_t n = stage_bytes(i) / SCALE;
    void *out = NULL, *in = NULL;
    r->failed_at = stages[i].name;
    if ((r->st = lms_alloc(ctx, n, &chunk[i])) != LMS_OK) goto fail;
    if ((r->st = lms_acquire(ctx, chunk[i], s, LMS_ACCESS_WRITE, &out)) != LMS_OK)
      goto fail;
    if (i > 0 &&
        (r->st = lms_acquire(ctx, chunk[i - 1], s, LMS_ACCESS_READ, &in)) != LMS_OK) {
      lms_release(ctx, chunk[i], s);
      goto fail;
    }
    lms_compute(ctx, s, fwd_ns[i]);
    stage_kernel(out, n, in, i > 0 ? stage_bytes(i - 1) / SCALE : 0, i);
    if (i > 0) lms_release(ctx, chunk[i - 1], s);
    lms_release(ctx, chunk[i], s);
  }
  /* Backward: each stage's saved output and input are read again, and the
   * output is checked byte for byte against a recomputation. */
  scratch = malloc(stage_bytes(1) / SCALE);
  if (scratch == NULL) {
    r->st = LMS_ERR_HOST_OOM;
    goto fail;
  }
  for (size_t i = NSTAGES; i-- > 0;) {
    size_t n = stage_bytes(i) / SCALE;
    void *out = NULL, *in = NULL;
    r->failed_at = stages[i].name;
    if ((r->st = lms_acquire(ctx, chunk[i], s, LMS_ACCESS_READ, &out)) != LMS_OK)
      goto fail;
    if (i > 0 &&
        (r->st = lms_acquire(ctx, chunk[i - 1], s, LMS_ACCESS_READ, &in)) != LMS_OK) {
      lms_release(ctx, chunk[i], s);
      goto fail;
    }
    lms_compute(ctx, s, 2 * fwd_ns[i]);
    stage_kernel(scratch, n, in, i > 0 ? stage_bytes(i - 1) / SCALE : 0, i);
    const unsigned char *got = out;
    for (size_t k = 0; k < n; k++) r->bytes_changed += got[k] != scratch[k];
    r->bytes_checked += n;
    if (i > 0) lms_release(ctx, chunk[i - 1], s);
    lms_release(ctx, chunk[i], s);
  }
  if ((r->st = lms_stream_sync(ctx, s)) != LMS_OK) goto fail;
  r->failed_at = NULL;
  r->iter_ms = (double)(lms_now_ns(ctx) - t0) / 1e6;
  r->inmem_ms = (double)inmem / 1e6;
  lms_stats_get(ctx, &r->stats);
  lms__sim_report_t rep;
  lms__sim_report(ctx->dev, &rep);
  r->busy = rep.now_ns ? (double)rep.compute_busy_ns / (double)rep.now_ns : 0;
fail:
  if (r->st != LMS_OK) snprintf(r->err, sizeof r->err, "%s", lms_ctx_last_error(ctx));
  free(scratch);
  for (size_t i = 0; i < NSTAGES; i++) lms_free(ctx, chunk[i]);
  if (s) lms_stream_destroy(ctx, s);
  lms_ctx_destroy(ctx);
out:
  lms_options_destroy(o);
}

int lms__cli_demo(const lms_options_t *base) {
  uint64_t total = 0;
  for (size_t i = 0; i < NSTAGES; i++) total += stage_bytes(i);
  uint64_t limit = (5ull << 28) / SCALE; /* 1.25 GiB at full size */
  printf("lms demo: GoogleNet-shaped forward + backward at 1200x1200, batch %d,"
         " on the simulated device\n", BATCH);
  printf("  %zu blobs, %.2f GB at full size; run at 1/%d scale: %.1f MB of "
         "chunks under a %.0f MiB GPU limit (%.1fx oversubscribed)\n",
         NSTAGES, (double)total / 1e9, SCALE, (double)total / SCALE / 1e6,
         (double)limit / (1 << 20), (double)total / SCALE / (double)limit);

  result_t r;
  run(base, "-1", "pcie3", limit, &r);
  if (r.st == LMS_OK) {
    printf("  without lms (-lms -1): unexpectedly fits\n");
    return 1;
  }
  printf("  without lms (-lms -1): %s at %s:\n    %s\n",
         lms_status_name(r.st), r.failed_at ? r.failed_at : "setup", r.err);

  printf("\n  with lms (-lms 0: every chunk homed in pinned host memory), "
         "swapping on demand:\n");
  printf("  %-8s %9s %10s %8s %8s %9s %9s %7s %7s %13s\n", "link", "iter ms",
         "in-mem ms", "ratio", "GPU busy", "H2D MB", "D2H MB", "swapin",
         "wrback", "bytes changed");
  static const char *links[] = {"pcie3", "pcie5", "nvlink1", "nvlink2", "c2c"};
  int bad = 0;
  for (size_t k = 0; k < sizeof links / sizeof links[0]; k++) {
    run(base, "0", links[k], limit, &r);
    if (r.st != LMS_OK) {
      printf("  %-8s failed at %s: %s: %s\n", links[k],
             r.failed_at ? r.failed_at : "setup", lms_status_name(r.st), r.err);
      bad = 1;
      continue;
    }
    printf("  %-8s %9.1f %10.1f %7.2fx %7.1f%% %9.1f %9.1f %7lld %7lld "
           "%6llu of %.0fM\n",
           links[k], r.iter_ms, r.inmem_ms, r.iter_ms / r.inmem_ms,
           100.0 * r.busy, (double)r.stats.bytes_h2d.total / 1e6,
           (double)r.stats.bytes_d2h.total / 1e6,
           (long long)r.stats.swaps_in.total, (long long)r.stats.swaps_out.total,
           (unsigned long long)r.bytes_changed, (double)r.bytes_checked / 1e6);
    if (r.bytes_changed != 0) bad = 1;
  }
  printf("\n  in-mem ms: the same compute with unlimited GPU memory.  Swapping "
         "here is on demand, with no prefetch: each miss waits for its copy.\n");
  return bad;
}
