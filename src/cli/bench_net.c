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

/* ---- Arguments ---------------------------------------------------------- */

static int parse_int(const char *flag, const char *v, int lo, int hi, int *out) {
  char *e = NULL;
  long x = strtol(v, &e, 10);
  if (e == v || *e != '\0' || x < lo || x > hi) {
    fprintf(stderr, "lms bench net: %s '%s' is not accepted; accepted: a "
                    "whole number from %d to %d\n", flag, v, lo, hi);
    return -1;
  }
  *out = (int)x;
  return 0;
}

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
  for (int i = 0; i < argc; i++) {
    const char *f = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = strcmp(f, "--batch") == 0 || strcmp(f, "--size") == 0 ||
                strcmp(f, "--iterations") == 0 || strcmp(f, "--configs") == 0 ||
                strcmp(f, "--trace-dir") == 0;
    if (takes && v == NULL) {
      fprintf(stderr, "lms bench net: %s needs a value\n", f);
      return 2;
    }
    if (strcmp(f, "--forward") == 0) {
      a.train = 0;
    } else if (strcmp(f, "--discard") == 0) {
      a.discard = 1;
    } else if (strcmp(f, "--train") == 0) {
      a.train = 1;
    } else if (strcmp(f, "--size") == 0) {
      if (parse_int(f, v, 224, 4096, &a.size)) return 2;
    } else if (strcmp(f, "--iterations") == 0) {
      if (parse_int(f, v, 1, 50, &a.iterations)) return 2;
    } else if (strcmp(f, "--trace-dir") == 0) {
      if (lms__cli_path("bench net", "--trace-dir", v, a.trace_dir,
                        sizeof a.trace_dir))
        return 2;
      /* Made here, so that a run does not end with nothing written. */
      if (mkdir(v, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "lms bench net: --trace-dir '%s': cannot create "
                "the directory: %s\n", v, strerror(errno));
        return 2;
      }
    } else if (strcmp(f, "--batch") == 0 || strcmp(f, "--configs") == 0) {
      int is_batch = f[2] == 'b';
      char buf[256];
      if (lms__cli_list_fits("bench net", f, v, sizeof buf)) return 2;
      snprintf(buf, sizeof buf, "%s", v);
      int cnt = 0;
      for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
           tok = strtok_r(NULL, ",", &save)) {
        if (cnt == (is_batch ? BN_MAX_BATCHES : BN_MAX_CONFIGS)) {
          fprintf(stderr, "lms bench net: %s: at most %d values\n", f,
                  is_batch ? BN_MAX_BATCHES : BN_MAX_CONFIGS);
          return 2;
        }
        if (is_batch) {
          if (parse_int(f, tok, 1, 4096, &a.batches[cnt])) return 2;
        } else if (strcmp(tok, "plain") == 0) {
          a.configs[cnt] = -2;
        } else {
          char err[LMS__ERRBUF];
          if (strncmp(tok, "lms:", 4) != 0 ||
              lms__parse_kb(f, tok + 4, &a.configs[cnt], err) != LMS_OK ||
              a.configs[cnt] < 0) {
            fprintf(stderr, "lms bench net: --configs: '%s' is not accepted; "
                            "accepted: plain or lms:KB (KB >= 0), comma-"
                            "separated\n", tok);
            return 2;
          }
        }
        cnt++;
      }
      if (cnt == 0) {
        fprintf(stderr, "lms bench net: %s is empty\n", f);
        return 2;
      }
      if (is_batch) a.nbatches = cnt;
      else a.nconfigs = cnt;
    } else {
      fprintf(stderr, "lms bench net: unknown argument '%s'; accepted: "
                      "--batch N,.. --size N --forward --train --iterations N "
                      "--configs plain,lms:KB,.. --trace-dir DIR --discard\n",
              f);
      return 2;
    }
    if (takes) i++;
  }
  return bench_net(base, &a);
}


/* The flags of `lms bench net` and whether each takes a value. */
static const lms__cli_flag_t kBenchFlags[] = {{"--batch", 1},      {"--size", 1},    {"--iterations", 1},
                   {"--configs", 1},    {"--trace-dir", 1}, {"--forward", 0},
                   {"--train", 0},      {"--discard", 0}};

int lms__bench_extract_args(int *argc, char **argv, char **out) {
  return lms__cli_extract(argc, argv, out, kBenchFlags,
                          sizeof kBenchFlags / sizeof kBenchFlags[0]);
}
