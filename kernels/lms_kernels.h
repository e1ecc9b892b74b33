/* lms_kernels.h - CUDA kernels the runtime and its checks use, with a host
 * reference of the checksum so a GPU result can be compared with one
 * computed on the host.
 *
 * The checksum is a sum over 8-byte words of a mixed (word, index) pair:
 * order-independent, so the GPU can reduce it in any order, yet any changed
 * byte or any two swapped words change it.  A tail shorter than 8 bytes is
 * read as a word padded with zeros. */
#ifndef LMS_KERNELS_H
#define LMS_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define LMS_KERNEL_HD __host__ __device__
#else
#define LMS_KERNEL_HD
#endif

static inline LMS_KERNEL_HD uint64_t lms_checksum_mix(uint64_t word,
                                                      uint64_t index) {
  uint64_t x = word ^ (index * 0x9E3779B97F4A7C15ull);
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

/* The host reference. */
static inline uint64_t lms_checksum_host(const void *p, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  uint64_t sum = 0;
  size_t words = n / 8;
  for (size_t i = 0; i < words; i++) {
    uint64_t w;
    memcpy(&w, b + 8 * i, 8);
    sum += lms_checksum_mix(w, i);
  }
  if (n % 8) {
    uint64_t w = 0;
    memcpy(&w, b + 8 * words, n % 8);
    sum += lms_checksum_mix(w, words);
  }
  return sum;
}

#ifdef __cplusplus
extern "C" {
#endif

/* Each returns 0 on success or a cudaError_t value.  `stream` is a
 * cudaStream_t. */
/* Writes the checksum of n bytes at dptr into *out (host memory); waits
 * for the stream. */
int lms_kernel_checksum(const void *dptr, size_t n, uint64_t *out,
                        void *stream);
/* Fills n bytes with the pattern lms_kernel_pattern_byte(seed, i). */
int lms_kernel_fill(void *dptr, size_t n, uint64_t seed, void *stream);
/* Reads and rewrites n bytes `passes` times: work proportional to bytes,
 * for overlap benchmarks.  The bytes are left as they were. */
int lms_kernel_compute(void *dptr, size_t n, unsigned passes, void *stream);
/* Keeps one thread busy for `ns` nanoseconds of the GPU's global timer:
 * the device-ops table's timed compute. */
int lms_kernel_spin(uint64_t ns, void *stream);
/* Writes n floats uniform in [lo, hi), a function of (seed, index). */
int lms_kernel_fill_f32(float *dptr, size_t n, uint64_t seed, float lo,
                        float hi, void *stream);
/* The mean softmax cross-entropy of `batch` rows of `classes` logits
 * against integer labels stored as floats: its gradient into dlogits and
 * its value into *loss (device memory, one float). */
int lms_kernel_softmax_loss(const float *logits, const float *labels,
                            int batch, int classes, float *dlogits,
                            float *loss, void *stream);

#ifdef __cplusplus
}
#endif

static inline LMS_KERNEL_HD unsigned char lms_kernel_pattern_byte(uint64_t seed,
                                                                  uint64_t i) {
  return (unsigned char)(lms_checksum_mix(seed, i >> 3) >> (8 * (i & 7)));
}

#endif
