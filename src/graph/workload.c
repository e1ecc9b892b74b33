/* workload.c - building and checking workloads (graph.h). */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

void lms__wl_init(lms__workload_t *w, const char *name) {
  memset(w, 0, sizeof *w);
  if (name != NULL) snprintf(w->name, sizeof w->name, "%s", name);
}

void lms__wl_free(lms__workload_t *w) {
  free(w->chunks);
  free(w->steps);
  free(w->refs);
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

lms_status_t lms__wl_add_ref(lms__workload_t *w, uint32_t chunk,
                             unsigned access) {
  if (w->nsteps == 0 || chunk >= w->nchunks || (access & LMS_ACCESS_RW) == 0 ||
      (access & ~LMS_ACCESS_RW) != 0)
    return LMS_ERR_INVALID;
  lms__wl_step_t *s = &w->steps[w->nsteps - 1];
  for (uint32_t i = 0; i < s->nrefs; i++) {
    lms__wl_ref_t *r = &w->refs[s->first_ref + i];
    if (r->chunk == chunk) {
      r->access |= access;
      return LMS_OK;
    }
  }
  if (grow((void **)&w->refs, &w->refs_cap, w->nrefs, sizeof *w->refs))
    return LMS_ERR_HOST_OOM;
  w->refs[w->nrefs].chunk = chunk;
  w->refs[w->nrefs].access = access;
  w->refs[w->nrefs].dead_after = 0;
  w->nrefs++;
  s->nrefs++;
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

lms_status_t lms__wl_validate(const lms__workload_t *w, char *err) {
  if (w->nsteps == 0) {
    lms__errf(err, "workload '%s' has no steps", w->name);
    return LMS_ERR_INVALID;
  }
  for (uint32_t i = 0; i < w->nchunks; i++) {
    if (w->chunks[i].size == 0 || w->chunks[i].size > LMS__WL_MAX_SIZE) {
      lms__errf(err, "chunk %u ('%s') has size %llu; accepted: 1 to %llu "
                "bytes", i, w->chunks[i].name,
                (unsigned long long)w->chunks[i].size,
                (unsigned long long)LMS__WL_MAX_SIZE);
      return LMS_ERR_INVALID;
    }
  }
  uint32_t expect = 0;
  uint8_t *used = calloc(w->nchunks ? w->nchunks : 1, 1);
  if (used == NULL) {
    lms__errf(err, "no host memory to check the workload");
    return LMS_ERR_HOST_OOM;
  }
  lms_status_t st = LMS_OK;
  for (uint32_t s = 0; s < w->nsteps && st == LMS_OK; s++) {
    const lms__wl_step_t *step = &w->steps[s];
    if (step->first_ref != expect || step->nrefs > w->nrefs - expect) {
      lms__errf(err, "step %u ('%s'): its references are not contiguous", s,
                step->name);
      st = LMS_ERR_INVALID;
      break;
    }
    for (uint32_t i = 0; i < step->nrefs && st == LMS_OK; i++) {
      const lms__wl_ref_t *r = &w->refs[step->first_ref + i];
      if (r->chunk >= w->nchunks || (r->access & LMS_ACCESS_RW) == 0 ||
          (r->access & ~LMS_ACCESS_RW) != 0) {
        lms__errf(err, "step %u ('%s'): reference %u is to chunk %u with "
                  "access %u; accepted: a chunk below %u, access 1, 2 or 3",
                  s, step->name, i, r->chunk, r->access, w->nchunks);
        st = LMS_ERR_INVALID;
        break;
      }
      for (uint32_t j = 0; j < i; j++) {
        if (w->refs[step->first_ref + j].chunk == r->chunk) {
          lms__errf(err, "step %u ('%s') names chunk %u twice", s,
                    step->name, r->chunk);
          st = LMS_ERR_INVALID;
          break;
        }
      }
      used[r->chunk] = 1;
    }
    expect += step->nrefs;
  }
  if (st == LMS_OK && expect != w->nrefs) {
    lms__errf(err, "%u references belong to no step", w->nrefs - expect);
    st = LMS_ERR_INVALID;
  }
  for (uint32_t i = 0; i < w->nchunks && st == LMS_OK; i++) {
    if (w->chunks[i].transient && !used[i]) {
      lms__errf(err, "transient chunk %u ('%s') is used by no step", i,
                w->chunks[i].name);
      st = LMS_ERR_INVALID;
    }
  }
  free(used);
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

uint64_t lms__wl_compute_ns(const lms__workload_t *w) {
  uint64_t t = 0;
  for (uint32_t s = 0; s < w->nsteps; s++) t += w->steps[s].compute_ns;
  return t;
}

uint64_t lms__wl_chunk_bytes(const lms__workload_t *w) {
  uint64_t b = 0;
  for (uint32_t i = 0; i < w->nchunks; i++) b += w->chunks[i].size;
  return b;
}

uint64_t lms__wl_max_step_bytes(const lms__workload_t *w) {
  uint64_t most = 0;
  for (uint32_t s = 0; s < w->nsteps; s++) {
    uint64_t b = 0;
    for (uint32_t i = 0; i < w->steps[s].nrefs; i++)
      b += w->chunks[w->refs[w->steps[s].first_ref + i].chunk].size;
    if (b > most) most = b;
  }
  return most;
}
