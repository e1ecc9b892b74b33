/* link.h - CPU-GPU link presets for the simulated device and `--link`.
 *
 * Bandwidths are measured one-direction figures with pinned memory from
 * public sources (see ../shared/CONTEXT.md and docs/links.md); latencies are
 * the fixed cost of one copy, stated assumptions rather than measurements. */
#ifndef LMS_CORE_LINK_H
#define LMS_CORE_LINK_H

#include <stddef.h>

#include "lms/lms.h"

typedef struct lms__link {
  char name[32];      /* preset name, or "custom" */
  double h2d_gbps;    /* host to device, GB/s (10^9 bytes per second) */
  double d2h_gbps;    /* device to host, GB/s */
  double latency_us;  /* fixed cost per copy */
  const char *about;  /* where the figures come from */
  double both_gbps;   /* both ways at once, summed; 0: full duplex (each
                         way at its own rate whatever the other does) */
} lms__link_t;

/* Parses a preset name ("pcie3", "nvlink2", ...) or a custom rate: "25"
 * or "25GB/s" (both ways), "25/26" (host to device / device to host), or
 * "25/26/40" (and 40 GB/s summed while both ways run at once).
 * On failure writes a message naming the accepted forms into err
 * (LMS__ERRBUF bytes) and returns LMS_ERR_INVALID. */
lms_status_t lms__link_parse(const char *text, lms__link_t *out, char *err);
/* The presets, for help texts and `lms sim`; NULL past the last. */
const lms__link_t *lms__link_preset(size_t i);

#endif
