/* demo.c - `lms demo`: the source scenario, caffe's GoogleNet at 1200x1200
 * and batch 10 on a 16 GiB GPU, replayed on the simulated device.
 *
 * It shows, in order: that training at batch 10 does not fit the GPU
 * without lms (the device runs out of memory); what the iteration costs
 * with lms on each link, next to caffe-ibm's on-demand swapping, the
 * in-memory time of a GPU large enough for everything, and the overlap
 * bound; and the published caffe-ibm timings beside what this simulator
 * predicts for the same thresholds; and it ends by writing the NVLink vs
 * PCIe report of the training run (`lms report --compare-links googlenet`,
 * report.c) with its charts, and naming the files.  Everything is a replay
 * through the public API (replay.h); nothing here is a hard-coded result
 * except the published figures, which are labelled as such. */
#include <stdio.h>
#include <string.h>

#include "api/ctx.h"
#include "cli/cli.h"
#include "core/log.h"

static const char *const kLinks[] = {"pcie3", "pcie5", "nvlink1", "nvlink2",
                                     "c2c"};
#define NLINKS (sizeof kLinks / sizeof kLinks[0])

/* Published, CONTEXT.md: caffe-ibm GoogleNet 1200x1200 on the P100 over
 * NVLink 1.0, forward per batch of 10. */
#define CAFFE_LMS_8192_MS 495.2
#define CAFFE_LMS_HUGE_MS 263.5

static double ms(uint64_t ns) { return (double)ns / 1e6; }

static int build(int batch, int train, lms__workload_t *w) {
  char err[LMS__ERRBUF];
  lms__wl_params_t p = {.batch = batch, .train = train};
  if (lms__wl_find_builtin("googlenet")->build(&p, w, err) != LMS_OK) {
    fprintf(stderr, "lms demo: %s\n", err);
    return -1;
  }
  return 0;
}

/* One replay on a 16 GiB simulated GPU, of `iterations` (or
 * LMS__REPLAY_SETTLE: until settled); returns the status. */
static lms_status_t run(const lms__workload_t *w, const lms__opts_t *base,
                        const char *link, lms__policy_t policy, int64_t lms_kb,
                        int iterations, lms__replay_result_t *r, char *err) {
  lms__opts_t o;
  lms__opts_copy(&o, base);
  /* The run without lms is expected to fail: its warning is shown here. */
  if (lms_kb < 0 && o.source[LMS__OPT_log] == LMS__SRC_DEFAULT)
    o.log.level = LMS_LOG_ERROR;
  char lerr[LMS__ERRBUF];
  lms__link_parse(link, &o.link, lerr);
  o.gpu_limit = 16ull << 30;
  o.policy = policy;
  o.lms_kb = lms_kb;
  o.sim_bytes = 0;
  o.trace = o.trace_buf;
  o.trace_buf[0] = '\0';
  return lms__replay_run(w, &o, iterations, 0, r, err);
}

/* Its one flag (Note [A command's flags] in cli.h): a char array of
 * LMS__CLI_OUT_MAX + 1 bytes is its argument. */
static const lms__cli_flag_t kDemoFlags[] = {
    {.flag = "--out", .kind = LMS__CLI_PATH, .at = 0,
     .size = LMS__CLI_OUT_MAX + 1},
};

void lms__demo_spec(lms__cli_spec_t *out) {
  *out = (lms__cli_spec_t){.cmd = "demo",
                           .help = "demo",
                           .parts = {{kDemoFlags, 1, 0}}};
}

