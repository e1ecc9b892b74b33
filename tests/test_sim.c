/* test_sim.c - the simulated device: capacity and accounting, pointer
 * checks, copies, the virtual clock, events, fault injection and
 * determinism.  Times are checked to the nanosecond against the link model:
 * on pcie3 a copy costs 10 us plus bytes / 12.2 GB/s host to device and
 * bytes / 12.9 GB/s device to host. */
#include <criterion/criterion.h>
#include "check.h"
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "core/link.h"
#include "core/status.h"
#include "device/device.h"
#include "support.h"

/* 12.2e6 bytes at 12.2 GB/s is 1 ms; plus 10 us of latency. */
#define H2D_BYTES ((size_t)12200000)
#define H2D_NS ((uint64_t)1010000)
/* 12.9e6 bytes at 12.9 GB/s is 1 ms; plus 10 us of latency. */
#define D2H_BYTES ((size_t)12900000)
#define D2H_NS ((uint64_t)1010000)
#define MIB ((uint64_t)1 << 20)

static lms_dev_t *dev;

static lms_dev_t *make_dev(uint64_t capacity, const char *fail) {
  char err[LMS__ERRBUF] = "";
  lms__sim_config_t cfg = {.capacity = capacity, .fail = fail};
  cr_assert(eq(int, lms__link_parse("pcie3", &cfg.link, err), LMS_OK),
            "%s", err);
  lms_dev_t *d = NULL;
  cr_assert(eq(int, lms__sim_create(&cfg, &d, err), LMS_OK), "%s", err);
  cr_assert(lms__dev_is_sim(d));
  return d;
}

static void sim_up(void) { dev = make_dev(64 * MIB, NULL); }

static void sim_down(void) {
  dev->ops->destroy(dev);
  dev = NULL;
}

static lms__sim_report_t report(lms_dev_t *d) {
  lms__sim_report_t r;
  lms__sim_report(d, &r);
  return r;
}

static void *stream(lms_dev_t *d) {
  void *s = NULL;
  cr_assert(eq(int, d->ops->stream_create(d, &s), LMS_OK));
  return s;
}

static void *event(lms_dev_t *d) {
  void *e = NULL;
  cr_assert(eq(int, d->ops->event_create(d, &e), LMS_OK));
  return e;
}

static void *dalloc(lms_dev_t *d, size_t n) {
  void *p = NULL;
  cr_assert(eq(int, d->ops->dev_alloc(d, n, &p), LMS_OK), "%s",
            d->last_error);
  return p;
}

static void *halloc(lms_dev_t *d, size_t n) {
  void *p = NULL;
  cr_assert(eq(int, d->ops->host_alloc(d, n, &p), LMS_OK), "%s",
            d->last_error);
  return p;
}

static int has(const char *text, const char *part) {
  return strstr(text, part) != NULL;
}

/* ---- Memory ------------------------------------------------------------ */

Test(sim_mem, capacity_and_exact_accounting) {
  lms_dev_t *d = make_dev(16384, NULL);
  size_t free_b = 0, total_b = 0;
  void *a = dalloc(d, 10000);
  cr_assert(eq(u64, (uintptr_t)a % 256, 0));
  cr_assert(eq(u64, report(d).dev_in_use, 10000));
  cr_assert(eq(int, d->ops->mem_info(d, &free_b, &total_b), LMS_OK));
  cr_assert(eq(sz, free_b, 6384));
  cr_assert(eq(sz, total_b, 16384));

  void *b = (void *)0x1;
  cr_assert(eq(int, d->ops->dev_alloc(d, 6385, &b), LMS_ERR_DEVICE_OOM));
  cr_assert(eq(ptr, b, (void *)0x1), "a failed alloc must not touch *out");
  cr_assert(has(d->last_error, "requested 6385"), "%s", d->last_error);
  cr_assert(has(d->last_error, "10000 in use"), "%s", d->last_error);
  cr_assert(has(d->last_error, "capacity 16384"), "%s", d->last_error);
  cr_assert(eq(u64, report(d).dev_in_use, 10000));

  b = dalloc(d, 6384); /* exactly fills the device */
  cr_assert(eq(u64, (uintptr_t)b % 256, 0));
  cr_assert(eq(u64, report(d).dev_in_use, 16384));
  cr_assert(eq(int, d->ops->dev_alloc(d, 1, &(void *){NULL}),
               LMS_ERR_DEVICE_OOM));
  cr_assert(eq(int, d->ops->dev_free(d, a), LMS_OK));
  cr_assert(eq(u64, report(d).dev_in_use, 6384));
  cr_assert(eq(int, d->ops->dev_free(d, b), LMS_OK));
  cr_assert(eq(u64, report(d).dev_in_use, 0));

  /* Pinned host memory is not bounded by the device's capacity. */
  void *h = halloc(d, 100000);
  cr_assert(eq(u64, (uintptr_t)h % 4096, 0));
  cr_assert(eq(u64, report(d).host_in_use, 100000));
  cr_assert(eq(int, d->ops->host_free(d, h), LMS_OK));
  cr_assert(eq(u64, report(d).host_in_use, 0));
  cr_assert(eq(int, d->ops->dev_alloc(d, 0, &(void *){NULL}),
               LMS_ERR_INVALID));
  d->ops->destroy(d);
}

