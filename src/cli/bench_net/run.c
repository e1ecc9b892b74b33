/* run.c - one run of `lms bench net`'s GoogLeNet: its buffers, plain or
 * lms chunks, filled; warm-up and measured iterations timed with events;
 * the trace written and the simulator's prediction of the same run.
 *
 * Note [One network, measured and simulated]
 * The acquires of each step are the references of the step in the
 * lowered workload (lms__net_googlenet), in its order and access, and the
 * kernels are the layer's.  So the trace this command writes is the
 * built-in workload with each step's time replaced by the time its
 * kernels took on this GPU (events around them, after the stream's waits
 * for copies), and the prediction printed beside each lms run is that
 * trace replayed by the simulator over the link this run had: the rates
 * measured here, or the emulated link's (--link) when copies are slowed. */
#include <sys/stat.h>
#include <unistd.h>

#include "cli/bench_net/net.h"

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
      int rc = lms__gnet_step(b, si);
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

void lms__gnet_run_one(const lms_options_t *base, const bn_args_t *a,
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
  if (rc == 0) rc = lms__gnet_setup(b);
  if (rc == 0) rc = alloc_bufs(b);
  if (rc == 0) rc = init_data(b);
  if (rc == 0) rc = iterate(b, a->iterations, r);
  /* Note [What bench net computed]: after the measured iterations, so
   * that reading the results times nothing. */
  if (rc == 0 && (rc = lms__gnet_check(b)) == 0) {
    r->checked = 1;
    r->loss = b->loss;
    r->sum = b->sum;
    r->sumsq = b->sumsq;
  }
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
  lms__gnet_teardown(b);
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

