/* dlsym.c - the exported dlsym.  Static cudart (nvcc's default) finds the
 * driver with dlopen("libcuda.so.1") and dlsym(handle, "cuGetProcAddress"),
 * so symbol interposition alone never sees it: the lookup itself must be
 * answered.  A name we hook answers with the hook, provided the real
 * lookup finds the name at all (so a handle without it still gets NULL and
 * its dlerror()); every other name goes to glibc's dlsym untouched.
 *
 * Note [dlsym passes through by a tail jump]
 * glibc's dlsym looks at its return address to learn who called it:
 * dlsym(RTLD_NEXT, name) means "the next definition after the caller's
 * object".  A C wrapper that calls the real dlsym makes the wrapper the
 * caller, so RTLD_NEXT from any other library (another interposer, or the
 * sanitizer runtime resolving its interceptors) would search after the
 * preload instead of after that library, and could even find the caller's
 * own definition again.  On x86-64 the exported dlsym is therefore a few
 * instructions of assembly: it asks dlsym_decide() whether the name is
 * ours, and if not it restores the arguments and jumps (not calls) to
 * glibc's dlsym, which then sees the original return address.  Other
 * architectures get a C wrapper, which keeps the caller only where the
 * compiler turns its last call into a jump (it does at -O2, not at -O0).
 * The preload_dlsym_passthrough test fails without this. 
 *
 * Recursion: dlsym_decide() calls no function that can call dlsym (no
 * libc string functions either, which the sanitizer runtime intercepts and
 * may not have resolved yet while it calls dlsym during its own start),
 * takes no lock, finds glibc's dlsym with dlvsym, which is not hooked,
 * and is built without sanitizer instrumentation (LMS__NO_SANITIZE): ASan
 * resolves its interceptors through this dlsym before its shadow memory
 * is mapped.  A dlsym issued by the driver from inside one of our hooks
 * therefore just works. */
#include <dlfcn.h>
#include <unistd.h>

#include "preload/preload.h"

/* Called by the exported dlsym: the hook to answer with, or NULL to pass
 * the call to glibc.  Not static: the assembly below calls it by name. */
LMS__NO_SANITIZE void *lms__dlsym_decide(void *handle, const char *name);

LMS__NO_SANITIZE void *lms__dlsym_decide(void *handle, const char *name) {
  if (lms__real_dlsym_init() != 0) _exit(127); /* the message is out */
  int id = lms__fn_find(name, 1);
  if (id < 0) return NULL;
  /* Looked up from here, RTLD_NEXT means "after the preload", which is
   * where the real definition of a name we export lives anyway. */
  if (lms__real_dlsym(handle, name) == NULL) return NULL;
  return lms__fns[id].hook;
}

#if defined(__x86_64__)
/* See Note [dlsym passes through by a tail jump].  The two pushes and the
 * sub keep the stack 16-byte aligned at the call. */
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        ".cfi_startproc\n"
#if defined(__CET__)
        "endbr64\n"
#endif
        "pushq %rdi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "pushq %rsi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "subq $8, %rsp\n"
        ".cfi_adjust_cfa_offset 8\n"
        "call lms__dlsym_decide@PLT\n"
        "addq $8, %rsp\n"
        ".cfi_adjust_cfa_offset -8\n"
        "popq %rsi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "popq %rdi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "testq %rax, %rax\n"
        "jz 1f\n"
        "ret\n"
        "1:\n"
        "jmp *lms__real_dlsym(%rip)\n"
        ".cfi_endproc\n"
        ".size dlsym, .-dlsym\n");
#else
LMS__NO_SANITIZE LMS__PRELOAD_EXPORT void *dlsym(void *handle,
                                                   const char *name) {
  void *hook = lms__dlsym_decide(handle, name);
  return hook != NULL ? hook : lms__real_dlsym(handle, name);
}
#endif
