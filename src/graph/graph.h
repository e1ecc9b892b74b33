/* graph.h - workloads, traces and schedules: what runs when, and which
 * chunks each step reads and writes.
 *
 * A workload is a list of chunks (sizes and names) and a list of steps; a
 * step has a compute time and references chunks, each for reading, writing
 * or both.  Built-in workloads (workloads.c) model the source scenarios;
 * traces (trace.c, docs/trace-format.md) carry workloads to and from files;
 * the runtime writes its own acquire sequence as a trace.
 *
 * Invariants of a valid workload (lms__wl_validate): every chunk has
 * 1 <= size <= LMS__WL_MAX_SIZE; every reference names an existing chunk
 * with a non-empty access mask of LMS_ACCESS_READ and LMS_ACCESS_WRITE;
 * steps' references are contiguous in `refs`, in step order; a step names
 * a chunk at most once; a transient chunk is used by at least one step;
 * the chunks' sizes, the bytes each step names summed over the steps, and
 * the steps' compute times sum to at most LMS__WL_MAX_TOTAL_BYTES,
 * LMS__WL_MAX_NAMED_BYTES and LMS__WL_MAX_TOTAL_NS. */
#ifndef LMS_GRAPH_GRAPH_H
#define LMS_GRAPH_GRAPH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/status.h"
#include "lms/lms.h"

#define LMS__WL_NAME 48
/* 256 TiB: anything larger in a trace is taken for corruption. */
#define LMS__WL_MAX_SIZE (1ull << 48)
/* 10,000 s: the longest step a trace may declare. */
#define LMS__WL_MAX_STEP_NS 10000000000000ull
/* Totals over one iteration (Note [Workload totals] in workload.c):
 * 1 PiB of chunks in all, the largest capacity lms accepts; 4 PiB named by
 * the steps in all, each step counting each chunk it names; 10^7 s (about
 * 116 days, a thousand of the longest steps) of compute in all. */
#define LMS__WL_MAX_TOTAL_BYTES (1ull << 50)
#define LMS__WL_MAX_NAMED_BYTES (1ull << 52)
#define LMS__WL_MAX_TOTAL_NS 10000000000000000ull

typedef struct lms__wl_chunk {
  uint64_t size;
  /* 1: allocated before its first use and freed after its last use in
   * every iteration (a framework's activations); 0: allocated once and
   * live throughout (weights, or every blob in caffe). */
  int transient;
  char name[LMS__WL_NAME];
} lms__wl_chunk_t;

typedef struct lms__wl_ref {
  uint32_t chunk;  /* index into chunks */
  unsigned access; /* LMS_ACCESS_READ | LMS_ACCESS_WRITE */
  /* 1: the chunk's bytes are dead after this step (lms__wl_mark_dead);
   * a replay discards it there.  Not carried by traces. */
  unsigned dead_after;
} lms__wl_ref_t;

typedef struct lms__wl_step {
  uint64_t compute_ns;
  uint32_t first_ref; /* index into refs */
  uint32_t nrefs;
  char name[LMS__WL_NAME];
} lms__wl_step_t;

typedef struct lms__workload {
  char name[64];
  lms__wl_chunk_t *chunks;
  uint32_t nchunks, chunks_cap;
  lms__wl_step_t *steps;
  uint32_t nsteps, steps_cap;
  lms__wl_ref_t *refs;
  uint32_t nrefs, refs_cap;
  /* Per chunk, 1 + the index in refs of its latest reference, 0 if none
   * (last_ref_cap entries): lms__wl_add_ref finds a chunk the step already
   * names without scanning the step.  Kept by lms__wl_add_ref alone. */
  uint32_t *last_ref;
  uint32_t last_ref_cap;
  /* Description and model parameters of built-in workloads (0 if unknown). */
  uint64_t flops;          /* per iteration */
  double device_flops;     /* the modelled device speed, FLOP/s */
} lms__workload_t;

void lms__wl_init(lms__workload_t *w, const char *name);
void lms__wl_free(lms__workload_t *w);
/* Adds a chunk; *id gets its index.  LMS_ERR_HOST_OOM if memory runs out,
 * LMS_ERR_INVALID for a size outside 1..LMS__WL_MAX_SIZE. */
