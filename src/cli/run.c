/* run.c - `lms [OPTIONS] run [--stats] [OPTIONS] -- CMD ARGS`: runs an
 * unmodified CUDA program under liblms_preload.so.
 *
 * It finds the interposer (LMS_PRELOAD_LIB, else ../lib beside the lms
 * binary, else the library directory of the install it is part of), puts it first in LD_PRELOAD (keeping what was there), turns the
 * options given on the command line into their LMS_* environment twins,
 * and replaces itself with the program, so that the exit status, signals
 * and process id are the program's own.  Options in the environment reach
 * the program as they are; a flag overrides its variable, as everywhere.
 * --stats asks the interposer for its one-line summary at exit
 * (LMS_STATS_LINE=1); --stats=PATH is the global option and is passed on
 * like any other.
 *
 * Bad input (no "--", no command, a program that cannot be found, no
 * interposer, or one the dynamic loader cannot load) is refused with exit
 * status 2 before anything runs.  The
 * options' values were checked by the options parser already; the
 * interposer checks the environment again when it loads. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/options.h"

#define PRELOAD_NAME "liblms_preload.so"

/* Its one flag (Note [A command's flags] in cli.h), an int. */
static const lms__cli_flag_t kRunFlags[] = {
    {.flag = "--stats", .kind = LMS__CLI_SWITCH, .at = 0, .lo = 1},
};
static const lms__cli_spec_t kRun = {
    .cmd = "run", .help = "run", .parts = {{kRunFlags, 1, 0}}};

void lms__run_spec(lms__cli_spec_t *out) { *out = kRun; }

/* Only after the word "run": before it, -stats PATH (--stats PATH) is the
 * option that writes a stats file. */
int lms__run_extract_args(int *argc, char **argv, char **out) {
  int i = 1;
  while (i < *argc && strcmp(argv[i], "run") != 0 &&
         strcmp(argv[i], "--") != 0)
    i++;
  if (i >= *argc || strcmp(argv[i], "run") != 0) return 0;
  int rest = *argc - i; /* "run" stands where argv[0] does for extract */
  int n = lms__cli_extract(&rest, argv + i, out, &kRun);
  *argc = i + rest;
  return n;
}

/* Each option of the table: its spellings and its variable. */
static const struct run_opt {
  const char *flag, *alt, *env;
} g_opts[] = {
#define RUN_OPT_(field, kind, flag, alt, env, def, help) {flag, alt, env},
    LMS__OPTIONS_MAP(RUN_OPT_)
#undef RUN_OPT_
};

static const char *env_of(const char *name, size_t len) {
  for (size_t i = 0; i < sizeof g_opts / sizeof g_opts[0]; i++) {
    const char *names[2] = {g_opts[i].flag, g_opts[i].alt};
    for (int k = 0; k < 2; k++)
      if (names[k] != NULL && strlen(names[k]) == len &&
          strncmp(names[k], name, len) == 0)
        return g_opts[i].env;
  }
  return NULL;
}

/* Sets the LMS_* twin of every option in `given` (the command line as
 * typed, up to "--").  The parser accepted all of them already, so each
 * flag here is known and has its value. */
static int export_options(char **given) {
  for (int i = 1; given[i] != NULL && strcmp(given[i], "--") != 0; i++) {
    const char *s = given[i];
    if (s[0] != '-' || s[1] == '\0') continue;
    const char *name = s + (s[1] == '-' ? 2 : 1);
    const char *eq = strchr(name, '=');
    size_t len = eq != NULL ? (size_t)(eq - name) : strlen(name);
    const char *env = env_of(name, len);
    if (env == NULL) continue;
    const char *value = eq != NULL ? eq + 1 : given[++i];
    if (value == NULL) break;
    if (setenv(env, value, 1) != 0) {
      fprintf(stderr, "lms run: cannot set %s: %s\n", env, strerror(errno));
      return -1;
    }
  }
  return 0;
}

/* The interposer's path into buf, or -1 with the reason printed. */

/* 1 if path holds an ELF shared library: type ET_DYN and, unlike a
 * position-independent executable (also ET_DYN, and which the loader
 * will not preload), no PT_INTERP program header. */
static uint64_t elf_word(const unsigned char *p, int bytes, int big) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++)
    v |= (uint64_t)p[big ? bytes - 1 - i : i] << (8 * i);
  return v;
}

