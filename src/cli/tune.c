/* tune.c - `lms tune`: find the -lms threshold, -lms_frac and prefetch
 * window that run a workload fastest.
 *
 *   lms tune [OPTIONS] --workload NAME|TRACE [--batch N] [--size N]
 *            [--train|--forward] [RANGES]        on the simulated device
 *   lms tune [OPTIONS] [RANGES] -- CMD ARGS...   a real program, timed
 *
 * RANGES: --lms-values KB,..  --frac-values F,..  --window-values W,..
 * (defaults below).  A setting that runs out of memory (or, for a real
 * program, exits with a failure) is skipped and shown as such, a failing
 * program with the last lines it wrote to stderr.  A program's times
 * vary: --repeat N runs each setting N times and compares their medians.
 * --json PATH (or - for stdout, the progress then going to stderr) writes
 * every setting tried, its times and the fastest, as one JSON object.
 *
 * Note [Searching by coordinates]
 * The three settings act mostly apart: the threshold decides what may
 * live on the host, the fraction when offloading starts, the window how
 * far prefetch looks.  So instead of the whole grid the search starts from
 * the defaults and improves one setting at a time, trying every value of
 * it with the others fixed at the best so far, and goes round again until
 * a round changes nothing (two rounds at most).  Each setting is run once
 * (results are remembered), so a full round costs the sum, not the
 * product, of the range sizes. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/tune_parts.h"

static const char *const kDefaultKb[] = {"0", "1024", "8192", "65536",
                                         "1048576"};
static const char *const kDefaultFrac[] = {"0", "0.25", "0.5", "0.75"};
static const char *const kDefaultWin[] = {"0", "8,25%", "64,50%", "1000,60%",
                                          "1000,100%"};

/* Splits a comma list (a window's own comma is kept: "64,50%" is one
 * value, so windows are separated by ';' or given with --window-values
 * once per value).  Each item is checked by `check`. */
static int parse_values(const char *flag, const char *text, char sep,
                        char out[MAXV][32], int *n,
                        int (*check)(const char *flag, const char *v)) {
  *n = 0;
  if (text == NULL || text[0] == '\0') {
    fprintf(stderr, "lms tune: %s: the range is empty; give at least one "
                    "value\n", flag);
    return -1;
  }
  const char *p = text;
  while (*p != '\0') {
    const char *e = strchr(p, sep);
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == 0 || len >= 32) {
      char q[LMS__CLI_QUOTE_MAX + 4];
      fprintf(stderr, "lms tune: %s: empty or over-long value in '%s'; "
                      "accepted: values of 1 to 31 characters\n", flag,
              lms__cli_quote(text, q));
      return -1;
    }
    if (*n == MAXV) {
      fprintf(stderr, "lms tune: %s: at most %d values\n", flag, MAXV);
      return -1;
    }
    memcpy(out[*n], p, len);
    out[*n][len] = '\0';
    if (check(flag, out[*n]) != 0) return -1;
    (*n)++;
    p = e ? e + 1 : p + len;
  }
  if (*n == 0) {
    fprintf(stderr, "lms tune: %s: the range is empty\n", flag);
    return -1;
  }
  return 0;
}

/* Each value must be what the option itself accepts. */
static int check_option(const char *option, const char *flag, const char *v) {
  lms_options_t *o = NULL;
  if (lms_options_create(&o) != LMS_OK) return -1;
  int bad = lms_options_set(o, option, v) != LMS_OK;
  if (bad) fprintf(stderr, "lms tune: %s: %s\n", flag, lms_options_error(o));
  lms_options_destroy(o);
  return bad ? -1 : 0;
}
static int check_kb(const char *f, const char *v) { return check_option("lms", f, v); }
static int check_frac(const char *f, const char *v) {
  return check_option("lms_frac", f, v);
}
static int check_win(const char *f, const char *v) {
  return check_option("prefetch-window", f, v);
}

/* A range as given (--lms-values and its kind), split and checked by
 * parse_values once every flag is known. */
typedef struct range_text {
  char text[256];
  int given;
} range_text_t;

typedef struct tune_args {
  lms__simcmd_args_t sa; /* --workload and the workload's flags */
  range_text_t kb, frac, win;
  int repeat;
  char json[LMS__PATH_MAX];
} tune_args_t;

