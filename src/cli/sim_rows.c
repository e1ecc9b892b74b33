/* sim_rows.c - the tables and JSON objects `lms sim` writes for its runs
 * (sim_parts.h). */
#include <stdio.h>

#include "cli/sim_parts.h"

static double ms(uint64_t ns) { return (double)ns / 1e6; }
static double gb(uint64_t b) { return (double)b / 1e9; }

static double pct(double now, double was) {
  return was > 0 ? 100.0 * (now / was - 1.0) : 0.0;
}

void lms__simcmd_print_shared_header(FILE *f, int gpus, int board) {
  if (board)
    fprintf(f, "\n%d ranks on one host link, each its own process with its "
               "own workload; this rank, against itself alone\n", gpus);
  else
    fprintf(f, "\n%d GPUs per host link, each running this workload; per "
               "GPU, against the same GPU alone\n", gpus);
  fprintf(f, "%-8s %-9s %6s %9s %9s %7s %15s %7s %15s %7s %11s %11s\n",
          "link", "policy", "GiB", "alone ms", "shared ms", "time",
          "H2D GB/s", "change", "D2H GB/s", "change", "link GB/s",
          "busy%");
}

void lms__simcmd_print_shared_row(FILE *f, const shared_row_t *row) {
  const lms__shared_result_t *r = &row->r;
  double alone = (double)r->alone.last.time_ns;
  fprintf(f, "%-8s %-9s %6.1f %9.1f %9.1f %+6.1f%% %6.2f -> %5.2f %+6.1f%% "
             "%6.2f -> %5.2f %+6.1f%% %5.1f/%5.1f %5.1f/%5.1f\n",
          row->link, lms__simcmd_policy_names[row->policy],
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
          ", \"shared\": {\"gpus_per_link\": %d, \"in_step\": %s, "
          "\"link_group\": %s, \"phases\": %d, "
          "\"rounds\": %d, \"samples\": %d, \"alone_iteration_ns\": %llu, "
          "\"iteration_ns\": %.0f, \"iteration_min_ns\": %.0f, "
          "\"iteration_max_ns\": %.0f, \"iteration_change\": %.4f, "
          "\"alone_h2d_gbps\": %.3f, \"h2d_gbps\": %.3f, "
          "\"h2d_change\": %.4f, \"alone_d2h_gbps\": %.3f, "
          "\"d2h_gbps\": %.3f, \"d2h_change\": %.4f, "
          "\"link_h2d_gbps\": %.3f, \"link_d2h_gbps\": %.3f, "
          "\"alone_gpu_busy\": %.4f, \"gpu_busy\": %.4f}",
          r->gpus, r->in_step ? "true" : "false", r->board ? "true" : "false",
          r->phases, r->rounds, r->samples,
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


void lms__simcmd_print_row(FILE *f, const char *link, const char *policy,
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

void lms__simcmd_print_header(FILE *f) {
  fprintf(f, "%-8s %-9s %6s %9s %7s %8s %7s %8s %7s %5s %7s %7s %8s %5s %5s "
             "%5s %6s %3s\n",
          "link", "policy", "GiB", "iter ms", "x mem", "bound", "x bound",
          "lower", "x lower", "busy%", "H2D GB", "D2H GB", "stall ms", "hits", "late", "miss",
          "hit%", "it");
}

void lms__simcmd_json_row(FILE *f, const char *link, const char *policy,
                     uint64_t capacity, const lms__replay_result_t *r,
                     uint64_t inmem_ns, int first,
                     const lms__shared_result_t *shared) {
  const lms__replay_iter_t *l = &r->last;
  char cut_list[48] = "";
  for (int i = 0, o = 0; i < r->lower.cut_nsteps && i < 3; i++)
    o += snprintf(cut_list + o, sizeof cut_list - (size_t)o, "%s%u",
                  i ? ", " : "", r->lower.cut_steps[i]);
  char chain_list[LMS__CHAIN_SHOWN * 12] = "";
  for (uint32_t i = 0, o = 0; i < r->lower.chain_ncuts && i < LMS__CHAIN_SHOWN;
       i++)
    o += (uint32_t)snprintf(chain_list + o, sizeof chain_list - o, "%s%u",
                            i ? ", " : "", r->lower.chain_steps[i]);
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
          "\"schedule\": \"%s\", \"period\": %u, \"ahead\": \"%s\", "
          "\"leaves_late\": %s, \"in_order\": %s, \"trial_window_ns\": %llu, "
          "\"replaced\": %llu, \"replaced_ns\": %llu, "
          "\"plan_in_bytes\": %llu, "
          "\"lower_bound_ns\": %llu, \"min_bytes_h2d\": %llu, "
          "\"min_bytes_d2h\": %llu, \"min_copies_h2d\": %llu, "
          "\"min_copies_d2h\": %llu, \"split_bound_ns\": %llu, "
          "\"split_step\": %u, \"cut_bound_ns\": %llu, "
          "\"cut_steps\": [%s], \"chain_bound_ns\": %llu, "
          "\"chain_cuts\": %u, \"chain_first_steps\": [%s], "
          "\"both_bound_ns\": %llu, "
          "\"iterations\": %d, \"settled\": %s",
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
          r->ahead, r->late ? "true" : "false", r->order ? "true" : "false",
          (unsigned long long)r->trial_window_ns,
          (unsigned long long)r->replaced,
          (unsigned long long)r->replaced_ns,
          (unsigned long long)r->plan_in,
          (unsigned long long)r->lower.time_ns,
          (unsigned long long)r->lower.h2d_bytes,
          (unsigned long long)r->lower.d2h_bytes,
          (unsigned long long)r->lower.h2d_copies,
          (unsigned long long)r->lower.d2h_copies,
          (unsigned long long)r->lower.split_ns, r->lower.split_step,
          (unsigned long long)r->lower.cut_ns, cut_list,
          (unsigned long long)r->lower.chain_ns, r->lower.chain_ncuts,
          chain_list, (unsigned long long)r->lower.both_ns, r->iterations,
          r->settled < 0 ? "null" : r->settled ? "true" : "false");
  if (shared != NULL) json_shared(f, shared);
  fprintf(f, "}");
}
