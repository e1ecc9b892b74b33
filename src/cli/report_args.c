/* report_args.c - the arguments of `lms report` (report.c): the flags it
 * takes, what each accepts, and the checks that the ones given fit
 * together.  Bad input is refused here, before any run, with a message
 * naming the flag and what is accepted. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/report_parts.h"

/* The links a report covers when --links is not given. */
static const char *const kPresets[] = {"pcie3", "pcie4",  "pcie5",
                                       "nvlink1", "nvlink2", "c2c"};
#define NPRESETS (sizeof kPresets / sizeof kPresets[0])

int lms__report_bad(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("lms report: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return -1;
}

/* --native and --emulated: LINK=STATS, a link as --link takes it, and the
 * stats file of a real run over it. */
static int measured(const char *cmd, const lms__cli_flag_t *f,
                    const char *val, void *field) {
  (void)cmd;
  lms__report_args_t *a = field;
  const char *flag = f->flag;
  if (a->nm == LMS__REPORT_MAX_MEASURED)
    return lms__report_bad("%s: at most %d measured runs", flag,
                           LMS__REPORT_MAX_MEASURED);
  lms__report_measured_t *m = &a->m[a->nm];
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
  a->nm++;
  return 0;
}

/* --out: a directory, with room left for the names of the files. */
static int out_dir(const char *cmd, const lms__cli_flag_t *f, const char *val,
                   void *field) {
  if (val[0] == '\0' || strlen(val) > LMS__CLI_OUT_MAX) {
    fprintf(stderr, "lms %s: %s: expected a directory path of 1 to %d "
                    "bytes\n", cmd, f->flag, LMS__CLI_OUT_MAX);
    return -1;
  }
  snprintf(field, LMS__PATH_MAX, "%s", val);
  return 0;
}

/* --steps FIRST:COUNT. */
static int steps(const char *cmd, const lms__cli_flag_t *f, const char *val,
                 void *field) {
  (void)f;
  lms__report_args_t *a = field;
  const char *colon = strchr(val, ':');
  char first[32], count[32];
  if (colon == NULL || (size_t)(colon - val) >= sizeof first ||
      strlen(colon + 1) >= sizeof count)
    return lms__report_bad("--steps: '%s' should be FIRST:COUNT, e.g. 40:12 (steps "
               "40 to 51 of the measured iteration)", val);
  snprintf(first, sizeof first, "%.*s", (int)(colon - val), val);
  snprintf(count, sizeof count, "%s", colon + 1);
  static const lms__cli_flag_t kFirst = {
      .flag = "--steps FIRST", .kind = LMS__CLI_INT, .lo = 0, .hi = 100000000};
  static const lms__cli_flag_t kCount = {.flag = "--steps COUNT",
                                         .kind = LMS__CLI_INT, .lo = 1,
                                         .hi = LMS__REPORT_MAX_STEPS};
  long v;
  if (lms__cli_int(cmd, &kFirst, first, &v)) return -1;
  a->step_first = (uint32_t)v;
  if (lms__cli_int(cmd, &kCount, count, &v)) return -1;
  a->step_count = (uint32_t)v;
  a->steps_given = 1;
  return 0;
}

/* Note [A command's flags] in cli.h. */
#define R(field) offsetof(lms__report_args_t, field)
#define PATH(name, field)                                                     \
  {.flag = name, .kind = LMS__CLI_PATH, .at = R(field),                       \
   .size = sizeof((lms__report_args_t *)0)->field}
static const lms__cli_flag_t kReportFlags[] = {
    {.flag = "--out", .kind = LMS__CLI_FN, .at = R(out), .fn = out_dir,
     .accepted = "a directory path of 1 to 200 bytes"},
    PATH("--stats", stats),
    PATH("--trace", trace),
    PATH("--ranks", ranks),
    PATH("--bench-link", link_file),
    {.flag = "--compare-links", .kind = LMS__CLI_SWITCH, .at = R(compare),
     .lo = 1},
    {.flag = "--native", .kind = LMS__CLI_FN, .at = 0, .fn = measured,
     .accepted = "LINK=STATS: a link as -link takes it, a stats file"},
    {.flag = "--emulated", .kind = LMS__CLI_FN, .at = 0, .fn = measured,
     .accepted = "LINK=STATS: a link as -link takes it, a stats file"},
    {.flag = "--steps", .kind = LMS__CLI_FN, .at = 0, .fn = steps,
     .accepted = "FIRST:COUNT, COUNT from 1 to 64 steps"},
    {.flag = "--links", .kind = LMS__CLI_LIST, .at = R(links),
     .size = sizeof(lms__link_t), .count = R(nlinks),
     .max = LMS__REPORT_MAX_LINKS, .fn = lms__cli_link_item,
     .accepted = "links as -link takes them"},
    {.flag = "--iterations", .kind = LMS__CLI_INT, .at = R(iterations),
     .lo = 2, .hi = LMS__REPLAY_MAX_ITERS},
};
#undef PATH

static const lms__cli_spec_t kReport = {
    .cmd = "report",
    .help = "report",
    .parts = {{kReportFlags, sizeof kReportFlags / sizeof kReportFlags[0], 0},
              {lms__cli_workload_flags, 0, R(params)}},
    .input_at = R(input),
    .input_size = sizeof((lms__report_args_t *)0)->input,
    .input_what = "the input",
};
#undef R

void lms__report_spec(lms__cli_spec_t *out) {
  *out = kReport;
  out->parts[1].n = lms__cli_workload_nflags;
}

int lms__report_extract_args(int *argc, char **argv, char **out) {
  lms__cli_spec_t s;
  lms__report_spec(&s);
  return lms__cli_extract(argc, argv, out, &s);
}

int lms__report_parse_args(int argc, char **argv, lms__report_args_t *a) {
  memset(a, 0, sizeof *a);
  a->iterations = LMS__REPLAY_SETTLE;
  a->params.train = -1;
  snprintf(a->out, sizeof a->out, "lms-report");
  lms__cli_spec_t s;
  lms__report_spec(&s);
  if (lms__cli_parse(&s, argc, argv, a, NULL) < 0) return -1;
  const char *trace = a->trace;
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

