/* linkshare.c - one host link shared by several GPUs: the copy timelines
 * of the other GPUs and the time a copy takes beside them.
 *
 * A timeline is one period of a GPU's copy activity per direction: sorted,
 * disjoint spans inside [0, period).  The other GPUs on a link each follow
 * the timeline shifted by their phase, and a copy's bytes move at the
 * link's rate divided by the number of copies in flight in its direction
 * (Note [Shared link]).
 *
 * Invariants: a built timeline's spans are sorted, disjoint, non-empty and
 * inside [0, period_ns); lms__share_copy_ns never returns less than the
 * time the copy takes alone, and equals it, to the rounding of one
 * nanosecond, when no other GPU copies in that direction meanwhile. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"

/* Note [Shared link]
 *
 * Rationale: on the x86 servers of the 3D U-Net measurements
 * (../shared/CONTEXT.md) two GPUs sit behind each PCIe switch and share its
 * one link to the CPU.  Published: with two GPUs sharing a bus the copy
 * throughput each GPU saw fell 30 % (host to device 10.9 -> 7.6 GB/s,
 * device to host 11.7 -> 8.2 GB/s) and the epoch took 38 % longer (8 GPUs
 * at 2076 s against 4 GPUs, one per bus, at 1506 s).  `lms sim
 * --gpus-per-link N` predicts that effect for any workload and policy.
 *
 * The model's assumptions:
 * - The switch's upstream port is PCIe Gen3 x16, as wide as each GPU's own
 *   port, so all GPUs behind it together move no more than one GPU alone
 *   can.  The link preset's rate (pcie3: 12.2 GB/s to the device, 12.9
 *   GB/s back, measured with one GPU) is taken as the capacity of the
 *   shared upstream link in each direction; nothing is fitted.  PCIe is
 *   full duplex, so copies in opposite directions do not compete.
 * - The switch arbitrates between its ports fairly, so while k other GPUs
 *   have a copy in flight in the same direction a copy moves at 1/(k+1) of
 *   the rate.  The per-copy latency is not shared.
 * - The other GPUs run the same workload as independent jobs (one model
 *   per GPU, as in the measurements), so their iterations are not aligned
 *   with this GPU's: each runs at an arbitrary phase, and over an epoch
 *   every phase occurs.  Results are averaged over evenly spread phases.
 * - The other GPUs behave as this one does under sharing: their timeline
 *   is this GPU's own.  That is a fixed point, found by iteration
 *   (Note [Finding the shared timeline] in replay/shared.c).
 *
 * Why not simulate N devices side by side: the simulated device fixes a
 * copy's end when the copy is enqueued (Note [Simulated time]) and the
 * runtime acts on it at once (stream tails, events, the host clock).
 * Fair sharing would have to stretch copies already on the clock whenever
 * another GPU's copy starts beside them later, which would undo decisions
 * already taken.  Sharing against the others' timeline of the previous
 * round keeps every copy's end known at enqueue time.
 *
 * What is reported, as the published figures were measured, is each GPU's
 * copy throughput: bytes over the time its copies were in flight.  The
 * published per-GPU figures add up to more than the link (2 x 7.6 > 12.2
 * GB/s), which only per-copy rates can: a copy runs alone part of its time.
 *
 * Limitations: in the model all GPUs run the same workload (ranks that run
 * as processes of their own share with each one's own timeline: Note
 * [Ranks on one link] in replay/linkboard.c); a phase is held for a whole
 * iteration; the host's memory and root complex are assumed fast enough
 * for every switch at once (GPUs behind different switches do not
 * interact); and the switch's own latency is ignored. */

void lms__copy_timeline_free(lms__copy_timeline_t *tl) {
  if (tl == NULL) return;
  for (int d = 0; d < LMS__DIR_COUNT; d++) {
    free(tl->busy[d]);
    tl->busy[d] = NULL;
    tl->n[d] = 0;
  }
  tl->period_ns = 0;
}

static int span_cmp(const void *a, const void *b) {
  const lms__copy_span_t *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return (x->end > y->end) - (x->end < y->end);
}

