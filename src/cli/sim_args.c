/* sim_args.c - the flags of `lms sim` and `lms tune` (cli.h), and
 * loading the workload they name. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/sim_parts.h"
#include "replay/linkboard.h"

#define MAX_LIST 16

const char *const lms__simcmd_policy_names[3] = {"ondemand", "lru",
                                                 "schedule"};

void lms__simcmd_args_init(lms__simcmd_args_t *a) {
  memset(a, 0, sizeof *a);
  a->iterations = LMS__REPLAY_SETTLE;
  a->params.batch = 0;
  a->params.train = -1;
  a->gpus_per_link = 1;
  a->link_wait = 600;
}

/* ---- The items of the lists ------------------------------------------- */

int lms__cli_link_item(const char *cmd, const lms__cli_flag_t *f,
                       const char *item, void *out) {
  char err[LMS__ERRBUF];
  if (lms__cli_link(item, out, err) != LMS_OK) {
    fprintf(stderr, "lms %s: %s: %s\n", cmd, f->flag, err);
    return -1;
  }
  return 0;
}

static int one_policy(const char *cmd, const lms__cli_flag_t *f,
                      const char *item, void *out) {
  for (int k = 0; k < 3; k++) {
    if (strcmp(item, lms__simcmd_policy_names[k]) == 0) {
      *(lms__policy_t *)out = (lms__policy_t)k;
      return 0;
    }
  }
  fprintf(stderr, "lms %s: %s: unknown policy '%s'; accepted: ondemand, "
                  "lru, schedule\n", cmd, f->flag, item);
  return -1;
}

static int one_size(const char *cmd, const lms__cli_flag_t *f,
                    const char *item, void *out) {
  char err[LMS__ERRBUF];
  if (lms__parse_size(f->flag, item, out, err) != LMS_OK) {
    fprintf(stderr, "lms %s: %s\n", cmd, err);
    return -1;
  }
  return 0;
}

/* A percentage above 0 and below 100, kept as a share. */
static int busy_share(const char *cmd, const lms__cli_flag_t *f,
                      const char *val, void *out) {
  char *end = NULL;
  double b = strtod(val, &end);
  if (end == val || *end != '\0' || !isfinite(b) || b <= 0 || b >= 100) {
    fprintf(stderr, "lms %s: %s: '%s' is not a GPU busy share; accepted: a "
                    "percentage above 0 and below 100, as 29.1\n",
            cmd, f->flag, val);
    return -1;
  }
  *(double *)out = b / 100.0;
  return 0;
}

/* ---- The tables (Note [A command's flags] in cli.h) --------------------- */

#define W(field) offsetof(lms__wl_params_t, field)
const lms__cli_flag_t lms__cli_workload_flags[] = {
    {.flag = "--batch", .kind = LMS__CLI_INT, .at = W(batch), .lo = 1,
     .hi = 4096},
    {.flag = "--size", .kind = LMS__CLI_INT, .at = W(size), .lo = 1,
     .hi = 100000},
    {.flag = "--train", .kind = LMS__CLI_SWITCH, .at = W(train), .lo = 1},
    {.flag = "--forward", .kind = LMS__CLI_SWITCH, .at = W(train), .lo = 0},
    {.flag = "--device-tflops", .kind = LMS__CLI_REAL, .at = W(device_flops),
     .lo = 0, .hi = 1e4, .scale = 1e12,
     .accepted = "a rate above 0 and up to 10000 TFLOP/s"},
};
#undef W
const size_t lms__cli_workload_nflags =
    sizeof lms__cli_workload_flags / sizeof lms__cli_workload_flags[0];

