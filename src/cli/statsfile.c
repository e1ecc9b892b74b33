/* statsfile.c - reads back the stats JSON the runtime writes (--stats PATH,
 * lms_stats_format_json) for `lms report`, and writes the stats of measured
 * iterations (`lms bench net --trace-dir`).
 *
 * The reader is strict, like the trace reader: a file that is not exactly
 * an object of numbers and {current, peak, total} objects, that lacks a
 * counter the report needs, or that has another version is an error naming
 * the file, the byte offset where it went wrong and what was expected.
 *
 * Note [A measured iteration's stats]
 * The runtime's stats file covers a context's whole life: setup, warm-up
 * and every iteration, with elapsed_ns from creation to destruction.  Its
 * trace covers the same span, so `lms report` replays that trace once and
 * compares.  A benchmark that times iterations itself (bench net) knows
 * better: it writes the same JSON with two more numbers, "iterations" (how
 * many were measured) and "warmup_iterations" (how many ran before), where
 * every counter's total and elapsed_ns are the mean of one measured
 * iteration.  Its trace is one iteration of the workload with the step
 * times measured, so the report replays warm-up plus measured iterations
 * and compares the last with elapsed_ns, as `lms sim` does.  A file with
 * "iterations" may leave counters out (a run recorded before the
 * benchmark wrote stats, transcribed from its printed figures): the report
 * shows "-" for what is absent, never a zero it was not given.  A whole-run
 * file must hold every counter. */
#include "cli/report.h"
#include "replay/replay.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATS_MAX_BYTES (1u << 20)

/* How many {current, peak, total} counters a stats file of this version
 * holds. */
#define COUNT_(field, desc) +1
static const int kCounters = 0 LMS_STATS_MAP(COUNT_);
#undef COUNT_

typedef struct cursor {
  const char *s, *p, *path;
  char *err;
} cursor_t;

static void skip_ws(cursor_t *c) {
  while (*c->p == ' ' || *c->p == '\n' || *c->p == '\t' || *c->p == '\r')
    c->p++;
}

static int fail(cursor_t *c, const char *expected) {
  char got[24];
  if (*c->p == '\0')
    snprintf(got, sizeof got, "the end of the file");
  else
    snprintf(got, sizeof got, "'%.12s'", c->p);
  for (char *q = got; *q; q++)
    if (*q == '\n' || *q == '\r' || *q == '\t') *q = ' ';
  lms__errf(c->err, "%s: byte %ld: expected %s; got %s; is it a stats file "
                    "written by --stats?",
            c->path, (long)(c->p - c->s), expected, got);
  return -1;
}

static int expect(cursor_t *c, char ch, const char *what) {
  skip_ws(c);
  if (*c->p != ch) return fail(c, what);
  c->p++;
  return 0;
}

static int key(cursor_t *c, char *out, size_t size) {
  if (expect(c, '"', "a quoted name") != 0) return -1;
  size_t n = 0;
  while (*c->p != '"') {
    if (*c->p == '\0' || *c->p == '\\' || n + 1 >= size)
      return fail(c, "a short name without escapes");
    out[n++] = *c->p++;
  }
  out[n] = '\0';
  c->p++;
  return expect(c, ':', "':' after the name");
}

static int number(cursor_t *c, double *out) {
  skip_ws(c);
  const char *q = c->p;
  if (*q == '-') q++;
  if (!isdigit((unsigned char)*q)) return fail(c, "a number");
  char *end = NULL;
  errno = 0;
  double v = strtod(c->p, &end);
  if (errno != 0 || end == c->p) return fail(c, "a number");
  c->p = end;
  *out = v;
  return 0;
}

#define NAME_(field, desc) #field,
static const char *const kCounterNames[] = {LMS_STATS_MAP(NAME_)};
#undef NAME_

int lms__stats_file_has(const lms__stats_file_t *sf, const char *field) {
  for (int i = 0; i < kCounters; i++)
    if (strcmp(kCounterNames[i], field) == 0)
      return (sf->counter_seen >> i) & 1u;
  return 0;
}

/* A whole number of iterations from lo to the most a replay runs, or -1. */
static int iteration_count(double v, int lo) {
  return v >= lo && v <= LMS__REPLAY_MAX_ITERS && v == (double)(int)v ? (int)v
                                                                       : -1;
}

