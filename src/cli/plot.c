/* plot.c - finding and running gnuplot for `lms report` (plot.h). */
#include "cli/plot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* An executable regular file at path. */
static int runnable(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) &&
         access(path, X_OK) == 0;
}

/* Looks name up in PATH; a name with a slash is taken as a path. */
static int lookup(const char *name, char *out, size_t size) {
  if (strchr(name, '/') != NULL) {
    if (!runnable(name)) return -1;
    snprintf(out, size, "%s", name);
    return 0;
  }
  const char *path = getenv("PATH");
  if (path == NULL) path = "/usr/bin:/bin";
  while (*path != '\0') {
    const char *colon = strchr(path, ':');
    size_t len = colon ? (size_t)(colon - path) : strlen(path);
    if (len > 0 && (size_t)snprintf(out, size, "%.*s/%s", (int)len, path,
                                    name) < size &&
        runnable(out))
      return 0;
    path += len + (colon ? 1 : 0);
  }
  return -1;
}

void lms__plot_find(lms__plot_t *p) {
  memset(p, 0, sizeof *p);
  const char *env = getenv("LMS_GNUPLOT");
  if (env != NULL && env[0] != '\0') {
    if (lookup(env, p->program, sizeof p->program) != 0) {
      snprintf(p->why, sizeof p->why,
               "LMS_GNUPLOT names '%s', which is not an executable file", env);
      return;
    }
  } else if (lookup("gnuplot", p->program, sizeof p->program) != 0) {
    snprintf(p->why, sizeof p->why,
             "gnuplot is not installed (no 'gnuplot' in PATH; on Debian: "
             "apt-get install gnuplot-nox, or scripts/bootstrap.sh)");
    return;
  }
  p->available = 1;
}

int lms__plot_is_png(const char *path) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a,
                                       '\n'};
  unsigned char head[8];
  FILE *f = fopen(path, "rb");
  if (f == NULL) return 0;
  size_t n = fread(head, 1, sizeof head, f);
  fclose(f);
  return n == sizeof head && memcmp(head, sig, sizeof sig) == 0;
}

/* The last line of gnuplot's messages, for the report. */
static void last_line(const char *path, char *out, size_t size) {
  out[0] = '\0';
  FILE *f = fopen(path, "r");
  if (f == NULL) return;
  char line[256];
  while (fgets(line, sizeof line, f) != NULL) {
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0] != '\0') snprintf(out, size, "%s", line);
  }
  fclose(f);
}

int lms__plot_run(const lms__plot_t *p, const char *dir, const char *script,
                  const char *png, char *why, size_t why_size) {
  if (!p->available) {
    snprintf(why, why_size, "%s", p->why);
    return -1;
  }
  char log[1024], out[1024];
  snprintf(log, sizeof log, "%s/%.*s.log", dir,
           (int)(strlen(script) > 3 ? strlen(script) - 3 : strlen(script)),
           script);
  snprintf(out, sizeof out, "%s/%s", dir, png);
  unlink(out);
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(why, why_size, "cannot start gnuplot: %s", strerror(errno));
    return -1;
  }
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int null = open("/dev/null", O_RDONLY);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    if (null >= 0) dup2(null, 0);
    if (chdir(dir) != 0) _exit(126);
    execl(p->program, "gnuplot", script, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      snprintf(why, why_size, "waiting for gnuplot: %s", strerror(errno));
      return -1;
    }
  }
  char msg[256];
  last_line(log, msg, sizeof msg);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
      snprintf(why, why_size, "cannot run '%s'", p->program);
    else
      snprintf(why, why_size, "gnuplot %s failed%s%s", script,
               msg[0] ? ": " : "", msg);
    return -1;
  }
  if (!lms__plot_is_png(out)) {
    snprintf(why, why_size, "gnuplot %s wrote no PNG %s%s%s", script, png,
             msg[0] ? ": " : "", msg);
    return -1;
  }
  unlink(log);
  return 0;
}
