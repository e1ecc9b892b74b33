/* ledger.c - every allocation the hooks made, keyed by address, with
 * where it was placed; and the counters behind the stats line.
 *
 * The table is the runtime's hash map (Note [One hash map] in
 * core/map.h) in memory from mmap, so that no hook ever calls the
 * program's malloc: it may be anything, even an allocator that itself
 * allocates device memory and so is already running when our hook is
 * entered.  One mutex guards the table and the byte counters; it is never
 * held across a call into the driver. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/budget.h"
#include "core/map.h"
#include "core/placement.h"
#include "preload/preload.h"

typedef struct entry {
  uint64_t size;
  uint32_t place; /* lms__place_t */
} entry_t;

LMS__MAP(ledger_map, entry_t, lms__map_mmap, lms__map_munmap)

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static ledger_map_t g_map;
static lms__ledger_stats_t g_st;

/* The first table holds 2048 allocations before it grows. */
#define MIN_ENTRIES 2048u

/* Records ptr; -1 when mmap fails. */
static int put(uint64_t ptr, uint64_t size, lms__place_t place) {
  if (g_map.cap == 0 && ledger_map_reserve(&g_map, MIN_ENTRIES) != 0)
    return -1;
  return ledger_map_put(&g_map, ptr, (entry_t){size, (uint32_t)place});
}

/* Note [Placement past the limit]
 * A new allocation goes to device memory while this process's device use
 * plus its size stays within --gpu-limit (and, with -lms set, unless
 * caffe's rule sends it to the host: at least -lms KB and device demand
 * above -lms_frac of the capacity).  Otherwise it is served from managed
 * memory whose preferred location is the host and which the device may
 * access in place (hooks.c).  The address a program gets never changes
 * afterwards, whichever way it was placed, so every kernel stays correct;
 * only speed depends on the placement.  The budget is reserved here,
 * before the driver is called, so that two threads cannot both fit into
 * the same remaining bytes.  When the driver itself reports the device out
 * of memory within the limit (another process holds it, or no limit was
 * given), the allocation falls back to managed memory the same way
 * (hooks.c); on a shared GPU, give a limit well below what is free rather
 * than lean on that. */
int lms__ledger_reserve(uint64_t size, uint64_t limit, int64_t lms_kb,
                        double lms_frac, uint64_t capacity) {
  pthread_mutex_lock(&g_lock);
  int fits = lms__budget_fits(g_st.device_bytes, size, limit, 0);
  /* The one placement rule (core/placement.h). */
  lms__placement_t p = {.lms_kb = lms_kb, .frac = lms_frac,
                        .capacity = capacity};
  if (fits && capacity > 0 && lms__place_on_host(&p, size, g_st.device_bytes))
    fits = 0;
  if (fits) g_st.device_bytes += size; /* the peak moves once it is real */
  pthread_mutex_unlock(&g_lock);
  return fits;
}

void lms__ledger_unreserve(uint64_t size) {
  pthread_mutex_lock(&g_lock);
  g_st.device_bytes -= size;
  pthread_mutex_unlock(&g_lock);
}

static void peak(uint64_t now, uint64_t *at_most) {
  if (now > *at_most) *at_most = now;
}

static void count_in(uint64_t size, lms__place_t place) {
  g_st.allocs++;
  switch (place) {
  case LMS__PLACE_DEVICE:
    g_st.device_allocs++; /* the bytes were reserved */
    peak(g_st.device_bytes, &g_st.device_peak);
    break;
  case LMS__PLACE_MANAGED:
    g_st.managed_allocs++;
    g_st.managed_bytes += size;
    peak(g_st.managed_bytes, &g_st.managed_peak);
    break;
  case LMS__PLACE_APP_MANAGED:
    g_st.app_managed_allocs++;
    g_st.app_managed_bytes += size;
    break;
  case LMS__PLACE_NONE:
    break;
  }
}

static void count_out(uint64_t size, lms__place_t place) {
  switch (place) {
  case LMS__PLACE_DEVICE: g_st.device_bytes -= size; break;
  case LMS__PLACE_MANAGED: g_st.managed_bytes -= size; break;
  case LMS__PLACE_APP_MANAGED: g_st.app_managed_bytes -= size; break;
  case LMS__PLACE_NONE: break;
  }
}

lms_status_t lms__ledger_add(uint64_t ptr, uint64_t size,
                             lms__place_t place) {
  pthread_mutex_lock(&g_lock);
  count_in(size, place);
  lms_status_t rc = ptr == 0 ? LMS_ERR_INVALID : LMS_ERR_HOST_OOM;
  if (ptr != 0 && put(ptr, size, place) == 0) {
    rc = LMS_OK;
  } else {
    /* Untracked: it will be freed as unknown, so take it out again. */
    count_out(size, place);
    g_st.allocs--;
  }
  pthread_mutex_unlock(&g_lock);
  return rc;
}

