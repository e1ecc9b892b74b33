/* cuts.c - the least time of an iteration cut in two around its cycle: the
 * part of the lower bound that sees which copies must run in which part
 * (Note [Two cuts around the cycle]).
 *
 * Note [Two cuts around the cycle]
 * The split of Note [A lower bound no policy can beat] (bound.c) looks at
 * one step p and at the chunks written and read within the iteration.  In
 * training that misses most of what forces the copies: the optimiser's
 * writes at the end of an iteration are dirty when the next forward
 * begins, and everything forward leaves behind is read again in
 * backward.  On gpt2-medium at 2x over pcie3 the split and the byte
 * bounds gave 0.69 s, while a schedule must bring all 8.4 GB it fetches
 * in after the peak and write 3 GB of activations home before it.
 *
 * Here the iteration is seen as a cycle, as it runs in steady state, and
 * cut at two steps p and q into A = [p, q) and B = [q, p).  A's time (from
 * p's compute starting to q's) is at least its compute and its copies'
 * bytes over each link's rate, and likewise B's; the iteration is A's
 * time plus B's.
 *
 * What copies A and B must hold comes from the chunks absent at each cut.
 * When p's compute starts, the chunks live across p (a gap between two
 * uses, around the cycle, that contains p) hold at most C - S(p) bytes
 * on the device, so the rest are absent: their blocks were given up
 * before, and a block is given up only after its write-back ends.  An
 * absent chunk whose next use reads it and falls in A (at or before q)
 * is copied in within A.  An absent chunk whose bytes were last written
 * at a step in B, before p, went home within B.  Any other absent chunk
 * costs neither part anything certain.  A policy picks which chunks are
 * absent; the bound lets it pick, byte by byte (a relaxation): free ones
 * first, then those costing one copy, then those costing both.  Cut q
 * likewise charges copies in within B and write-backs within A.
 *
 * The iteration takes at least the largest of the sums of one term of A
 * and one of B: compute, bytes in over the rate, bytes out over the rate,
 * each at its least over the policy's picks.  A pair whose terms share a
 * pick (in within A and out within B both come from cut p's) takes the
 * pick cheapest for the pair.  Each is a bound, so their largest is.
 * Copies' latency is left out: the bytes alone suffice.
 *
 * Cost.  The cut p is taken among the K steps with the most bytes absent
 * (16, or every step of a shorter iteration), q among all steps: for each
 * p, difference arrays over q's offset from p give every class of bytes
 * at both cuts in O(gaps + steps), so O(K (gaps + steps)) in all. */
#include <stdlib.h>
#include <string.h>

#include "replay/cuts.h"

#define CUT_CANDIDATES 16

/* arr[lo..hi] += v (a difference array of n + 1 entries). */
static void range_add(int64_t *arr, uint32_t lo, uint32_t hi, int64_t v) {
  if (lo > hi) return;
  arr[lo] += v;
  arr[hi + 1] -= v;
}

/* The least of in / ri + out / ro over picks of R bytes among bytes that
 * cost a copy in only (at most a), a write-back only (at most b), or both
 * (the rest): the cheaper single first. */
static double pair_cost(int64_t r, int64_t a, int64_t b, double ri, double ro) {
  if (r <= 0) return 0.0;
  double ci = 1.0 / ri, co = 1.0 / ro;
  int64_t first = ci <= co ? a : b, second = ci <= co ? b : a;
  double c1 = ci <= co ? ci : co, c2 = ci <= co ? co : ci;
  int64_t x = r < first ? r : first;
  int64_t left = r - x;
  int64_t y = left < second ? left : second;
  int64_t both = left - y;
  return (double)x * c1 + (double)y * c2 + (double)both * (ci + co);
}

static int64_t at_least0(int64_t x) { return x > 0 ? x : 0; }

typedef struct cand {
  int64_t absent;
  uint32_t step;
} cand_t;

static int by_absent(const void *a, const void *b) {
  const cand_t *x = a, *y = b;
  if (x->absent != y->absent) return x->absent > y->absent ? -1 : 1;
  return x->step < y->step ? -1 : 1;
}

