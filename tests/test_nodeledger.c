/* test_nodeledger.c - one pinned budget for the lms processes of a node
 * (Note [One host budget per node], src/alloc/nodeledger.c): processes
 * made with fork share it, a process killed holding bytes gives them back
 * to the next one that asks, one killed holding the ledger's lock leaves
 * it usable, the last one out removes the ledger, and
 * through the API a second process past the budget gets a clean host
 * out-of-memory error while the first one's chunks keep their bytes.
 *
 * Each test uses a ledger of its own name, so that tests running at once
 * (and any real lms job of this user) do not meet. */
#include <criterion/criterion.h>
#include "check.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc/alloc.h"
#include "core/status.h"
#include "support.h"

#define MIB (1ull << 20)

static char g_name[64];

static void name_up(void) {
  snprintf(g_name, sizeof g_name, "/lms-test-%ld", (long)getpid());
  lms__node_ledger_name = g_name;
}

static void name_down(void) { shm_unlink(g_name); }

/* The child's side of a pipe pair: sends one byte, or waits for one. */
static void send1(int fd) { cr_assert(eq(int, (int)write(fd, "x", 1), 1)); }
static void wait1(int fd) {
  char c;
  ssize_t n;
  while ((n = read(fd, &c, 1)) < 0 && errno == EINTR) {
  }
  cr_assert(eq(int, (int)n, 1));
}

/* Kills child and reaps it, checking that the signal is what ended it. */
static void kill_child(pid_t child) {
  cr_assert(eq(int, kill(child, SIGKILL), 0));
  int status = 0;
  cr_assert(eq(int, (int)waitpid(child, &status, 0), (int)child));
  int killed = WIFSIGNALED(status);
  cr_assert(killed, "child %d", status);
}

/* Reserves bytes through l, after which the node holds exactly those
 * bytes, for one process. */
static void reserve_alone(lms__node_ledger_t *l, uint64_t bytes) {
  char err[LMS__ERRBUF] = "";
  cr_assert(eq(int, lms__node_ledger_reserve(l, bytes, err), LMS_OK), "%s",
            err);
  int n = 0;
  cr_assert(eq(u64, lms__node_ledger_total(l, &n), bytes));
  cr_assert(eq(int, n, 1));
}

/* A pair of pipes between the parent and a forked child: p.to_child and
 * p.from_child are the parent's ends, p.in and p.out the child's.  Each
 * side closes the other's ends, so that a parent that fails and exits
 * ends the child's read, and a child that dies ends the parent's. */
typedef struct piped {
  int to_child, from_child, in, out;
} piped_t;

static pid_t fork_piped(piped_t *p) {
  int a[2], b[2];
  cr_assert(eq(int, pipe(a), 0));
  cr_assert(eq(int, pipe(b), 0));
  pid_t pid = fork();
  cr_assert(ge(int, pid, 0));
  if (pid == 0) {
    close(a[1]);
    close(b[0]);
    *p = (piped_t){.to_child = -1, .from_child = -1, .in = a[0], .out = b[1]};
  } else {
    close(a[0]);
    close(b[1]);
    *p = (piped_t){.to_child = a[1], .from_child = b[0], .in = -1, .out = -1};
  }
  return pid;
}

/* A child that joins, reserves `bytes`, says so, then waits to be told to
 * leave (or is killed).  Its exit status is 0 when all went well. */
static pid_t holder(uint64_t bytes, uint64_t limit, int *to_child,
                    int *from_child) {
  piped_t p;
  pid_t pid = fork_piped(&p);
  if (pid == 0) {
    char err[LMS__ERRBUF];
    lms__node_ledger_t *l = NULL;
    if (lms__node_ledger_join(NULL, limit, &l, err) != LMS_OK) _exit(2);
    if (lms__node_ledger_reserve(l, bytes, err) != LMS_OK) _exit(3);
    if (write(p.out, "x", 1) != 1) _exit(4);
    char c;
    if (read(p.in, &c, 1) != 1) _exit(5);
    lms__node_ledger_leave(l);
    _exit(0);
  }
  *to_child = p.to_child;
  *from_child = p.from_child;
  return pid;
}

