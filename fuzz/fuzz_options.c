/* fuzz_options.c - the options parsers (src/core/options.c) on any text:
 * flags, lms_options_set(), the LMS_* environment and the shared value
 * parsers.
 *
 * The input is a list of words, one a line (a NUL byte also ends a word),
 * used four ways:
 *  - as a command line after "lms" for lms_options_parse_args;
 *  - each "NAME=VALUE" word not starting with '-' or "LMS_" as
 *    lms_options_set(NAME, VALUE);
 *  - the "LMS_X=VALUE" words whose variables are in the options table as
 *    the whole environment of lms_options_load_env (other LMS_* names are
 *    left out, so that the run does not print a warning per input);
 *  - each word as the value of the shared parsers (sizes, fractions, KB,
 *    booleans).
 *
 * Properties, for every input: no sanitizer report; a call that fails
 * leaves a message that fits its buffer and, for parse_args, argc and
 * argv as they were; a call that succeeds keeps argv a subsequence of what
 * it was; the effective settings can be described; a value a shared parser
 * accepts is within its documented range and reads back from its decimal
 * form to the same value. */
#include <math.h>
#include <string.h>

#include "core/options.h"
#include "fuzz.h"

#define MAX_WORDS 64

static const char *const kEnvNames[] = {
#define FUZZ_ENV_(field, kind, flag, alt, env, def, help) env,
    LMS__OPTIONS_MAP(FUZZ_ENV_)
#undef FUZZ_ENV_
};
#define NENV (sizeof kEnvNames / sizeof kEnvNames[0])

static void check_message(const char *err, const char *call) {
  size_t n = strnlen(err, LMS__ERRBUF);
  FUZZ_CHECK(n < LMS__ERRBUF, "%s: the message overruns its buffer", call);
  FUZZ_CHECK(n > 0, "%s failed without a message", call);
}

static void check_describe(const lms_options_t *o) {
  char buf[4096];
  size_t n = lms_options_describe(o, buf, sizeof buf);
  FUZZ_CHECK(n > 0 && strnlen(buf, sizeof buf) < sizeof buf,
             "describe gave %zu bytes", n);
}

static void check_args(char **words, int nwords) {
  char *argv[MAX_WORDS + 2], *orig[MAX_WORDS + 2];
  int argc = nwords + 1;
  argv[0] = "lms";
  for (int i = 0; i < nwords; i++) argv[i + 1] = words[i];
  argv[argc] = NULL;
  memcpy(orig, argv, sizeof argv);
  lms_options_t *o = NULL;
  FUZZ_CHECK(lms_options_create(&o) == LMS_OK, "lms_options_create failed");
  lms_status_t st = lms_options_parse_args(o, &argc, argv);
  if (st != LMS_OK) {
    check_message(lms_options_error(o), "lms_options_parse_args");
    FUZZ_CHECK(argc == nwords + 1 &&
                   memcmp(argv, orig, (size_t)(nwords + 2) * sizeof *argv) == 0,
               "a failed parse changed argc or argv");
  } else {
    FUZZ_CHECK(argc >= 1 && argc <= nwords + 1 && argv[0] == orig[0],
               "argc %d after %d", argc, nwords + 1);
    FUZZ_CHECK(argc == nwords + 1 || argv[argc] == NULL,
               "argv[argc] is not NULL after entries were taken");
    /* What is left is the words that were not ours, in their order. */
    int j = 1;
    for (int i = 1; i < argc; i++) {
      while (j <= nwords && orig[j] != argv[i]) j++;
      FUZZ_CHECK(j <= nwords, "argv[%d] is not one of the words, in order",
                 i);
      j++;
    }
  }
  check_describe(o);
  lms_options_destroy(o);
}

static void check_set(char **words, int nwords) {
  lms_options_t *o = NULL;
  FUZZ_CHECK(lms_options_create(&o) == LMS_OK, "lms_options_create failed");
  for (int i = 0; i < nwords; i++) {
    char *eq = strchr(words[i], '=');
    if (eq == NULL || words[i][0] == '-' || strncmp(words[i], "LMS_", 4) == 0)
      continue;
    *eq = '\0';
    if (lms_options_set(o, words[i], eq + 1) != LMS_OK)
      check_message(lms_options_error(o), "lms_options_set");
    *eq = '=';
  }
  check_describe(o);
  lms_options_destroy(o);
}

