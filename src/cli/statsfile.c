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
#include <limits.h>
#include <math.h>
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
  const char *tok; /* the last number read, as written, for messages */
  int tok_len;
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
    /* JSON has no control characters in strings: a tab or a line end
     * here is a cut or a hand edit gone wrong, not a name. */
    if ((unsigned char)*c->p < 0x20 || *c->p == '\\' || n + 1 >= size)
      return fail(c, "a short name without escapes");
    out[n++] = *c->p++;
  }
  out[n] = '\0';
  c->p++;
  return expect(c, ':', "':' after the name");
}

/* The end of the JSON number that starts at p (RFC 8259:
 * -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?), or NULL if none does. */
static const char *json_number_end(const char *p) {
  if (*p == '-') p++;
  if (*p == '0') {
    p++;
  } else if (*p >= '1' && *p <= '9') {
    while (isdigit((unsigned char)*p)) p++;
  } else {
    return NULL;
  }
  if (*p == '.') {
    if (!isdigit((unsigned char)*++p)) return NULL;
    while (isdigit((unsigned char)*p)) p++;
  }
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-') p++;
    if (!isdigit((unsigned char)*p)) return NULL;
    while (isdigit((unsigned char)*p)) p++;
  }
  return p;
}

/* Reads a JSON number.  One too large for a double reads as infinity and
 * is refused where it is stored, with the field's name and range; one too
 * small reads as the nearest double (zero or a denormal).  strtod() alone
 * would also take what JSON does not write ("0x1F", "0012", "1."), so the
 * number must end where JSON's grammar says it does. */
static int number(cursor_t *c, double *out) {
  skip_ws(c);
  const char *json_end = json_number_end(c->p);
  char *end = NULL;
  double v = json_end != NULL ? strtod(c->p, &end) : 0;
  if (json_end == NULL || end != json_end)
    return fail(c, "a number as JSON writes it (decimal, no leading zeros)");
  c->tok = c->p;
  c->tok_len = (int)(end - c->p);
  c->p = end;
  *out = v;
  return 0;
}

/* Note [Numbers read from a stats file]
 * A stats file is input like any other: hand-edited, cut, or written by
 * another program.  Every number is checked against the range of the field
 * it fills before it is converted, because converting a double outside an
 * integer type's range is undefined behaviour (1e30 became 0 or INT_MIN,
 * -5 became 2^64 - 5 and a report of -100 %).  The bound for whole numbers
 * is 2^63, below which every double converts exactly to int64_t and
 * uint64_t alike, and which no counter, limit or time reaches. */
#define WHOLE_MAX 9223372036854775808.0 /* 2^63, excluded */
#define WHOLE_FORM "a whole number from 0, below 2^63"

/* Refuses the number last read for `field`: the file, where, the text as
 * written and what is accepted. */
static int bad_value(cursor_t *c, const char *field, const char *accepted) {
  lms__errf(c->err, "%s: byte %ld: \"%s\" is %.*s%s; accepted: %s", c->path,
            (long)(c->tok - c->s), field, c->tok_len > 32 ? 32 : c->tok_len,
            c->tok, c->tok_len > 32 ? "..." : "", accepted);
  return -1;
}

/* A whole number in [0, 2^63) into *out, or -1 with the reason. */
static int whole(cursor_t *c, const char *field, double v, int64_t *out) {
  if (!(v >= 0 && v < WHOLE_MAX && v == floor(v)))
    return bad_value(c, field, WHOLE_FORM);
  *out = (int64_t)v;
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

/* A whole number of iterations from lo to the most a replay runs, or -1:
 * the range is checked before the conversion. */
static int iteration_count(double v, int lo) {
  return v >= lo && v <= LMS__REPLAY_MAX_ITERS && v == floor(v) ? (int)v : -1;
}

/* Sets the field the name stands for; unknown names are skipped over.
 * Returns -1, with the reason in c->err, for a value outside the field's
 * range (Note [Numbers read from a stats file]). */
static int store(cursor_t *c, lms__stats_file_t *sf, const char *name,
                 int counter, const double v[3]) {
  int index = 0;
  char part[96];
#define STORE_(field, desc)                                                   \
  if (counter && strcmp(name, #field) == 0) {                                 \
    static const char *const parts[3] = {"current", "peak", "total"};       \
    int64_t w[3];                                                             \
    for (int i = 0; i < 3; i++) {                                             \
      snprintf(part, sizeof part, "%s.%s", name, parts[i]);                  \
      if (whole(c, part, v[i], &w[i]) != 0) return -1;                        \
    }                                                                         \
    sf->st.field.current = w[0];                                              \
    sf->st.field.peak = w[1];                                                 \
    sf->st.field.total = w[2];                                                \
    if (!((sf->counter_seen >> index) & 1u)) sf->counters++;                  \
    sf->counter_seen |= 1u << index;                                          \
    return 0;                                                                 \
  }                                                                           \
  index++;
  LMS_STATS_MAP(STORE_)
#undef STORE_
  (void)index;
  if (counter) return 0;
  int64_t w = 0;
  if (strcmp(name, "version") == 0) {
    if (!(v[0] >= 0 && v[0] <= INT_MAX && v[0] == floor(v[0]))) {
      char form[64];
      snprintf(form, sizeof form, "a whole number (this lms reads %d)",
               LMS_STATS_VERSION);
      return bad_value(c, name, form);
    }
    sf->st.version = (int)v[0];
    sf->seen_mask |= 1;
  } else if (strcmp(name, "device_limit") == 0) {
    if (whole(c, name, v[0], &w) != 0) return -1;
    sf->st.device_limit = (uint64_t)w;
    sf->seen_mask |= 2;
  } else if (strcmp(name, "host_limit") == 0) {
    if (whole(c, name, v[0], &w) != 0) return -1;
    sf->st.host_limit = (uint64_t)w;
  } else if (strcmp(name, "fragmentation") == 0) {
    if (!(v[0] >= 0 && v[0] <= 1))
      return bad_value(c, name, "a number from 0 to 1");
    sf->st.fragmentation = v[0];
  } else if (strcmp(name, "elapsed_ns") == 0) {
    if (whole(c, name, v[0], &w) != 0) return -1;
    sf->st.elapsed_ns = (uint64_t)w;
    sf->seen_mask |= 4;
  } else if (strcmp(name, "iterations") == 0) {
    sf->iterations = iteration_count(v[0], 1);
    sf->seen_mask |= 8;
  } else if (strcmp(name, "warmup_iterations") == 0) {
    sf->warmup = iteration_count(v[0], 0);
    sf->seen_mask |= 16;
  }
  return 0;
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
      if (store(c, sf, name, 1, v) != 0) return -1;
    } else {
      double v[3] = {0, 0, 0};
      if (number(c, &v[0]) != 0) return -1;
      if (store(c, sf, name, 0, v) != 0) return -1;
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
    cursor_t c = {buf, buf, path, err, NULL, 0};
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
