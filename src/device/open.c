/* open.c - picks the device the options name: the simulated device, or
 * the CUDA device (cuda.c) in builds that have the CUDA toolkit.  "auto"
 * takes a CUDA device when the runtime sees one and the simulated device
 * otherwise, and logs which and why; "cuda" without a build or a device
 * is refused with a message.  The CUDA device is the local rank's under a
 * launcher (Note [One lms per rank] in core/rank.h), else device 0. */
#include "core/log.h"
#include "core/options.h"
#include "core/rank.h"
#include "device/device.h"

/* The simulated device's capacity when no --gpu-limit is given: the 16 GB
 * P100 of the source scenario. */
#define LMS__SIM_DEFAULT_CAPACITY (16ull << 30)

lms_status_t lms__dev_open(const lms__opts_t *opts, lms_dev_t **out,
                           char *err) {
#ifdef LMS_HAVE_CUDA
  char why[256] = "";
  if (opts->device == LMS_DEVICE_CUDA ||
      (opts->device == LMS_DEVICE_AUTO &&
       lms__cuda_device_count(why, sizeof why) > 0)) {
    /* Note [One lms per rank] in core/rank.h: the local rank's device
     * among those this process sees. */
    int n = lms__cuda_device_count(why, sizeof why);
    int local = lms__local_rank();
    int ordinal = local >= 0 && n > 0 ? local % n : 0;
    LMS_LOG(INFO, DEVICE, "using CUDA device %d of %d%s", ordinal, n,
            local >= 0 ? " (the local rank's)" : "");
    LMS_CHECK(lms__cuda_create(ordinal, out, err));
    /* Note [Mapping pieces on a GPU] in cuda.c. */
    if (opts->piece_size > 0) {
      char reason[LMS__ERRBUF];
      if (lms__cuda_map_pieces(*out, opts->piece_size, reason) != LMS_OK)
        LMS_LOG(INFO, DEVICE, "--piece-size: %s", reason);
    }
    /* On a GPU, an explicit --link emulates that link by slowing copies. */
    if (opts->source[LMS__OPT_link] != LMS__SRC_DEFAULT) {
      lms_status_t st = lms__cuda_throttle(*out, opts->link.h2d_gbps,
                                           opts->link.d2h_gbps, err);
      if (st != LMS_OK) {
        (*out)->ops->destroy(*out);
        *out = NULL;
        return st;
      }
    }
    /* The driver cannot be told to fail, so --fail wraps the device
     * (Note [Injecting faults above a real device]). */
    if (opts->fail && opts->fail[0]) {
      lms_dev_t *wrapped = NULL;
      lms_status_t st = lms__faulty_wrap(*out, opts->fail, &wrapped, err);
      if (st != LMS_OK) {
        (*out)->ops->destroy(*out);
        *out = NULL;
        return st;
      }
      *out = wrapped;
    }
    return LMS_OK;
  }
  if (opts->device == LMS_DEVICE_AUTO) {
    LMS_LOG(INFO, DEVICE, "--device auto: %s; using the simulated device",
            why);
  }
#else
  if (opts->device == LMS_DEVICE_CUDA) {
    lms__errf(err, "--device cuda: this build of lms has no CUDA device; "
                   "accepted here: sim or auto");
    return LMS_ERR_UNSUPPORTED;
  }
  if (opts->device == LMS_DEVICE_AUTO)
    LMS_LOG(INFO, DEVICE, "--device auto: no CUDA device in this build; "
                          "using the simulated device");
#endif
  lms__sim_config_t cfg = {
      .capacity = opts->gpu_limit ? opts->gpu_limit : LMS__SIM_DEFAULT_CAPACITY,
      .link = opts->link,
      .fail = opts->fail && opts->fail[0] ? opts->fail : NULL,
      .timing_only = !opts->sim_bytes,
      .measured_waits = opts->sim_measured_waits,
  };
  return lms__sim_create(&cfg, out, err);
}
