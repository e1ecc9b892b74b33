/* args.c - setting a command's own flags aside before the options parser
 * sees the command line (lms__cli_extract), and handing them back to the
 * command after its words (lms__cli_run_with_flags).
 *
 * The runtime's options parser refuses flags it does not know, so each
 * command that has flags of its own (sim, tune, bench, report, demo)
 * moves them, with their values, out of argv first.  "--flag value" and
 * "--flag=value" are both recognised; "--" ends the search: what follows
 * belongs to another program. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int lms__cli_path(const char *cmd, const char *what, const char *text,
                  char *buf, size_t size) {
  size_t n = strlen(text);
  if (n >= size) {
    fprintf(stderr, "lms %s: %s: the path is %zu characters long; at most "
                    "%zu are accepted\n", cmd, what, n, size - 1);
    return -1;
  }
  memcpy(buf, text, n + 1);
  return 0;
}

int lms__cli_extract(int *argc, char **argv, char **out,
                     const lms__cli_flag_t *flags, size_t nflags) {
  int n = 0, k = 1;
  for (int i = 1; i < *argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--") == 0) {
      while (i < *argc) argv[k++] = argv[i++];
      break;
    }
    int taken = 0;
    for (size_t f = 0; f < nflags; f++) {
      size_t len = strlen(flags[f].flag);
      if (strncmp(arg, flags[f].flag, len) != 0) continue;
      if (arg[len] == '=') {
        /* A value given to a flag that takes none is the command's to
         * refuse, by the flag's name. */
        out[n++] = argv[i];
        taken = 1;
      } else if (arg[len] == '\0') {
        out[n++] = argv[i];
        if (flags[f].value && i + 1 < *argc) out[n++] = argv[++i];
        taken = 1;
      }
      break;
    }
    if (!taken) argv[k++] = argv[i];
  }
  *argc = k;
  argv[k] = NULL;
  return n;
}

int lms__cli_run_with_flags(lms__cli_cmd_t cmd, const lms_options_t *opts,
                            int nwords, char **words, int nflags,
                            char **flags) {
  /* The words first, so that a flag missing its value is not given the
   * next word. */
  char **all = calloc((size_t)nwords + (size_t)nflags + 1, sizeof *all);
  if (all == NULL) {
    fprintf(stderr, "lms: out of memory\n");
    return 1;
  }
  int n = 0;
  for (int i = 0; i < nwords; i++) all[n++] = words[i];
  for (int i = 0; i < nflags; i++) all[n++] = flags[i];
  int rc = cmd(opts, n, all);
  free(all);
  return rc;
}