lms__place_t lms__ledger_remove(uint64_t ptr, uint64_t *size) {
  pthread_mutex_lock(&g_lock);
  entry_t *s = ledger_map_find(&g_map, ptr);
  lms__place_t place = LMS__PLACE_NONE;
  if (s != NULL) {
    place = (lms__place_t)s->place;
    *size = s->size;
    count_out(s->size, place);
    g_st.frees++;
    ledger_map_del(&g_map, ptr);
  }
  pthread_mutex_unlock(&g_lock);
  return place;
}

void lms__ledger_restore(uint64_t ptr, uint64_t size, lms__place_t place) {
  pthread_mutex_lock(&g_lock);
  g_st.frees--;
  switch (place) {
  case LMS__PLACE_DEVICE: g_st.device_bytes += size; break;
  case LMS__PLACE_MANAGED: g_st.managed_bytes += size; break;
  case LMS__PLACE_APP_MANAGED: g_st.app_managed_bytes += size; break;
  case LMS__PLACE_NONE: break;
  }
  (void)put(ptr, size, place);
  pthread_mutex_unlock(&g_lock);
}

lms__place_t lms__ledger_lookup(uint64_t ptr) {
  pthread_mutex_lock(&g_lock);
  const entry_t *s = ledger_map_find(&g_map, ptr);
  lms__place_t place = s != NULL ? (lms__place_t)s->place : LMS__PLACE_NONE;
  pthread_mutex_unlock(&g_lock);
  return place;
}

lms_status_t lms__ledger_managed_size(uint64_t ptr, uint64_t *size) {
  pthread_mutex_lock(&g_lock);
  const entry_t *s = ledger_map_find(&g_map, ptr);
  int ok = s != NULL && s->place == LMS__PLACE_MANAGED;
  if (ok) *size = s->size;
  pthread_mutex_unlock(&g_lock);
  return ok ? LMS_OK : LMS_ERR_INVALID;
}

void lms__ledger_note_oom_fallback(void) {
  pthread_mutex_lock(&g_lock);
  g_st.oom_fallbacks++;
  pthread_mutex_unlock(&g_lock);
}

void lms__ledger_note_unknown_free(void) {
  pthread_mutex_lock(&g_lock);
  g_st.unknown_frees++;
  pthread_mutex_unlock(&g_lock);
}

void lms__ledger_note_launch(unsigned ptrs, unsigned managed) {
  pthread_mutex_lock(&g_lock);
  g_st.launches++;
  g_st.launch_ptrs += ptrs;
  if (managed > 0) g_st.launches_managed++;
  pthread_mutex_unlock(&g_lock);
}

uint64_t lms__ledger_device_bytes(void) {
  pthread_mutex_lock(&g_lock);
  uint64_t b = g_st.device_bytes;
  pthread_mutex_unlock(&g_lock);
  return b;
}

void lms__ledger_stats(lms__ledger_stats_t *out) {
  pthread_mutex_lock(&g_lock);
  *out = g_st;
  pthread_mutex_unlock(&g_lock);
}

size_t lms__ledger_line(char *buf, size_t size) {
  lms__ledger_stats_t s;
  lms__ledger_stats(&s);
  lms__prefetch_stats_t p;
  lms__prefetch_stats(&p);
  size_t len = 0;
  const char *sep = "lms preload: ";
#define LMS__LINE_FIELD_(from, field, in_line)                                \
  if (in_line) {                                                              \
    int n = snprintf(len < size ? buf + len : NULL,                           \
                     len < size ? size - len : 0, "%s" #field "=%llu", sep,   \
                     (unsigned long long)(from).field);                       \
    if (n < 0) return 0;                                                      \
    len += (size_t)n;                                                         \
    sep = " ";                                                                \
  }
#define LMS__LINE_LEDGER_(field, in_line, what) LMS__LINE_FIELD_(s, field, in_line)
#define LMS__LINE_PREFETCH_(field, in_line, what) LMS__LINE_FIELD_(p, field, in_line)
  LMS__LEDGER_STATS(LMS__LINE_LEDGER_)
  LMS__PREFETCH_STATS(LMS__LINE_PREFETCH_)
#undef LMS__LINE_PREFETCH_
#undef LMS__LINE_LEDGER_
#undef LMS__LINE_FIELD_
  int n = snprintf(len < size ? buf + len : NULL, len < size ? size - len : 0,
                   "\n");
  if (n < 0) return 0;
  len += (size_t)n;
  if (size == 0) return 0;
  return len < size ? len : size - 1;
}
