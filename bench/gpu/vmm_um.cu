/* vmm_um.cu - stable pointers on a real GPU: Unified Memory or CUDA VMM?
 *
 * Measures, for one buffer of S bytes (default 1 GiB):
 *   UM:  cudaMallocManaged with preferred location = host and accessed-by =
 *        device 0; prefetch host->device and device->host, and a streaming
 *        read kernel over the buffer while it lies on the host (read in
 *        place over the link) and while it is resident on the device.
 *   VMM: one reserved VA range whose backing is swapped between a
 *        device-located and a host-located cuMemCreate allocation; the copy
 *        bandwidth each way, the cost of the unmap/map/set-access sequence,
 *        and the read kernel on the same pointer before and after each swap.
 *
 * Every figure is the median of REPS runs.  Every buffer is filled with
 * word i = i * GOLDEN ^ seed and every read is checked against the sum the
 * host computes from that formula; the program exits 0 only if every check
 * passed.  The last line of output is `JSON {...}` with all figures.
 *
 *   nvcc -O2 -arch=sm_90 vmm_um.cu -lcuda -o vmm_um
 *   vmm_um [--size MiB]
 *
 * Note [Why a host-located VMM allocation]
 * A swapping runtime wants pointers that stay valid while the data moves.
 * UM gives that for free but migrates by page faults and prefetches whose
 * cost is what this program measures.  VMM gives it by keeping the VA
 * reserved and remapping its physical backing; if the backing can be a
 * host-located allocation (CU_MEM_LOCATION_TYPE_HOST, or HOST_NUMA since
 * CUDA 12.2), a swapped-out buffer stays readable by kernels in place, like
 * UM's host-resident case.  Where the driver refuses host-located VMM the
 * program says so, with the error, and still reports the rest.
 */
#include <cuda.h>
#include <cuda_runtime.h>

#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GOLDEN 0x9E3779B97F4A7C15ull
#define UM_SEED 0x5555AAAA12345678ull
#define VMM_SEED 0x0123456789ABCDEFull
#define REPS 5
#define MIB (1ull << 20)
#define MAX_SIZE_MIB 8192ull
#define THREADS 256

/* ---- error checking ---------------------------------------------------- */

static void die_rt(const char *call, cudaError_t e, int line) {
  fprintf(stderr, "vmm_um: line %d: %s failed: %s (%s)\n", line, call,
          cudaGetErrorName(e), cudaGetErrorString(e));
  exit(1);
}

static void die_cu(const char *call, CUresult r, int line) {
  const char *name = NULL, *text = NULL;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS) name = "unknown CUresult";
  if (cuGetErrorString(r, &text) != CUDA_SUCCESS) text = "";
  fprintf(stderr, "vmm_um: line %d: %s failed: %s (%d: %s)\n", line, call,
          name, (int)r, text);
  exit(1);
}

#define RT_CHECK(call)                                        \
  do {                                                        \
    cudaError_t e_ = (call);                                  \
    if (e_ != cudaSuccess) die_rt(#call, e_, __LINE__);       \
  } while (0)

#define CU_CHECK(call)                                        \
  do {                                                        \
    CUresult r_ = (call);                                     \
    if (r_ != CUDA_SUCCESS) die_cu(#call, r_, __LINE__);      \
  } while (0)

static const char *cu_name(CUresult r) {
  const char *name = NULL;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS) return "unknown CUresult";
  return name;
}

/* ---- kernels ----------------------------------------------------------- */

__global__ void fill_kernel(uint64_t *p, size_t n, uint64_t seed) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += stride)
    p[i] = (i * GOLDEN) ^ seed;
}

/* Streaming read: four independent loads in flight per thread so that a
 * read over the link has enough outstanding requests; one atomic per warp. */
