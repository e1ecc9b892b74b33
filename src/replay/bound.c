/* bound.c - the fewest bytes and the least time any policy can take for an
 * iteration of a workload at a capacity: the yardstick `lms sim` measures
 * the scheduler against.
 *
 * Note [A lower bound no policy can beat]
 * The overlap bound, max(compute, H2D bytes / rate, D2H bytes / rate),
 * takes the bytes a run moved, so a policy that moves too much is not
 * blamed for it.  Here the bytes come from the trace and the capacity
 * alone.
 *
 * Bytes.  Between two uses of a host-homed chunk (a "gap"), a policy
 * either keeps it on the device, holding its bytes at every step strictly
 * inside the gap, or brings it in again at the second use, if that use
 * reads.  At every step t the step's own chunks are on the device, so the
 * chunks kept across t have at most C - S(t) bytes, C the capacity and S(t)
 * the bytes of t's chunks.  Letting a gap be kept in part (a fraction of
 * its bytes) relaxes this to a linear programme whose optimum is at most
 * what any policy brings in: maximise the bytes kept, sum y(g) with
 * 0 <= y(g) <= size(g), under sum over gaps across t of y(g) <= C - S(t).
 * Its matrix has consecutive ones, and all bytes are worth the same, so
 * taking the gaps by their end, each as much as the tightest step inside
 * it allows, is optimal (the kept bytes never block a later-ending gap
 * more than any other choice would).  The gaps counted are those ending in
 * one iteration, the previous iteration supplying the gaps that cross into
 * it; gaps ending earlier are dropped, which only loosens the bound.  A
 * range-add, range-max tree over the negated room (core/rangetree.h)
 * makes each gap O(log n): O(r log n) for r references.
 *
 * Write-backs take the same programme over one gap of each dirty run: a
 * run goes from a use that writes to the next one that writes (around the
 * iteration for a chunk that lives on), or to the chunk's end, or to a
 * use after which its bytes are dead.  If the chunk leaves anywhere in
 * the run, its bytes go home once, before it leaves or earlier, even
 * when the next use overwrites them, since no policy may lose bytes the
 * program did not discard; so charging the run's longest gap (the one
 * least likely to be kept) and no other is a bound.  (An activation,
 * written, read by the next layer and read again in backward, is charged
 * across the long gap; charging only the gap right after the write, as
 * before, charged nothing: gpt2-medium at 2x rose from 3.4 to 7.8 GB.)
 * A second bound: at each step p, of the chunks written earlier in the
 * iteration and kept past p (until their next use, or for good), at most
 * C - S(p) bytes are on the device, so the rest, D(p) bytes, went home;
 * the larger of the two is the write-back bound.  Each direction's
 * programme has the whole capacity to itself, so each is a bound on its
 * own.
 *
 * Time.  max(compute, H2D min / rate, D2H min / rate), and, splitting the
 * iteration at each step p: of the chunks of gaps across p that lie
 * inside the iteration, at most C - S(p) bytes are on the device when p's
 * compute starts.  So of those read again later in the iteration, E(p)
 * bytes (their total less C - S(p)) are absent then: their copies in
 * start after it and end before the iteration does.  And of those written
 * earlier in the iteration, D(p) bytes (likewise) are absent then, so
 * they went home before it.  So an iteration takes at least
 *   max(compute before p, D(p) / D2H rate) + max(compute from p, E(p) / H2D rate)
 * which catches training, whose forward must write back before backward
 * can fetch.  The split sees one iteration only, not what the previous
 * one left dirty; Notes [Cuts around the cycle] and [A chain of cuts]
 * (cuts.c) cut the cycle at two steps or more and bound what each part
 * must copy each way.
 *
 * Copies.  Each direction's engine runs one copy at a time, and a copy
 * moves one chunk and costs the link's latency besides its bytes (Note
 * [Simulated time] in device/sim.c).  Every gap not kept costs a copy of
 * its own, so if the gaps not kept must hold B bytes, there are at least
 * as many of them as the fewest gaps whose sizes add up to B: k(B), the
 * largest sizes taken first, a binary search in their sorted prefix sums.
 * Each byte figure above costs B / rate + k(B) x latency; for writes the
 * sizes are those of the charged gaps, one for each dirty run, which
 * include every chunk written.  Without this, 4 KiB chunks over PCIe,
 * where the 10 us latency is 25 times the bytes' time, read as 25 to 90
 * times their bound however well they were scheduled.  A copy engine that
 * moved many chunks in one copy (cudaMemcpyBatchAsync) would pay it once
 * per batch; the runtime does not, and neither does the simulator.
 *
 * Whole chunks.  The room across a step holds whole chunks, each of a gap
 * across it, so what stays there is a sum of such sizes: a multiple of
 * G(t), the greatest common divisor of the sizes of every chunk with a
 * gap across t (those that stay are some of them).  So each step's room
 * is taken down to a multiple of G(t) before anything above uses it.
 * Where chunks are alike this is most of the gap between fractions and
 * whole chunks: 47 weight blocks of 48 MiB across every step of a
 * streamed model, with room for 22.875 of them, keep 22.  Where sizes are
 * mixed G(t) is small and nothing changes.  A sweep over the steps with a
 * count per distinct size and a tree of their gcds: O(r log r) for the
 * events' sort, O(log d) an event for d distinct sizes.
 *
 * Chunks are taken as host-homed, the freest placement: chunks a run keeps
 * on the device only constrain it more.  A "w" reference overwrites, so a
 * gap ending in one costs nothing and is not counted; a transient chunk
 * starts each iteration empty and ends at its last use; a chunk marked
 * dead after a step has no gap after it. */