#define S(field) offsetof(lms__simcmd_args_t, field)
const lms__cli_flag_t lms__simcmd_flags[] = {
    {.flag = "--iterations", .kind = LMS__CLI_INT, .at = S(iterations),
     .lo = 2, .hi = LMS__REPLAY_MAX_ITERS},
    {.flag = "--links", .kind = LMS__CLI_LIST, .at = S(links),
     .size = sizeof(lms__link_t), .count = S(nlinks), .max = MAX_LIST,
     .fn = lms__cli_link_item, .accepted = "links as -link takes them"},
    {.flag = "--policies", .kind = LMS__CLI_LIST, .at = S(policies),
     .size = sizeof(lms__policy_t), .count = S(npolicies), .max = MAX_LIST,
     .fn = one_policy, .accepted = "ondemand, lru, schedule"},
    {.flag = "--capacities", .kind = LMS__CLI_LIST, .at = S(capacities),
     .size = sizeof(uint64_t), .count = S(ncapacities), .max = MAX_LIST,
     .fn = one_size, .accepted = "sizes as --gpu-limit takes them"},
    {.flag = "--json", .kind = LMS__CLI_PATH, .at = S(json),
     .size = sizeof((lms__simcmd_args_t *)0)->json},
    {.flag = "--gpus-per-link", .kind = LMS__CLI_INT, .at = S(gpus_per_link),
     .lo = 1, .hi = LMS__SHARE_MAX_GPUS,
     .accepted = "a whole number of GPUs sharing one host link, from 1 "
                 "(alone) to 8"},
    {.flag = "--in-step", .kind = LMS__CLI_SWITCH, .at = S(in_step), .lo = 1},
    {.flag = "--link-group", .kind = LMS__CLI_PATH, .at = S(link_group),
     .size = sizeof((lms__simcmd_args_t *)0)->link_group},
    {.flag = "--link-wait", .kind = LMS__CLI_INT, .at = S(link_wait),
     .lo = 1, .hi = 86400,
     .accepted = "whole seconds a rank waits for the others, 1 to 86400"},
    {.flag = "--calibrate-busy", .kind = LMS__CLI_FN,
     .at = S(calibrate_busy), .fn = busy_share,
     .accepted = "a percentage above 0 and below 100, as 29.1"},
    {.flag = "--declare", .kind = LMS__CLI_SWITCH, .at = S(declare), .lo = 1},
    {.flag = "--discard-dead", .kind = LMS__CLI_SWITCH, .at = S(discard_dead),
     .lo = 1},
    {.flag = "--quiet", .kind = LMS__CLI_SWITCH, .at = S(quiet), .lo = 1},
};
const size_t lms__simcmd_nflags =
    sizeof lms__simcmd_flags / sizeof lms__simcmd_flags[0];

static const lms__cli_spec_t kSim = {
    .cmd = "sim",
    .help = "sim",
    .parts = {{lms__simcmd_flags,
               sizeof lms__simcmd_flags / sizeof lms__simcmd_flags[0], 0},
              {lms__cli_workload_flags,
               sizeof lms__cli_workload_flags /
                   sizeof lms__cli_workload_flags[0],
               S(params)}},
    .input_at = S(input),
    .input_size = sizeof((lms__simcmd_args_t *)0)->input,
    .input_what = "the workload",
};
#undef S

void lms__simcmd_spec(lms__cli_spec_t *out) { *out = kSim; }

int lms__simcmd_extract_args(int *argc, char **argv, char **out) {
  /* `lms tune` takes sim's flags and its own. */
  lms__cli_spec_t both = kSim;
  both.parts[2].flags = lms__tune_flags;
  both.parts[2].n = lms__tune_nflags;
  return lms__cli_extract(argc, argv, out, &both);
}

int lms__simcmd_parse_args(int argc, char **argv, lms__simcmd_args_t *a) {
  if (lms__cli_parse(&kSim, argc, argv, a, NULL) < 0) return -1;
  if (a->input[0] == '\0') {
    fprintf(stderr, "lms sim: name a built-in workload (googlenet, unet3d) "
                    "or a trace file\n");
    return -1;
  }
  if ((a->in_step || a->link_group[0] != '\0') && a->gpus_per_link < 2) {
    fprintf(stderr, "lms sim: %s needs --gpus-per-link 2 to %d (the GPUs on "
                    "the link)\n", a->in_step ? "--in-step" : "--link-group",
            LMS__SHARE_MAX_GPUS);
    return -1;
  }
  if (a->link_group[0] == '\0') return 0;
  if (!lms__board_group_ok(a->link_group)) {
    fprintf(stderr, "lms sim: --link-group: '%s'; accepted: 1 to %d of the "
                    "letters, digits, '-', '_' and '.'\n", a->link_group,
            LMS__BOARD_GROUP_MAX);
    return -1;
  }
  if (a->in_step) {
    fprintf(stderr, "lms sim: --in-step is for the model; with --link-group "
                    "the ranks' clocks place them\n");
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
