/* torch.c - lms_torch_* (include/lms/lms_torch.h): one stable allocator
 * per process, configured from the LMS_* environment. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/options.h"
#include "lms/lms_torch.h"
#include "stable/stable.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static lms__stable_t *g_st;
static char g_init_error[LMS__ERRBUF + 64];
static char g_last_error[LMS__ERRBUF + 64];
static pthread_mutex_t g_err_lock = PTHREAD_MUTEX_INITIALIZER;

static void set_error(const char *msg) {
  pthread_mutex_lock(&g_err_lock);
  snprintf(g_last_error, sizeof g_last_error, "%s", msg);
  pthread_mutex_unlock(&g_err_lock);
}

static void start(void) {
  lms_options_t *o = NULL;
  if (lms_options_create(&o) != LMS_OK) {
    snprintf(g_init_error, sizeof g_init_error,
             "lms: out of memory reading the options");
    return;
  }
  if (lms_options_load_env(o) != LMS_OK) {
    snprintf(g_init_error, sizeof g_init_error, "lms: %s",
             lms_options_error(o));
    lms_options_destroy(o);
    return;
  }
  lms__log_configure(o->v.log.level, o->v.log.subsys, o->v.log_file);
  lms__stable_cfg_t cfg = {
      .gpu_limit = o->v.gpu_limit,
      .lms_kb = o->v.lms_kb,
      .lms_frac = o->v.lms_frac,
      .window = o->v.prefetch_window,
  };
  lms_options_destroy(o);
  lms__drv_t drv;
  char err[256];
  if (lms__stable_driver_load(&drv, err, sizeof err) != LMS_OK ||
      lms__stable_create(&cfg, &drv, &g_st, err, sizeof err) != LMS_OK)
    snprintf(g_init_error, sizeof g_init_error, "lms: %s", err);
}

LMS_API int lms_torch_init(void) {
  pthread_once(&g_once, start);
  if (g_st == NULL) {
    set_error(g_init_error);
    return -1;
  }
  return 0;
}

LMS_API void *lms_torch_malloc(ssize_t size, int device,
                               cudaStream_t stream) {
  if (lms_torch_init() != 0) {
    static int told; /* once, so a failing program is not flooded */
    if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
      fprintf(stderr, "%s\n", g_init_error);
    return NULL;
  }
  if (size < 0) {
    char msg[128];
    snprintf(msg, sizeof msg,
             "lms: allocation of a negative size (%zd bytes) refused", size);
    set_error(msg);
    return NULL;
  }
  const char *why = NULL;
  void *p = lms__stable_malloc(g_st, (size_t)size, device, stream, &why);
  if (p == NULL && size > 0) {
    char msg[256];
    snprintf(msg, sizeof msg, "lms: allocation of %zd bytes on device %d "
             "failed: %s", size, device, why != NULL ? why : "no memory");
    set_error(msg);
    /* PyTorch's pluggable allocator takes the NULL without raising
     * (torch/csrc/cuda/CUDAPluggableAllocator.cpp, malloc): the program
     * learns of it only when a kernel touches the tensor, so the reason
     * is said here. */
    fprintf(stderr, "%s\n", msg);
  }
  return p;
}

LMS_API void lms_torch_free(void *ptr, ssize_t size, int device,
                            cudaStream_t stream) {
  (void)size, (void)device;
  if (ptr == NULL || g_st == NULL) return;
  if (lms__stable_free(g_st, ptr, stream) != LMS_OK)
    set_error("lms: free of a pointer this allocator did not hand out");
}

LMS_API int lms_torch_prefetch(void *const *ptrs, int n,
                               cudaStream_t stream) {
  if (g_st == NULL || ptrs == NULL || n <= 0) return 0;
  return lms__stable_prefetch(g_st, ptrs, n, stream);
}

LMS_API int lms_torch_evict_all(cudaStream_t stream) {
  return g_st == NULL ? 0 : lms__stable_evict_all(g_st, stream);
}

LMS_API void lms_torch_empty_cache(void) {
  if (g_st != NULL) lms__stable_empty_cache(g_st);
}

LMS_API size_t lms_torch_stats_json(char *buf, size_t cap) {
  lms__stable_stats_t s;
  memset(&s, 0, sizeof s);
  if (g_st != NULL) lms__stable_stats(g_st, &s);
  return lms__stable_stats_json(&s, buf, cap);
}

LMS_API const char *lms_torch_last_error(void) { return g_last_error; }
