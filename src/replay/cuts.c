/* cuts.c - the least time of an iteration cut at two steps or more
 * around its cycle: the part of the lower bound that sees which copies
 * must run in which part (Notes [Cuts around the cycle] and [A chain of
 * cuts]).
 *
 * Note [Cuts around the cycle]
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
 * cut at k steps c_0 < ... < c_{k-1} (k = 2 or 3) into parts P_i = [c_i,
 * c_{i+1}), the last wrapping round.  A part's time (from c_i's compute
 * starting to c_{i+1}'s) is at least its compute, and at least the bytes
 * its copies must move each way over that link's rate; the iteration is
 * the sum of the parts' times.
 *
 * What copies a part must hold comes from the chunks absent at each cut.
 * When c_i's compute starts, the chunks live across c_i (a gap between
 * two uses, around the cycle, that contains c_i) hold at most C - S(c_i)
 * bytes on the device, so the rest are absent: their blocks were given up
 * before, and a block is given up only after its write-back ends.  An
 * absent chunk whose next use reads it and comes at or before c_{i+1} is
 * copied in within P_i.  An absent chunk whose bytes were last written at
 * or after c_{i-1} went home within P_{i-1}.  Any other absent chunk
 * costs no part anything certain.  A policy picks which chunks are absent;
 * the bound lets it pick, byte by byte (a relaxation): free ones first,
 * then those costing one copy, then those costing both.
 *
 * Each part then takes one term: its compute, its bytes in over the rate,
 * or its bytes out over the rate; the sum over the parts is a bound for
 * every choice of terms, and the largest of the 3^k sums is the bound.
 * Cut c_i's picks feed two terms, P_i's bytes in and P_{i-1}'s bytes out:
 * when both are taken, the pick is the cheapest for the two together.
 * Copies' latency is left out: the bytes alone suffice.  The test
 * bound::cuts_match_their_definition counts every pair and triple of
 * cuts of small random programs from this definition, and the tests
 * bound::never_above_* hold every policy to the bound.
 *
 * Cost.  Two cuts: one cut p among K candidate steps, the other q among
 * all steps; for each p, difference arrays over q's offset from p give
 * every class of bytes at both cuts in O(gaps + steps), so O(K (gaps +
 * steps)).  K is every step with bytes absent while K (gaps + steps)
 * stays under CUT_VISITS, which every trace of bench/workloads does, so
 * there the pairs are searched whole.  Past it, K is the steps with the
 * most bytes absent, and steps that tie are taken in an order scattered
 * over the iteration (a hash of the step), not lowest first: in a
 * program whose steps are alike most of them tie, and the lowest K lie
 * in one corner of it.  Three cuts: every triple of a pool of steps, O(gaps) a
 * triple: every step while the triples cost at most CUT_VISITS gap
 * visits, else the candidates and the q that did best with each, the
 * pool cut down to its steps whose best pair was highest. */
/* Note [Both ways at once in the bound]
 * A link whose two ways together move less than the sum of each alone
 * (pcie5: 55 GB/s in, 53 out, 87 at once) bounds what a span of time can
 * copy both ways: while both run, the copy that started second gets
 * what the first leaves of the shared rate, at least a tenth of its own
 * and at most its own (Note [Both ways at once] in device/sim.c), so the
 * two together move at most rs = the shared rate held within [max(ri +
 * ro / 10, ro + ri / 10), ri + ro], and a span that copies I bytes in and
 * O out lasts at least (I + O) / rs.  Every copy the bounds here count
 * lies wholly inside its part, so a part may take that term beside its
 * compute, its bytes in and its bytes out: in the cuts, a cut whose part
 * takes it is charged 1 / rs a byte each way; in the chain, v(a, b)
 * takes it of the part's two byte counts; and the iteration's fewest
 * bytes each way (bound.c) take it too.  Without a shared rate, rs is ri
 * + ro and the term never exceeds the larger of the other two, so the
 * cuts leave it out.  Latency is left out of it (each way pays its own,
 * on its own engine).  Where the link shares one, DLRM at 2x over pcie5
 * read 1.59x this bound, while the linear programme of
 * bench/workloads/lp_bound.py, which holds in + out to the shared rate,
 * was 10 % higher (bench/results/2026-12-02-sim-settled.md).  Cost:
 * a fourth term, 4^k sums for k cuts instead of 3^k, seven more sums a
 * pair, and two more K x K tables for the chain. */
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "replay/cuts.h"