__global__ void sum_kernel(const uint64_t *__restrict__ p, size_t n,
                           unsigned long long *out) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  for (; i + 3 * stride < n; i += 4 * stride) {
    a0 += p[i];
    a1 += p[i + stride];
    a2 += p[i + 2 * stride];
    a3 += p[i + 3 * stride];
  }
  for (; i < n; i += stride) a0 += p[i];
  unsigned long long s = a0 + a1 + a2 + a3;
  for (int off = 16; off > 0; off >>= 1)
    s += __shfl_down_sync(0xffffffffu, s, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, s);
}

/* ---- helpers ----------------------------------------------------------- */

struct bench {
  size_t size;                /* bytes, as asked */
  int blocks;                 /* grid size for the kernels */
  cudaEvent_t ev0, ev1;
  unsigned long long *acc;    /* device accumulator for sum_kernel */
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

static double gbs(size_t bytes, double ms) {
  return ms > 0 ? (double)bytes / (ms * 1e-3) / 1e9 : 0.0;
}

static uint64_t expected_sum(size_t words, uint64_t seed) {
  uint64_t s = 0;
  for (size_t i = 0; i < words; i++) s += (i * GOLDEN) ^ seed;
  return s;
}

static void fill(const struct bench *b, void *p, size_t bytes, uint64_t seed) {
  fill_kernel<<<b->blocks, THREADS>>>((uint64_t *)p, bytes / 8, seed);
  RT_CHECK(cudaGetLastError());
  RT_CHECK(cudaDeviceSynchronize());
}

/* Runs sum_kernel over p; returns the sum and stores the kernel time. */
static uint64_t read_sum(const struct bench *b, const void *p, size_t bytes,
                         double *ms) {
  unsigned long long s = 0;
  float t = 0;
  RT_CHECK(cudaMemset(b->acc, 0, sizeof *b->acc));
  RT_CHECK(cudaEventRecord(b->ev0, 0));
  sum_kernel<<<b->blocks, THREADS>>>((const uint64_t *)p, bytes / 8, b->acc);
  RT_CHECK(cudaGetLastError());
  RT_CHECK(cudaEventRecord(b->ev1, 0));
  RT_CHECK(cudaEventSynchronize(b->ev1));
  RT_CHECK(cudaEventElapsedTime(&t, b->ev0, b->ev1));
  RT_CHECK(cudaMemcpy(&s, b->acc, sizeof s, cudaMemcpyDeviceToHost));
  if (ms) *ms = t;
  return s;
}

/* REPS timed reads of p, each checked; the median GB/s, or -1 on a wrong
 * sum (which is also printed). */
static double read_bench(const struct bench *b, const void *p, size_t bytes,
                         uint64_t want, const char *what) {
  double ms[REPS];
  for (int r = 0; r < REPS; r++) {
    uint64_t got = read_sum(b, p, bytes, &ms[r]);
    if (got != want) {
      printf("  FAIL %s: read sum 0x%016llx, expected 0x%016llx (rep %d)\n",
             what, (unsigned long long)got, (unsigned long long)want, r);
      return -1;
    }
  }
  return gbs(bytes, median(ms, REPS));
}

/* One check of p's sum against want, printed only on failure. */
static int check_sum(const struct bench *b, const void *p, size_t bytes,
                     uint64_t want, const char *what) {
  uint64_t got = read_sum(b, p, bytes, NULL);
  if (got == want) return 1;
  printf("  FAIL %s: read sum 0x%016llx, expected 0x%016llx\n", what,
         (unsigned long long)got, (unsigned long long)want);
  return 0;
}

/* ---- Unified Memory ---------------------------------------------------- */

struct um_result {
  double h2d, d2h, read_host, read_dev; /* GB/s; -1 = not measured */
  int correct;
};

static double time_prefetch(const struct bench *b, void *p,
                            struct cudaMemLocation to) {
  float t = 0;
  RT_CHECK(cudaEventRecord(b->ev0, 0));
  RT_CHECK(cudaMemPrefetchAsync(p, b->size, to, 0, 0));
  RT_CHECK(cudaEventRecord(b->ev1, 0));
  RT_CHECK(cudaEventSynchronize(b->ev1));
  RT_CHECK(cudaEventElapsedTime(&t, b->ev0, b->ev1));
  return t;
}

static void um_bench(const struct bench *b, struct um_result *r) {
  struct cudaMemLocation host = {cudaMemLocationTypeHost, 0};
  struct cudaMemLocation dev = {cudaMemLocationTypeDevice, 0};
  double h2d[REPS], d2h[REPS];
  int concurrent = 0;
  void *p = NULL;

  r->h2d = r->d2h = r->read_host = r->read_dev = -1;
  r->correct = 0;
  RT_CHECK(cudaDeviceGetAttribute(&concurrent,
                                  cudaDevAttrConcurrentManagedAccess, 0));
  if (!concurrent) {
    printf("UM: device 0 lacks concurrentManagedAccess; prefetch and "
           "advice are unavailable, UM part skipped\n");
    return;
  }
  uint64_t want = expected_sum(b->size / 8, UM_SEED);

  RT_CHECK(cudaMallocManaged(&p, b->size, cudaMemAttachGlobal));
  RT_CHECK(cudaMemAdvise(p, b->size, cudaMemAdviseSetPreferredLocation, host));
  RT_CHECK(cudaMemAdvise(p, b->size, cudaMemAdviseSetAccessedBy, dev));
  fill(b, p, b->size, UM_SEED);
  RT_CHECK(cudaMemPrefetchAsync(p, b->size, host, 0, 0));
  RT_CHECK(cudaDeviceSynchronize());

  /* Each repetition starts and ends with the buffer on the host. */
  for (int i = 0; i < REPS; i++) {
    h2d[i] = time_prefetch(b, p, dev);
    d2h[i] = time_prefetch(b, p, host);
  }
  r->h2d = gbs(b->size, median(h2d, REPS));
  r->d2h = gbs(b->size, median(d2h, REPS));

  r->read_host = read_bench(b, p, b->size, want, "UM read, host-resident");
  RT_CHECK(cudaMemPrefetchAsync(p, b->size, dev, 0, 0));
  RT_CHECK(cudaDeviceSynchronize());
  r->read_dev = read_bench(b, p, b->size, want, "UM read, device-resident");
  r->correct = r->read_host >= 0 && r->read_dev >= 0;
  RT_CHECK(cudaFree(p));
}

/* ---- CUDA VMM ---------------------------------------------------------- */

struct vmm_result {
  int host_supported;
  const char *host_kind;        /* "HOST" or "HOST_NUMA" */
  char host_error[160];         /* why host-located VMM was refused */
  const char *cpu_read;         /* ok, mismatch, fault, no-access, skipped */
  double copy_d2h, copy_h2d;    /* GB/s */
  double remap_us, remap_back_us;
  double read_host, read_dev;   /* GB/s */
  int correct;
};

struct vmm_host_kind {
  CUmemLocationType type;
  const char *name;
  size_t gran;                  /* 0 when the granularity query failed */
  CUresult query_error;
};

static CUmemAllocationProp vmm_prop(CUmemLocationType type, int id) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = type;
  prop.location.id = id;
  return prop;
}

