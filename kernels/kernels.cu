// kernels.cu - checksum, fill and compute kernels (see lms_kernels.h).
#include <cuda_runtime.h>

#include "lms_kernels.h"

namespace {

constexpr int kThreads = 256;

__global__ void checksum_kernel(const unsigned char *p, size_t n,
                                unsigned long long *out) {
  __shared__ unsigned long long part[kThreads];
  size_t words = (n + 7) / 8;
  unsigned long long sum = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words;
       i += (size_t)gridDim.x * blockDim.x) {
    uint64_t w = 0;
    size_t off = 8 * i;
    if (off + 8 <= n) {
      memcpy(&w, p + off, 8);
    } else {
      for (size_t k = 0; off + k < n; k++) w |= (uint64_t)p[off + k] << (8 * k);
    }
    sum += lms_checksum_mix(w, i);
  }
  part[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, part[0]);
}

__global__ void fill_kernel(unsigned char *p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = lms_kernel_pattern_byte(seed, i);
}

__global__ void compute_kernel(unsigned int *p, size_t words, unsigned passes) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words;
       i += (size_t)gridDim.x * blockDim.x) {
    unsigned int v = p[i];
    // An invertible round per pass, then its inverse: real work whose
    // result is the input.
    for (unsigned k = 0; k < passes; k++) v = v * 2654435761u + k;
    for (unsigned k = passes; k-- > 0;) v = (v - k) * 244002641u;
    p[i] = v;
  }
}

int grid_for(size_t items) {
  size_t g = (items + kThreads - 1) / kThreads;
  return g > 4096 ? 4096 : (g == 0 ? 1 : (int)g);
}

}  // namespace

extern "C" int lms_kernel_checksum(const void *dptr, size_t n, uint64_t *out,
                                   void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  unsigned long long *d = nullptr;
  cudaError_t e = cudaMallocAsync(&d, sizeof *d, s);
  if (e != cudaSuccess) return e;
  e = cudaMemsetAsync(d, 0, sizeof *d, s);
  if (e == cudaSuccess) {
    checksum_kernel<<<grid_for((n + 7) / 8), kThreads, 0, s>>>(
        static_cast<const unsigned char *>(dptr), n, d);
    e = cudaGetLastError();
  }
  unsigned long long h = 0;
  if (e == cudaSuccess) e = cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s);
  cudaFreeAsync(d, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e == cudaSuccess) *out = h;
  return e;
}

extern "C" int lms_kernel_fill(void *dptr, size_t n, uint64_t seed,
                               void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  fill_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<unsigned char *>(dptr),
                                               n, seed);
  return cudaGetLastError();
}

extern "C" int lms_kernel_compute(void *dptr, size_t n, unsigned passes,
                                  void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  compute_kernel<<<grid_for(n / 4), kThreads, 0, s>>>(
      static_cast<unsigned int *>(dptr), n / 4, passes);
  return cudaGetLastError();
}

__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

extern "C" int lms_kernel_spin(uint64_t ns, void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  spin_kernel<<<1, 1, 0, s>>>(static_cast<unsigned long long>(ns));
  return cudaGetLastError();
}
