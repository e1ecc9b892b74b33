/* preload_prog.c - a CUDA "program" for the interposer's tests, run with
 * and without liblms_preload.so against the driver double.
 *
 *   preload_prog ROUTE SCENARIO [ARGS]
 *
 * ROUTE is how it reaches the driver, the three ways real programs do:
 *   direct     calls by name, linked with libcuda (only in the build made
 *              with PRELOAD_PROG_LINKED)
 *   dlopen     dlopen("libcuda.so.1") and dlsym of each versioned name
 *   procaddr   dlsym of cuGetProcAddress_v2 only, then everything through
 *              it by base name and version, as static cudart does
 *   procaddr1  the same through the CUDA 11 cuGetProcAddress
 * SCENARIO is one of: resolve, limit MiB, oversub MiB TIMES, async MiB,
 * threads, dlsym, malloc, status N (see each function).
 *
 * Each scenario checks what it promises and exits 1 with a message naming
 * the first thing that was wrong. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_double.h"

static int g_fail;

static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stdout, "FAIL: ");
  vfprintf(stdout, fmt, ap);
  fprintf(stdout, "\n");
  va_end(ap);
  fflush(stdout);
  g_fail = 1;
}

#define CHECK(cond, ...)                                                      \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fail(__VA_ARGS__);                                                      \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

#define MiB (1024ull * 1024ull)

/* ---- The driver, reached by the route asked for ----------------------- */

typedef CUresult (*proc_v2_t)(const char *, void **, int, cuuint64_t,
                              CUdriverProcAddressQueryResult *);
typedef CUresult (*proc_v1_t)(const char *, void **, int, cuuint64_t);

/* X(field, symbol, base, per_thread) */
#define API(X)                                                                \
  X(init, cuInit, cuInit, 0)                                                  \
  X(device_get, cuDeviceGet, cuDeviceGet, 0)                                  \
  X(ctx_retain, cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 0)        \
  X(ctx_set, cuCtxSetCurrent, cuCtxSetCurrent, 0)                             \
  X(mem_alloc, cuMemAlloc_v2, cuMemAlloc, 0)                                  \
  X(mem_alloc_pitch, cuMemAllocPitch_v2, cuMemAllocPitch, 0)                  \
  X(mem_free, cuMemFree_v2, cuMemFree, 0)                                     \
  X(mem_get_info, cuMemGetInfo_v2, cuMemGetInfo, 0)                           \
  X(alloc_async, cuMemAllocAsync, cuMemAllocAsync, 0)                         \
  X(alloc_async_ptsz, cuMemAllocAsync_ptsz, cuMemAllocAsync, 1)               \
  X(free_async, cuMemFreeAsync, cuMemFreeAsync, 0)                            \
  X(free_async_ptsz, cuMemFreeAsync_ptsz, cuMemFreeAsync, 1)                  \
  X(alloc_pool, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 0)          \
  X(alloc_pool_ptsz, cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 1)\
  X(alloc_managed, cuMemAllocManaged, cuMemAllocManaged, 0)                   \
  X(launch, cuLaunchKernel, cuLaunchKernel, 0)                                \
  X(launch_ptsz, cuLaunchKernel_ptsz, cuLaunchKernel, 1)                      \
  X(launch_ex, cuLaunchKernelEx, cuLaunchKernelEx, 0)                         \
  X(launch_ex_ptsz, cuLaunchKernelEx_ptsz, cuLaunchKernelEx, 1)               \
  X(get_proc, cuGetProcAddress_v2, cuGetProcAddress, 0)

typedef struct api {
#define API_FIELD_(field, sym, base, pt) __typeof__(&sym) field;
  API(API_FIELD_)
#undef API_FIELD_
  void (*stats)(cudouble_stats_t *);
  void (*query)(uint64_t, cudouble_alloc_info_t *);
  void *(*symbol)(const char *);
  void *(*register_kernel)(cudouble_kernel_fn, unsigned, const size_t *);
} api_t;

static api_t A;
static void *g_libcuda;
static const char *g_route;