#include <stdlib.h>
#include <string.h>

#include "core/rangetree.h"
#include "core/status.h"
#include "replay/cuts.h"
#include "replay/replay.h"

/* ---- Gaps ------------------------------------------------------------------ */

typedef struct gap {
  uint64_t size;
  uint32_t start, end; /* steps of the two uses, on the doubled timeline */
  int h2d;             /* the second use reads: a copy in if not kept */
  int d2h;             /* the longest gap of a dirty run (Note [A lower
                          bound no policy can beat]) */
} gap_t;

static int by_end(const void *a, const void *b) {
  const gap_t *x = a, *y = b;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return x->start > y->start ? -1 : x->start < y->start;
}

/* The bytes of the gaps that cost a copy in (d2h 0) or a write-back
 * (d2h 1) and cannot be kept, taking the gaps by their end.  The tree
 * holds the room at each step negated: its largest is the least room. */
static uint64_t unkept(gap_t *g, size_t ng, const int64_t *room, size_t m,
                       int d2h, int64_t *scratch_max, int64_t *scratch_add,
                       int64_t *scratch_neg) {
  lms__rt_t t = {.max = scratch_max, .add = scratch_add, .n = m};
  for (size_t i = 0; i < m; i++) scratch_neg[i] = -room[i];
  lms__rt_build(&t, scratch_neg);
  uint64_t cost = 0;
  for (size_t i = 0; i < ng; i++) {
    if (!(d2h ? g[i].d2h : g[i].h2d)) continue;
    if (g[i].end <= g[i].start + 1) continue; /* no step between: kept */
    int64_t free_b = -lms__rt_max(&t, g[i].start + 1, g[i].end);
    int64_t keep = free_b <= 0 ? 0
                   : (uint64_t)free_b < g[i].size ? free_b
                                                  : (int64_t)g[i].size;
    if (keep > 0) lms__rt_add(&t, g[i].start + 1, g[i].end, keep);
    cost += g[i].size - (uint64_t)keep;
  }
  return cost;
}

static int size_desc(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x > y ? -1 : x < y;
}

