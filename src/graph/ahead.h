/* ahead.h - the planned period: which uses a chunk leaves the device
 * after, and at which step each copy in starts (Note [A planned period] in
 * ahead.c).  A pure function of a period's references and a capacity; the
 * schedule (plan.c) carries it out.
 *
 * Invariants of a built plan: every fetch is of a reference that needs its
 * chunk's bytes and follows a drop of that chunk; a fetch is issued at a
 * step after the drop and before the use it serves, or at that use where
 * the step before has no room for it beside its own chunks (Note [A copy
 * in with no room before its use]); fetch_first is nondecreasing with
 * fetch_first[period] == nfetch. */
#ifndef LMS_GRAPH_AHEAD_H
#define LMS_GRAPH_AHEAD_H

#include <stdint.h>

#include "core/status.h"

typedef struct lms__ahead_in {
  uint32_t period;           /* steps */
  uint32_t nrefs, nkeys;
  const uint32_t *ref_step;  /* per reference, nondecreasing, < period */
  const uint32_t *ref_key;   /* per reference, < nkeys; a key at most once
                                a step */
  const unsigned *ref_access; /* LMS_ACCESS_* of each reference */
  const uint64_t *key_size;
  const uint8_t *key_lives;  /* 1: the same chunk plays the key in the next
                                period (allocated once); 0: a new one does */
  uint64_t capacity;         /* bytes the plan may hold at any step */
  uint32_t reach;            /* a copy in starts at most this many steps
                                before its use (>= 1) */
  int spread;                /* the gaps are taken at even intervals of
                                their order by end, not in it (Note
                                [Spread out]), and each copy in has room
                                from the use of the one before it (Note
                                [Two buffers]) */
  int in_order;              /* no copy in starts before one whose use
                                comes earlier (Note [Copies in by their
                                use] in ahead.c) */
  int dense;                 /* without spread: the gaps are decided in
                                order of the bytes they hold a step, most
                                first, not by end (Note [Whole chunks
                                kept] in ahead.c); 2: those whose first
                                use writes counted twice (their bytes go
                                home too if not kept) */
  uint32_t cut;              /* the plan by end (neither spread nor dense):
                                the step its order by end starts from,
                                < period (Note [Where the cycle is cut] in
                                ahead.c) */
  uint32_t cuts;             /* the same plan: > 1, try up to this many
                                steps to start from, `cut` among them, and
                                keep the one that brings in the fewest
                                bytes */
  const uint64_t *step_ns;   /* with out_bps > 0: per step its compute in
                                nanoseconds, and a dirty chunk's room is
                                held while its write-back runs (Note [Room
                                a write-back holds] in ahead.c); NULL: not */
  double out_bps;            /* the link out, bytes a second */
  const uint8_t *force;      /* NULL, or per reference for the gap after
                                it: 1 sent away, 2 decided before the
                                others (kept if it has room) */
} lms__ahead_in_t;

typedef struct lms__ahead {
  uint32_t period;
  uint8_t *drop;          /* per reference: the chunk leaves after it */
  uint32_t *fetch_first;  /* period + 1 entries: fetches issued at step s are
                             fetch_ref[fetch_first[s] .. fetch_first[s+1]) */
  uint32_t *fetch_ref;    /* the reference each fetch serves */
  uint32_t nfetch;
  uint64_t kept_bytes;    /* bytes of gaps kept on the device */
  uint64_t fetch_bytes;   /* bytes the plan brings in an iteration */
  uint64_t drop_bytes;    /* bytes of the chunks it sends away */
  uint64_t late_fetches;  /* fetches with no room before the step ahead of
                             their use */
  uint32_t cut;           /* the step the order by end started from */
} lms__ahead_t;

/* Builds the plan into *out (which need not be initialised).  On failure
 * (LMS_ERR_HOST_OOM) *out holds nothing to free. */
lms_status_t lms__ahead_build(const lms__ahead_in_t *in, lms__ahead_t *out);
void lms__ahead_free(lms__ahead_t *a);
/* The time the model of Note [A plan searched by its time] gives an
 * iteration of plan a (built from in) with step_ns per step and the
 * rates in and out in bytes a second; 0 where it cannot say. */
double lms__ahead_time(const lms__ahead_in_t *in, const lms__ahead_t *a,
                       const uint64_t *step_ns, double h2d, double d2h);

#endif
