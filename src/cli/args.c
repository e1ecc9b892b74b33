/* args.c - setting a command's own flags aside before the options parser
 * sees the command line (lms__cli_extract), and handing them back to the
 * command after its words (lms__cli_run_with_flags).
 *
 * The runtime's options parser refuses flags it does not know, so each
 * command that has flags of its own (sim, tune, bench, report, demo)
 * moves them, with their values, out of argv first.  "--flag value" and
 * "--flag=value" are both recognised; "--" ends the search: what follows
 * belongs to another program. */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

int lms__cli_path(const char *cmd, const char *what, const char *text,
                  char *buf, size_t size) {
  size_t n = strlen(text);
  if (n >= size) {
    fprintf(stderr, "lms %s: %s: the path is %zu characters long; at most "
                    "%zu are accepted\n", cmd, what, n, size - 1);
    return -1;
  }
  memcpy(buf, text, n + 1);
  return 0;
}

const char *lms__cli_quote(const char *text, char *buf) {
  size_t n = strlen(text);
  if (n <= LMS__CLI_QUOTE_MAX) return text;
  memcpy(buf, text, LMS__CLI_QUOTE_MAX);
  memcpy(buf + LMS__CLI_QUOTE_MAX, "...", 4);
  return buf;
}

const char *lms__cli_split_flag(const char *arg, char *flag, size_t size) {
  const char *eq = strchr(arg, '=');
  if (strncmp(arg, "--", 2) == 0 && eq != NULL && (size_t)(eq - arg) < size) {
    snprintf(flag, size, "%.*s", (int)(eq - arg), arg);
    return eq + 1;
  }
  snprintf(flag, size, "%s", arg);
  return NULL;
}

lms_status_t lms__cli_link(const char *text, lms__link_t *out, char *err) {
  if (lms__link_parse(text, out, err) == LMS_OK) return LMS_OK;
  /* The link parser quotes the value whole: a long one is worded again
   * from its shortened form, no link either ("..." is in it), so that the
   * message keeps its "accepted:" part. */
  char q[LMS__CLI_QUOTE_MAX + 4];
  lms__link_t unused;
  if (strlen(text) > LMS__CLI_QUOTE_MAX)
    lms__link_parse(lms__cli_quote(text, q), &unused, err);
  return LMS_ERR_INVALID;
}

int lms__cli_list_fits(const char *cmd, const char *flag, const char *text,
                       size_t size) {
  size_t n = strlen(text);
  if (n < size) return 0;
  fprintf(stderr, "lms %s: %s: the list is %zu characters long; at most %zu "
                  "are accepted\n", cmd, flag, n, size - 1);
  return -1;
}

int lms__cli_out_dir(const char *dir, char *err) {
  char buf[LMS__PATH_MAX];
  if (dir[0] == '\0' || strlen(dir) > LMS__CLI_OUT_MAX) {
    lms__errf(err, "--out: the directory's path is %zu characters long; "
                   "accepted: 1 to %d", strlen(dir), LMS__CLI_OUT_MAX);
    return -1;
  }
  snprintf(buf, sizeof buf, "%s", dir);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) break;
    *p = '/';
  }
  if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
    lms__errf(err, "--out: cannot create the directory '%s': %s; accepted: "
                   "a directory that exists or can be made, and written",
              dir, strerror(errno));
    return -1;
  }
  struct stat sb;
  if (stat(buf, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    lms__errf(err, "--out: '%s' exists and is not a directory", dir);
    return -1;
  }
  /* A file is made and removed, because permission bits do not tell:
   * root passes access() for /proc, where no file can be made. */
  char probe[LMS__PATH_MAX + 32];
  snprintf(probe, sizeof probe, "%s/.lms-probe-XXXXXX", buf);
  int fd = mkstemp(probe);
  if (fd < 0) {
    lms__errf(err, "--out: cannot write in the directory '%s': %s; "
                   "accepted: a directory files can be made in",
              dir, strerror(errno));
    return -1;
  }
  close(fd);
  unlink(probe);
  return 0;
}

/* 1 if path names a file execve could start: a regular file with execute
 * permission (access() alone says yes to a directory). */
static int is_program(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) &&
         access(path, X_OK) == 0;
}

int lms__cli_find_program(const char *cmd, const char *name, char *buf,
                          size_t size) {
  if (name[0] == '\0') {
    fprintf(stderr, "lms %s: the program's name is empty; accepted: a "
                    "program's path, or a name found in PATH\n", cmd);
    return -1;
  }
  if (strchr(name, '/') != NULL) {
    struct stat sb;
    if (stat(name, &sb) != 0 || access(name, X_OK) != 0) {
      fprintf(stderr, "lms %s: cannot run '%s': %s\n", cmd, name,
              strerror(errno));
      return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
      fprintf(stderr, "lms %s: cannot run '%s': not a regular file; "
                      "accepted: an executable file\n", cmd, name);
      return -1;
    }
    if (strlen(name) >= size) {
      fprintf(stderr, "lms %s: the program's path is %zu characters long; "
                      "at most %zu are accepted\n", cmd, strlen(name),
              size - 1);
      return -1;
    }
    snprintf(buf, size, "%s", name);
    return 0;
  }
  /* execvp's search: PATH's entries in order, an empty one meaning the
   * current directory; without PATH, the system's default path. */
  char fallback[256] = "/bin:/usr/bin";
  const char *path = getenv("PATH");
  if (path == NULL) {
    size_t n = confstr(_CS_PATH, fallback, sizeof fallback);
    if (n == 0 || n > sizeof fallback) snprintf(fallback, sizeof fallback,
                                                "/bin:/usr/bin");
    path = fallback;
  }
  for (const char *p = path;;) {
    size_t n = strcspn(p, ":");
    int w = n == 0 ? snprintf(buf, size, "./%s", name)
                   : snprintf(buf, size, "%.*s/%s", (int)n, p, name);
    if (w > 0 && (size_t)w < size && is_program(buf)) return 0;
    if (p[n] == '\0') break;
    p += n + 1;
  }
  fprintf(stderr, "lms %s: '%s' not found in PATH; accepted: a program's "
                  "path (e.g. ./%s) or the name of an executable file in "
                  "PATH\n", cmd, name, name);
  return -1;
}

int lms__cli_run_with_flags(lms__cli_cmd_t cmd, const lms_options_t *opts,
                            int nwords, char **words, int nflags,
                            char **flags) {
  /* The words first, so that a flag missing its value is not given the
   * next word. */
  char **all = calloc((size_t)nwords + (size_t)nflags + 1, sizeof *all);
  if (all == NULL) {
    fprintf(stderr, "lms: out of memory\n");
    return 1;
  }
  int n = 0;
  for (int i = 0; i < nwords; i++) all[n++] = words[i];
  for (int i = 0; i < nflags; i++) all[n++] = flags[i];
  int rc = cmd(opts, n, all);
  free(all);
  return rc;
}