lms_status_t lms__cut_bound(const lms__cgap_t *g, size_t ng, uint32_t n,
                            const int64_t *room, const uint64_t *compute,
                            double ri, double ro, lms__cut_result_t *out) {
  memset(out, 0, sizeof *out);
  if (n < 2) return LMS_OK;
  size_t m = (size_t)n + 1;
  int64_t *absent = calloc(m, sizeof *absent);
  cand_t *cand = malloc(n * sizeof *cand);
  uint64_t *pc = calloc(m + 1, sizeof *pc);
  int64_t *arr = calloc(6 * m, sizeof *arr);
  if (!absent || !cand || !pc || !arr) {
    free(absent);
    free(cand);
    free(pc);
    free(arr);
    return LMS_ERR_HOST_OOM;
  }
  /* Bytes live across each step: steps s + 1 .. s + len - 1, cyclic. */
  for (size_t i = 0; i < ng; i++) {
    uint32_t a = (g[i].start + 1) % n, cnt = g[i].len - 1;
    if (cnt == 0) continue;
    int64_t v = (int64_t)g[i].size;
    if (a + cnt <= n) {
      range_add(absent, a, a + cnt - 1, v);
    } else {
      range_add(absent, a, n - 1, v);
      range_add(absent, 0, a + cnt - n - 1, v);
    }
  }
  for (uint32_t s = 1; s < n; s++) absent[s] += absent[s - 1];
  for (uint32_t s = 0; s < n; s++) absent[s] -= room[s];
  uint32_t nc = 0;
  for (uint32_t s = 0; s < n; s++)
    if (absent[s] > 0) cand[nc++] = (cand_t){.absent = absent[s], .step = s};
  qsort(cand, nc, sizeof *cand, by_absent);
  if (nc > CUT_CANDIDATES) nc = CUT_CANDIDATES;
  for (uint32_t s = 0; s < n; s++) pc[s + 1] = pc[s] + compute[s];
  uint64_t total = pc[n];
  int64_t *pin = arr, *pout = arr + m, *pboth = arr + 2 * m;
  int64_t *qin = arr + 3 * m, *qout = arr + 4 * m, *qboth = arr + 5 * m;
  for (uint32_t ci = 0; ci < nc; ci++) {
    uint32_t p = cand[ci].step;
    memset(arr, 0, 6 * m * sizeof *arr);
    for (size_t i = 0; i < ng; i++) {
      const lms__cgap_t *x = &g[i];
      int64_t v = (int64_t)x->size;
      uint32_t d = (p + n - x->start) % n, len = x->len;
      if (d > 0 && d < len) {
        /* Across p: cut p's classes as q moves away from p; at cut q,
         * a q before p sees its write in A, a q after p its read in B. */
        uint32_t eo = len - d;
        if (x->reads) range_add(pin, eo, n - 1, v);
        if (x->dirty) {
          uint32_t ow = n - (d + x->back);
          range_add(pout, 1, ow, v);
          if (x->reads && eo <= ow) range_add(pboth, eo, ow, v);
          if (d > 1) range_add(qout, n - d + 1, n - 1, v);
        }
        if (x->reads && eo > 1) range_add(qin, 1, eo - 1, v);
      } else {
        /* Not across p: across q for q inside the gap, which ends at or
         * before p, so a read there falls in B; its write falls in A
         * when it came after p. */
        uint32_t so = (n - d) % n, eo = so + len;
        uint32_t lo = so + 1, hi = eo - 1 < n - 1 ? eo - 1 : n - 1;
        int in = x->reads, wr = x->dirty && x->back <= so;
        if (in) range_add(qin, lo, hi, v);
        if (wr) range_add(qout, lo, hi, v);
        if (in && wr) range_add(qboth, lo, hi, v);
      }
    }
    for (int a = 0; a < 6; a++)
      for (uint32_t s = 1; s < n; s++) arr[a * m + s] += arr[a * m + s - 1];
    for (uint32_t qo = 1; qo < n; qo++) {
      uint32_t q = (p + qo) % n;
      uint64_t ca = p + qo <= n ? pc[p + qo] - pc[p]
                                : total - pc[p] + pc[p + qo - n];
      double tA = (double)ca, tB = (double)(total - ca);
      /* Cut p: in within A, out within B. */
      int64_t rp = at_least0(pin[qo] + pout[qo] - pboth[qo] - room[p]);
      int64_t in_only = pin[qo] - pboth[qo], out_only = pout[qo] - pboth[qo];
      double in_a = (double)at_least0(rp - out_only) / ri;
      double out_b = (double)at_least0(rp - in_only) / ro;
      double pair_p = pair_cost(rp, in_only, out_only, ri, ro);
      /* Cut q: in within B, out within A. */
      int64_t rq = at_least0(qin[qo] + qout[qo] - qboth[qo] - room[q]);
      int64_t qin_only = qin[qo] - qboth[qo], qout_only = qout[qo] - qboth[qo];
      double in_b = (double)at_least0(rq - qout_only) / ri;
      double out_a = (double)at_least0(rq - qin_only) / ro;
      double pair_q = pair_cost(rq, qin_only, qout_only, ri, ro);
      double best = pair_p;
      double cand_t[] = {pair_q,      in_a + in_b,  out_a + out_b,
                         in_a + tB,   out_a + tB,   tA + in_b,
                         tA + out_b};
      for (size_t k = 0; k < sizeof cand_t / sizeof *cand_t; k++)
        if (cand_t[k] > best) best = cand_t[k];
      if (best > (double)out->ns) {
        out->ns = (uint64_t)best;
        out->p = p;
        out->q = q;
      }
    }
  }
  free(absent);
  free(cand);
  free(pc);
  free(arr);
  return LMS_OK;
}
