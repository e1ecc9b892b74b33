/* stats.c - text and JSON forms of lms_stats_t, generated from
 * LMS_STATS_MAP.  Both write into a caller's buffer, snprintf-style. */
#include <stdarg.h>
#include <stdio.h>

#include "core/stats.h"

typedef struct out {
  char *buf;
  size_t size;
  size_t len;
} out_t;

static void put(out_t *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void put(out_t *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t room = o->len < o->size ? o->size - o->len : 0;
  int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
  va_end(ap);
  if (n > 0) o->len += (size_t)n;
}

static void finish(out_t *o) {
  if (o->size == 0) return;
  o->buf[o->len < o->size ? o->len : o->size - 1] = '\0';
}

size_t lms_stats_format_text(const lms_stats_t *st, char *buf, size_t size) {
  out_t o = {buf, size, 0};
  put(&o, "%-20s %16s %16s %16s\n", "counter", "current", "peak", "total");
#define LMS_STATS_TEXT_(f, desc)                                              \
  put(&o, "%-20s %16lld %16lld %16lld\n", #f, (long long)st->f.current,       \
      (long long)st->f.peak, (long long)st->f.total);
  LMS_STATS_MAP(LMS_STATS_TEXT_)
#undef LMS_STATS_TEXT_
  put(&o, "%-20s %16llu\n", "device_limit", (unsigned long long)st->device_limit);
  put(&o, "%-20s %16llu\n", "host_limit", (unsigned long long)st->host_limit);
  put(&o, "%-20s %16.4f\n", "fragmentation", st->fragmentation);
  put(&o, "%-20s %16.6f\n", "elapsed_s", (double)st->elapsed_ns / 1e9);
  finish(&o);
  return o.len;
}

size_t lms_stats_format_json(const lms_stats_t *st, char *buf, size_t size) {
  out_t o = {buf, size, 0};
  put(&o, "{\"version\": %d", st->version);
#define LMS_STATS_JSON_(f, desc)                                              \
  put(&o, ",\n \"%s\": {\"current\": %lld, \"peak\": %lld, \"total\": %lld}", \
      #f, (long long)st->f.current, (long long)st->f.peak,                    \
      (long long)st->f.total);
  LMS_STATS_MAP(LMS_STATS_JSON_)
#undef LMS_STATS_JSON_
  put(&o, ",\n \"device_limit\": %llu", (unsigned long long)st->device_limit);
  put(&o, ",\n \"host_limit\": %llu", (unsigned long long)st->host_limit);
  put(&o, ",\n \"fragmentation\": %.6f", st->fragmentation);
  put(&o, ",\n \"elapsed_ns\": %llu}\n", (unsigned long long)st->elapsed_ns);
  finish(&o);
  return o.len;
}
