/* options.c - the options table of options.h put to work: defaults, the
 * LMS_* environment, flags, lms_options_set(), and the help and describe
 * texts, all generated from LMS__OPTIONS_MAP so that no list of options is
 * written out twice.  Every LMS_* variable is read here and nowhere else.
 *
 * Invariants:
 *  - every text field (log_file, stats, fail) points at its own buffer in
 *    the same lms__opts_t (lms__opts_copy keeps this across copies);
 *  - a call that fails leaves the options, argc and argv as they were: the
 *    parsers write their output only on success, and load_env and
 *    parse_args work on a copy that is committed once everything parsed;
 *  - a value set by a flag or lms_options_set() is never overridden by the
 *    environment, whichever order the calls come in, so precedence is
 *    default < environment < flag however a front end sequences them.
 *
 * Note [Single-dash flags]
 * caffe spells its options -lms and -lms_frac, gflags style, and scripts
 * written for it should keep working.  Any spelling without a hyphen
 * ("lms", "lms_frac", "device") is therefore also accepted after one dash,
 * which keeps the rule a property of the spelling rather than a second list
 * of options.  Hyphenated spellings ("gpu-limit", "lms-frac") are GNU-style
 * long options and need two dashes. */
#include "core/options.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/log.h"

/* ---- Per-kind pieces -------------------------------------------------- */

/* The placeholder help shows after a flag. */
#define META_KB "KB"
#define META_FRAC "FRAC"
#define META_SIZE "SIZE"
#define META_PIECE "SIZE|auto"
#define META_DEVICE "DEVICE"
#define META_LINK "LINK"
#define META_LOG "LEVEL[,SUBSYS...]"
#define META_PATH "PATH"
#define META_FAULT "OP:N[,OP:N]"
#define META_POLICY "POLICY"
#define META_SCHED "SOURCE"
#define META_WINDOW "STEPS[,BYTES|P%]"
#define META_BOOL "on|off"

/* What a kind accepts, for the "missing value" message. */
#define FORM_KB "a whole number of KB with no unit, or -1 for off"
#define FORM_FRAC "a fraction from 0 to 1, e.g. 0.4"
#define FORM_SIZE "a size from 1 byte to 1 PiB with a unit, e.g. 16GiB"
#define FORM_PIECE "a whole number of 2 MiB pages with a unit, e.g. 32MiB, or auto"
#define FORM_DEVICE "sim, cuda or auto"
#define FORM_LINK "a link preset such as pcie3, or a rate in GB/s"
#define FORM_LOG "LEVEL[,SUBSYS...], e.g. info or debug,alloc,swap"
#define FORM_PATH "a file path"
#define FORM_FAULT "OP:N[,OP:N], e.g. dev_alloc:3"
#define FORM_POLICY "ondemand, lru or schedule"
#define FORM_SCHED "learn, stack or off"
#define FORM_WINDOW                                                           \
  "STEPS[,BYTES or PERCENT%], e.g. 64,50% or 16,2GiB; 0 turns prefetch off"
#define FORM_BOOL "on/off, 1/0, true/false or yes/no"

/* Note [Values quoted in messages]
 * Messages are formatted into buffers of LMS__ERRBUF bytes, and the part
 * that says what is accepted comes last.  A value quoted whole (a
 * 2000-character --gpu-limit) pushed that part off the end, leaving only
 * the value.  So a value is quoted by its first QUOTE_MAX characters and
 * "..." when longer; what fits in a message is then bounded by its
 * format, and the "accepted:" part always survives. */
#define QUOTE_MAX 64
static const char *quoted(const char *text, size_t len, char *buf) {
  if (len <= QUOTE_MAX) {
    memcpy(buf, text, len);
    buf[len] = '\0';
  } else {
    memcpy(buf, text, QUOTE_MAX);
    memcpy(buf + QUOTE_MAX, "...", 4);
  }
  return buf;
}
/* A value, or its first n characters, shortened for a message; the buffer
 * lives until the end of the enclosing block, so past the call. */
#define QN(text, n) quoted((text), (n), (char[QUOTE_MAX + 4]){0})
#define Q(text) QN((text), strlen(text))

typedef struct opt_meta {
  const char *flag;
  const char *alt;  /* NULL when the option has one spelling */
  const char *env;
  const char *def;  /* "" = not set */
  const char *help;
  const char *meta;
  const char *form;
} opt_meta_t;

