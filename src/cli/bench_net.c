/* bench_net.c - `lms bench net`: the source scenario on a real GPU.
 *
 * Runs GoogLeNet (the network of workloads.c, Note [GoogLeNet blob memory
 * and the published figures]) at 1200x1200 on cuDNN (convolutions,
 * pooling, LRN, ReLU, softmax) and cuBLAS (the classifier), the way caffe
 * does: every blob is allocated once and kept, the forward pass and, in
 * training, a softmax loss and the backward pass, with no solver update
 * (what `caffe time` runs).  Each configuration is run at each batch:
 *   plain       every blob in cudaMalloc'ed memory, counted against the
 *               GPU limit: caffe without LMS;
 *   lms:KB      every blob an lms chunk through the handle-mode API
 *               (lms_acquire / lms_release on the compute stream), with
 *               -lms KB (lms_frac 0) and the options given.
 * It reports, per run: the time of an iteration and of its forward pass,
 * both per image, GPU busy % (the compute stream's kernel time over the
 * iteration's wall time), bytes each way, prefetches that were late and
 * demand misses; then the per-image ratio of the scenario (batch 10 with
 * lms against batch 1 plain, 0.58 for caffe-ibm on the P100).
 *
 * The network itself (descriptors, layers, one run, the benchmark's loop)
 * is in bench_net/, linked into lms-bench-net alone (Note [bench net in a
 * binary of its own] in CMakeLists.txt): Note [One network, measured and
 * simulated] (bench_net/run.c), Note [cuDNN pooling and caffe's rounding]
 * (bench_net/setup.c).
 *
 * Invariants: a kernel touches only chunks its step acquired; device
 * memory outside lms is the cuDNN workspace alone, and the lms budget is
 * the GPU limit less that workspace; a run that does not fit says so and
 * the next one runs. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/bench_net.h"

#if defined(LMS_HAVE_CUDA) && defined(LMS_HAVE_CUDNN)

static int bench_net(const lms_options_t *base, const bn_args_t *a) {
  return lms__bench_net_gpu(base, a);
}

#elif defined(LMS_BENCH_NET_BUILT)

/* Note [bench net in a binary of its own] (CMakeLists.txt): lms-bench-net
 * beside this binary (the build tree), or in the install's libexec/lms
 * (LMS_LIBEXECREL, relative to the bin directory); LMS_BENCH_NET names
 * it elsewhere.  0 with its path in buf, -1 with why in buf. */
#ifndef LMS_LIBEXECREL
#define LMS_LIBEXECREL "../libexec/lms"
#endif
#define BN_HELPER "lms-bench-net"

static int find_helper(char *buf, size_t size) {
  const char *env = getenv("LMS_BENCH_NET");
  if (env != NULL && env[0] != '\0') {
    if (access(env, X_OK) == 0) {
      snprintf(buf, size, "%s", env);
      return 0;
    }
    snprintf(buf, size, "LMS_BENCH_NET='%s': %s; accepted: the path of "
             BN_HELPER, env, strerror(errno));
    return -1;
  }
  char dir[LMS__PATH_MAX];
  if (lms__cli_exe_dir(dir, sizeof dir) != 0) {
    snprintf(buf, size, "cannot find lms's directory: %s; set LMS_BENCH_NET "
             "to the path of " BN_HELPER, strerror(errno));
    return -1;
  }
  static const char *const rels[] = {"/" BN_HELPER,
                                     "/" LMS_LIBEXECREL "/" BN_HELPER};
  for (size_t i = 0; i < sizeof rels / sizeof rels[0]; i++) {
    int n = snprintf(buf, size, "%s%s", dir, rels[i]);
    if (n > 0 && (size_t)n < size && access(buf, X_OK) == 0) return 0;
  }
  int n = snprintf(buf, size, "no " BN_HELPER " in %s or %s/" LMS_LIBEXECREL
                   " (it is built and installed with lms where cuDNN was "
                   "found); set LMS_BENCH_NET to its path", dir, dir);
  if (n < 0) buf[0] = '\0';
  return -1;
}

const char *lms__bench_net_where(void) {
  static char where[3 * LMS__PATH_MAX];
  char path[2 * LMS__PATH_MAX + 256];
  int found = find_helper(path, sizeof path) == 0;
  int n = snprintf(where, sizeof where, "%s%s", found ? "" : "not available: ",
                   path);
  return n < 0 ? "not available" : where;
}

/* Runs lms-bench-net in this process's place with the command line as
 * given: it is lms with cuDNN and cuBLAS, and parses the same flags. */
static int bench_net(const lms_options_t *base, const bn_args_t *a) {
  (void)base;
  (void)a;
  char path[2 * LMS__PATH_MAX + 256];
  if (find_helper(path, sizeof path) != 0) {
    fprintf(stderr, "lms bench net: %s\n", path);
    return LMS__EXIT_NO_GPU;
  }
  fflush(NULL);
  char *saved = lms__cli_argv[0];
  lms__cli_argv[0] = path;
  execv(path, lms__cli_argv);
  lms__cli_argv[0] = saved;
  fprintf(stderr, "lms bench net: cannot run %s: %s\n", path,
          strerror(errno));
  return 1;
}