static CUmemAccessDesc access_desc(CUmemLocationType type, int id) {
  CUmemAccessDesc d;
  memset(&d, 0, sizeof d);
  d.location.type = type;
  d.location.id = id;
  d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return d;
}

static void map_rw(CUdeviceptr va, size_t size, CUmemGenericAllocationHandle h,
                   int dev) {
  CUmemAccessDesc d = access_desc(CU_MEM_LOCATION_TYPE_DEVICE, dev);
  CU_CHECK(cuMemMap(va, size, 0, h, 0));
  CU_CHECK(cuMemSetAccess(va, size, &d, 1));
}

/* Note [Remap cost]
 * The figure is the host time of cuMemUnmap + cuMemMap + cuMemSetAccess on
 * an idle device, i.e. what a swapper pays on top of the copy to retarget a
 * stable pointer.  The device is synchronized before, not inside, the
 * sequence. */
static double remap_us(CUdeviceptr va, size_t size,
                       CUmemGenericAllocationHandle to, int dev) {
  RT_CHECK(cudaDeviceSynchronize());
  double t0 = now_s();
  CU_CHECK(cuMemUnmap(va, size));
  map_rw(va, size, to, dev);
  return (now_s() - t0) * 1e6;
}

static double time_copy(const struct bench *b, CUdeviceptr dst,
                        CUdeviceptr src, size_t size) {
  double ms[REPS];
  for (int i = 0; i < REPS; i++) {
    float t = 0;
    RT_CHECK(cudaEventRecord(b->ev0, 0));
    RT_CHECK(cudaMemcpyAsync((void *)dst, (const void *)src, size,
                             cudaMemcpyDefault, 0));
    RT_CHECK(cudaEventRecord(b->ev1, 0));
    RT_CHECK(cudaEventSynchronize(b->ev1));
    RT_CHECK(cudaEventElapsedTime(&t, b->ev0, b->ev1));
    ms[i] = t;
  }
  return gbs(size, median(ms, REPS));
}

