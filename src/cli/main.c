/* main.c - the `lms` command: a thin front end over the library.
 *
 *   lms [OPTIONS] demo      the demonstration on the simulated device
 *   lms [OPTIONS] report    a report with charts of a run or a workload
 *   lms [OPTIONS] run -- CMD  a CUDA program under the LD_PRELOAD interposer
 *   lms [OPTIONS] options   print the effective settings
 *   lms help | --help       commands and every option
 *   lms COMMAND --help      that command
 *   lms version | --version
 *
 * Options may come before or after the command; LMS_* variables are read
 * first and flags override them.
 *
 * Note [Exit statuses]
 * One scheme for every command, so that scripts can tell a mistake in
 * what they asked from a failure of what was done:
 *   0  done;
 *   2  bad input (an option, a file, a program, a directory), with a
 *      message naming it and what is accepted.  It is found before any
 *      work starts: a check that can be made first is made first, so that
 *      no one waits through a run to learn that its output cannot be
 *      written;
 *   1  a failure during the work (a run that failed, a report that could
 *      not be written);
 *   3  no GPU here: a command that needs one (lms bench) found no CUDA
 *      device, or runs in a build without CUDA; not the user's mistake,
 *      so not 2, and nothing failed, so not 1 (LMS__EXIT_NO_GPU);
 *   `lms run` execs the program, so its status is the program's own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/run.h"
#include "core/options.h"
#include "device/device.h"

/* Each command's part of the help: `lms help` prints them all, `lms CMD
 * --help` its own. */
typedef struct cmd_help {
  const char *cmd;
  const char *text;
} cmd_help_t;

static const cmd_help_t g_help[] = {
    {"demo",
     "  demo [--out DIR]\n"
     "            forward and backward of a GoogleNet-shaped network larger "
     "than the GPU limit,\n"
     "            on the simulated device, over several links; ends by "
     "writing the\n"
     "            NVLink vs PCIe report in DIR (default lms-report)\n"},
    {"sim",
     "  sim WORKLOAD|TRACE [--batch N] [--size N] [--train|--forward]\n"
     "            [--links L,..] [--policies P,..] [--capacities SIZE,..]\n"
     "            [--iterations N] [--device-tflops T] [--declare] "
     "[--json PATH|-]\n"
     "            [--gpus-per-link N]  N GPUs (1-8) share one host link\n"
     "            [--in-step]  with it, their iterations begin together (one "
     "job's ranks)\n"
     "            [--link-group NAME [--link-wait S]]  this process is one of "
     "the N,\n"
     "            each its own process with the same NAME, sharing the link "
     "for real\n"
     "            [--discard-dead]  lms_discard each blob after its last "
     "use\n"
     "            [--calibrate-busy PCT]  scale compute so that the first "
     "run is busy\n"
     "            PCT % of its time, as a measured profile says\n"
     "            [--quiet]  no progress lines on stderr (written once a "
     "sweep takes\n"
     "            more than 2 s); rows are written as each run ends\n"
     "            replay a built-in workload (googlenet, unet3d) or a trace "
     "on the\n"
     "            simulated device and compare policies and links, each "
     "run's settled\n"
     "            iteration (or the Nth) against the least time any policy "
     "can take\n"},
    {"bench",
     "  bench link\n"
     "            on a GPU: host-to-device, device-to-host and both, 64 KiB "
     "to 1 GiB,\n"
     "            through the swap path and plain cudaMemcpyAsync\n"
     "  bench net [--batch N,..] [--size N] [--forward|--train] "
     "[--iterations N]\n"
     "            [--configs plain,lms:KB,..] [--trace-dir DIR] "
     "[--discard]\n"
     "            on a GPU: GoogLeNet on cuDNN and cuBLAS with and without "
     "lms,\n"
     "            under --gpu-limit (default 16GiB), with the simulator's "
     "prediction\n"
     "  bench overlap\n"
     "            on a GPU: a compute-bound loop over twice --gpu-limit "
     "(default 4GiB),\n"
     "            in memory and through lms\n"},
    {"tune",
     "  tune --workload NAME|TRACE [sim flags] | tune [--repeat N] -- CMD "
     "ARGS\n"
     "            [--lms-values KB,..] [--frac-values F,..] "
     "[--window-values W;..]\n"
     "            [--json PATH|-]\n"
     "            find the fastest -lms, -lms_frac and prefetch window; a "
     "program's\n"
     "            settings each run N times (their median), a failure shown "
     "with\n"
     "            the end of its stderr\n"},
    {"report",
     "  report WORKLOAD|TRACE | report --stats RUN.json --trace RUN.trace\n"
     "            [--out DIR] [--steps FIRST:COUNT] [--links L,..] "
     "[sim flags]\n"
     "            [--compare-links [--native LINK=STATS] "
     "[--emulated LINK=STATS]]\n"
     "            a Markdown and HTML report with PNG charts (gnuplot): a "
     "timeline of\n"
     "            kernels and copies, bytes, time and GPU busy per link; "
     "measured vs\n"
     "            predicted; --compare-links: NVLink vs PCIe side by side\n"
     "  report --ranks STATS-%r.json|A.json,B.json,.. [--out DIR]\n"
     "            a job's ranks' stats files in one table, a row per rank "
     "and the\n"
     "            node's, with the slowest rank against the fastest\n"
     "  report --bench-link FILE [--out DIR]\n"
     "            what `lms bench link` printed (saved to FILE): GB/s "
     "against chunk\n"
     "            size, plain copies against the swap path, and a verdict\n"},
    {"run",
     "  run [--stats] -- CMD ARGS\n"
     "            run an unmodified CUDA program under --gpu-limit "
     "(liblms_preload.so);\n"
     "            --stats prints a one-line summary at its exit\n"},
    {"options",
     "  options [--json]\n"
     "            print the effective settings (defaults, LMS_* variables, "
     "flags)\n"},
    {"help", "  help      this text; lms COMMAND --help: that command's\n"},
    {"version", "  version   the version (also lms --version)\n"},
};

