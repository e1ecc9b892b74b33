/* replay_main.c - runs a harness's LLVMFuzzerTestOneInput over files, one
 * call per file, where libFuzzer is not linked (GCC, or a build without
 * -DLMS_FUZZ=ON).  A directory argument stands for every regular file in
 * it.  Exits 0 when every input passed; a failing input aborts, by a
 * sanitizer or by FUZZ_CHECK, naming itself first on stderr.
 *
 * Each input is copied into a buffer of exactly its size, as libFuzzer
 * does, so that a read past its end is caught by the address sanitizer. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "%s: cannot open: %s\n", path, strerror(errno));
    return -1;
  }
  size_t cap = 4096, n = 0;
  uint8_t *buf = malloc(cap);
  for (;;) {
    if (buf == NULL) break;
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    uint8_t *grown = realloc(buf, cap * 2);
    if (grown == NULL) free(buf);
    buf = grown;
    cap *= 2;
  }
  int bad = buf == NULL || ferror(f);
  fclose(f);
  if (bad) {
    fprintf(stderr, "%s: cannot read\n", path);
    free(buf);
    return -1;
  }
  /* Exactly n bytes, so that the sanitizer sees the input's end. */
  uint8_t *exact = malloc(n > 0 ? n : 1);
  if (exact == NULL) {
    free(buf);
    return -1;
  }
  memcpy(exact, buf, n);
  free(buf);
  fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 0;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file in dir, in name order so that runs are repeatable. */
static int run_dir(const char *dir, int *count) {
  DIR *d = opendir(dir);
  if (d == NULL) {
    fprintf(stderr, "%s: cannot open: %s\n", dir, strerror(errno));
    return -1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  int failed = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      char **grown = realloc(names, cap * sizeof *names);
      if (grown == NULL) {
        failed = 1;
        break;
      }
      names = grown;
    }
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    if ((names[n] = malloc(len)) == NULL) {
      failed = 1;
      break;
    }
    snprintf(names[n++], len, "%s/%s", dir, e->d_name);
  }
  closedir(d);
  if (n > 0) qsort(names, n, sizeof *names, cmp_names);
  for (size_t i = 0; i < n; i++) {
    struct stat sb;
    if (!failed && stat(names[i], &sb) == 0 && S_ISREG(sb.st_mode)) {
      failed |= run_file(names[i]) != 0;
      (*count)++;
    }
    free(names[i]);
  }
  free(names);
  return failed ? -1 : 0;
}

int main(int argc, char **argv) {
  int count = 0, failed = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; i++) {
    struct stat sb;
    if (stat(argv[i], &sb) != 0) {
      fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
      failed = 1;
    } else if (S_ISDIR(sb.st_mode)) {
      failed |= run_dir(argv[i], &count) != 0;
    } else {
      failed |= run_file(argv[i]) != 0;
      count++;
    }
  }
  fprintf(stderr, "replay: %d inputs, %s\n", count,
          failed ? "some could not be read" : "all passed");
  return failed ? 1 : 0;
}
