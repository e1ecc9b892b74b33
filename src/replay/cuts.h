/* cuts.h - the part of the lower bound that cuts the iteration's cycle
 * (Note [Cuts around the cycle] in cuts.c), fed by bound.c. */
#ifndef LMS_REPLAY_CUTS_H
#define LMS_REPLAY_CUTS_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* A gap between two uses of a chunk, around the cycle of n steps. */
typedef struct lms__cgap {
  uint64_t size;
  uint32_t start; /* the step of the first use, 0 .. n - 1 */
  uint32_t len;   /* steps to the second use, 1 .. n */
  uint32_t back;  /* dirty: steps from the last write back to start */
  uint8_t reads;  /* the second use reads */
  uint8_t dirty;  /* bytes the program wrote are on the chunk */
} lms__cgap_t;

#define LMS__CHAIN_SHOWN 32 /* the chain's first cuts kept for reports */

typedef struct lms__cut_result {
  uint64_t ns;        /* the bound; 0 when nothing need be absent */
  uint32_t steps[3];  /* the cuts that give it, in order */
  int nsteps;         /* 2 or 3; 0 with ns */
  /* Note [A chain of cuts]: any number of cuts, each part bounded alone. */
  uint64_t chain_ns;
  uint32_t chain_steps[LMS__CHAIN_SHOWN]; /* its first cuts, in order */
  uint32_t chain_ncuts; /* how many cuts; 0 with chain_ns */
} lms__cut_result_t;

/* room[s]: capacity less step s's bytes; compute[s]: step s's compute;
 * rates in bytes per ns: ri in, ro out, rs the most both move at once
 * (ri + ro, or more, where the link has no shared rate; Note [Both ways
 * at once in the bound] in cuts.c). */
lms_status_t lms__cut_bound(const lms__cgap_t *g, size_t ng, uint32_t n,
                            const int64_t *room, const uint64_t *compute,
                            double ri, double ro, double rs,
                            lms__cut_result_t *out);

#endif
