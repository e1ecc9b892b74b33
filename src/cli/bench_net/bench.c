/* bench.c - `lms bench net` on the GPU: the link's own rates measured,
 * then every configuration at every batch, a row each, and the per-image
 * ratio of the source scenario (batch 10 with lms against batch 1 plain). */
#include "cli/bench_net/net.h"

/* One 256 MiB copy each way, pinned, and one each way at once: the best
 * of three of each. */
static int measure_link(bn_env_t *env) {
  size_t nb = 256u << 20;
  void *h[2] = {NULL, NULL}, *d[2] = {NULL, NULL};
  cudaStream_t s[2] = {NULL, NULL};
  cudaEvent_t e0 = NULL, e1[2] = {NULL, NULL};
  int ok = cudaEventCreate(&e0) == cudaSuccess;
  for (int k = 0; k < 2 && ok; k++)
    ok = cudaHostAlloc(&h[k], nb, cudaHostAllocPortable) == cudaSuccess &&
         cudaMalloc(&d[k], nb) == cudaSuccess &&
         cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking) == cudaSuccess &&
         cudaEventCreate(&e1[k]) == cudaSuccess;
  double best[3] = {0, 0, 0};
  for (int dir = 0; ok && dir < 3; dir++)
    for (int rep = 0; ok && rep < 3; rep++) {
      cudaEventRecord(e0, s[0]);
      cudaStreamWaitEvent(s[1], e0, 0);
      if (dir != 1) cudaMemcpyAsync(d[0], h[0], nb, cudaMemcpyHostToDevice, s[0]);
      if (dir != 0) cudaMemcpyAsync(h[1], d[1], nb, cudaMemcpyDeviceToHost, s[1]);
      cudaEventRecord(e1[0], s[0]);
      cudaEventRecord(e1[1], s[1]);
      float ms0 = 0, ms1 = 0;
      ok = cudaEventSynchronize(e1[0]) == cudaSuccess &&
           cudaEventSynchronize(e1[1]) == cudaSuccess &&
           cudaEventElapsedTime(&ms0, e0, e1[0]) == cudaSuccess &&
           cudaEventElapsedTime(&ms1, e0, e1[1]) == cudaSuccess;
      double ms = ms0 > ms1 ? ms0 : ms1;
      double gbps = (double)nb * (dir == 2 ? 2.0 : 1.0) / (ms * 1e-3) / 1e9;
      if (ok && gbps > best[dir]) best[dir] = gbps;
    }
  env->h2d_gbps = best[0];
  env->d2h_gbps = best[1];
  env->both_gbps = best[2];
  if (e0) cudaEventDestroy(e0);
  for (int k = 0; k < 2; k++) {
    if (e1[k]) cudaEventDestroy(e1[k]);
    if (s[k]) cudaStreamDestroy(s[k]);
    cudaFree(d[k]);
    cudaFreeHost(h[k]);
  }
  return ok ? 0 : -1;
}

/* Note [What bench net computed] (layers.c): how far two runs' figures
 * may differ, relative, and still be the same computation. */
#define BN_AGREE 1e-3

static int agrees(double x, double ref) {
  double scale = fabs(ref) > 1e-30 ? fabs(ref) : 1e-30;
  return isfinite(x) && fabs(x - ref) <= BN_AGREE * scale;
}

static void config_name(int64_t c, char *buf, size_t len) {
  if (c == -2) snprintf(buf, len, "plain");
  else snprintf(buf, len, "lms:%lld", (long long)c);
}