#else /* no cuDNN */

const char *lms__bench_net_where(void) {
  return "not built (no CUDA toolkit, cuDNN or cuBLAS when lms was built)";
}

static int bench_net(const lms_options_t *base, const bn_args_t *a) {
  (void)base;
  (void)a;
  fprintf(stderr, "lms bench net: this build of lms has no CUDA device or no "
                  "cuDNN (nvcc or cudnn.h was not found when it was built)\n");
  return LMS__EXIT_NO_GPU;
}

#endif

/* ---- Arguments (Note [A command's flags] in cli.h) ----------------------- */

static int batch_item(const char *cmd, const lms__cli_flag_t *f,
                      const char *item, void *out) {
  static const lms__cli_flag_t kBatch = {.flag = "--batch",
                                         .kind = LMS__CLI_INT, .lo = 1,
                                         .hi = 4096};
  (void)f;
  long v;
  if (lms__cli_int(cmd, &kBatch, item, &v) != 0) return -1;
  *(int *)out = (int)v;
  return 0;
}

static int config_item(const char *cmd, const lms__cli_flag_t *f,
                       const char *item, void *out) {
  int64_t *c = out;
  char err[LMS__ERRBUF];
  if (strcmp(item, "plain") == 0) {
    *c = -2;
    return 0;
  }
  if (strncmp(item, "lms:", 4) != 0 ||
      lms__parse_kb(f->flag, item + 4, c, err) != LMS_OK || *c < 0) {
    fprintf(stderr, "lms %s: %s: '%s' is not accepted; accepted: plain or "
                    "lms:KB (KB >= 0), comma-separated\n", cmd, f->flag, item);
    return -1;
  }
  return 0;
}

/* --trace-dir: made here, so that a run does not end with nothing
 * written. */
static int trace_dir(const char *cmd, const lms__cli_flag_t *f,
                     const char *val, void *field) {
  if (lms__cli_path(cmd, f->flag, val, field, LMS__PATH_MAX)) return -1;
  if (mkdir(val, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "lms %s: %s '%s': cannot create the directory: %s\n",
            cmd, f->flag, val, strerror(errno));
    return -1;
  }
  return 0;
}

#define B(field) offsetof(bn_args_t, field)
static const lms__cli_flag_t kBenchFlags[] = {
    {.flag = "--batch", .kind = LMS__CLI_LIST, .at = B(batches),
     .size = sizeof(int), .count = B(nbatches), .max = BN_MAX_BATCHES,
     .fn = batch_item, .accepted = "batch sizes from 1 to 4096"},
    {.flag = "--configs", .kind = LMS__CLI_LIST, .at = B(configs),
     .size = sizeof(int64_t), .count = B(nconfigs), .max = BN_MAX_CONFIGS,
     .fn = config_item, .accepted = "plain or lms:KB (KB >= 0)"},
    {.flag = "--size", .kind = LMS__CLI_INT, .at = B(size), .lo = 224,
     .hi = 4096},
    {.flag = "--iterations", .kind = LMS__CLI_INT, .at = B(iterations),
     .lo = 1, .hi = 50},
    {.flag = "--trace-dir", .kind = LMS__CLI_FN, .at = B(trace_dir),
     .fn = trace_dir, .accepted = "a directory, made if missing"},
    {.flag = "--forward", .kind = LMS__CLI_SWITCH, .at = B(train), .lo = 0},
    {.flag = "--train", .kind = LMS__CLI_SWITCH, .at = B(train), .lo = 1},
    {.flag = "--discard", .kind = LMS__CLI_SWITCH, .at = B(discard), .lo = 1},
};
#undef B

static const lms__cli_spec_t kBench = {
    .cmd = "bench net",
    .help = "bench",
    .parts = {{kBenchFlags, sizeof kBenchFlags / sizeof kBenchFlags[0], 0}},
};

int lms__bench_net(const lms_options_t *base, int argc, char **argv) {
  bn_args_t a;
  memset(&a, 0, sizeof a);
  a.batches[0] = 1;
  a.batches[1] = 10;
  a.nbatches = 2;
  a.configs[0] = -2;
  a.configs[1] = 8192;
  a.configs[2] = 160000000;
  a.nconfigs = 3;
  a.train = 1;
  a.size = 1200;
  a.iterations = 3;
  if (lms__cli_parse(&kBench, argc, argv, &a, NULL) < 0) return 2;
  return bench_net(base, &a);
}

void lms__bench_net_spec(lms__cli_spec_t *out) { *out = kBench; }

int lms__bench_extract_args(int *argc, char **argv, char **out) {
  return lms__cli_extract(argc, argv, out, &kBench);
}
