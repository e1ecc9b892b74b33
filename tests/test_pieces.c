/* test_pieces.c - chunks of pieces (Note [Chunks of pieces] in
 * swap/residency.c): a large chunk kept and moved in pieces shows one
 * address whose bytes survive pieces leaving and coming back, lookups find
 * the chunk, a failure part way through an acquire leaves nothing pinned,
 * and without --piece-size chunks stay whole. */
#include <criterion/criterion.h>
#include "check.h"
#include <stdio.h>
#include <string.h>

#include "api/ctx.h"
#include "device/device.h"
#include "graph/graph.h"
#include "support.h"

#define MIB (1u << 20)

/* A context on the simulated device with a 64 MiB budget, everything
 * host-homed (-lms 0), pieces of `piece` (NULL: none), and `fail` armed
 * (NULL: nothing). */
static lms_ctx_t *open_ctx(const char *piece, const char *fail,
                           lms_stream_t *s) {
  lms_options_t *o = NULL;
  lms_ctx_t *ctx = NULL;
  cr_assert(eq(int, lms_options_create(&o), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "device", "sim"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "gpu-limit", "64MiB"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "lms", "0"), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "log", "none"), LMS_OK));
  if (piece != NULL)
    cr_assert(eq(int, lms_options_set(o, "piece-size", piece), LMS_OK));
  if (fail != NULL)
    cr_assert(eq(int, lms_options_set(o, "fail", fail), LMS_OK));
  cr_assert(eq(int, lms_ctx_create(o, &ctx), LMS_OK));
  lms_options_destroy(o);
  cr_assert(eq(int, lms_stream_create(ctx, s), LMS_OK));
  return ctx;
}

static lms_chunk_t *alloc(lms_ctx_t *ctx, size_t n) {
  lms_chunk_t *c = NULL;
  cr_assert(eq(int, lms_alloc(ctx, n, &c), LMS_OK), "%s",
            lms_ctx_last_error(ctx));
  return c;
}

/* A chunk of n bytes, written with the pattern of `seed`. */
static lms_chunk_t *written(lms_ctx_t *ctx, lms_stream_t s, size_t n,
                            uint64_t seed) {
  lms_chunk_t *c = alloc(ctx, n);
  lms_status_t st;
  lms_test_write(ctx, c, s, seed, &st);
  cr_assert(eq(int, st, LMS_OK), "%s", lms_ctx_last_error(ctx));
  return c;
}

static unsigned resident_pieces(const lms_chunk_t *c) {
  unsigned n = 0;
  for (uint32_t i = 0; i < c->npieces; i++) n += c->pieces[i]->dptr != NULL;
  return n;
}

Test(pieces, a_chunk_of_an_eighth_of_the_budget_is_made_of_pieces) {
  lms_stream_t s;
  lms_ctx_t *ctx = open_ctx("4MiB", NULL, &s);
  /* 64 MiB budget: an eighth is 8 MiB.  27 MiB: six pieces of 4 MiB and
   * one of 3; 24 MiB and 512 bytes: the remainder joins the last piece;
   * 7 MiB: under an eighth, whole. */
  lms_chunk_t *a = alloc(ctx, 27 * MIB);
  lms_chunk_t *b = alloc(ctx, 24 * MIB + 512);
  lms_chunk_t *w = alloc(ctx, 7 * MIB);
  cr_assert(eq(u32, a->npieces, 7));
  cr_assert(eq(sz, a->pieces[6]->size, 3 * MIB));
  cr_assert(eq(u32, b->npieces, 6));
  cr_assert(eq(sz, b->pieces[5]->size, 4 * MIB + 512));
  cr_assert(eq(u32, w->npieces, 0));
  size_t sum = 0;
  for (uint32_t i = 0; i < a->npieces; i++) {
    cr_assert(eq(sz, a->pieces[i]->piece_off, sum));
    sum += a->pieces[i]->size;
  }
  cr_assert(eq(sz, sum, 27 * MIB));
  lms_stats_t st = lms_test_stats(ctx);
  cr_assert(eq(i64, st.chunks.current, 3), "the program sees three chunks");
  cr_assert(eq(i64, st.host_allocated.current, 58 * MIB + 512));
  cr_assert(eq(int, lms_free(ctx, a), LMS_OK));
  cr_assert(eq(int, lms_free(ctx, b), LMS_OK));
  cr_assert(eq(int, lms_free(ctx, w), LMS_OK));
  st = lms_test_stats(ctx);
  cr_assert(eq(i64, st.chunks.current, 0));
  cr_assert(eq(i64, st.host_allocated.current, 0));
  cr_assert(eq(i64, st.device_allocated.current, 0));
  cr_assert(eq(int, lms_test_close(ctx, s), LMS_OK));
}

