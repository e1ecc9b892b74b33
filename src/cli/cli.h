/* cli.h - the commands of the `lms` front end. */
#ifndef LMS_CLI_CLI_H
#define LMS_CLI_CLI_H

#include <stdio.h>

#include "core/options.h"
#include "graph/graph.h"
#include "lms/lms.h"
#include "replay/replay.h"

/* ---- A command's own flags (flags.c) ---------------------------------- */

/* Note [A command's flags]
 * Each command declares its flags once, in a table of typed entries: the
 * flag, what kind of value it takes, and the field of the command's
 * arguments it sets.  The same table moves the command's flags out of the
 * options parser's way (lms__cli_extract: a flag may come anywhere on the
 * line) and parses them (lms__cli_parse), so what a command accepts and
 * what it refuses, with which message, has one answer.  Tables shared by
 * several commands (the workload's flags of sim, tune and report) are
 * parts of each command's spec, each with the offset of its fields. */
typedef enum lms__cli_kind {
  LMS__CLI_SWITCH, /* no value: the int field becomes (int)lo */
  LMS__CLI_INT,    /* a whole number from lo to hi, into an int */
  LMS__CLI_REAL,   /* a finite number above lo, up to hi, times scale (0:
                      1), into a double */
  LMS__CLI_PATH,   /* a path shorter than size bytes, into a char array */
  LMS__CLI_LIST,   /* a comma-separated list of at most max items, each
                      parsed by fn into an array of size-byte items; the
                      count (a size_t) at offset count */
  LMS__CLI_FN      /* the value parsed by fn */
} lms__cli_kind_t;

typedef struct lms__cli_flag lms__cli_flag_t;
/* Parses val for flag f into field: 0, or -1 with "lms CMD: ..." printed. */
typedef int (*lms__cli_parse_fn)(const char *cmd, const lms__cli_flag_t *f,
                                 const char *val, void *field);
struct lms__cli_flag {
  const char *flag;     /* "--batch" */
  lms__cli_kind_t kind;
  size_t at;            /* the field's offset in its part */
  double lo, hi;        /* INT, REAL: the range; SWITCH: lo is set */
  const char *accepted; /* INT, REAL: said of a bad value (NULL: the range) */
  size_t size;          /* PATH: the field's bytes; LIST: an item's */
  size_t count, max;    /* LIST: the count's offset, the most items */
  double scale;         /* REAL */
  lms__cli_parse_fn fn; /* FN, LIST */
};

#define LMS__CLI_PARTS 3
typedef struct lms__cli_spec {
  const char *cmd;  /* "bench net": messages start "lms bench net: " */
  const char *help; /* "bench": "see 'lms bench --help'" */
  struct {
    const lms__cli_flag_t *flags; /* NULL: no more parts */
    size_t n;
    size_t base;                  /* the part's offset in the arguments */
  } parts[LMS__CLI_PARTS];
  size_t input_at, input_size; /* the one word it takes (a char array);
                                  input_size 0: none */
  const char *input_what;      /* "the input" */
  int stop_at_dashes;          /* "--" ends the flags */
} lms__cli_spec_t;

/* Parses argv into args by spec: argc, or with stop_at_dashes the index
 * of "--"; -1 with the message printed.  seen (LMS__CLI_PARTS entries, or
 * NULL) gets the first flag given of each part. */
int lms__cli_parse(const lms__cli_spec_t *spec, int argc, char **argv,
                   void *args, const char **seen);
/* Every flag of spec and what its value must be, from the table. */
void lms__cli_flags_help(FILE *f, const lms__cli_spec_t *spec);
/* The specs of sim, tune, report, bench net and demo. */
void lms__simcmd_spec(lms__cli_spec_t *out);
void lms__tune_spec(lms__cli_spec_t *out);
void lms__report_spec(lms__cli_spec_t *out);
void lms__bench_net_spec(lms__cli_spec_t *out);
void lms__demo_spec(lms__cli_spec_t *out);
/* The whole number val for an INT entry f (kind LMS__CLI_INT): 0, or -1
 * with the message. */
int lms__cli_int(const char *cmd, const lms__cli_flag_t *f, const char *val,
                 long *out);

