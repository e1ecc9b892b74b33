/* real.c - the functions under the hooks: glibc's dlsym, and libcuda's own
 * definitions of the driver functions the interposer hooks or calls.
 *
 * libcuda is not loaded when the preload starts (static cudart opens it
 * later, if ever), and loading it from a constructor would put the driver
 * into every process the preload reaches, shells included.  So each
 * function is found at its first use, from a handle on the libcuda the
 * program has already loaded (RTLD_NOLOAD).  A lookup through that handle
 * searches libcuda and its dependencies only, so it can never answer with
 * one of our own exports.  Pointers are published with atomics; two
 * threads racing to find the same one store the same value. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <unistd.h>

#include "preload/preload.h"

const lms__fn_t lms__fns[LMS__FN_COUNT] = {
#define LMS__FN_HOOK_1(sym) (void *)sym
#define LMS__FN_HOOK_0(sym) NULL
#define LMS__FN_ENTRY_(sym, base, ver, ptsz, hooked)                          \
  [LMS__FN_##sym] = {#sym, #base, ver, ptsz, LMS__FN_HOOK_##hooked(sym)},
    LMS__PRELOAD_FUNCS(LMS__FN_ENTRY_)
#undef LMS__FN_ENTRY_
#undef LMS__FN_HOOK_0
#undef LMS__FN_HOOK_1
};

void *(*lms__real_dlsym)(void *, const char *);

static _Atomic(void *) g_real[LMS__FN_COUNT];
static _Atomic(void *) g_libcuda;

LMS__NO_SANITIZE static void say(const char *msg, size_t len) {
  ssize_t w = write(2, msg, len);
  (void)w;
}

LMS__NO_SANITIZE int lms__real_dlsym_init(void) {
  if (lms__real_dlsym != NULL) return 0;
  /* glibc 2.34 moved dlsym from libdl into libc under a new version; older
   * systems have only the first. */
  void *f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (f == NULL) f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  if (f == NULL) {
    static const char msg[] =
        "lms preload: cannot find glibc's dlsym (GLIBC_2.34 or GLIBC_2.2.5); "
        "the preload cannot work in this process\n";
    say(msg, sizeof msg - 1);
    return -1;
  }
  lms__real_dlsym = (void *(*)(void *, const char *))f;
  return 0;
}

LMS__NO_SANITIZE static int same(const char *a, const char *b) {
  while (*a != '\0' && *a == *b) a++, b++;
  return *a == *b;
}

LMS__NO_SANITIZE int lms__fn_find(const char *name, int hooked_only) {
  if (name == NULL || name[0] != 'c' || name[1] != 'u') return -1;
  for (int i = 0; i < LMS__FN_COUNT; i++) {
    if (hooked_only && lms__fns[i].hook == NULL) continue;
    if (same(name, lms__fns[i].symbol)) return i;
  }
  return -1;
}

static void *libcuda(void) {
  void *h = atomic_load_explicit(&g_libcuda, memory_order_acquire);
  if (h != NULL) return h;
  h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  /* A hook runs only once the program reached libcuda, so this is loaded;
   * the fallback covers a program that took our export by name without
   * libcuda in its dependencies. */
  if (h == NULL) h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) return NULL;
  void *expected = NULL;
  if (!atomic_compare_exchange_strong(&g_libcuda, &expected, h)) {
    dlclose(h); /* another thread's handle is kept; this one is a ref */
    h = expected;
  }
  return h;
}

void *lms__real(lms__fn_id_t id) {
  void *p = atomic_load_explicit(&g_real[id], memory_order_acquire);
  if (p != NULL) return p;
  if (lms__real_dlsym_init() != 0) return NULL;
  void *h = libcuda();
  if (h == NULL) return NULL;
  p = lms__real_dlsym(h, lms__fns[id].symbol);
  if (p != NULL) atomic_store_explicit(&g_real[id], p, memory_order_release);
  return p;
}