/* Sets the field the name stands for; unknown names are skipped over. */
static void store(lms__stats_file_t *sf, const char *name, int counter,
                  const double v[3]) {
  int index = 0;
#define STORE_(field, desc)                                                   \
  if (counter && strcmp(name, #field) == 0) {                                 \
    sf->st.field.current = (int64_t)v[0];                                     \
    sf->st.field.peak = (int64_t)v[1];                                        \
    sf->st.field.total = (int64_t)v[2];                                       \
    if (!((sf->counter_seen >> index) & 1u)) sf->counters++;                  \
    sf->counter_seen |= 1u << index;                                          \
    return;                                                                   \
  }                                                                           \
  index++;
  LMS_STATS_MAP(STORE_)
#undef STORE_
  (void)index;
  if (counter) return;
  if (strcmp(name, "version") == 0) {
    sf->st.version = (int)v[0];
    sf->seen_mask |= 1;
  } else if (strcmp(name, "device_limit") == 0) {
    sf->st.device_limit = (uint64_t)v[0];
    sf->seen_mask |= 2;
  } else if (strcmp(name, "host_limit") == 0) {
    sf->st.host_limit = (uint64_t)v[0];
  } else if (strcmp(name, "fragmentation") == 0) {
    sf->st.fragmentation = v[0];
  } else if (strcmp(name, "elapsed_ns") == 0) {
    sf->st.elapsed_ns = (uint64_t)v[0];
    sf->seen_mask |= 4;
  } else if (strcmp(name, "iterations") == 0) {
    sf->iterations = iteration_count(v[0], 1);
    sf->seen_mask |= 8;
  } else if (strcmp(name, "warmup_iterations") == 0) {
    sf->warmup = iteration_count(v[0], 0);
    sf->seen_mask |= 16;
  }
}

static int parse(cursor_t *c, lms__stats_file_t *sf) {
  if (expect(c, '{', "'{' at the start of a stats file") != 0) return -1;
  for (;;) {
    char name[64];
    if (key(c, name, sizeof name) != 0) return -1;
    skip_ws(c);
    if (*c->p == '{') {
      c->p++;
      static const char *const parts[3] = {"current", "peak", "total"};
      double v[3];
      for (int i = 0; i < 3; i++) {
        char part[16], want[48];
        if (key(c, part, sizeof part) != 0) return -1;
        if (strcmp(part, parts[i]) != 0) {
          snprintf(want, sizeof want, "the name \"%s\"", parts[i]);
          c->p -= 1;
          return fail(c, want);
        }
        if (number(c, &v[i]) != 0) return -1;
        if (i < 2 && expect(c, ',', "','") != 0) return -1;
      }
      if (expect(c, '}', "'}' after \"total\"") != 0) return -1;
      store(sf, name, 1, v);
    } else {
      double v[3] = {0, 0, 0};
      if (number(c, &v[0]) != 0) return -1;
      store(sf, name, 0, v);
    }
    skip_ws(c);
    if (*c->p == ',') {
      c->p++;
      continue;
    }
    if (*c->p == '}') {
      c->p++;
      break;
    }
    return fail(c, "',' or '}'");
  }
  skip_ws(c);
  if (*c->p != '\0') return fail(c, "nothing after the closing '}'");
  return 0;
}

lms_status_t lms__stats_file_read(const char *path, lms__stats_file_t *sf,
                                  char *err) {
  memset(sf, 0, sizeof *sf);
  snprintf(sf->path, sizeof sf->path, "%s", path);
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    lms__errf(err, "%s: cannot open the stats file: %s", path,
              strerror(errno));
    return LMS_ERR_INVALID;
  }
  char *buf = malloc(STATS_MAX_BYTES + 1);
  if (buf == NULL) {
    fclose(f);
    lms__errf(err, "%s: no memory to read the stats file", path);
    return LMS_ERR_HOST_OOM;
  }
  size_t n = fread(buf, 1, STATS_MAX_BYTES + 1, f);
  int bad_read = ferror(f);
  fclose(f);
  lms_status_t st = LMS_OK;
  if (bad_read) {
    lms__errf(err, "%s: cannot read the stats file", path);
    st = LMS_ERR_INVALID;
  } else if (n > STATS_MAX_BYTES) {
    lms__errf(err, "%s: larger than %u bytes; a stats file is a few KB",
              path, STATS_MAX_BYTES);
    st = LMS_ERR_INVALID;
  } else if (memchr(buf, '\0', n) != NULL) {
    lms__errf(err, "%s: holds a NUL byte; a stats file is JSON text", path);
    st = LMS_ERR_INVALID;
  } else {
    buf[n] = '\0';
    cursor_t c = {buf, buf, path, err};
    if (parse(&c, sf) != 0) {
      st = LMS_ERR_INVALID;
    } else if (!(sf->seen_mask & 1)) {
      lms__errf(err, "%s: no \"version\"; not a stats file written by "
                     "--stats", path);
      st = LMS_ERR_INVALID;
    } else if (sf->st.version != LMS_STATS_VERSION) {
      lms__errf(err, "%s: stats version %d; this lms reads version %d",
                path, sf->st.version, LMS_STATS_VERSION);
      st = LMS_ERR_INVALID;
    } else if (sf->iterations < 0 || sf->warmup < 0 ||
               sf->iterations + sf->warmup > LMS__REPLAY_MAX_ITERS) {
      lms__errf(err, "%s: \"iterations\" is a whole number from 1 and "
                     "\"warmup_iterations\" one from 0, together at most %d",
                path, LMS__REPLAY_MAX_ITERS);
      st = LMS_ERR_INVALID;
    } else if ((sf->seen_mask & 16) && !(sf->seen_mask & 8)) {
      lms__errf(err, "%s: \"warmup_iterations\" without \"iterations\"",
                path);
      st = LMS_ERR_INVALID;
    } else if (!(sf->seen_mask & 4) || !(sf->seen_mask & 2) ||
               (sf->iterations == 0 && sf->counters != kCounters)) {
      lms__errf(err, "%s: lacks %s; the report needs elapsed_ns, "
                     "device_limit and, for a whole run, the counters", path,
                !(sf->seen_mask & 4)   ? "\"elapsed_ns\""
                : !(sf->seen_mask & 2) ? "\"device_limit\""
                                       : "every counter");
      st = LMS_ERR_INVALID;
    } else if (sf->st.elapsed_ns == 0) {
      lms__errf(err, "%s: elapsed_ns is 0: the run did no timed work", path);
      st = LMS_ERR_INVALID;
    }
  }
  free(buf);
  return st;
}