/* Sizes of the gaps of one direction, largest first, as prefix sums:
 * sum[i] is the bytes of the i + 1 largest. */
typedef struct sizes {
  uint64_t *sum;
  size_t n;
} sizes_t;

static void sizes_of(const gap_t *g, size_t ng, int d2h, sizes_t *out) {
  size_t n = 0;
  for (size_t i = 0; i < ng; i++)
    if (d2h ? g[i].d2h : g[i].h2d) out->sum[n++] = g[i].size;
  qsort(out->sum, n, sizeof *out->sum, size_desc);
  for (size_t i = 1; i < n; i++) out->sum[i] += out->sum[i - 1];
  out->n = n;
}

/* The fewest gaps whose sizes add up to at least `bytes` (all of them if
 * none do, which the bounds above never ask). */
static uint64_t fewest(const sizes_t *z, uint64_t bytes) {
  if (bytes == 0) return 0;
  size_t lo = 0, hi = z->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (z->sum[mid] >= bytes) hi = mid;
    else lo = mid + 1;
  }
  return lo < z->n ? lo + 1 : z->n;
}

/* The time of `bytes` over a link of `gbps` in the fewest copies. */
static uint64_t copy_time(const sizes_t *z, uint64_t bytes, double gbps,
                          double latency_us) {
  return (uint64_t)((double)bytes / gbps +
                    (double)fewest(z, bytes) * latency_us * 1e3);
}

typedef struct use {
  uint32_t step;
  unsigned access;
  int dead_after;
} use_t;

/* A dirty run: from a use that writes to the next use that writes (or
 * the chunk's end, or a use after which its bytes are dead), around the
 * iteration for a chunk that lives on.  Whatever a policy does, a run
 * whose chunk leaves the device at any point costs one write-back, so
 * charging the run's longest gap alone, the one least likely to be kept,
 * stays a bound. */
static void mark_dirty_runs(const use_t *u, uint32_t k, int wraps,
                            const int64_t *gap_of, gap_t *g) {
  for (uint32_t i = 0; i < k; i++) {
    if (!(u[i].access & LMS_ACCESS_WRITE)) continue;
    int64_t best = -1;
    uint32_t j = i;
    for (;;) {
      int64_t x = gap_of[j];
      if (x >= 0 && (best < 0 || g[x].end - g[x].start >
                                     g[best].end - g[best].start))
        best = x;
      if (u[j].dead_after) break;
      uint32_t next = j + 1;
      if (next == k) {
        if (!wraps) break;
        next = 0;
      }
      if (u[next].access & LMS_ACCESS_WRITE) break;
      j = next;
    }
    if (best >= 0) g[best].d2h = 1;
  }
}

/* ---- Whole chunks (Note [A lower bound no policy can beat]) -------------- */

static uint64_t gcd64(uint64_t a, uint64_t b) {
  while (b != 0) {
    uint64_t r = a % b;
    a = b;
    b = r;
  }
  return a;
}

static int u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

typedef struct span_ev {
  uint32_t at;   /* step */
  uint32_t size; /* index among the distinct sizes */
  int32_t d;     /* +1 from here, -1 from here */
} span_ev_t;

static int ev_cmp(const void *a, const void *b) {
  const span_ev_t *x = a, *y = b;
  return x->at < y->at ? -1 : x->at > y->at;
}

/* Adds the steps strictly between uses at a and b (b may pass n: round
 * the cycle) as events; a span of no step adds none. */
static size_t span(span_ev_t *ev, size_t ne, uint32_t a, uint32_t b,
                   uint32_t n, uint32_t size) {
  if (b <= a + 1) return ne;
  uint32_t lo = a + 1, hi = b; /* [lo, hi) on the doubled timeline */
  if (lo >= n) {
    lo -= n;
    hi -= n;
  }
  if (hi <= n) {
    ev[ne++] = (span_ev_t){lo, size, 1};
    if (hi < n) ev[ne++] = (span_ev_t){hi, size, -1};
  } else {
    ev[ne++] = (span_ev_t){lo, size, 1};
    ev[ne++] = (span_ev_t){0, size, 1};
    ev[ne++] = (span_ev_t){hi - n, size, -1};
  }
  return ne;
}