Test(sim_mem, unknown_pointers_rejected, .init = sim_up, .fini = sim_down) {
  char local[64];
  void *a = dalloc(dev, 1000);
  void *h = halloc(dev, 1000);
  cr_assert(eq(int, dev->ops->dev_free(dev, local), LMS_ERR_INVALID));
  cr_assert(has(dev->last_error, "dev_free"), "%s", dev->last_error);
  cr_assert(eq(int, dev->ops->dev_free(dev, (char *)a + 256),
               LMS_ERR_INVALID));
  cr_assert(has(dev->last_error, "inside"), "%s", dev->last_error);
  cr_assert(eq(int, dev->ops->dev_free(dev, NULL), LMS_ERR_INVALID));
  cr_assert(eq(int, dev->ops->dev_free(dev, h), LMS_ERR_INVALID));
  cr_assert(eq(int, dev->ops->host_free(dev, a), LMS_ERR_INVALID));
  cr_assert(eq(int, dev->ops->host_free(dev, local), LMS_ERR_INVALID));
  cr_assert(eq(u64, report(dev).dev_in_use, 1000));
  cr_assert(eq(u64, report(dev).host_in_use, 1000));

  cr_assert(eq(int, dev->ops->dev_free(dev, a), LMS_OK));
  cr_assert(eq(int, dev->ops->dev_free(dev, a), LMS_ERR_INVALID),
            "a double free must be caught");
  cr_assert(eq(int, dev->ops->host_free(dev, h), LMS_OK));
  cr_assert(eq(int, dev->ops->host_free(dev, h), LMS_ERR_INVALID));

  void *s = stream(dev), *e = event(dev);
  cr_assert(eq(int, dev->ops->stream_destroy(dev, local), LMS_ERR_INVALID));
  cr_assert(eq(int, dev->ops->stream_destroy(dev, NULL), LMS_ERR_INVALID));
  cr_assert(eq(int, dev->ops->stream_destroy(dev, e), LMS_ERR_INVALID),
            "an event is not a stream");
  cr_assert(eq(int, dev->ops->event_destroy(dev, s), LMS_ERR_INVALID));
  cr_assert(eq(int, dev->ops->compute(dev, NULL, 5), LMS_ERR_INVALID));
  cr_assert(eq(int, dev->ops->stream_destroy(dev, s), LMS_OK));
  cr_assert(eq(int, dev->ops->stream_destroy(dev, s), LMS_ERR_INVALID));
  cr_assert(eq(int, dev->ops->event_destroy(dev, e), LMS_OK));
  cr_assert(eq(int, dev->ops->event_destroy(dev, e), LMS_ERR_INVALID));
}

/* Leftovers are freed by destroy; the sanitizer build proves no leak. */
Test(sim_mem, destroy_frees_leftovers) {
  lms_dev_t *d = make_dev(MIB, NULL);
  dalloc(d, 4096);
  halloc(d, 4096);
  stream(d);
  event(d);
  cr_assert(eq(u64, report(d).dev_in_use, 4096));
  d->ops->destroy(d);
}

/* Note [Mapped device memory]: a block shown in a reservation holds the
 * same bytes at both addresses, a freed block reads zeros through a stale
 * mapping, and what is not a reservation's part or a block's start is
 * refused by name. */
Test(sim_mem, mapped_blocks_share_their_bytes, .init = sim_up,
     .fini = sim_down) {
  void *va = NULL, *b = NULL, *c = NULL;
  cr_assert(eq(int, dev->ops->va_reserve(dev, 8 * MIB, &va), LMS_OK));
  cr_assert(eq(u64, (uintptr_t)va % (2 * MIB), 0), "2 MiB aligned");
  cr_assert(eq(u64, report(dev).dev_in_use, 0), "addresses, not memory");
  b = dalloc(dev, 4 * MIB);
  c = dalloc(dev, 4 * MIB);
  cr_assert(eq(int, dev->ops->dev_map(dev, va, b, 4 * MIB), LMS_OK));
  cr_assert(eq(int, dev->ops->dev_map(dev, (char *)va + 4 * MIB, c, 4 * MIB),
               LMS_OK));
  memset(b, 0x11, 4 * MIB);
  ((unsigned char *)va)[4 * MIB] = 0x22;
  cr_assert(eq(u8, ((unsigned char *)va)[4 * MIB - 1], 0x11));
  cr_assert(eq(u8, ((unsigned char *)c)[0], 0x22));
  cr_assert(eq(int, dev->ops->dev_free(dev, b), LMS_OK));
  cr_assert(eq(u8, ((unsigned char *)va)[0], 0), "a freed block's bytes go");
  cr_assert(eq(int, dev->ops->dev_map(dev, va, (char *)c + 4096, 4096),
               LMS_ERR_INVALID));
  cr_assert(not(eq(ptr, strstr(dev->last_error, "not the start of a device "
                               "block"), NULL)), "%s", dev->last_error);
  cr_assert(eq(int, dev->ops->dev_map(dev, (char *)va + 6 * MIB, c, 4 * MIB),
               LMS_ERR_INVALID), "past the reservation's end");
  cr_assert(eq(int, dev->ops->dev_map(dev, (char *)va + 100, c, 4096),
               LMS_ERR_INVALID), "not page aligned");
  cr_assert(eq(int, dev->ops->va_reserve(dev, 0, &va), LMS_ERR_INVALID));
  cr_assert(eq(int, dev->ops->va_release(dev, (char *)va + 4096),
               LMS_ERR_INVALID));
  cr_assert(eq(int, dev->ops->va_release(dev, va), LMS_OK));
  cr_assert(eq(int, dev->ops->dev_free(dev, c), LMS_OK));
}

/* ---- Copies ------------------------------------------------------------ */

