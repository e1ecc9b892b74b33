/* test_options.c - the options table: the shared parsers (sizes, fractions,
 * KB counts, booleans), flags and their shifting of argv, the LMS_*
 * environment, precedence default < environment < flag, and the describe
 * and help texts.  Every rejected input must come back as LMS_ERR_INVALID
 * with a message that names the option as the user wrote it. */
#include <criterion/criterion.h>
#include "check.h"
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/options.h"
#include "core/rank.h"

#define NARGS(a) ((int)(sizeof(a) / sizeof((a)[0])) - 1)

#define assert_mentions(text, word)                                           \
  cr_assert(strstr((text), (word)) != NULL, "expected \"%s\" in: %s", (word), \
            (text))

static lms_options_t *g_opts;

/* Each test starts from an environment without LMS_* variables, so that the
 * shell the suite runs in cannot change its outcome.  Criterion runs every
 * test in its own process, so nothing leaks between tests. */
static void clear_lms_env(void) {
  char names[64][64];
  int n = 0;
  for (char **e = environ; *e != NULL && n < 64; e++) {
    size_t len = strcspn(*e, "=");
    if (strncmp(*e, "LMS_", 4) == 0 && len < sizeof names[0]) {
      memcpy(names[n], *e, len);
      names[n++][len] = '\0';
    }
  }
  for (int i = 0; i < n; i++) unsetenv(names[i]);
}

static void opts_up(void) {
  clear_lms_env();
  cr_assert(eq(int, lms_options_create(&g_opts), LMS_OK));
}

static void opts_down(void) { lms_options_destroy(g_opts); }

/* Runs fn with stderr sent to a temporary file and returns what it wrote
 * (static storage). */
static const char *capture_stderr(lms_status_t (*fn)(lms_options_t *),
                                  lms_status_t *st) {
  static char text[4096];
  FILE *tmp = tmpfile();
  cr_assert(tmp != NULL);
  fflush(stderr);
  int saved = dup(2);
  cr_assert(saved >= 0);
  dup2(fileno(tmp), 2);
  *st = fn(g_opts);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(tmp);
  size_t n = fread(text, 1, sizeof text - 1, tmp);
  text[n] = '\0';
  fclose(tmp);
  return text;
}

/* ---- Defaults --------------------------------------------------------- */

Test(options_defaults, come_from_the_table, .init = opts_up,
     .fini = opts_down) {
  const lms__opts_t *o = &g_opts->v;
  cr_assert(eq(i64, o->lms_kb, -1));
  cr_assert(eq(dbl, o->lms_frac, 0.0));
  cr_assert(eq(u64, o->gpu_limit, 0));
  cr_assert(eq(u64, o->host_limit, 0));
  cr_assert(eq(int, (int)o->device, LMS_DEVICE_AUTO));
  cr_assert(eq(str, (char *)o->link.name, "pcie3"));
  cr_assert(eq(int, o->log.level, LMS_LOG_WARN));
  cr_assert(eq(u32, o->log.subsys, LMS_LOG_ALL_SUBSYS));
  cr_assert(eq(ptr, o->log_file, (void *)o->log_file_buf));
  cr_assert(eq(ptr, o->stats, (void *)o->stats_buf));
  cr_assert(eq(ptr, o->fail, (void *)o->fail_buf));
  cr_assert(eq(str, o->log_file, ""));
  cr_assert(eq(str, o->fail, ""));
  for (int i = 0; i < LMS__OPT_COUNT; i++)
    cr_assert(eq(int, o->source[i], LMS__SRC_DEFAULT), "option %d", i);
  cr_assert(eq(str, (char *)lms_options_error(g_opts), ""));
}

/* ---- Sizes ------------------------------------------------------------ */

/* Parameters are copied into the worker processes, which do not share the
 * parent's addresses, so the cases hold their text in arrays rather than
 * pointing at string literals. */
struct size_case {
  char text[32];
  uint64_t bytes;
};

