/* oversub.cu - allocate more than the device (or a limit) holds and check
 * that every byte survives.
 *
 * Allocates --total MiB in --chunk MiB pieces with cudaMalloc and keeps all
 * of them alive, fills each on the device, then reads every chunk back with
 * a kernel that sums its words and counts words that differ from the
 * pattern.  The sums are compared with the host's, chunk by chunk; finally
 * chunk 0 is read again after all the others were touched (under a swapping
 * runtime it is the one most likely to have been evicted).
 *
 * Word j of chunk k is f(k, j) = ((k << 32) + j) * GOLDEN mod 2^64.  GOLDEN
 * is odd, so f is one-to-one: a word that lands at the wrong offset or in
 * the wrong chunk is counted as wrong even when a sum would not notice.
 * oversub_cupy.py fills the same pattern, so both print the same checksum.
 *
 * Built with the default static cudart and nothing else, so that it sees
 * only what a plain CUDA program sees (e.g. under `lms run`).
 *
 *   nvcc -O2 -arch=sm_90 oversub.cu -o oversub
 *   oversub [--total MiB] [--chunk MiB]
 *
 * Exit status: 0 all checks passed, 1 a check failed or a CUDA call failed,
 * 2 a cudaMalloc ran out of memory, 64 bad arguments.
 */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GOLDEN 0x9E3779B97F4A7C15ull
#define MIB (1ull << 20)
#define MAX_CHUNK_MIB 32768ull     /* j must fit in 32 bits */
#define MAX_TOTAL_MIB (1ull << 20) /* 1 TiB */
#define THREADS 256
#define NO_BAD_WORD (~0ull)

static void die(const char *call, cudaError_t e, int line) {
  fprintf(stderr, "oversub: line %d: %s failed: %s (%s)\n", line, call,
          cudaGetErrorName(e), cudaGetErrorString(e));
  exit(1);
}

#define CHECK(call)                                       \
  do {                                                    \
    cudaError_t e_ = (call);                              \
    if (e_ != cudaSuccess) die(#call, e_, __LINE__);      \
  } while (0)

/* What check_kernel finds in one chunk. */
struct chunk_check {
  unsigned long long sum;       /* of all words, mod 2^64 */
  unsigned long long bad;       /* words != f(k, j) */
  unsigned long long first_bad; /* lowest such j, NO_BAD_WORD if none */
};

__host__ __device__ static inline uint64_t pattern(uint64_t k, uint64_t j) {
  return ((k << 32) + j) * GOLDEN;
}

__global__ void fill_kernel(uint64_t *p, size_t n, uint64_t k) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < n;
       j += stride)
    p[j] = pattern(k, j);
}

__global__ void check_kernel(const uint64_t *__restrict__ p, size_t n,
                             uint64_t k, struct chunk_check *out) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  unsigned long long sum = 0, bad = 0, first = NO_BAD_WORD;
  for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < n;
       j += stride) {
    uint64_t w = p[j];
    sum += w;
    if (w != pattern(k, j)) {
      if (bad == 0) first = j;
      bad++;
    }
  }
  for (int off = 16; off > 0; off >>= 1) {
    sum += __shfl_down_sync(0xffffffffu, sum, off);
    bad += __shfl_down_sync(0xffffffffu, bad, off);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&out->sum, sum);
    if (bad) atomicAdd(&out->bad, bad);
  }
  if (first != NO_BAD_WORD) atomicMin(&out->first_bad, first);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t expected_sum(uint64_t k, size_t words) {
  uint64_t s = 0;
  for (size_t j = 0; j < words; j++) s += pattern(k, j);
  return s;
}

static void usage(void) {
  fprintf(stderr,
          "usage: oversub [--total MiB] [--chunk MiB]\n"
          "  --total MiB  memory to allocate in all (default 12288, at most "
          "%llu)\n"
          "  --chunk MiB  size of each cudaMalloc (default 256, at most %llu "
          "and at most --total)\n",
          MAX_TOTAL_MIB, MAX_CHUNK_MIB);
  exit(64);
}

static unsigned long long parse_mib(const char *s, unsigned long long max) {
  char *end = NULL;
  if (!s || !*s || *s == '-' || *s == '+') usage();
  unsigned long long v = strtoull(s, &end, 10);
  if (*end != '\0' || v == 0 || v > max) usage();
  return v;
}

/* Runs check_kernel over chunk k into *slot (device) and returns it. */
static struct chunk_check check_chunk(const uint64_t *p, size_t words,
                                      uint64_t k, struct chunk_check *slot,
                                      int blocks) {
  struct chunk_check c = {0, 0, NO_BAD_WORD};
  CHECK(cudaMemcpy(slot, &c, sizeof c, cudaMemcpyHostToDevice));
  check_kernel<<<blocks, THREADS>>>(p, words, k, slot);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(&c, slot, sizeof c, cudaMemcpyDeviceToHost));
  return c;
}