/* --piece-size auto: 32 MiB pieces, of chunks of at least half the
 * budget only (Note [Pieces where whole chunks take turns]). */
Test(pieces, auto_cuts_only_chunks_of_half_the_budget) {
  lms_stream_t s;
  lms_ctx_t *ctx = open_ctx("auto", NULL, &s);
  /* 64 MiB budget: half is 32 MiB.  40 MiB: a piece of 32 MiB and one of
   * 8; 33 MiB: whole, since the remainder would join the one piece;
   * 31 MiB (over an eighth): whole. */
  lms_chunk_t *a = alloc(ctx, 40 * MIB);
  cr_assert(eq(u32, a->npieces, 2));
  cr_assert(eq(sz, a->pieces[0]->size, 32 * MIB));
  cr_assert(eq(sz, a->pieces[1]->size, 8 * MIB));
  cr_assert(eq(int, lms_free(ctx, a), LMS_OK));
  lms_chunk_t *b = alloc(ctx, 33 * MIB);
  cr_assert(eq(u32, b->npieces, 0), "a chunk of one piece stays whole");
  cr_assert(eq(int, lms_free(ctx, b), LMS_OK));
  lms_chunk_t *c = alloc(ctx, 31 * MIB);
  cr_assert(eq(u32, c->npieces, 0));
  cr_assert(eq(int, lms_free(ctx, c), LMS_OK));
  cr_assert(eq(int, lms_test_close(ctx, s), LMS_OK));
}

/* The workload cut as auto cuts it, and the option says what it holds. */
Test(pieces, auto_cuts_a_workload_as_the_runtime_does) {
  lms_options_t *o = NULL;
  cr_assert(eq(int, lms_options_create(&o), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "piece-size", "AUTO"), LMS_OK));
  char buf[8192];
  lms_options_describe(o, buf, sizeof buf);
  cr_assert(not(eq(ptr, strstr(buf, "auto (32 MiB pieces"), NULL)), "%s", buf);
  lms_options_destroy(o);
  lms__workload_t w, p;
  lms__wl_init(&w, "w");
  lms__wl_init(&p, NULL);
  uint32_t a, b;
  cr_assert(eq(int, lms__wl_add_chunk(&w, 100 * MIB, 0, "a", &a), LMS_OK));
  cr_assert(eq(int, lms__wl_add_chunk(&w, 60 * MIB, 0, "b", &b), LMS_OK));
  cr_assert(eq(int, lms__wl_add_step(&w, 1000, "s0"), LMS_OK));
  cr_assert(eq(int, lms__wl_add_ref(&w, a, LMS_ACCESS_READ), LMS_OK));
  cr_assert(eq(int, lms__wl_add_ref(&w, b, LMS_ACCESS_READ), LMS_OK));
  uint32_t split = 0;
  cr_assert(eq(int, lms__wl_pieces(&w, LMS__PIECE_AUTO, LMS__PIECE_DIV_AUTO,
                                   128 * MIB, &p, &split), LMS_OK));
  cr_assert(eq(u32, split, 1), "60 MiB is under half of 128");
  cr_assert(eq(u32, p.nchunks, 4 + 1));
  cr_assert(eq(u64, p.chunks[3].size, 4 * MIB));
  cr_assert(eq(u64, p.chunks[4].size, 60 * MIB));
  lms__wl_free(&p);
  lms__wl_free(&w);
}