Test(sim_copy, bytes_move_both_ways, .init = sim_up, .fini = sim_down) {
  const size_t n = 1 << 16;
  unsigned char *src = halloc(dev, n), *back = halloc(dev, n);
  unsigned char *dp = dalloc(dev, n);
  void *s = stream(dev);
  lms_test_fill(src, n, 7);
  memset(back, 0, n);
  cr_assert(eq(int, dev->ops->copy_h2d(dev, dp, src, n, s), LMS_OK));
  cr_assert(eq(int, memcmp(dp, src, n), 0));
  cr_assert(eq(int, dev->ops->copy_d2h(dev, back, dp, n, s), LMS_OK));
  cr_assert(eq(int, dev->ops->stream_sync(dev, s), LMS_OK));
  cr_assert(eq(int, memcmp(back, src, n), 0));

  /* An interior range, from ordinary (pageable) host memory. */
  unsigned char buf[100];
  lms_test_fill(buf, sizeof buf, 8);
  cr_assert(eq(int, dev->ops->copy_h2d(dev, dp + 1000, buf, sizeof buf, s),
               LMS_OK));
  cr_assert(eq(int, dev->ops->copy_d2h(dev, back + 1000, dp + 1000,
                                       sizeof buf, s), LMS_OK));
  cr_assert(eq(int, memcmp(back + 1000, buf, sizeof buf), 0));
  cr_assert(eq(int, memcmp(back, src, 1000), 0),
            "bytes before the range must be untouched");

  lms__sim_report_t r = report(dev);
  cr_assert(eq(u64, r.bytes_h2d, n + sizeof buf));
  cr_assert(eq(u64, r.bytes_d2h, n + sizeof buf));
}

Test(sim_copy, bad_ranges_rejected, .init = sim_up, .fini = sim_down) {
  const size_t n = 4096;
  unsigned char *h = halloc(dev, n);
  unsigned char *dp = dalloc(dev, n);
  void *s = stream(dev);
  cr_assert(eq(int, dev->ops->copy_h2d(dev, dp + 1, h, n, s),
               LMS_ERR_INVALID), "past the end of the device block");
  cr_assert(has(dev->last_error, "past the end"), "%s", dev->last_error);
  cr_assert(eq(int, dev->ops->copy_h2d(dev, h, h, n, s), LMS_ERR_INVALID),
            "host memory as the device side");
  cr_assert(eq(int, dev->ops->copy_d2h(dev, h + 1, dp, n, s),
               LMS_ERR_INVALID), "past the end of the pinned block");
  cr_assert(eq(int, dev->ops->copy_d2h(dev, dp, dp, n, s), LMS_ERR_INVALID),
            "device memory as the host side");
  cr_assert(eq(int, dev->ops->copy_h2d(dev, dp, h, n, NULL),
               LMS_ERR_INVALID));
  lms__sim_report_t r = report(dev);
  cr_assert(eq(u64, r.bytes_h2d + r.bytes_d2h, 0));
  cr_assert(eq(u64, r.now_ns, 0), "a rejected copy takes no time");
}

/* ---- Time -------------------------------------------------------------- */

Test(sim_time, copy_takes_latency_plus_bytes_over_rate) {
  lms_dev_t *d = make_dev(64 * MIB, NULL);
  void *h = halloc(d, D2H_BYTES), *dp = dalloc(d, D2H_BYTES);
  void *s = stream(d);
  cr_assert(eq(int, d->ops->copy_h2d(d, dp, h, H2D_BYTES, s), LMS_OK));
  cr_assert(eq(u64, d->ops->now_ns(d), 0), "enqueueing costs no host time");
  cr_assert(eq(int, d->ops->stream_sync(d, s), LMS_OK));
  cr_assert(eq(u64, d->ops->now_ns(d), H2D_NS));
  cr_assert(eq(int, d->ops->copy_d2h(d, h, dp, D2H_BYTES, s), LMS_OK));
  cr_assert(eq(int, d->ops->stream_sync(d, s), LMS_OK));
  cr_assert(eq(u64, d->ops->now_ns(d), H2D_NS + D2H_NS));
  lms__sim_report_t r = report(d);
  cr_assert(eq(u64, r.h2d_busy_ns, H2D_NS));
  cr_assert(eq(u64, r.d2h_busy_ns, D2H_NS));
  cr_assert(eq(u64, r.now_ns, H2D_NS + D2H_NS));
  d->ops->destroy(d);
}

Test(sim_time, custom_rate_and_latency) {
  char err[LMS__ERRBUF] = "";
  lms__sim_config_t cfg = {.capacity = 64 * MIB};
  cr_assert(eq(int, lms__link_parse("25/50", &cfg.link, err), LMS_OK));
  cfg.link.latency_us = 3.0;
  lms_dev_t *d = NULL;
  cr_assert(eq(int, lms__sim_create(&cfg, &d, err), LMS_OK), "%s", err);
  void *h = halloc(d, 25000000), *dp = dalloc(d, 25000000);
  void *s = stream(d);
  /* 25e6 bytes: 1 ms at 25 GB/s in, 0.5 ms at 50 GB/s out. */
  cr_assert(eq(int, d->ops->copy_h2d(d, dp, h, 25000000, s), LMS_OK));
  cr_assert(eq(int, d->ops->copy_d2h(d, h, dp, 25000000, s), LMS_OK));
  cr_assert(eq(u64, report(d).h2d_busy_ns, 1003000));
  cr_assert(eq(u64, report(d).d2h_busy_ns, 503000));
  cr_assert(eq(u64, report(d).now_ns, 1506000));
  d->ops->destroy(d);
}

Test(sim_time, same_engine_serializes, .init = sim_up, .fini = sim_down) {
  void *h = halloc(dev, H2D_BYTES);
  void *d1 = dalloc(dev, H2D_BYTES), *d2 = dalloc(dev, H2D_BYTES);
  void *s1 = stream(dev), *s2 = stream(dev);
  /* Different streams, one host-to-device engine: one after the other. */
  cr_assert(eq(int, dev->ops->copy_h2d(dev, d1, h, H2D_BYTES, s1), LMS_OK));
  cr_assert(eq(int, dev->ops->copy_h2d(dev, d2, h, H2D_BYTES, s2), LMS_OK));
  cr_assert(eq(int, dev->ops->stream_sync(dev, s1), LMS_OK));
  cr_assert(eq(u64, dev->ops->now_ns(dev), H2D_NS));
  cr_assert(eq(int, dev->ops->stream_sync(dev, s2), LMS_OK));
  cr_assert(eq(u64, dev->ops->now_ns(dev), 2 * H2D_NS));
  cr_assert(eq(u64, report(dev).h2d_busy_ns, 2 * H2D_NS));
}