#define NCOMMANDS (sizeof g_help / sizeof g_help[0])

static const char g_exit_help[] =
    "exit status: 0 done; 2 bad input, refused before any work starts; 1 a "
    "failure\n"
    "            during the work; 3 no GPU here for a command that needs "
    "one;\n"
    "            lms run: the program's own\n";

static int is_command(const char *word) {
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (strcmp(word, g_help[i].cmd) == 0) return 1;
  return 0;
}

/* `lms help`: every command, then every option. */
static void usage(FILE *f) {
  fprintf(f, "usage: lms [OPTIONS] COMMAND\ncommands:\n");
  for (size_t i = 0; i < NCOMMANDS; i++) fputs(g_help[i].text, f);
  fprintf(f, "%s\n", g_exit_help);
  char buf[8192];
  lms_options_help(buf, sizeof buf);
  fputs(buf, f);
}

/* The table of flags of `lms CMD`, for its help. */
static int command_spec(const char *cmd, lms__cli_spec_t *out) {
  static const struct {
    const char *cmd;
    void (*get)(lms__cli_spec_t *);
  } kSpecs[] = {{"sim", lms__simcmd_spec},   {"tune", lms__tune_spec},
                {"report", lms__report_spec}, {"bench", lms__bench_net_spec},
                {"demo", lms__demo_spec}, {"run", lms__run_spec}};
  for (size_t i = 0; i < sizeof kSpecs / sizeof kSpecs[0]; i++)
    if (strcmp(cmd, kSpecs[i].cmd) == 0) {
      kSpecs[i].get(out);
      return 0;
    }
  return -1;
}

/* `lms CMD --help`: that command, then where the options common to every
 * command are. */
static void command_usage(FILE *f, const char *cmd) {
  fprintf(f, "usage: lms [OPTIONS] %s\n", cmd);
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (strcmp(cmd, g_help[i].cmd) == 0) fputs(g_help[i].text, f);
  lms__cli_spec_t spec;
  if (command_spec(cmd, &spec) == 0) lms__cli_flags_help(f, &spec);
  char buf[2048];
  lms__options_brief(buf, sizeof buf);
  fprintf(f,
          "OPTIONS, for every command (lms help says what each does and "
          "its default):\n%s%s",
          buf, g_exit_help);
}

/* The command word: the first word that names a command, past the values
 * of the options before it, and before "--" (what follows is another
 * program's).  A word that names a command later on is an argument
 * ("lms report googlenet --out sim"); -1 if there is none. */