#define CUT_CANDIDATES 16   /* the fewest candidates for the first cut */
#define CUT_VISITS 2e7      /* gap visits the search may spend each way */

static int64_t at_least0(int64_t x) { return x > 0 ? x : 0; }

/* arr[lo..hi] += v (a difference array of n + 1 entries). */
static void range_add(int64_t *arr, uint32_t lo, uint32_t hi, int64_t v) {
  if (lo > hi) return;
  arr[lo] += v;
  arr[hi + 1] -= v;
}

/* The least of ci x in + co x out (costs per byte; 0: not counted) over
 * picks of r bytes among bytes that cost a copy in only (at most a), a
 * write-back only (at most b), or both (the rest): the cheaper single
 * first. */
static double pair_cost(int64_t r, int64_t a, int64_t b, double ci, double co) {
  if (r <= 0) return 0.0;
  int64_t first = ci <= co ? a : b, second = ci <= co ? b : a;
  double c1 = ci <= co ? ci : co, c2 = ci <= co ? co : ci;
  int64_t x = r < first ? r : first;
  int64_t left = r - x;
  int64_t y = left < second ? left : second;
  int64_t both = left - y;
  return (double)x * c1 + (double)y * c2 + (double)both * (ci + co);
}


/* The terms a part may take (Note [Both ways at once in the bound]):
 * its compute, its bytes in, its bytes out, or both over the rate the
 * two ways share; the last only where that is less than their sum. */
enum { TERM_COMPUTE, TERM_IN, TERM_OUT, TERM_BOTH };

/* What a byte costs a part taking term t, as a copy in and as a copy
 * out. */
static double in_cost(int t, double ri, double rs) {
  return t == TERM_IN ? 1 / ri : t == TERM_BOTH ? 1 / rs : 0.0;
}
static double out_cost(int t, double ro, double rs) {
  return t == TERM_OUT ? 1 / ro : t == TERM_BOTH ? 1 / rs : 0.0;
}

/* Whether rs, the most both ways move at once, is below ri + ro. */
static int shared(double ri, double ro, double rs) { return rs < ri + ro; }

/* Note [Idle while copies land]
 * v(a, b) lets a part's copies run beside any of its compute, but a copy
 * in holds its room from its start until its chunk is used, and a step's
 * chunks hold theirs while it computes.  So of the copies in of a part
 * [a, b), those running while step s computes (a < s < b) hold room when
 * its compute ends, beside s's chunks: they move at most
 *   h(s) = min(H2D rate x c(s), room(s))
 * bytes then (c(s) its compute, room(s) the capacity less its chunks'
 * bytes, as in the chain).  While a itself computes, what the part needs
 * and holds (kept since before a, or coming in) is within room(a), which
 * the part's bytes in already leave out.  What no step can hide is copied
 * while the device computes nothing: with G that idle time,
 *   in(a, b) - room(a) - sum of h(s) <= H2D rate x G.
 * A write-back within the part is of bytes written at or after a, so it
 * runs only while steps after a compute or while none does:
 *   out(a, b) - room(b) - D2H rate x (compute of a + 1 .. b - 1) <= D2H rate x G,
 * and where the two ways share a rate, both together over it, a step
 * hiding at most min(shared rate x c(s), h(s) + D2H rate x c(s)).  The
 * part then takes at least its compute plus the largest such G: each
 * way's term in a part is a constant, the part's base, plus its bytes
 * over the rate (part_base), which the cuts and the pairs of Note [Cuts
 * around the cycle] take as well as the chain.  On a
 * graph network's full-batch training at 9.5 GB (gcn-products, 2x over
 * pcie5), whose sparse products fill all but 0.45 GB of the device with
 * their own 9 GB, the bound went from 320.6 to the linear programme's
 * 410.9 ms (bench/workloads/lp_bound.py): the 2.5 GB activation backward
 * reads next cannot come in while the product runs, nor during the 6 ms
 * steps after it.  O(1) a part from prefix sums of h; the tests
 * bound::chain_matches_its_definition and bound::cuts_match_their_definition
 * count it from this definition. */