static const opt_meta_t g_meta[LMS__OPT_COUNT] = {
#define OPT_META_(field, kind, flag, alt, env, def, help)                     \
  [LMS__OPT_##field] = {flag, alt, env, def, help, META_##kind, FORM_##kind},
    LMS__OPTIONS_MAP(OPT_META_)
#undef OPT_META_
};

static const char *const g_source_names[] = {
    [LMS__SRC_DEFAULT] = "default",
    [LMS__SRC_ENV] = "env",
    [LMS__SRC_SET] = "set",
};

static const char *const g_device_names[] = {
    [LMS_DEVICE_AUTO] = "auto",
    [LMS_DEVICE_SIM] = "sim",
    [LMS_DEVICE_CUDA] = "cuda",
};

#define NDEVICE_NAMES (sizeof g_device_names / sizeof g_device_names[0])

static const char *const g_policy_names[] = {
    [LMS_POLICY_ONDEMAND] = "ondemand",
    [LMS_POLICY_LRU] = "lru",
    [LMS_POLICY_SCHEDULE] = "schedule",
};

static const char *const g_sched_names[] = {
    [LMS_SCHED_LEARN] = "learn",
    [LMS_SCHED_STACK] = "stack",
    [LMS_SCHED_OFF] = "off",
};

#define NAMES_LEN(t) (sizeof(t) / sizeof(t)[0])

/* ---- Output into a caller's buffer, snprintf style -------------------- */

typedef struct textbuf {
  char *buf;
  size_t size;
  size_t len; /* what the whole text needs, even past size */
} textbuf_t;

static void tb_printf(textbuf_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void tb_printf(textbuf_t *t, const char *fmt, ...) {
  int fits = t->len < t->size;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(fits ? t->buf + t->len : NULL, fits ? t->size - t->len : 0,
                    fmt, ap);
  va_end(ap);
  if (n > 0) t->len += (size_t)n;
}

static void tb_init(textbuf_t *t, char *buf, size_t size) {
  t->buf = buf;
  t->size = buf != NULL ? size : 0;
  t->len = 0;
  if (t->size > 0) buf[0] = '\0';
}

/* ---- Shared parsers --------------------------------------------------- */

/* Locale-independent, unlike isdigit(). */
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

#define KB_MAX (INT64_MAX / 1024)
#define SIZE_MAX_BYTES (1ull << 50)

#define SIZE_UNITS_TEXT                                                       \
  "B, K or KiB, M or MiB, G or GiB, T or TiB, P or PiB (powers of 1024; "   \
  "k, m, g, t, p too), KB, MB, GB, TB, PB (powers of 1000)"

static const struct size_unit {
  const char *name;
  uint64_t mult;
} g_size_units[] = {
    {"", 1},
    {"B", 1},
    {"K", 1ull << 10},
    {"KiB", 1ull << 10},
    {"k", 1ull << 10},
    {"M", 1ull << 20},
    {"MiB", 1ull << 20},
    {"m", 1ull << 20},
    {"G", 1ull << 30},
    {"GiB", 1ull << 30},
    {"g", 1ull << 30},
    {"T", 1ull << 40},
    {"TiB", 1ull << 40},
    {"t", 1ull << 40},
    {"P", 1ull << 50},
    {"PiB", 1ull << 50},
    {"p", 1ull << 50},
    {"KB", 1000ull},
    {"MB", 1000000ull},
    {"GB", 1000000000ull},
    {"TB", 1000000000000ull},
    {"PB", 1000000000000000ull},
};

lms_status_t lms__parse_size(const char *what, const char *text,
                             uint64_t *out, char *err) {
  if (text == NULL || text[0] == '\0') {
    lms__errf(err, "%s: empty value; accepted: %s", what, FORM_SIZE);
    return LMS_ERR_INVALID;
  }
  if (text[0] == '-') {
    lms__errf(err, "%s: '%s' is negative; accepted: %s", what, Q(text),
              FORM_SIZE);
    return LMS_ERR_INVALID;
  }
  /* The mantissa is checked by hand, because strtod() would also take
   * leading blanks, "inf", "nan", hex and exponents. */
  const char *p = text;
  while (is_digit(*p)) p++;
  if (p == text || (p[0] == '.' && !is_digit(p[1]))) {
    lms__errf(err, "%s: '%s' is not a size; accepted: %s", what, Q(text),
              FORM_SIZE);
    return LMS_ERR_INVALID;
  }
  if (*p == '.') {
    p++;
    while (is_digit(*p)) p++;
  }
  char num[64];
  size_t n = (size_t)(p - text);
  if (n >= sizeof num) {
    lms__errf(err, "%s: '%s' is too long a number; accepted: %s", what, Q(text),
              FORM_SIZE);
    return LMS_ERR_INVALID;
  }
  memcpy(num, text, n);
  num[n] = '\0';
  double mantissa = strtod(num, NULL);

  /* One blank between number and unit is allowed, so that the "16 GiB"
   * that describe() prints reads back. */
  const char *unit = p;
  if (unit[0] == ' ' && unit[1] != '\0' && unit[1] != ' ') unit++;
  uint64_t mult = 0;
  for (size_t i = 0; i < sizeof g_size_units / sizeof g_size_units[0]; i++) {
    if (strcmp(unit, g_size_units[i].name) == 0) {
      mult = g_size_units[i].mult;
      break;
    }
  }
  if (mult == 0) {
    lms__errf(err, "%s: unknown unit '%s' in '%s'; accepted units: %s", what,
              Q(unit), Q(text), SIZE_UNITS_TEXT);
    return LMS_ERR_INVALID;
  }
  /* Sizes up to 2^50 are exact in a double, so the product rounds to the
   * byte that was meant ("1.5K" is exactly 1536). */
  double bytes = mantissa * (double)mult;
  if (bytes > (double)SIZE_MAX_BYTES) {
    lms__errf(err, "%s: '%s' is more than 1 PiB; accepted: %s", what, Q(text),
              FORM_SIZE);
    return LMS_ERR_INVALID;
  }
  /* Rounded to the nearest byte, but what is under one byte before
   * rounding is refused alike (0.5 was once taken as 1 byte, 0.4 not). */
  uint64_t v = (uint64_t)(bytes + 0.5);
  if (bytes < 1.0) {
    lms__errf(err, "%s: '%s' is less than 1 byte; accepted: %s", what, Q(text),
              FORM_SIZE);
    return LMS_ERR_INVALID;
  }
  *out = v;
  return LMS_OK;
}

lms_status_t lms__parse_frac(const char *what, const char *text, double *out,
                             char *err) {
  if (text == NULL || text[0] == '\0') {
    lms__errf(err, "%s: empty value; accepted: %s", what, FORM_FRAC);
    return LMS_ERR_INVALID;
  }
  /* Only plain decimal notation reaches strtod(), which would otherwise
   * accept "nan", "inf", hex floats and leading blanks. */
  int starts_ok = is_digit(text[0]) || text[0] == '.' ||
                  ((text[0] == '-' || text[0] == '+') &&
                   (is_digit(text[1]) || text[1] == '.'));
  if (!starts_ok) {
    lms__errf(err, "%s: '%s' is not a number; accepted: %s", what, Q(text),
              FORM_FRAC);
    return LMS_ERR_INVALID;
  }
  size_t span = strspn(text, "0123456789.eE+-");
  char *end = NULL;
  double v = strtod(text, &end);
  if (end == text) {
    lms__errf(err, "%s: '%s' is not a number; accepted: %s", what, Q(text),
              FORM_FRAC);
    return LMS_ERR_INVALID;
  }
  if (*end != '\0' || text[span] != '\0') {
    const char *junk = end != text && *end != '\0' ? end : text + span;
    lms__errf(err, "%s: '%s' has trailing junk '%s'; accepted: %s", what,
              Q(text), Q(junk), FORM_FRAC);
    return LMS_ERR_INVALID;
  }
  if (!(v >= 0.0 && v <= 1.0)) {
    lms__errf(err, "%s: '%s' is outside 0..1; accepted: %s", what, Q(text),
              FORM_FRAC);
    return LMS_ERR_INVALID;
  }
  *out = v + 0.0; /* turns -0 into 0 */
  return LMS_OK;
}

lms_status_t lms__parse_kb(const char *what, const char *text, int64_t *out,
                           char *err) {
  if (text == NULL || text[0] == '\0') {
    lms__errf(err, "%s: empty value; accepted: %s", what, FORM_KB);
    return LMS_ERR_INVALID;
  }
  if (strcmp(text, "-1") == 0) {
    *out = -1;
    return LMS_OK;
  }
  if (text[0] == '-' && is_digit(text[1])) {
    lms__errf(err,
              "%s: '%s' is out of range; accepted: only -1 (off) or a whole "
              "number >= 0 of KB",
              what, Q(text));
    return LMS_ERR_INVALID;
  }
  if (!is_digit(text[0])) {
    lms__errf(err, "%s: '%s' is not a number; accepted: %s", what, Q(text),
              FORM_KB);
    return LMS_ERR_INVALID;
  }
  /* The cap keeps KB * 1024 within int64_t; caffe's "off in practice"
   * values such as 10000000000 are far below it. */
  int64_t v = 0;
  const char *p = text;
  for (; is_digit(*p); p++) {
    int d = *p - '0';
    if (v > (KB_MAX - d) / 10) {
      lms__errf(err, "%s: '%s' is too large; accepted: -1 (off) or 0 to %lld "
                     "KB",
                what, Q(text), (long long)KB_MAX);
      return LMS_ERR_INVALID;
    }
    v = v * 10 + d;
  }
  if (*p != '\0') {
    if (is_alpha(*p))
      lms__errf(err,
                "%s: '%s' has a unit; %s takes a whole number of KB with no "
                "unit (8192 is 8 MiB), or -1 for off",
                what, Q(text), what);
    else
      lms__errf(err, "%s: '%s' is not a whole number; accepted: %s", what,
                Q(text), FORM_KB);
    return LMS_ERR_INVALID;
  }
  *out = v;
  return LMS_OK;
}

lms_status_t lms__parse_bool(const char *what, const char *text, int *out,
                             char *err) {
  static const char *const yes[] = {"1", "true", "on", "yes"};
  static const char *const no[] = {"0", "false", "off", "no"};
  if (text != NULL) {
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
      if (strcasecmp(text, yes[i]) == 0) {
        *out = 1;
        return LMS_OK;
      }
      if (strcasecmp(text, no[i]) == 0) {
        *out = 0;
        return LMS_OK;
      }
    }
  }
  lms__errf(err,
            "%s: '%s' is not a boolean; accepted: 1, true, on, yes or 0, "
            "false, off, no",
            what, Q(text != NULL ? text : ""));
  return LMS_ERR_INVALID;
}

/* ---- Parsers private to the table's kinds ----------------------------- */

/* These see only non-empty text: apply() turns away NULL and "". */

static lms_status_t parse_device(const char *what, const char *text,
                                 lms__device_kind_t *out, char *err) {
  for (size_t i = 0; i < NDEVICE_NAMES; i++) {
    if (g_device_names[i] != NULL && strcmp(text, g_device_names[i]) == 0) {
      *out = (lms__device_kind_t)i;
      return LMS_OK;
    }
  }
  lms__errf(err, "%s: unknown device '%s'; accepted: %s", what, Q(text),
            FORM_DEVICE);
  return LMS_ERR_INVALID;
}

/* lms__link_parse() words its messages for the flag; for the environment
 * or lms_options_set() the prefix is swapped for the name actually used. */
static lms_status_t parse_link(const char *what, const char *text,
                               lms__link_t *out, char *err) {
  static const char prefix[] = "--link:";
  char msg[LMS__ERRBUF];
  lms__link_t link;
  if (lms__link_parse(text, &link, msg) == LMS_OK) {
    *out = link;
    return LMS_OK;
  }
  /* The link parser quotes the value whole (Note [Values quoted in
   * messages]): a long one is worded again from its shortened form, which
   * is no link either ("..." is in it), so that the message ends as it
   * should. */
  if (strlen(text) > QUOTE_MAX) lms__link_parse(Q(text), &link, msg);
  if (strncmp(msg, prefix, sizeof prefix - 1) == 0)
    lms__errf(err, "%s:%s", what, msg + sizeof prefix - 1);
  else
    lms__errf(err, "%s: %s", what, msg);
  return LMS_ERR_INVALID;
}

/* One name of a table; *out gets its index. */
static lms_status_t parse_name(const char *what, const char *text,
                               const char *const *names, size_t n,
                               const char *form, int *out, char *err) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(text, names[i]) == 0) {
      *out = (int)i;
      return LMS_OK;
    }
  }
  lms__errf(err, "%s: unknown value '%s'; accepted: %s", what, Q(text), form);
  return LMS_ERR_INVALID;
}

