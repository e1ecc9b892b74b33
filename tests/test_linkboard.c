/* test_linkboard.c - ranks of a node on one host link (Note [Ranks on one
 * link], src/replay/linkboard.c): what a rank posts is what the others
 * read, placed where it began, round for round even when one runs ahead;
 * a rank that dies (or came and left) is not waited for, nor a zombie;
 * ranks must announce the same count; one
 * that never comes makes the wait fail by name; a long timeline is
 * coarsened, shortest gaps first, without losing a busy moment; the last rank out removes the
 * board; and a copy beside two other GPUs with timelines of their own
 * moves at the share each moment gives it.
 *
 * Each test uses a group of its own name, so that tests running at once
 * (and any real lms job of this user) do not meet. */
#include <criterion/criterion.h>
#include "check.h"
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/link.h"
#include "device/device.h"
#include "replay/linkboard.h"

static char g_group[48];

static void group_up(void) {
  snprintf(g_group, sizeof g_group, "test-%ld", (long)getpid());
}

/* The board's object, gone once every rank left. */
static int board_exists(void) {
  char name[96];
  snprintf(name, sizeof name, "/lms-link-%ld-%s", (long)getuid(), g_group);
  int fd = shm_open(name, O_RDONLY, 0);
  if (fd >= 0) close(fd);
  return fd >= 0;
}

static void group_down(void) {
  char name[96];
  snprintf(name, sizeof name, "/lms-link-%ld-%s", (long)getuid(), g_group);
  shm_unlink(name);
}

/* A timeline of `period` ns from spans given relative to 0. */
static lms__copy_timeline_t timeline(uint64_t period,
                                     const lms__copy_span_t *h2d, size_t nh,
                                     const lms__copy_span_t *d2h, size_t nd) {
  const lms__copy_span_t *spans[LMS__DIR_COUNT] = {h2d, d2h};
  size_t n[LMS__DIR_COUNT] = {nh, nd};
  lms__copy_timeline_t tl;
  cr_assert(eq(int, lms__copy_timeline_build(&tl, 0, period, spans, n), LMS_OK));
  return tl;
}

static lms__link_board_t *join(int ranks, int rank) {
  lms__link_board_t *b = NULL;
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__board_join(g_group, ranks, rank, &b, err), LMS_OK),
            "%s", err);
  return b;
}

TestSuite(board, .init = group_up, .fini = group_down);

Test(board, others_read_what_was_posted) {
  lms__link_board_t *a = join(2, 0), *b = join(2, 1);
  lms__copy_span_t h2d[] = {{10, 20}, {40, 50}}, d2h[] = {{60, 70}};
  lms__copy_timeline_t tl = timeline(100, h2d, 2, d2h, 1);
  cr_assert(eq(int, lms__board_post(a, &tl, 5000), LMS_OK));
  char err[LMS__ERRBUF];
  /* b has posted nothing: a waits for it, and times out naming it. */
  cr_assert(eq(int, lms__board_wait(a, 0.05, err), LMS_ERR_BUSY));
  cr_assert(strstr(err, "rank 1 did not finish") != NULL, "%s", err);
  lms__copy_timeline_t none = timeline(100, NULL, 0, NULL, 0);
  cr_assert(eq(int, lms__board_post(b, &none, 5000), LMS_OK));
  cr_assert(eq(int, lms__board_wait(a, 1.0, err), LMS_OK), "%s", err);
  cr_assert(eq(int, lms__board_wait(b, 1.0, err), LMS_OK), "%s", err);
  lms__board_view_t v;
  cr_assert(eq(int, lms__board_others(b, &v), LMS_OK));
  cr_assert(eq(int, v.n, 1));
  cr_assert(eq(int, v.rank[0], 0));
  cr_assert(eq(u64, v.origin[0], 5000));
  cr_assert(eq(u64, v.timeline[0].period_ns, 100));
  cr_assert(eq(sz, v.timeline[0].n[LMS__DIR_H2D], 2));
  cr_assert(eq(u64, v.timeline[0].busy[LMS__DIR_H2D][1].start, 40));
  cr_assert(eq(u64, v.timeline[0].busy[LMS__DIR_H2D][1].end, 50));
  cr_assert(eq(sz, v.timeline[0].n[LMS__DIR_D2H], 1));
  cr_assert(eq(u64, v.timeline[0].busy[LMS__DIR_D2H][0].start, 60));
  lms__board_view_free(&v);
  /* a runs ahead and posts round 2 before b reads again: b still reads
   * the round it posted last, 1. */
  lms__copy_timeline_t later = timeline(300, NULL, 0, NULL, 0);
  cr_assert(eq(int, lms__board_post(a, &later, 9000), LMS_OK));
  cr_assert(eq(int, lms__board_others(b, &v), LMS_OK));
  cr_assert(eq(int, v.n, 1));
  cr_assert(eq(u64, v.origin[0], 5000));
  cr_assert(eq(u64, v.timeline[0].period_ns, 100));
  lms__board_view_free(&v);
  /* Once b posts round 2, it reads a's round 2. */
  cr_assert(eq(int, lms__board_post(b, &none, 9000), LMS_OK));
  cr_assert(eq(int, lms__board_others(b, &v), LMS_OK));
  cr_assert(eq(u64, v.origin[0], 9000));
  cr_assert(eq(u64, v.timeline[0].period_ns, 300));
  lms__board_view_free(&v);
  lms__copy_timeline_free(&later);
  lms__copy_timeline_free(&tl);
  lms__copy_timeline_free(&none);
  lms__board_leave(a);
  cr_assert(board_exists());
  lms__board_leave(b);
  cr_assert(not(board_exists()), "the last rank out removes the board");
}

