/* procaddr.c - cuGetProcAddress and cuGetProcAddress_v2.  cudart (static
 * or shared) asks the driver for every entry point through these, by base
 * name ("cuMemAlloc") and the CUDA version it was built for, and the
 * driver picks the versioned function (cuMemAlloc_v2, or cuMemAllocAsync_ptsz
 * under the per-thread default stream flag).  We let the real driver pick,
 * then hand back our hook for whatever it picked.
 *
 * Note [Matching versioned lookups]
 * Which hook matches the driver's answer is decided two ways:
 *  1. By address: the driver's answer is compared with libcuda's exported
 *     definitions of every versioned symbol we hook.  If it is, say, the
 *     address of cuMemAlloc_v2, the program gets our cuMemAlloc_v2.  This
 *     needs no knowledge of the driver's version rules and cannot pair a
 *     function with a hook of another signature.
 *  2. By the documented rules, when the address is none of those (a driver
 *     may answer with internal entry points): among our hooks for that base
 *     name, the newest whose version is not above cudaVersion, the _ptsz
 *     form only under CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM.  The
 *     rules are only trusted up to the CUDA version of the cuda.h we were
 *     built with: a newer cudaVersion might mean a form we have never
 *     seen (a cuMemAlloc_v3 with another signature), and handing our _v2
 *     in its place would corrupt the call, so the driver's own answer
 *     is kept and a warning logged.
 * An answer that matches no hook (an old 32-bit form, a function we do not
 * hook) is returned unchanged.  The hook then calls libcuda's exported
 * definition of its symbol, which is the same function as far as the API
 * contract goes. */
#include "core/log.h"
#include "preload/preload.h"

static int by_rules(const char *symbol, int version, cuuint64_t flags) {
  int per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  int best = -1;
  for (int pass = per_thread; pass >= 0 && best < 0; pass--) {
    for (int i = 0; i < LMS__FN_COUNT; i++) {
      const lms__fn_t *f = &lms__fns[i];
      if (f->hook == NULL || f->ptsz != pass || f->version > version) continue;
      const char *a = symbol, *b = f->base;
      while (*a != '\0' && *a == *b) a++, b++;
      if (*a != *b) continue;
      if (best < 0 || f->version > lms__fns[best].version) best = i;
    }
  }
  return best;
}

void *lms__procaddr_match(const char *symbol, void *addr, int version,
                          cuuint64_t flags) {
  if (symbol == NULL || addr == NULL) return addr;
  for (int i = 0; i < LMS__FN_COUNT; i++) {
    if (lms__fns[i].hook == NULL) continue;
    if (addr == lms__fns[i].hook) return addr; /* already ours */
    if (addr == lms__real((lms__fn_id_t)i)) return lms__fns[i].hook;
  }
  int i = by_rules(symbol, version, flags);
  if (i < 0) return addr;
  if (version > CUDA_VERSION) {
    LMS_LOG(WARN, HOOK,
            "cuGetProcAddress(\"%s\", %d): the driver answered with an "
            "address the interposer does not know, for a CUDA version newer "
            "than its own (%d); the call is left unhooked",
            symbol, version, CUDA_VERSION);
    return addr;
  }
  LMS_LOG(DEBUG, HOOK,
          "cuGetProcAddress(\"%s\", %d, flags %llu): matched %s by the "
          "version rules",
          symbol, version, (unsigned long long)flags, lms__fns[i].symbol);
  return lms__fns[i].hook;
}

typedef CUresult (*proc_v1_t)(const char *, void **, int, cuuint64_t);
typedef CUresult (*proc_v2_t)(const char *, void **, int, cuuint64_t,
                              CUdriverProcAddressQueryResult *);

LMS__PRELOAD_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn,
                                              int cudaVersion,
                                              cuuint64_t flags) {
  proc_v1_t real = (proc_v1_t)lms__real(LMS__FN_cuGetProcAddress);
  if (real == NULL) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = real(symbol, pfn, cudaVersion, flags);
  if (r == CUDA_SUCCESS && pfn != NULL)
    *pfn = lms__procaddr_match(symbol, *pfn, cudaVersion, flags);
  return r;
}

LMS__PRELOAD_EXPORT CUresult cuGetProcAddress_v2(
    const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
    CUdriverProcAddressQueryResult *symbolStatus) {
  proc_v2_t real = (proc_v2_t)lms__real(LMS__FN_cuGetProcAddress_v2);
  if (real == NULL) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
  if (r == CUDA_SUCCESS && pfn != NULL)
    *pfn = lms__procaddr_match(symbol, *pfn, cudaVersion, flags);
  return r;
}