static int is_shared_object(const char *path) {
  static unsigned char h[1 << 16];
  FILE *f = fopen(path, "rb");
  if (f == NULL) return 0;
  size_t n = fread(h, 1, sizeof h, f);
  fclose(f);
  if (n < 52 || memcmp(h, "\x7f" "ELF", 4) != 0) return 0;
  int wide = h[4] == 2, big = h[5] == 2;
  if (elf_word(h + 16, 2, big) != 3) return 0; /* ET_DYN */
  uint64_t phoff = wide ? elf_word(h + 32, 8, big) : elf_word(h + 28, 4, big);
  uint64_t phsize = elf_word(h + (wide ? 54 : 42), 2, big);
  uint64_t phnum = elf_word(h + (wide ? 56 : 44), 2, big);
  for (uint64_t i = 0; i < phnum; i++) {
    uint64_t at = phoff + i * phsize;
    if (phsize < 4 || at + 4 > n) return 0; /* headers past what was read */
    if (elf_word(h + at, 4, big) == 3) return 0; /* PT_INTERP */
  }
  return 1;
}

/* 0 if the dynamic loader can load the library at path; otherwise -1
 * with its reason in why.  An ELF shared object may still not load (a
 * library it needs is missing, another architecture), and then the
 * loader only warns and runs the program without it.  So a child process
 * loads it first, its output discarded, and sends dlerror() back. */
static int loads(const char *path, char *why, size_t size) {
  int fd[2];
  why[0] = '\0';
  if (pipe(fd) != 0) return 0; /* cannot ask: let the loader decide */
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    close(fd[0]);
    close(fd[1]);
    return 0;
  }
  if (pid == 0) {
    close(fd[0]);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
    }
    void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    if (h == NULL) {
      const char *e = dlerror();
      if (e == NULL) e = "dlopen failed";
      ssize_t n = write(fd[1], e, strlen(e));
      (void)n;
    }
    _exit(h != NULL ? 0 : 3);
  }
  close(fd[1]);
  size_t got = 0;
  while (got < size - 1) {
    ssize_t n = read(fd[0], why + got, size - 1 - got);
    if (n > 0) got += (size_t)n;
    else if (n < 0 && errno == EINTR) continue;
    else break;
  }
  why[got] = '\0';
  close(fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 3 ? -1 : 0;
}

int lms__cli_exe_dir(char *dir, size_t size) {
  ssize_t n = readlink("/proc/self/exe", dir, size - 1);
  if (n <= 0) return -1;
  if ((size_t)n >= size - 1) {
    errno = ENAMETOOLONG;
    return -1;
  }
  dir[n] = '\0';
  char *slash = strrchr(dir, '/');
  if (slash != NULL) *slash = '\0';
  return 0;
}