static lms_status_t parse_policy(const char *what, const char *text,
                                 lms__policy_t *out, char *err) {
  int v;
  LMS_CHECK(parse_name(what, text, g_policy_names, NAMES_LEN(g_policy_names),
                       FORM_POLICY, &v, err));
  *out = (lms__policy_t)v;
  return LMS_OK;
}

static lms_status_t parse_sched(const char *what, const char *text,
                                lms__sched_source_t *out, char *err) {
  int v;
  LMS_CHECK(parse_name(what, text, g_sched_names, NAMES_LEN(g_sched_names),
                       FORM_SCHED, &v, err));
  *out = (lms__sched_source_t)v;
  return LMS_OK;
}

/* STEPS[,BYTES|PERCENT%]: a whole number of steps (0..1000000), then
 * optionally a size with a unit or a percentage of the budget (0 < p <=
 * 100).  Without the second part the bytes default to half the budget. */
static lms_status_t parse_window(const char *what, const char *text,
                                 lms__window_t *out, char *err) {
  lms__window_t w = {.steps = 0, .bytes = 0, .percent = 50.0};
  const char *p = text;
  if (!is_digit(*p)) goto bad;
  uint64_t steps = 0;
  while (is_digit(*p)) {
    steps = steps * 10 + (uint64_t)(*p - '0');
    if (steps > 1000000) {
      lms__errf(err, "%s: '%s' asks for more than 1000000 steps of "
                "lookahead; accepted: %s", what, Q(text), FORM_WINDOW);
      return LMS_ERR_INVALID;
    }
    p++;
  }
  w.steps = (uint32_t)steps;
  if (*p == ',') {
    const char *second = p + 1;
    size_t len = strlen(second);
    if (len > 0 && second[len - 1] == '%') {
      char num[32];
      if (len - 1 == 0 || len - 1 >= sizeof num) goto bad;
      memcpy(num, second, len - 1);
      num[len - 1] = '\0';
      for (size_t i = 0; num[i] != '\0'; i++)
        if (!is_digit(num[i]) && num[i] != '.') goto bad;
      char *end = NULL;
      double pct = strtod(num, &end);
      if (end == num || *end != '\0' || !(pct > 0.0) || pct > 100.0) {
        lms__errf(err, "%s: '%s': the percentage must be above 0 and at "
                  "most 100; accepted: %s", what, Q(text), FORM_WINDOW);
        return LMS_ERR_INVALID;
      }
      w.percent = pct;
    } else {
      char msg[LMS__ERRBUF];
      if (lms__parse_size(what, second, &w.bytes, msg) != LMS_OK) {
        lms__errf(err, "%s: '%s': the second part is not a size or a "
                  "percentage; accepted: %s", what, Q(text), FORM_WINDOW);
        return LMS_ERR_INVALID;
      }
    }
  } else if (*p != '\0') {
    goto bad;
  }
  *out = w;
  return LMS_OK;
bad:
  lms__errf(err, "%s: '%s' is not a window; accepted: %s", what, Q(text),
            FORM_WINDOW);
  return LMS_ERR_INVALID;
}

