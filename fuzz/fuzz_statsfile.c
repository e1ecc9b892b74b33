/* fuzz_statsfile.c - the stats-file reader of `lms report --stats`
 * (src/cli/statsfile.c) on any bytes.
 *
 * The reader takes a path, so each input is written to a memory file
 * (memfd_create) and read through /proc/self/fd/N: no directory is
 * touched, and the reader runs exactly as for a file on disk.
 *
 * Properties, for every input: no sanitizer report (a number outside a
 * field's range converted to an integer is one, under clang's
 * float-cast-overflow); a refused input gives a message naming the path
 * that fits its buffer; an accepted one is JSON (by an oracle written
 * from RFC 8259, below), has the version this lms reads,
 * every whole number from 0 below 2^63, a fragmentation from 0 to 1, a
 * nonzero elapsed time and iteration counts within a replay's; and its
 * stats, written again by lms_stats_format_json, read back to the same
 * figures (the fragmentation to the six places the writer keeps). */
#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli/report.h"
#include "fuzz.h"
#include "replay/replay.h"

static int g_fd = -1;
static char g_path[64];

/* Makes the memory file hold exactly these bytes. */
static void put(const void *data, size_t size) {
  if (g_fd < 0) {
    g_fd = memfd_create("lms-fuzz-stats", 0);
    FUZZ_CHECK(g_fd >= 0, "memfd_create failed");
    snprintf(g_path, sizeof g_path, "/proc/self/fd/%d", g_fd);
  }
  FUZZ_CHECK(ftruncate(g_fd, 0) == 0, "ftruncate failed");
  FUZZ_CHECK(size == 0 || pwrite(g_fd, data, size, 0) == (ssize_t)size,
             "pwrite of %zu bytes failed", size);
}

static void check_stat(const char *name, const lms_stat_t *a,
                       const lms_stat_t *b) {
  FUZZ_CHECK(a->current >= 0 && a->peak >= 0 && a->total >= 0,
             "%s: a negative figure was accepted", name);
  FUZZ_CHECK(b == NULL || (a->current == b->current && a->peak == b->peak &&
                           a->total == b->total),
             "%s: {%lld, %lld, %lld} read back as {%lld, %lld, %lld}", name,
             (long long)a->current, (long long)a->peak, (long long)a->total,
             (long long)b->current, (long long)b->peak, (long long)b->total);
}

/* ---- An oracle: is the text JSON? ----------------------------------------
 * Written apart from the reader, from RFC 8259, for the values a stats
 * file may hold (objects, strings, numbers), so that what the reader
 * accepts is checked against the grammar rather than against itself.
 * Each returns the end of what it read, or NULL if the text is not that. */

static const char *j_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

static int j_digit(char c) { return c >= '0' && c <= '9'; }

static const char *j_string(const char *p) {
  if (*p++ != '"') return NULL;
  for (; *p != '"'; p++) {
    if ((unsigned char)*p < 0x20) return NULL;
    if (*p == '\\') {
      p++;
      if (*p == 'u') {
        for (int i = 0; i < 4; i++)
          if (!strchr("0123456789abcdefABCDEF", *++p) || *p == '\0')
            return NULL;
      } else if (*p == '\0' || !strchr("\"\\/bfnrt", *p)) {
        return NULL;
      }
    }
  }
  return p + 1;
}

static const char *j_number(const char *p) {
  if (*p == '-') p++;
  if (*p == '0') p++;
  else if (*p >= '1' && *p <= '9') while (j_digit(*p)) p++;
  else return NULL;
  if (*p == '.') {
    if (!j_digit(*++p)) return NULL;
    while (j_digit(*p)) p++;
  }
  if (*p == 'e' || *p == 'E') {
    if (*++p == '+' || *p == '-') p++;
    if (!j_digit(*p)) return NULL;
    while (j_digit(*p)) p++;
  }
  return p;
}

static const char *j_value(const char *p, int depth);

static const char *j_object(const char *p, int depth) {
  if (*p++ != '{' || depth > 4) return NULL;
  p = j_ws(p);
  if (*p == '}') return p + 1;
  for (;;) {
    if ((p = j_string(j_ws(p))) == NULL) return NULL;
    p = j_ws(p);
    if (*p++ != ':') return NULL;
    if ((p = j_value(p, depth)) == NULL) return NULL;
    p = j_ws(p);
    if (*p == '}') return p + 1;
    if (*p++ != ',') return NULL;
  }
}