Test(pieces, without_the_option_chunks_stay_whole) {
  lms_stream_t s;
  lms_ctx_t *ctx = open_ctx(NULL, NULL, &s);
  lms_chunk_t *a = alloc(ctx, 27 * MIB);
  cr_assert(eq(u32, a->npieces, 0));
  cr_assert(eq(int, lms_free(ctx, a), LMS_OK));
  cr_assert(eq(int, lms_test_close(ctx, s), LMS_OK));
}

/* Two chunks of 27 MiB and a third of 20 MiB cannot all stay in 64 MiB:
 * acquiring one after another pushes pieces of the others out, some but
 * not all of a chunk, and every byte comes back. */
Test(pieces, bytes_survive_pieces_leaving_and_coming_back) {
  lms_stream_t s;
  lms_ctx_t *ctx = open_ctx("4MiB", NULL, &s);
  enum { N = 3 };
  size_t size[N] = {27 * MIB, 27 * MIB, 20 * MIB + 4096};
  lms_chunk_t *c[N];
  uint64_t sum[N];
  lms_status_t st;
  for (int i = 0; i < N; i++) {
    c[i] = alloc(ctx, size[i]);
    cr_assert(gt(u32, c[i]->npieces, 1));
    sum[i] = lms_test_write(ctx, c[i], s, (uint64_t)i + 11, &st);
    cr_assert(eq(int, st, LMS_OK), "%s", lms_ctx_last_error(ctx));
  }
  int partial = 0;
  for (int round = 0; round < 4; round++)
    for (int i = 0; i < N; i++) {
      for (int j = 0; j < N; j++) {
        unsigned r = resident_pieces(c[j]);
        partial |= r > 0 && r < c[j]->npieces;
      }
      cr_assert(eq(u64, lms_test_read(ctx, c[i], s, &st), sum[i]),
                "chunk %d, round %d", i, round);
      cr_assert(eq(int, st, LMS_OK), "%s", lms_ctx_last_error(ctx));
      if (round == 1) {
        /* Written again while some pieces of the others are out. */
        sum[i] = lms_test_write(ctx, c[i], s, (uint64_t)(round * 10 + i), &st);
        cr_assert(eq(int, st, LMS_OK), "%s", lms_ctx_last_error(ctx));
      }
    }
  cr_assert(partial, "some chunk was seen with some pieces on the device "
                     "and some not");
  lms_stats_t a = lms_test_stats(ctx);
  cr_assert(gt(i64, a.swaps_out.total, 0));
  cr_assert(le(i64, a.device_reserved.peak, 64 * MIB));
  for (int i = 0; i < N; i++) cr_assert(eq(int, lms_free(ctx, c[i]), LMS_OK));
  cr_assert(eq(int, lms_test_close(ctx, s), LMS_OK));
}