static int find_command(int argc, char **argv) {
  for (int i = 1; i < argc;) {
    int span = lms__options_arg_span(argc, argv, i);
    if (span < 0) return -1;
    if (span == 0 && is_command(argv[i])) return i;
    i += span > 0 ? span : 1;
  }
  return -1;
}

/* lms version: the version, then what this build can drive: the CUDA
 * device and the architectures its kernels were built for (Note [CUDA
 * architectures] in CMakeLists.txt), and where `lms bench net` runs. */
static void print_version(void) {
  printf("lms %d.%d.%d\n", LMS_VERSION_MAJOR, LMS_VERSION_MINOR,
         LMS_VERSION_PATCH);
#ifdef LMS_HAVE_CUDA
  printf("cuda: yes, kernels for architectures %s\n", LMS_CUDA_ARCHS);
#else
  printf("cuda: no (built without nvcc): the simulated device only\n");
#endif
  printf("bench net: %s\n", lms__bench_net_where());
}

int lms__cli_argc;
char **lms__cli_argv;

int main(int argc, char **argv) {
  /* Tables come out a row at a time even into a pipe or a file, where
   * stdout would otherwise hold them until exit (Note [Output of long
   * runs] in sim.c). */
  setvbuf(stdout, NULL, _IOLBF, 0);
  /* Kept before any flag is moved (lms__cli_argv in cli.h). */
  char **typed = malloc(((size_t)argc + 1) * sizeof *typed);
  if (typed == NULL) {
    fprintf(stderr, "lms: out of memory\n");
    return 1;
  }
  memcpy(typed, argv, ((size_t)argc + 1) * sizeof *typed);
  lms__cli_argc = argc;
  lms__cli_argv = typed;
  lms_options_t *opts = NULL;
  if (lms_options_create(&opts) != LMS_OK) {
    fprintf(stderr, "lms: out of memory\n");
    return 1;
  }
  int ci = find_command(argc, argv);
  const char *word = ci > 0 ? argv[ci] : "";
  /* What follows "--" is another program's (tune, run). */
  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      if (ci > 0 && strcmp(word, "help") != 0) command_usage(stdout, word);
      else usage(stdout);
      lms_options_destroy(opts);
      return 0;
    }
    if (strcmp(argv[i], "--version") == 0) {
      print_version();
      lms_options_destroy(opts);
      return 0;
    }
  }
  /* `lms sim` has flags of its own: set them aside for it. */
  int is_sim = strcmp(word, "sim") == 0 || strcmp(word, "tune") == 0;
  int is_report = strcmp(word, "report") == 0 || strcmp(word, "demo") == 0;
  char **sim_argv = calloc((size_t)argc + 1, sizeof *sim_argv);
  int sim_argc = 0;
  if (sim_argv == NULL) {
    fprintf(stderr, "lms: out of memory\n");
    lms_options_destroy(opts);
    return 1;
  }
  int is_bench = strcmp(word, "bench") == 0, is_run = strcmp(word, "run") == 0;
  /* `lms options --json`: its one flag, set aside before the options are
   * parsed. */
  int options_json = 0;
  if (strcmp(word, "options") == 0) {
    static const lms__cli_flag_t kOptions[] = {
        {.flag = "--json", .kind = LMS__CLI_SWITCH, .at = 0, .lo = 1}};
    const lms__cli_spec_t spec = {
        .cmd = "options", .help = "options", .parts = {{kOptions, 1, 0}}};
    int n = lms__cli_extract(&argc, argv, sim_argv, &spec);
    if (lms__cli_parse(&spec, n, sim_argv, &options_json, NULL) < 0) {
      lms_options_destroy(opts);
      free(sim_argv);
      return 2;
    }
  }
  char **given = NULL; /* `lms run`: the command line as typed */
  if (is_run) {
    sim_argc = lms__run_extract_args(&argc, argv, sim_argv);
    given = calloc((size_t)argc + 1, sizeof *given);
    if (given == NULL) {
      fprintf(stderr, "lms: out of memory\n");
      lms_options_destroy(opts);
      free(sim_argv);
      return 1;
    }
    memcpy(given, argv, (size_t)argc * sizeof *given);
  } else if (is_sim) sim_argc = lms__simcmd_extract_args(&argc, argv, sim_argv);
  else if (is_report)
    sim_argc = lms__report_extract_args(&argc, argv, sim_argv);
  else if (is_bench) sim_argc = lms__bench_extract_args(&argc, argv, sim_argv);
  if (lms_options_load_env(opts) != LMS_OK ||
      lms_options_parse_args(opts, &argc, argv) != LMS_OK) {
    fprintf(stderr, "lms: %s\n", lms_options_error(opts));
    lms_options_destroy(opts);
    free(sim_argv);
    free(given);
    return 2;
  }
  /* --fail's operations are the device's: the options parser checks only
   * the list's form, and the device would refuse an unknown name when a
   * context is made, after a command may have worked for minutes and with
   * the status of a failed run.  Bad input is refused before any work. */
  if (opts->v.fail != NULL && opts->v.fail[0] != '\0') {
    uint64_t fail_op[LMS__DEVOP_COUNT] = {0}, fail_any = 0;
    char err[LMS__ERRBUF] = "";
    if (lms__fault_spec_parse(opts->v.fail, fail_op, &fail_any, err) !=
        LMS_OK) {
      fprintf(stderr, "lms: %s: %s\n",
              opts->v.source[LMS__OPT_fail] == LMS__SRC_ENV ? "LMS_FAIL"
                                                             : "--fail",
              err);
      lms_options_destroy(opts);
      free(sim_argv);
      free(given);
      return 2;
    }
  }
  int rc;
  const char *cmd = argc > 1 ? argv[1] : "";
  if (strcmp(cmd, "tune") == 0) {
    /* Its words, then its flags, then "--" and the program, if any. */
    char **all = calloc((size_t)argc + (size_t)sim_argc + 1, sizeof *all);
    int n = 0, i = 2;
    if (all == NULL) {
      fprintf(stderr, "lms: out of memory\n");
      rc = 1;
    } else {
      for (; i < argc && strcmp(argv[i], "--") != 0; i++) all[n++] = argv[i];
      for (int k = 0; k < sim_argc; k++) all[n++] = sim_argv[k];
      for (; i < argc; i++) all[n++] = argv[i];
      rc = lms__cli_tune(opts, n, all);
      free(all);
    }
  } else if (strcmp(cmd, "bench") == 0 || strcmp(cmd, "sim") == 0 ||
             strcmp(cmd, "report") == 0) {
    /* Its words first, then its flags. */
    lms__cli_cmd_t fn = cmd[0] == 'b'   ? lms__cli_bench
                        : cmd[0] == 's' ? lms__cli_sim
                                        : lms__cli_report;
    rc = lms__cli_run_with_flags(fn, opts, argc - 2, argv + 2, sim_argc,
                                 sim_argv);
  } else if (strcmp(cmd, "run") == 0) {
    rc = lms__cli_run(argc - 2, argv + 2, sim_argc, sim_argv, given);
  } else if (strcmp(cmd, "demo") == 0 && argc == 2) {
    /* Its one flag, --out DIR, was set aside with report's. */
    lms__cli_spec_t demo;
    lms__demo_spec(&demo);
    char out[LMS__CLI_OUT_MAX + 1] = "lms-report";
    rc = lms__cli_parse(&demo, sim_argc, sim_argv, out, NULL) < 0
             ? 2
             : lms__cli_demo(opts, out);
  } else if (argc > 2) {
    fprintf(stderr, "lms: unexpected argument '%s' after '%s'; see 'lms help'\n",
            argv[2], cmd);
    rc = 2;
  } else if (strcmp(cmd, "options") == 0) {
    char buf[8192];
    if (options_json) lms__options_describe_json(opts, buf, sizeof buf);
    else lms_options_describe(opts, buf, sizeof buf);
    fputs(buf, stdout);
    rc = 0;
  } else if (strcmp(cmd, "help") == 0) {
    usage(stdout);
    rc = 0;
  } else if (strcmp(cmd, "version") == 0) {
    print_version();
    rc = 0;
  } else {
    if (cmd[0] == '\0')
      fprintf(stderr, "lms: no command given; accepted: demo, sim, tune, "
                      "bench, report, run, options, help, version\n");
    else
      fprintf(stderr, "lms: unknown command '%s'; accepted: demo, sim, "
                      "tune, bench, report, run, options, help, version\n", cmd);
    rc = 2;
  }
  lms_options_destroy(opts);
  free(sim_argv);
  free(given);
  return rc;
}
