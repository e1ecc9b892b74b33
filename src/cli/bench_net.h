/* bench_net.h - `lms bench net`'s arguments (bench_net.c) and the run of
 * GoogLeNet on cuDNN and cuBLAS behind it (bench_net/, in lms-bench-net
 * alone). */
#ifndef LMS_CLI_BENCH_NET_H
#define LMS_CLI_BENCH_NET_H

#include <stdint.h>

#include "cli/cli.h"

#define BN_MAX_CONFIGS 8
#define BN_MAX_BATCHES 8

typedef struct bn_args {
  int batches[BN_MAX_BATCHES];
  size_t nbatches;
  int64_t configs[BN_MAX_CONFIGS]; /* -2: plain; else -lms KB */
  size_t nconfigs;
  int size, train, iterations;
  int discard; /* lms runs discard dead blobs (Note [Dead after the last use]) */
  char trace_dir[LMS__PATH_MAX];
} bn_args_t;


/* Every configuration at every batch on the CUDA device, the table and
 * the per-image ratio printed (bench_net/bench.c): 0, 1 when a run failed,
 * LMS__EXIT_NO_GPU without a device. */
int lms__bench_net_gpu(const lms_options_t *base, const bn_args_t *a);

#endif
