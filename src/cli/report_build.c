/* report_build.c - the content of `lms report`'s workload report,
 * computed once: every row's replays, the in-memory run, the timelines and
 * the steps they show, the time against the GPU limit and each link's
 * verdict.  The writers (report_page.c, report_json.c, the charts) only
 * read what is computed here.
 *
 * Invariant: every predicted number is a replay through the runtime on the
 * simulated device, run as `lms sim` runs it, so the two agree. */
#include <stdlib.h>
#include <string.h>

#include "cli/report_parts.h"
#include "replay/shared.h"

const char *lms__report_policy_name(lms__policy_t p) {
  return p == LMS_POLICY_ONDEMAND ? "ondemand"
         : p == LMS_POLICY_LRU    ? "lru"
                                  : "schedule";
}

/* The options of one replay of w on a link, as `lms sim` runs it
 * (lms__simcmd_one): the simulated device timing only, -lms 0 unless -lms
 * was given, no trace or stats files written by the replay itself. */
void lms__report_run_opts(lms__opts_t *o, const lms__opts_t *base,
                          const lms__link_t *link, uint64_t capacity,
                          lms__policy_t policy) {
  lms__simcmd_one_opts(o, base, link, capacity, policy);
  o->device = LMS_DEVICE_SIM;
  o->trace = o->trace_buf;
  o->trace_buf[0] = '\0';
  o->stats = o->stats_buf;
  o->stats_buf[0] = '\0';
}

lms_status_t lms__report_run(const lms__workload_t *w,
                             const lms__opts_t *base, const lms__link_t *link,
                             uint64_t capacity, lms__policy_t policy,
                             int iterations, lms__timeline_t *tl,
                             lms__replay_result_t *out, char *err) {
  lms__opts_t o;
  lms__report_run_opts(&o, base, link, capacity, policy);
  if (tl != NULL && iterations == LMS__REPLAY_SETTLE) {
    /* A timeline needs to know the iteration measured: the replay that
     * settles says which, and the simulated device repeats it exactly. */
    LMS_CHECK(lms__replay_run(w, &o, iterations, 0, out, err));
    iterations = out->measured + 1;
  }
  if (tl != NULL)
    return lms__replay_run_timeline(w, &o, iterations, tl, out, err);
  return lms__replay_run(w, &o, iterations, 0, out, err);
}

/* The window of steps to draw: the given one, or the `count` consecutive
 * steps of the measured iteration in which compute waited longest. */
static void pick_window(lms__report_tline_t *t, uint32_t nsteps, int given,
                        uint32_t first, uint32_t count) {
  uint64_t *start = calloc(nsteps, sizeof *start);
  uint64_t *end = calloc(nsteps, sizeof *end);
  uint64_t *gap = calloc(nsteps, sizeof *gap);
  if (start == NULL || end == NULL || gap == NULL) goto out;
  for (size_t i = 0; i < t->tl.n; i++) {
    const lms__tl_span_t *s = &t->tl.spans[i];
    if (s->engine != LMS__TL_COMPUTE || s->step >= nsteps) continue;
    start[s->step] = s->start_ns;
    end[s->step] = s->end_ns;
  }
  uint64_t prev = t->tl.origin_ns;
  for (uint32_t s = 0; s < nsteps; s++) {
    gap[s] = start[s] > prev ? start[s] - prev : 0;
    if (end[s] > prev) prev = end[s];
  }
  if (count > nsteps) count = nsteps;
  if (!given) {
    uint64_t sum = 0, best = 0;
    first = 0;
    for (uint32_t s = 0; s < nsteps; s++) {
      sum += gap[s];
      if (s >= count) sum -= gap[s - count];
      if (s + 1 >= count && sum > best) {
        best = sum;
        first = s + 1 - count;
      }
    }
  }
  if (first + count > nsteps) first = nsteps - count;
  t->first = first;
  t->count = count;
  t->t0 = start[first] - gap[first];
  t->t1 = end[first + count - 1];
  for (uint32_t s = first; s < first + count; s++) {
    t->waiting += gap[s];
    t->busy += end[s] - start[s];
  }
out:
  free(start);
  free(end);
  free(gap);
}

/* Note [A report's verdict]
 * A reader opens a report to learn one thing first: does the workload run
 * well on this link, and if not, is it the link or the schedule.  So the
 * report begins with a sentence per link, set against the two yardsticks
 * it has: the in-memory time (what a GPU holding everything takes) and the
 * least time any policy can take over this link at this capacity (Note [A
 * lower bound no policy can beat] in replay/bound.c).  Within 5 % of in
 * memory the link costs nothing; where the bound itself is more than 5 %
 * over in memory and lms within 10 % of the bound, the link is the limit
 * and only a faster link (or a larger GPU) helps; otherwise a better
 * schedule could gain up to the difference to the bound. */
static void judge(lms__report_row_t *row, uint64_t mem_ns) {
  const lms__replay_result_t *r = &row->lms;
  row->x_memory = (double)r->last.time_ns / (double)mem_ns;
  row->x_lower = r->lower.time_ns ? (double)r->last.time_ns /
                                        (double)r->lower.time_ns
                                  : 1.0;
  /* The link is the limit only where the bound itself is over the
   * in-memory time: a bound at compute says no policy need wait at all. */
  int link_costs = (double)r->lower.time_ns > 1.05 * (double)mem_ns;
  row->verdict = row->x_memory <= 1.05 ? LMS__VERDICT_MEMORY
                 : link_costs && row->x_lower <= 1.10 ? LMS__VERDICT_LINK
                                                      : LMS__VERDICT_SCHEDULE;
}