Test(pieces, one_address_and_lookups_find_the_chunk) {
  lms_stream_t s;
  lms_ctx_t *ctx = open_ctx("4MiB", NULL, &s);
  lms_chunk_t *a = alloc(ctx, 27 * MIB);
  void *p = NULL, *q = NULL;
  cr_assert(eq(int, lms_acquire(ctx, a, s, LMS_ACCESS_WRITE, &p), LMS_OK));
  cr_assert(eq(ptr, p, a->va));
  cr_assert(lms_chunk_resident(ctx, a));
  /* The last byte of one piece and the first of the next are neighbours
   * at the chunk's address. */
  unsigned char *b = p;
  b[4 * MIB - 1] = 0xa5;
  b[4 * MIB] = 0x5a;
  cr_assert(eq(int, lms_release(ctx, a, s), LMS_OK));
  lms_chunk_t *found = NULL;
  size_t off = 0;
  cr_assert(eq(int, lms_chunk_lookup(ctx, b + 5 * MIB + 3, &found, &off),
               LMS_OK));
  cr_assert(eq(ptr, found, a));
  cr_assert(eq(sz, off, 5 * MIB + 3));
  cr_assert(eq(int, lms_chunk_lookup(ctx, (char *)a->home + 9, &found, &off),
               LMS_OK));
  cr_assert(eq(ptr, found, a));
  cr_assert(eq(int, lms_acquire(ctx, a, s, LMS_ACCESS_READ, &q), LMS_OK));
  cr_assert(eq(ptr, q, p), "the address stays while the chunk lives");
  cr_assert(eq(u8, ((unsigned char *)q)[4 * MIB - 1], 0xa5));
  cr_assert(eq(u8, ((unsigned char *)q)[4 * MIB], 0x5a));
  cr_assert(eq(int, lms_free(ctx, a), LMS_ERR_BUSY), "acquired: refused");
  cr_assert(eq(int, lms_release(ctx, a, s), LMS_OK));
  cr_assert(eq(int, lms_release(ctx, a, s), LMS_ERR_INVALID));
  cr_assert(eq(int, lms_free(ctx, a), LMS_OK));
  cr_assert(eq(int, lms_test_close(ctx, s), LMS_OK));
}

static uint64_t dev_map_calls(lms_ctx_t *ctx) {
  lms__sim_report_t r;
  memset(&r, 0, sizeof r);
  lms__sim_report(lms__dev_unwrap(ctx->dev), &r);
  return r.calls[LMS__DEVOP_dev_map];
}

/* Neither a nor any of its pieces is pinned. */
static void assert_unpinned(const lms_chunk_t *a) {
  cr_assert(eq(int, a->pins, 0));
  for (uint32_t i = 0; i < a->npieces; i++)
    cr_assert(eq(int, a->pieces[i]->pins, 0), "piece %u left pinned", i);
}

/* a still holds what summed to `sum`; then it is freed. */
static void assert_holds_then_free(lms_ctx_t *ctx, lms_chunk_t *a,
                                   lms_stream_t s, uint64_t sum) {
  lms_status_t st;
  cr_assert(eq(u64, lms_test_read(ctx, a, s, &st), sum));
  cr_assert(eq(int, st, LMS_OK), "%s", lms_ctx_last_error(ctx));
  cr_assert(eq(int, lms_free(ctx, a), LMS_OK), "%s", lms_ctx_last_error(ctx));
}

/* A context with 4 MiB pieces, device call `op`'s call `fail` made to
 * fail (0: none), and a (27 MiB, seven pieces) written: *sum is what it
 * holds. */
static lms_ctx_t *open_with_a(const char *op, int fail, lms_stream_t *s,
                              lms_chunk_t **a, uint64_t *sum) {
  char spec[48];
  snprintf(spec, sizeof spec, "%s:%d", op, fail);
  lms_ctx_t *ctx = open_ctx("4MiB", fail > 0 ? spec : NULL, s);
  *a = alloc(ctx, 27 * MIB);
  lms_status_t st;
  *sum = lms_test_write(ctx, *a, *s, 5, &st);
  cr_assert(eq(int, st, LMS_OK), "%s", lms_ctx_last_error(ctx));
  return ctx;
}

/* Writes a (27 MiB, seven pieces), pushes some of it out with seven
 * whole chunks, each larger than any block before it (so that room is
 * made from the oldest chunks, a's pieces, not by taking a block the size
 * of a newer one), and acquires it again, with the dev_map call `fail`
 * made to fail (0: none).  *before and *during: the dev_map calls before
 * that acquire and in it.  Returns the acquire's status; checks that
 * nothing is left pinned and every byte is there afterwards. */
