/* shadow_b.c - the second definition of shadow_value(); see shadow_a.c. */
__attribute__((visibility("default"))) int shadow_value(void) { return 'b'; }
__attribute__((visibility("default"))) int shadow_b_marker(void) { return 1; }