Test(nodeledger, two_processes_share_one_budget, .init = name_up,
     .fini = name_down) {
  char err[LMS__ERRBUF] = "";
  lms__node_ledger_t *l = NULL;
  cr_assert(eq(int, lms__node_ledger_join(NULL, 100 * MIB, &l, err), LMS_OK),
            "%s", err);
  int to, from;
  pid_t child = holder(60 * MIB, 100 * MIB, &to, &from);
  wait1(from);
  int n = 0;
  cr_assert(eq(u64, lms__node_ledger_total(l, &n), 60 * MIB));
  cr_assert(eq(int, n, 2));
  /* 60 + 50 > 100: refused, saying what the node holds and the limit. */
  cr_assert(eq(int, lms__node_ledger_reserve(l, 50 * MIB, err),
               LMS_ERR_HOST_OOM));
  cr_assert(not(eq(ptr, strstr(err, "its 2 lms processes hold 62914560"),
                   NULL)), "%s", err);
  cr_assert(not(eq(ptr, strstr(err, "--node-host-limit of 104857600"), NULL)),
            "%s", err);
  cr_assert(eq(int, lms__node_ledger_reserve(l, 40 * MIB, err), LMS_OK));
  cr_assert(eq(u64, lms__node_ledger_total(l, &n), 100 * MIB));
  send1(to);
  int status = 0;
  cr_assert(eq(int, (int)waitpid(child, &status, 0), (int)child));
  int clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  cr_assert(clean, "child %d", status);
  /* The child left: its 60 MiB are the node's again. */
  cr_assert(eq(u64, lms__node_ledger_total(l, &n), 40 * MIB));
  cr_assert(eq(int, n, 1));
  cr_assert(eq(int, lms__node_ledger_reserve(l, 60 * MIB, err), LMS_OK));
  lms__node_ledger_leave(l);
}

Test(nodeledger, a_killed_process_gives_its_bytes_back, .init = name_up,
     .fini = name_down) {
  char err[LMS__ERRBUF] = "";
  lms__node_ledger_t *l = NULL;
  cr_assert(eq(int, lms__node_ledger_join(NULL, 100 * MIB, &l, err), LMS_OK));
  int to, from;
  pid_t child = holder(80 * MIB, 100 * MIB, &to, &from);
  wait1(from);
  cr_assert(eq(int, lms__node_ledger_reserve(l, 80 * MIB, err),
               LMS_ERR_HOST_OOM));
  /* Killed mid-run: it never leaves. */
  kill_child(child);
  reserve_alone(l, 80 * MIB);
  close(to);
  lms__node_ledger_leave(l);
}

Test(nodeledger, a_process_killed_holding_the_lock_leaves_it_usable,
     .init = name_up, .fini = name_down, .timeout = 60) {
  /* A rank killed in the middle of an update, the lock held and its
   * bytes booked: the next process to ask takes the abandoned lock, finds
   * the dead rank's bytes free, and the ledger goes on working. */
  char err[LMS__ERRBUF] = "";
  lms__node_ledger_t *l = NULL;
  cr_assert(eq(int, lms__node_ledger_join(NULL, 100 * MIB, &l, err), LMS_OK));
  piped_t p;
  pid_t child = fork_piped(&p);
  if (child == 0) {
    lms__node_ledger_t *c = NULL;
    if (lms__node_ledger_join(NULL, 100 * MIB, &c, err) != LMS_OK) _exit(2);
    if (lms__node_ledger_reserve(c, 70 * MIB, err) != LMS_OK) _exit(3);
    lms__node_ledger_hold_for_test(c);
    if (write(p.out, "x", 1) != 1) _exit(4);
    for (;;) pause();
  }
  wait1(p.from_child);
  kill_child(child);
  /* Had the lock not been recovered, this would block for ever (the test
   * would time out) or fail. */
  reserve_alone(l, 90 * MIB);
  /* And again: the lock is whole, not merely taken once. */
  lms__node_ledger_release(l, 90 * MIB);
  cr_assert(eq(int, lms__node_ledger_reserve(l, 100 * MIB, err), LMS_OK));
  cr_assert(eq(int, lms__node_ledger_reserve(l, 1, err), LMS_ERR_HOST_OOM));
  close(p.to_child);
  close(p.from_child);
  lms__node_ledger_leave(l);
}