lms_status_t lms__wl_add_chunk(lms__workload_t *w, uint64_t size,
                               int transient, const char *name, uint32_t *id);
/* Starts a new step; later lms__wl_add_ref calls belong to it. */
lms_status_t lms__wl_add_step(lms__workload_t *w, uint64_t compute_ns,
                              const char *name);
/* Adds a reference to the last step.  A chunk named twice in one step has
 * its access masks merged.  Takes constant time, however many chunks the
 * step names. */
lms_status_t lms__wl_add_ref(lms__workload_t *w, uint32_t chunk,
                             unsigned access);
/* Note [Dead after the last use] in workload.c: marks the last use in an
 * iteration of every persistent chunk whose first use overwrites it.
 * Returns how many uses were marked; *bytes (may be NULL) gets their
 * chunks' bytes. */
uint32_t lms__wl_mark_dead(lms__workload_t *w, uint64_t *bytes);
/* The workload as a runtime that makes chunks of pieces schedules it
 * under `budget` (Note [Chunks of pieces] in swap/residency.c): each
 * chunk lms__pieces_of cuts (with `piece` and `div`) becomes its pieces,
 * each named with the chunk's access (and death) wherever it was.  out
 * must be initialised; *split (may be NULL) gets how many chunks were
 * cut. */
lms_status_t lms__wl_pieces(const lms__workload_t *w, uint64_t piece,
                            uint32_t div, uint64_t budget,
                            lms__workload_t *out, uint32_t *split);
/* Checks the invariants above; on failure err (LMS__ERRBUF) says which. */
lms_status_t lms__wl_validate(const lms__workload_t *w, char *err);

/* Sets every step's compute time to base[s] / speedup (rounded, at most
 * LMS__WL_MAX_STEP_NS), where base holds the nsteps times to scale from;
 * device_flops likewise grows by speedup over base_flops. */
void lms__wl_set_speed(lms__workload_t *w, const uint64_t *base,
                       double base_flops, double speedup);

/* Sums over one iteration; within the limits above for a valid workload,
 * UINT64_MAX for one whose sum would not fit. */
uint64_t lms__wl_compute_ns(const lms__workload_t *w);
uint64_t lms__wl_chunk_bytes(const lms__workload_t *w);
/* The most bytes any single step references: a device smaller than this
 * cannot run the workload at all.  Like the sums, at most
 * LMS__WL_MAX_TOTAL_BYTES for a valid workload. */
uint64_t lms__wl_max_step_bytes(const lms__workload_t *w);

/* ---- Built-in workloads (workloads.c) ---------------------------------- */

typedef struct lms__wl_params {
  int batch;             /* >= 1 */
  int train;             /* 0: forward only; 1: forward and backward */
  int size;              /* image side: 1200 for GoogleNet, 144 or 192 for
                            the 3D U-Net; 0 for the workload's default */
  double device_flops;   /* FLOP/s; 0 for the workload's calibrated default */
} lms__wl_params_t;

typedef struct lms__wl_builtin {
  const char *name;      /* "googlenet", "unet3d" */
  const char *summary;
  lms_status_t (*build)(const lms__wl_params_t *p, lms__workload_t *out,
                        char *err);
} lms__wl_builtin_t;

/* The table of built-in workloads, ended by an entry with name NULL. */
extern const lms__wl_builtin_t lms__wl_builtins[];
/* Finds a built-in by name; NULL if none. */
const lms__wl_builtin_t *lms__wl_find_builtin(const char *name);
/* The most bytes live at once over one iteration of a valid workload:
 * persistent chunks throughout, a transient chunk from the start of the
 * first step naming it to the end of the last (workloads.c). */
uint64_t lms__wl_peak_live_bytes(const lms__workload_t *w);

/* ---- Traces (trace.c; the format is docs/trace-format.md) -------------- */

/* Reads a trace.  On failure err (LMS__ERRBUF) says "PATH:LINE: reason",
 * the workload is left empty, and the status is LMS_ERR_INVALID for
 * malformed input or LMS_ERR_HOST_OOM when memory runs out. */
lms_status_t lms__trace_read(const char *path, lms__workload_t *out,
                             char *err);
/* The same from an open stream; `label` names it in messages. */
lms_status_t lms__trace_read_file(FILE *f, const char *label,
                                  lms__workload_t *out, char *err);