/* Takes room[t] (and room[t + n]) down to a multiple of G(t).  Returns
 * LMS_ERR_HOST_OOM without changing room if memory runs out. */
static lms_status_t whole_chunks(const lms__workload_t *w, const use_t *uses,
                                 const uint32_t *first, const uint32_t *count,
                                 int64_t *room) {
  uint32_t n = w->nsteps, nc = w->nchunks;
  uint64_t *sz = malloc(((size_t)nc + 1) * sizeof *sz);
  /* Each use starts at most one span, split in at most three events. */
  span_ev_t *ev = malloc((3 * (size_t)w->nrefs + 1) * sizeof *ev);
  uint32_t *cnt = NULL;
  uint64_t *tree = NULL;
  lms_status_t st = LMS_ERR_HOST_OOM;
  if (sz == NULL || ev == NULL) goto done;
  for (uint32_t c = 0; c < nc; c++) sz[c] = w->chunks[c].size;
  qsort(sz, nc, sizeof *sz, u64_cmp);
  size_t d = 0;
  for (uint32_t c = 0; c < nc; c++)
    if (d == 0 || sz[d - 1] != sz[c]) sz[d++] = sz[c];
  size_t leaves = 1;
  while (leaves < d) leaves *= 2;
  cnt = calloc(d + 1, sizeof *cnt);
  tree = calloc(2 * leaves, sizeof *tree);
  if (cnt == NULL || tree == NULL) goto done;
  size_t ne = 0;
  for (uint32_t c = 0; c < nc; c++) {
    const use_t *u = &uses[first[c]];
    uint32_t k = count[c];
    uint64_t size = w->chunks[c].size;
    uint32_t lo = 0, hi = (uint32_t)d;
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (sz[mid] < size) lo = mid + 1;
      else hi = mid;
    }
    for (uint32_t i = 0; i < k; i++) {
      if (u[i].dead_after) continue;
      if (i + 1 < k)
        ne = span(ev, ne, u[i].step, u[i + 1].step, n, lo);
      else if (!w->chunks[c].transient)
        ne = span(ev, ne, u[i].step, u[0].step + n, n, lo);
    }
  }
  qsort(ev, ne, sizeof *ev, ev_cmp);
  for (uint32_t t = 0, e = 0; t < n; t++) {
    for (; e < ne && ev[e].at == t; e++) {
      uint32_t i = ev[e].size;
      cnt[i] = (uint32_t)((int64_t)cnt[i] + ev[e].d);
      size_t x = leaves + i;
      tree[x] = cnt[i] > 0 ? sz[i] : 0;
      for (x /= 2; x >= 1; x /= 2) tree[x] = gcd64(tree[2 * x], tree[2 * x + 1]);
    }
    uint64_t g = tree[1];
    if (g > 1 && room[t] > 0) {
      room[t] -= room[t] % (int64_t)g;
      room[t + n] = room[t];
    }
  }
  st = LMS_OK;
done:
  free(sz);
  free(ev);
  free(cnt);
  free(tree);
  return st;
}

/* The gaps of one chunk around the cycle of n steps (Note [Cuts around
 * the cycle] in cuts.c): from each use to the next, wrapping for a
 * chunk that lives on; each knows whether its second use reads and how
 * many steps back the bytes it holds were written (a transient chunk
 * starts each iteration with none, and bytes dead after a use are none).
 * Returns how many it wrote to cg (at most k). */