Test(sim_time, h2d_and_d2h_overlap, .init = sim_up, .fini = sim_down) {
  void *h1 = halloc(dev, D2H_BYTES), *h2 = halloc(dev, D2H_BYTES);
  void *d1 = dalloc(dev, D2H_BYTES), *d2 = dalloc(dev, D2H_BYTES);
  void *s1 = stream(dev), *s2 = stream(dev);
  cr_assert(eq(int, dev->ops->copy_h2d(dev, d1, h1, H2D_BYTES, s1), LMS_OK));
  cr_assert(eq(int, dev->ops->copy_d2h(dev, h2, d2, 2 * D2H_BYTES / 3, s2),
               LMS_OK));
  cr_assert(eq(int, dev->ops->stream_sync(dev, s1), LMS_OK));
  cr_assert(eq(int, dev->ops->stream_sync(dev, s2), LMS_OK));
  /* 8.6e6 bytes at 12.9 GB/s: 666667 ns rounded, plus 10 us. */
  uint64_t d2h_ns = 676667;
  cr_assert(eq(u64, report(dev).d2h_busy_ns, d2h_ns));
  cr_assert(eq(u64, report(dev).now_ns, H2D_NS), "max, not the sum");
}

Test(sim_time, link_with_a_both_ways_rate_parses) {
  char err[LMS__ERRBUF] = "";
  lms__link_t l;
  cr_assert(eq(int, lms__link_parse("25/26/40", &l, err), LMS_OK), "%s", err);
  cr_assert(eq(dbl, l.h2d_gbps, 25.0));
  cr_assert(eq(dbl, l.d2h_gbps, 26.0));
  cr_assert(eq(dbl, l.both_gbps, 40.0));
  cr_assert(eq(int, lms__link_parse("25/26", &l, err), LMS_OK), "%s", err);
  cr_assert(eq(dbl, l.both_gbps, 0.0), "two rates: full duplex");
  cr_assert(eq(int, lms__link_parse("pcie5", &l, err), LMS_OK), "%s", err);
  cr_assert(gt(dbl, l.both_gbps, 0.0), "pcie5 carries the measured rate");
  const char *bad[] = {"25/26/x", "25/26/40/1", "25/26/0", "25//40", "25/26/"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cr_assert(eq(int, lms__link_parse(bad[i], &l, err), LMS_ERR_INVALID), "%s",
              bad[i]);
    cr_assert(has(err, "25/26/40"), "%s: %s", bad[i], err);
  }
}

/* Note [Both ways at once] in sim.c: 40/40 GB/s alone, 60 GB/s summed.
 * A 40 MB copy in takes 1 ms alone.  A 40 MB copy out enqueued beside it
 * gets 60 - 40 = 20 GB/s while the copy in runs (1 ms: 20 MB), then 40
 * GB/s for the other 20 MB (0.5 ms): 1.5 ms in all.  Alone, each takes
 * 1 ms; with a full-duplex link both end at 1 ms. */
Test(sim_time, both_ways_share_a_half_duplex_link) {
  char err[LMS__ERRBUF] = "";
  const char *links[2] = {"40/40/60", "40/40"};
  const uint64_t want_d2h[2] = {1500000, 1000000};
  for (int k = 0; k < 2; k++) {
    lms__sim_config_t cfg = {.capacity = 256 * MIB};
    cr_assert(eq(int, lms__link_parse(links[k], &cfg.link, err), LMS_OK), "%s",
              err);
    cfg.link.latency_us = 0.0;
    lms_dev_t *d = NULL;
    cr_assert(eq(int, lms__sim_create(&cfg, &d, err), LMS_OK), "%s", err);
    void *h = halloc(d, 40000000), *d1 = dalloc(d, 40000000),
         *d2 = dalloc(d, 40000000);
    void *s1 = stream(d), *s2 = stream(d);
    cr_assert(eq(int, d->ops->copy_h2d(d, d1, h, 40000000, s1), LMS_OK));
    cr_assert(eq(int, d->ops->copy_d2h(d, h, d2, 40000000, s2), LMS_OK));
    cr_assert(eq(int, d->ops->stream_sync(d, s1), LMS_OK));
    cr_assert(eq(int, d->ops->stream_sync(d, s2), LMS_OK));
    cr_assert(eq(u64, report(d).h2d_busy_ns, 1000000), "%s", links[k]);
    cr_assert(eq(u64, report(d).d2h_busy_ns, want_d2h[k]), "%s", links[k]);
    /* One way alone is not slowed. */
    cr_assert(eq(int, d->ops->copy_d2h(d, h, d2, 40000000, s2), LMS_OK));
    cr_assert(eq(int, d->ops->stream_sync(d, s2), LMS_OK));
    cr_assert(eq(u64, report(d).d2h_busy_ns, want_d2h[k] + 1000000), "%s",
              links[k]);
    d->ops->destroy(d);
  }
}

