/* sim_args.c - the flags of `lms sim` and `lms tune` (cli.h), and
 * loading the workload they name. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/sim_parts.h"

#define MAX_LIST 16

const char *const lms__simcmd_policy_names[3] = {"ondemand", "lru",
                                                 "schedule"};

void lms__simcmd_args_init(lms__simcmd_args_t *a) {
  memset(a, 0, sizeof *a);
  a->iterations = LMS__REPLAY_SETTLE;
  a->params.batch = 0;
  a->params.train = -1;
  a->gpus_per_link = 1;
}

static int parse_int(const char *flag, const char *text, long lo, long hi,
                     long *out) {
  char *end = NULL;
  errno = 0;
  long v = text ? strtol(text, &end, 10) : 0;
  if (text == NULL || end == text || *end != '\0' || errno != 0 || v < lo ||
      v > hi) {
    fprintf(stderr, "lms sim: %s: '%s' is not a whole number from %ld to %ld\n",
            flag, text ? text : "", lo, hi);
    return -1;
  }
  *out = v;
  return 0;
}

/* Splits a comma list into at most MAX_LIST items, each parsed by `one`. */
static int parse_list(const char *flag, const char *text,
                      int (*one)(const char *flag, const char *item, void *out,
                                 size_t i),
                      void *out, size_t *n) {
  char buf[1024];
  if (text == NULL || text[0] == '\0') {
    fprintf(stderr, "lms sim: %s: expected a comma-separated list\n", flag);
    return -1;
  }
  if (lms__cli_list_fits("sim", flag, text, sizeof buf)) return -1;
  snprintf(buf, sizeof buf, "%s", text);
  *n = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok != NULL;
       tok = strtok_r(NULL, ",", &save)) {
    if (*n == MAX_LIST) {
      fprintf(stderr, "lms sim: %s: at most %d items\n", flag, MAX_LIST);
      return -1;
    }
    if (one(flag, tok, out, *n) != 0) return -1;
    (*n)++;
  }
  if (*n == 0) {
    fprintf(stderr, "lms sim: %s: the list is empty\n", flag);
    return -1;
  }
  return 0;
}

static int one_link(const char *flag, const char *item, void *out, size_t i) {
  char err[LMS__ERRBUF];
  if (lms__cli_link(item, &((lms__link_t *)out)[i], err) != LMS_OK) {
    fprintf(stderr, "lms sim: %s: %s\n", flag, err);
    return -1;
  }
  return 0;
}

static int one_policy(const char *flag, const char *item, void *out, size_t i) {
  for (int k = 0; k < 3; k++) {
    if (strcmp(item, lms__simcmd_policy_names[k]) == 0) {
      ((lms__policy_t *)out)[i] = (lms__policy_t)k;
      return 0;
    }
  }
  fprintf(stderr, "lms sim: %s: unknown policy '%s'; accepted: ondemand, lru, "
                  "schedule\n", flag, item);
  return -1;
}

static int one_size(const char *flag, const char *item, void *out, size_t i) {
  char err[LMS__ERRBUF];
  if (lms__parse_size(flag, item, &((uint64_t *)out)[i], err) != LMS_OK) {
    fprintf(stderr, "lms sim: %s\n", err);
    return -1;
  }
  return 0;
}

/* The flags of `lms sim` itself, and whether each takes a value. */
static const lms__cli_flag_t kSimFlags[] = {
    {"--batch", 1},  {"--size", 1},     {"--train", 0},       {"--forward", 0},
    {"--iterations", 1}, {"--links", 1}, {"--policies", 1},  {"--capacities", 1},
    {"--device-tflops", 1}, {"--json", 1}, {"--declare", 0},
    {"--gpus-per-link", 1}, {"--discard-dead", 0}, {"--calibrate-busy", 1},
    {"--quiet", 0},
    /* `lms tune`'s own */
    {"--workload", 1}, {"--lms-values", 1}, {"--frac-values", 1},
    {"--window-values", 1}, {"--repeat", 1},
};

int lms__simcmd_extract_args(int *argc, char **argv, char **out) {
  return lms__cli_extract(argc, argv, out, kSimFlags,
                          sizeof kSimFlags / sizeof kSimFlags[0]);
}

