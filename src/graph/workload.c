/* workload.c - building and checking workloads (graph.h).
 *
 * Building takes constant time per chunk, step and reference, and checking
 * one pass over them, however wide a step is: a trace can hold a step
 * naming a million chunks.  A workload lms__wl_validate accepts has sums
 * that fit in 64 bits with room to spare (Note [Workload totals]). */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "swap/swap.h"

void lms__wl_init(lms__workload_t *w, const char *name) {
  memset(w, 0, sizeof *w);
  if (name != NULL) snprintf(w->name, sizeof w->name, "%s", name);
}

void lms__wl_free(lms__workload_t *w) {
  free(w->chunks);
  free(w->steps);
  free(w->refs);
  free(w->last_ref);
  lms__wl_init(w, NULL);
}

/* Grows *v (of *cap elements of `elem` bytes) to hold one more. */
static int grow(void **v, uint32_t *cap, uint32_t len, size_t elem) {
  if (len < *cap) return 0;
  if (*cap >= UINT32_MAX / 2) return -1;
  uint32_t ncap = *cap ? *cap * 2 : 16;
  void *p = realloc(*v, (size_t)ncap * elem);
  if (p == NULL) return -1;
  *v = p;
  *cap = ncap;
  return 0;
}

lms_status_t lms__wl_add_chunk(lms__workload_t *w, uint64_t size,
                               int transient, const char *name, uint32_t *id) {
  if (size == 0 || size > LMS__WL_MAX_SIZE) return LMS_ERR_INVALID;
  if (grow((void **)&w->chunks, &w->chunks_cap, w->nchunks, sizeof *w->chunks))
    return LMS_ERR_HOST_OOM;
  lms__wl_chunk_t *c = &w->chunks[w->nchunks];
  memset(c, 0, sizeof *c);
  c->size = size;
  c->transient = transient != 0;
  snprintf(c->name, sizeof c->name, "%s", name ? name : "");
  if (id != NULL) *id = w->nchunks;
  w->nchunks++;
  return LMS_OK;
}

lms_status_t lms__wl_add_step(lms__workload_t *w, uint64_t compute_ns,
                              const char *name) {
  if (compute_ns > LMS__WL_MAX_STEP_NS) return LMS_ERR_INVALID;
  if (grow((void **)&w->steps, &w->steps_cap, w->nsteps, sizeof *w->steps))
    return LMS_ERR_HOST_OOM;
  lms__wl_step_t *s = &w->steps[w->nsteps++];
  memset(s, 0, sizeof *s);
  s->compute_ns = compute_ns;
  s->first_ref = w->nrefs;
  snprintf(s->name, sizeof s->name, "%s", name ? name : "");
  return LMS_OK;
}

/* Makes w->last_ref cover chunk `chunk`, new entries 0; -1 when memory
 * runs out. */
static int grow_last_ref(lms__workload_t *w, uint32_t chunk) {
  if (chunk < w->last_ref_cap) return 0;
  uint32_t ncap = w->last_ref_cap ? w->last_ref_cap : 16;
  while (ncap <= chunk) {
    if (ncap >= UINT32_MAX / 2) return -1;
    ncap *= 2;
  }
  uint32_t *p = realloc(w->last_ref, (size_t)ncap * sizeof *p);
  if (p == NULL) return -1;
  memset(p + w->last_ref_cap, 0,
         (size_t)(ncap - w->last_ref_cap) * sizeof *p);
  w->last_ref = p;
  w->last_ref_cap = ncap;
  return 0;
}

lms_status_t lms__wl_add_ref(lms__workload_t *w, uint32_t chunk,
                             unsigned access) {
  if (w->nsteps == 0 || chunk >= w->nchunks || (access & LMS_ACCESS_RW) == 0 ||
      (access & ~LMS_ACCESS_RW) != 0)
    return LMS_ERR_INVALID;
  if (grow_last_ref(w, chunk) != 0) return LMS_ERR_HOST_OOM;
  /* The step's references are the last ones, from first_ref on, so the
   * chunk's latest reference is in this step if it is at first_ref or
   * after. */
  const lms__wl_step_t *s = &w->steps[w->nsteps - 1];
  uint32_t last = w->last_ref[chunk];
  if (last != 0 && last - 1 >= s->first_ref && last - 1 < w->nrefs &&
      w->refs[last - 1].chunk == chunk) {
    w->refs[last - 1].access |= access;
    return LMS_OK;
  }
  if (grow((void **)&w->refs, &w->refs_cap, w->nrefs, sizeof *w->refs))
    return LMS_ERR_HOST_OOM;
  w->refs[w->nrefs].chunk = chunk;
  w->refs[w->nrefs].access = access;
  w->refs[w->nrefs].dead_after = 0;
  w->nrefs++;
  w->steps[w->nsteps - 1].nrefs++;
  w->last_ref[chunk] = w->nrefs;
  return LMS_OK;
}