ParameterizedTestParameters(options_size, good) {
  static struct size_case cases[] = {
      {"16GiB", 17179869184ull},   {"1.5K", 1536},
      {"2GB", 2000000000ull},      {"1", 1},
      {"512B", 512},               {"3k", 3072},
      {"1KiB", 1024},              {"1KB", 1000},
      {"2M", 2097152},             {"7MB", 7000000},
      {"1.5GiB", 1610612736ull},   {"4g", 4294967296ull},
      {"1TB", 1000000000000ull},   {"2t", 2199023255552ull},
      {"1024TiB", 1ull << 50},     {"0.5K", 512},
      {"16 GiB", 17179869184ull},  {"0.25m", 262144},
  };
  return cr_make_param_array(struct size_case, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct size_case *c, options_size, good) {
  char err[LMS__ERRBUF] = "";
  uint64_t v = 0;
  cr_assert(eq(int, lms__parse_size("--gpu-limit", c->text, &v, err), LMS_OK),
            "'%s': %s", c->text, err);
  cr_assert(eq(u64, v, c->bytes), "'%s'", c->text);
}

struct bad_case {
  char text[32];
  char hint[64]; /* a phrase the message must carry */
};

ParameterizedTestParameters(options_size, bad) {
  static struct bad_case cases[] = {
      {"0", "1 byte"},          {"-1G", "negative"},
      {"10XB", "unknown unit"}, {"10XB", "KiB"},
      {"", "empty"},            {"16GiBx", "unknown unit"},
      {"GiB", "not a size"},    {"1.G", "not a size"},
      {"nan", "not a size"},    {"inf", "not a size"},
      {"1025T", "1 PiB"},       {"2048TiB", "1 PiB"},
      {"16gb", "unknown unit"}, {" 16G", "not a size"},
      {"0.1B", "1 byte"},       {"1e3", "unknown unit"},
      {"+5G", "not a size"},    {"16G ", "unknown unit"},
      {"0x10", "unknown unit"}, {"99999999999999999999999G", "1 PiB"},
  };
  return cr_make_param_array(struct bad_case, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct bad_case *c, options_size, bad) {
  char err[LMS__ERRBUF] = "";
  uint64_t v = 42;
  cr_assert(eq(int, lms__parse_size("--gpu-limit", c->text, &v, err),
               LMS_ERR_INVALID),
            "'%s' was accepted", c->text);
  assert_mentions(err, "--gpu-limit");
  assert_mentions(err, c->hint);
  cr_assert(eq(u64, v, 42), "output changed on failure");
}

/* ---- Fractions -------------------------------------------------------- */

struct frac_case {
  char text[32];
  double value;
};

ParameterizedTestParameters(options_frac, good) {
  static struct frac_case cases[] = {
      {"0", 0.0},   {"1", 1.0},     {"0.4", 0.4}, {".5", 0.5},
      {"1.0", 1.0}, {"4e-1", 0.4},  {"-0", 0.0},  {"0.999", 0.999},
  };
  return cr_make_param_array(struct frac_case, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct frac_case *c, options_frac, good) {
  char err[LMS__ERRBUF] = "";
  double v = -1.0;
  cr_assert(eq(int, lms__parse_frac("-lms_frac", c->text, &v, err), LMS_OK),
            "'%s': %s", c->text, err);
  cr_assert(eq(dbl, v, c->value), "'%s'", c->text);
}

ParameterizedTestParameters(options_frac, bad) {
  static struct bad_case cases[] = {
      {"1.5", "0 to 1"},        {"nan", "not a number"},
      {"-0.1", "0..1"},         {"inf", "not a number"},
      {"", "empty"},            {"0.4x", "junk"},
      {" 0.4", "not a number"}, {"0.4 ", "junk"},
      {"1e999", "0..1"},        {"0x0.8", "junk"},
      {"-nan", "not a number"}, {"1.0000001", "0..1"},
  };
  return cr_make_param_array(struct bad_case, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct bad_case *c, options_frac, bad) {
  char err[LMS__ERRBUF] = "";
  double v = 0.25;
  cr_assert(eq(int, lms__parse_frac("-lms_frac", c->text, &v, err),
               LMS_ERR_INVALID),
            "'%s' was accepted", c->text);
  assert_mentions(err, "-lms_frac");
  assert_mentions(err, c->hint);
  cr_assert(eq(dbl, v, 0.25), "output changed on failure");
}

/* ---- KB counts -------------------------------------------------------- */

struct kb_case {
  char text[32];
  int64_t value;
};

ParameterizedTestParameters(options_kb, good) {
  static struct kb_case cases[] = {
      {"-1", -1},
      {"0", 0},
      {"8192", 8192},
      {"10000000000", 10000000000ll},
      {"9007199254740991", INT64_MAX / 1024},
  };
  return cr_make_param_array(struct kb_case, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct kb_case *c, options_kb, good) {
  char err[LMS__ERRBUF] = "";
  int64_t v = 7;
  cr_assert(eq(int, lms__parse_kb("-lms", c->text, &v, err), LMS_OK),
            "'%s': %s", c->text, err);
  cr_assert(eq(i64, v, c->value), "'%s'", c->text);
}

ParameterizedTestParameters(options_kb, bad) {
  static struct bad_case cases[] = {
      {"-5", "only -1 (off) or a whole number >= 0 of KB"},
      {"abc", "not a number"},
      {"12kb", "whole number of KB with no unit"},
      {"12K", "no unit"},
      {"", "empty"},
      {"1.5", "whole number"},
      {"9007199254740992", "too large"},
      {"99999999999999999999999", "too large"},
      {"+5", "not a number"},
      {"-2", "only -1"},
      {" 5", "not a number"},
      {"5 ", "whole number"},
  };
  return cr_make_param_array(struct bad_case, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct bad_case *c, options_kb, bad) {
  char err[LMS__ERRBUF] = "";
  int64_t v = 7;
  cr_assert(eq(int, lms__parse_kb("-lms", c->text, &v, err), LMS_ERR_INVALID),
            "'%s' was accepted", c->text);
  assert_mentions(err, "-lms");
  assert_mentions(err, c->hint);
  cr_assert(eq(i64, v, 7), "output changed on failure");
}

/* ---- Booleans --------------------------------------------------------- */

struct bool_case {
  char text[32];
  int value; /* -1: rejected */
};

ParameterizedTestParameters(options_bool, table) {
  static struct bool_case cases[] = {
      {"1", 1},  {"true", 1},  {"on", 1},  {"yes", 1},    {"TRUE", 1},
      {"0", 0},  {"false", 0}, {"off", 0}, {"no", 0},     {"No", 0},
      {"", -1},  {"2", -1},    {"y", -1},  {"truex", -1}, {" on", -1},
  };
  return cr_make_param_array(struct bool_case, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct bool_case *c, options_bool, table) {
  char err[LMS__ERRBUF] = "";
  int v = 9;
  lms_status_t st = lms__parse_bool("LMS_X", c->text, &v, err);
  if (c->value < 0) {
    cr_assert(eq(int, st, LMS_ERR_INVALID), "'%s' was accepted", c->text);
    assert_mentions(err, "LMS_X");
    assert_mentions(err, "yes");
    cr_assert(eq(int, v, 9));
  } else {
    cr_assert(eq(int, st, LMS_OK), "'%s': %s", c->text, err);
    cr_assert(eq(int, v, c->value), "'%s'", c->text);
  }
}

/* ---- Flags: bad values name the flag as written ----------------------- */

struct flag_case {
  char arg[32];   /* the flag, or "--flag=VALUE" */
  char value[32]; /* the next argument; "" for none */
  char name[32];  /* what the message must name */
  char hint[64];  /* and a phrase about the accepted form */
};

ParameterizedTestParameters(options_flags, bad_value) {
  static struct flag_case cases[] = {
      {"-lms", "-5", "-lms", "only -1 (off) or a whole number >= 0 of KB"},
      {"-lms", "abc", "-lms", "not a number"},
      {"-lms", "12kb", "-lms", "-lms takes a whole number of KB with no unit"},
      {"--lms", "1.5", "--lms", "whole number"},
      {"-lms_frac", "1.5", "-lms_frac", "0 to 1"},
      {"-lms_frac", "nan", "-lms_frac", "not a number"},
      {"-lms_frac", "-0.1", "-lms_frac", "0 to 1"},
      {"--lms-frac=2", "", "--lms-frac", "0 to 1"},
      {"--gpu-limit", "0", "--gpu-limit", "1 byte"},
      {"--gpu-limit", "-1G", "--gpu-limit", "negative"},
      {"--gpu-limit", "10XB", "--gpu-limit", "GiB"},
      {"--gpu-limit", "16GiB!", "--gpu-limit", "unknown unit"},
      {"--gpu-limit=", "", "--gpu-limit", "empty"},
      {"--host-limit", "2048T", "--host-limit", "1 PiB"},
      {"-lms=", "", "-lms", "empty"},
      {"--device", "gpu", "--device", "sim, cuda or auto"},
      {"--link", "pcie9", "--link", "pcie3"},
      {"--link=", "", "--link", "empty"},
      {"--log", "loud", "--log", "none, error, warn, info, debug"},
      {"--log", "info,net", "--log", "core, alloc, swap, graph"},
      {"--log", "info,", "--log", "subsystem"},
      {"--stats=", "", "--stats", "empty"},
      {"--fail", "malloc", "--fail", "OP:N"},
      {"--fail", "malloc:0", "--fail", ">= 1"},
      {"--fail", "Malloc:1", "--fail", "OP:N"},
      {"--fail", "malloc:1,", "--fail", "OP:N"},
      {"--fail", "malloc:2x", "--fail", ">= 1"},
  };
  return cr_make_param_array(struct flag_case, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct flag_case *c, options_flags, bad_value,
                  .init = opts_up, .fini = opts_down) {
  char *argv[] = {"prog", c->arg, c->value[0] ? c->value : NULL, NULL};
  int argc = c->value[0] ? 3 : 2;
  lms__opts_t before;
  lms__opts_copy(&before, &g_opts->v);
  cr_assert(eq(int, lms_options_parse_args(g_opts, &argc, argv),
               LMS_ERR_INVALID),
            "%s %s was accepted", c->arg, c->value);
  const char *err = lms_options_error(g_opts);
  assert_mentions(err, c->name);
  assert_mentions(err, c->hint);
  cr_assert(eq(int, argc, c->value[0] ? 3 : 2), "argc changed");
  cr_assert(eq(ptr, argv[1], c->arg), "argv changed");
  cr_assert(eq(i64, g_opts->v.lms_kb, before.lms_kb));
  cr_assert(eq(u64, g_opts->v.gpu_limit, before.gpu_limit));
  cr_assert(memcmp(g_opts->v.source, before.source, sizeof before.source) ==
                0,
            "sources changed");
}

/* ---- Flags: accepted spellings ---------------------------------------- */

struct spelling_case {
  char arg[32];
  char value[32]; /* the next argument; "" for none */
};

ParameterizedTestParameters(options_flags, frac_spellings) {
  static struct spelling_case cases[] = {
      {"-lms_frac", "0.4"},    {"--lms_frac", "0.4"}, {"--lms-frac", "0.4"},
      {"--lms-frac=0.4", ""}, {"-lms_frac=0.4", ""},
      {"--lms_frac=0.4", ""},
  };
  return cr_make_param_array(struct spelling_case, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct spelling_case *c, options_flags, frac_spellings,
                  .init = opts_up, .fini = opts_down) {
  char *argv[] = {"prog", c->arg, c->value[0] ? c->value : NULL, NULL};
  int argc = c->value[0] ? 3 : 2;
  cr_assert(eq(int, lms_options_parse_args(g_opts, &argc, argv), LMS_OK),
            "%s", lms_options_error(g_opts));
  cr_assert(eq(dbl, g_opts->v.lms_frac, 0.4));
  cr_assert(eq(int, g_opts->v.source[LMS__OPT_lms_frac], LMS__SRC_SET));
  cr_assert(eq(int, argc, 1));
  cr_assert(eq(ptr, argv[1], NULL));
}

ParameterizedTestParameters(options_flags, kb_spellings) {
  static struct spelling_case cases[] = {
      {"-lms", "8192"}, {"--lms", "8192"}, {"-lms=8192", ""},
      {"--lms=8192", ""},
  };
  return cr_make_param_array(struct spelling_case, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct spelling_case *c, options_flags, kb_spellings,
                  .init = opts_up, .fini = opts_down) {
  char *argv[] = {"prog", c->arg, c->value[0] ? c->value : NULL, NULL};
  int argc = c->value[0] ? 3 : 2;
  cr_assert(eq(int, lms_options_parse_args(g_opts, &argc, argv), LMS_OK),
            "%s", lms_options_error(g_opts));
  cr_assert(eq(i64, g_opts->v.lms_kb, 8192));
  cr_assert(eq(int, argc, 1));
}

/* Hyphenated spellings need two dashes (Note [Single-dash flags]). */
struct word {
  char text[32];
};

ParameterizedTestParameters(options_flags, unknown) {
  static struct word cases[] = {
      {"--foo"}, {"-lms-frac"}, {"-gpu-limit"}, {"--gpu_limit"}, {"-x"},
      {"---lms"}, {"--lmsx"},   {"--foo=1"},    {"-5"},
  };
  return cr_make_param_array(struct word, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct word *w, options_flags, unknown, .init = opts_up,
                  .fini = opts_down) {
  const char *arg = w->text;
  char *argv[] = {"prog", w->text, "1", NULL};
  int argc = 3;
  cr_assert(eq(int, lms_options_parse_args(g_opts, &argc, argv),
               LMS_ERR_INVALID),
            "'%s' was accepted", arg);
  const char *err = lms_options_error(g_opts);
  assert_mentions(err, "unknown option '");
  assert_mentions(err, "lms --help");
  char name[64];
  snprintf(name, sizeof name, "'%.*s'", (int)strcspn(arg, "="), arg);
  assert_mentions(err, name);
  cr_assert(eq(int, argc, 3));
}

Test(options_flags, every_kind_parses, .init = opts_up, .fini = opts_down) {
  char *argv[] = {"prog",       "-lms",         "8192",
                  "-lms_frac",  "0.4",          "--gpu-limit",
                  "16GiB",      "--host-limit", "1.5GiB",
                  "--node-host-limit", "64GiB",
                  "--device",   "sim",          "--link",
                  "25/26",      "--log",        "debug,alloc,swap",
                  "--log-file", "lms.%p.log",   "--stats=s.json",
                  "--fail",     "malloc:3,memcpy_h2d:1",
                  "--policy",   "lru",          "--schedule",
                  "stack",      "--prefetch-window", "16,2GiB",
                  "--piece-size", "32MiB",
                  "--trace",    "t.trace",      "--sim-bytes",
                  "off",        "--sim-measured-waits", "on",
                  NULL};
  int argc = NARGS(argv);
  cr_assert(eq(int, lms_options_parse_args(g_opts, &argc, argv), LMS_OK),
            "%s", lms_options_error(g_opts));
  const lms__opts_t *o = &g_opts->v;
  cr_assert(eq(int, argc, 1));
  cr_assert(eq(i64, o->lms_kb, 8192));
  cr_assert(eq(dbl, o->lms_frac, 0.4));
  cr_assert(eq(u64, o->gpu_limit, 17179869184ull));
  cr_assert(eq(u64, o->host_limit, 1610612736ull));
  cr_assert(eq(u64, o->node_host_limit, 64ull << 30));
  cr_assert(eq(int, (int)o->device, LMS_DEVICE_SIM));
  cr_assert(eq(str, (char *)o->link.name, "custom"));
  cr_assert(eq(dbl, o->link.h2d_gbps, 25.0));
  cr_assert(eq(dbl, o->link.d2h_gbps, 26.0));
  cr_assert(eq(int, o->log.level, LMS_LOG_DEBUG));
  cr_assert(eq(u32, o->log.subsys, LMS_LOG_SUB(ALLOC) | LMS_LOG_SUB(SWAP)));
  cr_assert(eq(str, o->log_file, "lms.%p.log"));
  cr_assert(eq(str, o->stats, "s.json"));
  cr_assert(eq(str, o->fail, "malloc:3,memcpy_h2d:1"));
  cr_assert(eq(int, (int)o->policy, LMS_POLICY_LRU));
  cr_assert(eq(int, (int)o->schedule, LMS_SCHED_STACK));
  cr_assert(eq(u32, o->prefetch_window.steps, 16));
  cr_assert(eq(u64, o->prefetch_window.bytes, 2ull << 30));
  cr_assert(eq(u64, o->piece_size, 32ull << 20));
  cr_assert(eq(str, o->trace, "t.trace"));
  cr_assert(eq(int, o->sim_bytes, 0));
  cr_assert(eq(int, o->sim_measured_waits, 1));
  for (int i = 0; i < LMS__OPT_COUNT; i++)
    cr_assert(eq(int, o->source[i], LMS__SRC_SET), "option %d", i);
}

Test(options_flags, empty_separate_value, .init = opts_up, .fini = opts_down) {
  char *argv[] = {"prog", "--log-file", "", NULL};
  int argc = NARGS(argv);
  cr_assert(eq(int, lms_options_parse_args(g_opts, &argc, argv),
               LMS_ERR_INVALID));
  assert_mentions(lms_options_error(g_opts), "--log-file");
  assert_mentions(lms_options_error(g_opts), "empty");
}

Test(options_flags, log_without_subsystems_means_all, .init = opts_up,
     .fini = opts_down) {
  cr_assert(eq(int, lms_options_set(g_opts, "log", "info"), LMS_OK));
  cr_assert(eq(int, g_opts->v.log.level, LMS_LOG_INFO));
  cr_assert(eq(u32, g_opts->v.log.subsys, LMS_LOG_ALL_SUBSYS));
  cr_assert(eq(int, lms_options_set(g_opts, "log", "none"), LMS_OK));
  cr_assert(eq(int, g_opts->v.log.level, LMS_LOG_NONE));
}

Test(options_flags, link_preset, .init = opts_up, .fini = opts_down) {
  cr_assert(eq(int, lms_options_set(g_opts, "link", "nvlink2"), LMS_OK));
  cr_assert(eq(str, (char *)g_opts->v.link.name, "nvlink2"));
  cr_assert(eq(dbl, g_opts->v.link.h2d_gbps, 66.0));
}

Test(options_flags, path_length_is_bounded, .init = opts_up,
     .fini = opts_down) {
  char path[LMS__PATH_MAX + 1];
  memset(path, 'a', sizeof path - 1);
  path[LMS__PATH_MAX] = '\0';
  cr_assert(eq(int, lms_options_set(g_opts, "stats", path), LMS_ERR_INVALID));
  assert_mentions(lms_options_error(g_opts), "stats");
  path[LMS__PATH_MAX - 1] = '\0';
  cr_assert(eq(int, lms_options_set(g_opts, "stats", path), LMS_OK));
  cr_assert(eq(sz, strlen(g_opts->v.stats), LMS__PATH_MAX - 1));
}

/* ---- parse_args: what is consumed and what stays --------------------- */

Test(options_args, consumes_flags_and_shifts_the_rest, .init = opts_up,
     .fini = opts_down) {
  char *argv[] = {"prog", "train",          "-lms", "8192", "--gpu-limit=16GiB",
                  "-",    "model.prototxt", "--",   "-lms", "5",
                  NULL};
  int argc = NARGS(argv);
  cr_assert(eq(int, lms_options_parse_args(g_opts, &argc, argv), LMS_OK),
            "%s", lms_options_error(g_opts));
  cr_assert(eq(int, argc, 7));
  cr_assert(eq(str, argv[0], "prog"));
  cr_assert(eq(str, argv[1], "train"));
  cr_assert(eq(str, argv[2], "-"));
  cr_assert(eq(str, argv[3], "model.prototxt"));
  cr_assert(eq(str, argv[4], "--"));
  cr_assert(eq(str, argv[5], "-lms"));
  cr_assert(eq(str, argv[6], "5"));
  cr_assert(eq(ptr, argv[7], NULL));
  cr_assert(eq(i64, g_opts->v.lms_kb, 8192), "flag after -- was read");
  cr_assert(eq(u64, g_opts->v.gpu_limit, 17179869184ull));
}

Test(options_args, later_flag_wins, .init = opts_up, .fini = opts_down) {
  char *argv[] = {"prog", "-lms", "100", "--lms=200", NULL};
  int argc = NARGS(argv);
  cr_assert(eq(int, lms_options_parse_args(g_opts, &argc, argv), LMS_OK));
  cr_assert(eq(i64, g_opts->v.lms_kb, 200));
}

Test(options_args, value_may_start_with_a_dash, .init = opts_up,
     .fini = opts_down) {
  char *argv[] = {"prog", "-lms", "-1", "x", NULL};
  int argc = NARGS(argv);
  cr_assert(eq(int, lms_options_set(g_opts, "lms", "64"), LMS_OK));
  cr_assert(eq(int, lms_options_parse_args(g_opts, &argc, argv), LMS_OK));
  cr_assert(eq(i64, g_opts->v.lms_kb, -1));
  cr_assert(eq(int, argc, 2));
  cr_assert(eq(str, argv[1], "x"));
}

Test(options_args, missing_value_names_the_flag, .init = opts_up,
     .fini = opts_down) {
  char *argv[] = {"prog", "x", "--gpu-limit", NULL};
  int argc = NARGS(argv);
  cr_assert(eq(int, lms_options_parse_args(g_opts, &argc, argv),
               LMS_ERR_INVALID));
  assert_mentions(lms_options_error(g_opts), "--gpu-limit");
  assert_mentions(lms_options_error(g_opts), "missing value");
  cr_assert(eq(int, argc, 3));
}

Test(options_args, failure_changes_nothing, .init = opts_up,
     .fini = opts_down) {
  char *argv[] = {"prog", "-lms", "8192", "w", "--gpu-limit", "0", NULL};
  int argc = NARGS(argv);
  cr_assert(eq(int, lms_options_parse_args(g_opts, &argc, argv),
               LMS_ERR_INVALID));
  cr_assert(eq(i64, g_opts->v.lms_kb, -1), "-lms applied despite the error");
  cr_assert(eq(int, g_opts->v.source[LMS__OPT_lms_kb], LMS__SRC_DEFAULT));
  cr_assert(eq(int, argc, 6));
  cr_assert(eq(str, argv[1], "-lms"));
  cr_assert(eq(str, argv[3], "w"));
}

Test(options_args, only_program_name, .init = opts_up, .fini = opts_down) {
  char *argv[] = {"prog", NULL};
  int argc = 1;
  cr_assert(eq(int, lms_options_parse_args(g_opts, &argc, argv), LMS_OK));
  cr_assert(eq(int, argc, 1));
  cr_assert(eq(str, argv[0], "prog"));
}

/* ---- lms_options_set -------------------------------------------------- */

Test(options_set, takes_either_spelling, .init = opts_up, .fini = opts_down) {
  cr_assert(eq(int, lms_options_set(g_opts, "lms_frac", "0.25"), LMS_OK));
  cr_assert(eq(dbl, g_opts->v.lms_frac, 0.25));
  cr_assert(eq(int, lms_options_set(g_opts, "lms-frac", "0.5"), LMS_OK));
  cr_assert(eq(dbl, g_opts->v.lms_frac, 0.5));
  cr_assert(eq(int, lms_options_set(g_opts, "gpu-limit", "2GB"), LMS_OK));
  cr_assert(eq(u64, g_opts->v.gpu_limit, 2000000000ull));
  cr_assert(eq(int, g_opts->v.source[LMS__OPT_gpu_limit], LMS__SRC_SET));
  cr_assert(eq(int, g_opts->v.source[LMS__OPT_host_limit],
               LMS__SRC_DEFAULT));
}

Test(options_set, rejects_unknown_names_and_bad_values, .init = opts_up,
     .fini = opts_down) {
  cr_assert(eq(int, lms_options_set(g_opts, "gpu_limit", "1G"),
               LMS_ERR_INVALID));
  assert_mentions(lms_options_error(g_opts), "unknown option 'gpu_limit'");
  cr_assert(eq(int, lms_options_set(g_opts, "--lms", "1"), LMS_ERR_INVALID));
  cr_assert(eq(int, lms_options_set(g_opts, "lms-frac", "1.5"),
               LMS_ERR_INVALID));
  assert_mentions(lms_options_error(g_opts), "lms-frac");
  cr_assert(eq(int, lms_options_set(g_opts, "device", NULL),
               LMS_ERR_INVALID));
  assert_mentions(lms_options_error(g_opts), "device");
  cr_assert(eq(dbl, g_opts->v.lms_frac, 0.0));
}

Test(options_set, copy_repoints_text_fields, .init = opts_up,
     .fini = opts_down) {
  cr_assert(eq(int, lms_options_set(g_opts, "log-file", "a.log"), LMS_OK));
  cr_assert(eq(int, lms_options_set(g_opts, "fail", "malloc:2"), LMS_OK));
  lms__opts_t copy;
  lms__opts_copy(&copy, &g_opts->v);
  cr_assert(eq(ptr, copy.log_file, (void *)copy.log_file_buf));
  cr_assert(eq(ptr, copy.fail, (void *)copy.fail_buf));
  cr_assert(eq(ptr, copy.stats, (void *)copy.stats_buf));
  cr_assert(eq(int, lms_options_set(g_opts, "log-file", "b.log"), LMS_OK));
  cr_assert(eq(str, copy.log_file, "a.log"));
  cr_assert(eq(str, copy.fail, "malloc:2"));
  cr_assert(eq(str, g_opts->v.log_file, "b.log"));
}

/* ---- The environment -------------------------------------------------- */

Test(options_env, reads_the_twins, .init = opts_up, .fini = opts_down) {
  setenv("LMS_GPU_LIMIT", "8GiB", 1);
  setenv("LMS_KB", "4096", 1);
  setenv("LMS_FRAC", "0.4", 1);
  setenv("LMS_DEVICE", "sim", 1);
  setenv("LMS_LOG_FILE", "x.log", 1);
  cr_assert(eq(int, lms_options_load_env(g_opts), LMS_OK), "%s",
            lms_options_error(g_opts));
  const lms__opts_t *o = &g_opts->v;
  cr_assert(eq(u64, o->gpu_limit, 8589934592ull));
  cr_assert(eq(i64, o->lms_kb, 4096));
  cr_assert(eq(dbl, o->lms_frac, 0.4));
  cr_assert(eq(int, (int)o->device, LMS_DEVICE_SIM));
  cr_assert(eq(str, o->log_file, "x.log"));
  cr_assert(eq(int, o->source[LMS__OPT_gpu_limit], LMS__SRC_ENV));
  cr_assert(eq(int, o->source[LMS__OPT_log], LMS__SRC_DEFAULT));
}

/* Note [All options in one variable] in options.c. */
Test(options_env, reads_lms_conf, .init = opts_up, .fini = opts_down) {
  setenv("LMS_CONF",
         "gpu_limit:8GiB,lms-frac:0.4,prefetch_window:64,25%,lms:4096", 1);
  cr_assert(eq(int, lms_options_load_env(g_opts), LMS_OK), "%s",
            lms_options_error(g_opts));
  const lms__opts_t *o = &g_opts->v;
  cr_assert(eq(u64, o->gpu_limit, 8589934592ull));
  cr_assert(eq(dbl, o->lms_frac, 0.4));
  cr_assert(eq(u32, o->prefetch_window.steps, 64));
  cr_assert(eq(dbl, o->prefetch_window.percent, 25.0));
  cr_assert(eq(i64, o->lms_kb, 4096));
  cr_assert(eq(int, o->source[LMS__OPT_gpu_limit], LMS__SRC_ENV));
  cr_assert(eq(int, o->source[LMS__OPT_log], LMS__SRC_DEFAULT));
}

Test(options_env, lms_conf_then_twins_then_flags, .init = opts_up,
     .fini = opts_down) {
  setenv("LMS_CONF", "gpu_limit:8GiB,lms_frac:0.4", 1);
  setenv("LMS_GPU_LIMIT", "4GiB", 1);
  cr_assert(eq(int, lms_options_set(g_opts, "lms_frac", "0.25"), LMS_OK));
  cr_assert(eq(int, lms_options_load_env(g_opts), LMS_OK), "%s",
            lms_options_error(g_opts));
  cr_assert(eq(u64, g_opts->v.gpu_limit, 4294967296ull));
  cr_assert(eq(dbl, g_opts->v.lms_frac, 0.25));
}

struct conf_case {
  char value[64];
  char hint[80];
};

ParameterizedTestParameters(options_env, bad_lms_conf) {
  static struct conf_case cases[] = {
      {"8GiB", "comes before any key"},
      {"gpu_size:8GiB", "'gpu_size' names no option"},
      {":8GiB", "no key before its ':'"},
      {"gpu_limit:1GiB,gpu-limit:2GiB", "given twice"},
      {"lms_frac:1.5", "LMS_CONF's lms_frac"},
      {"lms_frac:1.5", "0 to 1"},
  };
  return cr_make_param_array(struct conf_case, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct conf_case *c, options_env, bad_lms_conf,
                  .init = opts_up, .fini = opts_down) {
  setenv("LMS_CONF", c->value, 1);
  lms__opts_t before = g_opts->v;
  cr_assert(eq(int, lms_options_load_env(g_opts), LMS_ERR_INVALID),
            "LMS_CONF=%s was accepted", c->value);
  assert_mentions(lms_options_error(g_opts), c->hint);
  cr_assert(eq(u64, g_opts->v.gpu_limit, before.gpu_limit));
}

struct env_case {
  char var[32];
  char value[32];
  char hint[64];
};

ParameterizedTestParameters(options_env, bad_value) {
  static struct env_case cases[] = {
      {"LMS_FRAC", "2", "0 to 1"},
      {"LMS_KB", "12kb", "no unit"},
      {"LMS_GPU_LIMIT", "0", "1 byte"},
      {"LMS_GPU_LIMIT", "10XB", "KiB"},
      {"LMS_DEVICE", "", "empty"},
      {"LMS_LINK", "bogus", "pcie3"},
      {"LMS_LOG", "verbose", "debug"},
      {"LMS_FAIL", "malloc:x", "OP:N"},
  };
  return cr_make_param_array(struct env_case, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct env_case *c, options_env, bad_value, .init = opts_up,
                  .fini = opts_down) {
  setenv("LMS_HOST_LIMIT", "1GiB", 1);
  setenv(c->var, c->value, 1);
  cr_assert(eq(int, lms_options_load_env(g_opts), LMS_ERR_INVALID),
            "%s=%s was accepted", c->var, c->value);
  const char *err = lms_options_error(g_opts);
  assert_mentions(err, c->var);
  assert_mentions(err, c->hint);
  cr_assert(strstr(err, "--") == NULL, "names a flag, not %s: %s", c->var,
            err);
  cr_assert(eq(u64, g_opts->v.host_limit, 0), "partly applied");
  cr_assert(eq(int, g_opts->v.source[LMS__OPT_host_limit], LMS__SRC_DEFAULT));
}

Test(options_env, unknown_variable_warns_but_succeeds, .init = opts_up,
     .fini = opts_down) {
  setenv("LMS_FOO", "1", 1);
  setenv("LMS_KB", "16", 1);
  lms_status_t st;
  const char *text = capture_stderr(lms_options_load_env, &st);
  cr_assert(eq(int, st, LMS_OK), "%s", lms_options_error(g_opts));
  assert_mentions(text, "lms: warning: unknown environment variable LMS_FOO "
                        "ignored");
  cr_assert(strstr(text, "LMS_KB") == NULL, "warned about a known name");
  cr_assert(eq(i64, g_opts->v.lms_kb, 16));
}

Test(options_env, known_variables_do_not_warn, .init = opts_up,
     .fini = opts_down) {
  setenv("LMS_LOG", "info", 1);
  setenv("LMS_LOG_FILE", "y.log", 1);
  setenv("LMS_LOGX", "1", 1);
  lms_status_t st;
  const char *text = capture_stderr(lms_options_load_env, &st);
  cr_assert(eq(int, st, LMS_OK));
  assert_mentions(text, "LMS_LOGX");
  cr_assert(strstr(text, "LMS_LOG ") == NULL, "%s", text);
  cr_assert(strstr(text, "LMS_LOG_FILE") == NULL, "%s", text);
}

/* ---- Precedence: default < environment < flag ------------------------- */

Test(options_precedence, env_over_default_flag_over_env, .init = opts_up,
     .fini = opts_down) {
  setenv("LMS_KB", "100", 1);
  setenv("LMS_GPU_LIMIT", "1GiB", 1);
  cr_assert(eq(int, lms_options_load_env(g_opts), LMS_OK));
  cr_assert(eq(i64, g_opts->v.lms_kb, 100));
  char *argv[] = {"prog", "-lms", "200", NULL};
  int argc = NARGS(argv);
  cr_assert(eq(int, lms_options_parse_args(g_opts, &argc, argv), LMS_OK));
  cr_assert(eq(i64, g_opts->v.lms_kb, 200));
  cr_assert(eq(int, g_opts->v.source[LMS__OPT_lms_kb], LMS__SRC_SET));
  cr_assert(eq(u64, g_opts->v.gpu_limit, 1073741824ull));
  cr_assert(eq(int, g_opts->v.source[LMS__OPT_gpu_limit], LMS__SRC_ENV));
  cr_assert(eq(dbl, g_opts->v.lms_frac, 0.0));
  cr_assert(eq(int, g_opts->v.source[LMS__OPT_lms_frac], LMS__SRC_DEFAULT));
}

Test(options_precedence, env_read_late_keeps_the_flag, .init = opts_up,
     .fini = opts_down) {
  char *argv[] = {"prog", "--lms-frac", "0.5", NULL};
  int argc = NARGS(argv);
  cr_assert(eq(int, lms_options_parse_args(g_opts, &argc, argv), LMS_OK));
  setenv("LMS_FRAC", "0.1", 1);
  cr_assert(eq(int, lms_options_load_env(g_opts), LMS_OK));
  cr_assert(eq(dbl, g_opts->v.lms_frac, 0.5));
  cr_assert(eq(int, lms_options_set(g_opts, "lms_frac", "0.75"), LMS_OK));
  cr_assert(eq(dbl, g_opts->v.lms_frac, 0.75));
}

/* ---- Describe and help ------------------------------------------------ */

#define OPT_FLAG_(field, kind, flag, alt, env, def, help) flag,
static const char *const g_flags[] = {LMS__OPTIONS_MAP(OPT_FLAG_)};
#undef OPT_FLAG_
#define OPT_ENV_(field, kind, flag, alt, env, def, help) env,
static const char *const g_envs[] = {LMS__OPTIONS_MAP(OPT_ENV_)};
#undef OPT_ENV_

Test(options_text, describe_lists_every_option, .init = opts_up,
     .fini = opts_down) {
  char buf[4096];
  size_t n = lms_options_describe(g_opts, buf, sizeof buf);
  cr_assert(eq(sz, n, strlen(buf)));
  for (int i = 0; i < LMS__OPT_COUNT; i++) {
    char line[64];
    snprintf(line, sizeof line, "\n%s = ", g_flags[i]);
    cr_assert(strncmp(buf, line + 1, strlen(line + 1)) == 0 ||
                  strstr(buf, line) != NULL,
              "no line for %s in:\n%s", g_flags[i], buf);
  }
  assert_mentions(buf, "lms = off (default)");
  assert_mentions(buf, "gpu-limit = unset (default)");
  assert_mentions(buf, "device = auto (default)");
  assert_mentions(buf, "log = warn (default)");
}

Test(options_text, describe_shows_values_and_sources, .init = opts_up,
     .fini = opts_down) {
  setenv("LMS_HOST_LIMIT", "1.5GiB", 1);
  cr_assert(eq(int, lms_options_load_env(g_opts), LMS_OK));
  cr_assert(eq(int, lms_options_set(g_opts, "gpu-limit", "16GiB"), LMS_OK));
  cr_assert(eq(int, lms_options_set(g_opts, "lms", "8192"), LMS_OK));
  cr_assert(eq(int, lms_options_set(g_opts, "log", "info,swap"), LMS_OK));
  char buf[4096];
  lms_options_describe(g_opts, buf, sizeof buf);
  assert_mentions(buf, "gpu-limit = 16 GiB (17179869184 bytes) (set)");
  assert_mentions(buf, "host-limit = 1.50 GiB (1610612736 bytes) (env)");
  assert_mentions(buf, "lms = 8192 KB (set)");
  assert_mentions(buf, "log = info,swap (set)");
}

Test(options_text, described_size_reads_back, .init = opts_up,
     .fini = opts_down) {
  cr_assert(eq(int, lms_options_set(g_opts, "gpu-limit", "16GiB"), LMS_OK));
  char buf[4096];
  lms_options_describe(g_opts, buf, sizeof buf);
  const char *p = strstr(buf, "gpu-limit = ");
  cr_assert(p != NULL);
  p += strlen("gpu-limit = ");
  char shown[32];
  snprintf(shown, sizeof shown, "%.*s", (int)strcspn(p, "("), p);
  shown[strlen(shown) - 1] = '\0';
  char err[LMS__ERRBUF];
  uint64_t v = 0;
  cr_assert(eq(int, lms__parse_size("x", shown, &v, err), LMS_OK), "%s", err);
  cr_assert(eq(u64, v, 17179869184ull));
}

Test(options_text, describe_truncates_like_snprintf, .init = opts_up,
     .fini = opts_down) {
  char full[4096], small[16];
  size_t need = lms_options_describe(g_opts, NULL, 0);
  cr_assert(eq(sz, lms_options_describe(g_opts, full, sizeof full), need));
  cr_assert(eq(sz, lms_options_describe(g_opts, small, sizeof small), need));
  cr_assert(eq(sz, strlen(small), sizeof small - 1));
  cr_assert(strncmp(full, small, sizeof small - 1) == 0);
}

Test(options_text, help_lists_every_flag_and_variable) {
  size_t need = lms_options_help(NULL, 0);
  char *buf = malloc(need + 1);
  cr_assert(buf != NULL);
  cr_assert(eq(sz, lms_options_help(buf, need + 1), need));
  cr_assert(eq(sz, strlen(buf), need));
  for (int i = 0; i < LMS__OPT_COUNT; i++) {
    char flag[64];
    snprintf(flag, sizeof flag, "--%s", g_flags[i]);
    assert_mentions(buf, flag);
    assert_mentions(buf, g_envs[i]);
  }
  assert_mentions(buf, "-lms, --lms KB");
  assert_mentions(buf, "-lms_frac");
  assert_mentions(buf, "--lms-frac");
  assert_mentions(buf, "default -1");
  assert_mentions(buf, "GiB");
  assert_mentions(buf, "pcie3");
  free(buf);
}

Test(options_text, help_truncates_like_snprintf) {
  char small[10];
  size_t need = lms_options_help(NULL, 0);
  cr_assert(gt(sz, need, 0));
  cr_assert(eq(sz, lms_options_help(small, sizeof small), need));
  cr_assert(eq(sz, strlen(small), sizeof small - 1));
}

/* The window's byte cap, the one every front end takes (options.h): its
 * bytes, or its share of the budget, never past the budget. */
Test(options, window_cap_is_bytes_or_share_within_the_budget) {
  lms__window_t w = {.steps = 8, .bytes = 0, .percent = 60.0};
  cr_assert(eq(u64, lms__window_cap(&w, 1000), 600));
  cr_assert(eq(u64, lms__window_cap(&w, 0), 0));
  w.percent = 100.0;
  cr_assert(eq(u64, lms__window_cap(&w, 1ull << 40), 1ull << 40));
  w.bytes = 300;
  cr_assert(eq(u64, lms__window_cap(&w, 1000), 300));
  w.bytes = 5000; /* more than the budget: the budget */
  cr_assert(eq(u64, lms__window_cap(&w, 1000), 1000));
}

/* ---- One lms per rank (Note [One lms per rank], core/rank.h) ---------- */

static void no_launcher(void) {
  static const char *const names[] = {
      "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID",
      "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
      "SLURM_LOCALID"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    unsetenv(names[i]);
}

Test(rank, from_each_launcher_in_order, .init = no_launcher) {
  cr_assert(eq(int, lms__rank(), -1));
  cr_assert(eq(int, lms__local_rank(), -1));
  setenv("SLURM_PROCID", "9", 1);
  cr_assert(eq(int, lms__rank(), 9));
  setenv("OMPI_COMM_WORLD_RANK", "5", 1);
  cr_assert(eq(int, lms__rank(), 5));
  setenv("RANK", "3", 1);
  cr_assert(eq(int, lms__rank(), 3));
  /* A value that is not a rank is passed over. */
  setenv("RANK", "three", 1);
  cr_assert(eq(int, lms__rank(), 5));
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  cr_assert(eq(int, lms__local_rank(), 1));
  setenv("LOCAL_RANK", "-2", 1);
  cr_assert(eq(int, lms__local_rank(), 1));
  setenv("LOCAL_RANK", "0", 1);
  cr_assert(eq(int, lms__local_rank(), 0));
}

Test(rank, file_names_per_process, .init = no_launcher) {
  char out[64], want[64];
  cr_assert(eq(int, lms__path_expand("s-%r.json", out, sizeof out), 0));
  cr_assert(eq(str, out, "s-0.json"));
  setenv("RANK", "12", 1);
  cr_assert(eq(int, lms__path_expand("log-%r-%p%%r.txt", out, sizeof out), 0));
  snprintf(want, sizeof want, "log-12-%ld%%r.txt", (long)getpid());
  cr_assert(eq(str, out, want));
  char small[6];
  cr_assert(eq(int, lms__path_expand("abc-%r-def", small, sizeof small), -1));
  cr_assert(eq(str, small, "abc-1"));
}

Test(rank, each_rank_writes_its_own_stats, .init = no_launcher) {
  char dir[] = "/tmp/lms-rank-XXXXXX";
  cr_assert(not(eq(ptr, mkdtemp(dir), NULL)));
  char stats[96], got[96];
  snprintf(stats, sizeof stats, "%s/stats-%%r.json", dir);
  for (int r = 0; r < 2; r++) {
    char v[8];
    snprintf(v, sizeof v, "%d", r);
    setenv("RANK", v, 1);
    lms_options_t *o = NULL;
    lms_ctx_t *ctx = NULL;
    cr_assert(eq(int, lms_options_create(&o), LMS_OK));
    cr_assert(eq(int, lms_options_set(o, "device", "sim"), LMS_OK));
    cr_assert(eq(int, lms_options_set(o, "stats", stats), LMS_OK));
    cr_assert(eq(int, lms_ctx_create(o, &ctx), LMS_OK));
    lms_options_destroy(o);
    cr_assert(eq(int, lms_ctx_destroy(ctx), LMS_OK));
    snprintf(got, sizeof got, "%s/stats-%d.json", dir, r);
    cr_assert(eq(int, access(got, R_OK), 0), "no %s", got);
    unlink(got);
  }
  rmdir(dir);
}
