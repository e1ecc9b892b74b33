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
 * device/linkshare.c).
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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "core/options.h"
#include "replay/replay.h"
#include "replay/shared.h"

#define MAX_LIST 16

static const char *const kPolicyNames[] = {"ondemand", "lru", "schedule"};

void lms__simcmd_args_init(lms__simcmd_args_t *a) {
  memset(a, 0, sizeof *a);
  a->iterations = LMS__REPLAY_SETTLE;
  a->params.batch = 0;
  a->params.train = -1;
  a->gpus_per_link = 1;
}

static int parse_int(const char *flag, const char *text, long lo, long hi,
                     long *out) {
  char *end = NULL;
  errno = 0;
  long v = text ? strtol(text, &end, 10) : 0;
  if (text == NULL || end == text || *end != '\0' || errno != 0 || v < lo ||
      v > hi) {
    fprintf(stderr, "lms sim: %s: '%s' is not a whole number from %ld to %ld\n",
            flag, text ? text : "", lo, hi);
    return -1;
  }
  *out = v;
  return 0;
}

/* Splits a comma list into at most MAX_LIST items, each parsed by `one`. */
static int parse_list(const char *flag, const char *text,
                      int (*one)(const char *flag, const char *item, void *out,
                                 size_t i),
                      void *out, size_t *n) {
  char buf[1024];
  if (text == NULL || text[0] == '\0') {
    fprintf(stderr, "lms sim: %s: expected a comma-separated list\n", flag);
    return -1;
  }
  if (lms__cli_list_fits("sim", flag, text, sizeof buf)) return -1;
  snprintf(buf, sizeof buf, "%s", text);
  *n = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok != NULL;
       tok = strtok_r(NULL, ",", &save)) {
    if (*n == MAX_LIST) {
      fprintf(stderr, "lms sim: %s: at most %d items\n", flag, MAX_LIST);
      return -1;
    }
    if (one(flag, tok, out, *n) != 0) return -1;
    (*n)++;
  }
  if (*n == 0) {
    fprintf(stderr, "lms sim: %s: the list is empty\n", flag);
    return -1;
  }
  return 0;
}

static int one_link(const char *flag, const char *item, void *out, size_t i) {
  char err[LMS__ERRBUF];
  if (lms__cli_link(item, &((lms__link_t *)out)[i], err) != LMS_OK) {
    fprintf(stderr, "lms sim: %s: %s\n", flag, err);
    return -1;
  }
  return 0;
}

static int one_policy(const char *flag, const char *item, void *out, size_t i) {
  for (int k = 0; k < 3; k++) {
    if (strcmp(item, kPolicyNames[k]) == 0) {
      ((lms__policy_t *)out)[i] = (lms__policy_t)k;
      return 0;
    }
  }
  fprintf(stderr, "lms sim: %s: unknown policy '%s'; accepted: ondemand, lru, "
                  "schedule\n", flag, item);
  return -1;
}

static int one_size(const char *flag, const char *item, void *out, size_t i) {
  char err[LMS__ERRBUF];
  if (lms__parse_size(flag, item, &((uint64_t *)out)[i], err) != LMS_OK) {
    fprintf(stderr, "lms sim: %s\n", err);
    return -1;
  }
  return 0;
}

/* The flags of `lms sim` itself, and whether each takes a value. */
static const lms__cli_flag_t kSimFlags[] = {
    {"--batch", 1},  {"--size", 1},     {"--train", 0},       {"--forward", 0},
    {"--iterations", 1}, {"--links", 1}, {"--policies", 1},  {"--capacities", 1},
    {"--device-tflops", 1}, {"--json", 1}, {"--declare", 0},
    {"--gpus-per-link", 1}, {"--discard-dead", 0}, {"--calibrate-busy", 1},
    {"--quiet", 0},
    /* `lms tune`'s own */
    {"--workload", 1}, {"--lms-values", 1}, {"--frac-values", 1},
    {"--window-values", 1}, {"--repeat", 1},
};

int lms__simcmd_extract_args(int *argc, char **argv, char **out) {
  return lms__cli_extract(argc, argv, out, kSimFlags,
                          sizeof kSimFlags / sizeof kSimFlags[0]);
}