/* What each step's compute can hide of the copies of a part it lies
 * inside, summed twice round the cycle (Note [Idle while copies land]):
 * hin[t] of copies in, hboth[t] of both ways, over steps 0 .. t - 1. */
typedef struct hides {
  double *hin, *hboth;
} hides_t;

static int hides_init(hides_t *h, uint32_t n, const int64_t *room,
                      const uint64_t *pc, double ri, double ro, double rs) {
  h->hin = malloc((2 * (size_t)n + 1) * sizeof *h->hin);
  h->hboth = malloc((2 * (size_t)n + 1) * sizeof *h->hboth);
  if (!h->hin || !h->hboth) return -1;
  h->hin[0] = h->hboth[0] = 0;
  for (uint32_t t = 0; t < 2 * n; t++) {
    double c = (double)(pc[t % n + 1] - pc[t % n]);
    double r = (double)at_least0(room[t % n]);
    double in = ri * c < r ? ri * c : r;
    double both = in + ro * c < rs * c ? in + ro * c : rs * c;
    h->hin[t + 1] = h->hin[t] + in;
    h->hboth[t + 1] = h->hboth[t] + both;
  }
  return 0;
}

static void hides_fini(hides_t *h) {
  free(h->hin);
  free(h->hboth);
}

/* The base of each term of the part from step x to step y (y after x
 * round the cycle; Note [Idle while copies land]): its compute; that less
 * what its inner steps hide of the copies in, as time; its first step's
 * compute, during which no write-back of the part can run; and its
 * compute less what its inner steps hide of both ways. */
static void part_base(const hides_t *h, const uint64_t *pc, uint32_t n,
                      uint32_t x, uint32_t y, double ri, double rs,
                      double base[4]) {
  if (y <= x) y += n;
  double comp = (double)(pc[n] * (y / n) + pc[y % n] - pc[x]);
  base[TERM_COMPUTE] = comp;
  base[TERM_IN] = comp - (h->hin[y] - h->hin[x + 1]) / ri;
  base[TERM_OUT] = (double)(pc[x + 1] - pc[x]);
  base[TERM_BOTH] = comp - (h->hboth[y] - h->hboth[x + 1]) / rs;
}

/* The least time of the cycle cut at cuts[0] < cuts[1] < ... (k of them,
 * 2 <= k <= CUT_MAX), by the sums of one term of each part: the part
 * from cut i to cut i + 1 takes its compute, its bytes in (charged by cut
 * i), its bytes out (charged by cut i + 1) or, where the link shares a
 * rate, both, and a cut whose two parts both take its charges takes the
 * pick cheapest for both.  O(k gaps). */
#define CUT_MAX 3
static double eval_cuts(const lms__cgap_t *g, size_t ng, uint32_t n,
                        const int64_t *room, const uint64_t *pc,
                        const hides_t *h, const uint32_t *cuts, int k,
                        double ri, double ro, double rs) {
  int64_t in[CUT_MAX] = {0}, out[CUT_MAX] = {0}, both[CUT_MAX] = {0};
  double base[CUT_MAX][4];
  for (int i = 0; i < k; i++)
    part_base(h, pc, n, cuts[i], cuts[(i + 1) % k], ri, rs, base[i]);
  for (size_t j = 0; j < ng; j++) {
    const lms__cgap_t *x = &g[j];
    for (int i = 0; i < k; i++) {
      uint32_t c = cuts[i], next = cuts[(i + 1) % k], prev = cuts[(i + k - 1) % k];
      uint32_t d = (c + n - x->start) % n;
      if (d == 0 || d >= x->len) continue; /* not across cut i */
      /* Read again at or before the next cut: copied in within part i. */
      int r = x->reads && x->len - d <= (next + n - c) % n;
      /* Written at or after the previous cut: went home within part i - 1. */
      uint32_t w = (x->start + n - x->back % n) % n;
      int o = x->dirty && (w + n - prev) % n < (c + n - prev) % n;
      in[i] += r ? (int64_t)x->size : 0;
      out[i] += o ? (int64_t)x->size : 0;
      both[i] += r && o ? (int64_t)x->size : 0;
    }
  }
  int64_t rest[CUT_MAX];
  for (int i = 0; i < k; i++)
    rest[i] = at_least0(in[i] + out[i] - both[i] - room[cuts[i]]);
  double best = 0;
  int terms = shared(ri, ro, rs) ? 4 : 3, choices = 1;
  for (int i = 0; i < k; i++) choices *= terms;
  for (int ch = 0; ch < choices; ch++) {
    int t[CUT_MAX];
    for (int i = 0, v = ch; i < k; i++, v /= terms) t[i] = v % terms;
    double sum = 0;
    for (int i = 0; i < k; i++) {
      sum += base[i][t[i]];
      double ci = in_cost(t[i], ri, rs);
      double co = out_cost(t[(i + k - 1) % k], ro, rs);
      if (ci == 0.0 && co == 0.0) continue;
      int64_t io = in[i] - both[i], oo = out[i] - both[i];
      sum += pair_cost(rest[i], io, oo, ci, co);
    }
    if (sum > best) best = sum;
  }
  return best;
}

