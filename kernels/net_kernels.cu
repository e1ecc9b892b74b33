// net_kernels.cu - the few kernels `lms bench net` needs besides cuDNN and
// cuBLAS: float initialisation and the softmax loss (see lms_kernels.h).
#include <cuda_runtime.h>
#include <math.h>

#include "lms_kernels.h"

namespace {

constexpr int kThreads = 256;

int grid_for(size_t items) {
  size_t g = (items + kThreads - 1) / kThreads;
  return g > 4096 ? 4096 : (g == 0 ? 1 : (int)g);
}

__global__ void fill_f32_kernel(float *p, size_t n, uint64_t seed, float lo,
                                float hi) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    // 24 bits of the mixed index: a uniform float in [0, 1).
    float u = (float)(lms_checksum_mix(seed, i) >> 40) * (1.0f / 16777216.0f);
    p[i] = lo + (hi - lo) * u;
  }
}

// One block per image: the softmax of its row of logits, the gradient of
// the mean cross-entropy (softmax - one-hot) / batch, and the image's
// share of the loss added to *loss.
__global__ void softmax_loss_kernel(const float *logits, const float *labels,
                                    int classes, float inv_batch,
                                    float *dlogits, float *loss) {
  __shared__ float red[kThreads];
  const float *x = logits + (size_t)blockIdx.x * classes;
  float *dx = dlogits + (size_t)blockIdx.x * classes;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < classes; j += blockDim.x) m = fmaxf(m, x[j]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float sum = 0.0f;
  for (int j = threadIdx.x; j < classes; j += blockDim.x) sum += expf(x[j] - m);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  sum = red[0];
  int label = (int)labels[blockIdx.x];
  if (label < 0) label = 0;
  if (label >= classes) label = classes - 1;
  for (int j = threadIdx.x; j < classes; j += blockDim.x) {
    float p = expf(x[j] - m) / sum;
    dx[j] = (p - (j == label ? 1.0f : 0.0f)) * inv_batch;
  }
  if (threadIdx.x == 0)
    atomicAdd(loss, (logf(sum) + m - x[label]) * inv_batch);
}

}  // namespace

extern "C" int lms_kernel_fill_f32(float *dptr, size_t n, uint64_t seed,
                                   float lo, float hi, void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  fill_f32_kernel<<<grid_for(n), kThreads, 0, s>>>(dptr, n, seed, lo, hi);
  return cudaGetLastError();
}

extern "C" int lms_kernel_softmax_loss(const float *logits, const float *labels,
                                       int batch, int classes, float *dlogits,
                                       float *loss, void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  cudaError_t e = cudaMemsetAsync(loss, 0, sizeof *loss, s);
  if (e != cudaSuccess) return e;
  softmax_loss_kernel<<<batch, kThreads, 0, s>>>(logits, labels, classes,
                                                 1.0f / (float)batch, dlogits,
                                                 loss);
  return cudaGetLastError();
}
