/* sim_parts.h - what the files of `lms sim` share (sim.c, sim_args.c,
 * sim_rows.c); private to them. */
#ifndef LMS_CLI_SIM_PARTS_H
#define LMS_CLI_SIM_PARTS_H

#include <stdint.h>
#include <stdio.h>

#include "core/options.h"
#include "replay/replay.h"
#include "replay/shared.h"

/* The policies by lms__policy_t, as the command line names them. */
extern const char *const lms__simcmd_policy_names[3];

/* One row of the shared-link table. */
typedef struct shared_row {
  char link[32];
  lms__policy_t policy;
  uint64_t capacity;
  lms__shared_result_t r;
} shared_row_t;

/* The table of runs (sim_rows.c): its header, and one row per run. */
void lms__simcmd_print_header(FILE *f);
void lms__simcmd_print_row(FILE *f, const char *link, const char *policy,
                           uint64_t capacity, const lms__replay_result_t *r,
                           uint64_t inmem_ns);
/* One run as a JSON object, after a comma unless first; shared may be
 * NULL. */
void lms__simcmd_json_row(FILE *f, const char *link, const char *policy,
                          uint64_t capacity, const lms__replay_result_t *r,
                          uint64_t inmem_ns, int first,
                          const lms__shared_result_t *shared);
/* The shared-link table (--gpus-per-link): its header and a row. */
void lms__simcmd_print_shared_header(FILE *f, int gpus, int board);
void lms__simcmd_print_shared_row(FILE *f, const shared_row_t *row);

#endif
