/* sim.c - `lms sim`: a workload or a trace on the simulated device, over
 * one or more links, capacities and policies, as a table or JSON.
 *
 *   lms sim [OPTIONS] WORKLOAD|TRACE [SIM OPTIONS]
 *
 * WORKLOAD is a built-in (googlenet, unet3d); anything else is read as a
 * trace file (docs/trace-format.md).  Every run is compared with the same
 * workload in memory (a device large enough for all of it) and with the
 * overlap bound, max(compute, H2D bytes / H2D rate, D2H bytes / D2H rate):
 * no schedule of these copies can beat that bound on that link.
 *
 * With --gpus-per-link N (2..8) every run is also made as one of N GPUs
 * running the workload behind one host link, and a second table (and a
 * "shared" object per JSON run) gives each GPU's copy throughput and
 * iteration time against the same GPU alone (Note [Shared link] in
 * device/linkshare.c); --in-step begins the GPUs' iterations together.
 * With --link-group NAME as well, N such processes (one run each) are the
 * N GPUs for real, each with its own workload (Note [Ranks on one link]
 * in replay/linkboard.c), and each prints its own row.
 *
 * With --calibrate-busy PCT the workload's compute is first scaled so that
 * the first run (first capacity, link and policy) is busy PCT % of its
 * time, as a measured profile says (Note [Calibrating compute to a busy
 * share] in replay/calibrate.c); every run then uses that speed.
 *
 * Note [Output of long runs]
 * A sweep can take hours, and its output often goes to a pipe or a file,
 * where stdout is fully buffered: a run killed after 30 minutes had
 * printed nothing.  So each row is written as its run ends (main() makes
 * stdout line-buffered), and once the command has worked for more than
 * PROGRESS_AFTER_S seconds, stderr says which run starts, so that one
 * long run is seen to be working.  Fast commands (the tests) print no
 * progress, and --quiet turns it off. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "core/options.h"
#include "replay/replay.h"
#include "replay/shared.h"
#include "cli/sim_parts.h"
#include "core/rank.h"



/* Note [Output of long runs] continued: one run can be long too (a
 * million references an iteration, settling over many iterations), so
 * while `lms sim` prints progress, each run reports its iteration and
 * step from the replay's step hook, at most every PROGRESS_EVERY_S. */
typedef struct step_progress {
  int on;
  double start, said; /* when the command began, and the last line */
  int iteration;
  uint32_t nsteps;
} step_progress_t;

static step_progress_t g_steps;

static double clock_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int on_step(void *arg, lms_ctx_t *ctx, uint32_t step) {
  (void)ctx;
  step_progress_t *sp = arg;
  if (step == 0) sp->iteration++;
  if ((step & 1023) != 1023) return 0;
  double now = clock_s();
  if (now - sp->said < 10.0) return 0;
  sp->said = now;
  fprintf(stderr, "lms sim:   iteration %d, step %u of %u (%.0f s so far)\n",
          sp->iteration, step + 1, sp->nsteps, now - sp->start);
  return 0;
}

static lms_status_t run_replay(const lms__workload_t *w, const lms__opts_t *o,
                               int iterations, int declare,
                               lms__replay_result_t *out, char *err) {
  if (!g_steps.on) return lms__replay_run(w, o, iterations, declare, out, err);
  g_steps.iteration = 0;
  g_steps.nsteps = w->nsteps;
  return lms__replay_run_hooked(w, o, iterations, declare, on_step, &g_steps,
                                out, err);
}

/* The workload with room for everything: the in-memory reference. */
lms_status_t lms__simcmd_in_memory(const lms__workload_t *w,
                                const lms__opts_t *base, int iterations,
                                lms__replay_result_t *out, char *err) {
  lms__opts_t o;
  lms__opts_copy(&o, base);
  o.lms_kb = -1;
  o.gpu_limit = lms__wl_chunk_bytes(w) + lms__wl_chunk_bytes(w) / 4 + (64u << 20);
  o.sim_bytes = 0;
  o.trace = o.trace_buf;
  o.trace_buf[0] = '\0';
  return run_replay(w, &o, iterations, 0, out, err);
}

