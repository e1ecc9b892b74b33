/* unit_statsfile.c - the stats of measured iterations (Note [A measured
 * iteration's stats] in src/cli/statsfile.c): what the benchmark writes is
 * what the report reads back, means and all; a file that leaves counters
 * out is read with them marked absent, and only when it says it covers
 * measured iterations; bad iteration counts are refused with the reason. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/report.h"

static char dir[64];

static void make_dir(void) {
  snprintf(dir, sizeof dir, "/tmp/lms-statsfile-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}

static void cleanup(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  (void)!system(cmd);
}

TestSuite(statsfile, .init = make_dir, .fini = cleanup);

static void path_in(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", dir, name);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  cr_assert_eq(fputs(text, f) >= 0, 1);
  cr_assert_eq(fclose(f), 0);
}

Test(statsfile, measured_iterations_round_trip_as_means) {
  lms_stats_t b, e;
  memset(&b, 0, sizeof b);
  memset(&e, 0, sizeof e);
  b.version = e.version = LMS_STATS_VERSION;
  b.bytes_h2d.total = 1000;
  e.bytes_h2d.total = 1000 + 3 * 7000000;
  b.bytes_d2h.total = 5;
  e.bytes_d2h.total = 5 + 3 * 11;
  b.stall_ns.total = 0;
  e.stall_ns.total = 3 * 250000;
  e.device_reserved.current = 4096;
  e.device_reserved.peak = 8192;
  e.device_reserved.total = 8192;
  b.device_reserved.total = 8192;
  e.device_limit = 123456789;
  e.elapsed_ns = 999999999999ull; /* the context's life: not written */
  char path[128], err[LMS__ERRBUF];
  path_in(path, sizeof path, "iter.json");
  cr_assert_eq(lms__stats_file_write_iterations(path, &b, &e, 3, 2,
                                                491300000ull, err),
               LMS_OK, "%s", err);
  lms__stats_file_t sf;
  cr_assert_eq(lms__stats_file_read(path, &sf, err), LMS_OK, "%s", err);
  cr_expect_eq(sf.iterations, 3);
  cr_expect_eq(sf.warmup, 2);
  cr_expect_eq(sf.st.elapsed_ns, 491300000ull);
  cr_expect_eq(sf.st.bytes_h2d.total, 7000000);
  cr_expect_eq(sf.st.bytes_d2h.total, 11);
  cr_expect_eq(sf.st.stall_ns.total, 250000);
  /* Levels are the end's; a total that did not grow is 0. */
  cr_expect_eq(sf.st.device_reserved.current, 4096);
  cr_expect_eq(sf.st.device_reserved.peak, 8192);
  cr_expect_eq(sf.st.device_reserved.total, 0);
  cr_expect_eq(sf.st.device_limit, 123456789ull);
  cr_expect(lms__stats_file_has(&sf, "bytes_h2d"));
  cr_expect(lms__stats_file_has(&sf, "stall_ns"));
  cr_expect_not(lms__stats_file_has(&sf, "no_such_counter"));
}

Test(statsfile, the_writer_refuses_what_the_reader_would) {
  lms_stats_t s;
  memset(&s, 0, sizeof s);
  char path[128], err[LMS__ERRBUF];
  path_in(path, sizeof path, "w.json");
  cr_expect_eq(lms__stats_file_write_iterations(path, &s, &s, 0, 2, 1, err),
               LMS_ERR_INVALID);
  cr_expect(strstr(err, "1 or more measured") != NULL, "%s", err);
  cr_expect_eq(lms__stats_file_write_iterations(path, &s, &s, 3, 2, 0, err),
               LMS_ERR_INVALID);
  cr_expect_eq(lms__stats_file_write_iterations(path, &s, &s, 60, 10, 1, err),
               LMS_ERR_INVALID);
  cr_expect_eq(access(path, F_OK), -1, "a refused file was written");
  cr_expect_eq(lms__stats_file_write_iterations("/nonexistent/dir/s.json",
                                                &s, &s, 1, 0, 1, err),
               LMS_ERR_INVALID);
  cr_expect(strstr(err, "/nonexistent/dir/s.json: cannot write") != NULL,
            "%s", err);
}

#define HEAD "{\"version\": 2, \"device_limit\": 100, \"elapsed_ns\": 50"

Test(statsfile, counters_may_be_absent_only_from_measured_iterations) {
  char path[128], err[LMS__ERRBUF];
  lms__stats_file_t sf;
  path_in(path, sizeof path, "partial.json");
  write_text(path, HEAD ", \"bytes_h2d\": {\"current\": 9, \"peak\": 9, "
                   "\"total\": 9}, \"iterations\": 3, "
                   "\"warmup_iterations\": 2}\n");
  cr_assert_eq(lms__stats_file_read(path, &sf, err), LMS_OK, "%s", err);
  cr_expect(lms__stats_file_has(&sf, "bytes_h2d"));
  cr_expect_not(lms__stats_file_has(&sf, "bytes_d2h"));
  cr_expect_not(lms__stats_file_has(&sf, "stall_ns"));
  cr_expect_eq(sf.st.bytes_h2d.total, 9);
  /* The same file as a whole run lacks counters. */
  write_text(path, HEAD ", \"bytes_h2d\": {\"current\": 9, \"peak\": 9, "
                   "\"total\": 9}}\n");
  cr_expect_eq(lms__stats_file_read(path, &sf, err), LMS_ERR_INVALID);
  cr_expect(strstr(err, "lacks every counter") != NULL, "%s", err);
}

Test(statsfile, bad_iteration_counts_are_named) {
  static const char *const bad[] = {
      HEAD ", \"iterations\": 0}",
      HEAD ", \"iterations\": -1}",
      HEAD ", \"iterations\": 1.5}",
      HEAD ", \"iterations\": 65}",
      HEAD ", \"iterations\": 3, \"warmup_iterations\": -2}",
      HEAD ", \"iterations\": 40, \"warmup_iterations\": 40}",
  };
  char path[128], err[LMS__ERRBUF];
  lms__stats_file_t sf;
  path_in(path, sizeof path, "bad.json");
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_text(path, bad[i]);
    err[0] = '\0';
    cr_expect_eq(lms__stats_file_read(path, &sf, err), LMS_ERR_INVALID,
                 "accepted: %s", bad[i]);
    cr_expect(strstr(err, "\"iterations\" is a whole number from 1") != NULL,
              "%s: %s", bad[i], err);
  }
  write_text(path, HEAD ", \"warmup_iterations\": 2}");
  cr_expect_eq(lms__stats_file_read(path, &sf, err), LMS_ERR_INVALID);
  cr_expect(strstr(err, "\"warmup_iterations\" without \"iterations\"") != NULL,
            "%s", err);
}
