/* test_numa.c - Note [Pinned slabs on the GPU's node]: the GPU's node is
 * read from sysfs (a directory stands in for / here), unknown or odd
 * answers give -1, and the placement asked for is the policy the kernel
 * then holds for the range. */
#include <criterion/criterion.h>
#include "check.h"
#include <linux/mempolicy.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/numa.h"
#include "core/status.h"

static char root[64];

static void mk(const char *rel) {
  char path[256], cmd[300];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
  cr_assert(eq(int, system(cmd), 0));
}

static void put(const char *rel, const char *text) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  FILE *f = fopen(path, "w");
  cr_assert(f != NULL, "%s", path);
  fputs(text, f);
  fclose(f);
}

static void up(void) {
  snprintf(root, sizeof root, "/tmp/lms-numa-XXXXXX");
  cr_assert(mkdtemp(root) != NULL);
}

static void down(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  (void)!system(cmd);
}

TestSuite(numa, .init = up, .fini = down);

Test(numa, nodes_and_the_node_of_a_device) {
  cr_assert(eq(int, lms__numa_nodes(root), 1), "no sysfs: one node");
  mk("sys/devices/system/node/node0");
  mk("sys/devices/system/node/node1");
  mk("sys/devices/system/node/power");
  mk("sys/devices/system/node/nodex");
  cr_assert(eq(int, lms__numa_nodes(root), 2));
  mk("sys/bus/pci/devices/0000:1a:00.0");
  put("sys/bus/pci/devices/0000:1a:00.0/numa_node", "1\n");
  cr_assert(eq(int, lms__numa_node_of_pci(root, "0000:1A:00.0"), 1),
            "CUDA spells the bus id in capitals, sysfs in small letters");
  put("sys/bus/pci/devices/0000:1a:00.0/numa_node", "-1\n");
  cr_assert(eq(int, lms__numa_node_of_pci(root, "0000:1a:00.0"), -1));
  put("sys/bus/pci/devices/0000:1a:00.0/numa_node", "seven\n");
  cr_assert(eq(int, lms__numa_node_of_pci(root, "0000:1a:00.0"), -1));
  put("sys/bus/pci/devices/0000:1a:00.0/numa_node", "64\n");
  cr_assert(eq(int, lms__numa_node_of_pci(root, "0000:1a:00.0"), -1));
  cr_assert(eq(int, lms__numa_node_of_pci(root, "0000:3b:00.0"), -1),
            "a device sysfs does not list");
  cr_assert(eq(int, lms__numa_node_of_pci(root, "../../etc"), -1),
            "a bus id that is no bus id");
  cr_assert(eq(int, lms__numa_node_of_pci(root, ""), -1));
}

Test(numa, the_preference_is_the_range_policy) {
  long page = sysconf(_SC_PAGESIZE);
  size_t n = 16 * (size_t)page;
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  cr_assert(p != MAP_FAILED);
  char err[LMS__ERRBUF] = "";
  int node = -2;
  int before = lms__numa_policy_of(p, &node);
  cr_assert(ne(int, before, MPOL_PREFERRED), "a fresh mapping has no policy");
  cr_assert(eq(int, lms__numa_prefer(p, n, 0, err), LMS_OK), "%s", err);
  memset(p, 1, n); /* the first touch happens under the policy */
  cr_assert(eq(int, lms__numa_policy_of((char *)p + n / 2, &node),
               MPOL_PREFERRED));
  cr_assert(eq(int, node, 0));
  cr_assert(eq(int, lms__numa_prefer(p, n, -1, err), LMS_ERR_INVALID));
  cr_assert(strstr(err, "outside 0..63") != NULL, "%s", err);
  cr_assert(eq(int, lms__numa_prefer(p, n, 64, err), LMS_ERR_INVALID));
  /* A node the machine lacks: the kernel refuses, and says so. */
  if (lms__numa_nodes("") < 40) {
    cr_assert(eq(int, lms__numa_prefer(p, n, 40, err), LMS_ERR_HOST_OOM));
    cr_assert(strstr(err, "mbind of") != NULL, "%s", err);
  }
  munmap(p, n);
}