Test(board, a_rank_that_never_comes_is_named) {
  lms__link_board_t *a = join(3, 0), *b = join(3, 1);
  lms__copy_timeline_t none = timeline(100, NULL, 0, NULL, 0);
  cr_assert(eq(int, lms__board_post(a, &none, 0), LMS_OK));
  cr_assert(eq(int, lms__board_post(b, &none, 0), LMS_OK));
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__board_wait(a, 0.05, err), LMS_ERR_BUSY));
  cr_assert(strstr(err, "2 of the 3 ranks announced") != NULL, "%s", err);
  lms__copy_timeline_free(&none);
  lms__board_leave(a);
  lms__board_leave(b);
}

Test(board, a_dead_rank_is_not_waited_for) {
  lms__link_board_t *a = join(2, 0);
  int go[2];
  cr_assert(eq(int, pipe(go), 0));
  pid_t child = fork();
  cr_assert(ge(int, child, 0));
  if (child == 0) {
    /* Joins, posts once, says so and dies without leaving. */
    lms__link_board_t *b = NULL;
    char err[LMS__ERRBUF];
    if (lms__board_join(g_group, 2, 1, &b, err) != LMS_OK) _exit(3);
    lms__copy_timeline_t none = timeline(100, NULL, 0, NULL, 0);
    if (lms__board_post(b, &none, 0) != LMS_OK) _exit(4);
    if (write(go[1], "x", 1) != 1) _exit(5);
    pause();
    _exit(0);
  }
  char c;
  cr_assert(eq(int, (int)read(go[0], &c, 1), 1));
  lms__copy_timeline_t none = timeline(100, NULL, 0, NULL, 0);
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__board_post(a, &none, 0), LMS_OK));
  cr_assert(eq(int, lms__board_wait(a, 1.0, err), LMS_OK), "%s", err);
  /* Round 2: the child will never post it. */
  cr_assert(eq(int, lms__board_post(a, &none, 0), LMS_OK));
  cr_assert(eq(int, lms__board_wait(a, 0.05, err), LMS_ERR_BUSY));
  kill(child, SIGKILL);
  /* Not reaped yet: a zombie, which is dead all the same. */
  siginfo_t info;
  cr_assert(eq(int, waitid(P_PID, (id_t)child, &info, WEXITED | WNOWAIT), 0));
  cr_assert(eq(int, lms__board_wait(a, 1.0, err), LMS_OK), "%s", err);
  lms__board_view_t v;
  cr_assert(eq(int, lms__board_others(a, &v), LMS_OK));
  cr_assert(eq(int, v.n, 0), "a dead rank's timeline is not shared");
  int status;
  cr_assert(eq(int, (int)waitpid(child, &status, 0), (int)child));
  lms__copy_timeline_free(&none);
  lms__board_leave(a);
  cr_assert(not(board_exists()));
  close(go[0]);
  close(go[1]);
}