/* Note [Dead after the last use]
 * A workload is one iteration of a loop.  A chunk whose first use in the
 * iteration writes it without reading it (a layer's output, a gradient)
 * holds, from its last use in one iteration to that first use in the
 * next, bytes nobody reads: the program may lms_discard it after the last
 * use and save writing it back (Note [Dead bytes are not written back]).
 * Transient chunks are freed there anyway; a chunk first read carries its
 * bytes across iterations (weights, the input) and is left alone.  This is
 * the analysis a framework does with its own lifetimes; here it serves the
 * replay and bench net, whose steps are exactly the workload's. */
uint32_t lms__wl_mark_dead(lms__workload_t *w, uint64_t *bytes) {
  uint32_t marked = 0;
  uint64_t total = 0;
  uint32_t *first = malloc((size_t)w->nchunks * sizeof *first);
  uint32_t *last = malloc((size_t)w->nchunks * sizeof *last);
  if (first == NULL || last == NULL) goto out;
  for (uint32_t c = 0; c < w->nchunks; c++) first[c] = last[c] = UINT32_MAX;
  for (uint32_t r = 0; r < w->nrefs; r++) {
    uint32_t c = w->refs[r].chunk;
    if (first[c] == UINT32_MAX) first[c] = r;
    last[c] = r;
    w->refs[r].dead_after = 0;
  }
  for (uint32_t c = 0; c < w->nchunks; c++) {
    if (first[c] == UINT32_MAX || w->chunks[c].transient) continue;
    if (w->refs[first[c]].access != LMS_ACCESS_WRITE) continue;
    w->refs[last[c]].dead_after = 1;
    marked++;
    total += w->chunks[c].size;
  }
out:
  free(first);
  free(last);
  if (bytes != NULL) *bytes = total;
  return marked;
}

/* Note [Workload totals]
 * Each chunk's size and each step's time has a limit, but the consumers
 * of a workload add them up in 64 bits: the bytes of all chunks (and the
 * in-memory run's capacity, a quarter more), of a step, of the peak, the
 * bytes a lower bound says must move, the compute of an iteration, and
 * the replay's clock over up to 64 iterations.  Per-item limits alone let
 * a trace of 1.9 million steps of the longest time wrap the compute sum
 * (and print a nonsense time), and 65,536 chunks of the largest size wrap
 * the byte sum to 0.  So a valid workload also keeps three totals:
 * - its chunks hold at most LMS__WL_MAX_TOTAL_BYTES, 1 PiB, the largest
 *   capacity an option accepts and four chunks of the largest size.  A
 *   step names each chunk once, so a step's bytes and the peak of live
 *   bytes are no more;
 * - its steps name at most LMS__WL_MAX_NAMED_BYTES, 4 PiB, each step
 *   counting the bytes of every chunk it names: what an iteration moves
 *   each way if every use brings its chunk in and sends it home.  Copying
 *   that at the slowest link accepted, 0.001 GB/s, takes 4.5e18 ns, half
 *   of 2^63, so one such iteration's copy time fits even there (64 of them
 *   would not: a link that slow bounds only short runs);
 * - its compute takes at most LMS__WL_MAX_TOTAL_NS, 10^16 ns (10^7 s,
 *   some 116 days, a thousand of the longest steps): 64 iterations of it
 *   are 6.4e17 ns, under 4 % of what a 64-bit clock holds.
 * No real iteration comes near any of them.
 * lms__wl_validate checks them with comparisons made before adding, so
 * that no sum it forms can wrap; the trace reader checks them as it reads,
 * to name the line that crosses one.  The sums below saturate rather than
 * wrap, for a workload that was never validated. */