int lms__simcmd_parse_args(int argc, char **argv, lms__simcmd_args_t *a) {
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    char flag[64];
    const char *val = lms__cli_split_flag(arg, flag, sizeof flag);
#define NEXT()                                                                \
  do {                                                                        \
    if (val == NULL) {                                                        \
      if (i + 1 >= argc) {                                                    \
        fprintf(stderr, "lms sim: %s needs a value\n", flag);                 \
        return -1;                                                            \
      }                                                                       \
      val = argv[++i];                                                        \
    }                                                                         \
  } while (0)
    long v;
    for (size_t f = 0; val != NULL && f < sizeof kSimFlags / sizeof kSimFlags[0];
         f++)
      if (!kSimFlags[f].value && strcmp(flag, kSimFlags[f].flag) == 0) {
        fprintf(stderr, "lms sim: %s takes no value; got '%s'\n", flag, arg);
        return -1;
      }
    if (strcmp(flag, "--batch") == 0) {
      NEXT();
      if (parse_int(flag, val, 1, 4096, &v)) return -1;
      a->params.batch = (int)v;
    } else if (strcmp(flag, "--size") == 0) {
      NEXT();
      if (parse_int(flag, val, 1, 100000, &v)) return -1;
      a->params.size = (int)v;
    } else if (strcmp(flag, "--train") == 0 && val == NULL) {
      a->params.train = 1;
    } else if (strcmp(flag, "--forward") == 0 && val == NULL) {
      a->params.train = 0;
    } else if (strcmp(flag, "--iterations") == 0) {
      NEXT();
      if (parse_int(flag, val, 2, LMS__REPLAY_MAX_ITERS, &v)) return -1;
      a->iterations = (int)v;
    } else if (strcmp(flag, "--links") == 0) {
      NEXT();
      if (parse_list(flag, val, one_link, a->links, &a->nlinks)) return -1;
    } else if (strcmp(flag, "--policies") == 0) {
      NEXT();
      if (parse_list(flag, val, one_policy, a->policies, &a->npolicies))
        return -1;
    } else if (strcmp(flag, "--capacities") == 0) {
      NEXT();
      if (parse_list(flag, val, one_size, a->capacities, &a->ncapacities))
        return -1;
    } else if (strcmp(flag, "--device-tflops") == 0) {
      NEXT();
      char *end = NULL;
      double t = strtod(val, &end);
      if (end == val || *end != '\0' || !isfinite(t) || t <= 0 || t > 1e4) {
        fprintf(stderr, "lms sim: --device-tflops: '%s' is not a rate from "
                        "above 0 to 10000 TFLOP/s\n", val);
        return -1;
      }
      a->params.device_flops = t * 1e12;
    } else if (strcmp(flag, "--json") == 0) {
      NEXT();
      if (lms__cli_path("sim", "--json", val, a->json, sizeof a->json))
        return -1;
    } else if (strcmp(flag, "--gpus-per-link") == 0) {
      NEXT();
      char *end = NULL;
      errno = 0;
      long g = strtol(val, &end, 10);
      if (end == val || *end != '\0' || errno != 0 || g < 1 ||
          g > LMS__SHARE_MAX_GPUS) {
        fprintf(stderr, "lms sim: --gpus-per-link: '%s' is not a number of "
                        "GPUs sharing one host link; accepted: a whole "
                        "number from 1 (alone) to %d\n", val,
                LMS__SHARE_MAX_GPUS);
        return -1;
      }
      a->gpus_per_link = (int)g;
    } else if (strcmp(flag, "--calibrate-busy") == 0) {
      NEXT();
      char *end = NULL;
      double b = strtod(val, &end);
      if (end == val || *end != '\0' || !isfinite(b) || b <= 0 || b >= 100) {
        fprintf(stderr, "lms sim: --calibrate-busy: '%s' is not a GPU busy "
                        "share; accepted: a percentage above 0 and below "
                        "100, as 29.1\n", val);
        return -1;
      }
      a->calibrate_busy = b / 100.0;
    } else if (strcmp(flag, "--declare") == 0 && val == NULL) {
      a->declare = 1;
    } else if (strcmp(flag, "--discard-dead") == 0 && val == NULL) {
      a->discard_dead = 1;
    } else if (strcmp(flag, "--quiet") == 0 && val == NULL) {
      a->quiet = 1;
    } else if (arg[0] == '-' && arg[1] != '\0') {
      fprintf(stderr, "lms sim: unknown option '%s'; see 'lms help'\n", arg);
      return -1;
    } else if (a->input[0] == '\0') {
      if (lms__cli_path("sim", "the trace", arg, a->input, sizeof a->input))
        return -1;
    } else {
      fprintf(stderr, "lms sim: unexpected argument '%s' (the workload is "
                      "'%s')\n", arg, a->input);
      return -1;
    }
#undef NEXT
  }
  if (a->input[0] == '\0') {
    fprintf(stderr, "lms sim: name a built-in workload (googlenet, unet3d) "
                    "or a trace file\n");
    return -1;
  }
  return 0;
}

static lms_status_t load(const lms__simcmd_args_t *a, lms__workload_t *w,
                         char *err) {
  const lms__wl_builtin_t *b = lms__wl_find_builtin(a->input);
  if (b == NULL) return lms__trace_read(a->input, w, err);
  lms__wl_params_t p = a->params;
  if (p.train < 0) p.train = 1;
  /* The source scenarios: GoogleNet at batch 10, the U-Net at batch 1. */
  if (p.batch == 0) p.batch = strcmp(b->name, "googlenet") == 0 ? 10 : 1;
  return b->build(&p, w, err);
}

lms_status_t lms__simcmd_load(const lms__simcmd_args_t *a, lms__workload_t *w,
                           char *err) {
  LMS_CHECK(load(a, w, err));
  if (a->discard_dead) {
    uint64_t bytes = 0;
    uint32_t n = lms__wl_mark_dead(w, &bytes);
    fprintf(stderr, "lms: --discard-dead: %u chunks (%.2f GB) are discarded "
                    "after their last use in each iteration\n",
            n, (double)bytes / 1e9);
  }
  return LMS_OK;
}
