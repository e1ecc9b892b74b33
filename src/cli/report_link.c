/* report_link.c - `lms report --bench-link FILE`: what `lms bench link`
 * printed, as a chart of bandwidth against chunk size and a verdict
 * (Note [A link report]).
 *
 * Note [A link report]
 * `lms bench link` prints, for chunk sizes from 64 KiB to 1 GiB, plain
 * pinned copies against the swap path, host to device, device to host and
 * both ways at once (bench.c).  A person reading it wants two things: from
 * which chunk size on the swap path keeps up with the link (so which -lms
 * threshold is worth it), and whether it does at large chunks (the target
 * is 0.95 of the plain copy both ways from 64 MiB on).  A ratio over 1.25
 * cannot be a copy (the chunk was on the device already, as in the
 * H100's first runs, before the benchmark ran without a schedule), and
 * the verdict says the direction was not measured.  So the report draws
 * GB/s against chunk size, on a log scale, one line per path and
 * direction, and says both things in words above the table.  The file is
 * read as `lms bench link` writes it: a row is a size with its unit and
 * nine numbers; other lines (the title, the column heads) are skipped, and
 * a row that starts like one but is not is an error naming its line. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/plot.h"
#include "cli/report.h"

#define MAX_ROWS 64
#define TARGET_RATIO 0.95
#define TARGET_BYTES (64ull << 20)
/* A swap path this much faster than a plain copy moved nothing. */
#define TOO_FAST 1.25

typedef struct link_row {
  uint64_t bytes;
  double v[9]; /* h2d plain, lms, ratio; d2h ...; both ... */
} link_row_t;

/* Reads the rows of a `lms bench link` output: how many, or -1 with err. */
static int read_rows(const char *path, link_row_t *rows, char *err) {
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    lms__errf(err, "--bench-link: cannot read '%s': %s", path,
              strerror(errno));
    return -1;
  }
  char line[512];
  int n = 0, lineno = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    lineno++;
    char unit[8];
    double size;
    int used = 0;
    if (sscanf(line, " %lf %7s%n", &size, unit, &used) != 2) continue;
    uint64_t mult = strcmp(unit, "KiB") == 0   ? 1ull << 10
                    : strcmp(unit, "MiB") == 0 ? 1ull << 20
                    : strcmp(unit, "GiB") == 0 ? 1ull << 30
                                               : 0;
    link_row_t r = {0};
    int got = sscanf(line + used, "%lf %lf %lf %lf %lf %lf %lf %lf %lf",
                     &r.v[0], &r.v[1], &r.v[2], &r.v[3], &r.v[4], &r.v[5],
                     &r.v[6], &r.v[7], &r.v[8]);
    int finite = 1;
    for (int i = 0; i < 9; i++) finite &= isfinite(r.v[i]) && r.v[i] >= 0;
    if (mult == 0 || got != 9 || !finite || !(size > 0) || size > 1e6) {
      lms__errf(err, "--bench-link: %s:%d is not a row of `lms bench link` "
                     "(a chunk size in KiB, MiB or GiB and nine figures, "
                     "GB/s and ratios)", path, lineno);
      fclose(f);
      return -1;
    }
    if (n == MAX_ROWS) {
      lms__errf(err, "--bench-link: %s has more than %d rows", path,
                MAX_ROWS);
      fclose(f);
      return -1;
    }
    r.bytes = (uint64_t)llround(size * (double)mult);
    rows[n++] = r;
  }
  fclose(f);
  if (n == 0) lms__errf(err, "--bench-link: %s holds no row of `lms bench "
                             "link` output", path);
  return n > 0 ? n : -1;
}

static void size_text(uint64_t b, char *buf, size_t n) {
  if (b >= 1ull << 30) snprintf(buf, n, "%g GiB", (double)b / (1ull << 30));
  else if (b >= 1ull << 20) snprintf(buf, n, "%g MiB", (double)b / (1ull << 20));
  else snprintf(buf, n, "%g KiB", (double)b / 1024);
}