typedef struct cand {
  int64_t absent;
  uint32_t step;
} cand_t;

static int by_step(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Most absent first; ties scattered over the iteration. */
static int by_absent(const void *a, const void *b) {
  const cand_t *x = a, *y = b;
  if (x->absent != y->absent) return x->absent > y->absent ? -1 : 1;
  uint64_t hx = lms__mix64(x->step + 1), hy = lms__mix64(y->step + 1);
  if (hx != hy) return hx < hy ? -1 : 1;
  return x->step < y->step ? -1 : 1;
}

typedef struct scored {
  double best;
  uint32_t step;
} scored_t;

/* Highest best pair first; ties by step. */
static int by_best(const void *a, const void *b) {
  const scored_t *x = a, *y = b;
  if (x->best != y->best) return x->best > y->best ? -1 : 1;
  return x->step < y->step ? -1 : x->step > y->step;
}

/* Note [A chain of cuts]
 * The cuts above take two or three steps and, where a cut's absent bytes
 * feed both of its parts, the pick cheapest for the two together.  A
 * bound as valid, and cheaper to search, takes each part alone: when cut
 * a's compute starts, at least R(a) = across(a) - room(a) bytes live
 * across it are absent, so of those read again by the next cut b at least
 * in(a, b) - room(a) bytes are absent (in(a, b): the bytes across a whose
 * next use reads, at or before b) and come in within the part [a, b); and
 * at b at least out(a, b) - room(b) of the bytes across b last written at
 * or after a went home within it.  Each bound holds whatever the policy
 * chose to leave absent, so the part takes at least
 *   v(a, b) = max(compute from a to b, in bytes / H2D rate,
 *                 out bytes / D2H rate),
 * and the iteration at least the sum of v round any cycle of cuts.  With
 * as many cuts as it likes, a chain follows the iteration as it changes:
 * in training, the forward steps that wait for their room to be written
 * home, then the forward steps that compute with nothing to copy, then
 * the backward steps that wait for what comes in.  Two or three cuts see
 * one of these each.
 *
 * The largest sum is a longest cycle through cuts taken in step order:
 * for each first cut s, f(b) = max(v(s, b), max over s < a < b of f(a) +
 * v(a, b)), closed by v(b, s).  Cost: the tables in(a, .) and out(., b)
 * are a difference array over each cut's gaps, O(K (gaps + steps)) for K
 * cuts to choose from, and the cycles O(K^3 / 6) with K^2 values held.
 * K is every step while n <= CHAIN_MAX and the gaps fit in CUT_VISITS
 * (every trace of bench/workloads); past that, the candidates of the
 * pairs, as many as fit (22 at 1,000,000 references).  Where nothing need
 * be absent at any step there is no chain, as there are no cuts.  The
 * test bound::chain_matches_its_definition counts every set of cuts of
 * small random programs from this definition; past CHAIN_MAX steps,
 * bound::a_long_chain_is_worth_its_cuts counts the cuts a chain names
 * from it, and bound::never_above_a_policy_on_long_programs holds the
 * bound to every policy. */
#define CHAIN_MAX 640

static int chain_bound(const lms__cgap_t *g, size_t ng, uint32_t n,
                        const int64_t *room, const uint64_t *pc,
                        const hides_t *h, const cand_t *cand, uint32_t nc,
                        double ri, double ro, double rs,
                        lms__cut_result_t *out) {
  /* Nothing absent at any step: every part is its compute alone. */
  if (nc == 0) return 0;
  double per = (double)ng + (double)n + 1;
  uint32_t fit = (uint32_t)(CUT_VISITS / per);
  if (fit > CHAIN_MAX) fit = CHAIN_MAX;
  int all = n <= fit;
  uint32_t k = all ? n : nc < fit ? nc : fit;
  if (k < 2) return 0;
  int rc = -1;
  size_t kk = (size_t)k * k;
  uint32_t *at = malloc(k * sizeof *at);
  int64_t *in = calloc(2 * ((size_t)n + 1), sizeof *in);
  double *v = malloc(kk * sizeof *v);
  double *f = malloc(k * sizeof *f);
  uint32_t *par = malloc(k * sizeof *par);
  uint32_t *chain = malloc(k * sizeof *chain);
  /* Each part's bytes each way, for its terms over their bases (Note
   * [Idle while copies land]) and, where the two ways share a rate, the
   * term of both (Note [Both ways at once in the bound]). */
  int two = shared(ri, ro, rs);
  double *vin = calloc(kk, sizeof *vin), *vout = calloc(kk, sizeof *vout);
  if (!at || !in || !v || !f || !par || !chain || !vin || !vout) goto out;
  int64_t *wr = in + n + 1;
  for (uint32_t i = 0; i < k; i++) at[i] = all ? i : cand[i].step;
  if (!all) qsort(at, k, sizeof *at, by_step);
  /* v[a k + b]: the part from cut a to cut b, from its bytes each way
   * (vin, vout) below. */
  for (uint32_t a = 0; a < k; a++) v[(size_t)a * k + a] = 0;
  for (uint32_t c = 0; c < k; c++) {
    /* Of the bytes across cut c: in[o], those read again within o steps
     * (c begins the part); wr[o], those last written within o steps
     * before (c ends it). */
    uint32_t s = at[c];
    memset(in, 0, 2 * ((size_t)n + 1) * sizeof *in);
    for (size_t i = 0; i < ng; i++) {
      const lms__cgap_t *x = &g[i];
      uint32_t d = (s + n - x->start) % n;
      if (d == 0 || d >= x->len) continue; /* not across s */
      if (x->reads) in[x->len - d] += (int64_t)x->size;
      if (x->dirty) {
        uint32_t w = (x->start + n - x->back % n) % n;
        uint32_t ow = (s + n - w) % n;
        if (ow > 0) wr[ow] += (int64_t)x->size;
      }
    }
    for (uint32_t o = 1; o <= n; o++) {
      in[o] += in[o - 1];
      wr[o] += wr[o - 1];
    }
    for (uint32_t e = 0; e < k; e++) {
      if (e == c) continue;
      double bi = (double)at_least0(in[(at[e] + n - s) % n] - room[s]);
      double bo = (double)at_least0(wr[(s + n - at[e]) % n] - room[s]);
      vin[(size_t)c * k + e] = bi;
      vout[(size_t)e * k + c] = bo;
    }
  }
  /* Each way's term over its base (Note [Idle while copies land]), and
   * both ways' where they share a rate. */
  for (uint32_t a = 0; a < k; a++)
    for (uint32_t b = 0; b < k; b++) {
      if (a == b) continue;
      size_t i = (size_t)a * k + b;
      double base[4];
      part_base(h, pc, n, at[a], at[b], ri, rs, base);
      double t = base[TERM_COMPUTE];
      if (base[TERM_IN] + vin[i] / ri > t) t = base[TERM_IN] + vin[i] / ri;
      if (base[TERM_OUT] + vout[i] / ro > t) t = base[TERM_OUT] + vout[i] / ro;
      if (two && base[TERM_BOTH] + (vin[i] + vout[i]) / rs > t)
        t = base[TERM_BOTH] + (vin[i] + vout[i]) / rs;
      v[i] = t;
    }
  for (uint32_t s = 0; s + 1 < k; s++) {
    for (uint32_t b = s + 1; b < k; b++) {
      f[b] = v[(size_t)s * k + b];
      par[b] = s;
      for (uint32_t a = s + 1; a < b; a++) {
        double t = f[a] + v[(size_t)a * k + b];
        if (t > f[b]) {
          f[b] = t;
          par[b] = a;
        }
      }
      double round = f[b] + v[(size_t)b * k + s];
      if (round > (double)out->chain_ns) {
        uint32_t len = 0;
        for (uint32_t x = b; x != s; x = par[x]) chain[len++] = x;
        chain[len++] = s;
        out->chain_ns = (uint64_t)round;
        out->chain_ncuts = len;
        for (uint32_t i = 0; i < len && i < LMS__CHAIN_SHOWN; i++)
          out->chain_steps[i] = at[chain[len - 1 - i]];
      }
    }
  }
  rc = 0;
out:
  free(at);
  free(in);
  free(v);
  free(f);
  free(par);
  free(chain);
  free(vin);
  free(vout);
  return rc;
}

/* Note [Both ways at once in the bound]: the pairs' terms that take
 * both ways in one part or both.  Cut p charges in within A and out
 * within B, cut q in within B and out within A (lms__cut_bound). */
static double pair_both(const double bA[4], const double bB[4], int64_t rp,
                        int64_t p_in, int64_t p_out, int64_t rq, int64_t q_in,
                        int64_t q_out, double ri, double ro, double rs) {
  double best = 0;
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++) {
      if (a != TERM_BOTH && b != TERM_BOTH) continue; /* counted already */
      double sum = bA[a] + bB[b];
      double ci = in_cost(a, ri, rs), co = out_cost(b, ro, rs);
      if (ci != 0.0 || co != 0.0) sum += pair_cost(rp, p_in, p_out, ci, co);
      ci = in_cost(b, ri, rs);
      co = out_cost(a, ro, rs);
      if (ci != 0.0 || co != 0.0) sum += pair_cost(rq, q_in, q_out, ci, co);
      if (sum > best) best = sum;
    }
  return best;
}

