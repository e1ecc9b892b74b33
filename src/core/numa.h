/* numa.h - NUMA placement of pinned host memory (Note [Pinned slabs on the
 * GPU's node] in numa.c). */
#ifndef LMS_CORE_NUMA_H
#define LMS_CORE_NUMA_H

#include <stddef.h>

#include "core/status.h"

/* Nodes this code can name; a machine with more is placed up to here. */
#define LMS__NUMA_MAX_NODES 64

/* How many NUMA nodes the machine has (1 when sysfs does not say);
 * sysroot is "" for the real /. */
int lms__numa_nodes(const char *sysroot);
/* The node of the PCI device with this bus id ("0000:1A:00.0", any
 * case), or -1 when unknown. */
int lms__numa_node_of_pci(const char *sysroot, const char *busid);
/* Sets [p, p + n) to prefer `node` for pages not yet touched; p page
 * aligned.  LMS_ERR_INVALID for a node out of range, LMS_ERR_HOST_OOM
 * with err naming the reason when the kernel refuses. */
lms_status_t lms__numa_prefer(void *p, size_t n, int node, char *err);
/* The policy mode of the page at p (MPOL_*), -1 on failure; *node gets
 * the first node of its mask, -1 when none. */
int lms__numa_policy_of(void *p, int *node);

#endif
