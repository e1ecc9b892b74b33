/* numa.c - which NUMA node a PCI device hangs off, and asking the kernel
 * to place pages there, without libnuma.
 *
 * Note [Pinned slabs on the GPU's node]
 * On a machine with several NUMA nodes, a copy between the GPU and host
 * memory on the other socket crosses the inter-socket link and runs
 * slower.  The CUDA device therefore places its pinned slabs on the GPU's
 * node when the machine has more than one: it maps the slab, sets the
 * range's policy to MPOL_PREFERRED for that node (mbind) before any page
 * is touched, and pins it with cudaHostRegister, which faults the pages
 * in under that policy.  Preferred rather than bound: when the node is
 * full the kernel takes another rather than failing the allocation.  The
 * node comes from sysfs (/sys/bus/pci/devices/BUSID/numa_node), -1 where
 * the platform does not say.  `sysroot` lets the tests stand a directory
 * in for /. */
#include "core/numa.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <linux/mempolicy.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/log.h"

int lms__numa_nodes(const char *sysroot) {
  char path[512];
  snprintf(path, sizeof path, "%s/sys/devices/system/node", sysroot);
  DIR *d = opendir(path);
  if (d == NULL) return 1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    const char *p = e->d_name;
    if (strncmp(p, "node", 4) != 0 || p[4] == '\0') continue;
    int digits = 1;
    for (const char *q = p + 4; *q; q++) digits &= isdigit((unsigned char)*q) != 0;
    n += digits;
  }
  closedir(d);
  return n > 0 ? n : 1;
}

int lms__numa_node_of_pci(const char *sysroot, const char *busid) {
  char id[64], path[512];
  size_t i = 0;
  for (; busid[i] != '\0' && i + 1 < sizeof id; i++) {
    char ch = (char)tolower((unsigned char)busid[i]);
    /* A bus id is hex digits, ':' and '.'; anything else is not one. */
    if (!isxdigit((unsigned char)ch) && ch != ':' && ch != '.') return -1;
    id[i] = ch;
  }
  id[i] = '\0';
  if (i == 0) return -1;
  snprintf(path, sizeof path, "%s/sys/bus/pci/devices/%s/numa_node", sysroot,
           id);
  FILE *f = fopen(path, "r");
  if (f == NULL) return -1;
  int node = -1;
  if (fscanf(f, "%d", &node) != 1 || node < 0 || node >= LMS__NUMA_MAX_NODES)
    node = -1;
  fclose(f);
  return node;
}

lms_status_t lms__numa_prefer(void *p, size_t n, int node, char *err) {
  if (node < 0 || node >= LMS__NUMA_MAX_NODES) {
    lms__errf(err, "NUMA node %d is outside 0..%d", node,
              LMS__NUMA_MAX_NODES - 1);
    return LMS_ERR_INVALID;
  }
  unsigned long mask[LMS__NUMA_MAX_NODES / (8 * sizeof(unsigned long))] = {0};
  mask[node / (8 * sizeof(unsigned long))] = 1ul << (node % (8 * sizeof(unsigned long)));
  if (syscall(SYS_mbind, p, n, MPOL_PREFERRED, mask,
              (unsigned long)LMS__NUMA_MAX_NODES + 1, 0ul) != 0) {
    lms__errf(err, "mbind of %zu bytes to NUMA node %d: %s", n, node,
              strerror(errno));
    return LMS_ERR_HOST_OOM;
  }
  return LMS_OK;
}

int lms__numa_policy_of(void *p, int *node) {
  int mode = -1;
  unsigned long mask[LMS__NUMA_MAX_NODES / (8 * sizeof(unsigned long))] = {0};
  if (syscall(SYS_get_mempolicy, &mode, mask,
              (unsigned long)LMS__NUMA_MAX_NODES + 1, p, MPOL_F_ADDR) != 0)
    return -1;
  *node = -1;
  for (int i = 0; i < LMS__NUMA_MAX_NODES; i++)
    if ((mask[i / (8 * sizeof(unsigned long))] >> (i % (8 * sizeof(unsigned long)))) & 1ul) {
      *node = i;
      break;
    }
  return mode;
}