int lms__bench_net_gpu(const lms_options_t *base, const bn_args_t *a) {
  char why[256] = "";
  if (lms__cuda_device_count(why, sizeof why) <= 0) {
    fprintf(stderr, "lms bench net: needs a CUDA device (%s)\n", why);
    return LMS__EXIT_NO_GPU;
  }
  bn_env_t env;
  memset(&env, 0, sizeof env);
  if (cudnnCreate(&env.dnn) != CUDNN_STATUS_SUCCESS ||
      cublasCreate(&env.blas) != CUBLAS_STATUS_SUCCESS ||
      cudaMalloc(&env.ws, BN_WS_BYTES) != cudaSuccess || measure_link(&env) != 0) {
    fprintf(stderr, "lms bench net: cannot set up cuDNN, cuBLAS and the "
                    "workspace: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  uint64_t limit = base->v.gpu_limit ? base->v.gpu_limit : 16ull << 30;
  int throttled = base->v.source[LMS__OPT_link] != LMS__SRC_DEFAULT;
  printf("lms bench net: GoogLeNet %dx%d, %s, GPU limit %.1f GiB (%llu MiB of "
         "it the cuDNN workspace), %d iterations after %d warm-up\n",
         a->size, a->size, a->train ? "forward + backward" : "forward only",
         (double)limit / (1 << 30), (unsigned long long)(BN_WS_BYTES >> 20),
         a->iterations, BN_WARMUP);
  if (a->discard)
    printf("lms runs discard each blob after its last use in an iteration "
           "(--discard)\n");
  printf("link: measured %.1f GB/s host to device, %.1f GB/s device to host, "
         "%.1f GB/s both at once%s\n", env.h2d_gbps, env.d2h_gbps, env.both_gbps,
         throttled ? "; copies slowed to the --link given" : "");
  printf("%-14s %5s %9s %9s %9s %9s %6s %7s %7s %6s %6s %9s %6s %6s\n",
         "run", "batch", "iter ms", "fwd ms", "img ms", "fwd/img", "busy%",
         "GB in", "GB out", "late", "miss", "sim ms", "err%", "pool");
  double plain_b1_fwd = -1, plain_b1_iter = -1;
  double best_ratio_fwd = -1, best_ratio_iter = -1;
  char best_cfg[64] = "";
  int failures = 0;
  /* The first run that computed at each batch: what the others must
   * agree with. */
  bn_result_t *ref = calloc(a->nbatches, sizeof *ref);
  char (*ref_name)[32] = calloc(a->nbatches, sizeof *ref_name);
  if (ref == NULL || ref_name == NULL) {
    free(ref);
    free(ref_name);
    fprintf(stderr, "lms bench net: no host memory\n");
    return 1;
  }
  for (size_t ci = 0; ci < a->nconfigs; ci++)
    for (size_t bi = 0; bi < a->nbatches; bi++) {
      bn_result_t r;
      int batch = a->batches[bi];
      char name[32];
      config_name(a->configs[ci], name, sizeof name);
      fflush(stdout);
      lms__gnet_run_one(base, a, &env, batch, a->configs[ci], &r);
      if (r.ok != 1) {
        printf("%-14s %5d   %s: %s\n", name, batch,
               r.ok == 0 ? "does not fit" : "failed", r.why);
        if (r.ok < 0) failures++;
        continue;
      }
      double err = r.pred_ms > 0 ? 100.0 * (r.pred_ms - r.iter_ms) / r.iter_ms : 0;
      printf("%-14s %5d %9.1f %9.1f %9.2f %9.2f %6.1f %7.2f %7.2f %6lld %6lld ",
             name, batch, r.iter_ms, r.fwd_ms, r.iter_ms / batch, r.fwd_ms / batch,
             100.0 * r.busy_ms / r.iter_ms, r.gb_in, r.gb_out,
             (long long)r.late, (long long)r.misses);
      if (r.pred_ms > 0) printf("%9.1f %+6.1f", r.pred_ms, err);
      else printf("%9s %6s", "-", "-");
      printf(" %6.2f\n", r.pool_gib);
      /* Note [What bench net computed]. */
      if (a->train)
        printf("%-14s %5s   loss %.6f; weight gradients: sum %.6e, sum of "
               "squares %.6e", "", "", r.loss, r.sum, r.sumsq);
      else
        printf("%-14s %5s   output: sum %.6e, sum of squares %.6e", "", "",
               r.sum, r.sumsq);
      if (!ref[bi].checked) {
        ref[bi] = r;
        snprintf(ref_name[bi], sizeof ref_name[bi], "%s", name);
        printf("\n");
      } else if ((!a->train || agrees(r.loss, ref[bi].loss)) &&
                 agrees(r.sum, ref[bi].sum) &&
                 agrees(r.sumsq, ref[bi].sumsq)) {
        printf("; the same as %s\n", ref_name[bi]);
      } else {
        printf("; DIFFERS from %s (more than %g relative)\n", ref_name[bi],
               BN_AGREE);
        failures++;
      }
      if (a->configs[ci] == -2 && batch == 1) {
        plain_b1_fwd = r.fwd_ms;
        plain_b1_iter = r.iter_ms;
      }
      if (a->configs[ci] != -2 && batch > 1 && plain_b1_fwd > 0) {
        double rf = r.fwd_ms / batch / plain_b1_fwd;
        if (best_ratio_fwd < 0 || rf < best_ratio_fwd) {
          best_ratio_fwd = rf;
          best_ratio_iter = r.iter_ms / batch / plain_b1_iter;
          snprintf(best_cfg, sizeof best_cfg, "%s at batch %d", name, batch);
        }
      }
      fflush(stdout);
    }
  if (best_ratio_fwd > 0)
    printf("per image, %s against batch 1 plain: forward %.2f, whole iteration "
           "%.2f (caffe-ibm on the P100, forward: 0.58)\n", best_cfg,
           best_ratio_fwd, best_ratio_iter);
  free(ref);
  free(ref_name);
  cudaFree(env.ws);
  cublasDestroy(env.blas);
  cudnnDestroy(env.dnn);
  return failures ? 1 : 0;
}

const char *lms__bench_net_where(void) {
  return "in this binary (linked with cuDNN and cuBLAS)";
}
