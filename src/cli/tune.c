/* tune.c - `lms tune`: find the -lms threshold, -lms_frac and prefetch
 * window that run a workload fastest.
 *
 *   lms tune [OPTIONS] --workload NAME|TRACE [--batch N] [--size N]
 *            [--train|--forward] [RANGES]        on the simulated device
 *   lms tune [OPTIONS] [RANGES] -- CMD ARGS...   a real program, timed
 *
 * RANGES: --lms-values KB,..  --frac-values F,..  --window-values W,..
 * (defaults below).  A setting that runs out of memory (or, for a real
 * program, exits with a failure) is skipped and shown as such.
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
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/options.h"
#include "replay/replay.h"

#define MAXV 16

typedef struct setting {
  int kb, frac, win; /* indexes into the ranges */
} setting_t;

typedef struct tune {
  char kb_text[MAXV][32], frac_text[MAXV][32], win_text[MAXV][32];
  int nkb, nfrac, nwin;
  /* results[kb][frac][win]: ns, 0 not run, UINT64_MAX failed */
  uint64_t result[MAXV][MAXV][MAXV];
  int runs;
  /* what to run */
  lms__workload_t w;
  int have_workload;
  int iterations; /* per simulated run; the last is timed */
  char **cmd;
  const lms_options_t *base;
} tune_t;

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

static double ms(uint64_t ns) { return (double)ns / 1e6; }

static uint64_t run_workload(tune_t *t, const setting_t *s, char *why) {
  lms_options_t *o = NULL;
  if (lms_options_create(&o) != LMS_OK) return UINT64_MAX;
  lms__opts_copy(&o->v, &t->base->v);
  lms_options_set(o, "lms", t->kb_text[s->kb]);
  lms_options_set(o, "lms_frac", t->frac_text[s->frac]);
  lms_options_set(o, "prefetch-window", t->win_text[s->win]);
  lms_options_set(o, "sim-bytes", "off");
  if (o->v.gpu_limit == 0) lms_options_set(o, "gpu-limit", "16GiB");
  if (o->v.source[LMS__OPT_log] == LMS__SRC_DEFAULT)
    lms_options_set(o, "log", "error");
  lms__replay_result_t r;
  char err[LMS__ERRBUF] = "";
  lms_status_t st = lms__replay_run(&t->w, &o->v, t->iterations, 0, &r, err);
  lms_options_destroy(o);
  if (st != LMS_OK) {
    snprintf(why, 160, "%s", st == LMS_ERR_DEVICE_OOM ? "out of memory" : err);
    return UINT64_MAX;
  }
  return r.last.time_ns;
}

static uint64_t run_command(tune_t *t, const setting_t *s, char *why) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(why, 160, "fork: %s", strerror(errno));
    return UINT64_MAX;
  }
  if (pid == 0) {
    /* The program's own output would bury the progress lines. */
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
      close(null);
    }
    setenv("LMS_KB", t->kb_text[s->kb], 1);
    setenv("LMS_FRAC", t->frac_text[s->frac], 1);
    setenv("LMS_PREFETCH_WINDOW", t->win_text[s->win], 1);
    execvp(t->cmd[0], t->cmd);
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == 127)
      snprintf(why, 160, "could not run '%s'", t->cmd[0]);
    else
      snprintf(why, 160, "the program failed (exit %d)", code);
    return UINT64_MAX;
  }
  return (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000ull +
         (uint64_t)(b.tv_nsec - a.tv_nsec);
}

static uint64_t evaluate(tune_t *t, const setting_t *s) {
  uint64_t *slot = &t->result[s->kb][s->frac][s->win];
  if (*slot != 0) return *slot;
  char why[160] = "";
  t->runs++;
  uint64_t ns = t->have_workload ? run_workload(t, s, why) : run_command(t, s, why);
  *slot = ns;
  if (ns == UINT64_MAX)
    printf("  run %2d: -lms %s -lms_frac %s --prefetch-window %s: skipped, "
           "%s\n", t->runs, t->kb_text[s->kb], t->frac_text[s->frac],
           t->win_text[s->win], why);
  else
    printf("  run %2d: -lms %s -lms_frac %s --prefetch-window %s: %.1f ms\n",
           t->runs, t->kb_text[s->kb], t->frac_text[s->frac],
           t->win_text[s->win], ms(ns));
  fflush(stdout);
  return ns;
}