/* Creates a host-located allocation, trying each kind in turn; records the
 * kind that worked or the last error. */
static int create_host(struct vmm_host_kind *kinds, int nkinds, int numa_id,
                       size_t size, CUmemGenericAllocationHandle *h,
                       struct vmm_result *r) {
  for (int i = 0; i < nkinds; i++) {
    CUresult e = kinds[i].query_error;
    if (e == CUDA_SUCCESS) {
      int id = kinds[i].type == CU_MEM_LOCATION_TYPE_HOST_NUMA ? numa_id : 0;
      CUmemAllocationProp prop = vmm_prop(kinds[i].type, id);
      e = cuMemCreate(h, size, &prop, 0);
      if (e == CUDA_SUCCESS) {
        r->host_kind = kinds[i].name;
        return 1;
      }
    }
    size_t used = strlen(r->host_error);
    snprintf(r->host_error + used, sizeof r->host_error - used, "%s%s: %s",
             used ? "; " : "", kinds[i].name, cu_name(e));
  }
  return 0;
}

/* Note [CPU access to host-located VMM]
 * cuMemMap gives the VA no CPU mapping by itself.  The CPU is only asked to
 * read through it after cuMemSetAccess granted access to a host location;
 * if that call is refused the read is skipped.  The read runs under a
 * SIGSEGV/SIGBUS guard so that a mapping that is granted but not backed on
 * the CPU side reports "fault" rather than killing the run. */
static sigjmp_buf g_fault_jmp;

static void on_fault(int sig) { siglongjmp(g_fault_jmp, sig); }

static const char *cpu_read_guarded(const volatile uint64_t *p, size_t words,
                                    uint64_t want) {
  struct sigaction sa, old_segv, old_bus;
  const char *res;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_fault;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &old_segv);
  sigaction(SIGBUS, &sa, &old_bus);
  if (sigsetjmp(g_fault_jmp, 1) == 0) {
    uint64_t s = 0;
    for (size_t i = 0; i < words; i++) s += p[i];
    res = s == want ? "ok" : "mismatch";
  } else {
    res = "fault";
  }
  sigaction(SIGSEGV, &old_segv, NULL);
  sigaction(SIGBUS, &old_bus, NULL);
  return res;
}

static const char *cpu_read_check(CUdeviceptr va, size_t size,
                                  const char *host_kind, uint64_t want) {
  CUmemLocationType types[2] = {CU_MEM_LOCATION_TYPE_HOST,
                                CU_MEM_LOCATION_TYPE_HOST_NUMA};
  if (strcmp(host_kind, "HOST_NUMA") == 0) {
    types[0] = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    types[1] = CU_MEM_LOCATION_TYPE_HOST;
  }
  for (int i = 0; i < 2; i++) {
    CUmemAccessDesc d = access_desc(types[i], 0);
    CUresult e = cuMemSetAccess(va, size, &d, 1);
    if (e == CUDA_SUCCESS)
      return cpu_read_guarded((const volatile uint64_t *)va, size / 8, want);
    printf("  CPU access to host-located VMM (location type %d) refused: "
           "%s\n", (int)types[i], cu_name(e));
  }
  return "no-access";
}

