/* nodeshm.c - shared-memory objects of a node and the liveness of the
 * processes in them (nodeshm.h). */
#include "core/nodeshm.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct header {
  uint64_t magic; /* set last, once the mutex is ready */
  pthread_mutex_t lock;
  int removed;    /* its name is gone: whoever maps it now is alone */
} header_t;

/* The payload starts here, past the header, on a 64-byte boundary. */
#define PAYLOAD_AT ((sizeof(header_t) + 63) / 64 * 64)

static header_t *head(const lms__nodeshm_t *s) { return s->base; }

lms_status_t lms__nodeshm_open(lms__nodeshm_t *s, const char *name,
                               size_t payload, uint64_t magic,
                               const char *what, char *err) {
  memset(s, 0, sizeof *s);
  snprintf(s->name, sizeof s->name, "%s", name);
  s->bytes = PAYLOAD_AT + payload;
  int made = 1;
  int fd = shm_open(s->name, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 && errno == EEXIST) {
    made = 0;
    fd = shm_open(s->name, O_RDWR, 0600);
  }
  if (fd < 0 || (made && ftruncate(fd, (off_t)s->bytes) != 0)) {
    lms__errf(err, "%s: cannot open %s: %s", what, s->name, strerror(errno));
    if (fd >= 0) {
      close(fd);
      shm_unlink(s->name); /* made here, never sized: no one uses it */
    }
    return LMS_ERR_HOST_OOM;
  }
  /* Whoever made it may still be sizing it. */
  struct stat sb;
  for (int i = 0; i < 1000 && fstat(fd, &sb) == 0 &&
                  (size_t)sb.st_size < s->bytes;
       i++)
    usleep(1000);
  if (fstat(fd, &sb) != 0 || (size_t)sb.st_size < s->bytes) {
    lms__errf(err, "%s: %s is not one of lms's (it has another size; remove "
              "it with rm /dev/shm%s when no lms process runs)",
              what, s->name, s->name);
    close(fd);
    return LMS_ERR_HOST_OOM;
  }
  s->base = mmap(NULL, s->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (s->base == MAP_FAILED) {
    s->base = NULL;
    lms__errf(err, "%s: cannot map %s: %s", what, s->name, strerror(errno));
    return LMS_ERR_HOST_OOM;
  }
  header_t *h = head(s);
  if (made) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&h->lock, &a);
    pthread_mutexattr_destroy(&a);
    __atomic_store_n(&h->magic, magic, __ATOMIC_RELEASE);
    return LMS_OK;
  }
  for (int i = 0; i < 1000 && __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) !=
                                  magic;
       i++)
    usleep(1000);
  if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != magic) {
    lms__errf(err, "%s: %s is not one of lms's (remove it with rm "
              "/dev/shm%s when no lms process runs)", what, s->name, s->name);
    munmap(s->base, s->bytes);
    s->base = NULL;
    return LMS_ERR_HOST_OOM;
  }
  return LMS_OK;
}

lms_status_t lms__nodeshm_open_locked(lms__nodeshm_t *s, const char *name,
                                      size_t payload, uint64_t magic,
                                      const char *what, char *err) {
  for (int tries = 0; tries < 100; tries++) {
    LMS_CHECK(lms__nodeshm_open(s, name, payload, magic, what, err));
    if (lms__nodeshm_lock(s) != 0) {
      lms__errf(err, "%s: cannot lock %s", what, s->name);
      lms__nodeshm_close(s);
      return LMS_ERR_HOST_OOM;
    }
    if (!head(s)->removed) return LMS_OK;
    /* Its last user removed it after this one opened it: open anew. */
    lms__nodeshm_unlock(s);
    lms__nodeshm_close(s);
  }
  lms__errf(err, "%s: %s was removed under this process 100 times running",
            what, name);
  return LMS_ERR_HOST_OOM;
}

void *lms__nodeshm_payload(const lms__nodeshm_t *s) {
  return (char *)s->base + PAYLOAD_AT;
}

int lms__nodeshm_lock(lms__nodeshm_t *s) {
  int rc = pthread_mutex_lock(&head(s)->lock);
  if (rc == EOWNERDEAD) {
    /* Its holder died: every slot store is whole, so the table is. */
    pthread_mutex_consistent(&head(s)->lock);
    rc = 0;
  }
  return rc;
}

void lms__nodeshm_unlock(lms__nodeshm_t *s) {
  pthread_mutex_unlock(&head(s)->lock);
}

void lms__nodeshm_remove(lms__nodeshm_t *s) {
  head(s)->removed = 1;
  shm_unlink(s->name);
}

void lms__nodeshm_close(lms__nodeshm_t *s) {
  if (s->base == NULL) return;
  munmap(s->base, s->bytes);
  s->base = NULL;
}

unsigned long long lms__pid_start_time(pid_t pid) {
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

/* The state letter of pid (field 3 of /proc/PID/stat), '?' unread. */
static char pid_state(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  FILE *f = fopen(path, "r");
  if (f == NULL) return '?';
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  return p != NULL && p[1] == ' ' && p[2] != '\0' ? p[2] : '?';
}

int lms__pid_alive(pid_t pid, unsigned long long start) {
  if (pid == 0) return 0;
  if (kill(pid, 0) != 0 && errno == ESRCH) return 0;
  /* A zombie has died; only its parent has not reaped it yet. */
  char state = pid_state(pid);
  if (state == 'Z' || state == 'X') return 0;
  unsigned long long st = lms__pid_start_time(pid);
  return st == 0 || st == start;
}
