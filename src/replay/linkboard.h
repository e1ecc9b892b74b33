/* linkboard.h - the board where the ranks of one node whose GPUs share a
 * host link post their copy timelines (Note [Ranks on one link] in
 * linkboard.c).  A tool of `lms sim`, not part of the runtime's
 * libraries. */
#ifndef LMS_REPLAY_LINKBOARD_H
#define LMS_REPLAY_LINKBOARD_H

#include "device/device.h"

/* Spans a posted timeline keeps per direction, and the longest group name. */
#define LMS__BOARD_SPANS 4096
#define LMS__BOARD_GROUP_MAX 40

typedef struct lms__link_board lms__link_board_t;

/* The other ranks' latest timelines, each placed by its origin. */
typedef struct lms__board_view {
  int n;
  lms__copy_timeline_t timeline[LMS__SHARE_MAX_GPUS];
  uint64_t origin[LMS__SHARE_MAX_GPUS];
  int rank[LMS__SHARE_MAX_GPUS];
} lms__board_view_t;

/* 1 if `group` can name a link group (1 to LMS__BOARD_GROUP_MAX letters,
 * digits, '-', '_', '.'). */
int lms__board_group_ok(const char *group);
/* Takes a slot on the board of link group `group`, on which `ranks` ranks
 * (2 to LMS__SHARE_MAX_GPUS) are announced; `rank` names this one in
 * messages.  LMS_ERR_INVALID for a bad group or count, or a full board;
 * LMS_ERR_HOST_OOM when the board cannot be opened; the reason in err. */
lms_status_t lms__board_join(const char *group, int ranks, int rank,
                             lms__link_board_t **out, char *err);
/* Posts this rank's timeline of the period that began at `origin` (its
 * device's clock), as its next round. */
lms_status_t lms__board_post(lms__link_board_t *b, const lms__copy_timeline_t *tl,
                             uint64_t origin);
/* Waits until every other rank on the board has posted as many rounds as
 * this one (ranks that left or died are not waited for), and, the first
 * time, until the ranks announced have joined.  LMS_ERR_BUSY after
 * timeout_s seconds, with who is missing in err. */
lms_status_t lms__board_wait(lms__link_board_t *b, double timeout_s, char *err);
/* Copies out the other ranks' timelines of the round this one posted
 * last (before its first, their latest). */
lms_status_t lms__board_others(lms__link_board_t *b, lms__board_view_t *v);
void lms__board_view_free(lms__board_view_t *v);
/* Leaves the board (the last one removes it). */
void lms__board_leave(lms__link_board_t *b);

#endif
