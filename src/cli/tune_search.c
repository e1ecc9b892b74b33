/* tune_search.c - `lms tune`'s runs and search (Note [Searching by
 * coordinates] in tune.c): a setting run on the simulated device, or a
 * program run and timed under it (--repeat times, its median kept), the
 * search one setting at a time, and the table and JSON of what was
 * tried. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/tune_parts.h"

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
    snprintf(why, 160, "%.*s", 159,
             st == LMS_ERR_DEVICE_OOM ? "out of memory" : err);
    return UINT64_MAX;
  }
  return r.last.time_ns;
}

/* The last lines (at most 10, from its last 2 KiB) the program wrote to
 * stderr, each indented, after a run that failed. */
static void print_tail(tune_t *t) {
  if (t->err_fd < 0) return;
  off_t end = lseek(t->err_fd, 0, SEEK_END);
  if (end <= 0) {
    fprintf(t->out, "    (it wrote nothing to stderr)\n");
    return;
  }
  char buf[2049];
  off_t from = end > 2048 ? end - 2048 : 0;
  ssize_t n = pread(t->err_fd, buf, (size_t)(end - from), from);
  if (n <= 0) return;
  buf[n] = '\0';
  if (n > 0 && buf[n - 1] == '\n') buf[--n] = '\0';
  /* Back from the end over ten line breaks. */
  char *start = buf;
  int lines = 0;
  for (char *c = buf + n; c > buf; c--)
    if (c[-1] == '\n' && ++lines == 10) {
      start = c;
      break;
    }
  /* A cut line (the 2 KiB began inside it) is dropped. */
  if (start == buf && from > 0) {
    char *nl = strchr(buf, '\n');
    if (nl != NULL) start = nl + 1;
  }
  fprintf(t->out, "    its stderr ended with:\n");
  for (char *line = start, *next; line != NULL; line = next) {
    next = strchr(line, '\n');
    if (next != NULL) *next++ = '\0';
    fprintf(t->out, "    | %s\n", line);
  }
}

static uint64_t run_command(tune_t *t, const setting_t *s, char *why) {
  struct timespec a, b;
  if (t->err_fd >= 0 &&
      (ftruncate(t->err_fd, 0) != 0 || lseek(t->err_fd, 0, SEEK_SET) != 0)) {
    close(t->err_fd);
    t->err_fd = -1;
  }
  clock_gettime(CLOCK_MONOTONIC, &a);
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(why, WHY, "fork: %s", strerror(errno));
    return UINT64_MAX;
  }
  if (pid == 0) {
    /* The program's own output would bury the progress lines; its stderr
     * is kept, for the tail of a failure. */
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      dup2(null, STDOUT_FILENO);
      dup2(t->err_fd >= 0 ? t->err_fd : null, STDERR_FILENO);
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
      snprintf(why, WHY, "could not run '%s'", t->cmd[0]);
    else if (WIFSIGNALED(status))
      snprintf(why, WHY, "the program was killed by signal %d",
               WTERMSIG(status));
    else
      snprintf(why, WHY, "the program failed (exit %d)", code);
    return UINT64_MAX;
  }
  return (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000ull +
         (uint64_t)(b.tv_nsec - a.tv_nsec);
}