static const char *j_value(const char *p, int depth) {
  p = j_ws(p);
  if (*p == '{') return j_object(p, depth + 1);
  if (*p == '"') return j_string(p);
  return j_number(p);
}

/* 1 if data is one JSON object and nothing else but blank space. */
static int is_json_object(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  FUZZ_CHECK(text != NULL, "no memory");
  memcpy(text, data, size);
  text[size] = '\0';
  const char *p = j_ws(text);
  int ok = memchr(data, '\0', size) == NULL && *p == '{' &&
           (p = j_value(p, 0)) != NULL && *j_ws(p) == '\0';
  free(text);
  return ok;
}

static void check_accepted(const lms__stats_file_t *sf) {
  const lms_stats_t *st = &sf->st;
  FUZZ_CHECK(st->version == LMS_STATS_VERSION, "version %d", st->version);
  FUZZ_CHECK(st->elapsed_ns > 0 && st->elapsed_ns <= INT64_MAX,
             "elapsed_ns %llu", (unsigned long long)st->elapsed_ns);
  FUZZ_CHECK(st->device_limit <= INT64_MAX && st->host_limit <= INT64_MAX,
             "a limit at or above 2^63");
  FUZZ_CHECK(st->fragmentation >= 0 && st->fragmentation <= 1,
             "fragmentation %g", st->fragmentation);
  FUZZ_CHECK(sf->iterations >= 0 && sf->warmup >= 0 &&
                 sf->iterations + sf->warmup <= LMS__REPLAY_MAX_ITERS,
             "%d iterations after %d", sf->iterations, sf->warmup);
#define FUZZ_STAT_(field, desc) check_stat(#field, &st->field, NULL);
  LMS_STATS_MAP(FUZZ_STAT_)
#undef FUZZ_STAT_
}

static void check_round_trip(const lms__stats_file_t *sf) {
  char json[8192];
  size_t n = lms_stats_format_json(&sf->st, json, sizeof json);
  FUZZ_CHECK(n < sizeof json, "the JSON needs %zu bytes", n);
  lms__stats_file_t *back = malloc(sizeof *back);
  char err[LMS__ERRBUF];
  FUZZ_CHECK(back != NULL, "no memory");
  put(json, n);
  FUZZ_CHECK(lms__stats_file_read(g_path, back, err) == LMS_OK,
             "the stats written again do not read back: %s", err);
  const lms_stats_t *a = &sf->st, *b = &back->st;
#define FUZZ_SAME_(field, desc) check_stat(#field, &a->field, &b->field);
  LMS_STATS_MAP(FUZZ_SAME_)
#undef FUZZ_SAME_
  FUZZ_CHECK(a->device_limit == b->device_limit &&
                 a->host_limit == b->host_limit &&
                 a->elapsed_ns == b->elapsed_ns,
             "limits or elapsed time changed on reading back");
  FUZZ_CHECK(fabs(a->fragmentation - b->fragmentation) <= 5.000001e-7,
             "fragmentation %.9f read back as %.9f", a->fragmentation,
             b->fragmentation);
  free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lms__stats_file_t *sf = malloc(sizeof *sf);
  char err[LMS__ERRBUF];
  FUZZ_CHECK(sf != NULL, "no memory");
  put(data, size);
  lms_status_t st = lms__stats_file_read(g_path, sf, err);
  if (st != LMS_OK) {
    FUZZ_CHECK(st == LMS_ERR_INVALID, "the reader returned %s",
               lms_status_name(st));
    FUZZ_CHECK(strnlen(err, LMS__ERRBUF) < LMS__ERRBUF,
               "the message overruns its buffer");
    FUZZ_CHECK(strncmp(err, g_path, strlen(g_path)) == 0,
               "the message does not name the file: %s", err);
  } else {
    FUZZ_CHECK(is_json_object(data, size),
               "the reader accepted what is not a JSON object");
    check_accepted(sf);
    check_round_trip(sf);
  }
  free(sf);
  return 0;
}