/* Checks the chunks' sizes and their total. */
static lms_status_t validate_chunks(const lms__workload_t *w, char *err) {
  uint64_t total = 0;
  for (uint32_t i = 0; i < w->nchunks; i++) {
    uint64_t size = w->chunks[i].size;
    if (size == 0 || size > LMS__WL_MAX_SIZE) {
      lms__errf(err, "chunk %u ('%s') has size %llu; accepted: 1 to %llu "
                "bytes", i, w->chunks[i].name, (unsigned long long)size,
                (unsigned long long)LMS__WL_MAX_SIZE);
      return LMS_ERR_INVALID;
    }
    if (size > LMS__WL_MAX_TOTAL_BYTES - total) {
      lms__errf(err, "workload '%s': chunks 0 to %u hold more than %llu "
                "bytes (1 PiB) in all; accepted: chunk sizes summing to at "
                "most %llu", w->name, i,
                (unsigned long long)LMS__WL_MAX_TOTAL_BYTES,
                (unsigned long long)LMS__WL_MAX_TOTAL_BYTES);
      return LMS_ERR_INVALID;
    }
    total += size;
  }
  return LMS_OK;
}

/* Checks the step times and their total. */
static lms_status_t validate_times(const lms__workload_t *w, char *err) {
  uint64_t total = 0;
  for (uint32_t s = 0; s < w->nsteps; s++) {
    uint64_t ns = w->steps[s].compute_ns;
    if (ns > LMS__WL_MAX_STEP_NS) {
      lms__errf(err, "step %u ('%s') has compute time %llu ns; accepted: 0 "
                "to %llu ns", s, w->steps[s].name, (unsigned long long)ns,
                (unsigned long long)LMS__WL_MAX_STEP_NS);
      return LMS_ERR_INVALID;
    }
    if (ns > LMS__WL_MAX_TOTAL_NS - total) {
      lms__errf(err, "workload '%s': steps 0 to %u compute for more than "
                "%llu ns (10^7 s) in all; accepted: step times summing to "
                "at most %llu ns", w->name, s,
                (unsigned long long)LMS__WL_MAX_TOTAL_NS,
                (unsigned long long)LMS__WL_MAX_TOTAL_NS);
      return LMS_ERR_INVALID;
    }
    total += ns;
  }
  return LMS_OK;
}

/* Checks one step's references.  last[c] holds 1 + the last step that
 * named chunk c, so a chunk named twice in the step is one comparison
 * away; *named (the bytes the steps before named) grows by the step's. */
static lms_status_t validate_step(const lms__workload_t *w, uint32_t s,
                                  uint32_t *last, uint64_t *named,
                                  char *err) {
  const lms__wl_step_t *step = &w->steps[s];
  for (uint32_t i = 0; i < step->nrefs; i++) {
    const lms__wl_ref_t *r = &w->refs[step->first_ref + i];
    if (r->chunk >= w->nchunks || (r->access & LMS_ACCESS_RW) == 0 ||
        (r->access & ~LMS_ACCESS_RW) != 0) {
      lms__errf(err, "step %u ('%s'): reference %u is to chunk %u with "
                "access %u; accepted: a chunk below %u, access 1, 2 or 3",
                s, step->name, i, r->chunk, r->access, w->nchunks);
      return LMS_ERR_INVALID;
    }
    if (last[r->chunk] == s + 1) {
      lms__errf(err, "step %u ('%s') names chunk %u twice", s, step->name,
                r->chunk);
      return LMS_ERR_INVALID;
    }
    last[r->chunk] = s + 1;
    uint64_t size = w->chunks[r->chunk].size;
    if (size > LMS__WL_MAX_NAMED_BYTES - *named) {
      lms__errf(err, "workload '%s': steps 0 to %u name more than %llu "
                "bytes (4 PiB) in all, each step counting the chunks it "
                "names; accepted: at most %llu", w->name, s,
                (unsigned long long)LMS__WL_MAX_NAMED_BYTES,
                (unsigned long long)LMS__WL_MAX_NAMED_BYTES);
      return LMS_ERR_INVALID;
    }
    *named += size;
  }
  return LMS_OK;
}

lms_status_t lms__wl_validate(const lms__workload_t *w, char *err) {
  if (w->nsteps == 0) {
    lms__errf(err, "workload '%s' has no steps", w->name);
    return LMS_ERR_INVALID;
  }
  LMS_CHECK(validate_chunks(w, err));
  LMS_CHECK(validate_times(w, err));
  uint32_t *last = calloc(w->nchunks ? w->nchunks : 1, sizeof *last);
  if (last == NULL) {
    lms__errf(err, "no host memory to check the workload");
    return LMS_ERR_HOST_OOM;
  }
  lms_status_t st = LMS_OK;
  uint32_t expect = 0;
  uint64_t named = 0;
  for (uint32_t s = 0; s < w->nsteps && st == LMS_OK; s++) {
    const lms__wl_step_t *step = &w->steps[s];
    if (step->first_ref != expect || step->nrefs > w->nrefs - expect) {
      lms__errf(err, "step %u ('%s'): its references are not contiguous", s,
                step->name);
      st = LMS_ERR_INVALID;
      break;
    }
    st = validate_step(w, s, last, &named, err);
    expect += step->nrefs;
  }
  if (st == LMS_OK && expect != w->nrefs) {
    lms__errf(err, "%u references belong to no step", w->nrefs - expect);
    st = LMS_ERR_INVALID;
  }
  for (uint32_t i = 0; i < w->nchunks && st == LMS_OK; i++) {
    if (w->chunks[i].transient && last[i] == 0) {
      lms__errf(err, "transient chunk %u ('%s') is used by no step", i,
                w->chunks[i].name);
      st = LMS_ERR_INVALID;
    }
  }
  free(last);
  return st;
}