/* Writes "a, b, c" of a name table into a fixed buffer. */
static void join_names(char *buf, size_t size, const char *const *names,
                       size_t n) {
  textbuf_t t;
  tb_init(&t, buf, size);
  for (size_t i = 0; i < n; i++)
    tb_printf(&t, "%s%s", i > 0 ? ", " : "", names[i]);
}

static lms_status_t parse_log(const char *what, const char *text,
                              lms__logspec_t *out, char *err) {
  char names[256];
  size_t n = strcspn(text, ",");
  int level = -1;
  for (int i = 0; i < LMS_LOG_LEVEL_COUNT; i++) {
    if (strlen(lms__log_level_names[i]) == n &&
        strncmp(text, lms__log_level_names[i], n) == 0)
      level = i;
  }
  if (level < 0) {
    join_names(names, sizeof names, lms__log_level_names, LMS_LOG_LEVEL_COUNT);
    lms__errf(err, "%s: unknown log level '%s'; accepted levels: %s", what,
              QN(text, n), names);
    return LMS_ERR_INVALID;
  }
  unsigned mask = 0;
  const char *p = text + n;
  while (*p == ',') {
    p++;
    n = strcspn(p, ",");
    int bit = -1;
    for (int i = 0; i < LMS_LOG_SUBSYS_COUNT; i++) {
      if (strlen(lms__log_subsys_names[i]) == n &&
          strncmp(p, lms__log_subsys_names[i], n) == 0)
        bit = i;
    }
    if (bit < 0) {
      join_names(names, sizeof names, lms__log_subsys_names,
                 LMS_LOG_SUBSYS_COUNT);
      lms__errf(err,
                "%s: unknown log subsystem '%s' in '%s'; accepted "
                "subsystems: %s",
                what, QN(p, n), Q(text), names);
      return LMS_ERR_INVALID;
    }
    mask |= 1u << bit;
    p += n;
  }
  out->level = level;
  out->subsys = mask != 0 ? mask : LMS_LOG_ALL_SUBSYS;
  return LMS_OK;
}

static lms_status_t parse_path(const char *what, const char *text, char *buf,
                               size_t size, char *err) {
  /* "--log-file --stats" would make a file named "--stats": an option
   * left without its value, not a path anyone means. */
  if (text[0] == '-' && text[1] != '\0') {
    lms__errf(err, "%s: '%s' looks like an option, not a path; accepted: a "
                   "file path (./%s for a file of that name)",
              what, Q(text), Q(text));
    return LMS_ERR_INVALID;
  }
  size_t n = strlen(text);
  if (n >= size) {
    lms__errf(err, "%s: the path is %zu characters long; at most %zu are "
                   "accepted",
              what, n, size - 1);
    return LMS_ERR_INVALID;
  }
  memcpy(buf, text, n + 1);
  return LMS_OK;
}

/* Checks the OP:N[,OP:N] syntax only: which operations exist is the
 * simulated device's business, and it says so when it reads the list. */
static lms_status_t parse_fault(const char *what, const char *text, char *buf,
                                size_t size, char *err) {
  static const char opchars[] = "abcdefghijklmnopqrstuvwxyz0123456789_";
  const char *p = text;
  for (;;) {
    size_t op = strspn(p, opchars);
    const char *q = p + op;
    if (op == 0 || *q != ':' || !is_digit(q[1])) {
      lms__errf(err,
                "%s: '%s' is not a fault list (at '%s'); accepted: OP:N[,OP:N] "
                "with OP made of a-z, 0-9, _ and N a whole number >= 1, e.g. "
                "dev_alloc:3",
                what, Q(text), Q(p));
      return LMS_ERR_INVALID;
    }
    q++;
    uint64_t count = 0;
    int too_big = 0;
    for (; is_digit(*q); q++) {
      if (count > (UINT64_MAX - 9) / 10) too_big = 1;
      count = count * 10 + (uint64_t)(*q - '0');
    }
    if (count < 1 || too_big || (*q != ',' && *q != '\0')) {
      lms__errf(err,
                "%s: bad count in '%s' (at '%s'); accepted: OP:N with N a "
                "whole number >= 1, e.g. dev_alloc:3",
                what, Q(text), QN(p, (size_t)(q - p)));
      return LMS_ERR_INVALID;
    }
    if (*q == '\0') break;
    p = q + 1;
  }
  if (strlen(text) >= size) {
    lms__errf(err, "%s: the list is %zu characters long; at most %zu are "
                   "accepted",
              what, strlen(text), size - 1);
    return LMS_ERR_INVALID;
  }
  return parse_path(what, text, buf, size, err);
}

/* --piece-size: a size, or auto (core/options.h).  Pieces are mapped at
 * their offsets, and a GPU maps 2 MiB pages (Note [Chunks of pieces] in
 * swap/residency.c). */
static lms_status_t parse_piece(const char *what, const char *text,
                                lms__opts_t *o, char *err) {
  if (strcasecmp(text, "auto") == 0) {
    o->piece_size = LMS__PIECE_AUTO;
    o->piece_div = LMS__PIECE_DIV_AUTO;
    return LMS_OK;
  }
  uint64_t v = 0;
  if (lms__parse_size(what, text, &v, err) != LMS_OK) {
    char why[LMS__ERRBUF];
    snprintf(why, sizeof why, "%s", err);
    lms__errf(err, "%s, or auto", why);
    return LMS_ERR_INVALID;
  }
  if (v % (2u << 20) != 0) {
    lms__errf(err, "%s: %s is not a whole number of 2 MiB pages; "
                   "accepted: 2MiB, 4MiB, ..., 32MiB, ..., or auto",
              what, text);
    return LMS_ERR_INVALID;
  }
  o->piece_size = v;
  o->piece_div = LMS__PIECE_DIV;
  return LMS_OK;
}

/* ---- Table-driven plumbing -------------------------------------------- */