static int find_preload(char *buf, size_t size) {
  const char *env = getenv("LMS_PRELOAD_LIB");
  char guess[PATH_MAX];
  if (env != NULL && env[0] != '\0') {
    if (access(env, R_OK) != 0) {
      fprintf(stderr, "lms run: LMS_PRELOAD_LIB='%s': %s; accepted: the "
                      "path of " PRELOAD_NAME "\n",
              env, strerror(errno));
      return -1;
    }
    snprintf(guess, sizeof guess, "%s", env);
  } else {
    char exe[PATH_MAX];
    if (lms__cli_exe_dir(exe, sizeof exe) != 0) {
      fprintf(stderr, "lms run: cannot find the lms binary's directory (%s); "
                      "set LMS_PRELOAD_LIB to the path of " PRELOAD_NAME "\n",
              strerror(errno));
      return -1;
    }
    /* ../lib beside bin/ in the build tree; where `cmake --install` put
     * it otherwise (the install's library directory, relative to its bin
     * directory: LMS_LIBREL, from CMake). */
#ifndef LMS_LIBREL
#define LMS_LIBREL "../lib"
#endif
    static const char *const rels[] = {"/../lib/" PRELOAD_NAME,
                                       "/" LMS_LIBREL "/" PRELOAD_NAME};
    size_t dir = strlen(exe);
    if (dir + strlen(rels[1]) + 1 > sizeof guess ||
        dir + strlen(rels[0]) + 1 > sizeof guess) {
      fprintf(stderr, "lms run: the path %s is too long\n", exe);
      return -1;
    }
    /* ../lib first, then the install's place; ../lib named in the
     * message when neither holds it. */
    snprintf(guess, sizeof guess, "%s%s", exe, rels[0]);
    if (access(guess, R_OK) != 0) {
      char installed[PATH_MAX];
      snprintf(installed, sizeof installed, "%s%s", exe, rels[1]);
      if (access(installed, R_OK) == 0)
        snprintf(guess, sizeof guess, "%s", installed);
    }
    if (access(guess, R_OK) != 0) {
      fprintf(stderr, "lms run: no %s (%s); build it, or set "
                      "LMS_PRELOAD_LIB to its path\n",
              guess, strerror(errno));
      return -1;
    }
  }
  /* An absolute path: the program may change directory before it loads
   * anything, and children inherit LD_PRELOAD. */
  char real[PATH_MAX];
  if (realpath(guess, real) == NULL) {
    fprintf(stderr, "lms run: %s: %s\n", guess, strerror(errno));
    return -1;
  }
  /* The dynamic loader only warns about an LD_PRELOAD entry it cannot
   * load and runs the program without it: no limit would be applied. */
  if (!is_shared_object(real)) {
    fprintf(stderr, "lms run: %s is not a shared library (an ELF shared "
                    "object); accepted: the path of " PRELOAD_NAME
                    " in LMS_PRELOAD_LIB\n", real);
    return -1;
  }
  char why[1024];
  if (loads(real, why, sizeof why) != 0) {
    fprintf(stderr, "lms run: the dynamic loader cannot load %s: %s; "
                    "accepted: an " PRELOAD_NAME " built for this machine, "
                    "with the libraries it needs\n", real, why);
    return -1;
  }
  if (strlen(real) + 1 > size) {
    fprintf(stderr, "lms run: the path %s is too long\n", real);
    return -1;
  }
  memcpy(buf, real, strlen(real) + 1);
  return 0;
}

/* LD_PRELOAD with the interposer first, unless it is there already. */
static int set_preload(const char *lib) {
  const char *old = getenv("LD_PRELOAD");
  if (old == NULL || old[0] == '\0') return setenv("LD_PRELOAD", lib, 1);
  size_t len = strlen(lib);
  for (const char *p = old; *p != '\0';) {
    size_t n = strcspn(p, ": ");
    if (n == len && strncmp(p, lib, len) == 0) return 0;
    p += n;
    p += strspn(p, ": ");
  }
  size_t total = len + 1 + strlen(old) + 1;
  char *v = malloc(total);
  if (v == NULL) return -1;
  snprintf(v, total, "%s:%s", lib, old);
  int rc = setenv("LD_PRELOAD", v, 1);
  free(v);
  return rc;
}

int lms__cli_run(int nwords, char **words, int nflags, char **flags,
                 char **given) {
  int stats = 0;
  if (lms__cli_parse(&kRun, nflags, flags, &stats, NULL) < 0) return 2;
  if (nwords == 0 || (nwords == 1 && strcmp(words[0], "--") == 0)) {
    fprintf(stderr, "lms run: no command; usage: lms [OPTIONS] run [--stats] "
                    "[OPTIONS] -- CMD ARGS\n");
    return 2;
  }
  if (strcmp(words[0], "--") != 0) {
    fprintf(stderr, "lms run: unexpected '%s'; put '--' before the command: "
                    "lms run [OPTIONS] -- %s ...\n",
            words[0], words[0]);
    return 2;
  }
  char prog[PATH_MAX], lib[PATH_MAX];
  if (lms__cli_find_program("run", words[1], prog, sizeof prog) != 0)
    return 2;
  if (find_preload(lib, sizeof lib) != 0) return 2;
  if (export_options(given) != 0 || set_preload(lib) != 0 ||
      (stats && setenv("LMS_STATS_LINE", "1", 1) != 0)) {
    fprintf(stderr, "lms run: cannot set the environment: %s\n",
            strerror(errno));
    return 2;
  }
  fflush(NULL);
  execv(prog, words + 1);
  fprintf(stderr, "lms run: cannot run '%s': %s\n", prog, strerror(errno));
  return 2;
}
