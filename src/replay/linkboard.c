/* linkboard.c - the board where the ranks of one node whose GPUs share a
 * host link post their copy timelines (Note [Ranks on one link]).
 *
 * Invariants: a slot with pid 0 is free; a posted timeline is whole
 * (sorted, disjoint spans inside [0, period)) and changes only under the
 * lock; a rank's round counts the timelines it has posted. */
#include "replay/linkboard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/nodeshm.h"

/* Note [Ranks on one link]
 *
 * `lms sim --gpus-per-link N` models N GPUs behind one host link as N
 * copies of the workload at spread phases (Note [Shared link] in
 * linkshare.c).  The board makes it real for ranks that run as separate
 * processes, each with its own simulated device and each perhaps with its
 * own workload: they name one link group (--link-group), and each takes a
 * slot on a small shared-memory board of the node, /lms-link-UID-GROUP.
 *
 * Rounds.  After each period of its work (an iteration), a rank posts the
 * copy timeline of that period, placed at the virtual time the period
 * began, and waits until every other rank still on the board has posted as
 * many; its copies of the next period then share the link with the
 * others' latest timelines, each where its own clock puts it.  The clocks
 * of the ranks' simulated devices are taken as one: each starts at 0 when
 * its device is made, as ranks started together do, and a rank that runs
 * ahead or behind shows as a phase between the timelines.  Copies already
 * on the clock keep their ends (Note [Shared link]), so a period is shared
 * against the others' previous one, as in the model's rounds.
 *
 * A rank leaves when its work is done (its slot is cleared, and the others
 * stop waiting for it and stop sharing with it); one that dies is found
 * gone by its pid and start time when another takes the lock, as the node
 * ledger does (Note [One host budget per node], alloc/nodeledger.c).  The
 * first wait also waits until as many ranks as were announced
 * (--gpus-per-link, the same on every rank) have joined, counting those
 * that have left since; a wait that passes its timeout names who is
 * missing.  A waiting rank polls the board, backing off to 5 ms.
 *
 * A rank that has passed round r's wait may post round r + 1 before a
 * slower one reads round r, so each slot keeps two rounds (r at r % 2)
 * and a rank reads the others' round that it posted last; none can post
 * r + 2 before every live rank has posted r + 1, after reading round r.
 *
 * A posted timeline holds at most LMS__BOARD_SPANS spans a direction;
 * a longer one has its shortest idle gaps closed until it fits, which
 * counts the link busy a little longer than it was.  A round's timeline
 * is written before the round is counted, so a rank that dies while
 * posting leaves the last whole one. */

#define BOARD_MAGIC 0x6c6d736c696e6b32ull /* "lmslink2" */

/* One round's timeline of a rank. */
typedef struct posted {
  uint64_t origin, period;   /* where it begins, its length */
  uint32_t n[LMS__DIR_COUNT];
  lms__copy_span_t spans[LMS__DIR_COUNT][LMS__BOARD_SPANS];
} posted_t;

typedef struct board_slot {
  pid_t pid;                 /* 0: free */
  unsigned long long start;  /* the pid's start time */
  int rank;                  /* the local rank, for messages */
  uint64_t round;            /* timelines posted */
  posted_t posted[2];        /* round r's at r % 2 */
} board_slot_t;

typedef struct board_shm {
  int ranks;      /* announced by the first to join */
  int joined;     /* ranks that ever took a slot */
  board_slot_t slots[LMS__SHARE_MAX_GPUS];
} board_shm_t;

struct lms__link_board {
  lms__nodeshm_t obj;
  board_shm_t *shm;
  int slot;
  int expect;         /* ranks announced, waited for once */
  int waited;         /* it has said that it waits */
  char group[LMS__BOARD_GROUP_MAX + 1];
};

/* Clears the slots of processes that are gone; the live ones' count. */
static int sweep(board_shm_t *b) {
  int live = 0;
  for (int i = 0; i < LMS__SHARE_MAX_GPUS; i++) {
    board_slot_t *s = &b->slots[i];
    if (s->pid == 0) continue;
    if (!lms__pid_alive(s->pid, s->start)) {
      LMS_LOG(INFO, DEVICE, "link board: rank %d (process %ld) is gone; "
              "the link is shared without it", s->rank, (long)s->pid);
      s->pid = 0;
      continue;
    }
    live++;
  }
  return live;
}

int lms__board_group_ok(const char *group) {
  size_t n = group != NULL ? strlen(group) : 0;
  if (n == 0 || n > LMS__BOARD_GROUP_MAX) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = group[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
             (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!ok) return 0;
  }
  return 1;
}

