/* log.h - leveled, per-subsystem logging (LMS_LOG=warn|info|debug[,subsys]).
 *
 * The level is checked before any formatting, and a message is formatted
 * into a fixed buffer on the stack and written with one write(2): logging
 * never allocates, so it is safe inside intercepted calls. */
#ifndef LMS_CORE_LOG_H
#define LMS_CORE_LOG_H

#include <stdarg.h>

/* X(ENUM, name) */
#define LMS__LOG_LEVELS(X)                                                    \
  X(NONE, "none")                                                             \
  X(ERROR, "error")                                                           \
  X(WARN, "warn")                                                             \
  X(INFO, "info")                                                             \
  X(DEBUG, "debug")

typedef enum lms__log_level {
#define LMS__LOG_LEVEL_ENUM_(e, name) LMS_LOG_##e,
  LMS__LOG_LEVELS(LMS__LOG_LEVEL_ENUM_)
#undef LMS__LOG_LEVEL_ENUM_
  LMS_LOG_LEVEL_COUNT
} lms__log_level_t;

/* X(ENUM, name); each is one bit of the subsystem mask. */
#define LMS__LOG_SUBSYS(X)                                                    \
  X(CORE, "core")                                                             \
  X(ALLOC, "alloc")                                                           \
  X(SWAP, "swap")                                                             \
  X(GRAPH, "graph")                                                           \
  X(DEVICE, "device")                                                         \
  X(HOOK, "hook")

typedef enum lms__log_subsys_bit {
#define LMS__LOG_SUBSYS_ENUM_(e, name) LMS_LOG_BIT_##e,
  LMS__LOG_SUBSYS(LMS__LOG_SUBSYS_ENUM_)
#undef LMS__LOG_SUBSYS_ENUM_
  LMS_LOG_SUBSYS_COUNT
} lms__log_subsys_bit_t;

#define LMS_LOG_SUB(e) (1u << LMS_LOG_BIT_##e)
#define LMS_LOG_ALL_SUBSYS ((1u << LMS_LOG_SUBSYS_COUNT) - 1u)

extern const char *const lms__log_level_names[LMS_LOG_LEVEL_COUNT];
extern const char *const lms__log_subsys_names[LMS_LOG_SUBSYS_COUNT];

/* Sets the process-wide level, subsystem mask and destination.  `path` may
 * be NULL or "" for stderr; "%p" in it becomes the process id. */
void lms__log_configure(int level, unsigned subsys_mask, const char *path);
int lms__log_enabled(int level, unsigned subsys);
/* The longest line written whole, its newline included (Note in log.c). */
#define LMS__LOG_LINE_MAX 4096
void lms__log_write(int level, unsigned subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define LMS_LOG(level, sub, ...)                                              \
  do {                                                                        \
    if (lms__log_enabled(LMS_LOG_##level, LMS_LOG_SUB(sub)))                  \
      lms__log_write(LMS_LOG_##level, LMS_LOG_SUB(sub), __VA_ARGS__);         \
  } while (0)

#endif