/* link.dat and link.gp; the PNG if gnuplot draws it (*drawn, else why). */
static int chart(const char *dir, const link_row_t *rows, int n, int *drawn,
                 char *why, size_t why_size, char *err) {
  FILE *f = lms__report_open_in(dir, "link.dat", err);
  if (f == NULL) return -1;
  fprintf(f, "# chunk_mib h2d_plain h2d_lms h2d_ratio d2h_plain d2h_lms "
             "d2h_ratio both_plain both_lms both_ratio (GB/s, lms over plain)\n");
  fprintf(f, "# '-': a swap path figure over %.2fx its plain copy, which "
             "moved nothing (left out of the chart)\n", TOO_FAST);
  for (int i = 0; i < n; i++) {
    fprintf(f, "%.6f", (double)rows[i].bytes / (1ull << 20));
    for (int k = 0; k < 9; k++) {
      /* k 1 and 4: a swap path's GB/s, its ratio beside it. */
      int bogus = (k == 1 || k == 4) && rows[i].v[k + 1] > TOO_FAST;
      if (bogus) fprintf(f, " -");
      else fprintf(f, " %.4f", rows[i].v[k]);
    }
    fputc('\n', f);
  }
  if (fclose(f) != 0) {
    lms__errf(err, "writing '%s/link.dat' failed", dir);
    return -1;
  }
  FILE *g = lms__report_open_in(dir, "link.gp", err);
  if (g == NULL) return -1;
  fprintf(g,
          "# GB/s against chunk size, plain pinned copies against the swap "
          "path.  Redraw: gnuplot link.gp\n"
          "set terminal pngcairo size 1100,460 font 'sans,10' noenhanced\n"
          "set output 'link.png'\nset grid lc rgb '#dddddd'\n"
          "set datafile missing '-'\n"
          "set logscale x 2\nset xlabel 'chunk size (MiB)'\n"
          "set ylabel 'GB/s'\nset yrange [0:*]\nset key outside right top\n"
          "set title 'lms bench link: the swap path against plain pinned "
          "copies'\n"
          "plot 'link.dat' using 1:2 with linespoints lw 2 lc rgb '#1565c0' "
          "dt 2 title 'host to device, plain', "
          "'' using 1:3 with linespoints lw 2 lc rgb '#1565c0' title 'host "
          "to device, lms', "
          "'' using 1:5 with linespoints lw 2 lc rgb '#ef6c00' dt 2 title "
          "'device to host, plain', "
          "'' using 1:6 with linespoints lw 2 lc rgb '#ef6c00' title "
          "'device to host, lms', "
          "'' using 1:8 with linespoints lw 1 lc rgb '#6a1b9a' dt 2 title "
          "'both ways, plain', "
          "'' using 1:9 with linespoints lw 1 lc rgb '#6a1b9a' title 'both "
          "ways, lms'\n");
  if (fclose(g) != 0) {
    lms__errf(err, "writing '%s/link.gp' failed", dir);
    return -1;
  }
  lms__plot_t plot;
  lms__plot_find(&plot);
  *drawn = 0;
  if (!plot.available) {
    snprintf(why, why_size, "%s", plot.why);
  } else if (lms__plot_run(&plot, dir, "link.gp", "link.png", why,
                           why_size) == 0) {
    *drawn = 1;
  }
  return 0;
}

/* The smallest chunk from which on every ratio of direction k (0 h2d, 1
 * d2h) is at least the target; 0 when none. */
static uint64_t keeps_up_from(const link_row_t *rows, int n, int k) {
  uint64_t from = 0;
  for (int i = n - 1; i >= 0; i--) {
    if (rows[i].v[3 * k + 2] < TARGET_RATIO) break;
    from = rows[i].bytes;
  }
  return from;
}