lms_status_t lms__board_join(const char *group, int ranks, int rank,
                             lms__link_board_t **out, char *err) {
  *out = NULL;
  if (!lms__board_group_ok(group)) {
    lms__errf(err, "--link-group: '%s'; accepted: 1 to %d of the letters, "
              "digits, '-', '_' and '.'", group ? group : "",
              LMS__BOARD_GROUP_MAX);
    return LMS_ERR_INVALID;
  }
  if (ranks < 2 || ranks > LMS__SHARE_MAX_GPUS) {
    lms__errf(err, "--gpus-per-link: %d with --link-group; accepted: 2 to "
              "%d ranks on the link", ranks, LMS__SHARE_MAX_GPUS);
    return LMS_ERR_INVALID;
  }
  lms__link_board_t *b = calloc(1, sizeof *b);
  if (b == NULL) {
    lms__errf(err, "no host memory for the link board");
    return LMS_ERR_HOST_OOM;
  }
  snprintf(b->group, sizeof b->group, "%s", group);
  b->expect = ranks;
  b->slot = -1;
  char name[96];
  snprintf(name, sizeof name, "/lms-link-%ld-%s", (long)getuid(), group);
  lms_status_t st = lms__nodeshm_open_locked(
      &b->obj, name, sizeof(board_shm_t), BOARD_MAGIC, "--link-group", err);
  if (st != LMS_OK) {
    free(b);
    return st;
  }
  b->shm = lms__nodeshm_payload(&b->obj);
  if (sweep(b->shm) == 0) {
    /* No rank on it: what it says is an earlier job's, whose ranks died. */
    b->shm->ranks = 0;
    b->shm->joined = 0;
  }
  if (b->shm->ranks == 0) b->shm->ranks = ranks;
  if (b->shm->ranks != ranks) {
    lms__errf(err, "--link-group %s: %d ranks announced here, %d by the "
              "ranks already on it; give every rank the same "
              "--gpus-per-link", group, ranks, b->shm->ranks);
    st = LMS_ERR_INVALID;
  }
  for (int i = 0; st == LMS_OK && i < LMS__SHARE_MAX_GPUS && b->slot < 0; i++) {
    board_slot_t *s = &b->shm->slots[i];
    if (s->pid != 0) continue;
    memset(s, 0, sizeof *s);
    s->pid = getpid();
    s->start = lms__pid_start_time(s->pid);
    s->rank = rank;
    b->slot = i;
    b->shm->joined++;
  }
  int joined = b->shm->joined;
  lms__nodeshm_unlock(&b->obj);
  if (b->slot >= 0)
    LMS_LOG(INFO, DEVICE, "link group %s: rank %d joined (%d of %d)", group,
            rank, joined, ranks);
  if (st == LMS_OK && b->slot < 0) {
    lms__errf(err, "--link-group %s: the link already has %d ranks on it; "
              "accepted: at most %d", group, LMS__SHARE_MAX_GPUS,
              LMS__SHARE_MAX_GPUS);
    st = LMS_ERR_INVALID;
  }
  if (st != LMS_OK) {
    lms__nodeshm_close(&b->obj);
    free(b);
    return st;
  }
  *out = b;
  return LMS_OK;
}

static int by_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Closes the n - cap shortest idle gaps of v (n sorted, disjoint spans),
 * the earliest first among gaps alike, leaving cap spans.  O(n log n).
 * Returns the new count, or 0 with no memory for the gaps. */
static size_t coarsen(lms__copy_span_t *v, size_t n, size_t cap) {
  if (n <= cap) return n;
  uint64_t *gap = malloc((n - 1) * sizeof *gap);
  if (gap == NULL) return 0;
  for (size_t i = 1; i < n; i++) gap[i - 1] = v[i].start - v[i - 1].end;
  qsort(gap, n - 1, sizeof *gap, by_u64);
  /* Every gap under the (n - cap)th shortest closes, and as many equal to
   * it as make up the count. */
  uint64_t at = gap[n - cap - 1];
  size_t under = 0;
  for (size_t i = 0; i < n - cap; i++) under += gap[i] < at;
  size_t equal = n - cap - under, m = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t g = m > 0 ? v[i].start - v[m - 1].end : UINT64_MAX;
    if (g < at || (g == at && equal > 0)) {
      if (g == at) equal--;
      v[m - 1].end = v[i].end;
    } else {
      v[m++] = v[i];
    }
  }
  free(gap);
  return m;
}

lms_status_t lms__board_post(lms__link_board_t *b, const lms__copy_timeline_t *tl,
                             uint64_t origin) {
  if (lms__nodeshm_lock(&b->obj) != 0) return LMS_ERR_HOST_OOM;
  board_slot_t *me = &b->shm->slots[b->slot];
  posted_t *to = &me->posted[(me->round + 1) % 2];
  for (int d = 0; d < LMS__DIR_COUNT; d++) {
    size_t n = tl->n[d] < LMS__BOARD_SPANS ? tl->n[d] : LMS__BOARD_SPANS;
    if (tl->n[d] > LMS__BOARD_SPANS) {
      /* Coarsened in a copy, as the caller's timeline stays its own. */
      lms__copy_span_t *v = malloc(tl->n[d] * sizeof *v);
      if (v == NULL) {
        lms__nodeshm_unlock(&b->obj);
        return LMS_ERR_HOST_OOM;
      }
      memcpy(v, tl->busy[d], tl->n[d] * sizeof *v);
      n = coarsen(v, tl->n[d], LMS__BOARD_SPANS);
      if (n > 0) memcpy(to->spans[d], v, n * sizeof *v);
      free(v);
      if (n == 0) {
        lms__nodeshm_unlock(&b->obj);
        return LMS_ERR_HOST_OOM;
      }
    } else if (n > 0) {
      memcpy(to->spans[d], tl->busy[d], n * sizeof *tl->busy[d]);
    }
    to->n[d] = (uint32_t)n;
  }
  to->origin = origin;
  to->period = tl->period_ns;
  me->round++;
  lms__nodeshm_unlock(&b->obj);
  return LMS_OK;
}

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