/* Compares one chunk's result with the host's sum; prints a mismatch. */
static int chunk_ok(const struct chunk_check *c, uint64_t k, size_t words,
                    uint64_t want, const char *pass) {
  if (c->sum == want && c->bad == 0) return 1;
  printf("oversub: %s: chunk %llu: sum 0x%016llx, expected 0x%016llx, "
         "%llu words wrong", pass, (unsigned long long)k, c->sum,
         (unsigned long long)want, c->bad);
  if (c->bad) printf(", first at word %llu of %zu", c->first_bad, words);
  printf("\n");
  return 0;
}

int main(int argc, char **argv) {
  unsigned long long total = 12288, chunk = 256;
  size_t free_b = 0, total_b = 0;
  int sms = 0;
  struct cudaDeviceProp prop;

  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--total") == 0 && i + 1 < argc)
      total = parse_mib(argv[++i], MAX_TOTAL_MIB);
    else if (strcmp(argv[i], "--chunk") == 0 && i + 1 < argc)
      chunk = parse_mib(argv[++i], MAX_CHUNK_MIB);
    else
      usage();
  }
  if (chunk > total) usage();

  size_t nchunks = (size_t)((total + chunk - 1) / chunk);
  uint64_t **bufs = (uint64_t **)calloc(nchunks, sizeof *bufs);
  size_t *words = (size_t *)calloc(nchunks, sizeof *words);
  struct chunk_check *got =
      (struct chunk_check *)calloc(nchunks, sizeof *got);
  struct chunk_check *slots = NULL;
  if (!bufs || !words || !got) {
    fprintf(stderr, "oversub: out of host memory for %zu chunks\n", nchunks);
    return 1;
  }

  CHECK(cudaSetDevice(0));
  CHECK(cudaGetDeviceProperties(&prop, 0));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaMemGetInfo(&free_b, &total_b));
  printf("oversub: %s: cudaMemGetInfo free %zu MiB of %zu MiB\n", prop.name,
         free_b >> 20, total_b >> 20);
  int blocks = sms * (2048 / THREADS);
  CHECK(cudaMalloc((void **)&slots, nchunks * sizeof *slots));

  /* Allocate and fill; every chunk stays allocated to the end. */
  double t0 = now_s();
  unsigned long long done_mib = 0;
  for (size_t k = 0; k < nchunks; k++) {
    unsigned long long mib = k + 1 < nchunks ? chunk : total - k * chunk;
    cudaError_t e = cudaMalloc((void **)&bufs[k], mib * MIB);
    if (e == cudaErrorMemoryAllocation) {
      printf("oversub: cudaMalloc of chunk %zu (%llu MiB, %llu MiB allocated "
             "so far) failed: %s\n", k, mib, done_mib, cudaGetErrorName(e));
      return 2;
    }
    if (e != cudaSuccess) die("cudaMalloc(chunk)", e, __LINE__);
    words[k] = (size_t)(mib * MIB / 8);
    fill_kernel<<<blocks, THREADS>>>(bufs[k], words[k], k);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    done_mib += mib;
  }
  double t_fill = now_s() - t0;
  printf("oversub: allocated and filled %zu chunks in %.3f s (%.1f GB/s)\n",
         nchunks, t_fill, (double)(total * MIB) / t_fill / 1e9);

  t0 = now_s();
  for (size_t k = 0; k < nchunks; k++)
    got[k] = check_chunk(bufs[k], words[k], k, &slots[k], blocks);
  double t_check = now_s() - t0;
  printf("oversub: read back %zu chunks in %.3f s (%.1f GB/s)\n", nchunks,
         t_check, (double)(total * MIB) / t_check / 1e9);

  /* The host's sums, from the same formula. */
  int ok = 1;
  uint64_t sum = 0, want = 0, want0 = 0;
  for (size_t k = 0; k < nchunks; k++) {
    uint64_t w = expected_sum(k, words[k]);
    if (k == 0) want0 = w;
    ok &= chunk_ok(&got[k], k, words[k], w, "first pass");
    sum += got[k].sum;
    want += w;
  }
  if (ok && sum == want)
    printf("oversub: %llu MiB in %zu chunks of %llu MiB: checksum 0x%016llx "
           "OK\n", total, nchunks, chunk, (unsigned long long)sum);
  else
    printf("oversub: %llu MiB in %zu chunks of %llu MiB: checksum 0x%016llx, "
           "expected 0x%016llx FAIL\n", total, nchunks, chunk,
           (unsigned long long)sum, (unsigned long long)want);

  struct chunk_check again = check_chunk(bufs[0], words[0], 0, &slots[0],
                                         blocks);
  int ok0 = chunk_ok(&again, 0, words[0], want0, "second pass");
  printf("oversub: chunk 0 re-read after all others: checksum 0x%016llx %s\n",
         again.sum, ok0 ? "OK" : "FAIL");

  for (size_t k = 0; k < nchunks; k++) CHECK(cudaFree(bufs[k]));
  CHECK(cudaFree(slots));
  free(bufs);
  free(words);
  free(got);
  return ok && ok0 && sum == want ? 0 : 1;
}