void lms__wl_set_speed(lms__workload_t *w, const uint64_t *base,
                       double base_flops, double speedup) {
  for (uint32_t s = 0; s < w->nsteps; s++) {
    double ns = (double)base[s] / speedup + 0.5;
    w->steps[s].compute_ns = ns >= (double)LMS__WL_MAX_STEP_NS
                                 ? LMS__WL_MAX_STEP_NS
                                 : (uint64_t)ns;
  }
  w->device_flops = base_flops * speedup;
}

/* a + b, or UINT64_MAX if that does not fit. */
static uint64_t sat_add(uint64_t a, uint64_t b) {
  uint64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? UINT64_MAX : sum;
}

uint64_t lms__wl_compute_ns(const lms__workload_t *w) {
  uint64_t t = 0;
  for (uint32_t s = 0; s < w->nsteps; s++)
    t = sat_add(t, w->steps[s].compute_ns);
  return t;
}

uint64_t lms__wl_chunk_bytes(const lms__workload_t *w) {
  uint64_t b = 0;
  for (uint32_t i = 0; i < w->nchunks; i++) b = sat_add(b, w->chunks[i].size);
  return b;
}

uint64_t lms__wl_max_step_bytes(const lms__workload_t *w) {
  uint64_t most = 0;
  for (uint32_t s = 0; s < w->nsteps; s++) {
    uint64_t b = 0;
    for (uint32_t i = 0; i < w->steps[s].nrefs; i++)
      b = sat_add(b, w->chunks[w->refs[w->steps[s].first_ref + i].chunk].size);
    if (b > most) most = b;
  }
  return most;
}

lms_status_t lms__wl_pieces(const lms__workload_t *w, uint64_t piece,
                            uint32_t div, uint64_t budget,
                            lms__workload_t *out, uint32_t *split) {
  uint32_t *first = malloc((w->nchunks ? w->nchunks : 1) * sizeof *first);
  uint32_t *count = malloc((w->nchunks ? w->nchunks : 1) * sizeof *count);
  lms_status_t st = first && count ? LMS_OK : LMS_ERR_HOST_OOM;
  uint32_t cut = 0;
  snprintf(out->name, sizeof out->name, "%s", w->name);
  for (uint32_t c = 0; c < w->nchunks && st == LMS_OK; c++) {
    uint64_t size = w->chunks[c].size;
    uint64_t n = lms__pieces_of(size, piece, div, budget);
    cut += n > 0;
    if (n == 0) n = 1;
    for (uint64_t i = 0; i < n && st == LMS_OK; i++) {
      uint64_t sz = n == 1 ? size : i + 1 < n ? piece : size - (n - 1) * piece;
      uint32_t id = 0;
      st = lms__wl_add_chunk(out, sz, w->chunks[c].transient,
                             w->chunks[c].name, &id);
      if (i == 0) first[c] = id;
    }
    count[c] = (uint32_t)n;
  }
  for (uint32_t s = 0; s < w->nsteps && st == LMS_OK; s++) {
    const lms__wl_step_t *step = &w->steps[s];
    st = lms__wl_add_step(out, step->compute_ns, step->name);
    for (uint32_t r = 0; r < step->nrefs && st == LMS_OK; r++) {
      const lms__wl_ref_t *ref = &w->refs[step->first_ref + r];
      for (uint32_t i = 0; i < count[ref->chunk] && st == LMS_OK; i++) {
        st = lms__wl_add_ref(out, first[ref->chunk] + i, ref->access);
        if (st == LMS_OK) out->refs[out->nrefs - 1].dead_after = ref->dead_after;
      }
    }
  }
  free(first);
  free(count);
  if (st == LMS_OK) {
    out->flops = w->flops;
    out->device_flops = w->device_flops;
    if (split != NULL) *split = cut;
  }
  return st;
}