int lms__simcmd_parse_args(int argc, char **argv, lms__simcmd_args_t *a) {
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    const char *val = NULL;
    char flag[64];
    const char *eq = strchr(arg, '=');
    if (strncmp(arg, "--", 2) == 0 && eq != NULL &&
        (size_t)(eq - arg) < sizeof flag) {
      snprintf(flag, sizeof flag, "%.*s", (int)(eq - arg), arg);
      val = eq + 1;
    } else {
      snprintf(flag, sizeof flag, "%s", arg);
    }
#define NEXT()                                                                \
  do {                                                                        \
    if (val == NULL) {                                                        \
      if (i + 1 >= argc) {                                                    \
        fprintf(stderr, "lms sim: %s needs a value\n", flag);                 \
        return -1;                                                            \
      }                                                                       \
      val = argv[++i];                                                        \
    }                                                                         \
  } while (0)
    long v;
    for (size_t f = 0; val != NULL && f < sizeof kSimFlags / sizeof kSimFlags[0];
         f++)
      if (!kSimFlags[f].value && strcmp(flag, kSimFlags[f].flag) == 0) {
        fprintf(stderr, "lms sim: %s takes no value; got '%s'\n", flag, arg);
        return -1;
      }
    if (strcmp(flag, "--batch") == 0) {
      NEXT();
      if (parse_int(flag, val, 1, 4096, &v)) return -1;
      a->params.batch = (int)v;
    } else if (strcmp(flag, "--size") == 0) {
      NEXT();
      if (parse_int(flag, val, 1, 100000, &v)) return -1;
      a->params.size = (int)v;
    } else if (strcmp(flag, "--train") == 0 && val == NULL) {
      a->params.train = 1;
    } else if (strcmp(flag, "--forward") == 0 && val == NULL) {
      a->params.train = 0;
    } else if (strcmp(flag, "--iterations") == 0) {
      NEXT();
      if (parse_int(flag, val, 2, LMS__REPLAY_MAX_ITERS, &v)) return -1;
      a->iterations = (int)v;
    } else if (strcmp(flag, "--links") == 0) {
      NEXT();
      if (parse_list(flag, val, one_link, a->links, &a->nlinks)) return -1;
    } else if (strcmp(flag, "--policies") == 0) {
      NEXT();
      if (parse_list(flag, val, one_policy, a->policies, &a->npolicies))
        return -1;
    } else if (strcmp(flag, "--capacities") == 0) {
      NEXT();
      if (parse_list(flag, val, one_size, a->capacities, &a->ncapacities))
        return -1;
    } else if (strcmp(flag, "--device-tflops") == 0) {
      NEXT();
      char *end = NULL;
      double t = strtod(val, &end);
      if (end == val || *end != '\0' || !isfinite(t) || t <= 0 || t > 1e4) {
        fprintf(stderr, "lms sim: --device-tflops: '%s' is not a rate from "
                        "above 0 to 10000 TFLOP/s\n", val);
        return -1;
      }
      a->params.device_flops = t * 1e12;
    } else if (strcmp(flag, "--json") == 0) {
      NEXT();
      if (lms__cli_path("sim", "--json", val, a->json, sizeof a->json))
        return -1;
    } else if (strcmp(flag, "--gpus-per-link") == 0) {
      NEXT();
      char *end = NULL;
      errno = 0;
      long g = strtol(val, &end, 10);
      if (end == val || *end != '\0' || errno != 0 || g < 1 ||
          g > LMS__SHARE_MAX_GPUS) {
        fprintf(stderr, "lms sim: --gpus-per-link: '%s' is not a number of "
                        "GPUs sharing one host link; accepted: a whole "
                        "number from 1 (alone) to %d\n", val,
                LMS__SHARE_MAX_GPUS);
        return -1;
      }
      a->gpus_per_link = (int)g;
    } else if (strcmp(flag, "--calibrate-busy") == 0) {
      NEXT();
      char *end = NULL;
      double b = strtod(val, &end);
      if (end == val || *end != '\0' || !isfinite(b) || b <= 0 || b >= 100) {
        fprintf(stderr, "lms sim: --calibrate-busy: '%s' is not a GPU busy "
                        "share; accepted: a percentage above 0 and below "
                        "100, as 29.1\n", val);
        return -1;
      }
      a->calibrate_busy = b / 100.0;
    } else if (strcmp(flag, "--declare") == 0 && val == NULL) {
      a->declare = 1;
    } else if (strcmp(flag, "--discard-dead") == 0 && val == NULL) {
      a->discard_dead = 1;
    } else if (strcmp(flag, "--quiet") == 0 && val == NULL) {
      a->quiet = 1;
    } else if (arg[0] == '-' && arg[1] != '\0') {
      fprintf(stderr, "lms sim: unknown option '%s'; see 'lms help'\n", arg);
      return -1;
    } else if (a->input[0] == '\0') {
      if (lms__cli_path("sim", "the trace", arg, a->input, sizeof a->input))
        return -1;
    } else {
      fprintf(stderr, "lms sim: unexpected argument '%s' (the workload is "
                      "'%s')\n", arg, a->input);
      return -1;
    }
#undef NEXT
  }
  if (a->input[0] == '\0') {
    fprintf(stderr, "lms sim: name a built-in workload (googlenet, unet3d) "
                    "or a trace file\n");
    return -1;
  }
  return 0;
}