/* The search of Note [Searching by coordinates]; *best gets the fastest
 * setting, and the return is its time (UINT64_MAX if every one failed). */
static uint64_t search(tune_t *t, setting_t *best) {
  setting_t cur = {0, 0, 0};
  /* Start from the defaults where the ranges have them. */
  for (int i = 0; i < t->nwin; i++)
    if (strcmp(t->win_text[i], "1000,60%") == 0) cur.win = i;
  uint64_t cur_ns = evaluate(t, &cur);
  for (int round = 0; round < 2; round++) {
    int changed = 0;
    for (int dim = 0; dim < 3; dim++) {
      int n = dim == 0 ? t->nwin : dim == 1 ? t->nkb : t->nfrac;
      for (int v = 0; v < n; v++) {
        setting_t s = cur;
        if (dim == 0) s.win = v;
        else if (dim == 1) s.kb = v;
        else s.frac = v;
        uint64_t ns = evaluate(t, &s);
        if (ns < cur_ns) {
          cur = s;
          cur_ns = ns;
          changed = 1;
        }
      }
    }
    if (!changed) break;
  }
  *best = cur;
  return cur_ns;
}

typedef struct tried {
  uint64_t ns;
  int kb, frac, win;
} tried_t;

static int by_time(const void *a, const void *b) {
  const tried_t *x = a, *y = b;
  return x->ns < y->ns ? -1 : x->ns > y->ns;
}

/* What was tried, fastest first; skipped settings last. */
static void print_table(const tune_t *t) {
  static tried_t v[MAXV * MAXV * MAXV];
  int n = 0;
  for (int k = 0; k < t->nkb; k++)
    for (int f = 0; f < t->nfrac; f++)
      for (int w = 0; w < t->nwin; w++)
        if (t->result[k][f][w] != 0)
          v[n++] = (tried_t){t->result[k][f][w], k, f, w};
  qsort(v, (size_t)n, sizeof *v, by_time);
  printf("\n%12s %10s %18s %12s\n", "-lms", "-lms_frac", "--prefetch-window",
         "ms");
  for (int i = 0; i < n; i++) {
    if (v[i].ns == UINT64_MAX)
      printf("%12s %10s %18s %12s\n", t->kb_text[v[i].kb],
             t->frac_text[v[i].frac], t->win_text[v[i].win], "skipped");
    else
      printf("%12s %10s %18s %12.1f\n", t->kb_text[v[i].kb],
             t->frac_text[v[i].frac], t->win_text[v[i].win], ms(v[i].ns));
  }
}