/* Writes w in the trace format. */
lms_status_t lms__trace_write_file(FILE *f, const lms__workload_t *w,
                                   char *err);
lms_status_t lms__trace_write(const char *path, const lms__workload_t *w,
                              char *err);

/* ---- The planner (plan.c): the schedule at run time ------------------- */

/* Note [Three sources of a schedule] is in plan.c.  The planner sees every
 * allocation, free, step boundary and acquire of a context, keeps the
 * schedule (declared, learned, or the stack discipline), tells the swap
 * module each chunk's next use, prefetches the window ahead at each step,
 * and records the run as a trace when asked.  It runs under the context's
 * lock. */
typedef struct lms__plan lms__plan_t;

struct lms__swap;
struct lms__opts;

typedef struct lms__plan_info {
  const char *source;   /* "declared", "learned", "stack", "none" */
  uint32_t period;      /* steps in the schedule; 0 if none yet */
  uint64_t steps;       /* step boundaries seen */
  uint64_t relearns;    /* times a learned schedule stopped matching
                           and learning started over */
  uint64_t false_periods; /* times one stopped matching within its first
                           period and learning went on from the same
                           start (Note [A false period] in plan.c) */
  const char *ahead;    /* what looks ahead now: "window", "plan",
                           "dense" (the plan deciding by density),
                           "dense-w" (the same counting write-backs),
                           "dense-h" (the same holding the room of its
                           write-backs while they run), "dense-s" (the
                           same in order, searched by its time), "cut"
                           (the plan by end cut where it brings in the least)
                           or "spread" (the spread plan) */
  int deciding;         /* they are on trial (Note [Ways to look ahead,
                           measured] in plan.c) */
  int held;             /* the way kept may yet be replaced: no iteration
                           now is settled (Note [The trial keeps score]) */
  uint64_t trial_window_ns, trial_plan_ns, trial_spread_ns; /* their timed
                           iterations, once measured; else 0 */
  uint64_t trial_late_ns; /* the faster plan leaving dirty chunks late,
                           once measured; else 0 */
  uint64_t trial_order_ns; /* the spread plan bringing chunks in by
                           their use, once measured; else 0 */
  uint64_t trial_dense_ns; /* the plan deciding by density, once
                           measured; else 0 (also where it sends every
                           chunk away after the uses the plan by end does,
                           and is not tried) */
  int dense_alike;      /* ... which it did: not tried */
  uint64_t trial_cut_ns, trial_cut_in; /* the plan by end cut where it
                           brings in the least (Note [Where the cycle is cut]
                           in ahead.c), its iteration and bytes on trial,
                           where chunks are made of pieces; else 0 (also
                           where it decides as the plan by end does, and
                           is not tried) */
  uint32_t cut_step;    /* ... its cut, once built on trial */
  uint64_t cut_plan_in; /* ... the bytes it plans to bring in */
  int cut_alike;        /* ... it decided as the plan by end: not tried */
  uint32_t plan_cut;    /* the step the plan built last was cut at (0 for
                           every plan but that one) */
  uint64_t end_plan_in, dense_plan_in; /* the bytes the plan by end and
                           the plan by density plan to bring in, once both
                           were built on trial; else 0 */
  uint64_t trial_dorder_ns, trial_dorder_in; /* ... bringing chunks in by
                           their use, where that was tried; else 0 */
  uint64_t trial_dout_ns, trial_dout_in; /* ... counting write-backs,
                           where that was tried; else 0 */
  uint64_t trial_dhold_ns, trial_dhold_in; /* ... holding the room of its
                           write-backs while they run, where that was
                           tried; else 0 */
  uint64_t trial_dsearch_ns, trial_dsearch_in; /* ... the plan by density
                           in order searched by its time (Note [A plan
                           searched by its time] in ahead.c) */
  uint64_t trial_window_in, trial_plan_in, trial_dense_in; /* the bytes
                           each brought in, its iteration timed on trial
                           (Note [Ties go to fewer bytes] in plan.c) */
  uint64_t trial_spread_in, trial_order_in, trial_late_in;
  uint64_t trial_late2_ns, trial_late2_in; /* the next fastest plan leaving
                           dirty chunks late, where it was tried; else 0 */
  int late_left[2];     /* whether each plan tried leaving late left a
                           dirty chunk late (if not, it was that plan
                           timed again, and its time does not count) */
  int late;             /* the plan looking ahead leaves dirty chunks
                           late (Note [Leaving late] in plan.c) */
  int order;            /* ... and brings chunks in by their use (Note
                           [Copies in by their use] in ahead.c) */
  uint64_t left_late;   /* dirty chunks left where the plan sent them
                           away, so far */
  uint64_t plan_in;     /* the chunk bytes the plan built last brings in
                           an iteration (0: none built) */
  unsigned kind_dirty;  /* bit 0: the plan sent a dirty chunk away on
                           trial; 1: by density; 2: spread; 3: spread in
                           order; 4: by density in order; 5: cut
                           (a plan that sent none is not tried leaving
                           late: Note [Leaving late] in plan.c) */
  uint64_t windows_back; /* the times the window, kept after plans ran on
                           trial, started over (Note [Back to the window]
                           in plan.c) */
  uint64_t ways_replaced; /* the times a way kept after its trial was
                           replaced by another, its iterations slower than
                           that one's on trial (Note [The trial keeps
                           score] in plan.c) */
  uint64_t replaced_ns; /* ... the mean of the last iterations it took
                           then; 0: never replaced */
} lms__plan_info_t;