static lms_status_t load(const lms__simcmd_args_t *a, lms__workload_t *w,
                         char *err) {
  const lms__wl_builtin_t *b = lms__wl_find_builtin(a->input);
  if (b == NULL) return lms__trace_read(a->input, w, err);
  lms__wl_params_t p = a->params;
  if (p.train < 0) p.train = 1;
  /* The source scenarios: GoogleNet at batch 10, the U-Net at batch 1. */
  if (p.batch == 0) p.batch = strcmp(b->name, "googlenet") == 0 ? 10 : 1;
  return b->build(&p, w, err);
}

lms_status_t lms__simcmd_load(const lms__simcmd_args_t *a, lms__workload_t *w,
                           char *err) {
  LMS_CHECK(load(a, w, err));
  if (a->discard_dead) {
    uint64_t bytes = 0;
    uint32_t n = lms__wl_mark_dead(w, &bytes);
    fprintf(stderr, "lms: --discard-dead: %u chunks (%.2f GB) are discarded "
                    "after their last use in each iteration\n",
            n, (double)bytes / 1e9);
  }
  return LMS_OK;
}

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

/* One row of the shared-link table. */
typedef struct shared_row {
  char link[32];
  lms__policy_t policy;
  uint64_t capacity;
  lms__shared_result_t r;
} shared_row_t;

static double pct(double now, double was) {
  return was > 0 ? 100.0 * (now / was - 1.0) : 0.0;
}

static void print_shared_header(FILE *f, int gpus) {
  fprintf(f, "\n%d GPUs per host link, each running this workload; per GPU, "
             "against the same GPU alone\n", gpus);
  fprintf(f, "%-8s %-9s %6s %9s %9s %7s %15s %7s %15s %7s %11s %11s\n",
          "link", "policy", "GiB", "alone ms", "shared ms", "time",
          "H2D GB/s", "change", "D2H GB/s", "change", "link GB/s",
          "busy%");
}

static void print_shared_row(FILE *f, const shared_row_t *row) {
  const lms__shared_result_t *r = &row->r;
  double alone = (double)r->alone.last.time_ns;
  fprintf(f, "%-8s %-9s %6.1f %9.1f %9.1f %+6.1f%% %6.2f -> %5.2f %+6.1f%% "
             "%6.2f -> %5.2f %+6.1f%% %5.1f/%5.1f %5.1f/%5.1f\n",
          row->link, kPolicyNames[row->policy],
          (double)row->capacity / (1ull << 30), ms((uint64_t)alone),
          r->iter_ns / 1e6, pct(r->iter_ns, alone), r->alone_h2d_gbps,
          r->h2d_gbps, pct(r->h2d_gbps, r->alone_h2d_gbps), r->alone_d2h_gbps,
          r->d2h_gbps, pct(r->d2h_gbps, r->alone_d2h_gbps), r->link_h2d_gbps,
          r->link_d2h_gbps,
          100.0 * (double)r->alone.last.compute_ns / alone,
          100.0 * r->compute_ns / r->iter_ns);
}

