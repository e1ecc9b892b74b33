/* status.c - names and messages of lms_status_t, generated from
 * LMS_STATUS_MAP so that the enum and the texts cannot drift apart; and
 * the library's version. */
#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>

const char *lms_status_name(lms_status_t st) {
  switch (st) {
#define LMS_STATUS_NAME_(name, value, msg)                                    \
  case LMS_##name:                                                            \
    return "LMS_" #name;
    LMS_STATUS_MAP(LMS_STATUS_NAME_)
#undef LMS_STATUS_NAME_
  }
  return "LMS_UNKNOWN";
}

const char *lms_strerror(lms_status_t st) {
  switch (st) {
#define LMS_STATUS_MSG_(name, value, msg)                                     \
  case LMS_##name:                                                            \
    return msg;
    LMS_STATUS_MAP(LMS_STATUS_MSG_)
#undef LMS_STATUS_MSG_
  }
  return "unknown status";
}

void lms__errf(char *buf, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, LMS__ERRBUF, fmt, ap);
  va_end(ap);
}

int lms_version(void) { return LMS_VERSION; }