Test(sim_time, compute_and_copy_overlap, .init = sim_up, .fini = sim_down) {
  void *h = halloc(dev, H2D_BYTES), *dp = dalloc(dev, H2D_BYTES);
  void *s1 = stream(dev), *s2 = stream(dev);
  cr_assert(eq(int, dev->ops->compute(dev, s1, 3000000), LMS_OK));
  cr_assert(eq(int, dev->ops->copy_h2d(dev, dp, h, H2D_BYTES, s2), LMS_OK));
  cr_assert(eq(int, dev->ops->stream_sync(dev, s2), LMS_OK));
  cr_assert(eq(u64, dev->ops->now_ns(dev), H2D_NS),
            "the copy must not wait for compute on another stream");
  cr_assert(eq(int, dev->ops->stream_sync(dev, s1), LMS_OK));
  cr_assert(eq(u64, dev->ops->now_ns(dev), 3000000));
  lms__sim_report_t r = report(dev);
  cr_assert(eq(u64, r.compute_busy_ns, 3000000));
  cr_assert(eq(u64, r.now_ns, 3000000));
  /* On one stream the same two run in order. */
  cr_assert(eq(int, dev->ops->compute(dev, s1, 1000), LMS_OK));
  cr_assert(eq(int, dev->ops->copy_h2d(dev, dp, h, H2D_BYTES, s1), LMS_OK));
  cr_assert(eq(int, dev->ops->stream_sync(dev, s1), LMS_OK));
  cr_assert(eq(u64, dev->ops->now_ns(dev), 3000000 + 1000 + H2D_NS));
}

Test(sim_time, stream_wait_orders_streams, .init = sim_up,
     .fini = sim_down) {
  void *h = halloc(dev, H2D_BYTES), *dp = dalloc(dev, H2D_BYTES);
  void *s1 = stream(dev), *s2 = stream(dev), *s3 = stream(dev);
  void *ev = event(dev), *done = event(dev), *free_run = event(dev);
  /* Without a wait, compute starts at once on the idle engine. */
  cr_assert(eq(int, dev->ops->compute(dev, s3, 500), LMS_OK));
  cr_assert(eq(int, dev->ops->event_record(dev, free_run, s3), LMS_OK));
  cr_assert(eq(int, dev->ops->copy_h2d(dev, dp, h, H2D_BYTES, s1), LMS_OK));
  cr_assert(eq(int, dev->ops->event_record(dev, ev, s1), LMS_OK));
  cr_assert(eq(int, dev->ops->stream_wait(dev, s2, ev), LMS_OK));
  cr_assert(eq(int, dev->ops->compute(dev, s2, 500), LMS_OK));
  cr_assert(eq(int, dev->ops->event_record(dev, done, s2), LMS_OK));
  cr_assert(eq(int, dev->ops->event_sync(dev, free_run), LMS_OK));
  cr_assert(eq(u64, dev->ops->now_ns(dev), 500));
  cr_assert(eq(int, dev->ops->event_sync(dev, done), LMS_OK));
  cr_assert(eq(u64, dev->ops->now_ns(dev), H2D_NS + 500));
  cr_assert(eq(u64, report(dev).stream_wait_ns, H2D_NS));
}

Test(sim_time, wait_on_unrecorded_event_is_a_no_op, .init = sim_up,
     .fini = sim_down) {
  void *s = stream(dev), *ev = event(dev);
  cr_assert(eq(int, dev->ops->stream_wait(dev, s, ev), LMS_OK));
  cr_assert(eq(int, dev->ops->compute(dev, s, 700), LMS_OK));
  cr_assert(eq(u64, report(dev).now_ns, 700));
  cr_assert(eq(u64, report(dev).stream_wait_ns, 0));
  cr_assert(eq(int, dev->ops->stream_wait(dev, s, NULL), LMS_ERR_INVALID));
}

/* Note [Timed events on the simulated device]: timed events bracketing a
 * stream_wait measure, once the stream has passed, what wait_cost said
 * ahead; on a busy stream and on an idle one (where the wait begins when
 * the host enqueues it, not at the stream's old tail).  With
 * measured_waits, wait_cost answers only as CUDA can. */
Test(sim_event, timed_events_measure_what_wait_cost_says) {
  for (int measured = 0; measured < 2; measured++) {
    char err[LMS__ERRBUF] = "";
    lms__sim_config_t cfg = {.capacity = 64 * MIB,
                             .measured_waits = measured};
    cr_assert(eq(int, lms__link_parse("pcie3", &cfg.link, err), LMS_OK));
    lms_dev_t *d = NULL;
    cr_assert(eq(int, lms__sim_create(&cfg, &d, err), LMS_OK), "%s", err);
    void *h = halloc(d, H2D_BYTES), *dp = dalloc(d, H2D_BYTES);
    void *cs = stream(d), *copy = stream(d), *ready = event(d);
    void *a = NULL, *b = NULL, *plain = event(d);
    cr_assert(eq(int, d->ops->event_create_timed(d, &a), LMS_OK));
    cr_assert(eq(int, d->ops->event_create_timed(d, &b), LMS_OK));
    /* Busy, then idle: the compute stream runs 300 us of work, or the host
     * has waited 400 us past its end before the wait is enqueued. */
    for (int idle = 0; idle < 2; idle++) {
      uint64_t t0 = d->ops->now_ns(d);
      cr_assert(eq(int, d->ops->compute(d, cs, 300000), LMS_OK));
      if (idle) {
        cr_assert(eq(int, d->ops->stream_sync(d, cs), LMS_OK));
        void *other = stream(d);
        cr_assert(eq(int, d->ops->compute(d, other, 400000), LMS_OK));
        cr_assert(eq(int, d->ops->stream_sync(d, other), LMS_OK));
      }
      cr_assert(eq(int, d->ops->copy_h2d(d, dp, h, H2D_BYTES, copy), LMS_OK));
      cr_assert(eq(int, d->ops->event_record(d, ready, copy), LMS_OK));
      uint64_t ahead = 0;
      lms_status_t wc = d->ops->wait_cost(d, cs, ready, &ahead);
      cr_assert(eq(int, wc, measured ? LMS_ERR_UNSUPPORTED : LMS_OK));
      /* The copy starts at the host's clock and lasts H2D_NS; the stream
       * gets there 300 us after t0, or 700 us after it when idle. */
      uint64_t copy_start = d->ops->now_ns(d);
      uint64_t there = idle ? copy_start : t0 + 300000;
      uint64_t expect = copy_start + H2D_NS - there;
      if (!measured) cr_assert(eq(u64, ahead, expect), "idle %d", idle);
      cr_assert(eq(int, d->ops->event_record(d, a, cs), LMS_OK));
      cr_assert(eq(int, d->ops->stream_wait(d, cs, ready), LMS_OK));
      cr_assert(eq(int, d->ops->event_record(d, b, cs), LMS_OK));
      uint64_t ns = 0;
      cr_assert(eq(int, d->ops->event_elapsed(d, a, b, &ns), LMS_NOT_READY));
      cr_assert(eq(int, d->ops->stream_sync(d, cs), LMS_OK));
      cr_assert(eq(int, d->ops->event_elapsed(d, a, b, &ns), LMS_OK));
      cr_assert(eq(u64, ns, expect), "idle %d, measured %d", idle, measured);
      /* Done now: no wait, in either mode. */
      cr_assert(eq(int, d->ops->wait_cost(d, cs, ready, &ahead), LMS_OK));
      cr_assert(eq(u64, ahead, 0));
    }
    /* Only timed events can be timed. */
    uint64_t ns = 0;
    cr_assert(eq(int, d->ops->event_record(d, plain, cs), LMS_OK));
    cr_assert(eq(int, d->ops->event_elapsed(d, a, plain, &ns),
                 LMS_ERR_INVALID));
    cr_assert(has(d->last_error, "timed"), "%s", d->last_error);
    d->ops->destroy(d);
  }
}

