/* open.c - picks the device the options name.  This build has the
 * simulated device; the CUDA device is a module of its own, and until it is
 * built in, "auto" falls back to the simulated device and says so, while
 * "cuda" is refused with a message. */
#include "core/log.h"
#include "core/options.h"
#include "device/device.h"

/* The simulated device's capacity when no --gpu-limit is given: the 16 GB
 * P100 of the source scenario. */
#define LMS__SIM_DEFAULT_CAPACITY (16ull << 30)

lms_status_t lms__dev_open(const lms__opts_t *opts, lms_dev_t **out,
                           char *err) {
  if (opts->device == LMS_DEVICE_CUDA) {
    lms__errf(err, "--device cuda: this build of lms has no CUDA device; "
                   "accepted here: sim or auto");
    return LMS_ERR_UNSUPPORTED;
  }
  if (opts->device == LMS_DEVICE_AUTO)
    LMS_LOG(INFO, DEVICE, "--device auto: no CUDA device in this build; "
                          "using the simulated device");
  lms__sim_config_t cfg = {
      .capacity = opts->gpu_limit ? opts->gpu_limit : LMS__SIM_DEFAULT_CAPACITY,
      .link = opts->link,
      .fail = opts->fail && opts->fail[0] ? opts->fail : NULL,
      .timing_only = !opts->sim_bytes,
  };
  return lms__sim_create(&cfg, out, err);
}
