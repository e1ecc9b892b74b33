/* fuzz.h - what the harnesses in fuzz/ share.
 *
 * Each harness defines LLVMFuzzerTestOneInput, the entry point libFuzzer
 * calls with one input at a time.  Built with clang and -DLMS_FUZZ=ON it
 * links libFuzzer and searches for inputs; built by any compiler without
 * libFuzzer it links replay_main.c instead, which calls the same function
 * once per file named on its command line, so the seed corpora and the
 * regressions are replayed by every build's tests (fuzz/fuzz.cmake).
 *
 * A harness states what must hold for every input as FUZZ_CHECK: the
 * message names the property, and abort() makes libFuzzer keep the input
 * as a crash, as a sanitizer report would. */
#ifndef LMS_FUZZ_FUZZ_H
#define LMS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond, ...)                                                 \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "%s:%d: property failed: %s: ", __FILE__, __LINE__,     \
              #cond);                                                         \
      fprintf(stderr, __VA_ARGS__);                                           \
      fputc('\n', stderr);                                                    \
      abort();                                                                \
    }                                                                         \
  } while (0)

#endif