lms_status_t lms__stats_file_write_iterations(const char *path,
                                              const lms_stats_t *begin,
                                              const lms_stats_t *end,
                                              int iterations, int warmup,
                                              uint64_t iteration_ns,
                                              char *err) {
  if (iterations < 1 || warmup < 0 ||
      iterations + warmup > LMS__REPLAY_MAX_ITERS || iteration_ns == 0) {
    lms__errf(err, "%s: %d iterations after %d of warm-up taking %llu ns "
                   "each cannot be written: 1 or more measured, at most %d "
                   "in all, and a time above 0", path, iterations, warmup,
              (unsigned long long)iteration_ns, LMS__REPLAY_MAX_ITERS);
    return LMS_ERR_INVALID;
  }
  lms_stats_t st = *end;
  /* A count that went down (a level's total never does) is written as 0
   * rather than a negative mean. */
#define MEAN_(field, desc)                                                    \
  st.field.total = end->field.total > begin->field.total                      \
                       ? (end->field.total - begin->field.total) / iterations \
                       : 0;
  LMS_STATS_MAP(MEAN_)
#undef MEAN_
  st.elapsed_ns = iteration_ns;
  char buf[8192];
  size_t n = lms_stats_format_json(&st, buf, sizeof buf);
  /* The object's closing brace gives way to the two iteration numbers. */
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '}')) n--;
  FILE *f = n + 1 < sizeof buf ? fopen(path, "w") : NULL;
  if (f == NULL) {
    lms__errf(err, "%s: cannot write the stats file: %s", path,
              n + 1 >= sizeof buf ? "too long" : strerror(errno));
    return LMS_ERR_INVALID;
  }
  int bad = fprintf(f, "%.*s,\n \"iterations\": %d,\n \"warmup_iterations\": "
                       "%d}\n", (int)n, buf, iterations, warmup) < 0;
  bad |= fclose(f) != 0;
  if (bad) {
    lms__errf(err, "%s: writing the stats file failed", path);
    return LMS_ERR_INVALID;
  }
  return LMS_OK;
}