/* ---- Events ------------------------------------------------------------ */

Test(sim_event, not_ready_then_ready_after_sync, .init = sim_up,
     .fini = sim_down) {
  void *s = stream(dev), *ev = event(dev);
  cr_assert(eq(int, dev->ops->compute(dev, s, 1000000), LMS_OK));
  cr_assert(eq(int, dev->ops->event_record(dev, ev, s), LMS_OK));
  cr_assert(eq(int, dev->ops->event_query(dev, ev), LMS_NOT_READY));
  cr_assert(eq(int, dev->ops->event_sync(dev, ev), LMS_OK));
  cr_assert(eq(u64, dev->ops->now_ns(dev), 1000000));
  cr_assert(eq(int, dev->ops->event_query(dev, ev), LMS_OK));
}

Test(sim_event, empty_and_unrecorded_are_ready, .init = sim_up,
     .fini = sim_down) {
  void *s = stream(dev), *ev = event(dev), *never = event(dev);
  cr_assert(eq(int, dev->ops->event_query(dev, never), LMS_OK));
  cr_assert(eq(int, dev->ops->event_sync(dev, never), LMS_OK));
  cr_assert(eq(int, dev->ops->event_record(dev, ev, s), LMS_OK));
  cr_assert(eq(int, dev->ops->event_query(dev, ev), LMS_OK));
  cr_assert(eq(int, dev->ops->event_query(dev, NULL), LMS_ERR_INVALID));
  cr_assert(eq(int, dev->ops->event_record(dev, ev, NULL), LMS_ERR_INVALID));
}

/* Handles live in a hash set whose removal moves later entries back:
 * after thousands made and every third destroyed in a scrambled order,
 * each live one is still known and each destroyed one refused. */
Test(sim_event, many_handles_made_and_destroyed, .init = sim_up,
     .fini = sim_down) {
  enum { N = 3000 };
  static void *ev[N];
  static int live[N];
  for (int i = 0; i < N; i++) {
    cr_assert(eq(int, dev->ops->event_create(dev, &ev[i]), LMS_OK));
    live[i] = 1;
  }
  for (int k = 0; k < N; k++) {
    int i = (int)(((uint64_t)k * 7919u) % N);
    if (i % 3 != 0) continue;
    cr_assert(eq(int, dev->ops->event_destroy(dev, ev[i]), LMS_OK));
    live[i] = 0;
  }
  for (int i = 0; i < N; i++) {
    if (live[i]) {
      cr_assert(eq(int, dev->ops->event_query(dev, ev[i]), LMS_OK), "%d", i);
    } else {
      cr_assert(eq(int, dev->ops->event_query(dev, ev[i]), LMS_ERR_INVALID),
                "%d", i);
      cr_assert(eq(int, dev->ops->event_destroy(dev, ev[i]), LMS_ERR_INVALID));
    }
  }
  for (int i = 0; i < N; i++)
    if (live[i]) cr_assert(eq(int, dev->ops->event_destroy(dev, ev[i]), LMS_OK));
}

/* A poller progresses one quantum per repeated NOT_READY (the first look
 * at a host time is free) and sees the event done at exactly its time. */
Test(sim_event, polling_reaches_completion, .init = sim_up,
     .fini = sim_down) {
  void *s = stream(dev), *ev = event(dev);
  cr_assert(eq(int, dev->ops->compute(dev, s, 4500), LMS_OK));
  cr_assert(eq(int, dev->ops->event_record(dev, ev, s), LMS_OK));
  int polls = 0;
  lms_status_t st;
  while ((st = dev->ops->event_query(dev, ev)) == LMS_NOT_READY) {
    polls++;
    cr_assert(lt(int, polls, 100), "the poll never finishes");
  }
  cr_assert(eq(int, st, LMS_OK));
  cr_assert(eq(int, polls, 6));
  cr_assert(eq(u64, dev->ops->now_ns(dev), 4500));
}