static int range_arg(const char *cmd, const lms__cli_flag_t *f,
                     const char *val, void *field) {
  range_text_t *r = field;
  if (lms__cli_list_fits(cmd, f->flag, val, sizeof r->text)) return -1;
  snprintf(r->text, sizeof r->text, "%s", val);
  r->given = 1;
  return 0;
}

#define T(field) offsetof(tune_args_t, field)
const lms__cli_flag_t lms__tune_flags[] = {
    {.flag = "--workload", .kind = LMS__CLI_PATH, .at = T(sa.input),
     .size = sizeof((tune_args_t *)0)->sa.input},
    {.flag = "--lms-values", .kind = LMS__CLI_FN, .at = T(kb),
     .fn = range_arg, .accepted = "1 to 16 values of -lms, comma-separated"},
    {.flag = "--frac-values", .kind = LMS__CLI_FN, .at = T(frac),
     .fn = range_arg, .accepted = "1 to 16 values of -lms_frac, comma-separated"},
    {.flag = "--window-values", .kind = LMS__CLI_FN, .at = T(win),
     .fn = range_arg,
     .accepted = "1 to 16 values of --prefetch-window, separated by ';'"},
    {.flag = "--repeat", .kind = LMS__CLI_INT, .at = T(repeat), .lo = 1,
     .hi = MAX_REPEAT,
     .accepted = "a whole number of runs per setting from 1 to 100"},
    {.flag = "--json", .kind = LMS__CLI_PATH, .at = T(json),
     .size = sizeof((tune_args_t *)0)->json},
};
const size_t lms__tune_nflags = sizeof lms__tune_flags / sizeof lms__tune_flags[0];

static const lms__cli_spec_t kTune = {
    .cmd = "tune",
    .help = "tune",
    .parts = {{lms__tune_flags,
               sizeof lms__tune_flags / sizeof lms__tune_flags[0], 0},
              {lms__simcmd_flags, 0, T(sa)}, /* n set in lms__cli_tune */
              {lms__cli_workload_flags, 0, T(sa.params)}},
    .stop_at_dashes = 1,
};
#undef T

void lms__tune_spec(lms__cli_spec_t *out) {
  *out = kTune;
  out->parts[1].n = lms__simcmd_nflags;
  out->parts[2].n = lms__cli_workload_nflags;
}

/* The words given for the workload, as `lms sim` takes them: the
 * workload's name, then its flags (the suggestion printed at the end). */
static int sim_words(int argc, char **argv, char **out) {
  int n = 0;
  for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++) {
    char flag[64];
    const char *val = lms__cli_split_flag(argv[i], flag, sizeof flag);
    const lms__cli_flag_t *own = NULL;
    for (size_t f = 0; f < lms__tune_nflags; f++)
      if (strcmp(flag, lms__tune_flags[f].flag) == 0) own = &lms__tune_flags[f];
    if (own == NULL) {
      out[n++] = argv[i];
      continue;
    }
    if (val == NULL && i + 1 < argc) val = argv[++i];
    if (own == &lms__tune_flags[0] && val != NULL) out[n++] = (char *)val;
  }
  return n;
}