static double ms(uint64_t ns) { return (double)ns / 1e6; }
static double gb(uint64_t b) { return (double)b / 1e9; }

void lms__simcmd_one_opts(lms__opts_t *o, const lms__opts_t *base,
                       const lms__link_t *link, uint64_t capacity,
                       lms__policy_t policy) {
  lms__opts_copy(o, base);
  o->link = *link;
  o->gpu_limit = capacity;
  o->policy = policy;
  o->sim_bytes = 0;
  if (o->source[LMS__OPT_lms_kb] == LMS__SRC_DEFAULT) o->lms_kb = 0;
}

lms_status_t lms__simcmd_one(const lms__workload_t *w, const lms__opts_t *base,
                          const lms__link_t *link, uint64_t capacity,
                          lms__policy_t policy, int iterations, int declare,
                          lms__replay_result_t *out, char *err) {
  lms__opts_t o;
  lms__simcmd_one_opts(&o, base, link, capacity, policy);
  return run_replay(w, &o, iterations, declare, out, err);
}

#define PROGRESS_AFTER_S 2.0

static double seconds_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct progress {
  double start;     /* when the command began */
  double run_start; /* when the last run began */
  double said;      /* when the last progress line was written */
  int quiet;
} progress_t;

/* Before run k of n starts: a line on stderr once the command has taken
 * PROGRESS_AFTER_S seconds, when the run before took as long or no line
 * was written for PROGRESS_EVERY_S (Note [Output of long runs]). */
#define PROGRESS_EVERY_S 10.0
static void progress(progress_t *pg, size_t k, size_t n, const char *link,
                     const char *policy, uint64_t capacity) {
  double now = seconds_now();
  int slow_run = k > 1 && now - pg->run_start >= PROGRESS_AFTER_S;
  pg->run_start = now;
  if (pg->quiet || now - pg->start <= PROGRESS_AFTER_S ||
      !(slow_run || now - pg->said >= PROGRESS_EVERY_S))
    return;
  pg->said = now;
  fprintf(stderr, "lms sim: run %zu of %zu: %s %s at %.1f GiB (%.0f s so "
                  "far; --quiet for none of these lines)\n",
          k, n, link, policy, (double)capacity / (1ull << 30),
          now - pg->start);
}

static void describe(FILE *f, const lms__workload_t *w) {
  fprintf(f, "%s: %u steps, %u chunks, %.2f GB of chunks, compute %.1f ms "
             "per iteration",
          w->name, w->nsteps, w->nchunks, gb(lms__wl_chunk_bytes(w)),
          ms(lms__wl_compute_ns(w)));
  if (w->device_flops > 0)
    fprintf(f, " (%.2f TFLOP/s modelled device)", w->device_flops / 1e12);
  fprintf(f, "\n");
}

