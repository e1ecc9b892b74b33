/* report_ranks.c - `lms report --ranks PATTERN|LIST`: the stats files the
 * ranks of one job wrote, one row per rank and a row for the node (Note
 * [A report per rank]).
 *
 * Note [A report per rank]
 * Under torchrun or mpirun every process's lms writes its own stats file
 * (`--stats run-%r.json`, Note [One lms per rank] in core/rank.h).  What a
 * person asks of them is whether the ranks behaved alike, and what the
 * node as a whole took: a rank that moved twice the bytes of the others
 * or waited longer for data holds the whole job back at every collective,
 * and the pinned memory of all ranks together is what the host must hold.
 * So the report reads every file, strictly (statsfile.c), and writes one
 * table: a row per rank with its time, bytes each way, device and pinned
 * peaks, prefetch outcomes and waits, then the node's row: time and
 * device peak the largest of the ranks' (each rank has its own GPU, and
 * the slowest rank sets the pace), counts and bytes their sum, and pinned
 * memory the sum of the ranks' peaks, which bounds what they held at once
 * (they need not have peaked together).  Above it, the spread: the slowest
 * rank against the fastest, and the most bytes moved against the least.
 *
 * PATTERN holds %r, as the runs were told: ranks 0, 1, ... are read until
 * the first missing file (rank 0's must be there).  A LIST names the
 * files, comma-separated, rank 0 first.  Files of a whole run and of
 * measured iterations (Note [A measured iteration's stats]) are not
 * mixed: their figures would not compare. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/report.h"

#define MAX_RANKS 1024

static double ms(int64_t ns) { return (double)ns / 1e6; }
static double gb(int64_t b) { return (double)b / 1e9; }
static double gib(int64_t b) { return (double)b / (double)(1ull << 30); }

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* The path of rank r under a pattern with %r (and %% for a percent). */
static int rank_path(const char *pattern, int r, char *out, size_t size) {
  size_t o = 0;
  for (const char *p = pattern; *p != '\0'; p++) {
    char num[16];
    const char *add = p;
    size_t len = 1;
    if (p[0] == '%' && p[1] == 'r') {
      snprintf(num, sizeof num, "%d", r);
      add = num;
      len = strlen(num);
      p++;
    } else if (p[0] == '%' && p[1] == '%') {
      p++;
    }
    if (o + len >= size) return -1;
    memcpy(out + o, add, len);
    o += len;
  }
  out[o] = '\0';
  return 0;
}

/* Reads the ranks' files into sf (at most MAX_RANKS); returns how many,
 * or -1 with err. */
static int read_ranks(const char *spec, lms__stats_file_t *sf, char *err) {
  int n = 0;
  char path[LMS__PATH_MAX];
  if (strstr(spec, "%r") != NULL) {
    for (; n < MAX_RANKS; n++) {
      if (rank_path(spec, n, path, sizeof path) != 0) {
        lms__errf(err, "--ranks: the path of rank %d is longer than %d bytes",
                  n, LMS__PATH_MAX - 1);
        return -1;
      }
      if (n > 0 && !exists(path)) break;
      if (lms__stats_file_read(path, &sf[n], err) != LMS_OK) return -1;
    }
    return n;
  }
  const char *p = spec;
  while (*p != '\0') {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == 0 || len >= sizeof path) {
      lms__errf(err, "--ranks: expected run-%%r.json (a pattern with %%r) or "
                     "a comma-separated list of stats files, got '%s'", spec);
      return -1;
    }
    if (n == MAX_RANKS) {
      lms__errf(err, "--ranks: at most %d ranks", MAX_RANKS);
      return -1;
    }
    snprintf(path, sizeof path, "%.*s", (int)len, p);
    if (lms__stats_file_read(path, &sf[n], err) != LMS_OK) return -1;
    n++;
    p += len + (comma ? 1 : 0);
  }
  return n;
}

static const char *const kHead[] = {
    "rank", "time ms", "H2D GB", "D2H GB", "device peak GiB",
    "pinned peak GiB", "prefetch hits", "late", "wasted", "misses",
    "stall ms", "out of memory"};

/* One row: a rank's (label its number) or the node's. */
static void row(lms__doc_t *d, FILE *js, const char *label,
                const lms_stats_t *s, int first) {
  lms__doc_table_row(d, "%s\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%lld\t%lld\t%lld\t"
                        "%lld\t%.1f\t%lld",
                     label, ms((int64_t)s->elapsed_ns), gb(s->bytes_h2d.total),
                     gb(s->bytes_d2h.total), gib(s->device_reserved.peak),
                     gib(s->host_pinned.peak),
                     (long long)s->prefetch_hits.total,
                     (long long)s->prefetch_late.total,
                     (long long)s->prefetch_wasted.total,
                     (long long)s->demand_misses.total, ms(s->stall_ns.total),
                     (long long)(s->device_ooms.total + s->host_ooms.total));
  fprintf(js,
          "%s\n  {\"rank\": \"%s\", \"elapsed_ns\": %llu, \"bytes_h2d\": %lld, "
          "\"bytes_d2h\": %lld, \"device_peak\": %lld, \"pinned_peak\": %lld, "
          "\"prefetch_hits\": %lld, \"prefetch_late\": %lld, "
          "\"prefetch_wasted\": %lld, \"demand_misses\": %lld, "
          "\"stall_ns\": %lld, \"device_ooms\": %lld, \"host_ooms\": %lld}",
          first ? "" : ",", label, (unsigned long long)s->elapsed_ns,
          (long long)s->bytes_h2d.total, (long long)s->bytes_d2h.total,
          (long long)s->device_reserved.peak, (long long)s->host_pinned.peak,
          (long long)s->prefetch_hits.total, (long long)s->prefetch_late.total,
          (long long)s->prefetch_wasted.total,
          (long long)s->demand_misses.total, (long long)s->stall_ns.total,
          (long long)s->device_ooms.total, (long long)s->host_ooms.total);
}