Test(board, a_rank_that_came_and_left_is_not_waited_for) {
  lms__link_board_t *a = join(2, 0), *b = join(2, 1);
  lms__board_leave(b);
  lms__copy_timeline_t none = timeline(100, NULL, 0, NULL, 0);
  cr_assert(eq(int, lms__board_post(a, &none, 0), LMS_OK));
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__board_wait(a, 1.0, err), LMS_OK), "%s", err);
  lms__copy_timeline_free(&none);
  lms__board_leave(a);
}

Test(board, ranks_announced_alike) {
  lms__link_board_t *a = join(2, 0), *b = NULL;
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__board_join(g_group, 3, 1, &b, err), LMS_ERR_INVALID));
  cr_assert(strstr(err, "3 ranks announced here, 2 by the ranks already on "
                        "it") != NULL, "%s", err);
  lms__board_leave(a);
  /* The board went with its last rank: a new job may announce 3. */
  b = join(3, 0);
  lms__board_leave(b);
}

/* The H2D timeline of spans h2d (n, sorted) over `period`, posted by one
 * rank and read back by the other of a board of two, which both leave. */
static lms__board_view_t through_board(const lms__copy_span_t *h2d, size_t n,
                                       uint64_t period) {
  lms__copy_timeline_t tl = timeline(period, h2d, n, NULL, 0);
  cr_assert(eq(sz, tl.n[LMS__DIR_H2D], n));
  lms__link_board_t *a = join(2, 0), *b = join(2, 1);
  cr_assert(eq(int, lms__board_post(a, &tl, 0), LMS_OK));
  lms__board_view_t v;
  cr_assert(eq(int, lms__board_others(b, &v), LMS_OK));
  cr_assert(eq(int, v.n, 1));
  lms__copy_timeline_free(&tl);
  lms__board_leave(a);
  lms__board_leave(b);
  return v;
}

Test(board, gaps_all_different_close_shortest_first) {
  /* Spans of 10 ns with gaps all different (a permutation of 1 .. N - 1
   * ns): the 100 shortest close, at once, and no longer one does. */
  enum { N = LMS__BOARD_SPANS + 100 };
  static lms__copy_span_t h2d[N];
  static uint64_t gap[N];
  for (size_t i = 0; i + 1 < N; i++) gap[i] = 1 + (i * 7919) % (N - 1);
  uint64_t t = 0;
  for (size_t i = 0; i < N; i++) {
    h2d[i] = (lms__copy_span_t){t, t + 10};
    t += 10 + (i + 1 < N ? gap[i] : 1);
  }
  lms__board_view_t v = through_board(h2d, N, t);
  const lms__copy_timeline_t *got = &v.timeline[0];
  cr_assert(eq(sz, got->n[LMS__DIR_H2D], LMS__BOARD_SPANS));
  for (size_t i = 0; i + 1 < N; i++) {
    double next, mid = (double)h2d[i].end + (double)gap[i] / 2;
    int busy = lms__copy_timeline_at(got, LMS__DIR_H2D, mid, &next);
    cr_assert(eq(int, busy, gap[i] <= 100), "gap %zu of %llu ns", i,
              (unsigned long long)gap[i]);
    cr_assert(eq(int, lms__copy_timeline_at(got, LMS__DIR_H2D,
                                            (double)h2d[i].start + 5, &next),
                 1));
  }
  lms__board_view_free(&v);
}

Test(board, a_long_timeline_is_coarsened_not_lost) {
  /* Twice the spans a slot holds, gaps of 3 and 1 ns alternating: the
   * short gaps close, every busy moment stays busy. */
  enum { N = 2 * LMS__BOARD_SPANS };
  static lms__copy_span_t h2d[N];
  uint64_t t = 0;
  for (size_t i = 0; i < N; i++) {
    h2d[i] = (lms__copy_span_t){t, t + 10};
    t += 10 + (i % 2 ? 3 : 1);
  }
  lms__board_view_t v = through_board(h2d, N, t);
  const lms__copy_timeline_t *got = &v.timeline[0];
  cr_assert(le(sz, got->n[LMS__DIR_H2D], LMS__BOARD_SPANS));
  cr_assert(eq(sz, got->n[LMS__DIR_H2D], N / 2));
  for (size_t i = 0; i < N; i++) {
    double next;
    cr_assert(eq(int, lms__copy_timeline_at(got, LMS__DIR_H2D,
                                            (double)h2d[i].start + 5, &next),
                 1), "span %zu lost", i);
  }
  /* The long gaps stay idle. */
  double next;
  cr_assert(eq(int, lms__copy_timeline_at(got, LMS__DIR_H2D, 22.5, &next), 0));
  lms__board_view_free(&v);
}