Test(nodeledger, the_last_one_out_removes_it, .init = name_up,
     .fini = name_down) {
  char err[LMS__ERRBUF] = "";
  lms__node_ledger_t *a = NULL, *b = NULL;
  cr_assert(eq(int, lms__node_ledger_join(NULL, 10 * MIB, &a, err), LMS_OK));
  cr_assert(eq(int, lms__node_ledger_join(NULL, 10 * MIB, &b, err), LMS_OK));
  lms__node_ledger_leave(a);
  int fd = shm_open(g_name, O_RDWR, 0600);
  cr_assert(ge(int, fd, 0), "gone while one is still in it");
  close(fd);
  lms__node_ledger_leave(b);
  cr_assert(lt(int, shm_open(g_name, O_RDWR, 0600), 0));
  cr_assert(eq(int, errno, ENOENT));
}

/* Through the API: host-homed chunks (-lms 0) on the simulated device. */
static lms_ctx_t *ctx_with_node_limit(const char *limit) {
  lms_options_t *o = NULL;
  lms_ctx_t *ctx = NULL;
  cr_assert(eq(int, lms_options_create(&o), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "device", "sim"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "gpu-limit", "256MiB"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "lms", "0"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "log", "none"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "node-host-limit", limit), LMS_OK));
  cr_assert(eq(int, lms_ctx_create(o, &ctx), LMS_OK));
  lms_options_destroy(o);
  return ctx;
}

Test(nodeledger, a_second_rank_past_the_budget_gets_a_clean_error,
     .init = name_up, .fini = name_down, .timeout = 120) {
  piped_t p;
  pid_t pid = fork_piped(&p);
  if (pid == 0) {
    /* Rank 1: fills most of the node's budget and keeps its bytes. */
    lms_ctx_t *ctx = ctx_with_node_limit("96MiB");
    lms_stream_t s;
    if (ctx == NULL || lms_stream_create(ctx, &s) != LMS_OK) _exit(2);
    lms_chunk_t *c[12];
    uint64_t sum[12];
    lms_status_t st;
    for (int i = 0; i < 12; i++) {
      if (lms_alloc(ctx, 4 * MIB, &c[i]) != LMS_OK) _exit(3);
      sum[i] = lms_test_write(ctx, c[i], s, 100 + (uint64_t)i, &st);
      if (st != LMS_OK) _exit(4);
    }
    if (write(p.out, "x", 1) != 1) _exit(5);
    char ch;
    if (read(p.in, &ch, 1) != 1) _exit(6);
    /* Nothing lost while the other rank was refused. */
    for (int i = 0; i < 12; i++)
      if (lms_test_read(ctx, c[i], s, &st) != sum[i] || st != LMS_OK)
        _exit(7);
    lms_ctx_destroy(ctx);
    _exit(0);
  }
  wait1(p.from_child);
  /* Rank 2: the same 48 MiB no longer fit beside rank 1's. */
  lms_ctx_t *ctx = ctx_with_node_limit("96MiB");
  lms_stream_t s;
  cr_assert(eq(int, lms_stream_create(ctx, &s), LMS_OK));
  lms_chunk_t *c[12];
  lms_status_t st = LMS_OK;
  int made = 0;
  for (; made < 12; made++) {
    st = lms_alloc(ctx, 4 * MIB, &c[made]);
    if (st != LMS_OK) break;
  }
  cr_assert(eq(int, st, LMS_ERR_HOST_OOM), "all 12 chunks fitted");
  const char *why = lms_ctx_last_error(ctx);
  cr_assert(not(eq(ptr, strstr(why, "host out of memory for the node"), NULL)),
            "%s", why);
  cr_assert(not(eq(ptr, strstr(why, "--node-host-limit of 100663296"), NULL)),
            "%s", why);
  /* What it did get keeps its bytes. */
  for (int i = 0; i < made; i++) {
    uint64_t w = lms_test_write(ctx, c[i], s, 7 + (uint64_t)i, &st);
    cr_assert(eq(int, st, LMS_OK));
    cr_assert(eq(u64, lms_test_read(ctx, c[i], s, &st), w));
  }
  send1(p.to_child);
  int status = 0;
  cr_assert(eq(int, (int)waitpid(pid, &status, 0), (int)pid));
  int clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  cr_assert(clean, "rank 1 exited %d (7: its bytes changed)",
            WEXITSTATUS(status));
  /* Rank 1 is gone: the rest fits now. */
  for (; made < 12; made++)
    cr_assert(eq(int, lms_alloc(ctx, 4 * MIB, &c[made]), LMS_OK), "%s",
              lms_ctx_last_error(ctx));
  lms_ctx_destroy(ctx);
}
