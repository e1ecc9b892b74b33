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
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc/alloc.h"
#include "core/log.h"

#define LEDGER_MAGIC 0x6c6d736e6f646531ull /* "lmsnode1" */
#define LEDGER_SLOTS 256

typedef struct slot {
  pid_t pid;             /* 0: free */
  unsigned long long start; /* the pid's start time (/proc/PID/stat) */
  uint64_t bytes;
} slot_t;

typedef struct ledger_shm {
  uint64_t magic;        /* set last, once the mutex is ready */
  pthread_mutex_t lock;
  slot_t slots[LEDGER_SLOTS];
} ledger_shm_t;

const char *lms__node_ledger_name;

struct lms__node_ledger {
  ledger_shm_t *shm;
  int slot;
  uint64_t limit;
  char name[64];
};

/* The start time of pid in clock ticks since boot (field 22 of
 * /proc/PID/stat), 0 when it cannot be read. */
static unsigned long long start_time(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  FILE *f = fopen(path, "r");
  if (f == NULL) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* The command name (field 2) may hold spaces: fields 3 on follow the
   * last ')'. */
  char *p = strrchr(buf, ')');
  if (p == NULL) return 0;
  char *save = NULL;
  int field = 3;
  for (char *tok = strtok_r(p + 1, " ", &save); tok != NULL;
       tok = strtok_r(NULL, " ", &save), field++)
    if (field == 22) return strtoull(tok, NULL, 10);
  return 0;
}

static int alive(const slot_t *s) {
  if (s->pid == 0) return 0;
  if (kill(s->pid, 0) != 0 && errno == ESRCH) return 0;
  unsigned long long st = start_time(s->pid);
  return st == 0 || st == s->start;
}

static int take(ledger_shm_t *shm) {
  int rc = pthread_mutex_lock(&shm->lock);
  if (rc == EOWNERDEAD) {
    /* Its holder died: every slot store is whole, so the table is. */
    pthread_mutex_consistent(&shm->lock);
    rc = 0;
  }
  return rc;
}

/* Drops the slots of processes that are gone; the bytes and count of the
 * live ones. */
static uint64_t sweep(ledger_shm_t *shm, int *live) {
  uint64_t total = 0;
  int n = 0;
  for (int i = 0; i < LEDGER_SLOTS; i++) {
    slot_t *s = &shm->slots[i];
    if (s->pid == 0) continue;
    if (!alive(s)) {
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
  if (name == NULL) name = lms__node_ledger_name;
  if (name != NULL)
    snprintf(l->name, sizeof l->name, "%s", name);
  else
    snprintf(l->name, sizeof l->name, "/lms-node-%ld", (long)getuid());
  l->limit = limit;
  l->slot = -1;
  int made = 1;
  int fd = shm_open(l->name, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 && errno == EEXIST) {
    made = 0;
    fd = shm_open(l->name, O_RDWR, 0600);
  }
  if (fd < 0 || (made && ftruncate(fd, sizeof(ledger_shm_t)) != 0)) {
    lms__errf(err, "--node-host-limit: cannot open the node ledger %s: %s",
              l->name, strerror(errno));
    if (fd >= 0) close(fd);
    free(l);
    return LMS_ERR_HOST_OOM;
  }
  /* Whoever made it may still be sizing it. */
  struct stat sb;
  for (int i = 0; i < 1000 && fstat(fd, &sb) == 0 &&
                  (size_t)sb.st_size < sizeof(ledger_shm_t);
       i++)
    usleep(1000);
  l->shm = mmap(NULL, sizeof(ledger_shm_t), PROT_READ | PROT_WRITE,
                MAP_SHARED, fd, 0);
  close(fd);
  if (l->shm == MAP_FAILED) {
    lms__errf(err, "--node-host-limit: cannot map the node ledger %s: %s",
              l->name, strerror(errno));
    free(l);
    return LMS_ERR_HOST_OOM;
  }
  if (made) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&l->shm->lock, &a);
    pthread_mutexattr_destroy(&a);
    __atomic_store_n(&l->shm->magic, LEDGER_MAGIC, __ATOMIC_RELEASE);
  } else {
    for (int i = 0; i < 1000 && __atomic_load_n(&l->shm->magic,
                                                __ATOMIC_ACQUIRE) !=
                                    LEDGER_MAGIC;
         i++)
      usleep(1000);
    if (__atomic_load_n(&l->shm->magic, __ATOMIC_ACQUIRE) != LEDGER_MAGIC) {
      lms__errf(err, "--node-host-limit: the node ledger %s is not one "
                "(remove it with rm /dev/shm%s when no lms process runs)",
                l->name, l->name);
      munmap(l->shm, sizeof(ledger_shm_t));
      free(l);
      return LMS_ERR_HOST_OOM;
    }
  }
  if (take(l->shm) != 0) {
    lms__errf(err, "--node-host-limit: cannot lock the node ledger %s",
              l->name);
    munmap(l->shm, sizeof(ledger_shm_t));
    free(l);
    return LMS_ERR_HOST_OOM;
  }
  sweep(l->shm, NULL);
  for (int i = 0; i < LEDGER_SLOTS && l->slot < 0; i++) {
    if (l->shm->slots[i].pid != 0) continue;
    l->shm->slots[i] = (slot_t){.pid = getpid(), .start = start_time(getpid()),
                                .bytes = 0};
    l->slot = i;
  }
  pthread_mutex_unlock(&l->shm->lock);
  if (l->slot < 0) {
    lms__errf(err, "--node-host-limit: the node ledger %s is full (%d lms "
              "processes)", l->name, LEDGER_SLOTS);
    munmap(l->shm, sizeof(ledger_shm_t));
    free(l);
    return LMS_ERR_HOST_OOM;
  }
  *out = l;
  return LMS_OK;
}

lms_status_t lms__node_ledger_reserve(lms__node_ledger_t *l, uint64_t bytes,
                                      char *why) {
  if (take(l->shm) != 0) {
    lms__errf(why, "--node-host-limit: cannot lock the node ledger %s",
              l->name);
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
  pthread_mutex_unlock(&l->shm->lock);
  return st;
}

void lms__node_ledger_release(lms__node_ledger_t *l, uint64_t bytes) {
  if (take(l->shm) != 0) return;
  slot_t *me = &l->shm->slots[l->slot];
  me->bytes = me->bytes > bytes ? me->bytes - bytes : 0;
  pthread_mutex_unlock(&l->shm->lock);
}

uint64_t lms__node_ledger_total(lms__node_ledger_t *l, int *processes) {
  if (take(l->shm) != 0) return 0;
  uint64_t total = sweep(l->shm, processes);
  pthread_mutex_unlock(&l->shm->lock);
  return total;
}

void lms__node_ledger_hold_for_test(lms__node_ledger_t *l) {
  if (l != NULL) take(l->shm);
}

void lms__node_ledger_leave(lms__node_ledger_t *l) {
  if (l == NULL) return;
  int live = 1;
  if (take(l->shm) == 0) {
    memset(&l->shm->slots[l->slot], 0, sizeof(slot_t));
    sweep(l->shm, &live);
    /* The last one out removes it, under the lock, so no one has just
     * joined this one. */
    if (live == 0) shm_unlink(l->name);
    pthread_mutex_unlock(&l->shm->lock);
  }
  munmap(l->shm, sizeof(ledger_shm_t));
  free(l);
}
