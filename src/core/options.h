/* options.h - the one options table.  From LMS__OPTIONS_MAP come the
 * settings struct, the flags, the LMS_* environment twins, the help text,
 * validation and the printout of effective settings.
 *
 * Precedence: default < environment < flag or lms_options_set(). */
#ifndef LMS_CORE_OPTIONS_H
#define LMS_CORE_OPTIONS_H

#include <stdint.h>

#include "core/link.h"
#include "core/status.h"
#include "lms/lms.h"

typedef enum lms__device_kind {
  LMS_DEVICE_AUTO = 0,
  LMS_DEVICE_SIM,
  LMS_DEVICE_CUDA
} lms__device_kind_t;

typedef enum lms__policy {
  LMS_POLICY_ONDEMAND = 0, /* caffe-ibm: swap in at acquire, out at release */
  LMS_POLICY_LRU,          /* prefetch; least recently used victims */
  LMS_POLICY_SCHEDULE      /* prefetch; furthest next use victims */
} lms__policy_t;

typedef enum lms__sched_source {
  LMS_SCHED_LEARN = 0, /* period of the acquire sequence */
  LMS_SCHED_STACK,     /* training stack discipline of allocations */
  LMS_SCHED_OFF
} lms__sched_source_t;

/* How far ahead prefetch looks: at most `steps` steps and at most `bytes`
 * (or, when bytes is 0, `percent` of the device budget) not yet needed. */
typedef struct lms__window {
  uint32_t steps;  /* 0: prefetch off */
  uint64_t bytes;  /* 0: use percent */
  double percent;  /* of the budget, 0..100 */
} lms__window_t;

typedef struct lms__logspec {
  int level;         /* lms__log_level_t */
  unsigned subsys;   /* mask of LMS_LOG_SUB(...) bits */
} lms__logspec_t;

#define LMS__PATH_MAX 256

/* X(field, kind, flag, alt_flag, env, default, help)
 *   kind: KB (whole KB, -1 = off), FRAC (0..1), SIZE (bytes with unit,
 *   > 0), DEVICE, LINK, LOG, PATH (text), FAULT (OP:N[,OP:N]), POLICY,
 *   SCHED, WINDOW (STEPS[,BYTES|PERCENT%]), BOOL.
 *   flag: written "--flag"; a flag named with an underscore is caffe's
 *   spelling and is also accepted with one dash ("-lms", "-lms_frac").
 *   alt_flag: another accepted name, or NULL. */
#define LMS__OPTIONS_MAP(X)                                                   \
  X(lms_kb, KB, "lms", NULL, "LMS_KB", "-1",                                  \
    "keep chunks of at least this many KB in host memory; -1 is off")         \
  X(lms_frac, FRAC, "lms_frac", "lms-frac", "LMS_FRAC", "0",                  \
    "offload only once device demand exceeds this fraction of capacity")      \
  X(gpu_limit, SIZE, "gpu-limit", NULL, "LMS_GPU_LIMIT", "",                  \
    "virtual device capacity, e.g. 16GiB; default: the device's own")         \
  X(host_limit, SIZE, "host-limit", NULL, "LMS_HOST_LIMIT", "",               \
    "cap on pinned host memory, e.g. 64GiB; default: no cap")                 \
  X(node_host_limit, SIZE, "node-host-limit", NULL, "LMS_NODE_HOST_LIMIT",    \
    "", "cap on the pinned host memory of all lms processes of this node "    \
    "together (the ranks of a job), e.g. 256GiB; default: no cap")           \
  X(device, DEVICE, "device", NULL, "LMS_DEVICE", "auto",                     \
    "sim, cuda or auto (cuda when a GPU is present, else sim)")               \
  X(link, LINK, "link", NULL, "LMS_LINK", "pcie3",                            \
    "link: pcie3 pcie4 pcie5 nvlink1 nvlink2 c2c, or GB/s; on a GPU, set "   \
    "explicitly, copies are slowed to it")                                    \
  X(log, LOG, "log", NULL, "LMS_LOG", "warn",                                 \
    "LEVEL[,SUBSYS...]: none error warn info debug; core alloc swap ...")     \
  X(log_file, PATH, "log-file", NULL, "LMS_LOG_FILE", "",                     \
    "write logs here instead of stderr; %p becomes the process id, %r the "   \
    "rank under torchrun or mpirun")                                          \
  X(stats, PATH, "stats", NULL, "LMS_STATS", "",                              \
    "write stats as JSON to this file when the context ends; %p and %r as "   \
    "for --log-file")                                                         \
  X(fail, FAULT, "fail", NULL, "LMS_FAIL", "",                                \
    "simulated device: fail the Nth call of an operation, OP:N[,OP:N]")      \
  X(policy, POLICY, "policy", NULL, "LMS_POLICY", "schedule",                 \
    "ondemand (caffe-ibm: no prefetch), lru or schedule (prefetch; victims "  \
    "by LRU or by furthest next use)")                                        \
  X(schedule, SCHED, "schedule", NULL, "LMS_SCHEDULE", "learn",               \
    "step sequence when none is declared: learn (from the acquires), "        \
    "stack (allocation order), off")                                          \
  X(prefetch_window, WINDOW, "prefetch-window", NULL, "LMS_PREFETCH_WINDOW",  \
    "1000,60%", "prefetch this far ahead: STEPS[,BYTES or PERCENT of the "     \
    "budget]; 0 is off")                                                      \
  X(piece_size, PIECE, "piece-size", NULL, "LMS_PIECE_SIZE", "",             \
    "make each host-homed chunk of at least an eighth of the budget pieces "  \
    "of this size, kept and moved apart, e.g. 32MiB; auto: pieces of 32 MiB " \
    "of each chunk of at least half the budget; needs a device that maps "    \
    "memory (the simulated one); default: chunks whole")                      \
  X(trace, PATH, "trace", NULL, "LMS_TRACE", "",                              \
    "write the run's steps as a trace to this file when the context ends; "  \
    "%p and %r as for --log-file")                                            \
  X(sim_bytes, BOOL, "sim-bytes", NULL, "LMS_SIM_BYTES", "on",                \
    "simulated device: move the bytes of copies; off keeps only the timing") \
  X(sim_measured_waits, BOOL, "sim-measured-waits", NULL,                     \
    "LMS_SIM_MEASURED_WAITS", "off",                                          \
    "simulated device: tell how long a stream waited only after the wait, "   \
    "with timed events, as a GPU does; off tells it ahead")