int lms__cli_tune(const lms_options_t *base, int argc, char **argv) {
  static tune_t t;
  memset(&t, 0, sizeof t);
  t.base = base;
  lms__sim_args_t sa;
  lms__sim_args_init(&sa);
  char kb[256] = "", frac[256] = "", win[256] = "";
  int have_kb = 0, have_frac = 0, have_win = 0;
  char *sim_args[64];
  int nsim = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      t.cmd = &argv[i + 1];
      if (i + 1 >= argc) {
        fprintf(stderr, "lms tune: nothing to run after '--'\n");
        return 2;
      }
      break;
    }
    char *val = NULL;
    if (i + 1 < argc) val = argv[i + 1];
    if (strcmp(a, "--lms-values") == 0 && val) {
      if (lms__cli_list_fits("tune", a, val, sizeof kb)) return 2;
      snprintf(kb, sizeof kb, "%s", val);
      have_kb = 1;
      i++;
    } else if (strcmp(a, "--frac-values") == 0 && val) {
      if (lms__cli_list_fits("tune", a, val, sizeof frac)) return 2;
      snprintf(frac, sizeof frac, "%s", val);
      have_frac = 1;
      i++;
    } else if (strcmp(a, "--window-values") == 0 && val) {
      if (lms__cli_list_fits("tune", a, val, sizeof win)) return 2;
      snprintf(win, sizeof win, "%s", val);
      have_win = 1;
      i++;
    } else if (strcmp(a, "--workload") == 0 && val) {
      if (nsim < 63) sim_args[nsim++] = val;
      i++;
    } else if (strcmp(a, "--lms-values") == 0 || strcmp(a, "--frac-values") == 0 ||
               strcmp(a, "--window-values") == 0 || strcmp(a, "--workload") == 0) {
      fprintf(stderr, "lms tune: %s needs a value\n", a);
      return 2;
    } else if (nsim < 63) {
      sim_args[nsim++] = argv[i];
    }
  }
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
    if (nsim == 0) {
      fprintf(stderr, "lms tune: give --workload NAME|TRACE for the simulator, "
                      "or -- CMD ARGS for a program\n");
      return 2;
    }
    if (lms__sim_parse_args(nsim, sim_args, &sa) != 0) return 2;
    /* lms sim's flags that compare several runs have no meaning for a
     * search that makes its own runs: refused rather than ignored. */
    const char *unused = sa.nlinks      ? "--links (give one link as --link "
                                          "before the command)"
                         : sa.npolicies ? "--policies (give one as --policy "
                                          "before the command)"
                         : sa.ncapacities
                             ? "--capacities (give one as --gpu-limit before "
                               "the command)"
                         : sa.json[0]  ? "--json"
                         : sa.declare  ? "--declare"
                         : sa.calibrate_busy > 0
                             ? "--calibrate-busy (calibrate with lms sim, "
                               "then give its --device-tflops)"
                         : sa.gpus_per_link > 1
                             ? "--gpus-per-link (tune times one GPU alone; "
                               "see a setting under sharing with lms sim "
                               "--gpus-per-link N)"
                             : NULL;
    if (unused != NULL) {
      fprintf(stderr, "lms tune: %s is not accepted here; tune takes the "
                      "workload's flags (--batch, --size, --train, --forward, "
                      "--iterations, --device-tflops) and its own\n",
              unused);
      return 2;
    }
    t.iterations = sa.iterations;
    char err[LMS__ERRBUF] = "";
    lms__wl_init(&t.w, NULL);
    if (lms__sim_load(&sa, &t.w, err) != LMS_OK) {
      fprintf(stderr, "lms tune: %s\n", err);
      return 2;
    }
    t.have_workload = 1;
    printf("lms tune: %s on the simulated device, link %s\n", t.w.name,
           base->v.link.name);
  } else {
    /* A program that cannot be started would fail every setting and end
     * in advice about --gpu-limit; it is bad input, refused first. */
    char prog[PATH_MAX];
    if (lms__cli_find_program("tune", t.cmd[0], prog, sizeof prog) != 0)
      return 2;
    printf("lms tune: %s, timed\n", t.cmd[0]);
  }
  printf("  %d x %d x %d settings; searching one setting at a time\n", t.nkb,
         t.nfrac, t.nwin);
  setting_t best;
  uint64_t ns = search(&t, &best);
  int rc = 0;
  if (ns == UINT64_MAX) {
    printf("no setting ran; widen the ranges or raise --gpu-limit\n");
    rc = 1;
  } else {
    print_table(&t);
    printf("\nfastest of %d runs: %.1f ms\n", t.runs, ms(ns));
    if (t.have_workload) {
      printf("  lms sim");
      for (int i = 0; i < nsim; i++) printf(" %s", sim_args[i]);
      printf(" -lms %s -lms_frac %s --prefetch-window '%s'",
             t.kb_text[best.kb], t.frac_text[best.frac], t.win_text[best.win]);
      if (base->v.gpu_limit)
        printf(" --gpu-limit %llu", (unsigned long long)base->v.gpu_limit);
      if (strcmp(base->v.link.name, "custom") == 0)
        printf(" --links %g/%g\n", base->v.link.h2d_gbps, base->v.link.d2h_gbps);
      else
        printf(" --links %s\n", base->v.link.name);
    } else {
      printf("  LMS_KB=%s LMS_FRAC=%s LMS_PREFETCH_WINDOW='%s'",
             t.kb_text[best.kb], t.frac_text[best.frac], t.win_text[best.win]);
      for (char **c = t.cmd; *c != NULL; c++) printf(" %s", *c);
      printf("\n");
    }
  }
  if (t.have_workload) lms__wl_free(&t.w);
  return rc;
}