/* A one-time look at many events that are not done costs no host time. */
Test(sim_event, first_look_is_free, .init = sim_up, .fini = sim_down) {
  void *s = stream(dev);
  void *ev[8];
  cr_assert(eq(int, dev->ops->compute(dev, s, 4500), LMS_OK));
  for (int i = 0; i < 8; i++) {
    ev[i] = event(dev);
    cr_assert(eq(int, dev->ops->event_record(dev, ev[i], s), LMS_OK));
  }
  for (int i = 0; i < 8; i++)
    cr_assert(eq(int, dev->ops->event_query(dev, ev[i]), LMS_NOT_READY));
  cr_assert(eq(u64, dev->ops->now_ns(dev), 0));
  cr_assert(eq(int, dev->ops->event_query(dev, ev[0]), LMS_NOT_READY));
  cr_assert(eq(u64, dev->ops->now_ns(dev), 1000), "a repeated look waits");
}

/* Re-recording replaces what was captured. */
Test(sim_event, rerecord_replaces, .init = sim_up, .fini = sim_down) {
  void *s = stream(dev), *ev = event(dev);
  cr_assert(eq(int, dev->ops->compute(dev, s, 100), LMS_OK));
  cr_assert(eq(int, dev->ops->event_record(dev, ev, s), LMS_OK));
  cr_assert(eq(int, dev->ops->compute(dev, s, 100), LMS_OK));
  cr_assert(eq(int, dev->ops->event_record(dev, ev, s), LMS_OK));
  cr_assert(eq(int, dev->ops->event_sync(dev, ev), LMS_OK));
  cr_assert(eq(u64, dev->ops->now_ns(dev), 200));
}

/* ---- Fault injection --------------------------------------------------- */

Test(sim_fault, copy_by_op_index, .init = sim_up, .fini = sim_down) {
  const size_t n = 4096;
  unsigned char *a = halloc(dev, n), *b = halloc(dev, n);
  unsigned char *dp = dalloc(dev, n);
  void *s = stream(dev);
  lms_test_fill(a, n, 1);
  lms_test_fill(b, n, 2);
  lms__sim_fail_op(dev, LMS__DEVOP_copy_h2d, 2);
  cr_assert(eq(int, dev->ops->copy_h2d(dev, dp, a, n, s), LMS_OK));
  lms__sim_report_t before = report(dev);

  cr_assert(eq(int, dev->ops->copy_h2d(dev, dp, b, n, s), LMS_ERR_DEVICE));
  cr_assert(has(dev->last_error, "injected failure: copy_h2d call 2"), "%s",
            dev->last_error);
  cr_assert(eq(int, memcmp(dp, a, n), 0), "the failed copy moved bytes");
  lms__sim_report_t after = report(dev);
  cr_assert(eq(u64, after.bytes_h2d, before.bytes_h2d));
  cr_assert(eq(u64, after.h2d_busy_ns, before.h2d_busy_ns));
  cr_assert(eq(u64, after.now_ns, before.now_ns));
  cr_assert(eq(u64, after.calls[LMS__DEVOP_copy_h2d], 2),
            "the failed call is counted");

  cr_assert(eq(int, dev->ops->copy_h2d(dev, dp, b, n, s), LMS_OK));
  cr_assert(eq(int, memcmp(dp, b, n), 0));
}

Test(sim_fault, allocs_by_op_index, .init = sim_up, .fini = sim_down) {
  lms__sim_fail_op(dev, LMS__DEVOP_dev_alloc, 1);
  lms__sim_fail_op(dev, LMS__DEVOP_host_alloc, 1);
  void *p = (void *)0x1;
  cr_assert(eq(int, dev->ops->dev_alloc(dev, 512, &p), LMS_ERR_DEVICE_OOM));
  cr_assert(eq(ptr, p, (void *)0x1));
  cr_assert(eq(u64, report(dev).dev_in_use, 0));
  cr_assert(has(dev->last_error, "injected failure: dev_alloc call 1"),
            "%s", dev->last_error);
  cr_assert(eq(int, dev->ops->host_alloc(dev, 512, &p), LMS_ERR_HOST_OOM));
  cr_assert(eq(u64, report(dev).host_in_use, 0));
  dalloc(dev, 512);
  halloc(dev, 512);
  cr_assert(eq(u64, report(dev).dev_in_use, 512));

  /* Clearing disarms: call 3 would fail if n = 3 stayed set. */
  lms__sim_fail_op(dev, LMS__DEVOP_dev_alloc, 3);
  lms__sim_fail_op(dev, LMS__DEVOP_dev_alloc, 0);
  dalloc(dev, 512);
}

Test(sim_fault, by_total_index, .init = sim_up, .fini = sim_down) {
  void *s = stream(dev);
  cr_assert(eq(int, dev->ops->compute(dev, s, 10), LMS_OK));
  uint64_t next = report(dev).total_calls + 2;
  lms__sim_fail_any(dev, next);
  cr_assert(eq(int, dev->ops->compute(dev, s, 10), LMS_OK));
  cr_assert(eq(int, dev->ops->compute(dev, s, 1000), LMS_ERR_DEVICE));
  cr_assert(has(dev->last_error, "compute call 3"), "%s", dev->last_error);
  cr_assert(eq(u64, report(dev).compute_busy_ns, 20),
            "the failed compute took time");
  cr_assert(eq(u64, report(dev).total_calls, next));
  cr_assert(eq(int, dev->ops->compute(dev, s, 10), LMS_OK));
  cr_assert(eq(u64, report(dev).compute_busy_ns, 30));
}

Test(sim_fault, spec_at_creation) {
  lms_dev_t *d = make_dev(MIB, "event_record:2,any:4");
  void *s = stream(d), *ev = event(d);                            /* 1, 2 */
  cr_assert(eq(int, d->ops->event_record(d, ev, s), LMS_OK));     /* 3 */
  cr_assert(eq(int, d->ops->compute(d, s, 5), LMS_ERR_DEVICE));   /* 4 */
  cr_assert(eq(int, d->ops->event_record(d, ev, s), LMS_ERR_DEVICE));
  cr_assert(has(d->last_error, "event_record call 2"), "%s", d->last_error);
  cr_assert(eq(int, d->ops->event_record(d, ev, s), LMS_OK));
  cr_assert(eq(u64, report(d).now_ns, 0));
  d->ops->destroy(d);
}