int lms__cli_demo(const lms_options_t *base, const char *report_dir) {
  const lms__opts_t *opts = &base->v;
  char err[LMS__ERRBUF] = "";
  /* The report comes last: a directory it cannot write is refused before
   * the demonstration runs, not after. */
  if (lms__cli_out_dir(report_dir, err) != 0) {
    fprintf(stderr, "lms demo: %s\n", err);
    return 2;
  }
  lms__workload_t fwd, train;
  lms__wl_init(&fwd, NULL);
  lms__wl_init(&train, NULL);
  if (build(10, 0, &fwd) != 0 || build(10, 1, &train) != 0) return 1;
  int rc = 0;

  printf("lms demo: caffe's GoogleNet at 1200x1200, batch 10, on a simulated "
         "16 GiB GPU\n\n");
  printf("  forward:  %u steps, %u chunks, %.2f GB\n", fwd.nsteps, fwd.nchunks,
         (double)lms__wl_chunk_bytes(&fwd) / 1e9);
  printf("  training: %u steps, %u chunks, %.2f GB (%.1fx the GPU); compute "
         "%.1f ms per iteration at %.2f TFLOP/s\n\n",
         train.nsteps, train.nchunks, (double)lms__wl_chunk_bytes(&train) / 1e9,
         (double)lms__wl_chunk_bytes(&train) / (double)(16ull << 30),
         ms(lms__wl_compute_ns(&train)), train.device_flops / 1e12);

  /* 1. Without lms the training run does not fit. */
  lms__replay_result_t r;
  lms_status_t st = run(&train, opts, "nvlink2", LMS_POLICY_SCHEDULE, -1, 3,
                        &r, err);
  if (st == LMS_ERR_DEVICE_OOM || st == LMS_ERR_INVALID) {
    printf("without lms (-lms -1): fails as on the P100:\n  %.200s...\n\n", err);
  } else {
    printf("without lms: unexpectedly %s\n\n", lms_status_name(st));
    rc = 1;
  }

  /* 2. Training with lms, per link. */
  lms__replay_result_t mem;
  if (lms__simcmd_in_memory(&train, opts, 3, &mem, err) != LMS_OK) {
    fprintf(stderr, "lms demo: the in-memory run failed: %s\n", err);
    rc = 1;
    goto done;
  }
  /* The settled iteration, as `lms sim` and the report below measure it
   * (Note [A settled iteration] in replay/replay.c): the third is still
   * the window's trial over pcie3, 19 % slower than where the run
   * settles. */
  printf("training iteration with lms (-lms 0, schedule learned from the first "
         "iterations; the settled one), in ms:\n");
  printf("%-8s %10s %10s %10s %9s %9s %9s %8s %9s\n", "link", "in memory",
         "on-demand", "lms", "speedup", "x memory", "bound", "x bound",
         "GPU busy");
  for (size_t l = 0; l < NLINKS; l++) {
    lms__replay_result_t od, lm;
    if (run(&train, opts, kLinks[l], LMS_POLICY_ONDEMAND, 0, LMS__REPLAY_SETTLE,
            &od, err) != LMS_OK ||
        run(&train, opts, kLinks[l], LMS_POLICY_SCHEDULE, 0, LMS__REPLAY_SETTLE,
            &lm, err) != LMS_OK) {
      printf("%-8s failed: %s\n", kLinks[l], err);
      rc = 1;
      continue;
    }
    printf("%-8s %10.1f %10.1f %10.1f %8.2fx %8.2fx %9.1f %7.3fx %8.1f%%\n",
           kLinks[l], ms(mem.last.time_ns), ms(od.last.time_ns),
           ms(lm.last.time_ns),
           (double)od.last.time_ns / (double)lm.last.time_ns,
           (double)lm.last.time_ns / (double)mem.last.time_ns,
           ms(lm.overlap_bound_ns),
           (double)lm.last.time_ns / (double)lm.overlap_bound_ns,
           100.0 * (double)lm.last.compute_ns / (double)lm.last.time_ns);
  }
  printf("  on-demand: caffe-ibm's policy (swap in when used, give up after "
         "reading, no prefetch);\n  bound: max(compute, H2D bytes / rate, D2H "
         "bytes / rate) of the lms run\n\n");

  /* 3. caffe-ibm's published timings beside the simulator's. */
  printf("caffe-ibm comparison, forward of batch 10 over nvlink1 (P100), ms "
         "per batch:\n");
  printf("%-16s %10s %14s %8s %10s\n", "threshold", "published",
         "sim on-demand", "error", "sim lms");
  const struct {
    const char *label;
    int64_t kb;
    double published;
  } rows[] = {{"-lms 8192", 8192, CAFFE_LMS_8192_MS},
              {"-lms 160000000", 160000000, CAFFE_LMS_HUGE_MS}};
  for (size_t i = 0; i < 2; i++) {
    lms__replay_result_t od, lm;
    if (run(&fwd, opts, "nvlink1", LMS_POLICY_ONDEMAND, rows[i].kb, 3, &od,
            err) != LMS_OK ||
        run(&fwd, opts, "nvlink1", LMS_POLICY_SCHEDULE, rows[i].kb, 3, &lm,
            err) != LMS_OK) {
      printf("%-16s failed: %s\n", rows[i].label, err);
      rc = 1;
      continue;
    }
    double sim = ms(od.last.time_ns);
    printf("%-16s %10.1f %14.1f %+7.0f%% %10.1f\n", rows[i].label,
           rows[i].published, sim,
           100.0 * (sim - rows[i].published) / rows[i].published,
           ms(lm.last.time_ns));
  }
  printf("  the device speed is calibrated on batch 1 (45.4 ms) and on the "
         "-lms 160000000 run (263.5 ms),\n  so the second row is a "
         "calibration point; the first is a prediction.\n");

  /* 4. The NVLink vs PCIe report of the training run, with charts. */
  printf("\nNVLink vs PCIe report of the training run (lms report "
         "--compare-links googlenet --out %s):\n", report_dir);
  fflush(stdout);
  {
    char *argv[] = {"--compare-links", "googlenet", "--out",
                    (char *)report_dir, NULL};
    if (lms__cli_report(base, 4, argv) != 0) rc = 1;
  }

done:
  lms__wl_free(&fwd);
  lms__wl_free(&train);
  return rc;
}