int lms__cli_tune(const lms_options_t *base, int argc, char **argv) {
  static tune_t t;
  memset(&t, 0, sizeof t);
  t.base = base;
  t.err_fd = -1;
  t.out = stdout;
  static tune_args_t ta;
  memset(&ta, 0, sizeof ta);
  lms__simcmd_args_init(&ta.sa);
  ta.repeat = 1;
  lms__cli_spec_t spec;
  lms__tune_spec(&spec);
  const char *seen[LMS__CLI_PARTS];
  int end = lms__cli_parse(&spec, argc, argv, &ta, seen);
  if (end < 0) return 2;
  if (end < argc) {
    t.cmd = &argv[end + 1];
    if (end + 1 >= argc) {
      fprintf(stderr, "lms tune: nothing to run after '--'\n");
      return 2;
    }
  }
  t.repeat = ta.repeat;
  lms__simcmd_args_t sa = ta.sa;
  const char *json = ta.json;
  char *sim_args[64];
  int nsim = sim_words(argc < 64 ? argc : 64, argv, sim_args);
  const char *kb = ta.kb.text, *frac = ta.frac.text, *win = ta.win.text;
  int have_kb = ta.kb.given, have_frac = ta.frac.given,
      have_win = ta.win.given;
  if (have_kb ? parse_values("--lms-values", kb, ',', t.kb_text, &t.nkb, check_kb)
              : 0) return 2;
  if (have_frac ? parse_values("--frac-values", frac, ',', t.frac_text, &t.nfrac,
                               check_frac) : 0) return 2;
  if (have_win ? parse_values("--window-values", win, ';', t.win_text, &t.nwin,
                              check_win) : 0) return 2;
  if (!have_kb)
    for (size_t i = 0; i < sizeof kDefaultKb / sizeof *kDefaultKb; i++)
      snprintf(t.kb_text[t.nkb++], 32, "%s", kDefaultKb[i]);
  if (!have_frac)
    for (size_t i = 0; i < sizeof kDefaultFrac / sizeof *kDefaultFrac; i++)
      snprintf(t.frac_text[t.nfrac++], 32, "%s", kDefaultFrac[i]);
  if (!have_win)
    for (size_t i = 0; i < sizeof kDefaultWin / sizeof *kDefaultWin; i++)
      snprintf(t.win_text[t.nwin++], 32, "%s", kDefaultWin[i]);

  if (t.cmd == NULL) {
    if (sa.input[0] == '\0') {
      fprintf(stderr, "lms tune: give --workload NAME|TRACE for the simulator, "
                      "or -- CMD ARGS for a program\n");
      return 2;
    }
    /* lms sim's flags that compare several runs have no meaning for a
     * search that makes its own runs: refused rather than ignored. */
    const char *unused = sa.nlinks      ? "--links (give one link as --link "
                                          "before the command)"
                         : sa.npolicies ? "--policies (give one as --policy "
                                          "before the command)"
                         : sa.ncapacities
                             ? "--capacities (give one as --gpu-limit before "
                               "the command)"
                         : sa.declare  ? "--declare"
                         : sa.calibrate_busy > 0
                             ? "--calibrate-busy (calibrate with lms sim, "
                               "then give its --device-tflops)"
                         : sa.gpus_per_link > 1 || sa.in_step ||
                                   sa.link_group[0] != '\0'
                             ? "--gpus-per-link, --in-step or --link-group "
                               "(tune times one GPU alone; see a setting "
                               "under sharing with lms sim --gpus-per-link N)"
                             : NULL;
    if (unused != NULL) {
      fprintf(stderr, "lms tune: %s is not accepted here; tune takes the "
                      "workload's flags (--batch, --size, --train, --forward, "
                      "--iterations, --device-tflops) and its own\n",
              unused);
      return 2;
    }
    if (t.repeat > 1) {
      fprintf(stderr, "lms tune: --repeat is for a program (lms tune -- CMD): "
                      "the simulator's runs of a setting all take the same "
                      "time\n");
      return 2;
    }
    t.iterations = sa.iterations;
    char err[LMS__ERRBUF] = "";
    lms__wl_init(&t.w, NULL);
    if (lms__simcmd_load(&sa, &t.w, err) != LMS_OK) {
      fprintf(stderr, "lms tune: %s\n", err);
      return 2;
    }
    t.have_workload = 1;
  } else {
    /* Before "--" a program takes tune's own flags alone: a workload's
     * would be silently unused. */
    const char *wl = sa.input[0] != '\0' ? "--workload"
                     : seen[1] != NULL    ? seen[1]
                                          : seen[2];
    if (wl != NULL) {
      fprintf(stderr, "lms tune: '%s' is not accepted with a program (lms "
                      "tune ... -- CMD); accepted before '--': --lms-values, "
                      "--frac-values, --window-values, --repeat, --json and "
                      "lms's options\n", wl);
      return 2;
    }
    /* A program that cannot be started would fail every setting and end
     * in advice about --gpu-limit; it is bad input, refused first. */
    char prog[PATH_MAX];
    if (lms__cli_find_program("tune", t.cmd[0], prog, sizeof prog) != 0)
      return 2;
  }
  /* Made before the first run, so that a search does not end with
   * nothing written. */
  FILE *jf = NULL;
  int json_stdout = strcmp(json, "-") == 0;
  if (json[0] != '\0') {
    jf = json_stdout ? stdout : fopen(json, "w");
    if (jf == NULL) {
      fprintf(stderr, "lms tune: --json: cannot write '%s': %s\n", json,
              strerror(errno));
      if (t.have_workload) lms__wl_free(&t.w);
      return 2;
    }
    if (json_stdout) t.out = stderr;
  }
  if (t.have_workload) {
    fprintf(t.out, "lms tune: %s on the simulated device, link %s\n",
            t.w.name, base->v.link.name);
  } else {
    /* The program's stderr goes to an unnamed file, read back after a
     * run that failed. */
    const char *dir = getenv("TMPDIR");
    char tmpl[PATH_MAX];
    int n = snprintf(tmpl, sizeof tmpl, "%s/lms-tune-XXXXXX",
                     dir != NULL && dir[0] != '\0' ? dir : "/tmp");
    if (n > 0 && (size_t)n < sizeof tmpl) {
      t.err_fd = mkstemp(tmpl);
      if (t.err_fd >= 0) unlink(tmpl);
    }
    fprintf(t.out, "lms tune: %s, timed%s\n", t.cmd[0],
            t.repeat > 1 ? "; each setting's median" : "");
  }
  t.times = calloc((size_t)MAXV * MAXV * MAXV * (size_t)t.repeat,
                   sizeof *t.times);
  if (t.times == NULL) {
    fprintf(stderr, "lms tune: out of memory\n");
    if (jf != NULL && !json_stdout) fclose(jf);
    if (t.err_fd >= 0) close(t.err_fd);
    if (t.have_workload) lms__wl_free(&t.w);
    return 1;
  }
  fprintf(t.out, "  %d x %d x %d settings; searching one setting at a time"
                 "%s\n", t.nkb, t.nfrac, t.nwin,
          t.repeat > 1 ? ", each run --repeat times" : "");
  setting_t best;
  uint64_t ns = lms__tune_search(&t, &best);
  int rc = 0;
  FILE *o = t.out;
  if (ns == UINT64_MAX) {
    fprintf(o, "no setting ran; widen the ranges or raise --gpu-limit\n");
    rc = 1;
  } else {
    lms__tune_print_table(&t);
    if (t.repeat == 1)
      fprintf(o, "\nfastest of %d runs: %.1f ms\n", t.runs, lms__tune_ms(ns));
    else
      fprintf(o, "\nfastest of %d settings, each run up to %d times: %.1f ms "
                 "(its median)\n", t.runs, t.repeat, lms__tune_ms(ns));
    if (t.have_workload) {
      fprintf(o, "  lms sim");
      for (int i = 0; i < nsim; i++) fprintf(o, " %s", sim_args[i]);
      fprintf(o, " -lms %s -lms_frac %s --prefetch-window '%s'",
              t.kb_text[best.kb], t.frac_text[best.frac],
              t.win_text[best.win]);
      if (base->v.gpu_limit)
        fprintf(o, " --gpu-limit %llu", (unsigned long long)base->v.gpu_limit);
      if (strcmp(base->v.link.name, "custom") == 0)
        fprintf(o, " --links %g/%g\n", base->v.link.h2d_gbps,
                base->v.link.d2h_gbps);
      else
        fprintf(o, " --links %s\n", base->v.link.name);
    } else {
      fprintf(o, "  LMS_KB=%s LMS_FRAC=%s LMS_PREFETCH_WINDOW='%s'",
              t.kb_text[best.kb], t.frac_text[best.frac],
              t.win_text[best.win]);
      for (char **c = t.cmd; *c != NULL; c++) fprintf(o, " %s", *c);
      fprintf(o, "\n");
    }
  }
  if (jf != NULL) {
    lms__tune_write_json(jf, &t, &best, ns);
    if (!json_stdout && fclose(jf) != 0) {
      fprintf(stderr, "lms tune: --json: cannot write '%s': %s\n", json,
              strerror(errno));
      rc = 1;
    }
  }
  free(t.times);
  if (t.err_fd >= 0) close(t.err_fd);
  if (t.have_workload) lms__wl_free(&t.w);
  return rc;
}