int lms__report_link(const char *file, const char *out) {
  char err[LMS__ERRBUF] = "";
  link_row_t rows[MAX_ROWS];
  lms__doc_t d = {NULL, NULL};
  FILE *js = NULL;
  int rc = 2;
  int n = read_rows(file, rows, err);
  if (n < 0) goto done;
  rc = 1;
  if (lms__doc_open(&d, &js, out, "lms report: the swap path on the link",
                    err) != 0)
    goto done;
  int drawn = 0;
  char why[640] = "";
  if (chart(out, rows, n, &drawn, why, sizeof why, err) != 0) goto done;
  lms__doc_para(&d, "From `%s`, as `lms bench link` printed it: plain pinned "
                    "copies against the swap path (a swap-in, a write-back, "
                    "both at once), GB/s.", file);
  /* The verdict: the large chunks against the target, and from where. */
  double lo[2] = {INFINITY, INFINITY}, hi[2] = {0, 0};
  int large = 0;
  for (int i = 0; i < n; i++) {
    if (rows[i].bytes < TARGET_BYTES) continue;
    large++;
    for (int k = 0; k < 2; k++) {
      double r = rows[i].v[3 * k + 2];
      if (r < lo[k]) lo[k] = r;
      if (r > hi[k]) hi[k] = r;
    }
  }
  lms__doc_heading(&d, 2, "Verdict");
  static const char *const dir_name[2] = {"host to device", "device to host"};
  lms__doc_list_open(&d);
  for (int k = 0; k < 2; k++) {
    uint64_t from = keeps_up_from(rows, n, k);
    char fs[32];
    size_text(from, fs, sizeof fs);
    int fast = 0;
    for (int i = 0; i < n; i++) fast += rows[i].v[3 * k + 2] > TOO_FAST;
    if (fast > 0)
      lms__doc_item(&d, "**%s**: not measured: at %d of the %d sizes the swap "
                        "path read faster than %.2fx the plain copy over the "
                        "same link, which no copy can; those chunks were "
                        "already on the device when timed.",
                    dir_name[k], fast, n, TOO_FAST);
    else if (large == 0)
      lms__doc_item(&d, "**%s**: no chunk of 64 MiB or more was measured.",
                    dir_name[k]);
    else
      lms__doc_item(&d, "**%s**: %.3f-%.3f of plain copies at 64 MiB and "
                        "more (target %.2f: %s); the swap path keeps up "
                        "%s%s.",
                    dir_name[k], lo[k], hi[k], TARGET_RATIO,
                    lo[k] >= TARGET_RATIO ? "met" : "not met",
                    from ? "from chunks of " : "at no measured size",
                    from ? fs : "");
  }
  lms__doc_list_close(&d);
  static const char *const head[] = {
      "chunk", "H2D plain", "lms", "ratio", "D2H plain", "lms", "ratio",
      "both plain", "lms", "ratio"};
  lms__doc_table_head(&d, 10, head);
  fprintf(js, "{\"file\": ");
  lms__cli_json_string(js, file);
  fprintf(js, ", \"target_ratio\": %.2f, \"rows\": [", TARGET_RATIO);
  for (int i = 0; i < n; i++) {
    char fs[32];
    size_text(rows[i].bytes, fs, sizeof fs);
    const double *v = rows[i].v;
    lms__doc_table_row(&d, "%s\t%.2f\t%.2f\t%.3f\t%.2f\t%.2f\t%.3f\t%.2f\t"
                           "%.2f\t%.3f", fs, v[0], v[1], v[2], v[3], v[4],
                       v[5], v[6], v[7], v[8]);
    fprintf(js, "%s\n  {\"bytes\": %llu, \"h2d_plain\": %.4f, \"h2d_lms\": "
                "%.4f, \"h2d_ratio\": %.4f, \"d2h_plain\": %.4f, "
                "\"d2h_lms\": %.4f, \"d2h_ratio\": %.4f, \"both_plain\": "
                "%.4f, \"both_lms\": %.4f, \"both_ratio\": %.4f}",
            i ? "," : "", (unsigned long long)rows[i].bytes, v[0], v[1],
            v[2], v[3], v[4], v[5], v[6], v[7], v[8]);
  }
  fprintf(js, "\n]}\n");
  lms__doc_table_end(&d);
  lms__doc_image(&d, "link.png", "GB/s against chunk size", drawn, why);
  printf("lms report: the link from %s: wrote %s/report.md, %s/report.html, "
         "%s/report.json%s\n", file, out, out, out,
         drawn ? ", the chart link.png" : "");
  rc = 0;
done:
  if (rc != 0) fprintf(stderr, "lms report: %s\n", err);
  lms__doc_close(&d, js);
  return rc;
}