/* The environment is swapped for one holding just these words, rather
 * than built with setenv(), whose C library keeps every value it replaced
 * for as long as the process lives. */
extern char **environ;

static void check_env(char **words, int nwords) {
  char *env[MAX_WORDS + 1];
  int n = 0;
  for (int i = 0; i < nwords; i++) {
    const char *eq = strchr(words[i], '=');
    if (eq == NULL) continue;
    for (size_t k = 0; k < NENV; k++)
      if (strlen(kEnvNames[k]) == (size_t)(eq - words[i]) &&
          strncmp(words[i], kEnvNames[k], (size_t)(eq - words[i])) == 0)
        env[n++] = words[i];
  }
  if (n == 0) return;
  env[n] = NULL;
  lms_options_t *o = NULL;
  FUZZ_CHECK(lms_options_create(&o) == LMS_OK, "lms_options_create failed");
  char **saved = environ;
  environ = env;
  lms_status_t st = lms_options_load_env(o);
  environ = saved;
  if (st != LMS_OK) check_message(lms_options_error(o), "lms_options_load_env");
  check_describe(o);
  lms_options_destroy(o);
}

static void check_values(const char *text) {
  char err[LMS__ERRBUF], again[64];
  uint64_t size = 0, size2 = 0;
  if (lms__parse_size("size", text, &size, err) == LMS_OK) {
    FUZZ_CHECK(size >= 1 && size <= (1ull << 50), "size %llu from '%s'",
               (unsigned long long)size, text);
    snprintf(again, sizeof again, "%llu", (unsigned long long)size);
    FUZZ_CHECK(lms__parse_size("size", again, &size2, err) == LMS_OK &&
                   size2 == size,
               "size %s does not read back", again);
  } else {
    check_message(err, "lms__parse_size");
  }
  double frac = 0, frac2 = -1;
  if (lms__parse_frac("frac", text, &frac, err) == LMS_OK) {
    FUZZ_CHECK(frac >= 0 && frac <= 1 && !signbit(frac),
               "fraction %g from '%s'", frac, text);
    snprintf(again, sizeof again, "%.17g", frac);
    FUZZ_CHECK(lms__parse_frac("frac", again, &frac2, err) == LMS_OK &&
                   frac2 == frac,
               "fraction %s does not read back", again);
  } else {
    check_message(err, "lms__parse_frac");
  }
  int64_t kb = 0, kb2 = 0;
  if (lms__parse_kb("kb", text, &kb, err) == LMS_OK) {
    FUZZ_CHECK(kb >= -1 && kb <= INT64_MAX / 1024, "KB %lld from '%s'",
               (long long)kb, text);
    snprintf(again, sizeof again, "%lld", (long long)kb);
    FUZZ_CHECK(lms__parse_kb("kb", again, &kb2, err) == LMS_OK && kb2 == kb,
               "KB %s does not read back", again);
  } else {
    check_message(err, "lms__parse_kb");
  }
  int b = -1;
  if (lms__parse_bool("bool", text, &b, err) == LMS_OK)
    FUZZ_CHECK(b == 0 || b == 1, "boolean %d from '%s'", b, text);
  else
    check_message(err, "lms__parse_bool");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* The words, each NUL-terminated, in a copy of their own. */
  char *text = malloc(size + 1);
  FUZZ_CHECK(text != NULL, "no memory for %zu bytes", size);
  memcpy(text, data, size);
  text[size] = '\0';
  char *words[MAX_WORDS];
  int nwords = 0;
  for (size_t i = 0, start = 0; i <= size && nwords < MAX_WORDS; i++) {
    if (i == size || text[i] == '\n' || text[i] == '\0') {
      text[i] = '\0';
      if (i < size || i > start) words[nwords++] = text + start;
      start = i + 1;
    }
  }
  check_args(words, nwords);
  check_set(words, nwords);
  check_env(words, nwords);
  for (int i = 0; i < nwords; i++) check_values(words[i]);
  free(text);
  return 0;
}
