/* malloc_owner.c - proves that lms leaves the program's malloc alone.
 * Linked with liblms.so (or run with liblms.so preloaded), it creates a
 * context and allocates host-homed chunks, which go through lms's jemalloc
 * arena, and then asks the dynamic linker which library `malloc` and
 * `free` resolve to: they must not be jemalloc's (glibc's, or the
 * sanitizer runtime's in a sanitizer build).  Exits 0 when they are not. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "lms/lms.h"

static int not_jemalloc(const char *name) {
  void *sym = dlsym(RTLD_DEFAULT, name);
  Dl_info info;
  if (sym == NULL || dladdr(sym, &info) == 0 || info.dli_fname == NULL) {
    printf("%s: cannot resolve\n", name);
    return 0;
  }
  printf("%s comes from %s\n", name, info.dli_fname);
  return strstr(info.dli_fname, "jemalloc") == NULL;
}

int main(int argc, char **argv) {
  (void)argc, (void)argv;
#ifndef LMS_NO_LINK
  if (argc > 1 && strcmp(argv[1], "--use-lms") == 0) {
    lms_options_t *o = NULL;
    lms_ctx_t *ctx = NULL;
    lms_chunk_t *c = NULL;
    if (lms_options_create(&o) != LMS_OK ||
        lms_options_set(o, "device", "sim") != LMS_OK ||
        lms_options_set(o, "gpu-limit", "64MiB") != LMS_OK ||
        lms_options_set(o, "lms", "0") != LMS_OK ||
        lms_ctx_create(o, &ctx) != LMS_OK || lms_alloc(ctx, 1 << 20, &c) != LMS_OK) {
      printf("lms setup failed\n");
      return 1;
    }
    if (!lms_chunk_host_homed(c)) {
      printf("the chunk did not go to the pinned pool\n");
      return 1;
    }
    lms_free(ctx, c);
    lms_ctx_destroy(ctx);
    lms_options_destroy(o);
  }
#endif
  int ok = not_jemalloc("malloc") && not_jemalloc("free");
  printf("%s\n", ok ? "the program's malloc is its own" : "malloc was replaced");
  return ok ? 0 : 1;
}