lms_status_t lms__board_wait(lms__link_board_t *b, double timeout_s, char *err) {
  double until = seconds() + timeout_s;
  unsigned pause_us = 100;
  for (;;) {
    if (lms__nodeshm_lock(&b->obj) != 0) {
      lms__errf(err, "--link-group %s: cannot lock the link board", b->group);
      return LMS_ERR_HOST_OOM;
    }
    int live = sweep(b->shm), joined = b->shm->joined;
    uint64_t mine = b->shm->slots[b->slot].round;
    int behind = -1;
    for (int i = 0; i < LMS__SHARE_MAX_GPUS && behind < 0; i++) {
      const board_slot_t *s = &b->shm->slots[i];
      if (s->pid != 0 && i != b->slot && s->round < mine) behind = s->rank;
    }
    lms__nodeshm_unlock(&b->obj);
    /* Every rank announced came once; those that left since are not
     * waited for. */
    if (behind < 0 && joined >= b->expect) return LMS_OK;
    if (!b->waited) { /* once a run: every round may wait a little */
      if (behind >= 0)
        LMS_LOG(INFO, DEVICE, "link group %s: round %llu waits for rank %d",
                b->group, (unsigned long long)mine, behind);
      else
        LMS_LOG(INFO, DEVICE, "link group %s: waits for %d more ranks to "
                "join", b->group, b->expect - joined);
      b->waited = 1;
    }
    if (seconds() > until) {
      if (joined < b->expect)
        lms__errf(err, "--link-group %s: %d of the %d ranks announced "
                  "(--gpus-per-link) joined within %.0f s (%d still on the "
                  "link); start every rank with the same --link-group",
                  b->group, joined, b->expect, timeout_s, live);
      else
        lms__errf(err, "--link-group %s: rank %d did not finish its "
                  "iteration within %.0f s of this one", b->group, behind,
                  timeout_s);
      return LMS_ERR_BUSY;
    }
    /* The others take an iteration's wall time: back off to 5 ms. */
    usleep(pause_us);
    if (pause_us < 5000) pause_us *= 2;
  }
}

lms_status_t lms__board_others(lms__link_board_t *b, lms__board_view_t *v) {
  memset(v, 0, sizeof *v);
  if (lms__nodeshm_lock(&b->obj) != 0) return LMS_ERR_HOST_OOM;
  sweep(b->shm);
  lms_status_t st = LMS_OK;
  uint64_t round = b->shm->slots[b->slot].round;
  for (int i = 0; i < LMS__SHARE_MAX_GPUS && st == LMS_OK; i++) {
    const board_slot_t *s = &b->shm->slots[i];
    /* The round this rank posted last, or, before its first, theirs. */
    uint64_t r = round > 0 ? round : s->round;
    if (s->pid == 0 || i == b->slot || r == 0 || s->round < r) continue;
    const posted_t *p = &s->posted[r % 2];
    if (p->period == 0) continue;
    lms__copy_timeline_t *tl = &v->timeline[v->n];
    tl->period_ns = p->period;
    for (int d = 0; d < LMS__DIR_COUNT && st == LMS_OK; d++) {
      tl->busy[d] = malloc((p->n[d] ? p->n[d] : 1) * sizeof *tl->busy[d]);
      if (tl->busy[d] == NULL) {
        st = LMS_ERR_HOST_OOM;
        break;
      }
      memcpy(tl->busy[d], p->spans[d], p->n[d] * sizeof *tl->busy[d]);
      tl->n[d] = p->n[d];
    }
    v->origin[v->n] = p->origin;
    v->rank[v->n] = s->rank;
    v->n++;
  }
  lms__nodeshm_unlock(&b->obj);
  if (st != LMS_OK) lms__board_view_free(v);
  return st;
}

void lms__board_view_free(lms__board_view_t *v) {
  for (int j = 0; j < LMS__SHARE_MAX_GPUS; j++)
    lms__copy_timeline_free(&v->timeline[j]);
  v->n = 0;
}

void lms__board_leave(lms__link_board_t *b) {
  if (b == NULL) return;
  if (lms__nodeshm_lock(&b->obj) == 0) {
    b->shm->slots[b->slot].pid = 0;
    /* The last one out removes it, under the lock, so no one has just
     * joined this one. */
    if (sweep(b->shm) == 0) lms__nodeshm_remove(&b->obj);
    lms__nodeshm_unlock(&b->obj);
  }
  lms__nodeshm_close(&b->obj);
  free(b);
}