static void vmm_bench(const struct bench *b, struct vmm_result *r) {
  CUdevice dev;
  int vmm_ok = 0, numa_id = -1;
  size_t gran = 0;
  CUdeviceptr va = 0, stage = 0;
  CUmemGenericAllocationHandle d1, d2, h;
  struct vmm_host_kind kinds[2] = {
      {CU_MEM_LOCATION_TYPE_HOST, "HOST", 0, CUDA_SUCCESS},
      {CU_MEM_LOCATION_TYPE_HOST_NUMA, "HOST_NUMA", 0, CUDA_SUCCESS}};
  double t_fwd[REPS], t_back[REPS];

  memset(r, 0, sizeof *r);
  r->host_kind = "none";
  r->cpu_read = "skipped";
  r->copy_d2h = r->copy_h2d = r->remap_us = r->remap_back_us = -1;
  r->read_host = r->read_dev = -1;

  CU_CHECK(cuDeviceGet(&dev, 0));
  CU_CHECK(cuDeviceGetAttribute(
      &vmm_ok, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev));
  if (!vmm_ok) {
    printf("VMM: device 0 does not support the VMM API; VMM part skipped\n");
    return;
  }
  if (cuDeviceGetAttribute(&numa_id, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, dev) !=
          CUDA_SUCCESS ||
      numa_id < 0)
    numa_id = 0;

  /* One granularity that suits the device and every host kind on offer, so
   * that any of them can back the same VA range. */
  CUmemAllocationProp dprop = vmm_prop(CU_MEM_LOCATION_TYPE_DEVICE, dev);
  CU_CHECK(cuMemGetAllocationGranularity(&gran, &dprop,
                                         CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  for (int i = 0; i < 2; i++) {
    int id = kinds[i].type == CU_MEM_LOCATION_TYPE_HOST_NUMA ? numa_id : 0;
    CUmemAllocationProp hp = vmm_prop(kinds[i].type, id);
    kinds[i].query_error = cuMemGetAllocationGranularity(
        &kinds[i].gran, &hp, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (kinds[i].query_error == CUDA_SUCCESS && kinds[i].gran > gran)
      gran = kinds[i].gran;
  }
  size_t size = (b->size + gran - 1) / gran * gran;
  uint64_t want = expected_sum(size / 8, VMM_SEED);
  printf("VMM: granularity %zu KiB, mapped size %zu MiB, host NUMA id %d\n",
         gran >> 10, size >> 20, numa_id);

  CU_CHECK(cuMemAddressReserve(&va, size, gran, 0, 0));
  CU_CHECK(cuMemAddressReserve(&stage, size, gran, 0, 0));
  CU_CHECK(cuMemCreate(&d1, size, &dprop, 0));
  map_rw(va, size, d1, dev);
  fill(b, (void *)va, size, VMM_SEED);
  r->read_dev = read_bench(b, (void *)va, size, want, "VMM read, device");
  r->correct = r->read_dev >= 0;

  if (!create_host(kinds, 2, numa_id, size, &h, r)) {
    printf("VMM: host-located VMM allocation of %zu MiB failed, so it is "
           "taken as NOT supported here (%s); host half of the VMM part "
           "skipped\n", size >> 20, r->host_error);
    CU_CHECK(cuMemUnmap(va, size));
    CU_CHECK(cuMemRelease(d1));
    CU_CHECK(cuMemAddressFree(stage, size));
    CU_CHECK(cuMemAddressFree(va, size));
    return;
  }
  r->host_supported = 1;

  /* Swap out: device -> host-located, through the staging range. */
  map_rw(stage, size, h, dev);
  RT_CHECK(cudaMemset((void *)stage, 0, size));
  r->correct &= check_sum(b, (void *)stage, size, 0, "VMM host, zeroed");
  r->copy_d2h = time_copy(b, stage, va, size);
  r->correct &= check_sum(b, (void *)stage, size, want, "VMM host, staged");
  r->cpu_read = cpu_read_check(stage, size, r->host_kind, want);
  CU_CHECK(cuMemUnmap(stage, size));

  /* Retarget the stable pointer back and forth; both backings hold the
   * same words, so the sum must not change across any remap. */
  for (int i = 0; i < REPS; i++) {
    t_fwd[i] = remap_us(va, size, h, dev);
    r->correct &= check_sum(b, (void *)va, size, want, "VMM after remap");
    t_back[i] = remap_us(va, size, d1, dev);
    r->correct &= check_sum(b, (void *)va, size, want, "VMM after remap back");
  }
  r->remap_us = median(t_fwd, REPS);
  r->remap_back_us = median(t_back, REPS);

  /* Swapped out for good: the pointer reads host memory in place. */
  remap_us(va, size, h, dev);
  CU_CHECK(cuMemRelease(d1));
  r->read_host = read_bench(b, (void *)va, size, want, "VMM read, host");
  r->correct &= r->read_host >= 0;

  /* Swap in: host-located -> a new device allocation, then remap. */
  CU_CHECK(cuMemCreate(&d2, size, &dprop, 0));
  map_rw(stage, size, d2, dev);
  RT_CHECK(cudaMemset((void *)stage, 0, size));
  r->correct &= check_sum(b, (void *)stage, size, 0, "VMM device, zeroed");
  r->copy_h2d = time_copy(b, stage, va, size);
  CU_CHECK(cuMemUnmap(stage, size));
  remap_us(va, size, d2, dev);
  r->correct &= check_sum(b, (void *)va, size, want, "VMM after swap-in");

  CU_CHECK(cuMemUnmap(va, size));
  CU_CHECK(cuMemRelease(d2));
  CU_CHECK(cuMemRelease(h));
  CU_CHECK(cuMemAddressFree(stage, size));
  CU_CHECK(cuMemAddressFree(va, size));
}

/* ---- driver ------------------------------------------------------------ */

static void usage(void) {
  fprintf(stderr,
          "usage: vmm_um [--size MiB]\n"
          "  --size MiB  buffer size, 1..%llu and at most half of the free "
          "device memory (default 1024)\n",
          MAX_SIZE_MIB);
  exit(64);
}

static unsigned long long parse_mib(const char *s) {
  char *end = NULL;
  if (!s || !*s || *s == '-' || *s == '+') usage();
  unsigned long long v = strtoull(s, &end, 10);
  if (*end != '\0' || v == 0 || v > MAX_SIZE_MIB) usage();
  return v;
}

static void print_num(const char *key, double v, int last) {
  if (v < 0)
    printf("\"%s\":null%s", key, last ? "" : ",");
  else
    printf("\"%s\":%.3f%s", key, v, last ? "" : ",");
}

static void print_json_string(const char *key, const char *s) {
  printf("\"%s\":\"", key);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') putchar('\\');
    if ((unsigned char)*s >= 0x20) putchar(*s);
  }
  printf("\",");
}

static void print_value(const char *what, double v, const char *unit) {
  if (v < 0)
    printf("  %-44s %12s\n", what, "n/a");
  else
    printf("  %-44s %12.2f %s\n", what, v, unit);
}

int main(int argc, char **argv) {
  unsigned long long mib = 1024;
  struct cudaDeviceProp prop;
  struct bench b;
  struct um_result um;
  struct vmm_result vmm;
  size_t free_b = 0, total_b = 0;
  int sms = 0;

  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--size") == 0 && i + 1 < argc)
      mib = parse_mib(argv[++i]);
    else
      usage();
  }

  RT_CHECK(cudaSetDevice(0));
  RT_CHECK(cudaFree(0));
  CU_CHECK(cuInit(0));
  RT_CHECK(cudaGetDeviceProperties(&prop, 0));
  RT_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  RT_CHECK(cudaMemGetInfo(&free_b, &total_b));
  printf("vmm_um: %s, %d SMs, %zu MiB free of %zu MiB, buffer %llu MiB\n",
         prop.name, sms, free_b >> 20, total_b >> 20, mib);
  if (mib * MIB > free_b / 2) {
    fprintf(stderr, "vmm_um: refusing --size %llu MiB: more than half of the "
            "%zu MiB free on the device\n", mib, free_b >> 20);
    return 64;
  }

  memset(&b, 0, sizeof b);
  b.size = (size_t)(mib * MIB);
  b.blocks = sms * (2048 / THREADS);
  RT_CHECK(cudaEventCreate(&b.ev0));
  RT_CHECK(cudaEventCreate(&b.ev1));
  RT_CHECK(cudaMalloc((void **)&b.acc, sizeof *b.acc));

  um_bench(&b, &um);
  vmm_bench(&b, &vmm);

  printf("\n%s, %llu MiB, median of %d\n", prop.name, mib, REPS);
  printf(" Unified Memory (preferred host, accessed-by device 0)\n");
  print_value("prefetch host->device", um.h2d, "GB/s");
  print_value("prefetch device->host", um.d2h, "GB/s");
  print_value("kernel read, resident on host (in place)", um.read_host,
              "GB/s");
  print_value("kernel read, resident on device", um.read_dev, "GB/s");
  printf("  %-44s %12s\n", "correct", um.correct ? "yes" : "NO");
  printf(" CUDA VMM (one VA, backing remapped)\n");
  printf("  %-44s %12s\n", "host-located allocation",
         vmm.host_supported ? vmm.host_kind : "not supported");
  print_value("copy device->host-located", vmm.copy_d2h, "GB/s");
  print_value("copy host-located->device", vmm.copy_h2d, "GB/s");
  print_value("remap to host (unmap+map+access)", vmm.remap_us, "us");
  print_value("remap back to device", vmm.remap_back_us, "us");
  print_value("kernel read, host-located (in place)", vmm.read_host, "GB/s");
  print_value("kernel read, device-located", vmm.read_dev, "GB/s");
  printf("  %-44s %12s\n", "CPU read of host-located VA", vmm.cpu_read);
  printf("  %-44s %12s\n", "correct", vmm.correct ? "yes" : "NO");

  printf("JSON {");
  print_num("um_prefetch_h2d_gbs", um.h2d, 0);
  print_num("um_prefetch_d2h_gbs", um.d2h, 0);
  print_num("um_read_host_gbs", um.read_host, 0);
  print_num("um_read_device_gbs", um.read_dev, 0);
  printf("\"vmm_host_supported\":%s,", vmm.host_supported ? "true" : "false");
  print_json_string("vmm_host_kind", vmm.host_kind);
  print_json_string("vmm_host_error", vmm.host_error);
  print_num("vmm_copy_d2h_gbs", vmm.copy_d2h, 0);
  print_num("vmm_copy_h2d_gbs", vmm.copy_h2d, 0);
  print_num("vmm_remap_us", vmm.remap_us, 0);
  print_num("vmm_remap_back_us", vmm.remap_back_us, 0);
  print_num("vmm_read_host_gbs", vmm.read_host, 0);
  print_num("vmm_read_device_gbs", vmm.read_dev, 0);
  print_json_string("vmm_cpu_read", vmm.cpu_read);
  printf("\"vmm_correct\":%s,", vmm.correct ? "true" : "false");
  printf("\"um_correct\":%s,", um.correct ? "true" : "false");
  printf("\"size_bytes\":%zu,", b.size);
  print_json_string("device_name", prop.name);
  printf("\"reps\":%d}\n", REPS);

  RT_CHECK(cudaFree(b.acc));
  RT_CHECK(cudaEventDestroy(b.ev0));
  RT_CHECK(cudaEventDestroy(b.ev1));
  return um.correct && vmm.correct ? 0 : 1;
}