static lms_status_t push_out_and_back(int fail, uint64_t *before,
                                      uint64_t *during) {
  lms_stream_t s;
  lms_chunk_t *a = NULL;
  uint64_t sum = 0;
  lms_ctx_t *ctx = open_with_a("dev_map", fail, &s, &a, &sum);
  lms_status_t st;
  lms_chunk_t *w[7];
  for (int i = 0; i < 7; i++) {
    w[i] = alloc(ctx, 5 * MIB + (size_t)i * MIB / 2);
    lms_test_write(ctx, w[i], s, 6 + (uint64_t)i, &st);
    cr_assert(eq(int, st, LMS_OK), "%s", lms_ctx_last_error(ctx));
  }
  cr_assert(lt(u32, resident_pieces(a), a->npieces));
  *before = dev_map_calls(ctx);
  void *p = NULL;
  lms_status_t got = lms_acquire(ctx, a, s, LMS_ACCESS_READ, &p);
  *during = dev_map_calls(ctx) - *before;
  if (got == LMS_OK) {
    cr_assert(eq(int, lms_release(ctx, a, s), LMS_OK));
  } else {
    assert_unpinned(a);
  }
  assert_holds_then_free(ctx, a, s, sum);
  for (int i = 0; i < 7; i++) cr_assert(eq(int, lms_free(ctx, w[i]), LMS_OK));
  cr_assert(eq(int, lms_test_close(ctx, s), LMS_OK));
  return got;
}

/* Each dev_map of an acquire in turn fails: the acquire fails with
 * LMS_ERR_DEVICE, nothing stays pinned (the chunk can be freed), and the
 * bytes written before are all there at the next acquire. */
Test(pieces, a_failure_part_way_leaves_nothing_pinned) {
  uint64_t before = 0, during = 0;
  cr_assert(eq(int, push_out_and_back(0, &before, &during), LMS_OK));
  cr_assert(ge(u64, during, 2), "pieces that came back into other blocks "
            "are shown again (%llu)", (unsigned long long)during);
  for (uint64_t n = 1; n <= during; n++) {
    uint64_t b = 0, d = 0;
    lms_status_t st = push_out_and_back((int)(before + n), &b, &d);
    cr_assert(eq(u64, b, before), "the same run up to the acquire");
    cr_assert(eq(int, st, LMS_ERR_DEVICE), "dev_map %llu of %llu",
              (unsigned long long)n, (unsigned long long)during);
  }
}

static uint64_t event_syncs(lms_ctx_t *ctx) {
  lms__sim_report_t r;
  memset(&r, 0, sizeof r);
  lms__sim_report(lms__dev_unwrap(ctx->dev), &r);
  return r.calls[LMS__DEVOP_event_sync];
}

/* Writes a (27 MiB, seven pieces), sends its third piece away and
 * acquires a again, with event_sync call `fail` made to fail (0: none).
 * *syncs: the event_sync calls before that acquire.  Checks what both
 * cases share: the piece that left is shown nowhere and its old
 * mapping's users are marked; afterwards nothing is pinned and every
 * byte is there. */