/* The node's row (Note [A report per rank]). */
static void node_of(const lms__stats_file_t *sf, int n, lms_stats_t *node) {
  memset(node, 0, sizeof *node);
  for (int r = 0; r < n; r++) {
    const lms_stats_t *s = &sf[r].st;
    if (s->elapsed_ns > node->elapsed_ns) node->elapsed_ns = s->elapsed_ns;
    if (s->device_reserved.peak > node->device_reserved.peak)
      node->device_reserved.peak = s->device_reserved.peak;
    node->host_pinned.peak += s->host_pinned.peak;
#define SUM_(f) node->f.total += s->f.total;
    SUM_(bytes_h2d) SUM_(bytes_d2h) SUM_(prefetch_hits) SUM_(prefetch_late)
    SUM_(prefetch_wasted) SUM_(demand_misses) SUM_(stall_ns)
    SUM_(device_ooms) SUM_(host_ooms)
#undef SUM_
  }
}

int lms__report_ranks(const char *spec, const char *out) {
  char err[LMS__ERRBUF] = "";
  lms__stats_file_t *sf = calloc(MAX_RANKS, sizeof *sf);
  lms__doc_t d = {NULL, NULL};
  FILE *js = NULL;
  int rc = 2;
  if (sf == NULL) {
    fprintf(stderr, "lms report: out of memory\n");
    return 1;
  }
  int n = read_ranks(spec, sf, err);
  if (n < 0) goto done;
  for (int r = 1; r < n; r++)
    if ((sf[r].iterations > 0) != (sf[0].iterations > 0)) {
      lms__errf(err, "--ranks: %s covers %s and %s %s; give files of one "
                     "kind", sf[0].path,
                sf[0].iterations > 0 ? "measured iterations" : "a whole run",
                sf[r].path,
                sf[r].iterations > 0 ? "measured iterations" : "a whole run");
      goto done;
    }
  rc = 1;
  char title[64];
  snprintf(title, sizeof title, "lms report: %d rank%s of one node", n,
           n == 1 ? "" : "s");
  if (lms__doc_open(&d, &js, out, title, err) != 0) goto done;
  const char *unit = sf[0].iterations > 0 ? "a measured iteration" : "the run";
  lms__doc_para(&d, "From `%s`: each rank's stats file, its figures over %s.",
                spec, unit);
  int slow = 0, fast = 0, most = 0, least = 0;
  for (int r = 1; r < n; r++) {
    const lms_stats_t *s = &sf[r].st;
    if (s->elapsed_ns > sf[slow].st.elapsed_ns) slow = r;
    if (s->elapsed_ns < sf[fast].st.elapsed_ns) fast = r;
    int64_t b = s->bytes_h2d.total + s->bytes_d2h.total;
    if (b > sf[most].st.bytes_h2d.total + sf[most].st.bytes_d2h.total) most = r;
    if (b < sf[least].st.bytes_h2d.total + sf[least].st.bytes_d2h.total)
      least = r;
  }
  int64_t bmost = sf[most].st.bytes_h2d.total + sf[most].st.bytes_d2h.total;
  int64_t bleast = sf[least].st.bytes_h2d.total + sf[least].st.bytes_d2h.total;
  double spread = sf[fast].st.elapsed_ns
                      ? (double)sf[slow].st.elapsed_ns /
                            (double)sf[fast].st.elapsed_ns
                      : 1.0;
  if (n > 1) {
    lms__doc_para(&d,
                  "Slowest: rank %d at %.1f ms, %.2fx the fastest (rank %d, "
                  "%.1f ms).  Most bytes moved: rank %d, %.2f GB both ways%s.",
                  slow, ms((int64_t)sf[slow].st.elapsed_ns), spread, fast,
                  ms((int64_t)sf[fast].st.elapsed_ns), most, gb(bmost),
                  bleast > 0 ? "" : " (another moved none)");
    if (bleast > 0 && most != least)
      lms__doc_para(&d, "That is %.2fx rank %d's %.2f GB.",
                    (double)bmost / (double)bleast, least, gb(bleast));
  }
  lms__doc_table_head(&d, (int)(sizeof kHead / sizeof *kHead), kHead);
  fprintf(js, "{\"ranks\": %d, \"spread\": %.4f, \"rows\": [", n, spread);
  for (int r = 0; r < n; r++) {
    char label[16];
    snprintf(label, sizeof label, "%d", r);
    row(&d, js, label, &sf[r].st, r == 0);
  }
  lms_stats_t node;
  node_of(sf, n, &node);
  row(&d, js, "node", &node, 0);
  lms__doc_table_end(&d);
  fprintf(js, "\n]}\n");
  lms__doc_para(&d, "node: time and device peak are the largest of the "
                    "ranks' (each rank has its GPU; the slowest sets the "
                    "job's pace), pinned peak the sum of the ranks' peaks "
                    "(at most what the host held at once), the rest sums.  "
                    "Files: %s.", spec);
  printf("lms report: %d ranks from %s: wrote %s/report.md, %s/report.html, "
         "%s/report.json\n", n, spec, out, out, out);
  rc = 0;
done:
  if (rc != 0) fprintf(stderr, "lms report: %s\n", err);
  lms__doc_close(&d, js);
  free(sf);
  return rc;
}