/* Copies the path `text` into buf of `size` bytes and returns 0; if it
 * does not fit, copies nothing, prints "lms CMD: WHAT: the path is N
 * characters long; at most M are accepted" and returns -1 (a path cut
 * short would name another file). */
int lms__cli_path(const char *cmd, const char *what, const char *text,
                  char *buf, size_t size);

/* Note [Values quoted in messages] (src/core/options.c): a value quoted in
 * a message formatted into LMS__ERRBUF bytes is shortened to its first
 * LMS__CLI_QUOTE_MAX characters and "...", so that what the message says
 * is accepted is never cut off.  Returns text, or buf (room for
 * LMS__CLI_QUOTE_MAX + 4 bytes) holding the shortened form. */
#define LMS__CLI_QUOTE_MAX 64

/* Note [Exit statuses] in main.c: a command that needs a GPU where there
 * is none (no device, or a build without CUDA). */
#define LMS__EXIT_NO_GPU 3
const char *lms__cli_quote(const char *text, char *buf);
/* Splits "--flag=value" into flag (size bytes) and the value, which it
 * returns; any other argument is copied whole and NULL returned. */
const char *lms__cli_split_flag(const char *arg, char *flag, size_t size);

/* lms__link_parse, with a long value shortened in the message. */
lms_status_t lms__cli_link(const char *text, lms__link_t *out, char *err);

/* 0 if the list `text` fits a buffer of `size` bytes; else prints "lms
 * CMD: FLAG: the list is N characters long; at most M are accepted" and
 * returns -1 (a list cut short would lose or change its last item). */
int lms__cli_list_fits(const char *cmd, const char *flag, const char *text,
                       size_t size);

/* The longest --out directory: room is left for the names of the files
 * written in it. */
#define LMS__CLI_OUT_MAX 200

/* Makes the directory dir (and its parents) unless it is there, and
 * checks that files can be made in it: 0, or -1 with err saying what was
 * wrong ("--out: ...").  Commands that write a directory call it before
 * their work, so that a bad --out is refused at once. */
int lms__cli_out_dir(const char *dir, char *err);

/* The file execvp would run for the program `name` into buf of `size`
 * bytes: name itself when it holds a '/', else the first executable
 * regular file of that name along PATH.  0, or -1 with "lms CMD: ..."
 * printed: an empty name, a file that is missing, not executable or a
 * directory, a name not found in PATH. */
int lms__cli_find_program(const char *cmd, const char *name, char *buf,
                          size_t size);

/* Moves the spec's flags (and their values) out of argv into out (room
 * for argc entries); stops at "--"; returns how many were moved. */
int lms__cli_extract(int *argc, char **argv, char **out,
                     const lms__cli_spec_t *spec);
typedef int (*lms__cli_cmd_t)(const lms_options_t *opts, int argc,
                              char **argv);
/* Runs cmd with the words, then the flags set aside. */
int lms__cli_run_with_flags(lms__cli_cmd_t cmd, const lms_options_t *opts,
                            int nwords, char **words, int nflags,
                            char **flags);

/* `lms demo`: returns the process exit status.  It ends by writing the
 * NVLink vs PCIe report of its scenario into report_dir. */
int lms__cli_demo(const lms_options_t *base, const char *report_dir);

/* ---- `lms sim` (sim.c) --------------------------------------------------- */

typedef struct lms__simcmd_args {
  char input[LMS__PATH_MAX];  /* a built-in's name or a trace path */
  lms__wl_params_t params;    /* train < 0: the default (training) */
  int iterations;             /* per run; the last is measured */
  int declare;                /* declare the schedule instead of learning */
  lms__link_t links[16];
  size_t nlinks;
  lms__policy_t policies[16];
  size_t npolicies;
  uint64_t capacities[16];
  size_t ncapacities;
  char json[LMS__PATH_MAX];   /* "" none, "-" stdout */
  int gpus_per_link;          /* GPUs sharing the host link, 1 alone */
  int in_step;                /* the model's GPUs begin iterations together */
  char link_group[64];        /* "" none; else this process is one rank of
                                 the group (Note [Ranks on one link]) */
  int link_wait;              /* seconds a rank waits for the others */
  int discard_dead;           /* lms_discard dead chunks after their last
                                 use (Note [Dead after the last use]) */
  int quiet;                  /* no progress lines on stderr (Note
                                 [Output of long runs] in sim.c) */
  double calibrate_busy;      /* 0 none; else the busy share (0..1) that
                                 the first run is calibrated to (Note
                                 [Calibrating compute to a busy share]) */
} lms__simcmd_args_t;