static lms_status_t leave_and_show_again(int fail, uint64_t *syncs) {
  lms_stream_t s;
  lms_chunk_t *a = NULL;
  uint64_t sum = 0;
  lms_ctx_t *ctx = open_with_a("event_sync", fail, &s, &a, &sum);
  lms_chunk_t *p = a->pieces[2];
  cr_assert(not(eq(ptr, p->dptr, NULL)));
  cr_assert(eq(ptr, p->shown, p->dptr));
  cr_assert(eq(int, lms__swap_drop(&ctx->swap, p), LMS_OK));
  cr_assert(eq(ptr, p->dptr, NULL));
  cr_assert(eq(ptr, p->shown, NULL), "a piece that left is shown nowhere");
  cr_assert(gt(int, p->nold, 0), "its old mapping's users are "
            "kept");
  *syncs = event_syncs(ctx);
  uint64_t maps = dev_map_calls(ctx);
  void *ptr = NULL;
  lms_status_t got = lms_acquire(ctx, a, s, LMS_ACCESS_READ, &ptr);
  if (got == LMS_OK) {
    cr_assert(eq(u64, dev_map_calls(ctx) - maps, 1),
              "only the piece that left is shown again");
    cr_assert(eq(ptr, p->shown, p->dptr));
    cr_assert(eq(int, p->nold, 0));
    cr_assert(eq(int, lms_release(ctx, a, s), LMS_OK));
  } else {
    cr_assert(eq(u64, dev_map_calls(ctx), maps), "nothing shown");
    assert_unpinned(a);
  }
  assert_holds_then_free(ctx, a, s, sum);
  cr_assert(eq(int, lms_test_close(ctx, s), LMS_OK));
  return got;
}

/* Note [Showing a piece again] in residency.c: a piece that left counts
 * as shown nowhere, so the next acquire shows its block again (on a GPU
 * the block's address may have other memory behind it by then), and only
 * after the work that used the old mapping: the wait for it is the
 * acquire's first event_sync, and when it fails the acquire fails with
 * nothing shown, nothing left pinned and no byte changed. */
Test(pieces, a_piece_that_left_is_shown_again_after_its_users) {
  uint64_t syncs = 0, again = 0;
  cr_assert(eq(int, leave_and_show_again(0, &syncs), LMS_OK));
  lms_status_t st = leave_and_show_again((int)syncs + 1, &again);
  cr_assert(eq(u64, again, syncs), "the same run up to the acquire");
  cr_assert(eq(int, st, LMS_ERR_DEVICE));
}

Test(pieces, a_piece_size_off_the_2_mib_grain_is_refused) {
  lms_options_t *o = NULL;
  cr_assert(eq(int, lms_options_create(&o), LMS_OK));
  cr_assert(eq(int, lms_options_set(o, "piece-size", "3MiB"), LMS_ERR_INVALID));
  cr_assert(not(eq(ptr, strstr(lms_options_error(o), "2 MiB"), NULL)),
            "%s", lms_options_error(o));
  cr_assert(eq(int, lms_options_set(o, "piece-size", "0"), LMS_ERR_INVALID));
  cr_assert(eq(int, lms_options_set(o, "piece-size", "32MiB"), LMS_OK));
  lms_options_destroy(o);
}

/* The workload as pieces (lms__wl_pieces), which the lower bound of a run
 * with pieces also takes: the cut follows the runtime's rule, and every
 * reference to a cut chunk becomes one to each of its pieces. */
