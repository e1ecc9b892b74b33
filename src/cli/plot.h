/* plot.h - charts for `lms report`, drawn by gnuplot.
 *
 * lms writes each chart as a gnuplot script and a data file next to the
 * PNG it makes, so that a person can change and redraw it, and runs the
 * Debian gnuplot (package gnuplot-nox) on the script.  The report never
 * depends on gnuplot being there: without it the scripts and data are
 * still written and the report says why the PNGs are missing.
 *
 * Which gnuplot: LMS_GNUPLOT names the program when set (a path, or a name
 * looked up in PATH); otherwise "gnuplot" in PATH. */
#ifndef LMS_CLI_PLOT_H
#define LMS_CLI_PLOT_H

#include <stddef.h>

typedef struct lms__plot {
  int available;      /* 1: gnuplot was found and can run */
  char program[512];  /* its path */
  char why[512];      /* when not available: why, for the report */
} lms__plot_t;

/* Looks for gnuplot; fills p->why when it is not there. */
void lms__plot_find(lms__plot_t *p);

/* Runs `gnuplot SCRIPT` in dir and checks that it wrote png, a PNG file,
 * there.  0 on success; -1 with the reason in why (why_size bytes),
 * including the end of gnuplot's own message. */
int lms__plot_run(const lms__plot_t *p, const char *dir, const char *script,
                  const char *png, char *why, size_t why_size);

/* 1 if path is a readable file that starts with the PNG signature. */
int lms__plot_is_png(const char *path);

#endif
