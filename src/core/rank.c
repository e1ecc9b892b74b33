/* rank.c - the process's rank from the launcher's environment, and file
 * names per process (Note [One lms per rank] in rank.h). */
#include "core/rank.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The first of names set to a whole number >= 0, else -1. */
static int first_number(const char *const *names, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const char *v = getenv(names[i]);
    if (v == NULL || v[0] == '\0') continue;
    char *end = NULL;
    long x = strtol(v, &end, 10);
    if (*end == '\0' && x >= 0 && x < (1L << 30)) return (int)x;
  }
  return -1;
}

int lms__rank(void) {
  static const char *const names[] = {"RANK", "OMPI_COMM_WORLD_RANK",
                                      "PMI_RANK", "PMIX_RANK",
                                      "SLURM_PROCID"};
  return first_number(names, sizeof names / sizeof names[0]);
}

int lms__local_rank(void) {
  static const char *const names[] = {"LOCAL_RANK",
                                      "OMPI_COMM_WORLD_LOCAL_RANK",
                                      "MPI_LOCALRANKID", "SLURM_LOCALID"};
  return first_number(names, sizeof names / sizeof names[0]);
}

int lms__path_expand(const char *path, char *out, size_t size) {
  if (size == 0) return -1;
  size_t o = 0;
  int fits = 1;
  for (const char *p = path; *p != '\0' && fits; p++) {
    char num[24];
    const char *add = NULL;
    size_t len = 1;
    if (p[0] == '%' && p[1] == 'p') {
      snprintf(num, sizeof num, "%ld", (long)getpid());
      add = num;
    } else if (p[0] == '%' && p[1] == 'r') {
      int r = lms__rank();
      snprintf(num, sizeof num, "%d", r < 0 ? 0 : r);
      add = num;
    } else if (p[0] == '%' && p[1] == '%') {
      add = "%";
    }
    if (add != NULL) {
      len = strlen(add);
      p++;
    } else {
      add = p;
    }
    if (o + len >= size) {
      fits = 0;
      len = size - 1 - o;
    }
    memcpy(out + o, add, len);
    o += len;
  }
  out[o] = '\0';
  return fits ? 0 : -1;
}
