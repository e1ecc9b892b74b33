/* report_args.c - the arguments of `lms report` (report.c): the flags it
 * takes, what each accepts, and the checks that the ones given fit
 * together.  Bad input is refused here, before any run, with a message
 * naming the flag and what is accepted. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/report_parts.h"

/* The links a report covers when --links is not given. */
static const char *const kPresets[] = {"pcie3", "pcie4",  "pcie5",
                                       "nvlink1", "nvlink2", "c2c"};
#define NPRESETS (sizeof kPresets / sizeof kPresets[0])

static const lms__cli_flag_t kReportFlags[] = {
    {"--out", 1},        {"--stats", 1},    {"--trace", 1},
    {"--compare-links", 0}, {"--native", 1}, {"--emulated", 1},
    {"--steps", 1},      {"--links", 1},    {"--batch", 1},
    {"--size", 1},       {"--train", 0},    {"--forward", 0},
    {"--iterations", 1}, {"--device-tflops", 1}, {"--ranks", 1},
    {"--bench-link", 1},
};

int lms__report_extract_args(int *argc, char **argv, char **out) {
  return lms__cli_extract(argc, argv, out, kReportFlags,
                          sizeof kReportFlags / sizeof kReportFlags[0]);
}

int lms__report_bad(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("lms report: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return -1;
}

static int parse_long(const char *flag, const char *text, long lo, long hi,
                      long *out) {
  char *end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || v < lo || v > hi)
    return lms__report_bad("%s: '%s' is not a whole number from %ld to %ld", flag, text,
               lo, hi);
  *out = v;
  return 0;
}

/* LINK=STATS: a link as --link takes it, and the stats file of a real run
 * over it. */
static int parse_measured(const char *flag, const char *val, lms__report_measured_t *m) {
  const char *eq = strchr(val, '=');
  if (eq == NULL || eq == val || eq[1] == '\0')
    return lms__report_bad("%s: '%s' should be LINK=STATS, e.g. nvlink2=run.json: the "
               "link the run used and the stats file it wrote (--stats)",
               flag, val);
  char name[64], err[LMS__ERRBUF];
  if ((size_t)(eq - val) >= sizeof name)
    return lms__report_bad("%s: the link '%.*s...' is %d characters long; at most %zu "
               "are accepted", flag, LMS__CLI_QUOTE_MAX, val, (int)(eq - val),
               sizeof name - 1);
  snprintf(name, sizeof name, "%.*s", (int)(eq - val), val);
  if (lms__cli_link(name, &m->link, err) != LMS_OK)
    return lms__report_bad("%s: %s", flag, err);
  snprintf(m->kind, sizeof m->kind, "%.15s", flag + 2);
  /* Read once the arguments are known to fit together. */
  if (lms__cli_path("report", flag, eq + 1, m->sf.path, sizeof m->sf.path))
    return -1;
  return 0;
}