static size_t cycle_gaps(const use_t *u, uint32_t k, uint32_t n, uint64_t size,
                         int transient, lms__cgap_t *cg) {
  int64_t lw = -1; /* the step of the last write, n .. 2n - 1 this time */
  if (!transient)
    for (uint32_t i = 0; i < k; i++) {
      if (u[i].access & LMS_ACCESS_WRITE) lw = u[i].step;
      if (u[i].dead_after) lw = -1;
    }
  size_t ng = 0;
  for (uint32_t i = 0; i < k; i++) {
    int64_t t = (int64_t)u[i].step + n;
    if (u[i].access & LMS_ACCESS_WRITE) lw = t;
    if (u[i].dead_after) {
      lw = -1;
      continue;
    }
    int last = i + 1 == k;
    if (last && transient) break;
    const use_t *nx = last ? &u[0] : &u[i + 1];
    int reads = (nx->access & LMS_ACCESS_READ) != 0;
    if (!reads && lw < 0) continue;
    uint32_t len = last ? nx->step + n - u[i].step : nx->step - u[i].step;
    cg[ng++] = (lms__cgap_t){.size = size,
                             .start = u[i].step,
                             .len = len,
                             .back = lw < 0 ? 0 : (uint32_t)(t - lw),
                             .reads = (uint8_t)reads,
                             .dirty = (uint8_t)(lw >= 0)};
  }
  return ng;
}

/* The most both ways move at once (Note [Both ways at once in the bound]
 * in cuts.c): ri + ro unless the link shares a rate below that. */
static double both_ways_rate(double ri, double ro, double both) {
  if (!(both > 0) || both >= ri + ro) return ri + ro;
  double lo = ri + ro / 10 > ro + ri / 10 ? ri + ro / 10 : ro + ri / 10;
  return both < lo ? lo : both;
}

