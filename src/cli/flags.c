/* flags.c - a command's flags from its table (Note [A command's flags] in
 * cli.h): set aside from the options' way, then parsed into the command's
 * arguments, each value checked as its entry says.
 *
 * Invariant: every message starts "lms CMD: " and names the flag, the
 * value given and what is accepted; a bad argument stops the parse with
 * -1 before the command does any work. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* The entry of `flag` in the spec's tables, with its part; NULL if none. */
static const lms__cli_flag_t *find(const lms__cli_spec_t *s, const char *flag,
                                   int *part) {
  for (int p = 0; p < LMS__CLI_PARTS && s->parts[p].flags != NULL; p++)
    for (size_t i = 0; i < s->parts[p].n; i++)
      if (strcmp(flag, s->parts[p].flags[i].flag) == 0) {
        *part = p;
        return &s->parts[p].flags[i];
      }
  return NULL;
}

int lms__cli_extract(int *argc, char **argv, char **out,
                     const lms__cli_spec_t *spec) {
  int n = 0, k = 1;
  for (int i = 1; i < *argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--") == 0) {
      while (i < *argc) argv[k++] = argv[i++];
      break;
    }
    char flag[64];
    const char *val = lms__cli_split_flag(arg, flag, sizeof flag);
    int part;
    const lms__cli_flag_t *f = find(spec, flag, &part);
    if (f == NULL) {
      argv[k++] = argv[i];
      continue;
    }
    /* A value given to a switch is the command's to refuse by name. */
    out[n++] = argv[i];
    if (val == NULL && f->kind != LMS__CLI_SWITCH && i + 1 < *argc)
      out[n++] = argv[++i];
  }
  *argc = k;
  argv[k] = NULL;
  return n;
}

/* What a value of f must be, as the parser checks it. */
static void accepted(const lms__cli_flag_t *f, char *buf, size_t n) {
  switch (f->kind) {
  case LMS__CLI_SWITCH:
    snprintf(buf, n, "takes no value");
    return;
  case LMS__CLI_INT:
    if (f->accepted) snprintf(buf, n, "%s", f->accepted);
    else snprintf(buf, n, "a whole number from %ld to %ld", (long)f->lo,
                  (long)f->hi);
    return;
  case LMS__CLI_REAL:
    if (f->accepted) snprintf(buf, n, "%s", f->accepted);
    else snprintf(buf, n, "a number above %g and up to %g", f->lo, f->hi);
    return;
  case LMS__CLI_PATH:
    snprintf(buf, n, "a path of fewer than %zu bytes", f->size);
    return;
  case LMS__CLI_LIST:
    snprintf(buf, n, "a comma-separated list of 1 to %zu: %s", f->max,
             f->accepted ? f->accepted : "items");
    return;
  case LMS__CLI_FN:
    snprintf(buf, n, "%s", f->accepted ? f->accepted : "a value");
    return;
  }
}

static int bad_value(const char *cmd, const lms__cli_flag_t *f,
                     const char *val) {
  char q[LMS__CLI_QUOTE_MAX + 4], what[256];
  accepted(f, what, sizeof what);
  fprintf(stderr, "lms %s: %s: '%s' is not accepted; accepted: %s\n", cmd,
          f->flag, lms__cli_quote(val, q), what);
  return -1;
}

int lms__cli_int(const char *cmd, const lms__cli_flag_t *f, const char *val,
                 long *out) {
  char *end = NULL;
  errno = 0;
  long v = strtol(val, &end, 10);
  if (end == val || *end != '\0' || errno != 0 || v < (long)f->lo ||
      v > (long)f->hi)
    return bad_value(cmd, f, val);
  *out = v;
  return 0;
}

/* A comma-separated list, each item parsed by f->fn into the array. */
static int list(const char *cmd, const lms__cli_flag_t *f, const char *val,
                char *args, size_t base) {
  char buf[1024];
  if (val[0] == '\0') {
    fprintf(stderr, "lms %s: %s: expected a comma-separated list\n", cmd,
            f->flag);
    return -1;
  }
  if (lms__cli_list_fits(cmd, f->flag, val, sizeof buf)) return -1;
  snprintf(buf, sizeof buf, "%s", val);
  size_t *n = (size_t *)(void *)(args + base + f->count);
  *n = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok != NULL;
       tok = strtok_r(NULL, ",", &save)) {
    if (*n == f->max) {
      fprintf(stderr, "lms %s: %s: at most %zu items\n", cmd, f->flag,
              f->max);
      return -1;
    }
    if (f->fn(cmd, f, tok, args + base + f->at + *n * f->size) != 0)
      return -1;
    (*n)++;
  }
  if (*n == 0) {
    fprintf(stderr, "lms %s: %s: the list is empty\n", cmd, f->flag);
    return -1;
  }
  return 0;
}