/* For tests: 0 (the default) puts the window and the period's plans on
 * trial; 1 keeps the window; 2 lets the plan look ahead from the start of
 * every schedule, 3 the spread plan, 4 and 5 the same leaving dirty chunks
 * late, 6 to 9 the same as 2 to 5 with copies in by their use, 10 the
 * plan deciding by density, 11 that leaving dirty chunks late, 12
 * that with copies in by their use and 13 the plan by end cut where it
 * brings in the least (Note [Where the cycle is cut] in ahead.c; Notes
 * [Ways to look ahead, measured] and [Leaving late] in plan.c, [Copies in
 * by their use] and [Whole chunks kept] in ahead.c). */
extern int lms__plan_force;
/* Test hook: not 0, dirty chunks the plan sends away are written home
 * only as they leave (Note [Home before leaving] in plan.c). */
extern int lms__plan_home_late;
/* For tests: nonzero makes every spread plan fail to build, as when host
 * memory runs out. */
extern int lms__plan_spread_fails;
/* For tests: n > 0 makes the nth plan by end the process builds while it
 * is set, and every one after it, fail to build, as when host memory
 * runs out (and so the plan by density is not tried). */
extern int lms__plan_end_fails;

lms_status_t lms__plan_create(struct lms__swap *s, const struct lms__opts *o,
                              lms__plan_t **out);
/* Writes the trace if one was asked for; err gets why it could not be. */
lms_status_t lms__plan_destroy(lms__plan_t *p, char *err);
lms_status_t lms__plan_on_alloc(lms__plan_t *p, lms_chunk_t *c);
void lms__plan_on_free(lms__plan_t *p, lms_chunk_t *c);
void lms__plan_on_acquire(lms__plan_t *p, lms_chunk_t *c, unsigned access);
void lms__plan_on_compute(lms__plan_t *p, uint64_t ns);
/* A step boundary: the steps so far are done being enqueued and the next
 * one begins.  Prefetches the window ahead.  Only device failures are
 * returned; a prefetch that finds no room is not a failure. */
lms_status_t lms__plan_step(lms__plan_t *p);
/* The step boundary an acquire makes in a program that does not mark its
 * steps: chunks made since the previous acquire were made for the step
 * that begins (Note [Same shape, other chunk]). */
lms_status_t lms__plan_acquire_step(lms__plan_t *p);
/* Appends a step to the declared schedule (which then replaces any
 * learned one); the first lms__plan_step after declaring is its step 0. */
lms_status_t lms__plan_declare(lms__plan_t *p, lms_chunk_t *const *chunks,
                               const unsigned *access, size_t n,
                               uint64_t compute_ns);
void lms__plan_declare_clear(lms__plan_t *p);
/* Forgets what was learned (not a declared schedule) and starts over. */
void lms__plan_relearn(lms__plan_t *p);
void lms__plan_info(const lms__plan_t *p, lms__plan_info_t *out);

#endif
