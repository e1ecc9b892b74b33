/* shadow_a.c - for the RTLD_NEXT test of the preloaded dlsym: defines
 * shadow_value() and asks dlsym(RTLD_NEXT) for the next definition, which
 * is shadow_b.c's when the program links a before b. */
#include <dlfcn.h>
#include <stddef.h>

__attribute__((visibility("default"))) int shadow_value(void) { return 'a'; }

__attribute__((visibility("default"))) int shadow_next(void) {
  int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "shadow_value");
  return next != NULL ? next() : 0;
}
