/* link.c - the link presets.  Figures, one direction, pinned memory:
 *   pcie3   P100 on x86, PCIe Gen3 x16: 12.2 / 12.9 GB/s (measured)
 *   pcie4   A100, PCIe Gen4 x16: ~25 / ~26 GB/s
 *   pcie5   H100, PCIe Gen5 x16 copy engine: ~55 / ~53 GB/s, 87 GB/s
 *           summed when both ways run at once (measured on an H100 SXM,
 *           bench/results/2026-11-22-h100.md)
 *   nvlink1 P100 "Minsky" (S822LC), NVLink 1.0 CPU-GPU, 2 bricks: ~33 GB/s
 *           each way measured out of 40 GB/s peak
 *   nvlink2 POWER9 AC922, NVLink 2.0, 4 GPUs (150 GB/s links): ~66 / ~60
 *   c2c     GH200 NVLink-C2C: ~360 / ~297 GB/s
 */
#include "core/link.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

static const lms__link_t presets[] = {
    {"pcie3", 12.2, 12.9, 10.0, "PCIe Gen3 x16, P100 on x86 (measured)", 0.0},
    {"pcie4", 25.0, 26.0, 8.0, "PCIe Gen4 x16, A100", 0.0},
    {"pcie5", 55.0, 53.0, 6.0, "PCIe Gen5 x16, H100 copy engine", 87.0},
    {"nvlink1", 33.0, 33.0, 8.0, "NVLink 1.0 CPU-GPU, P100 Minsky", 0.0},
    {"nvlink2", 66.0, 60.0, 6.0, "NVLink 2.0 CPU-GPU, AC922 with 4 GPUs", 0.0},
    {"c2c", 360.0, 297.0, 4.0, "NVLink-C2C, GH200", 0.0},
};

const lms__link_t *lms__link_preset(size_t i) {
  return i < sizeof presets / sizeof presets[0] ? &presets[i] : NULL;
}

/* Parses one positive rate in GB/s with an optional "GB/s" suffix. */
static int parse_rate(const char *s, const char *end, double *out) {
  char buf[64];
  size_t n = (size_t)(end - s);
  if (n == 0 || n >= sizeof buf) return -1;
  memcpy(buf, s, n);
  buf[n] = '\0';
  char *e = NULL;
  double v = strtod(buf, &e);
  if (e == buf) return -1;
  if (*e != '\0' && strcmp(e, "GB/s") != 0 && strcmp(e, "gb/s") != 0)
    return -1;
  /* Below 1 MB/s a copy's nanoseconds, summed over a run, could overflow
   * the 64-bit clock; no link a user could mean is that slow. */
  if (!isfinite(v) || v < 0.001 || v > 100000.0) return -1;
  *out = v;
  return 0;
}

lms_status_t lms__link_parse(const char *text, lms__link_t *out, char *err) {
  if (text == NULL || text[0] == '\0') {
    lms__errf(err, "--link: empty value; accepted: pcie3, pcie4, pcie5, "
                   "nvlink1, nvlink2, c2c, or GB/s as 25, 25GB/s or 25/26");
    return LMS_ERR_INVALID;
  }
  for (size_t i = 0; lms__link_preset(i) != NULL; i++) {
    if (strcmp(text, presets[i].name) == 0) {
      *out = presets[i];
      return LMS_OK;
    }
  }
  const char *slash = strchr(text, '/');
  /* "25GB/s" has a slash too: treat "/s" at the end as the unit. */
  if (slash != NULL && strcmp(slash, "/s") == 0) slash = NULL;
  const char *slash2 = slash ? strchr(slash + 1, '/') : NULL;
  if (slash2 != NULL && strcmp(slash2, "/s") == 0) slash2 = NULL;
  double h2d = 0.0, d2h = 0.0, both = 0.0;
  int bad;
  if (slash == NULL) {
    bad = parse_rate(text, text + strlen(text), &h2d);
    d2h = h2d;
  } else if (slash2 == NULL) {
    bad = parse_rate(text, slash, &h2d) ||
          parse_rate(slash + 1, slash + 1 + strlen(slash + 1), &d2h);
  } else {
    bad = parse_rate(text, slash, &h2d) || parse_rate(slash + 1, slash2, &d2h) ||
          parse_rate(slash2 + 1, slash2 + 1 + strlen(slash2 + 1), &both);
  }
  if (bad) {
    lms__errf(err, "--link: '%s' is neither a preset nor a rate; accepted: "
                   "pcie3, pcie4, pcie5, nvlink1, nvlink2, c2c, or GB/s "
                   "from 0.001 to 100000 as 25, 25GB/s, 25/26 or "
                   "25/26/40 (the last: both ways at once)",
              text);
    return LMS_ERR_INVALID;
  }
  memset(out, 0, sizeof *out);
  strcpy(out->name, "custom");
  out->h2d_gbps = h2d;
  out->d2h_gbps = d2h;
  out->latency_us = 8.0;
  out->about = "custom rate";
  out->both_gbps = both;
  return LMS_OK;
}
