/* nodeshm.h - a named POSIX shared-memory object that the lms processes
 * of one node share: a header with a process-shared, robust mutex, then a
 * payload laid out by its user (the node's host ledger, alloc/nodeledger.c,
 * and the board of ranks sharing a host link, replay/linkboard.c), and the
 * test of whether a process that took a slot in one is still alive.
 *
 * The first process to open a name makes the object, sizes it, sets up
 * the mutex and then its magic; the others wait (up to a second) for the
 * magic before they use it.  A holder of the mutex that dies leaves it to
 * the next taker as EOWNERDEAD, which lms__nodeshm_lock makes consistent:
 * each user must keep its table usable after any store, as the node
 * ledger does by storing a slot whole and the link board by counting a
 * round posted only once its timeline is written. */
#ifndef LMS_CORE_NODESHM_H
#define LMS_CORE_NODESHM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/status.h"

typedef struct lms__nodeshm {
  void *base;       /* the mapping: header, then payload */
  size_t bytes;     /* of the mapping */
  char name[96];
} lms__nodeshm_t;

/* Opens the object `name` (made, zeroed, if it does not exist) with
 * `payload` bytes after the header, marked with `magic`.  `what` names
 * the option it serves in errors.  LMS_ERR_HOST_OOM with the reason in
 * err (LMS__ERRBUF bytes) when it cannot be opened, mapped, or is not one
 * of this kind. */
lms_status_t lms__nodeshm_open(lms__nodeshm_t *s, const char *name,
                               size_t payload, uint64_t magic,
                               const char *what, char *err);
/* lms__nodeshm_open, then the mutex taken; if the object was removed by
 * its last user meanwhile (lms__nodeshm_remove), it is opened anew, so
 * that a process never joins one that others can no longer find. */
lms_status_t lms__nodeshm_open_locked(lms__nodeshm_t *s, const char *name,
                                      size_t payload, uint64_t magic,
                                      const char *what, char *err);
/* The payload, zeroed when the object was made; 64-byte aligned. */
void *lms__nodeshm_payload(const lms__nodeshm_t *s);
/* Takes the mutex (0), or an errno value; a dead holder's is recovered. */
int lms__nodeshm_lock(lms__nodeshm_t *s);
void lms__nodeshm_unlock(lms__nodeshm_t *s);
/* Marks the object removed and removes its name (call it holding the
 * lock, as the last user; one that opened it just before finds the mark
 * once it has the lock); the mapping stays until closed. */
void lms__nodeshm_remove(lms__nodeshm_t *s);
/* Unmaps it. */
void lms__nodeshm_close(lms__nodeshm_t *s);

/* The start time of pid in clock ticks since boot (field 22 of
 * /proc/PID/stat), 0 when it cannot be read. */
unsigned long long lms__pid_start_time(pid_t pid);
/* 1 if pid runs and is the process that started at `start` (a pid reused
 * since is not, nor a zombie); 0 for pid 0. */
int lms__pid_alive(pid_t pid, unsigned long long start);

#endif