Test(sim_fault, bad_specs_rejected) {
  static const char *const bad[] = {
      "bogus:1",  "copy_h2d",      "copy_h2d:0", "copy_h2d:3x",
      "copy_h2d:", "copy_h2d:1,",  ",",          ":3",
      "copy_h2d:-1", "copy_h2d:1,copy_h2d:2", "copy_h2d:99999999999999999999",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char err[LMS__ERRBUF] = "";
    lms__sim_config_t cfg = {.capacity = MIB, .fail = bad[i]};
    cr_assert(eq(int, lms__link_parse("pcie3", &cfg.link, err), LMS_OK));
    lms_dev_t *d = NULL;
    cr_assert(eq(int, lms__sim_create(&cfg, &d, err), LMS_ERR_INVALID),
              "'%s' was accepted", bad[i]);
    cr_assert(eq(ptr, d, NULL));
    cr_assert(has(err, "copy_h2d") && has(err, "event_sync") &&
                  has(err, "mem_info") && has(err, "any"),
              "'%s': the message must list the operations: %s", bad[i], err);
  }
  char err[LMS__ERRBUF] = "";
  lms__sim_config_t cfg = {.capacity = MIB, .fail = "copy_h2d:1,bogus:2"};
  cr_assert(eq(int, lms__link_parse("pcie3", &cfg.link, err), LMS_OK));
  lms_dev_t *d = NULL;
  cr_assert(eq(int, lms__sim_create(&cfg, &d, err), LMS_ERR_INVALID));
  cr_assert(has(err, "'bogus'"), "the bad part must be named: %s", err);
}

Test(sim_fault, every_op_is_counted, .init = sim_up, .fini = sim_down) {
  size_t f, t;
  char local[8];
  cr_assert(eq(int, dev->ops->mem_info(dev, &f, &t), LMS_OK));
  cr_assert(eq(int, dev->ops->dev_free(dev, local), LMS_ERR_INVALID));
  dev->ops->now_ns(dev);
  lms__sim_report_t r = report(dev);
  cr_assert(eq(u64, r.calls[LMS__DEVOP_mem_info], 1));
  cr_assert(eq(u64, r.calls[LMS__DEVOP_dev_free], 1),
            "a call that fails validation still counts");
  cr_assert(eq(u64, r.total_calls, 2), "now_ns is not counted");
  cr_assert(eq(str, (char *)lms__dev_op_names[LMS__DEVOP_copy_d2h],
               "copy_d2h"));
  cr_assert(eq(str, (char *)lms__dev_op_names[LMS__DEVOP_COUNT - 1],
               "dev_map"));
}

/* ---- Determinism and threads ------------------------------------------- */

static lms__sim_report_t workload(void) {
  lms_dev_t *d = make_dev(256 * MIB, NULL);
  const size_t n = 3 * MIB + 17;
  void *h = halloc(d, n), *dp = dalloc(d, n);
  void *in = stream(d), *out = stream(d), *work = stream(d);
  void *loaded = event(d), *computed = event(d);
  lms_test_fill(h, n, 3);
  for (int i = 0; i < 20; i++) {
    size_t k = n - (size_t)i * 1001;
    cr_assert(eq(int, d->ops->copy_h2d(d, dp, h, k, in), LMS_OK));
    cr_assert(eq(int, d->ops->event_record(d, loaded, in), LMS_OK));
    cr_assert(eq(int, d->ops->stream_wait(d, work, loaded), LMS_OK));
    cr_assert(eq(int, d->ops->compute(d, work, 100000 + 7u * i), LMS_OK));
    cr_assert(eq(int, d->ops->event_record(d, computed, work), LMS_OK));
    cr_assert(eq(int, d->ops->stream_wait(d, out, computed), LMS_OK));
    cr_assert(eq(int, d->ops->copy_d2h(d, h, dp, k / 2, out), LMS_OK));
    int polls = 0;
    while (d->ops->event_query(d, loaded) == LMS_NOT_READY)
      cr_assert(lt(int, ++polls, 100000), "the poll never finishes");
  }
  cr_assert(eq(int, d->ops->stream_sync(d, out), LMS_OK));
  lms__sim_report_t r = report(d);
  d->ops->destroy(d);
  return r;
}

Test(sim_determinism, same_ops_same_report) {
  lms__sim_report_t a = workload(), b = workload();
  cr_assert(gt(u64, a.now_ns, 0));
  cr_assert(gt(u64, a.stream_wait_ns, 0));
  cr_assert(eq(u64, a.now_ns, b.now_ns));
  cr_assert(eq(int, memcmp(&a, &b, sizeof a), 0),
            "two identical runs gave different reports");
}

static void *churn(void *arg) {
  lms_dev_t *d = arg;
  for (int i = 0; i < 2000; i++) {
    void *p = NULL;
    if (d->ops->dev_alloc(d, 4096, &p) != LMS_OK) return (void *)1;
    if (d->ops->dev_free(d, p) != LMS_OK) return (void *)1;
  }
  return NULL;
}

Test(sim_threads, concurrent_alloc_free, .init = sim_up, .fini = sim_down) {
  pthread_t th[4];
  for (int i = 0; i < 4; i++)
    cr_assert(eq(int, pthread_create(&th[i], NULL, churn, dev), 0));
  for (int i = 0; i < 4; i++) {
    void *ret = (void *)2;
    pthread_join(th[i], &ret);
    cr_assert(eq(ptr, ret, NULL), "%s", dev->last_error);
  }
  lms__sim_report_t r = report(dev);
  cr_assert(eq(u64, r.dev_in_use, 0));
  cr_assert(eq(u64, r.total_calls, 4 * 2000 * 2));
}