/* Timelines: the run's link; or, comparing, the slowest PCIe link asked
 * for beside the fastest NVLink (the source document's contrast). */
static void pick_links(const lms__report_t *r, const lms__link_t *links,
                       size_t nlinks, const lms__link_t *pick[2]) {
  pick[0] = pick[1] = NULL;
  if (r->have_run) {
    pick[0] = &r->opts->link;
  } else if (r->compare) {
    for (size_t i = 0; i < nlinks; i++) {
      const lms__link_t *l = &links[i];
      if (strncmp(l->name, "pcie", 4) == 0 &&
          (pick[0] == NULL || l->h2d_gbps < pick[0]->h2d_gbps))
        pick[0] = l;
      if (strncmp(l->name, "nvlink", 6) == 0 &&
          (pick[1] == NULL || l->h2d_gbps > pick[1]->h2d_gbps))
        pick[1] = l;
    }
    if (pick[0] == NULL) pick[0] = &links[0];
    if (pick[1] == NULL && nlinks > 1) pick[1] = &links[nlinks - 1];
  } else {
    pick[0] = r->opts->source[LMS__OPT_link] != LMS__SRC_DEFAULT
                  ? &r->opts->link
                  : &links[0];
  }
}

int lms__report_build(lms__report_t *r, const lms__link_t *links,
                      size_t nlinks, uint32_t step_first,
                      uint32_t step_count) {
  const lms__workload_t *w = r->w;
  char err[LMS__ERRBUF];
  r->chunk_bytes = lms__wl_chunk_bytes(w);
  r->compute_ns = lms__wl_compute_ns(w);
  if (lms__simcmd_in_memory(w, r->opts, r->iters, &r->mem, err) != LMS_OK) {
    fprintf(stderr, "lms report: the in-memory run failed: %s\n", err);
    return 1;
  }
  for (size_t i = 0; i < r->nr; i++) {
    lms__report_row_t *row = &r->rows[i];
    r->measured |= row->m != NULL;
    row->ok = lms__report_run(w, r->opts, &row->link, r->capacity, r->policy,
                              r->iters, NULL, &row->lms,
                              row->fail) == LMS_OK;
    char e2[LMS__ERRBUF];
    row->od_ok = r->policy != LMS_POLICY_ONDEMAND &&
                 lms__report_run(w, r->opts, &row->link, r->capacity,
                                 LMS_POLICY_ONDEMAND, r->iters, NULL, &row->od,
                                 e2) == LMS_OK;
    if (!row->ok) continue;
    judge(row, r->mem.last.time_ns);
    if (row->m != NULL) continue;
    if (r->best == NULL || row->lms.last.time_ns < r->best->lms.last.time_ns)
      r->best = row;
    if (r->worst == NULL || row->lms.last.time_ns > r->worst->lms.last.time_ns)
      r->worst = row;
  }

  const lms__link_t *pick[2];
  pick_links(r, links, nlinks, pick);
  r->tls = calloc(2, sizeof *r->tls);
  if (r->tls == NULL) {
    fprintf(stderr, "lms report: out of memory\n");
    return 1;
  }
  for (int i = 0; i < 2 && pick[i] != NULL; i++) {
    lms__report_tline_t *t = &r->tls[r->ntl++];
    lms__tl_init(&t->tl);
    t->link = *pick[i];
    if (lms__report_run(w, r->opts, pick[i], r->capacity, r->policy, r->iters,
                        &t->tl, &t->r, t->fail) != LMS_OK) {
      r->ntl--;
      lms__tl_free(&t->tl);
      fprintf(stderr, "lms report: the timeline on %s failed: %s\n",
              pick[i]->name, t->fail);
      continue;
    }
    t->ok = 1;
  }
  /* The first link picks the window; the second shows the same steps. */
  for (int i = 0; i < r->ntl; i++)
    pick_window(&r->tls[i], w->nsteps, r->steps_given || i > 0,
                i > 0 ? r->tls[0].first : step_first, step_count);

  /* Note [How much GPU a workload needs]: on the timelines' links. */
  for (int i = 0; i < r->ntl && i < 2; i++) {
    lms__limit_set_t *l = &r->limits[r->nlimits];
    l->link = r->tls[i].link.name;
    l->n = lms__report_limits(w, r->opts, &r->tls[i].link, r->policy, r->iters,
                              l->points);
    if (l->n > 0) r->nlimits++;
  }

  /* Last: the U-Net comparison calibrates the workload's compute. */
  r->unet = lms__report_unet_build(r);
  return 0;
}

void lms__report_free(lms__report_t *r) {
  for (int i = 0; i < r->ntl; i++) lms__tl_free(&r->tls[i].tl);
  free(r->tls);
  r->tls = NULL;
  r->ntl = 0;
  lms__report_unet_free(r->unet);
  r->unet = NULL;
}