/* The C type each kind is stored as. */
#define LMS__OPT_T_KB int64_t
#define LMS__OPT_T_FRAC double
#define LMS__OPT_T_SIZE uint64_t  /* 0 = not set */
#define LMS__OPT_T_PIECE uint64_t /* 0 = not set; piece_div says of what */
#define LMS__OPT_T_DEVICE lms__device_kind_t
#define LMS__OPT_T_LINK lms__link_t
#define LMS__OPT_T_LOG lms__logspec_t
#define LMS__OPT_T_PATH char *    /* points into the owning lms_options */
#define LMS__OPT_T_FAULT char *
#define LMS__OPT_T_POLICY lms__policy_t
#define LMS__OPT_T_SCHED lms__sched_source_t
#define LMS__OPT_T_WINDOW lms__window_t
#define LMS__OPT_T_BOOL int

typedef enum lms__opt_id {
#define LMS__OPT_ID_(field, kind, flag, alt, env, def, help) LMS__OPT_##field,
  LMS__OPTIONS_MAP(LMS__OPT_ID_)
#undef LMS__OPT_ID_
  LMS__OPT_COUNT
} lms__opt_id_t;

typedef enum lms__opt_source {
  LMS__SRC_DEFAULT = 0,
  LMS__SRC_ENV,
  LMS__SRC_SET /* flag or lms_options_set() */
} lms__opt_source_t;

/* The settings.  Text values live in fixed buffers so that the struct can
 * be copied by assignment. */
typedef struct lms__opts {
#define LMS__OPT_FIELD_(field, kind, flag, alt, env, def, help)               \
  LMS__OPT_T_##kind field;
  LMS__OPTIONS_MAP(LMS__OPT_FIELD_)
#undef LMS__OPT_FIELD_
  char log_file_buf[LMS__PATH_MAX];
  char stats_buf[LMS__PATH_MAX];
  char fail_buf[LMS__PATH_MAX];
  char trace_buf[LMS__PATH_MAX];
  uint32_t piece_div; /* --piece-size: of chunks of budget / piece_div up */
  unsigned char source[LMS__OPT_COUNT];
} lms__opts_t;

/* --piece-size (Note [Chunks of pieces] in swap/residency.c): SIZE cuts
 * each host-homed chunk of at least budget / LMS__PIECE_DIV bytes into
 * pieces of SIZE; auto cuts each of at least budget / LMS__PIECE_DIV_AUTO
 * into pieces of LMS__PIECE_AUTO (Note [Pieces where whole chunks take
 * turns]). */
#define LMS__PIECE_DIV 8u
#define LMS__PIECE_DIV_AUTO 2u
#define LMS__PIECE_AUTO (32ull << 20)

struct lms_options {
  lms__opts_t v;
  char error[LMS__ERRBUF];
};

/* Copies src into dst, repointing the text fields at dst's buffers. */
void lms__opts_copy(lms__opts_t *dst, const lms__opts_t *src);

/* Shared parsers.  Each returns LMS_OK or LMS_ERR_INVALID with a message in
 * err (LMS__ERRBUF bytes) that names `what` (the option as the user wrote
 * it) and the accepted form. */
/* Bytes with an optional unit: B, K/KiB, M/MiB, G/GiB, T/TiB (powers of
 * 1024), KB/MB/GB/TB (powers of 1000); a decimal mantissa is allowed
 * ("1.5GiB").  Rejects negatives, zero, NaN, junk and more than 1 PiB. */
lms_status_t lms__parse_size(const char *what, const char *text,
                             uint64_t *out, char *err);
/* A fraction in [0, 1]. */
lms_status_t lms__parse_frac(const char *what, const char *text, double *out,
                             char *err);
/* A whole number of KB, -1 for off; no unit accepted. */
lms_status_t lms__parse_kb(const char *what, const char *text, int64_t *out,
                           char *err);
/* 1/true/on/yes and 0/false/off/no. */
lms_status_t lms__parse_bool(const char *what, const char *text, int *out,
                             char *err);

/* What argv[i] is to lms_options_parse_args: 0 a word (not an option), -1
 * "--" (the end of the options), else how many entries it takes (2 for
 * an option with its value after it, 1 for "--name=value" or an option it
 * does not know). */
int lms__options_arg_span(int argc, char **argv, int i);
/* The bytes the prefetch window may hold under a device budget: its
 * BYTES, or its P% of the budget, never more than the budget.  The one
 * cap of the window for every front end (the planner, the stable
 * allocator's reserve, the preload's prefetch). */
uint64_t lms__window_cap(const lms__window_t *w, uint64_t budget);
/* lms_options_describe as one JSON object: per option (by its first
 * spelling) its value as text, where it came from (default, env, set) and
 * its environment variable. */
size_t lms__options_describe_json(const lms_options_t *opts, char *buf,
                                  size_t size);
/* Every option's first spelling and what it takes, a few to a line. */
size_t lms__options_brief(char *buf, size_t size);

#endif
