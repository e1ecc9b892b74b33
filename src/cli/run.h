/* run.h - `lms run` (run.c), the front end of the LD_PRELOAD interposer. */
#ifndef LMS_CLI_RUN_H
#define LMS_CLI_RUN_H

#include "cli/cli.h"

/* Moves `lms run`'s own flag (--stats, after the word "run" and before
 * "--") out of argv into out, as lms__simcmd_extract_args does for `lms sim`;
 * returns how many were moved. */
int lms__run_extract_args(int *argc, char **argv, char **out);
/* The table of its flags (Note [A command's flags] in cli.h). */
void lms__run_spec(lms__cli_spec_t *out);
/* Runs words (which must be "--" CMD ARGS) under the interposer with the
 * environment twins of the options in given (the command line as typed,
 * NULL-terminated).  Returns only on failure, with exit status 2. */
int lms__cli_run(int nwords, char **words, int nflags, char **flags,
                 char **given);

#endif