lms_status_t lms__lower_bound(const lms__workload_t *w, uint64_t capacity,
                              double h2d_gbps, double d2h_gbps,
                              double both_gbps, double latency_us,
                              lms__lower_bound_t *out, char *err) {
  memset(out, 0, sizeof *out);
  uint32_t n = w->nsteps;
  if (n == 0 || capacity == 0 || !(h2d_gbps > 0) || !(d2h_gbps > 0) ||
      !(latency_us >= 0) || !(both_gbps >= 0)) {
    lms__errf(err, "lower bound: needs steps, a capacity and link rates");
    return LMS_ERR_INVALID;
  }
  double rs = both_ways_rate(h2d_gbps, d2h_gbps, both_gbps);
  size_t m = 2 * (size_t)n;
  /* Each chunk's uses in one iteration, a step's references merged. */
  uint32_t *count = calloc(w->nchunks + 1, sizeof *count);
  uint32_t *first = calloc(w->nchunks + 1, sizeof *first);
  use_t *uses = malloc(((size_t)w->nrefs + 1) * sizeof *uses);
  int64_t *room = malloc(m * sizeof *room);
  int64_t *tmax = malloc(lms__rt_words(m) * sizeof *tmax);
  int64_t *tadd = malloc(lms__rt_words(m) * sizeof *tadd);
  int64_t *tneg = malloc(m * sizeof *tneg);
  gap_t *g = malloc((2 * (size_t)w->nrefs + 1) * sizeof *g);
  int64_t *gap_of = malloc(((size_t)w->nrefs + 1) * sizeof *gap_of);
  uint64_t *step_bytes = calloc(n, sizeof *step_bytes);
  /* Per step of the iteration, differences of the bytes across it: of
   * gaps read again later in the iteration, and of chunks written earlier
   * in it that must be kept (Note [A lower bound no policy can beat]). */
  int64_t *across = calloc((size_t)n + 1, sizeof *across);
  int64_t *dirty = calloc((size_t)n + 1, sizeof *dirty);
  sizes_t zin = {.sum = malloc((2 * (size_t)w->nrefs + 1) * sizeof *zin.sum)};
  sizes_t zout = {.sum = malloc((2 * (size_t)w->nrefs + 1) * sizeof *zout.sum)};
  /* Gaps around the cycle and each step's compute, for Note [Cuts around
   * the cycle] (cuts.c). */
  lms__cgap_t *cg = malloc(((size_t)w->nrefs + 1) * sizeof *cg);
  uint64_t *step_ns = malloc(((size_t)n + 1) * sizeof *step_ns);
  size_t ncg = 0;
  lms_status_t st = LMS_OK;
  if (!count || !first || !uses || !room || !tmax || !tadd || !tneg || !g ||
      !gap_of || !step_bytes || !across || !dirty || !zin.sum || !zout.sum ||
      !cg || !step_ns) {
    lms__errf(err, "lower bound: no host memory for %u steps", n);
    st = LMS_ERR_HOST_OOM;
    goto done;
  }
  for (uint32_t r = 0; r < w->nrefs; r++) count[w->refs[r].chunk]++;
  for (uint32_t c = 1; c <= w->nchunks; c++) first[c] = first[c - 1] + count[c - 1];
  memset(count, 0, (w->nchunks + 1) * sizeof *count);
  for (uint32_t s = 0; s < n; s++) {
    const lms__wl_step_t *sp = &w->steps[s];
    for (uint32_t k = 0; k < sp->nrefs; k++) {
      const lms__wl_ref_t *ref = &w->refs[sp->first_ref + k];
      uint32_t c = ref->chunk;
      use_t *last = count[c] ? &uses[first[c] + count[c] - 1] : NULL;
      if (last != NULL && last->step == s) {
        last->access |= ref->access;
        last->dead_after |= (int)ref->dead_after;
        continue;
      }
      uses[first[c] + count[c]++] =
          (use_t){.step = s, .access = ref->access,
                  .dead_after = (int)ref->dead_after};
      step_bytes[s] += w->chunks[c].size;
    }
  }
  for (uint32_t s = 0; s < n; s++) {
    int64_t r = (int64_t)capacity - (int64_t)step_bytes[s];
    room[s] = room[s + n] = r;
  }
  if (whole_chunks(w, uses, first, count, room) != LMS_OK) {
    lms__errf(err, "lower bound: no host memory for %u chunks", w->nchunks);
    st = LMS_ERR_HOST_OOM;
    goto done;
  }
  size_t ng = 0;
  for (uint32_t c = 0; c < w->nchunks; c++) {
    const use_t *u = &uses[first[c]];
    uint32_t k = count[c];
    uint64_t size = w->chunks[c].size;
    int written = 0;
    for (uint32_t i = 0; i < k; i++) gap_of[i] = -1;
    for (uint32_t i = 0; i < k; i++) {
      written |= (u[i].access & LMS_ACCESS_WRITE) != 0;
      int last = i + 1 == k;
      if (last && w->chunks[c].transient) break; /* freed after it */
      if (u[i].dead_after) continue;
      /* The next use, in this iteration or (wrapping) the next.  A chunk
       * that use overwrites needs nothing brought in, but if it was
       * written it must still be written home to leave: no policy may
       * lose bytes the program did not discard. */
      const use_t *nx = last ? &u[0] : &u[i + 1];
      int reads = (nx->access & LMS_ACCESS_READ) != 0;
      if (!reads && !written) continue;
      gap_of[i] = (int64_t)ng;
      gap_t *gp = &g[ng++];
      gp->size = size;
      gp->start = u[i].step + n;
      gp->end = nx->step + n + (last ? n : 0);
      gp->h2d = reads;
      gp->d2h = 0;
      /* Steps strictly between the two uses, within this iteration. */
      uint32_t a = u[i].step + 1, b = last ? n : nx->step;
      if (a < b) {
        if (reads && !last) {
          across[a] += (int64_t)size;
          across[b] -= (int64_t)size;
        }
        if (written) {
          dirty[a] += (int64_t)size;
          dirty[b] -= (int64_t)size;
        }
      }
      if (last) {
        /* A gap into the next iteration is counted as the one ending in
         * this iteration, coming from the previous. */
        gp->start -= n;
        gp->end -= n;
      }
    }
    mark_dirty_runs(u, k, !w->chunks[c].transient, gap_of, g);
    ncg += cycle_gaps(u, k, n, size, w->chunks[c].transient, cg + ncg);
  }
  qsort(g, ng, sizeof *g, by_end);
  out->h2d_bytes = unkept(g, ng, room, m, 0, tmax, tadd, tneg);
  out->d2h_bytes = unkept(g, ng, room, m, 1, tmax, tadd, tneg);
  sizes_of(g, ng, 0, &zin);
  sizes_of(g, ng, 1, &zout);
  uint64_t compute = lms__wl_compute_ns(w);
  uint64_t t = compute;
  uint64_t th = copy_time(&zin, out->h2d_bytes, h2d_gbps, latency_us);
  if (th > t) t = th;
  /* The split at each step p. */
  int64_t run = 0, drun = 0;
  uint64_t before = 0;
  for (uint32_t p = 0; p < n; p++) {
    run += across[p];
    drun += dirty[p];
    int64_t e = run - room[p], d = drun - room[p];
    /* What is written and kept past p, beyond the room, went home. */
    if (d > 0 && (uint64_t)d > out->d2h_bytes) out->d2h_bytes = (uint64_t)d;
    uint64_t left = before, right = compute - before;
    if (d > 0) {
      uint64_t x = copy_time(&zout, (uint64_t)d, d2h_gbps, latency_us);
      if (x > left) left = x;
    }
    if (e > 0) {
      uint64_t x = copy_time(&zin, (uint64_t)e, h2d_gbps, latency_us);
      if (x > right) right = x;
    }
    if (left + right > out->split_ns) {
      out->split_ns = left + right;
      out->split_step = p;
    }
    before += w->steps[p].compute_ns;
  }
  if (out->split_ns > t) t = out->split_ns;
  for (uint32_t p = 0; p < n; p++) step_ns[p] = w->steps[p].compute_ns;
  lms__cut_result_t cut;
  st = lms__cut_bound(cg, ncg, n, room, step_ns, h2d_gbps, d2h_gbps, rs,
                      &cut);
  if (st != LMS_OK) {
    lms__errf(err, "lower bound: no host memory for %u steps", n);
    goto done;
  }
  out->cut_ns = cut.ns;
  memcpy(out->cut_steps, cut.steps, sizeof cut.steps);
  out->cut_nsteps = cut.nsteps;
  if (out->cut_ns > t) t = out->cut_ns;
  out->chain_ns = cut.chain_ns;
  memcpy(out->chain_steps, cut.chain_steps, sizeof cut.chain_steps);
  out->chain_ncuts = cut.chain_ncuts;
  if (out->chain_ns > t) t = out->chain_ns;
  uint64_t td = copy_time(&zout, out->d2h_bytes, d2h_gbps, latency_us);
  if (td > t) t = td;
  /* The fewest bytes each way over the rate both share, where it is less
   * than their sum (Note [Both ways at once in the bound] in cuts.c). */
  if (rs < h2d_gbps + d2h_gbps) {
    out->both_ns =
        (uint64_t)((double)(out->h2d_bytes + out->d2h_bytes) / rs);
    if (out->both_ns > t) t = out->both_ns;
  }
  out->h2d_copies = fewest(&zin, out->h2d_bytes);
  out->d2h_copies = fewest(&zout, out->d2h_bytes);
  out->time_ns = t;
done:
  free(count);
  free(first);
  free(uses);
  free(room);
  free(tmax);
  free(tadd);
  free(tneg);
  free(g);
  free(gap_of);
  free(step_bytes);
  free(across);
  free(dirty);
  free(zin.sum);
  free(zout.sum);
  free(cg);
  free(step_ns);
  return st;
}
