/* fuzz_flags.c - a command's flags from its table (Note [A command's
 * flags] in src/cli/cli.h, src/cli/flags.c) on any command line.
 *
 * Each input is a command line, one word per line.  The harness's own
 * table has an entry of every kind (a switch, whole numbers, a real with
 * a scale, paths, a list with an item parser, a value parsed by a
 * function), over a struct with guard bytes around every field.
 *
 * Properties, for every input: no sanitizer report; the guards are never
 * written; a parse that succeeds leaves every whole number, real and list
 * count within its entry's range (or at its default), every path
 * NUL-terminated within its field; a parse that stops at "--" returns
 * its index; and setting the flags aside (lms__cli_extract, as main does
 * before the options parser) keeps every word exactly once, in order on
 * each side, the command word in place. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "cli/cli.h"
#include "fuzz.h"

#define GUARD 0x5a
#define NWORDS 64

typedef struct args {
  unsigned char g0[8];
  int sw;
  unsigned char g1[8];
  int num;
  unsigned char g2[8];
  double real;
  unsigned char g3[8];
  char path[16];
  unsigned char g4[8];
  int items[4];
  size_t nitems;
  unsigned char g5[8];
  char word[12];
  unsigned char g6[8];
  char input[10];
  unsigned char g7[8];
} args_t;

static int item(const char *cmd, const lms__cli_flag_t *f, const char *val,
                void *out) {
  static const lms__cli_flag_t kItem = {.flag = "--items",
                                        .kind = LMS__CLI_INT, .lo = -5,
                                        .hi = 5};
  (void)f;
  long v;
  if (lms__cli_int(cmd, &kItem, val, &v) != 0) return -1;
  *(int *)out = (int)v;
  return 0;
}

static int word(const char *cmd, const lms__cli_flag_t *f, const char *val,
                void *out) {
  if (strlen(val) >= 12) {
    fprintf(stderr, "lms %s: %s: too long\n", cmd, f->flag);
    return -1;
  }
  strcpy(out, val);
  return 0;
}

#define A(field) offsetof(args_t, field)
static const lms__cli_flag_t kFlags[] = {
    {.flag = "--sw", .kind = LMS__CLI_SWITCH, .at = A(sw), .lo = 7},
    {.flag = "--num", .kind = LMS__CLI_INT, .at = A(num), .lo = -3,
     .hi = 1000},
    {.flag = "--real", .kind = LMS__CLI_REAL, .at = A(real), .lo = 0,
     .hi = 100, .scale = 1e3},
    {.flag = "--path", .kind = LMS__CLI_PATH, .at = A(path),
     .size = sizeof((args_t *)0)->path},
    {.flag = "--items", .kind = LMS__CLI_LIST, .at = A(items),
     .size = sizeof(int), .count = A(nitems), .max = 4, .fn = item},
    {.flag = "--word", .kind = LMS__CLI_FN, .at = A(word), .fn = word},
};
#undef A

static const lms__cli_spec_t kSpec = {
    .cmd = "fuzz",
    .help = "fuzz",
    .parts = {{kFlags, sizeof kFlags / sizeof kFlags[0], 0}},
    .input_at = offsetof(args_t, input),
    .input_size = sizeof((args_t *)0)->input,
    .input_what = "the input",
    .stop_at_dashes = 1,
};

static void guards(const args_t *a) {
  const unsigned char *g[] = {a->g0, a->g1, a->g2, a->g3,
                              a->g4, a->g5, a->g6, a->g7};
  for (size_t i = 0; i < sizeof g / sizeof g[0]; i++)
    for (int k = 0; k < 8; k++)
      FUZZ_CHECK(g[i][k] == GUARD, "guard %zu written", i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* The words: lines of the input, at most NWORDS. */
  char *text = malloc(size + 1);
  FUZZ_CHECK(text != NULL, "no memory");
  memcpy(text, data, size);
  text[size] = '\0';
  char *words[NWORDS + 2];
  int n = 0;
  for (char *p = text; n < NWORDS && p <= text + size;) {
    char *nl = strchr(p, '\n');
    if (nl != NULL) *nl = '\0';
    words[n++] = p;
    if (nl == NULL) break;
    p = nl + 1;
  }

  args_t a;
  memset(&a, GUARD, sizeof a);
  a.sw = 0;
  a.num = -1;
  a.real = -1;
  memset(a.path, 0, sizeof a.path);
  memset(a.items, 0, sizeof a.items);
  a.nitems = 0;
  memset(a.word, 0, sizeof a.word);
  memset(a.input, 0, sizeof a.input);
  int end = lms__cli_parse(&kSpec, n, words, &a, NULL);
  guards(&a);
  if (end >= 0) {
    FUZZ_CHECK(end <= n, "returned %d of %d words", end, n);
    FUZZ_CHECK(end == n || strcmp(words[end], "--") == 0,
               "stopped at '%s', not at \"--\"", words[end]);
    FUZZ_CHECK(a.sw == 0 || a.sw == 7, "switch %d", a.sw);
    FUZZ_CHECK(a.num == -1 || (a.num >= -3 && a.num <= 1000), "num %d",
               a.num);
    FUZZ_CHECK(a.real == -1 ||
                   (isfinite(a.real) && a.real > 0 && a.real <= 100e3),
               "real %g", a.real);
    FUZZ_CHECK(memchr(a.path, '\0', sizeof a.path) != NULL, "path unended");
    FUZZ_CHECK(memchr(a.word, '\0', sizeof a.word) != NULL, "word unended");
    FUZZ_CHECK(memchr(a.input, '\0', sizeof a.input) != NULL,
               "input unended");
    FUZZ_CHECK(a.nitems <= 4, "%zu items", a.nitems);
    for (size_t i = 0; i < a.nitems; i++)
      FUZZ_CHECK(a.items[i] >= -5 && a.items[i] <= 5, "item %d", a.items[i]);
  }

  /* Set aside as main does: "lms" and the words; what is moved and what
   * stays together are the words, each once, in order on each side. */
  char *argv[NWORDS + 2], *out[NWORDS + 2];
  int argc = 0;
  argv[argc++] = "lms";
  for (int i = 0; i < n; i++) argv[argc++] = words[i];
  argv[argc] = NULL;
  char *before[NWORDS + 2];
  memcpy(before, argv, sizeof(char *) * (size_t)(argc + 1));
  int left = argc;
  int moved = lms__cli_extract(&left, argv, out, &kSpec);
  FUZZ_CHECK(moved >= 0 && left >= 1 && left + moved == argc,
             "%d moved and %d left of %d", moved, left, argc);
  FUZZ_CHECK(argv[0] == before[0] && argv[left] == NULL,
             "the command word or the end moved");
  int li = 1, mi = 0;
  for (int i = 1; i < argc; i++) {
    if (li < left && argv[li] == before[i]) li++;
    else if (mi < moved && out[mi] == before[i]) mi++;
    else FUZZ_CHECK(0, "word %d ('%s') lost or out of order", i, before[i]);
  }
  FUZZ_CHECK(li == left && mi == moved, "words counted twice");
  free(text);
  return 0;
}