static int set(const char *cmd, const lms__cli_flag_t *f, const char *val,
               char *args, size_t base) {
  void *field = args + base + f->at;
  long v;
  switch (f->kind) {
  case LMS__CLI_SWITCH:
    *(int *)field = (int)f->lo;
    return 0;
  case LMS__CLI_INT:
    if (lms__cli_int(cmd, f, val, &v) != 0) return -1;
    *(int *)field = (int)v;
    return 0;
  case LMS__CLI_REAL: {
    char *end = NULL;
    double d = strtod(val, &end);
    if (end == val || *end != '\0' || !isfinite(d) || !(d > f->lo) ||
        d > f->hi)
      return bad_value(cmd, f, val);
    *(double *)field = d * (f->scale != 0 ? f->scale : 1.0);
    return 0;
  }
  case LMS__CLI_PATH:
    if (val[0] == '\0') {
      fprintf(stderr, "lms %s: %s: the path is empty; give a file or "
                      "directory name\n", cmd, f->flag);
      return -1;
    }
    return lms__cli_path(cmd, f->flag, val, field, f->size);
  case LMS__CLI_LIST:
    return list(cmd, f, val, args, base);
  case LMS__CLI_FN:
    return f->fn(cmd, f, val, field);
  }
  return -1;
}

int lms__cli_parse(const lms__cli_spec_t *spec, int argc, char **argv,
                   void *args, const char **seen) {
  const char *cmd = spec->cmd;
  char *base = args;
  for (int p = 0; seen != NULL && p < LMS__CLI_PARTS; p++) seen[p] = NULL;
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    if (spec->stop_at_dashes && strcmp(arg, "--") == 0) return i;
    char flag[64];
    const char *val = lms__cli_split_flag(arg, flag, sizeof flag);
    int part = 0;
    const lms__cli_flag_t *f = find(spec, flag, &part);
    if (f != NULL) {
      if (f->kind == LMS__CLI_SWITCH && val != NULL) {
        fprintf(stderr, "lms %s: %s takes no value; got '%s'\n", cmd, flag,
                arg);
        return -1;
      }
      if (f->kind != LMS__CLI_SWITCH && val == NULL) {
        if (i + 1 >= argc) {
          fprintf(stderr, "lms %s: %s needs a value\n", cmd, flag);
          return -1;
        }
        val = argv[++i];
      }
      if (seen != NULL && seen[part] == NULL) seen[part] = f->flag;
      if (set(cmd, f, val, base, spec->parts[part].base) != 0) return -1;
    } else if (arg[0] == '-' && arg[1] != '\0') {
      fprintf(stderr, "lms %s: unknown option '%s'; see 'lms %s --help'\n",
              cmd, arg, spec->help);
      return -1;
    } else if (spec->input_size == 0) {
      fprintf(stderr, "lms %s: unexpected argument '%s'; see 'lms %s "
                      "--help'\n", cmd, arg, spec->help);
      return -1;
    } else if (base[spec->input_at] == '\0') {
      if (lms__cli_path(cmd, spec->input_what, arg, base + spec->input_at,
                        spec->input_size))
        return -1;
    } else {
      fprintf(stderr, "lms %s: unexpected argument '%s' (%s is '%s')\n", cmd,
              arg, spec->input_what, base + spec->input_at);
      return -1;
    }
  }
  return argc;
}

void lms__cli_flags_help(FILE *f, const lms__cli_spec_t *spec) {
  fprintf(f, "values lms %s accepts (checked as written here):\n", spec->cmd);
  for (int p = 0; p < LMS__CLI_PARTS && spec->parts[p].flags != NULL; p++)
    for (size_t i = 0; i < spec->parts[p].n; i++) {
      const lms__cli_flag_t *e = &spec->parts[p].flags[i];
      int part;
      if (find(spec, e->flag, &part) != e) continue; /* shadowed */
      char buf[256];
      accepted(e, buf, sizeof buf);
      fprintf(f, "  %-18s %s\n", e->flag, buf);
    }
}
