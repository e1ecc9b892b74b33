/* test_drv.c - core/drv.h: a driver table filled for another version is
 * refused, with a message that names both versions; one of this version
 * is read. */
#include <criterion/criterion.h>
#include "check.h"
#include <string.h>

#include "core/drv.h"

Test(drv, a_table_of_another_version_is_refused) {
  char err[160];
  lms__drv_t d = {.version = LMS__DRV_VERSION};
  err[0] = '\0';
  cr_assert(eq(int, lms__drv_check(&d, err, sizeof err), 0));
  cr_assert(eq(str, err, ""));
  d.version = LMS__DRV_VERSION + 1;
  cr_assert(eq(int, lms__drv_check(&d, err, sizeof err), -1));
  char want[160];
  snprintf(want, sizeof want, "the driver table is of version %u; this "
           "build of lms reads version %u only", LMS__DRV_VERSION + 1,
           LMS__DRV_VERSION);
  cr_assert(eq(str, err, want));
  d.version = 0; /* a table never filled */
  cr_assert(eq(int, lms__drv_check(&d, err, sizeof err), -1));
  cr_assert(eq(int, lms__drv_check(NULL, err, sizeof err), -1));
  cr_assert(strstr(err, "version 0;") != NULL, "%s", err);
}