Test(pieces, a_workload_cut_into_pieces) {
  lms__workload_t w, p;
  lms__wl_init(&w, "w");
  lms__wl_init(&p, NULL);
  uint32_t a, b, c;
  cr_assert(eq(int, lms__wl_add_chunk(&w, 27 * MIB, 0, "a", &a), LMS_OK));
  cr_assert(eq(int, lms__wl_add_chunk(&w, 24 * MIB + 512, 1, "b", &b), LMS_OK));
  cr_assert(eq(int, lms__wl_add_chunk(&w, 7 * MIB, 0, "c", &c), LMS_OK));
  cr_assert(eq(int, lms__wl_add_step(&w, 1000, "s0"), LMS_OK));
  cr_assert(eq(int, lms__wl_add_ref(&w, a, LMS_ACCESS_READ), LMS_OK));
  cr_assert(eq(int, lms__wl_add_ref(&w, b, LMS_ACCESS_WRITE), LMS_OK));
  cr_assert(eq(int, lms__wl_add_step(&w, 2000, "s1"), LMS_OK));
  cr_assert(eq(int, lms__wl_add_ref(&w, b, LMS_ACCESS_READ), LMS_OK));
  w.refs[w.nrefs - 1].dead_after = 1;
  cr_assert(eq(int, lms__wl_add_ref(&w, c, LMS_ACCESS_RW), LMS_OK));
  uint32_t split = 0;
  cr_assert(eq(int, lms__wl_pieces(&w, 4 * MIB, LMS__PIECE_DIV, 64 * MIB, &p,
                                   &split), LMS_OK));
  cr_assert(eq(u32, split, 2));
  cr_assert(eq(u32, p.nchunks, 7 + 6 + 1));
  cr_assert(eq(u64, p.chunks[6].size, 3 * MIB));
  cr_assert(eq(u64, p.chunks[12].size, 4 * MIB + 512));
  cr_assert(eq(int, p.chunks[12].transient, 1));
  cr_assert(eq(u64, p.chunks[13].size, 7 * MIB));
  cr_assert(eq(u32, p.nsteps, 2));
  cr_assert(eq(u32, p.steps[0].nrefs, 13));
  cr_assert(eq(u32, p.steps[1].nrefs, 7));
  cr_assert(eq(uint, p.refs[7].access, LMS_ACCESS_WRITE));
  cr_assert(eq(uint, p.refs[13].dead_after, 1), "a death goes to each piece");
  cr_assert(eq(uint, p.refs[18].dead_after, 1));
  cr_assert(eq(uint, p.refs[19].access, LMS_ACCESS_RW));
  cr_assert(eq(u64, p.steps[1].compute_ns, 2000));
  char err[LMS__ERRBUF];
  cr_assert(eq(int, lms__wl_validate(&p, err), LMS_OK), "%s", err);
  lms__wl_free(&p);
  lms__wl_free(&w);
}

/* A context destroyed with chunks of pieces still live frees them, their
 * pieces and their address ranges (the sanitizers' leak check sees the
 * rest). */
Test(pieces, a_context_ends_with_pieces_live) {
  lms_stream_t s;
  lms_ctx_t *ctx = open_ctx("4MiB", NULL, &s);
  written(ctx, s, 27 * MIB, 3);
  alloc(ctx, 20 * MIB);
  cr_assert(eq(int, lms_test_close(ctx, s), LMS_OK));
}

/* A discarded chunk of pieces leaves the device without a byte written
 * home, every piece of it. */
Test(pieces, a_discard_reaches_every_piece) {
  lms_stream_t s;
  lms_ctx_t *ctx = open_ctx("4MiB", NULL, &s);
  lms_chunk_t *a = written(ctx, s, 27 * MIB, 9);
  cr_assert(eq(u32, resident_pieces(a), a->npieces));
  lms_stats_t before = lms_test_stats(ctx);
  cr_assert(eq(int, lms_discard(ctx, a), LMS_OK));
  lms_stats_t after = lms_test_stats(ctx);
  cr_assert(eq(u32, resident_pieces(a), 0));
  cr_assert(not(lms_chunk_resident(ctx, a)));
  cr_assert(eq(i64, after.bytes_d2h.total, before.bytes_d2h.total));
  cr_assert(eq(int, lms_free(ctx, a), LMS_OK));
  cr_assert(eq(int, lms_test_close(ctx, s), LMS_OK));
}

/* Note [Where the cycle is cut] in graph/ahead.c: a recommendation
 * model's training loop, tables made of pieces read in forward and
 * updated in backward in the same order, under the schedule policy:
 * with the plan cut where it brings in the least looking ahead from the
 * iteration its period is learned (force 13), and with every way on
 * trial (force 0, the plan cut so among them), every read sees the bytes
 * last written and the device stays within its budget. */