lms_status_t lms__cut_bound(const lms__cgap_t *g, size_t ng, uint32_t n,
                            const int64_t *room, const uint64_t *compute,
                            double ri, double ro, double rs,
                            lms__cut_result_t *out) {
  memset(out, 0, sizeof *out);
  if (n < 2) return LMS_OK;
  size_t m = (size_t)n + 1;
  int64_t *absent = calloc(m, sizeof *absent);
  cand_t *cand = malloc(n * sizeof *cand);
  uint64_t *pc = calloc(m + 1, sizeof *pc);
  int64_t *arr = calloc(6 * m, sizeof *arr);
  double *best_with = calloc(n, sizeof *best_with);
  uint32_t *partner = calloc(n, sizeof *partner);
  uint32_t *pool = malloc(2 * (size_t)n * sizeof *pool);
  scored_t *sc = malloc(2 * (size_t)n * sizeof *sc);
  hides_t h = {NULL, NULL};
  lms_status_t st = LMS_OK;
  if (!absent || !cand || !pc || !arr || !best_with || !partner || !pool ||
      !sc) {
    st = LMS_ERR_HOST_OOM;
    goto out;
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
  for (uint32_t s = 0; s < n; s++) pc[s + 1] = pc[s] + compute[s];
  if (hides_init(&h, n, room, pc, ri, ro, rs) != 0 ||
      chain_bound(g, ng, n, room, pc, &h, cand, nc, ri, ro, rs, out) != 0) {
    st = LMS_ERR_HOST_OOM;
    goto out;
  }
  double per_p = (double)ng + (double)n + 1;
  uint32_t keep = (uint32_t)(CUT_VISITS / per_p);
  if (keep < CUT_CANDIDATES) keep = CUT_CANDIDATES;
  if (nc > keep) nc = keep;
  int two = shared(ri, ro, rs);
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
      double bA[4], bB[4];
      part_base(&h, pc, n, p, q, ri, rs, bA);
      part_base(&h, pc, n, q, p, ri, rs, bB);
      /* Cut p: in within A, out within B. */
      int64_t rp = at_least0(pin[qo] + pout[qo] - pboth[qo] - room[p]);
      int64_t in_only = pin[qo] - pboth[qo], out_only = pout[qo] - pboth[qo];
      double in_a = (double)at_least0(rp - out_only) / ri;
      double out_b = (double)at_least0(rp - in_only) / ro;
      double pair_p = pair_cost(rp, in_only, out_only, 1 / ri, 1 / ro);
      /* Cut q: in within B, out within A. */
      int64_t rq = at_least0(qin[qo] + qout[qo] - qboth[qo] - room[q]);
      int64_t qin_only = qin[qo] - qboth[qo], qout_only = qout[qo] - qboth[qo];
      double in_b = (double)at_least0(rq - qout_only) / ri;
      double out_a = (double)at_least0(rq - qin_only) / ro;
      double pair_q = pair_cost(rq, qin_only, qout_only, 1 / ri, 1 / ro);
      /* A part's term over its base (Note [Idle while copies land]). */
      double iA = bA[TERM_IN], oA = bA[TERM_OUT], tA = bA[TERM_COMPUTE];
      double iB = bB[TERM_IN], oB = bB[TERM_OUT], tB = bB[TERM_COMPUTE];
      double best = iA + oB + pair_p;
      double cand_t[] = {iB + oA + pair_q,  iA + in_a + iB + in_b,
                         oA + out_a + oB + out_b, iA + in_a + tB,
                         oA + out_a + tB,   tA + iB + in_b,
                         tA + oB + out_b};
      for (size_t k = 0; k < sizeof cand_t / sizeof *cand_t; k++)
        if (cand_t[k] > best) best = cand_t[k];
      if (two) {
        double b2 = pair_both(bA, bB, rp, in_only, out_only, rq, qin_only,
                              qout_only, ri, ro, rs);
        if (b2 > best) best = b2;
      }
      if (best > (double)out->ns) {
        out->ns = (uint64_t)best;
        out->nsteps = 2;
        out->steps[0] = p < q ? p : q;
        out->steps[1] = p < q ? q : p;
      }
      if (best > best_with[ci]) {
        best_with[ci] = best;
        partner[ci] = q;
      }
    }
  }
  /* Three cuts: every triple of a pool of steps: all of them while the
   * triples cost at most CUT_VISITS gap visits, else the candidates and
   * the partner that did best with each, as many of those whose best pair
   * was highest as keep within it. */
  uint32_t np = 0;
  double per_triple = (double)ng + 1;
  if (nc == 0) {
    /* Nothing need be absent anywhere: no cut forces a copy. */
  } else if ((double)n * (n - 1) * (n - 2) / 6 * per_triple <= CUT_VISITS) {
    for (uint32_t s = 0; s < n; s++) pool[np++] = s;
  } else {
    uint32_t ns = 0;
    for (uint32_t ci = 0; ci < nc; ci++) {
      sc[ns++] = (scored_t){.best = best_with[ci], .step = cand[ci].step};
      if (best_with[ci] > 0)
        sc[ns++] = (scored_t){.best = best_with[ci], .step = partner[ci]};
    }
    qsort(sc, ns, sizeof *sc, by_best);
    /* A step in the pool once, at its highest score (the first seen). */
    for (uint32_t i = 0; i < ns; i++) {
      int dup = 0;
      for (uint32_t j = 0; j < np && !dup; j++) dup = pool[j] == sc[i].step;
      if (dup) continue;
      if (np >= 3 &&
          (double)(np + 1) * np * (np - 1) / 6 * per_triple > CUT_VISITS)
        break;
      pool[np++] = sc[i].step;
    }
    qsort(pool, np, sizeof *pool, by_step);
  }
  for (uint32_t a = 0; a + 2 < np; a++)
    for (uint32_t b = a + 1; b + 1 < np; b++)
      for (uint32_t c = b + 1; c < np; c++) {
        uint32_t cuts[3] = {pool[a], pool[b], pool[c]};
        double v = eval_cuts(g, ng, n, room, pc, &h, cuts, 3, ri, ro, rs);
        if (v > (double)out->ns) {
          out->ns = (uint64_t)v;
          out->nsteps = 3;
          memcpy(out->steps, cuts, sizeof cuts);
        }
      }
out:
  free(absent);
  free(cand);
  free(pc);
  free(arr);
  free(best_with);
  free(partner);
  free(pool);
  free(sc);
  hides_fini(&h);
  return st;
}
