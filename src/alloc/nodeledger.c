/* nodeledger.c - one pinned-memory budget for every lms process of a node
 * (alloc.h).
 *
 * Note [One host budget per node]
 * Pinned memory cannot be paged out.  Under torchrun or mpirun a node runs
 * one process per GPU, and eight of them each pinning what it needs can
 * take the host down, while a --host-limit per process either wastes the
 * memory one rank does not use or lets the sum pass what the node has.  So
 * --node-host-limit caps the pinned bytes of all lms processes of the node
 * (of this user) together.
 *
 * The ledger is a small POSIX shared-memory object, /lms-node-UID unless
 * named otherwise: a header with a process-shared, robust mutex and a
 * table of slots, one per process, each holding its pid, the pid's start
 * time and the bytes it has pinned.  The first process to join makes it;
 * each reserves before the pinned pool takes a slab from the device and
 * gives back only when it leaves (the pool keeps its slabs until then).  A
 * reservation is refused, with the bytes the node holds and by how many
 * processes, when the live processes' bytes plus it would pass the
 * joiner's limit.
 *
 * A process that dies without leaving (killed, crashed) must not keep its
 * bytes: its slot is dropped by the next process that takes the lock and
 * finds its pid gone, or alive but started at another time (the pid was
 * reused); and one that dies holding the lock leaves it to the next taker
 * as EOWNERDEAD, which makes the table consistent (a slot update is one
 * store, so the table is never half-written).  The last process to leave
 * removes the object, under its lock; one that opened it just before
 * that is alone in the removed ledger until it leaves (the budget is then
 * split in two for that while), and one that joins after makes a new
 * one.
 *
 * Invariants: a slot with pid 0 is free; every live process has at most
 * one slot, the one its handle names; the table is changed only under the
 * mutex. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc/alloc.h"
#include "core/log.h"
#include "core/nodeshm.h"

#define LEDGER_MAGIC 0x6c6d736e6f646532ull /* "lmsnode2": the layout of nodeshm.h */
#define LEDGER_SLOTS 256

typedef struct slot {
  pid_t pid;             /* 0: free */
  unsigned long long start; /* the pid's start time (/proc/PID/stat) */
  uint64_t bytes;
} slot_t;

typedef struct ledger_shm {
  slot_t slots[LEDGER_SLOTS];
} ledger_shm_t;

const char *lms__node_ledger_name;

struct lms__node_ledger {
  lms__nodeshm_t obj;
  ledger_shm_t *shm;  /* its payload */
  int slot;
  uint64_t limit;
};

static int take(lms__node_ledger_t *l) { return lms__nodeshm_lock(&l->obj); }
static void give(lms__node_ledger_t *l) { lms__nodeshm_unlock(&l->obj); }

/* Drops the slots of processes that are gone; the bytes and count of the
 * live ones. */
static uint64_t sweep(ledger_shm_t *shm, int *live) {
  uint64_t total = 0;
  int n = 0;
  for (int i = 0; i < LEDGER_SLOTS; i++) {
    slot_t *s = &shm->slots[i];
    if (s->pid == 0) continue;
    if (!lms__pid_alive(s->pid, s->start)) {
      LMS_LOG(INFO, ALLOC, "node ledger: process %ld is gone; its %llu "
              "pinned bytes are free again", (long)s->pid,
              (unsigned long long)s->bytes);
      memset(s, 0, sizeof *s);
      continue;
    }
    total += s->bytes;
    n++;
  }
  if (live != NULL) *live = n;
  return total;
}

lms_status_t lms__node_ledger_join(const char *name, uint64_t limit,
                                   lms__node_ledger_t **out, char *err) {
  lms__node_ledger_t *l = calloc(1, sizeof *l);
  if (l == NULL) {
    lms__errf(err, "no host memory for the node ledger");
    return LMS_ERR_HOST_OOM;
  }
  char own[64];
  if (name == NULL) name = lms__node_ledger_name;
  if (name == NULL) {
    snprintf(own, sizeof own, "/lms-node-%ld", (long)getuid());
    name = own;
  }
  l->limit = limit;
  l->slot = -1;
  lms_status_t st = lms__nodeshm_open_locked(
      &l->obj, name, sizeof(ledger_shm_t), LEDGER_MAGIC, "--node-host-limit",
      err);
  if (st != LMS_OK) {
    free(l);
    return st;
  }
  l->shm = lms__nodeshm_payload(&l->obj);
  sweep(l->shm, NULL);
  for (int i = 0; i < LEDGER_SLOTS && l->slot < 0; i++) {
    if (l->shm->slots[i].pid != 0) continue;
    l->shm->slots[i] = (slot_t){.pid = getpid(),
                                .start = lms__pid_start_time(getpid()),
                                .bytes = 0};
    l->slot = i;
  }
  give(l);
  if (l->slot < 0) {
    lms__errf(err, "--node-host-limit: the node ledger %s is full (%d lms "
              "processes)", l->obj.name, LEDGER_SLOTS);
    lms__nodeshm_close(&l->obj);
    free(l);
    return LMS_ERR_HOST_OOM;
  }
  *out = l;
  return LMS_OK;
}

lms_status_t lms__node_ledger_reserve(lms__node_ledger_t *l, uint64_t bytes,
                                      char *why) {
  if (take(l) != 0) {
    lms__errf(why, "--node-host-limit: cannot lock the node ledger %s",
              l->obj.name);
    return LMS_ERR_HOST_OOM;
  }
  int live = 0;
  uint64_t total = sweep(l->shm, &live);
  slot_t *me = &l->shm->slots[l->slot];
  lms_status_t st = LMS_OK;
  if (total + bytes > l->limit || total + bytes < total) {
    lms__errf(why, "host out of memory for the node: its %d lms processes "
              "hold %llu pinned bytes (this one %llu), and %llu more would "
              "pass the --node-host-limit of %llu; raise it, or run fewer "
              "ranks per node",
              live, (unsigned long long)total, (unsigned long long)me->bytes,
              (unsigned long long)bytes, (unsigned long long)l->limit);
    st = LMS_ERR_HOST_OOM;
  } else {
    me->bytes += bytes;
  }
  give(l);
  return st;
}

void lms__node_ledger_release(lms__node_ledger_t *l, uint64_t bytes) {
  if (take(l) != 0) return;
  slot_t *me = &l->shm->slots[l->slot];
  me->bytes = me->bytes > bytes ? me->bytes - bytes : 0;
  give(l);
}

uint64_t lms__node_ledger_total(lms__node_ledger_t *l, int *processes) {
  if (take(l) != 0) return 0;
  uint64_t total = sweep(l->shm, processes);
  give(l);
  return total;
}

void lms__node_ledger_hold_for_test(lms__node_ledger_t *l) {
  if (l != NULL) take(l);
}

void lms__node_ledger_leave(lms__node_ledger_t *l) {
  if (l == NULL) return;
  if (take(l) == 0) {
    int live = 1;
    memset(&l->shm->slots[l->slot], 0, sizeof(slot_t));
    sweep(l->shm, &live);
    /* The last one out removes it, under the lock; one that opened it
     * just before sees the mark and opens a new one. */
    if (live == 0) lms__nodeshm_remove(&l->obj);
    give(l);
  }
  lms__nodeshm_close(&l->obj);
  free(l);
}