static void tables_loop(int force) {
  enum { T = 6, ITERS = 40 };
  static const size_t mib[T] = {10, 12, 20, 8, 14, 9};
  lms_stream_t s;
  lms__plan_force = force;
  lms_ctx_t *ctx = open_ctx("2MiB", NULL, &s);
  lms_chunk_t *t[T], *out[T];
  uint64_t sum[T], osum[T];
  lms_status_t st;
  for (int i = 0; i < T; i++) {
    t[i] = alloc(ctx, mib[i] * MIB + 4096);
    cr_assert(gt(u32, t[i]->npieces, 1));
    sum[i] = lms_test_write(ctx, t[i], s, 100 + (uint64_t)i, &st);
    cr_assert(eq(int, st, LMS_OK), "%s", lms_ctx_last_error(ctx));
  }
  for (int it = 0; it < ITERS; it++) {
    uint64_t seed = 1000 * (uint64_t)(it + 1);
    for (int i = 0; i < T; i++) {
      cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
      cr_assert(eq(u64, lms_test_read(ctx, t[i], s, &st), sum[i]),
                "iteration %d, lookup %d", it, i);
      cr_assert(eq(int, st, LMS_OK), "%s", lms_ctx_last_error(ctx));
      out[i] = alloc(ctx, MIB);
      osum[i] = lms_test_write(ctx, out[i], s, seed + (uint64_t)i, &st);
      cr_assert(eq(int, st, LMS_OK), "%s", lms_ctx_last_error(ctx));
      cr_assert(eq(int, lms_compute(ctx, s, 150000), LMS_OK));
    }
    cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
    for (int i = 0; i < T; i++) {
      cr_assert(eq(u64, lms_test_read(ctx, out[i], s, &st), osum[i]),
                "iteration %d, output %d", it, i);
      cr_assert(eq(int, lms_free(ctx, out[i]), LMS_OK));
    }
    cr_assert(eq(int, lms_compute(ctx, s, 3000000), LMS_OK));
    for (int i = 0; i < T; i++) {
      cr_assert(eq(int, lms_step_begin(ctx), LMS_OK));
      cr_assert(eq(u64, lms_test_read(ctx, t[i], s, &st), sum[i]),
                "iteration %d, update %d", it, i);
      sum[i] = lms_test_write(ctx, t[i], s, seed + 500 + (uint64_t)i, &st);
      cr_assert(eq(int, st, LMS_OK), "%s", lms_ctx_last_error(ctx));
      cr_assert(eq(int, lms_compute(ctx, s, 400000), LMS_OK));
    }
  }
  lms__plan_force = 0;
  lms__plan_info_t info;
  lms__plan_info(ctx->plan, &info);
  lms_stats_t a = lms_test_stats(ctx);
  cr_log_info("force %d: %s looks ahead; the plan cut at step %u tried "
              "%.3f ms, the plan %.3f ms; %lld written home, %lld brought "
              "in", force, info.ahead, info.cut_step,
              (double)info.trial_cut_ns / 1e6,
              (double)info.trial_plan_ns / 1e6,
              (long long)a.swaps_out.total, (long long)a.swaps_in.total);
  cr_assert(eq(str, (char *)info.source, "learned"));
  if (force == 13) {
    cr_assert(eq(str, (char *)info.ahead, "cut"));
    cr_assert(ne(u32, info.plan_cut, 0), "the plan was cut at step 0");
  } else {
    cr_assert(eq(int, info.deciding, 0), "the trial did not end");
    cr_assert(ne(u32, info.cut_step, 0));
    cr_assert(gt(u64, info.trial_cut_ns, 0), "the plan cut elsewhere was "
              "not tried");
  }
  cr_assert(gt(i64, a.swaps_out.total, 0));
  cr_assert(gt(i64, a.prefetches.total, 0));
  cr_assert(le(i64, a.device_reserved.peak, 64 * MIB));
  for (int i = 0; i < T; i++) cr_assert(eq(int, lms_free(ctx, t[i]), LMS_OK));
  cr_assert(eq(int, lms_test_close(ctx, s), LMS_OK));
}

Test(pieces, tables_lose_no_byte_under_the_plan_cut, .timeout = 300) {
  tables_loop(13);
  tables_loop(0);
}