static int by_ns(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* A setting's times (t->repeat of them) in the table of every run. */
static uint64_t *times_of(tune_t *t, const setting_t *s) {
  size_t i = ((size_t)s->kb * MAXV + (size_t)s->frac) * MAXV + (size_t)s->win;
  return &t->times[i * (size_t)t->repeat];
}

/* Runs a setting t->repeat times (once on the simulator, whose runs are
 * the same every time) and returns the median of its times; a run that
 * fails ends the setting as skipped. */
static uint64_t evaluate(tune_t *t, const setting_t *s) {
  uint64_t *slot = &t->result[s->kb][s->frac][s->win];
  if (*slot != 0) return *slot;
  char *why = t->why[s->kb][s->frac][s->win];
  uint64_t *times = times_of(t, s);
  t->runs++;
  uint64_t ns = 0;
  for (int r = 0; r < t->repeat; r++) {
    times[r] = t->have_workload ? run_workload(t, s, why)
                                : run_command(t, s, why);
    if (times[r] == UINT64_MAX) {
      ns = UINT64_MAX;
      break;
    }
  }
  uint64_t sorted[MAX_REPEAT];
  if (ns == 0) {
    memcpy(sorted, times, (size_t)t->repeat * sizeof *sorted);
    qsort(sorted, (size_t)t->repeat, sizeof *sorted, by_ns);
    int h = t->repeat / 2;
    ns = t->repeat % 2 ? sorted[h] : sorted[h - 1] / 2 + sorted[h] / 2;
  }
  *slot = ns;
  fprintf(t->out, "  run %2d: -lms %s -lms_frac %s --prefetch-window %s: ",
          t->runs, t->kb_text[s->kb], t->frac_text[s->frac],
          t->win_text[s->win]);
  if (ns == UINT64_MAX) {
    fprintf(t->out, "skipped, %s\n", why);
    if (!t->have_workload) print_tail(t);
  } else if (t->repeat == 1) {
    fprintf(t->out, "%.1f ms\n", lms__tune_ms(ns));
  } else {
    fprintf(t->out, "%.1f ms (median of %d, %.1f to %.1f)\n", lms__tune_ms(ns),
            t->repeat, lms__tune_ms(sorted[0]), lms__tune_ms(sorted[t->repeat - 1]));
  }
  fflush(t->out);
  return ns;
}

/* The search of Note [Searching by coordinates]; *best gets the fastest
 * setting, and the return is its time (UINT64_MAX if every one failed). */
uint64_t lms__tune_search(tune_t *t, setting_t *best) {
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
void lms__tune_print_table(const tune_t *t) {
  static tried_t v[MAXV * MAXV * MAXV];
  int n = 0;
  for (int k = 0; k < t->nkb; k++)
    for (int f = 0; f < t->nfrac; f++)
      for (int w = 0; w < t->nwin; w++)
        if (t->result[k][f][w] != 0)
          v[n++] = (tried_t){t->result[k][f][w], k, f, w};
  qsort(v, (size_t)n, sizeof *v, by_time);
  fprintf(t->out, "\n%12s %10s %18s %12s\n", "-lms", "-lms_frac", "--prefetch-window",
         "ms");
  for (int i = 0; i < n; i++) {
    if (v[i].ns == UINT64_MAX)
      fprintf(t->out, "%12s %10s %18s %12s\n", t->kb_text[v[i].kb],
             t->frac_text[v[i].frac], t->win_text[v[i].win], "skipped");
    else
      fprintf(t->out, "%12s %10s %18s %12.1f\n", t->kb_text[v[i].kb],
             t->frac_text[v[i].frac], t->win_text[v[i].win], lms__tune_ms(v[i].ns));
  }
}

static void json_setting(FILE *f, const tune_t *t, int k, int fr, int w) {
  fprintf(f, "\"lms\": ");
  lms__cli_json_string(f, t->kb_text[k]);
  fprintf(f, ", \"lms_frac\": ");
  lms__cli_json_string(f, t->frac_text[fr]);
  fprintf(f, ", \"prefetch_window\": ");
  lms__cli_json_string(f, t->win_text[w]);
}

/* --json: what was run, every setting tried (in the order of the
 * ranges) with its median and each run's time, or why it was skipped,
 * and the fastest. */
void lms__tune_write_json(FILE *f, tune_t *t, const setting_t *best,
                       uint64_t best_ns) {
  fprintf(f, "{\"target\": ");
  if (t->have_workload) {
    lms__cli_json_string(f, t->w.name);
    fprintf(f, ", \"device\": \"sim\", \"link\": ");
    lms__cli_json_string(f, t->base->v.link.name);
  } else {
    fprintf(f, "[");
    for (char **c = t->cmd; *c != NULL; c++) {
      if (c != t->cmd) fprintf(f, ", ");
      lms__cli_json_string(f, *c);
    }
    fprintf(f, "], \"device\": \"program\"");
  }
  fprintf(f, ", \"repeat\": %d, \"settings_tried\": %d, \"tried\": [",
          t->repeat, t->runs);
  int first = 1;
  for (int k = 0; k < t->nkb; k++)
    for (int fr = 0; fr < t->nfrac; fr++)
      for (int w = 0; w < t->nwin; w++) {
        uint64_t ns = t->result[k][fr][w];
        if (ns == 0) continue;
        fprintf(f, "%s\n  {", first ? "" : ",");
        first = 0;
        json_setting(f, t, k, fr, w);
        if (ns == UINT64_MAX) {
          fprintf(f, ", \"ms\": null, \"skipped\": ");
          lms__cli_json_string(f, t->why[k][fr][w]);
          fprintf(f, "}");
          continue;
        }
        fprintf(f, ", \"ms\": %.3f, \"times_ms\": [", lms__tune_ms(ns));
        const uint64_t *v = times_of(t, &(setting_t){k, fr, w});
        for (int r = 0; r < t->repeat; r++)
          fprintf(f, "%s%.3f", r ? ", " : "", lms__tune_ms(v[r]));
        fprintf(f, "]}");
      }
  fprintf(f, "],\n \"fastest\": ");
  if (best_ns == UINT64_MAX) {
    fprintf(f, "null}\n");
    return;
  }
  fprintf(f, "{");
  json_setting(f, t, best->kb, best->frac, best->win);
  fprintf(f, ", \"ms\": %.3f}}\n", lms__tune_ms(best_ns));
}