int lms__cli_sim(const lms_options_t *base, int argc, char **argv) {
  progress_t pg = {seconds_now(), 0, 0, 0};
  lms__simcmd_args_t a;
  lms__simcmd_args_init(&a);
  if (lms__simcmd_parse_args(argc, argv, &a) != 0) return 2;
  pg.quiet = a.quiet;
  g_steps = (step_progress_t){.on = !a.quiet, .start = pg.start,
                              .said = pg.start};
  /* The shared model compares fixed iterations (three unless
   * --iterations says otherwise), and so do the rows beside it. */
  if (a.gpus_per_link > 1 && a.iterations == LMS__REPLAY_SETTLE)
    a.iterations = LMS__REPLAY_SETTLE_MIN;
  const lms__opts_t *opts = &base->v;
  if (a.nlinks == 0) {
    if (opts->source[LMS__OPT_link] != LMS__SRC_DEFAULT) {
      a.links[0] = opts->link;
      a.nlinks = 1;
    } else {
      const char *names[] = {"pcie3", "pcie5", "nvlink1", "nvlink2", "c2c"};
      for (size_t i = 0; i < 5; i++) {
        char err[LMS__ERRBUF];
        lms__link_parse(names[i], &a.links[i], err);
      }
      a.nlinks = 5;
    }
  }
  if (a.npolicies == 0) {
    if (opts->source[LMS__OPT_policy] != LMS__SRC_DEFAULT) {
      a.policies[0] = opts->policy;
      a.npolicies = 1;
    } else {
      for (int k = 0; k < 3; k++) a.policies[k] = (lms__policy_t)k;
      a.npolicies = 3;
    }
  }
  /* The ranks of a link group pair up by rounds of one run each: two runs
   * would meet the other ranks' runs out of turn. */
  if (a.link_group[0] != '\0' &&
      (a.nlinks != 1 || a.npolicies != 1 || a.ncapacities > 1)) {
    fprintf(stderr, "lms sim: --link-group runs one rank's one run; "
                    "accepted: one link, one policy and one capacity (%zu, "
                    "%zu and %zu given or by default)\n", a.nlinks,
            a.npolicies, a.ncapacities ? a.ncapacities : 1);
    return 2;
  }
  const char *capacity_from = "--capacities";
  if (a.ncapacities == 0) {
    a.capacities[0] = opts->gpu_limit ? opts->gpu_limit : 16ull << 30;
    a.ncapacities = 1;
    capacity_from = opts->gpu_limit ? "--gpu-limit" : "the default capacity "
                                                      "(set --gpu-limit)";
  }

  char err[LMS__ERRBUF] = "";
  lms__workload_t w;
  lms__wl_init(&w, NULL);
  if (lms__simcmd_load(&a, &w, err) != LMS_OK) {
    fprintf(stderr, "lms sim: %s\n", err);
    return 2;
  }
  FILE *json = NULL;
  int json_stdout = strcmp(a.json, "-") == 0;
  if (a.json[0] != '\0') {
    json = json_stdout ? stdout : fopen(a.json, "w");
    if (json == NULL) {
      fprintf(stderr, "lms sim: --json: cannot write '%s': %s\n", a.json,
              strerror(errno));
      lms__wl_free(&w);
      return 2;
    }
  }
  FILE *out = json_stdout ? stderr : stdout;
  lms__calibration_t cal = {0};
  if (a.calibrate_busy > 0) {
    lms__opts_t o;
    lms__simcmd_one_opts(&o, opts, &a.links[0], a.capacities[0], a.policies[0]);
    if (lms__replay_calibrate(&w, &o, a.iterations, a.declare,
                              a.calibrate_busy, &cal, err) != LMS_OK) {
      fprintf(stderr, "lms sim: --calibrate-busy: %s\n", err);
      if (json != NULL && !json_stdout) fclose(json);
      lms__wl_free(&w);
      return 2;
    }
    fprintf(out, "calibrated: compute %.4gx the model's speed, so that %s "
                 "%s at %.1f GiB is busy %.2f %% (asked %.2f %%; %d runs)\n",
            cal.speedup, a.links[0].name, lms__simcmd_policy_names[a.policies[0]],
            (double)a.capacities[0] / (1ull << 30), 100.0 * cal.busy,
            100.0 * cal.target, cal.runs);
  }
  /* A capacity that cannot hold the largest step is bad input, refused
   * before any run (it once skipped that capacity after the others ran,
   * with the status of a failed run). */
  uint64_t biggest = lms__wl_max_step_bytes(&w);
  for (size_t c = 0; c < a.ncapacities; c++) {
    if (a.capacities[c] >= biggest) continue;
    fprintf(stderr, "lms sim: %s: %llu bytes cannot hold the largest step "
                    "of %s (%llu bytes); accepted: at least %llu bytes\n",
            capacity_from,
            (unsigned long long)a.capacities[c], w.name,
            (unsigned long long)biggest, (unsigned long long)biggest);
    if (json != NULL && !json_stdout) fclose(json);
    lms__wl_free(&w);
    return 2;
  }
  describe(out, &w);
  lms__replay_result_t mem;
  int rc = 0;
  shared_row_t *shared = NULL;
  size_t nshared = 0;
  if (lms__simcmd_in_memory(&w, opts, a.iterations, &mem, err) != LMS_OK) {
    fprintf(stderr, "lms sim: the in-memory run failed: %s\n", err);
    rc = 1;
    goto done;
  }
  uint64_t inmem_ns = mem.last.time_ns;
  if (a.iterations == LMS__REPLAY_SETTLE)
    fprintf(out, "in memory: %.1f ms per iteration; each run goes on until "
                 "two iterations in a row agree within 0.5 %% and the last "
                 "ends with the chunks on the device it began with (it is "
                 "measured), or, after its trial, the "
                 "last k repeat the k before them for some k up to %d and "
                 "end as they began (the slowest of the last k measured), "
                 "%d to %d; --iterations N for N\n\n",
            ms(inmem_ns), LMS__REPLAY_CYCLE_MAX,
            LMS__REPLAY_SETTLE_MIN, LMS__REPLAY_SETTLE_MAX);
  else
    fprintf(out, "in memory: %.1f ms per iteration; %d iterations per run, "
                 "the last one measured\n\n", ms(inmem_ns), a.iterations);
  lms__simcmd_print_header(out);
  if (json != NULL)
    fprintf(json, "{\"workload\": \"%s\", \"steps\": %u, \"chunks\": %u, "
                  "\"chunk_bytes\": %llu, \"in_memory_ns\": %llu, ",
            w.name, w.nsteps, w.nchunks,
            (unsigned long long)lms__wl_chunk_bytes(&w),
            (unsigned long long)inmem_ns);
  if (json != NULL && a.calibrate_busy > 0)
    fprintf(json, "\"calibration\": {\"target\": %.6f, \"busy\": %.6f, "
                  "\"speedup\": %.6g, \"device_flops\": %.6g, \"runs\": "
                  "%d}, \"runs\": [",
            cal.target, cal.busy, cal.speedup, w.device_flops, cal.runs);
  else if (json != NULL)
    fputs("\"runs\": [", json);
  int first = 1;
  if (a.gpus_per_link > 1) {
    shared = calloc(a.ncapacities * a.nlinks * a.npolicies, sizeof *shared);
    if (shared == NULL) {
      fprintf(stderr, "lms sim: no host memory for the shared-link runs\n");
      rc = 1;
      goto done;
    }
  }
  for (size_t c = 0; c < a.ncapacities; c++) {
    for (size_t l = 0; l < a.nlinks; l++) {
      for (size_t p = 0; p < a.npolicies; p++) {
        lms__replay_result_t r;
        progress(&pg, (c * a.nlinks + l) * a.npolicies + p + 1,
                 a.ncapacities * a.nlinks * a.npolicies, a.links[l].name,
                 lms__simcmd_policy_names[a.policies[p]], a.capacities[c]);
        if (lms__simcmd_one(&w, opts, &a.links[l], a.capacities[c], a.policies[p],
                         a.iterations, a.declare, &r, err) != LMS_OK) {
          fprintf(out, "%-8s %-9s failed: %s\n", a.links[l].name,
                  lms__simcmd_policy_names[a.policies[p]], err);
          rc = 1;
          continue;
        }
        lms__simcmd_print_row(out, a.links[l].name, lms__simcmd_policy_names[a.policies[p]],
                  a.capacities[c], &r, inmem_ns);
        shared_row_t *row = NULL;
        if (shared != NULL) {
          row = &shared[nshared];
          snprintf(row->link, sizeof row->link, "%s", a.links[l].name);
          row->policy = a.policies[p];
          row->capacity = a.capacities[c];
          lms__opts_t o;
          lms__simcmd_one_opts(&o, opts, &a.links[l], a.capacities[c], a.policies[p]);
          int rank = lms__local_rank() > 0 ? lms__local_rank() : 0;
          lms_status_t sst =
              a.link_group[0] != '\0'
                  ? lms__replay_board(&w, &o, a.iterations, a.declare,
                                      a.link_group, a.gpus_per_link, rank,
                                      (double)a.link_wait, &row->r, err)
                  : lms__replay_shared(&w, &o, a.iterations, a.declare,
                                       a.gpus_per_link, a.in_step, &row->r,
                                       err);
          if (sst != LMS_OK) {
            fprintf(out, "%-8s %-9s sharing the link failed: %s\n",
                    a.links[l].name, lms__simcmd_policy_names[a.policies[p]], err);
            rc = 1;
            row = NULL;
          } else {
            nshared++;
          }
        }
        if (json != NULL)
          lms__simcmd_json_row(json, a.links[l].name, lms__simcmd_policy_names[a.policies[p]],
                   a.capacities[c], &r, inmem_ns, first,
                   row != NULL ? &row->r : NULL);
        first = 0;
      }
    }
  }
  if (json != NULL) fprintf(json, "\n  ]\n}\n");
  fprintf(out, "\nx mem: iteration time over the in-memory time; bound: "
               "max(compute, H2D bytes / rate, D2H bytes / rate) of the run's "
               "own bytes; lower: the least time any policy can take at this "
               "capacity (the fewest bytes and copies that must move, and the "
               "copies each part must hold when the iteration is cut at one "
               "step, or its cycle at two steps or more; where the two ways "
               "share a rate, both ways' bytes over it); "
               "hit%%: prefetch hits over acquires that needed data brought "
               "in; it: iterations run (! : not settled; the iteration nearest "
               "the mean time of the later half since the trial, at least "
               "the last eight, shown)\n");
  if (nshared > 0) {
    lms__simcmd_print_shared_header(out, a.gpus_per_link,
                                    a.link_group[0] != '\0');
    for (size_t i = 0; i < nshared; i++) lms__simcmd_print_shared_row(out, &shared[i]);
    if (a.link_group[0] != '\0')
      fprintf(out, "\nshared: this rank (local rank %d) beside the other "
                   "%d of link group %s, each its own process, in the last "
                   "of %d iterations; GB/s: bytes over the time copies were "
                   "in flight, alone -> shared; link GB/s: this rank's bytes "
                   "over time, H2D/D2H; busy%%: GPU busy alone/shared\n",
              lms__local_rank() > 0 ? lms__local_rank() : 0,
              a.gpus_per_link - 1, a.link_group, shared[0].r.rounds);
    else if (a.in_step)
      fprintf(out, "\nshared: one run with the GPUs in step (their "
                   "iterations begin together), the last of %d iterations; "
                   "GB/s: bytes over the time copies were in flight, alone "
                   "-> shared; link GB/s: all %d GPUs' bytes over time, "
                   "H2D/D2H; busy%%: GPU busy alone/shared\n",
              shared[0].r.rounds, a.gpus_per_link);
    else
      fprintf(out, "\nshared: the mean of %d runs (%d phase offsets between "
                   "the GPUs' iterations, %d rounds each); GB/s: bytes over "
                   "the time copies were in flight, alone -> shared; link "
                   "GB/s: all %d GPUs' bytes over time, H2D/D2H; busy%%: GPU "
                   "busy alone/shared\n",
              shared[0].r.samples, shared[0].r.phases, shared[0].r.rounds - 1,
              a.gpus_per_link);
  }
done:
  free(shared);
  if (json != NULL && !json_stdout && fclose(json) != 0) {
    fprintf(stderr, "lms sim: --json: writing '%s' failed\n", a.json);
    rc = 1;
  }
  lms__wl_free(&w);
  return rc;
}