static void *by_procaddr(const char *base, int version, int per_thread) {
  void *fn = NULL;
  CUresult r;
  cuuint64_t flags =
      per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0;
  if (strcmp(g_route, "procaddr1") == 0) {
    proc_v1_t gpa = (proc_v1_t)dlsym(g_libcuda, "cuGetProcAddress");
    CHECK(gpa != NULL, "dlsym(cuGetProcAddress): %s", dlerror());
    r = gpa(base, &fn, version, flags);
  } else {
    proc_v2_t gpa = (proc_v2_t)dlsym(g_libcuda, "cuGetProcAddress_v2");
    CHECK(gpa != NULL, "dlsym(cuGetProcAddress_v2): %s", dlerror());
    CUdriverProcAddressQueryResult st;
    r = gpa(base, &fn, version, flags, &st);
  }
  return r == CUDA_SUCCESS ? fn : NULL;
}

static void open_driver(const char *route) {
  g_route = route;
  g_libcuda = dlopen("libcuda.so.1", RTLD_NOW);
  CHECK(g_libcuda != NULL, "dlopen(libcuda.so.1): %s", dlerror());
#define TEST_ONLY_(name) *(void **)&A.name = dlsym(g_libcuda, "cudouble_" #name);
  TEST_ONLY_(stats) TEST_ONLY_(query) TEST_ONLY_(symbol)
  TEST_ONLY_(register_kernel)
#undef TEST_ONLY_
  CHECK(A.stats && A.query && A.symbol && A.register_kernel,
        "the double's test functions are missing");
  if (strcmp(route, "direct") == 0) {
#ifdef PRELOAD_PROG_LINKED
#define API_DIRECT_(field, sym, base, pt) A.field = sym;
    API(API_DIRECT_)
#undef API_DIRECT_
#else
    CHECK(0, "this build is not linked with libcuda: no direct route");
#endif
  } else if (strcmp(route, "dlopen") == 0) {
#define API_DLSYM_(field, sym, base, pt)                                      \
  *(void **)&A.field = dlsym(g_libcuda, #sym);
    API(API_DLSYM_)
#undef API_DLSYM_
  } else if (strncmp(route, "procaddr", 8) == 0) {
#define API_PROC_(field, sym, base, pt)                                       \
  *(void **)&A.field = by_procaddr(#base, CUDA_VERSION, pt);
    API(API_PROC_)
#undef API_PROC_
  } else {
    CHECK(0, "unknown route '%s'", route);
  }
#define API_CHECK_(field, sym, base, pt)                                      \
  CHECK(A.field != NULL, "%s not found by route %s", #sym, route);
  API(API_CHECK_)
#undef API_CHECK_
}

static CUcontext start(void) {
  CUdevice dev;
  CUcontext ctx;
  CHECK(A.init(0) == CUDA_SUCCESS, "cuInit");
  CHECK(A.device_get(&dev, 0) == CUDA_SUCCESS, "cuDeviceGet");
  CHECK(A.ctx_retain(&ctx, dev) == CUDA_SUCCESS, "cuDevicePrimaryCtxRetain");
  CHECK(A.ctx_set(ctx) == CUDA_SUCCESS, "cuCtxSetCurrent");
  return ctx;
}

/* ---- Kernels: host functions the double runs at launch ---------------- */

static unsigned long long g_bad_bytes;

static unsigned char pattern(uint64_t i, uint32_t seed) {
  return (unsigned char)((i * 131u + seed * 7u) ^ (i >> 11));
}

/* fill(ptr, n, seed) */
static void k_fill(void **p) {
  unsigned char *mem = (unsigned char *)(uintptr_t)*(CUdeviceptr *)p[0];
  uint64_t n = *(uint64_t *)p[1];
  uint32_t seed = *(uint32_t *)p[2];
  for (uint64_t i = 0; i < n; i++) mem[i] = pattern(i, seed);
}

/* check(ptr, n, seed): counts bytes that differ in g_bad_bytes. */
static void k_check(void **p) {
  const unsigned char *mem = (const unsigned char *)(uintptr_t)*(CUdeviceptr *)p[0];
  uint64_t n = *(uint64_t *)p[1];
  uint32_t seed = *(uint32_t *)p[2];
  for (uint64_t i = 0; i < n; i++)
    if (mem[i] != pattern(i, seed)) __atomic_add_fetch(&g_bad_bytes, 1, __ATOMIC_RELAXED);
}

static CUfunction g_fill, g_check;

static void register_kernels(void) {
  const size_t sizes[3] = {sizeof(CUdeviceptr), sizeof(uint64_t),
                           sizeof(uint32_t)};
  g_fill = (CUfunction)A.register_kernel(k_fill, 3, sizes);
  g_check = (CUfunction)A.register_kernel(k_check, 3, sizes);
  CHECK(g_fill != NULL && g_check != NULL, "registering kernels");
}

/* Runs fill or check over [p, p+n) through one of the launch forms. */
static void run_kernel(CUfunction f, CUdeviceptr p, uint64_t n, uint32_t seed,
                       int form) {
  void *params[3] = {&p, &n, &seed};
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
  CUresult r;
  switch (form & 3) {
  case 0: r = A.launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL); break;
  case 1: r = A.launch_ptsz(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL); break;
  case 2: r = A.launch_ex(&cfg, f, params, NULL); break;
  default: r = A.launch_ex_ptsz(&cfg, f, params, NULL); break;
  }
  CHECK(r == CUDA_SUCCESS, "launch form %d failed: %d", form & 3, (int)r);
}

static void fill_and_check(CUdeviceptr p, uint64_t n, uint32_t seed, int form) {
  unsigned long long before = g_bad_bytes;
  run_kernel(g_fill, p, n, seed, form);
  run_kernel(g_check, p, n, seed, form + 1);
  CHECK(g_bad_bytes == before, "%llu bytes wrong at 0x%llx after a kernel",
        g_bad_bytes - before, (unsigned long long)p);
}

static void host_check(CUdeviceptr p, uint64_t n, uint32_t seed) {
  const unsigned char *mem = (const unsigned char *)(uintptr_t)p;
  for (uint64_t i = 0; i < n; i++)
    CHECK(mem[i] == pattern(i, seed), "byte %llu of 0x%llx changed",
          (unsigned long long)i, (unsigned long long)p);
}

/* ---- Scenarios -------------------------------------------------------- */

static int is_preloads(void *addr, const char *want_name) {
  Dl_info info;
  if (addr == NULL || dladdr(addr, &info) == 0 || info.dli_fname == NULL)
    return 0;
  if (strstr(info.dli_fname, "liblms_preload") == NULL) return 0;
  return want_name == NULL ||
         (info.dli_sname != NULL && strcmp(info.dli_sname, want_name) == 0);
}

static const char *where(void *addr) {
  static char buf[512];
  Dl_info info;
  if (addr == NULL) return "NULL";
  if (dladdr(addr, &info) == 0) return "an unknown object";
  snprintf(buf, sizeof buf, "%s in %s",
           info.dli_sname ? info.dli_sname : "?",
           info.dli_fname ? info.dli_fname : "?");
  return buf;
}

/* Every hooked function, reached by the route, is the preload's definition
 * of the right versioned name; unhooked ones are the driver's. */
static int resolve(void) {
  int tramp = getenv("CUDOUBLE_PROC_TRAMPOLINES") != NULL &&
              strcmp(getenv("CUDOUBLE_PROC_TRAMPOLINES"), "1") == 0;
  int bad = 0;
  if (strncmp(g_route, "procaddr", 8) != 0) {
#define API_RESOLVE_(field, sym, base, pt)                                    \
  if (strcmp(#sym, "cuInit") && strcmp(#sym, "cuDeviceGet") &&              \
      strcmp(#sym, "cuDevicePrimaryCtxRetain") &&                             \
      strcmp(#sym, "cuCtxSetCurrent")) {                                      \
    if (!is_preloads((void *)A.field, #sym)) {                                \
      fail("%s by route %s is %s, not the preload's", #sym, g_route,          \
           where((void *)A.field));                                           \
      bad = 1;                                                                \
    }                                                                         \
  } else if (is_preloads((void *)A.field, NULL)) {                            \
    fail("%s is hooked but should not be", #sym);                             \
    bad = 1;                                                                  \
  }
    API(API_RESOLVE_)
#undef API_RESOLVE_
    /* The old ABI names stay the driver's. */
    void *old = dlsym(g_libcuda, "cuMemAlloc");
    if (old == NULL || is_preloads(old, NULL)) {
      fail("cuMemAlloc (the 32-bit form) is %s", where(old));
      bad = 1;
    }
  } else {
    static const struct {
      const char *base;
      int version, per_thread;
      const char *want; /* NULL: not found */
      int hooked;       /* else the driver's own */
      int tramp_hooked; /* the same, when the driver answers with wrappers */
    } cases[] = {
        {"cuMemAlloc", 13000, 0, "cuMemAlloc_v2", 1, 1},
        {"cuMemAlloc", 3020, 0, "cuMemAlloc_v2", 1, 1},
        {"cuMemAlloc", 3010, 0, "cuMemAlloc", 0, 0},
        {"cuMemAlloc", 13000, 1, "cuMemAlloc_v2", 1, 1},
        {"cuMemAlloc", 99000, 0, "cuMemAlloc_v2", 1, 0},
        {"cuMemAllocPitch", 12000, 0, "cuMemAllocPitch_v2", 1, 1},
        {"cuMemFree", 12000, 0, "cuMemFree_v2", 1, 1},
        {"cuMemFree", 3000, 0, "cuMemFree", 0, 0},
        {"cuMemGetInfo", 12000, 0, "cuMemGetInfo_v2", 1, 1},
        {"cuMemAllocAsync", 11020, 0, "cuMemAllocAsync", 1, 1},
        {"cuMemAllocAsync", 12000, 1, "cuMemAllocAsync_ptsz", 1, 1},
        {"cuMemAllocAsync", 11000, 0, NULL, 0, 0},
        {"cuMemFreeAsync", 12000, 0, "cuMemFreeAsync", 1, 1},
        {"cuMemFreeAsync", 12000, 1, "cuMemFreeAsync_ptsz", 1, 1},
        {"cuMemAllocFromPoolAsync", 12000, 0, "cuMemAllocFromPoolAsync", 1, 1},
        {"cuMemAllocFromPoolAsync", 12000, 1, "cuMemAllocFromPoolAsync_ptsz",
         1, 1},
        {"cuMemAllocManaged", 12000, 0, "cuMemAllocManaged", 1, 1},
        {"cuLaunchKernel", 12000, 0, "cuLaunchKernel", 1, 1},
        {"cuLaunchKernel", 12000, 1, "cuLaunchKernel_ptsz", 1, 1},
        {"cuLaunchKernelEx", 12000, 0, "cuLaunchKernelEx", 1, 1},
        {"cuLaunchKernelEx", 12000, 1, "cuLaunchKernelEx_ptsz", 1, 1},
        {"cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2", 1, 1},
        {"cuGetProcAddress", 11030, 0, "cuGetProcAddress", 1, 1},
        {"cuInit", 12000, 0, "cuInit", 0, 0},
        {"cuMemAdvise", 12000, 0, "cuMemAdvise", 0, 0},
        {"cuNoSuchFunction", 12000, 0, NULL, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      void *fn = by_procaddr(cases[i].base, cases[i].version,
                             cases[i].per_thread);
      int hooked = tramp ? cases[i].tramp_hooked : cases[i].hooked;
      const char *want = cases[i].want;
      int ok;
      if (want == NULL) ok = fn == NULL;
      else if (hooked) ok = is_preloads(fn, want);
      else
        ok = fn != NULL && !is_preloads(fn, NULL) &&
             (tramp || fn == A.symbol(want));
      if (!ok) {
        fail("cuGetProcAddress(%s, %d, %s) by %s gave %s; wanted %s%s",
             cases[i].base, cases[i].version,
             cases[i].per_thread ? "per-thread" : "default", g_route,
             where(fn), want ? want : "nothing",
             want ? (hooked ? " from the preload" : " from the driver") : "");
        bad = 1;
      }
    }
    /* The hook handed out for cuGetProcAddress hooks what it looks up. */
    proc_v2_t gpa = (proc_v2_t)by_procaddr("cuGetProcAddress", 12000, 0);
    void *fn = NULL;
    if (gpa == NULL || gpa("cuMemFree", &fn, 12000, 0, NULL) != CUDA_SUCCESS ||
        !is_preloads(fn, "cuMemFree_v2")) {
      fail("cuMemFree through the cuGetProcAddress handed out: %s", where(fn));
      bad = 1;
    }
  }
  printf("resolve by %s%s: %s\n", g_route, tramp ? " (trampolines)" : "",
         bad ? "FAILED" : "every hooked symbol is the preload's");
  return bad;
}

/* One allocation within the limit, one past it: the second is managed,
 * advised to the host, accessed in place, and keeps its bytes. */
static int limit(uint64_t limit_mib) {
  start();
  register_kernels();
  const uint64_t L = limit_mib * MiB;
  size_t fr = 0, tot = 0;
  CHECK(A.mem_get_info(&fr, &tot) == CUDA_SUCCESS, "cuMemGetInfo_v2");
  CHECK(tot == L && fr == L, "cuMemGetInfo_v2 says %zu free of %zu, wanted the "
        "limit %llu", fr, tot, (unsigned long long)L);
  CUdeviceptr a = 0, b = 0, c = 0;
  CHECK(A.mem_alloc(&a, L / 4 * 3) == CUDA_SUCCESS, "allocating 3/4 limit");
  cudouble_alloc_info_t ia, ib;
  A.query(a, &ia);
  CHECK(ia.kind == CUDOUBLE_DEVICE, "3/4 of the limit is not device memory");
  CHECK(A.mem_get_info(&fr, &tot) == CUDA_SUCCESS && fr == L / 4,
        "free after 3/4: %zu, wanted %llu", fr, (unsigned long long)(L / 4));
  CHECK(A.mem_alloc(&b, L / 2) == CUDA_SUCCESS, "allocating past the limit");
  A.query(b, &ib);
  CHECK(ib.kind == CUDOUBLE_MANAGED, "past the limit is not managed (kind %d)",
        ib.kind);
  CHECK(ib.preferred_type == CU_MEM_LOCATION_TYPE_HOST,
        "no preferred-location-host advice (%d)", ib.preferred_type);
  CHECK(ib.accessed_by_type == CU_MEM_LOCATION_TYPE_DEVICE &&
            ib.accessed_by_id == 0,
        "no accessed-by-device-0 advice (%d, %d)", ib.accessed_by_type,
        ib.accessed_by_id);
  CHECK(A.mem_get_info(&fr, &tot) == CUDA_SUCCESS && fr == L / 4,
        "managed memory counted against the limit: free %zu", fr);
  const CUdeviceptr b_was = b;
  fill_and_check(a, L / 4 * 3, 1, 0);
  fill_and_check(b, L / 2, 2, 2);
  /* Traffic beside it: another small one on the device, freed. */
  CHECK(A.mem_alloc(&c, L / 8) == CUDA_SUCCESS, "small allocation");
  A.query(c, &ia);
  CHECK(ia.kind == CUDOUBLE_DEVICE, "1/8 of the limit is not on the device");
  fill_and_check(c, L / 8, 3, 1);
  CHECK(A.mem_free(c) == CUDA_SUCCESS, "freeing the small one");
  CHECK(b == b_was, "the pointer moved");
  host_check(b, L / 2, 2);
  host_check(a, L / 4 * 3, 1);
  /* An unknown pointer goes to the driver, which refuses it. */
  cudouble_stats_t s0, s1;
  A.stats(&s0);
  CHECK(A.mem_free((CUdeviceptr)0x12345600) == CUDA_ERROR_INVALID_VALUE,
        "freeing an unknown pointer did not give the driver's error");
  A.stats(&s1);
  CHECK(s1.bad_free_calls == s0.bad_free_calls + 1,
        "the unknown pointer did not reach the driver");
  CHECK(A.mem_free(b) == CUDA_SUCCESS, "freeing the managed one");
  CHECK(A.mem_free(a) == CUDA_SUCCESS, "freeing the device one");
  A.stats(&s1);
  CHECK(s1.device_bytes == 0 && s1.managed_bytes == 0,
        "the driver still holds %llu device and %llu managed bytes",
        (unsigned long long)s1.device_bytes,
        (unsigned long long)s1.managed_bytes);
  CHECK(A.mem_get_info(&fr, &tot) == CUDA_SUCCESS && fr == L,
        "free at the end %zu, wanted %llu", fr, (unsigned long long)L);
  printf("limit ok: %llu MiB limit, device peak %llu MiB, managed served past "
         "it\n", (unsigned long long)limit_mib,
         (unsigned long long)(s1.device_peak / MiB));
  return 0;
}

/* Allocates `times` x limit in 8 MiB chunks, fills and checks each through
 * kernels, frees them.  Without the preload the double runs out at its
 * physical size: "out of memory after N MiB". */
static int oversub(uint64_t limit_mib, uint64_t times) {
  start();
  register_kernels();
  const uint64_t chunk = 8 * MiB;
  const size_t n = (size_t)(limit_mib * times * MiB / chunk);
  CUdeviceptr *p = calloc(n, sizeof *p);
  CHECK(p != NULL, "calloc");
  for (size_t i = 0; i < n; i++) {
    CUresult r = A.mem_alloc(&p[i], chunk);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      printf("out of memory after %llu MiB\n",
             (unsigned long long)(i * chunk / MiB));
      return 1;
    }
    CHECK(r == CUDA_SUCCESS, "allocation %zu: %d", i, (int)r);
    run_kernel(g_fill, p[i], chunk, (uint32_t)i, (int)i);
  }
  unsigned long long before = g_bad_bytes;
  for (size_t i = 0; i < n; i++) run_kernel(g_check, p[i], chunk, (uint32_t)i, (int)i + 1);
  CHECK(g_bad_bytes == before, "%llu bytes wrong", g_bad_bytes - before);
  cudouble_stats_t s;
  A.stats(&s);
  unsigned long long managed = s.managed_bytes / MiB;
  for (size_t i = 0; i < n; i++)
    CHECK(A.mem_free(p[i]) == CUDA_SUCCESS, "free %zu", i);
  free(p);
  printf("oversub ok: %llu MiB in %zu chunks, %llu MiB managed, device peak "
         "%llu MiB\n",
         (unsigned long long)(n * chunk / MiB), n, managed,
         (unsigned long long)(s.device_peak / MiB));
  return 0;
}

/* A training-like loop: `chunks` 8 MiB allocations, filled once, then
 * `iters` passes each checking every chunk with a kernel, so the launch
 * trace repeats with a period of `chunks`.  The bytes are checked at every
 * pass; the double's own count of managed bytes moved to the device says
 * how much the learned prefetch held there at most. */
static int loop(uint64_t chunks, uint64_t iters) {
  start();
  register_kernels();
  const uint64_t chunk = 8 * MiB;
  CUdeviceptr *p = calloc(chunks, sizeof *p);
  CHECK(p != NULL, "calloc");
  for (size_t i = 0; i < chunks; i++) {
    CHECK(A.mem_alloc(&p[i], chunk) == CUDA_SUCCESS, "allocation %zu", i);
    run_kernel(g_fill, p[i], chunk, (uint32_t)i, 0);
  }
  unsigned long long before = g_bad_bytes;
  for (uint64_t it = 0; it < iters; it++)
    for (size_t i = 0; i < chunks; i++)
      run_kernel(g_check, p[i], chunk, (uint32_t)i, 0);
  CHECK(g_bad_bytes == before, "%llu bytes wrong", g_bad_bytes - before);
  cudouble_stats_t s;
  A.stats(&s);
  for (size_t i = 0; i < chunks; i++)
    CHECK(A.mem_free(p[i]) == CUDA_SUCCESS, "free %zu", i);
  free(p);
  cudouble_stats_t e;
  A.stats(&e);
  CHECK(e.managed_on_device == 0, "%llu managed bytes still counted on the "
        "device after every free", (unsigned long long)e.managed_on_device);
  printf("loop ok: %llu chunks x %llu passes, managed on the device at most "
         "%llu MiB, device and managed on the device together at most %llu "
         "MiB, %llu prefetch calls\n",
         (unsigned long long)chunks, (unsigned long long)iters,
         (unsigned long long)(s.managed_on_device_peak / MiB),
         (unsigned long long)(s.footprint_peak / MiB),
         (unsigned long long)s.prefetch_calls);
  return 0;
}

/* Stream-ordered, pool, pitched and the program's own managed memory,
 * with the launch forms, under a limit of limit_mib. */
static int async_family(uint64_t limit_mib) {
  start();
  register_kernels();
  const uint64_t L = limit_mib * MiB;
  const uint64_t big = L / 8 * 5; /* two of them do not fit */
  cudouble_alloc_info_t info;
  cudouble_stats_t s0, s1;
  CUdeviceptr a = 0, b = 0;
  CUstream st = NULL;
  CUmemoryPool pool = (CUmemoryPool)(uintptr_t)0x10; /* the double's any */

  CHECK(A.alloc_async(&a, big, st) == CUDA_SUCCESS, "cuMemAllocAsync");
  A.query(a, &info);
  CHECK(info.kind == CUDOUBLE_ASYNC, "async within the limit: kind %d", info.kind);
  CHECK(A.alloc_async_ptsz(&b, big, st) == CUDA_SUCCESS, "cuMemAllocAsync_ptsz");
  A.query(b, &info);
  CHECK(info.kind == CUDOUBLE_MANAGED &&
            info.preferred_type == CU_MEM_LOCATION_TYPE_HOST,
        "async past the limit: kind %d, preferred %d", info.kind,
        info.preferred_type);
  fill_and_check(a, big, 4, 2);
  fill_and_check(b, big, 5, 3);
  A.stats(&s0);
  CHECK(A.free_async_ptsz(b, st) == CUDA_SUCCESS, "cuMemFreeAsync_ptsz");
  A.stats(&s1);
  CHECK(s1.stream_syncs == s0.stream_syncs + 1,
        "freeing managed memory stream-ordered did not wait for the stream");
  CHECK(A.free_async(a, st) == CUDA_SUCCESS, "cuMemFreeAsync");

  CHECK(A.alloc_pool(&a, big, pool, st) == CUDA_SUCCESS, "FromPoolAsync");
  A.query(a, &info);
  CHECK(info.kind == CUDOUBLE_ASYNC, "pool within the limit: kind %d", info.kind);
  CHECK(A.alloc_pool_ptsz(&b, big, pool, st) == CUDA_SUCCESS,
        "FromPoolAsync_ptsz");
  A.query(b, &info);
  CHECK(info.kind == CUDOUBLE_MANAGED, "pool past the limit: kind %d", info.kind);
  fill_and_check(b, big, 6, 0);
  CHECK(A.free_async(b, st) == CUDA_SUCCESS && A.free_async(a, st) == CUDA_SUCCESS,
        "freeing the pool allocations");

  size_t pitch = 0;
  CHECK(A.mem_alloc_pitch(&a, &pitch, 1000, 1000, 4) == CUDA_SUCCESS &&
            pitch >= 1000,
        "cuMemAllocPitch_v2 within the limit");
  A.query(a, &info);
  CHECK(info.kind == CUDOUBLE_DEVICE, "pitched within the limit: kind %d", info.kind);
  size_t rows = (size_t)(L / 4096); /* 4 KiB rows: the whole limit */
  CHECK(A.mem_alloc_pitch(&b, &pitch, 4000, rows, 8) == CUDA_SUCCESS &&
            pitch >= 4000,
        "cuMemAllocPitch_v2 past the limit");
  A.query(b, &info);
  CHECK(info.kind == CUDOUBLE_MANAGED && info.size >= pitch * rows,
        "pitched past the limit: kind %d, %llu bytes", info.kind,
        (unsigned long long)info.size);
  fill_and_check(b, (uint64_t)pitch * rows, 7, 1);
  CHECK(A.mem_free(b) == CUDA_SUCCESS && A.mem_free(a) == CUDA_SUCCESS,
        "freeing the pitched ones");

  size_t fr0 = 0, fr1 = 0, tot = 0;
  CHECK(A.mem_get_info(&fr0, &tot) == CUDA_SUCCESS, "cuMemGetInfo_v2");
  CHECK(A.alloc_managed(&a, 2 * L, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS,
        "the program's own cuMemAllocManaged");
  CHECK(A.mem_get_info(&fr1, &tot) == CUDA_SUCCESS && fr1 == fr0,
        "the program's managed memory was counted against the limit");
  fill_and_check(a, 2 * L, 8, 3);
  CHECK(A.mem_free(a) == CUDA_SUCCESS, "freeing the program's managed memory");

  A.stats(&s1);
  CHECK(s1.device_bytes == 0 && s1.managed_bytes == 0,
        "the driver still holds %llu device and %llu managed bytes",
        (unsigned long long)s1.device_bytes,
        (unsigned long long)s1.managed_bytes);
  printf("async ok\n");
  return 0;
}

/* Four threads allocating and freeing at once under a small limit. */
static void *churn(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  CUdeviceptr held[8] = {0};
  for (int it = 0; it < 400; it++) {
    int k = (int)(rand_r(&seed) % 8);
    if (held[k] != 0) {
      if (A.mem_free(held[k]) != CUDA_SUCCESS) return (void *)1;
      held[k] = 0;
    } else {
      size_t size = (1 + rand_r(&seed) % 4) * MiB;
      if (A.mem_alloc(&held[k], size) != CUDA_SUCCESS) return (void *)1;
      unsigned char *m = (unsigned char *)(uintptr_t)held[k];
      m[0] = m[size - 1] = 0x5a;
    }
  }
  for (int k = 0; k < 8; k++)
    if (held[k] != 0 && A.mem_free(held[k]) != CUDA_SUCCESS) return (void *)1;
  return NULL;
}

static int threads(void) {
  start();
  pthread_t t[4];
  for (uintptr_t i = 0; i < 4; i++)
    CHECK(pthread_create(&t[i], NULL, churn, (void *)(i + 1)) == 0,
          "pthread_create");
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(t[i], &r);
    CHECK(r == NULL, "thread %d saw an allocation or free fail", i);
  }
  cudouble_stats_t s;
  A.stats(&s);
  CHECK(s.device_bytes == 0 && s.managed_bytes == 0,
        "the driver still holds %llu device and %llu managed bytes",
        (unsigned long long)s.device_bytes, (unsigned long long)s.managed_bytes);
  printf("threads ok: %llu device and %llu managed allocations\n",
         (unsigned long long)s.alloc_calls, (unsigned long long)s.managed_calls);
  return 0;
}

/* dlsym for names that are not ours behaves as glibc's, RTLD_NEXT
 * included. */
#ifdef PRELOAD_PROG_SHADOW
int shadow_next(void);
int shadow_b_marker(void);
#endif

static int dlsym_names(void) {
  CHECK(dlsym(RTLD_DEFAULT, "strlen") == (void *)strlen, "dlsym(strlen)");
  dlerror();
  CHECK(dlsym(RTLD_DEFAULT, "lms_no_such_symbol") == NULL && dlerror() != NULL,
        "a missing symbol did not give NULL and a dlerror");
  CHECK(dlsym(g_libcuda, "cuNoSuchFunction") == NULL && dlerror() != NULL,
        "a missing cu* symbol did not give NULL and a dlerror");
  CHECK(dlsym(g_libcuda, "cuInit") == A.symbol("cuInit"),
        "dlsym(cuInit) is not the driver's");
#ifdef PRELOAD_PROG_SHADOW
  CHECK(shadow_b_marker() == 1, "shadow_b is not loaded");
  int v = shadow_next();
  CHECK(v == 'b', "dlsym(RTLD_NEXT) from a library found '%c', wanted 'b' "
        "(the definition after the caller's)", v);
#endif
  printf("dlsym ok\n");
  return 0;
}

static int malloc_owner(void) {
  start();
  CUdeviceptr p;
  CHECK(A.mem_alloc(&p, MiB) == CUDA_SUCCESS && A.mem_free(p) == CUDA_SUCCESS,
        "an allocation");
  void *sym = dlsym(RTLD_DEFAULT, "malloc");
  Dl_info info;
  CHECK(sym != NULL && dladdr(sym, &info) != 0 && info.dli_fname != NULL,
        "cannot resolve malloc");
  printf("malloc comes from %s\n", info.dli_fname);
  CHECK(strstr(info.dli_fname, "jemalloc") == NULL &&
            strstr(info.dli_fname, "lms") == NULL,
        "the program's malloc was replaced");
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc >= 3 && strcmp(argv[2], "status") == 0) {
    /* For `lms run`: show what it set, then exit with the status asked. */
    const char *names[] = {"LD_PRELOAD", "LMS_GPU_LIMIT", "LMS_KB", "LMS_FRAC",
                           "LMS_STATS_LINE", "LMS_LOG"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
      printf("%s=%s\n", names[i], getenv(names[i]) ? getenv(names[i]) : "");
    return argc > 3 ? atoi(argv[3]) : 0;
  }
  if (argc < 3) {
    fprintf(stderr, "usage: %s ROUTE SCENARIO [ARGS]\n", argv[0]);
    return 2;
  }
  open_driver(argv[1]);
  const char *s = argv[2];
  uint64_t a3 = argc > 3 ? strtoull(argv[3], NULL, 10) : 64;
  uint64_t a4 = argc > 4 ? strtoull(argv[4], NULL, 10) : 3;
  int rc;
  if (strcmp(s, "resolve") == 0) rc = resolve();
  else if (strcmp(s, "limit") == 0) rc = limit(a3);
  else if (strcmp(s, "oversub") == 0) rc = oversub(a3, a4);
  else if (strcmp(s, "async") == 0) rc = async_family(a3);
  else if (strcmp(s, "loop") == 0) rc = loop(a3, a4);
  else if (strcmp(s, "threads") == 0) rc = threads();
  else if (strcmp(s, "dlsym") == 0) rc = dlsym_names();
  else if (strcmp(s, "malloc") == 0) rc = malloc_owner();
  else {
    fprintf(stderr, "unknown scenario '%s'\n", s);
    return 2;
  }
  return rc != 0 || g_fail ? 1 : 0;
}