static void json_shared(FILE *f, const lms__shared_result_t *r) {
  fprintf(f,
          ", \"shared\": {\"gpus_per_link\": %d, \"phases\": %d, "
          "\"rounds\": %d, \"samples\": %d, \"alone_iteration_ns\": %llu, "
          "\"iteration_ns\": %.0f, \"iteration_min_ns\": %.0f, "
          "\"iteration_max_ns\": %.0f, \"iteration_change\": %.4f, "
          "\"alone_h2d_gbps\": %.3f, \"h2d_gbps\": %.3f, "
          "\"h2d_change\": %.4f, \"alone_d2h_gbps\": %.3f, "
          "\"d2h_gbps\": %.3f, \"d2h_change\": %.4f, "
          "\"link_h2d_gbps\": %.3f, \"link_d2h_gbps\": %.3f, "
          "\"alone_gpu_busy\": %.4f, \"gpu_busy\": %.4f}",
          r->gpus, r->phases, r->rounds, r->samples,
          (unsigned long long)r->alone.last.time_ns, r->iter_ns,
          r->iter_min_ns, r->iter_max_ns,
          pct(r->iter_ns, (double)r->alone.last.time_ns) / 100.0,
          r->alone_h2d_gbps, r->h2d_gbps,
          pct(r->h2d_gbps, r->alone_h2d_gbps) / 100.0, r->alone_d2h_gbps,
          r->d2h_gbps, pct(r->d2h_gbps, r->alone_d2h_gbps) / 100.0,
          r->link_h2d_gbps, r->link_d2h_gbps,
          (double)r->alone.last.compute_ns / (double)r->alone.last.time_ns,
          r->compute_ns / r->iter_ns);
}


static void print_row(FILE *f, const char *link, const char *policy,
                      uint64_t capacity, const lms__replay_result_t *r,
                      uint64_t inmem_ns) {
  const lms__replay_iter_t *l = &r->last;
  fprintf(f, "%-8s %-9s %6.1f %9.1f %6.2fx %8.1f %6.3fx %8.1f %6.3fx %5.1f "
             "%7.2f %7.2f %8.1f %5llu %5llu %5llu %6.1f %3d%s\n",
          link, policy, (double)capacity / (1ull << 30), ms(l->time_ns),
          (double)l->time_ns / (double)inmem_ns, ms(r->overlap_bound_ns),
          (double)l->time_ns / (double)r->overlap_bound_ns,
          ms(r->lower.time_ns), (double)l->time_ns / (double)r->lower.time_ns,
          100.0 * (double)l->compute_ns / (double)l->time_ns, gb(l->bytes_h2d),
          gb(l->bytes_d2h), ms(l->stall_ns),
          (unsigned long long)l->prefetch_hits,
          (unsigned long long)l->prefetch_late,
          (unsigned long long)l->demand_misses,
          100.0 * lms__replay_hit_rate(l), r->iterations,
          r->settled == 0 ? "!" : "");
}

static void print_header(FILE *f) {
  fprintf(f, "%-8s %-9s %6s %9s %7s %8s %7s %8s %7s %5s %7s %7s %8s %5s %5s "
             "%5s %6s %3s\n",
          "link", "policy", "GiB", "iter ms", "x mem", "bound", "x bound",
          "lower", "x lower", "busy%", "H2D GB", "D2H GB", "stall ms", "hits", "late", "miss",
          "hit%", "it");
}