int lms__report_parse_args(int argc, char **argv, lms__report_args_t *a) {
  memset(a, 0, sizeof *a);
  a->iterations = LMS__REPLAY_SETTLE;
  a->params.train = -1;
  snprintf(a->out, sizeof a->out, "lms-report");
  char trace[LMS__PATH_MAX] = "";
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    char flag[64];
    const char *val = lms__cli_split_flag(arg, flag, sizeof flag);
    int takes = -1;
    for (size_t f = 0; f < sizeof kReportFlags / sizeof kReportFlags[0]; f++)
      if (strcmp(flag, kReportFlags[f].flag) == 0) takes = kReportFlags[f].value;
    if (takes == 1 && val == NULL) {
      if (i + 1 >= argc) return lms__report_bad("%s needs a value", flag);
      val = argv[++i];
    } else if (takes == 0 && val != NULL) {
      return lms__report_bad("%s takes no value", flag);
    }
    long v = 0;
    char err[LMS__ERRBUF];
    if (strcmp(flag, "--out") == 0) {
      if (val[0] == '\0' || strlen(val) > LMS__CLI_OUT_MAX)
        return lms__report_bad("--out: expected a directory path of 1 to %d bytes",
                   LMS__CLI_OUT_MAX);
      snprintf(a->out, sizeof a->out, "%s", val);
    } else if (strcmp(flag, "--stats") == 0) {
      if (lms__cli_path("report", "--stats", val, a->stats, sizeof a->stats))
        return -1;
    } else if (strcmp(flag, "--trace") == 0) {
      if (lms__cli_path("report", "--trace", val, trace, sizeof trace))
        return -1;
    } else if (strcmp(flag, "--bench-link") == 0) {
      if (lms__cli_path("report", "--bench-link", val, a->link_file,
                        sizeof a->link_file))
        return -1;
    } else if (strcmp(flag, "--ranks") == 0) {
      if (lms__cli_path("report", "--ranks", val, a->ranks, sizeof a->ranks))
        return -1;
    } else if (strcmp(flag, "--compare-links") == 0) {
      a->compare = 1;
    } else if (strcmp(flag, "--native") == 0 ||
               strcmp(flag, "--emulated") == 0) {
      if (a->nm == LMS__REPORT_MAX_MEASURED)
        return lms__report_bad("%s: at most %d measured runs", flag, LMS__REPORT_MAX_MEASURED);
      if (parse_measured(flag, val, &a->m[a->nm]) != 0) return -1;
      a->nm++;
    } else if (strcmp(flag, "--steps") == 0) {
      char *colon = strchr(val, ':');
      char first[32], count[32];
      if (colon == NULL || (size_t)(colon - val) >= sizeof first ||
          strlen(colon + 1) >= sizeof count)
        return lms__report_bad("--steps: '%s' should be FIRST:COUNT, e.g. 40:12 (steps "
                   "40 to 51 of the measured iteration)", val);
      snprintf(first, sizeof first, "%.*s", (int)(colon - val), val);
      snprintf(count, sizeof count, "%s", colon + 1);
      if (parse_long("--steps FIRST", first, 0, 100000000, &v)) return -1;
      a->step_first = (uint32_t)v;
      if (parse_long("--steps COUNT", count, 1, LMS__REPORT_MAX_STEPS, &v)) return -1;
      a->step_count = (uint32_t)v;
      a->steps_given = 1;
    } else if (strcmp(flag, "--links") == 0) {
      char buf[512];
      if (lms__cli_list_fits("report", flag, val, sizeof buf)) return -1;
      snprintf(buf, sizeof buf, "%s", val);
      a->nlinks = 0;
      char *save = NULL;
      for (char *t = strtok_r(buf, ",", &save); t != NULL;
           t = strtok_r(NULL, ",", &save)) {
        if (a->nlinks == LMS__REPORT_MAX_LINKS)
          return lms__report_bad("--links: at most %d links", LMS__REPORT_MAX_LINKS);
        if (lms__cli_link(t, &a->links[a->nlinks], err) != LMS_OK)
          return lms__report_bad("--links: %s", err);
        a->nlinks++;
      }
      if (a->nlinks == 0)
        return lms__report_bad("--links: expected a comma-separated list such as "
                   "pcie3,nvlink2");
    } else if (strcmp(flag, "--batch") == 0) {
      if (parse_long(flag, val, 1, 4096, &v)) return -1;
      a->params.batch = (int)v;
    } else if (strcmp(flag, "--size") == 0) {
      if (parse_long(flag, val, 1, 100000, &v)) return -1;
      a->params.size = (int)v;
    } else if (strcmp(flag, "--train") == 0) {
      a->params.train = 1;
    } else if (strcmp(flag, "--forward") == 0) {
      a->params.train = 0;
    } else if (strcmp(flag, "--iterations") == 0) {
      if (parse_long(flag, val, 2, LMS__REPLAY_MAX_ITERS, &v)) return -1;
      a->iterations = (int)v;
    } else if (strcmp(flag, "--device-tflops") == 0) {
      char *end = NULL;
      double t = strtod(val, &end);
      if (end == val || *end != '\0' || !isfinite(t) || t <= 0 || t > 1e4)
        return lms__report_bad("--device-tflops: '%s' is not a rate from above 0 to "
                   "10000 TFLOP/s", val);
      a->params.device_flops = t * 1e12;
    } else if (arg[0] == '-' && arg[1] != '\0') {
      return lms__report_bad("unknown option '%s'; see 'lms help'", arg);
    } else if (a->input[0] == '\0') {
      if (lms__cli_path("report", "the input", arg, a->input,
                        sizeof a->input))
        return -1;
    } else {
      return lms__report_bad("unexpected argument '%s' (the input is '%s')", arg,
                 a->input);
    }
  }
  if (a->ranks[0] != '\0' || a->link_file[0] != '\0') {
    const char *which = a->ranks[0] != '\0' ? "--ranks" : "--bench-link";
    if (a->input[0] != '\0' || trace[0] != '\0' || a->stats[0] != '\0' ||
        a->nm > 0 || a->compare ||
        (a->ranks[0] != '\0' && a->link_file[0] != '\0'))
      return lms__report_bad("%s makes a report of its own; give a workload, --stats, "
                 "--compare-links, --ranks or --bench-link in another",
                 which);
    return 0;
  }
  if (trace[0] != '\0') {
    if (a->input[0] != '\0')
      return lms__report_bad("both --trace '%s' and the input '%s' were given; name one",
                 trace, a->input);
    snprintf(a->input, sizeof a->input, "%s", trace);
  }
  if (a->input[0] == '\0')
    return lms__report_bad("name a built-in workload (googlenet, unet3d), a trace file, "
               "or a run's --stats PATH with its --trace PATH");
  if ((a->stats[0] != '\0' || a->nm > 0) &&
      lms__wl_find_builtin(a->input) != NULL)
    return lms__report_bad("measured stats need the trace the run wrote (--trace PATH), "
               "not the built-in '%s': the stats cover the whole run, which "
               "only its trace describes", a->input);
  if (a->stats[0] != '\0' && a->nm > 0)
    return lms__report_bad("--stats reports one run; with --compare-links give "
               "measurements as --native LINK=STATS and --emulated "
               "LINK=STATS");
  if (a->nm > 0 && !a->compare)
    return lms__report_bad("--native and --emulated belong to --compare-links");
  char err[LMS__ERRBUF];
  for (size_t i = 0; a->nlinks == 0 && i < NPRESETS; i++)
    if (lms__link_parse(kPresets[i], &a->links[i], err) != LMS_OK) return -1;
  if (a->nlinks == 0) a->nlinks = NPRESETS;
  for (int i = 0; i < a->nm; i++) {
    char path[LMS__PATH_MAX];
    snprintf(path, sizeof path, "%s", a->m[i].sf.path);
    if (lms__stats_file_read(path, &a->m[i].sf, err) != LMS_OK)
      return lms__report_bad("--%s: %s", a->m[i].kind, err);
  }
  return 0;
}