Test(board, bad_groups_and_counts_are_refused) {
  lms__link_board_t *b = NULL;
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__board_join("a/b", 2, 0, &b, err), LMS_ERR_INVALID));
  cr_assert(strstr(err, "accepted: 1 to 40") != NULL, "%s", err);
  cr_assert(eq(int, lms__board_join("", 2, 0, &b, err), LMS_ERR_INVALID));
  cr_assert(eq(int, lms__board_join(g_group, 1, 0, &b, err), LMS_ERR_INVALID));
  cr_assert(strstr(err, "accepted: 2 to 8") != NULL, "%s", err);
  cr_assert(eq(int, lms__board_join(g_group, 9, 0, &b, err), LMS_ERR_INVALID));
  cr_assert(eq(ptr, b, NULL));
  /* A ninth rank finds the board full. */
  lms__link_board_t *r[LMS__SHARE_MAX_GPUS];
  for (int i = 0; i < LMS__SHARE_MAX_GPUS; i++) r[i] = join(8, i);
  cr_assert(eq(int, lms__board_join(g_group, 8, 8, &b, err), LMS_ERR_INVALID));
  cr_assert(strstr(err, "already has 8 ranks") != NULL, "%s", err);
  for (int i = 0; i < LMS__SHARE_MAX_GPUS; i++) lms__board_leave(r[i]);
  cr_assert(not(board_exists()));
}

/* pcie3's copy of n bytes host to device at `start` beside sh. */
static uint64_t copy_ns(const lms__link_share_t *sh, uint64_t start, size_t n) {
  lms__link_t l;
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__link_parse("pcie3", &l, err), LMS_OK));
  return lms__share_copy_ns(sh, LMS__DIR_H2D, start, l.latency_us, l.h2d_gbps,
                            n);
}

Test(board, each_other_gpu_follows_its_own_timeline) {
  /* Two others with periods of 10 ms: one busy over [0, 5) ms, the
   * other over [5, 10) ms.  A copy of 12.2e6 bytes (1 ms alone, plus 10
   * us of latency) from t = 0 always has one of them beside it: half the
   * rate, 2 ms.  Both following the first one's timeline instead: it is
   * 2 ms too, but at t = 6 ms both are idle and it takes 1 ms alone,
   * where with their own timelines it is 2 ms. */
  const uint64_t ms = 1000000;
  lms__copy_span_t first[] = {{0, 5 * ms}}, second[] = {{5 * ms, 10 * ms}};
  lms__copy_timeline_t a = timeline(10 * ms, first, 1, NULL, 0);
  lms__copy_timeline_t b = timeline(10 * ms, second, 1, NULL, 0);
  lms__link_share_t own = {.others = 2, .each = {&a, &b}};
  lms__link_share_t same = {.others = 2, .timeline = &a};
  cr_assert(eq(u64, copy_ns(&own, 0, 12200000), 2010000));
  cr_assert(eq(u64, copy_ns(&own, 6 * ms, 12200000), 2010000));
  cr_assert(eq(u64, copy_ns(&same, 6 * ms, 12200000), 1010000));
  /* From 4 ms: the first until 5 ms, the second from then, one always. */
  cr_assert(eq(u64, copy_ns(&own, 4 * ms, 12200000), 2010000));
  /* Shifted by a phase of 5 ms, the second lies over the first: at t = 6
   * ms neither copies and at t = 0 both do (a third of the rate). */
  own.phase_ns[1] = 5 * ms;
  cr_assert(eq(u64, copy_ns(&own, 6 * ms, 12200000), 1010000));
  cr_assert(eq(u64, copy_ns(&own, 0, 12200000), 3010000));
  lms__copy_timeline_free(&a);
  lms__copy_timeline_free(&b);
}