static void json_row(FILE *f, const char *link, const char *policy,
                     uint64_t capacity, const lms__replay_result_t *r,
                     uint64_t inmem_ns, int first,
                     const lms__shared_result_t *shared) {
  const lms__replay_iter_t *l = &r->last;
  char cut_list[48] = "";
  for (int i = 0, o = 0; i < r->lower.cut_nsteps && i < 3; i++)
    o += snprintf(cut_list + o, sizeof cut_list - (size_t)o, "%s%u",
                  i ? ", " : "", r->lower.cut_steps[i]);
  fprintf(f,
          "%s\n    {\"link\": \"%s\", \"policy\": \"%s\", \"capacity\": %llu, "
          "\"iteration_ns\": %llu, \"in_memory_ns\": %llu, "
          "\"overlap_bound_ns\": %llu, \"compute_ns\": %llu, "
          "\"gpu_busy\": %.4f, \"bytes_h2d\": %llu, \"bytes_d2h\": %llu, "
          "\"stall_ns\": %llu, \"prefetches\": %llu, \"prefetch_hits\": %llu, "
          "\"prefetch_late\": %llu, \"prefetch_wasted\": %llu, "
          "\"prefetch_open_before\": %llu, \"prefetch_open_after\": %llu, "
          "\"demand_misses\": %llu, \"cache_hits\": %llu, "
          "\"prefetch_hit_rate\": %.4f, \"device_peak\": %llu, "
          "\"schedule\": \"%s\", \"period\": %u, "
          "\"lower_bound_ns\": %llu, \"min_bytes_h2d\": %llu, "
          "\"min_bytes_d2h\": %llu, \"min_copies_h2d\": %llu, "
          "\"min_copies_d2h\": %llu, \"split_bound_ns\": %llu, "
          "\"split_step\": %u, \"cut_bound_ns\": %llu, "
          "\"cut_steps\": [%s], \"iterations\": %d, \"settled\": %s",
          first ? "" : ",", link, policy, (unsigned long long)capacity,
          (unsigned long long)l->time_ns, (unsigned long long)inmem_ns,
          (unsigned long long)r->overlap_bound_ns,
          (unsigned long long)l->compute_ns,
          (double)l->compute_ns / (double)l->time_ns,
          (unsigned long long)l->bytes_h2d, (unsigned long long)l->bytes_d2h,
          (unsigned long long)l->stall_ns, (unsigned long long)l->prefetches,
          (unsigned long long)l->prefetch_hits,
          (unsigned long long)l->prefetch_late,
          (unsigned long long)l->prefetch_wasted,
          (unsigned long long)l->prefetch_open_before,
          (unsigned long long)l->prefetch_open_after,
          (unsigned long long)l->demand_misses,
          (unsigned long long)l->cache_hits, lms__replay_hit_rate(l),
          (unsigned long long)r->device_peak, r->schedule, r->period,
          (unsigned long long)r->lower.time_ns,
          (unsigned long long)r->lower.h2d_bytes,
          (unsigned long long)r->lower.d2h_bytes,
          (unsigned long long)r->lower.h2d_copies,
          (unsigned long long)r->lower.d2h_copies,
          (unsigned long long)r->lower.split_ns, r->lower.split_step,
          (unsigned long long)r->lower.cut_ns, cut_list,
          r->iterations,
          r->settled < 0 ? "null" : r->settled ? "true" : "false");
  if (shared != NULL) json_shared(f, shared);
  fprintf(f, "}");
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
            cal.speedup, a.links[0].name, kPolicyNames[a.policies[0]],
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
                 "two iterations in a row agree within 0.5 %% (%d to %d; "
                 "--iterations N for N), the last one measured\n\n",
            ms(inmem_ns), LMS__REPLAY_SETTLE_MIN, LMS__REPLAY_SETTLE_MAX);
  else
    fprintf(out, "in memory: %.1f ms per iteration; %d iterations per run, "
                 "the last one measured\n\n", ms(inmem_ns), a.iterations);
  print_header(out);
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
                 kPolicyNames[a.policies[p]], a.capacities[c]);
        if (lms__simcmd_one(&w, opts, &a.links[l], a.capacities[c], a.policies[p],
                         a.iterations, a.declare, &r, err) != LMS_OK) {
          fprintf(out, "%-8s %-9s failed: %s\n", a.links[l].name,
                  kPolicyNames[a.policies[p]], err);
          rc = 1;
          continue;
        }
        print_row(out, a.links[l].name, kPolicyNames[a.policies[p]],
                  a.capacities[c], &r, inmem_ns);
        shared_row_t *row = NULL;
        if (shared != NULL) {
          row = &shared[nshared];
          snprintf(row->link, sizeof row->link, "%s", a.links[l].name);
          row->policy = a.policies[p];
          row->capacity = a.capacities[c];
          lms__opts_t o;
          lms__simcmd_one_opts(&o, opts, &a.links[l], a.capacities[c], a.policies[p]);
          if (lms__replay_shared(&w, &o, a.iterations, a.declare,
                                 a.gpus_per_link, &row->r, err) != LMS_OK) {
            fprintf(out, "%-8s %-9s sharing the link failed: %s\n",
                    a.links[l].name, kPolicyNames[a.policies[p]], err);
            rc = 1;
            row = NULL;
          } else {
            nshared++;
          }
        }
        if (json != NULL)
          json_row(json, a.links[l].name, kPolicyNames[a.policies[p]],
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
               "step, or its cycle at two or three); "
               "hit%%: prefetch hits over acquires that needed data brought "
               "in; it: iterations run (! : not settled)\n");
  if (nshared > 0) {
    print_shared_header(out, a.gpus_per_link);
    for (size_t i = 0; i < nshared; i++) print_shared_row(out, &shared[i]);
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
