/* status.h - internal helpers around lms_status_t: the check macros every
 * fallible call goes through, and the per-context last-error text.
 *
 * Invariant: a function that returns a status other than LMS_OK has left its
 * outputs untouched or in a state its own comment names. */
#ifndef LMS_CORE_STATUS_H
#define LMS_CORE_STATUS_H

#include "lms/lms.h"

/* Returns from the enclosing function when `call` fails. */
#define LMS_CHECK(call)                                                       \
  do {                                                                        \
    lms_status_t lms__st_ = (call);                                           \
    if (lms__st_ != LMS_OK) return lms__st_;                                  \
  } while (0)

/* Stores the status of `call` in `st` and jumps to `label` when it fails:
 * a single cleanup path, as in NCCL's CUDACHECKGOTO. */
#define LMS_CHECK_GOTO(call, st, label)                                       \
  do {                                                                        \
    (st) = (call);                                                            \
    if ((st) != LMS_OK) goto label;                                           \
  } while (0)

#define LMS__ERRBUF 512

/* Formats a message into a fixed buffer of LMS__ERRBUF bytes; never
 * allocates. */
void lms__errf(char *buf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