/* Parses text into one field; the output is written only on success. */
#define PARSE_KB(w, t, o, f, e) lms__parse_kb(w, t, &(o)->f, e)
#define PARSE_FRAC(w, t, o, f, e) lms__parse_frac(w, t, &(o)->f, e)
#define PARSE_SIZE(w, t, o, f, e) lms__parse_size(w, t, &(o)->f, e)
#define PARSE_PIECE(w, t, o, f, e) parse_piece(w, t, o, e)
#define PARSE_DEVICE(w, t, o, f, e) parse_device(w, t, &(o)->f, e)
#define PARSE_LINK(w, t, o, f, e) parse_link(w, t, &(o)->f, e)
#define PARSE_LOG(w, t, o, f, e) parse_log(w, t, &(o)->f, e)
#define PARSE_POLICY(w, t, o, f, e) parse_policy(w, t, &(o)->f, e)
#define PARSE_SCHED(w, t, o, f, e) parse_sched(w, t, &(o)->f, e)
#define PARSE_WINDOW(w, t, o, f, e) parse_window(w, t, &(o)->f, e)
#define PARSE_BOOL(w, t, o, f, e) lms__parse_bool(w, t, &(o)->f, e)
#define PARSE_PATH(w, t, o, f, e)                                             \
  parse_path(w, t, (o)->f##_buf, sizeof (o)->f##_buf, e)
#define PARSE_FAULT(w, t, o, f, e)                                            \
  parse_fault(w, t, (o)->f##_buf, sizeof (o)->f##_buf, e)

/* Points a text field at its buffer; the other kinds hold their value. */
#define BIND_KB(o, f)
#define BIND_FRAC(o, f)
#define BIND_SIZE(o, f)
#define BIND_PIECE(o, f)
#define BIND_DEVICE(o, f)
#define BIND_LINK(o, f)
#define BIND_LOG(o, f)
#define BIND_POLICY(o, f)
#define BIND_SCHED(o, f)
#define BIND_WINDOW(o, f)
#define BIND_BOOL(o, f)
#define BIND_PATH(o, f) (o)->f = (o)->f##_buf;
#define BIND_FAULT(o, f) (o)->f = (o)->f##_buf;

static void bind_text_fields(lms__opts_t *o) {
#define OPT_BIND_(field, kind, flag, alt, env, def, help) BIND_##kind(o, field)
  LMS__OPTIONS_MAP(OPT_BIND_)
#undef OPT_BIND_
  (void)o;
}

void lms__opts_copy(lms__opts_t *dst, const lms__opts_t *src) {
  *dst = *src;
  bind_text_fields(dst);
}

static lms_status_t apply(lms__opts_t *o, lms__opt_id_t id, const char *what,
                          const char *text, char *err) {
  if (text == NULL || text[0] == '\0') {
    lms__errf(err, "%s: %s value; accepted: %s", what,
              text == NULL ? "missing" : "empty", g_meta[id].form);
    return LMS_ERR_INVALID;
  }
  switch (id) {
#define OPT_APPLY_(field, kind, flag, alt, env, def, help)                    \
  case LMS__OPT_##field:                                                      \
    return PARSE_##kind(what, text, o, field, err);
    LMS__OPTIONS_MAP(OPT_APPLY_)
#undef OPT_APPLY_
  case LMS__OPT_COUNT:
    break;
  }
  lms__errf(err, "%s: no such option", what);
  return LMS_ERR_INTERNAL;
}

/* The option one of whose spellings is name[0..len), or -1.  *spelling
 * gets the matching spelling. */
static int find_option(const char *name, size_t len, const char **spelling) {
  for (int id = 0; id < LMS__OPT_COUNT; id++) {
    const char *names[2] = {g_meta[id].flag, g_meta[id].alt};
    for (int k = 0; k < 2; k++) {
      if (names[k] != NULL && strlen(names[k]) == len &&
          strncmp(name, names[k], len) == 0) {
        *spelling = names[k];
        return id;
      }
    }
  }
  return -1;
}

/* ---- The public calls ------------------------------------------------- */

lms_status_t lms_options_create(lms_options_t **out) {
  if (out == NULL) return LMS_ERR_INVALID;
  lms_options_t *opts = calloc(1, sizeof *opts);
  if (opts == NULL) return LMS_ERR_HOST_OOM;
  bind_text_fields(&opts->v);
  /* Defaults go through the same parsers as user input, so the table's
   * text is the single statement of each default. */
  for (int id = 0; id < LMS__OPT_COUNT; id++) {
    if (g_meta[id].def[0] == '\0') continue;
    if (apply(&opts->v, (lms__opt_id_t)id, g_meta[id].flag, g_meta[id].def,
              opts->error) != LMS_OK) {
      free(opts);
      return LMS_ERR_INTERNAL;
    }
  }
  opts->error[0] = '\0';
  *out = opts;
  return LMS_OK;
}

void lms_options_destroy(lms_options_t *opts) { free(opts); }

lms_status_t lms_options_set(lms_options_t *opts, const char *name,
                             const char *value) {
  if (opts == NULL) return LMS_ERR_INVALID;
  const char *spelling = NULL;
  int id = name != NULL ? find_option(name, strlen(name), &spelling) : -1;
  if (id < 0) {
    lms__errf(opts->error, "unknown option '%s'; see 'lms --help'",
              name != NULL ? name : "(null)");
    return LMS_ERR_INVALID;
  }
  lms_status_t st =
      apply(&opts->v, (lms__opt_id_t)id, name, value, opts->error);
  if (st == LMS_OK) opts->v.source[id] = LMS__SRC_SET;
  return st;
}

/* LMS_* variables outside the options table: LMS_GNUPLOT, the gnuplot
 * that `lms report` runs (src/cli/plot.h); LMS_PRELOAD_LIB, the interposer
 * `lms run` preloads (src/cli/run.c); LMS_STATS_LINE, the interposer's
 * summary at exit (src/preload/init.c); LMS_TORCH_LIB, the library
 * python/lms_torch.py loads; LMS_LIB, the liblms.so python/lms_offload.py
 * loads; LMS_CONF, all options in one (Note [All options in one
 * variable]); LMS_BENCH_NET, the lms-bench-net `lms bench net` runs
 * (src/cli/bench_net.c); LMS_LIB_DIR and LMS_CMAKE_ARGS, what
 * `pip install ./python` builds from (python/build_backend). */
static const char *const kCommandEnv[] = {
    "LMS_GNUPLOT", "LMS_PRELOAD_LIB", "LMS_STATS_LINE", "LMS_TORCH_LIB",
    "LMS_LIB",     "LMS_CONF",        "LMS_BENCH_NET",  "LMS_LIB_DIR",
    "LMS_CMAKE_ARGS"};

/* Warns about LMS_* variables that name no option: most likely a typo that
 * would otherwise be silently ignored. */
static void warn_unknown_env(void) {
  for (char **e = environ; e != NULL && *e != NULL; e++) {
    if (strncmp(*e, "LMS_", 4) != 0) continue;
    size_t len = strcspn(*e, "=");
    int known = 0;
    for (size_t i = 0; i < sizeof kCommandEnv / sizeof kCommandEnv[0]; i++)
      known |= strlen(kCommandEnv[i]) == len &&
               strncmp(*e, kCommandEnv[i], len) == 0;
    for (int id = 0; id < LMS__OPT_COUNT && !known; id++)
      known = strlen(g_meta[id].env) == len &&
              strncmp(*e, g_meta[id].env, len) == 0;
    if (!known)
      fprintf(stderr, "lms: warning: unknown environment variable %.*s "
                      "ignored\n",
              (int)len, *e);
  }
}

/* Note [All options in one variable]
 * PyTorch users set its allocator with one variable of key:value pairs
 * (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,...), and a launcher
 * passes one variable more easily than six.  LMS_CONF takes the same
 * form: LMS_CONF=gpu_limit:8GiB,lms_frac:0.5,prefetch_window:1000,40%.
 * A key is any spelling of an option (gpu-limit, gpu_limit, lms_frac,
 * lms-frac), and a piece without a colon belongs to the value before it,
 * so a window's own comma needs no escape.  The LMS_* twin of an option
 * overrides its LMS_CONF entry; a flag overrides both.  Bad input (a piece
 * before any key, a key that names no option, an option given twice, a
 * bad value) is refused naming the piece and what is accepted. */
static lms_status_t parse_conf(const char *conf, char values[][LMS__ERRBUF],
                               int *given, char *err) {
  const char *p = conf;
  int id = -1;
  while (*p != '\0') {
    size_t len = strcspn(p, ",");
    const char *colon = memchr(p, ':', len);
    if (colon == NULL) {
      if (id < 0) {
        lms__errf(err, "LMS_CONF: '%.*s' comes before any key; accepted: "
                  "key:value pairs separated by commas, as "
                  "gpu_limit:8GiB,lms_frac:0.5", (int)len, p);
        return LMS_ERR_INVALID;
      }
      size_t have = strlen(values[id]);
      if (have + 1 + len >= LMS__ERRBUF) goto too_long;
      values[id][have] = ',';
      memcpy(values[id] + have + 1, p, len);
      values[id][have + 1 + len] = '\0';
    } else {
      size_t klen = (size_t)(colon - p);
      char key[64];
      if (klen == 0 || klen >= sizeof key) {
        lms__errf(err, "LMS_CONF: '%.*s' has no key before its ':'; "
                  "accepted: key:value, the key an option's name as "
                  "gpu_limit or lms_frac", (int)len, p);
        return LMS_ERR_INVALID;
      }
      memcpy(key, p, klen);
      key[klen] = '\0';
      const char *spelling = NULL;
      id = find_option(key, klen, &spelling);
      if (id < 0) {
        for (char *c = key; *c != '\0'; c++)
          if (*c == '_') *c = '-';
        id = find_option(key, klen, &spelling);
      }
      if (id < 0) {
        lms__errf(err, "LMS_CONF: '%.*s' names no option; accepted: the "
                  "options of 'lms help' (gpu_limit, lms, lms_frac, "
                  "prefetch_window, ...)", (int)klen, p);
        return LMS_ERR_INVALID;
      }
      if (given[id]) {
        lms__errf(err, "LMS_CONF: %.*s is given twice; accepted: each "
                  "option once", (int)klen, p);
        return LMS_ERR_INVALID;
      }
      size_t vlen = len - klen - 1;
      if (vlen >= LMS__ERRBUF) goto too_long;
      memcpy(values[id], colon + 1, vlen);
      values[id][vlen] = '\0';
      given[id] = 1;
    }
    p += len;
    if (*p == ',') p++;
  }
  return LMS_OK;
too_long:
  lms__errf(err, "LMS_CONF: a value is longer than %d characters",
            LMS__ERRBUF - 1);
  return LMS_ERR_INVALID;
}

lms_status_t lms_options_load_env(lms_options_t *opts) {
  if (opts == NULL) return LMS_ERR_INVALID;
  lms__opts_t tmp;
  lms__opts_copy(&tmp, &opts->v);
  /* Note [All options in one variable]. */
  char conf_values[LMS__OPT_COUNT][LMS__ERRBUF];
  int conf_given[LMS__OPT_COUNT] = {0};
  const char *conf = getenv("LMS_CONF");
  if (conf != NULL) {
    lms_status_t st = parse_conf(conf, conf_values, conf_given, opts->error);
    if (st != LMS_OK) return st;
  }
  for (int id = 0; id < LMS__OPT_COUNT; id++) {
    if (tmp.source[id] == LMS__SRC_SET) continue;
    const char *value = getenv(g_meta[id].env);
    const char *what = g_meta[id].env;
    char conf_what[96];
    if (value == NULL && conf_given[id]) {
      value = conf_values[id];
      snprintf(conf_what, sizeof conf_what, "LMS_CONF's %s", g_meta[id].flag);
      what = conf_what;
    }
    if (value == NULL) continue;
    lms_status_t st = apply(&tmp, (lms__opt_id_t)id, what, value, opts->error);
    if (st != LMS_OK) return st;
    tmp.source[id] = LMS__SRC_ENV;
  }
  warn_unknown_env();
  lms__opts_copy(&opts->v, &tmp);
  return LMS_OK;
}

typedef enum arg_class {
  ARG_END,      /* "--": nothing after it is ours */
  ARG_WORD,     /* a positional word, left in place */
  ARG_FLAG,     /* one of ours, with its value */
  ARG_UNKNOWN,  /* starts with '-' but names no option */
  ARG_NO_VALUE  /* one of ours, last on the line without "=VALUE" */
} arg_class_t;

typedef struct arg {
  arg_class_t cls;
  int id;
  int span;           /* argv entries it takes: 1 or 2 */
  const char *value;
  char what[64];      /* the flag as written, without "=VALUE" */
} arg_t;

static void classify(int argc, char **argv, int i, arg_t *a) {
  const char *s = argv[i];
  memset(a, 0, sizeof *a);
  a->span = 1;
  a->id = -1;
  if (strcmp(s, "--") == 0) {
    a->cls = ARG_END;
    return;
  }
  if (s[0] != '-' || s[1] == '\0') {
    a->cls = ARG_WORD;
    return;
  }
  int dashes = s[1] == '-' ? 2 : 1;
  const char *name = s + dashes;
  const char *eq = strchr(name, '=');
  size_t len = eq != NULL ? (size_t)(eq - name) : strlen(name);
  snprintf(a->what, sizeof a->what, "%.*s", (int)(len + (size_t)dashes), s);
  const char *spelling = NULL;
  a->id = find_option(name, len, &spelling);
  /* See Note [Single-dash flags]. */
  if (a->id < 0 || (dashes == 1 && strchr(spelling, '-') != NULL)) {
    a->cls = ARG_UNKNOWN;
    return;
  }
  if (eq != NULL) {
    a->value = eq + 1;
  } else if (i + 1 < argc && argv[i + 1] != NULL) {
    a->value = argv[i + 1];
    a->span = 2;
  } else {
    a->cls = ARG_NO_VALUE;
    return;
  }
  a->cls = ARG_FLAG;
}

uint64_t lms__window_cap(const lms__window_t *w, uint64_t budget) {
  uint64_t cap = w->bytes != 0
                     ? w->bytes
                     : (uint64_t)((double)budget * w->percent / 100.0);
  return cap < budget ? cap : budget;
}

int lms__options_arg_span(int argc, char **argv, int i) {
  arg_t a;
  classify(argc, argv, i, &a);
  if (a.cls == ARG_END) return -1;
  if (a.cls == ARG_WORD) return 0;
  return a.span;
}

lms_status_t lms_options_parse_args(lms_options_t *opts, int *argc,
                                    char **argv) {
  if (opts == NULL) return LMS_ERR_INVALID;
  if (argc == NULL || (*argc > 0 && argv == NULL)) {
    lms__errf(opts->error, "lms_options_parse_args: no arguments given");
    return LMS_ERR_INVALID;
  }
  int n = *argc;
  arg_t a;
  /* First pass: parse everything into a copy, touching nothing else. */
  lms__opts_t tmp;
  lms__opts_copy(&tmp, &opts->v);
  for (int i = 1; i < n && argv[i] != NULL; i += a.span) {
    classify(n, argv, i, &a);
    if (a.cls == ARG_END) break;
    if (a.cls == ARG_WORD) continue;
    if (a.cls == ARG_UNKNOWN) {
      lms__errf(opts->error, "unknown option '%s'; see 'lms --help'",
                Q(a.what));
      return LMS_ERR_INVALID;
    }
    if (a.cls == ARG_NO_VALUE) {
      lms__errf(opts->error, "%s: missing value; accepted: %s", Q(a.what),
                g_meta[a.id].form);
      return LMS_ERR_INVALID;
    }
    lms_status_t st =
        apply(&tmp, (lms__opt_id_t)a.id, a.what, a.value, opts->error);
    if (st != LMS_OK) return st;
    tmp.source[a.id] = LMS__SRC_SET;
  }
  /* Second pass: all parsed, so commit and drop the consumed entries. */
  lms__opts_copy(&opts->v, &tmp);
  int out = n > 0 ? 1 : 0;
  for (int i = 1; i < n && argv[i] != NULL;) {
    classify(n, argv, i, &a);
    if (a.cls == ARG_END) {
      while (i < n) argv[out++] = argv[i++];
      break;
    }
    if (a.cls == ARG_FLAG) {
      i += a.span;
      continue;
    }
    argv[out++] = argv[i++];
  }
  if (out < n) argv[out] = NULL;
  *argc = out;
  return LMS_OK;
}

const char *lms_options_error(const lms_options_t *opts) {
  return opts != NULL ? opts->error : "";
}

/* ---- Describe and help ------------------------------------------------ */

static void show_size(textbuf_t *t, uint64_t bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes == 0) {
    tb_printf(t, "unset");
    return;
  }
  int u = 0;
  while (u + 1 < (int)(sizeof units / sizeof units[0]) &&
         bytes >= (1ull << (10 * (u + 1))))
    u++;
  uint64_t scale = 1ull << (10 * u);
  if (bytes % scale == 0)
    tb_printf(t, "%llu %s", (unsigned long long)(bytes / scale), units[u]);
  else
    tb_printf(t, "%.2f %s", (double)bytes / (double)scale, units[u]);
  if (u > 0) tb_printf(t, " (%llu bytes)", (unsigned long long)bytes);
}

static void show_log(textbuf_t *t, const lms__logspec_t *l) {
  tb_printf(t, "%s", l->level >= 0 && l->level < LMS_LOG_LEVEL_COUNT
                         ? lms__log_level_names[l->level]
                         : "?");
  if (l->subsys == LMS_LOG_ALL_SUBSYS) return;
  for (int i = 0; i < LMS_LOG_SUBSYS_COUNT; i++)
    if (l->subsys & (1u << i)) tb_printf(t, ",%s", lms__log_subsys_names[i]);
}

static void show_window(textbuf_t *t, const lms__window_t *w) {
  if (w->steps == 0) {
    tb_printf(t, "off");
    return;
  }
  tb_printf(t, "%u steps, ", w->steps);
  if (w->bytes != 0) show_size(t, w->bytes);
  else tb_printf(t, "%g%% of the budget", w->percent);
}

static void show_piece(textbuf_t *t, const lms__opts_t *o) {
  if (o->piece_size != 0 && o->piece_div == LMS__PIECE_DIV_AUTO)
    tb_printf(t, "auto (32 MiB pieces of each chunk of at least half the "
                 "budget)");
  else
    show_size(t, o->piece_size);
}

static const char *device_name(lms__device_kind_t d) {
  return (size_t)d < NDEVICE_NAMES ? g_device_names[d] : "?";
}

#define SHOW_KB(t, o, f)                                                      \
  ((o)->f < 0 ? tb_printf(t, "off")                                           \
              : tb_printf(t, "%lld KB", (long long)(o)->f))
#define SHOW_FRAC(t, o, f) tb_printf(t, "%g", (o)->f)
#define SHOW_SIZE(t, o, f) show_size(t, (o)->f)
#define SHOW_PIECE(t, o, f) show_piece(t, o)
#define SHOW_DEVICE(t, o, f) tb_printf(t, "%s", device_name((o)->f))
#define SHOW_LINK(t, o, f)                                                    \
  tb_printf(t, "%s (%g GB/s to device, %g GB/s to host, %g us per copy)",     \
            (o)->f.name, (o)->f.h2d_gbps, (o)->f.d2h_gbps,                    \
            (o)->f.latency_us)
#define SHOW_LOG(t, o, f) show_log(t, &(o)->f)
#define SHOW_PATH(t, o, f)                                                    \
  tb_printf(t, "%s", (o)->f##_buf[0] != '\0' ? (o)->f##_buf : "unset")
#define SHOW_FAULT(t, o, f) SHOW_PATH(t, o, f)
#define SHOW_POLICY(t, o, f)                                                  \
  tb_printf(t, "%s", (size_t)(o)->f < NAMES_LEN(g_policy_names)              \
                         ? g_policy_names[(o)->f] : "?")
#define SHOW_SCHED(t, o, f)                                                   \
  tb_printf(t, "%s", (size_t)(o)->f < NAMES_LEN(g_sched_names)               \
                         ? g_sched_names[(o)->f] : "?")
#define SHOW_WINDOW(t, o, f) show_window(t, &(o)->f)
#define SHOW_BOOL(t, o, f) tb_printf(t, "%s", (o)->f ? "on" : "off")

/* A JSON string of text (quotes, backslashes and control characters
 * escaped). */
static void tb_json_string(textbuf_t *t, const char *text) {
  tb_printf(t, "\"");
  for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
    if (*c == '"' || *c == '\\') tb_printf(t, "\\%c", *c);
    else if (*c < 0x20) tb_printf(t, "\\u%04x", *c);
    else tb_printf(t, "%c", *c);
  }
  tb_printf(t, "\"");
}

/* Every option's value and where it came from: "name = value (source)"
 * lines, or (json) one JSON object that also names each one's variable. */
static size_t describe(const lms_options_t *opts, char *buf, size_t size,
                       int json) {
  textbuf_t t;
  tb_init(&t, buf, size);
  if (opts == NULL) return 0;
  const lms__opts_t *o = &opts->v;
  const char *sep = "{";
  char val[LMS__PATH_MAX + 256]; /* the longest value is a path */
#define OPT_DESCRIBE_(field, kind, flag, alt, env, def, help)                 \
  {                                                                           \
    textbuf_t v;                                                              \
    tb_init(&v, val, sizeof val);                                             \
    SHOW_##kind(&v, o, field);                                                \
    const char *src = o->source[LMS__OPT_##field] <= LMS__SRC_SET             \
                          ? g_source_names[o->source[LMS__OPT_##field]]       \
                          : "?";                                              \
    if (json) {                                                               \
      tb_printf(&t, "%s\n  \"%s\": {\"value\": ", sep, flag);                \
      tb_json_string(&t, val);                                                \
      tb_printf(&t, ", \"source\": \"%s\", \"env\": \"%s\"}", src, env);     \
      sep = ",";                                                              \
    } else {                                                                  \
      tb_printf(&t, "%s = %s (%s)\n", flag, val, src);                        \
    }                                                                         \
  }
  LMS__OPTIONS_MAP(OPT_DESCRIBE_)
#undef OPT_DESCRIBE_
  if (json) tb_printf(&t, "\n}\n");
  return t.len;
}

size_t lms_options_describe(const lms_options_t *opts, char *buf,
                            size_t size) {
  return describe(opts, buf, size, 0);
}

size_t lms__options_describe_json(const lms_options_t *opts, char *buf,
                                  size_t size) {
  return describe(opts, buf, size, 1);
}

/* "-lms, --lms" or "--lms_frac, --lms-frac" and so on: every accepted
 * spelling, single-dash ones first. */
static void flag_spellings(char *buf, size_t size, const opt_meta_t *m) {
  textbuf_t t;
  tb_init(&t, buf, size);
  const char *names[2] = {m->flag, m->alt};
  for (int k = 0; k < 2; k++)
    if (names[k] != NULL && strchr(names[k], '-') == NULL)
      tb_printf(&t, "%s-%s", t.len > 0 ? ", " : "", names[k]);
  for (int k = 0; k < 2; k++)
    if (names[k] != NULL)
      tb_printf(&t, "%s--%s", t.len > 0 ? ", " : "", names[k]);
  tb_printf(&t, " %s", m->meta);
}

size_t lms__options_brief(char *buf, size_t size) {
  textbuf_t t;
  tb_init(&t, buf, size);
  size_t line = 0;
  for (int id = 0; id < LMS__OPT_COUNT; id++) {
    const opt_meta_t *m = &g_meta[id];
    /* The first spelling and what it takes: "-lms KB", "--gpu-limit SIZE". */
    char one[96];
    snprintf(one, sizeof one, "%s%s %s",
             strchr(m->flag, '-') == NULL ? "-" : "--", m->flag, m->meta);
    size_t n = strlen(one) + 2;
    if (line > 0 && line + n > 78) {
      tb_printf(&t, ",\n");
      line = 0;
    } else if (line > 0) {
      tb_printf(&t, ", ");
    }
    if (line == 0) tb_printf(&t, "  ");
    tb_printf(&t, "%s", one);
    line += n;
  }
  tb_printf(&t, "\n");
  return t.len;
}

size_t lms_options_help(char *buf, size_t size) {
  textbuf_t t;
  tb_init(&t, buf, size);
  tb_printf(&t, "Options (flag, environment variable, default); a flag "
                "overrides its variable:\n");
  for (int id = 0; id < LMS__OPT_COUNT; id++) {
    const opt_meta_t *m = &g_meta[id];
    char flags[128];
    flag_spellings(flags, sizeof flags, m);
    tb_printf(&t, "  %-40s %s", flags, m->env);
    if (m->def[0] != '\0') tb_printf(&t, ", default %s", m->def);
    tb_printf(&t, "\n      %s\n", m->help);
  }
  char names[256];
  tb_printf(&t, "LMS_CONF holds any of them in one variable, in the form "
                "of PyTorch's allocator\nsettings (an option's own variable "
                "overrides it):\n  LMS_CONF=gpu_limit:8GiB,lms_frac:0.5,"
                "prefetch_window:1000,40%%\n");
  tb_printf(&t, "Sizes take a unit: %s; e.g. 16GiB or 1.5G.\n",
            SIZE_UNITS_TEXT);
  join_names(names, sizeof names, lms__log_level_names, LMS_LOG_LEVEL_COUNT);
  tb_printf(&t, "Log levels: %s; ", names);
  join_names(names, sizeof names, lms__log_subsys_names, LMS_LOG_SUBSYS_COUNT);
  tb_printf(&t, "subsystems: %s (all when none is named).\n", names);
  tb_printf(&t, "Link presets (GB/s to device / to host):");
  for (size_t i = 0; lms__link_preset(i) != NULL; i++) {
    const lms__link_t *l = lms__link_preset(i);
    tb_printf(&t, " %s %g/%g", l->name, l->h2d_gbps, l->d2h_gbps);
  }
  tb_printf(&t, ".\n");
  return t.len;
}