void lms__simcmd_args_init(lms__simcmd_args_t *a);
/* The workload's flags (--batch, --size, --train, --forward,
 * --device-tflops) into an lms__wl_params_t, shared by sim, tune and
 * report; sim's own into an lms__simcmd_args_t; tune's own (tune.c). */
extern const lms__cli_flag_t lms__cli_workload_flags[];
extern const size_t lms__cli_workload_nflags;
extern const lms__cli_flag_t lms__simcmd_flags[];
extern const size_t lms__simcmd_nflags;
extern const lms__cli_flag_t lms__tune_flags[];
extern const size_t lms__tune_nflags;
/* A LIST item: a link as --link takes it, into an lms__link_t. */
int lms__cli_link_item(const char *cmd, const lms__cli_flag_t *f,
                       const char *item, void *out);
/* Moves the flags of `lms sim` and `lms tune` (and their values) out of
 * argv into out (room for argc entries), so that the options parser sees
 * only its own; stops at "--"; returns how many were moved. */
int lms__simcmd_extract_args(int *argc, char **argv, char **out);
/* Parses the arguments after "sim"; prints why and returns -1 if bad. */
int lms__simcmd_parse_args(int argc, char **argv, lms__simcmd_args_t *a);
/* The options of one run of `lms sim`: base with the link, capacity and
 * policy, the bytes of copies not moved, -lms 0 unless it was given. */
void lms__simcmd_one_opts(lms__opts_t *o, const lms__opts_t *base,
                       const lms__link_t *link, uint64_t capacity,
                       lms__policy_t policy);
lms_status_t lms__simcmd_load(const lms__simcmd_args_t *a, lms__workload_t *w,
                           char *err);
lms_status_t lms__simcmd_in_memory(const lms__workload_t *w,
                                const lms__opts_t *base, int iterations,
                                lms__replay_result_t *out, char *err);
lms_status_t lms__simcmd_one(const lms__workload_t *w, const lms__opts_t *base,
                          const lms__link_t *link, uint64_t capacity,
                          lms__policy_t policy, int iterations, int declare,
                          lms__replay_result_t *out, char *err);
/* `lms bench link|net` (bench.c): returns the process exit status. */
int lms__cli_bench(const lms_options_t *base, int argc, char **argv);
/* `lms bench net` (bench_net.c), given the arguments after "net". */
int lms__bench_net(const lms_options_t *base, int argc, char **argv);
/* Where `lms bench net` runs, for lms version: this binary, the
 * lms-bench-net found, or why neither (Note [bench net in a binary of
 * its own] in CMakeLists.txt). */
const char *lms__bench_net_where(void);
/* The command line as lms was started, kept by main before any flag is
 * moved: `lms bench net` hands it whole to lms-bench-net. */
extern int lms__cli_argc;
extern char **lms__cli_argv;
/* The directory of the running binary, from /proc/self/exe (run.c); -1
 * with errno set when it cannot be read. */
int lms__cli_exe_dir(char *dir, size_t size);
/* Writes s as a JSON string, quoted and escaped (tracejson.c). */
void lms__cli_json_string(FILE *f, const char *s);
/* `lms bench overlap` (bench_overlap.c), given the arguments after it. */
int lms__bench_overlap(const lms_options_t *base, int argc, char **argv);
/* Moves the flags of `lms bench` (and their values) out of argv into out,
 * as lms__simcmd_extract_args does for `lms sim`. */
int lms__bench_extract_args(int *argc, char **argv, char **out);
/* `lms tune` (tune.c): returns the process exit status. */
int lms__cli_tune(const lms_options_t *base, int argc, char **argv);
/* `lms report` (report.c): returns the process exit status. */
int lms__cli_report(const lms_options_t *base, int argc, char **argv);
/* Moves the flags of `lms report` (and their values) out of argv into out,
 * as lms__simcmd_extract_args does for `lms sim`. */
int lms__report_extract_args(int *argc, char **argv, char **out);
/* `lms sim`: returns the process exit status. */
int lms__cli_sim(const lms_options_t *base, int argc, char **argv);

#endif