lms_status_t lms__copy_timeline_build(
    lms__copy_timeline_t *tl, uint64_t origin, uint64_t period,
    const lms__copy_span_t *const spans[LMS__DIR_COUNT],
    const size_t n[LMS__DIR_COUNT]) {
  memset(tl, 0, sizeof *tl);
  if (period == 0) return LMS_ERR_INVALID;
  tl->period_ns = period;
  for (int d = 0; d < LMS__DIR_COUNT; d++) {
    /* Each span gives at most two pieces: before and after the wrap. */
    lms__copy_span_t *v = malloc((2 * n[d] + 1) * sizeof *v);
    if (v == NULL) {
      lms__copy_timeline_free(tl);
      return LMS_ERR_HOST_OOM;
    }
    size_t k = 0;
    for (size_t i = 0; i < n[d]; i++) {
      const lms__copy_span_t *sp = &spans[d][i];
      if (sp->end <= sp->start) continue;
      uint64_t len = sp->end - sp->start;
      if (len >= period) { /* busy the whole period */
        v[k++] = (lms__copy_span_t){0, period};
        continue;
      }
      uint64_t rel = sp->start >= origin ? sp->start - origin
                                         : period - (origin - sp->start) % period;
      uint64_t s = rel % period;
      uint64_t e = s + len;
      if (e <= period) {
        v[k++] = (lms__copy_span_t){s, e};
      } else {
        v[k++] = (lms__copy_span_t){s, period};
        v[k++] = (lms__copy_span_t){0, e - period};
      }
    }
    qsort(v, k, sizeof *v, span_cmp);
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
      if (m > 0 && v[i].start <= v[m - 1].end) {
        if (v[i].end > v[m - 1].end) v[m - 1].end = v[i].end;
      } else {
        v[m++] = v[i];
      }
    }
    tl->busy[d] = v;
    tl->n[d] = m;
  }
  return LMS_OK;
}

int lms__copy_timeline_at(const lms__copy_timeline_t *tl, int dir, double pos,
                     double *next) {
  const lms__copy_span_t *v = tl->busy[dir];
  size_t n = tl->n[dir];
  double period = (double)tl->period_ns;
  if (n == 0) {
    *next = period - pos;
    return 0;
  }
  /* The first span that ends after pos. */
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if ((double)v[mid].end <= pos)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == n) { /* past the last span: idle until the period wraps */
    *next = period - pos;
    return 0;
  }
  if ((double)v[lo].start <= pos) {
    *next = (double)v[lo].end - pos;
    return 1;
  }
  *next = (double)v[lo].start - pos;
  return 0;
}

/* Where another GPU with phase `phase` is in its period at time t. */
static double position(const lms__copy_timeline_t *tl, uint64_t phase, double t) {
  double p = (double)tl->period_ns;
  double x = fmod(t - (double)(phase % tl->period_ns), p);
  if (x < 0) x += p;
  if (x >= p) x = 0;
  return x;
}

/* A copy never takes more than this many rate changes into account; past
 * them it finishes at the slowest rate (a guard, not reached by the
 * built-in workloads). */
#define SHARE_MAX_SEGMENTS 100000

uint64_t lms__share_copy_ns(const lms__link_share_t *sh, int dir,
                            uint64_t start, double latency_us, double gbps,
                            size_t n) {
  double alone = latency_us * 1e3 + (double)n / gbps;
  /* The others that copy in this direction at all. */
  const lms__copy_timeline_t *tl[LMS__SHARE_MAX_GPUS];
  uint64_t phase[LMS__SHARE_MAX_GPUS];
  int m = 0;
  double longest = 0;
  for (int j = 0; sh != NULL && j < sh->others; j++) {
    const lms__copy_timeline_t *x = lms__share_timeline(sh, j);
    if (x == NULL || x->period_ns == 0 || x->n[dir] == 0) continue;
    tl[m] = x;
    phase[m++] = sh->phase_ns[j];
    if ((double)x->period_ns > longest) longest = (double)x->period_ns;
  }
  if (m == 0) return (uint64_t)llround(alone);
  double t = (double)start + latency_us * 1e3;
  double left = (double)n; /* bytes */
  for (int seg = 0; left > 0; seg++) {
    int k = 0;
    double step = longest;
    for (int j = 0; j < m; j++) {
      double next;
      k += lms__copy_timeline_at(tl[j], dir, position(tl[j], phase[j], t), &next);
      if (next < step) step = next;
    }
    if (step < 1e-3) step = 1e-3;
    double rate = gbps / (double)(k + 1); /* bytes per ns */
    if (seg >= SHARE_MAX_SEGMENTS) rate = gbps / (double)(m + 1);
    if (seg >= SHARE_MAX_SEGMENTS || rate * step >= left) {
      t += left / rate;
      left = 0;
    } else {
      left -= rate * step;
      t += step;
    }
  }
  uint64_t ns = (uint64_t)llround(t - (double)start);
  uint64_t floor_ns = (uint64_t)llround(alone);
  return ns > floor_ns ? ns : floor_ns;
}
