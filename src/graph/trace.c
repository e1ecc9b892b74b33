/* trace.c - reading and writing traces, workloads as line-oriented text
 * (the format is docs/trace-format.md).
 *
 * The reader is strict and stops at the first error, with a message of the
 * form "LABEL:LINE: reason" that names what was wrong and what is
 * accepted.  It never reads a line into more than MAX_LINE + 2 bytes,
 * whatever the input, and every number goes through one checked parser.
 *
 * Invariants: the reader's output workload need not be initialized (what
 * it held is overwritten, not freed); a read that fails leaves it empty
 * (as after lms__wl_init) and frees everything it allocated; a read that succeeds
 * gives a workload that lms__wl_validate accepts; the writer writes only
 * workloads that lms__wl_validate accepts, so whatever it writes reads
 * back, equal up to the replacement of characters outside the name
 * alphabet.  Reading takes time linear in the input, whatever IDs it
 * chooses and however many chunks one step names. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "graph/graph.h"

#define TRACE_MAGIC "lms-trace"
#define TRACE_VERSION 1ull
/* The longest line, in bytes, not counting its end. */
#define MAX_LINE 65536
#define MAX_CHUNK_ID 2147483647ull
/* Names: LMS__WL_NAME - 1 for chunks and steps, the workload's buffer less
 * its terminator for the workload. */
#define NAME_MAX_CHUNK (LMS__WL_NAME - 1)
#define NAME_MAX_WORKLOAD (sizeof(((lms__workload_t *)0)->name) - 1)
/* The writer's references per line; see Note [Continuation lines]. */
#define REFS_PER_LINE 256

#define USAGE_HEADER "lms-trace 1"
#define USAGE_WORKLOAD "workload NAME"
#define USAGE_CHUNK "chunk ID BYTES NAME persistent|transient"
#define USAGE_STEP "step NS NAME REF..."
#define USAGE_REFS "refs REF..."
#define NAME_ALPHABET "A-Z a-z 0-9 _ . : / + -"

/* Note [Continuation lines]
 * A step may reference any number of chunks, but a line holds at most
 * MAX_LINE bytes, and an unbounded line would let one corrupt file make
 * the reader allocate without limit.  A "refs" line therefore continues
 * the step above it, and the writer breaks every step after REFS_PER_LINE
 * references (256 references of at most 14 bytes each stay far below the
 * limit).  The reader treats the step line and its refs lines as one
 * step: a chunk named twice across them is the same error as twice on one
 * line. */

/* Note [Chunk IDs]
 * IDs in a file are arbitrary numbers below 2^31, so they cannot index an
 * array.  The reader keeps an open-addressing table from ID to the dense
 * index lms__wl_add_chunk returned, plus, per index, the ID (for
 * messages), the line that declared it (so that an unused transient chunk
 * is reported where it was declared, rather than at the end of the file),
 * and the number of the last step that named it: one comparison finds a
 * chunk named twice in a step, and a zero at the end marks a chunk no step
 * used.
 *
 * The file chooses the IDs, so the table's hash must be one the file
 * cannot aim at.  A fixed hash cannot be: the multiplicative hash this
 * table once used is a bijection anyone can invert, and a million IDs
 * picked to start their probes within a thousand slots of each other made
 * linear probing quadratic (a hundred thousand took 20 s to read; a
 * million had not finished after 400 s).  Even a strong but public hash
 * is only slower to aim at: among 2^31 IDs there are a million whose
 * hashes fall in any window of a thousand slots.  So each reader draws a
 * 128-bit key from the operating system (getentropy) and hashes with
 * SipHash-1-3 under it, a keyed function designed so that without the
 * key its outputs cannot be told from random ones: whatever the IDs, the
 * probe sequences are those of random hashing, with the table at most
 * half full, an expected 1.5 probes to find an ID and 2.5 to find it
 * absent, and long probes as unlikely as for random IDs.  Should the
 * system give no randomness, the key comes from the clock and addresses,
 * which a file cannot know in advance either.  The cost is four SipHash
 * rounds, some 60 instructions, per lookup: 7.5 % of what reading a
 * trace of sequential IDs executes, paid back by the constant-time
 * lms__wl_add_ref and one-pass lms__wl_validate (with steps of 64
 * references the whole read runs 2 % fewer instructions than with the
 * fixed hash; bench/bench_trace.c times the cases).  A structure with a
 * worst case bounded by construction was weighed: sorting the IDs once
 * needs them all before the first lookup, but steps may come between
 * chunk lines and a trace may be read from a pipe; a search tree over
 * 31-bit IDs would take some twenty dependent loads per lookup, several
 * times the hash's cost on every trace. */

typedef struct reader {
  FILE *f;
  const char *label;
  char *err;
  lms__workload_t *w;
  unsigned long long line; /* the line being parsed, from 1 */
  char *buf;               /* MAX_LINE + 2 bytes */
  /* ID -> index (Note [Chunk IDs]); keys hold ID + 1 so that 0 is empty. */
  uint64_t key[2]; /* the hash's key, drawn for each read */
  uint32_t *keys, *vals;
  uint32_t map_cap, map_len;
  /* Per chunk index, aux_cap entries. */
  uint32_t *ids;
  unsigned long long *decl_line;
  uint32_t *last_step; /* 1 + the step that last named it; 0 if none */
  uint32_t aux_cap;
  /* Totals so far, kept within the limits of Note [Workload totals]. */
  uint64_t total_bytes, named_bytes, total_ns;
  unsigned long long header_line, workload_line;
  int seen_record;   /* a chunk or step line has been read */
  int in_step;       /* the last record was a step or refs line */
} reader_t;

/* ---- Messages ---------------------------------------------------------- */

/* Formats `tok` for a message: at most 40 bytes of it, with anything not
 * printable ASCII escaped, so that a corrupt file cannot garble the
 * terminal or hide the rest of the message. */
static const char *show(const char *tok, char out[200]) {
  size_t o = 0, i = 0;
  for (; tok[i] != '\0' && i < 40; i++) {
    unsigned char c = (unsigned char)tok[i];
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out[o++] = (char)c;
    } else {
      snprintf(out + o, 5, "\\x%02x", c);
      o += 4;
    }
  }
  if (tok[i] != '\0') {
    memcpy(out + o, "...", 3);
    o += 3;
  }
  out[o] = '\0';
  return out;
}

/* Writes "LABEL:LINE: " and the formatted reason into r->err, and returns
 * st.  A label longer than 160 bytes is cut from the front so that the
 * reason still fits. */
static lms_status_t fail(reader_t *r, lms_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static lms_status_t fail(reader_t *r, lms_status_t st, const char *fmt,
                         ...) {
  char reason[LMS__ERRBUF];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  size_t len = strlen(r->label);
  const char *cut = len > 160 ? "..." : "";
  const char *label = len > 160 ? r->label + len - 160 : r->label;
  lms__errf(r->err, "%s%s:%llu: %s", cut, label, r->line ? r->line : 1,
            reason);
  return st;
}

static lms_status_t fail_oom(reader_t *r) {
  return fail(r, LMS_ERR_HOST_OOM, "out of host memory reading the trace "
              "(%u chunks, %u steps, %u references so far)", r->w->nchunks,
              r->w->nsteps, r->w->nrefs);
}

/* ---- Lines and fields -------------------------------------------------- */

/* Reads the next line into r->buf without its LF, or a CR before it, and
 * counts it.  Returns 1 for a line, 0 at the end of the file, or -1 with
 * *st and r->err set.  At most MAX_LINE + 1 bytes are stored: the last may
 * be a CR that belongs to the line's end. */
static int read_line(reader_t *r, lms_status_t *st) {
  size_t n = 0;
  int c;
  r->line++;
  while ((c = getc_unlocked(r->f)) != EOF && c != '\n') {
    if (c == '\0') {
      *st = fail(r, LMS_ERR_INVALID, "NUL byte at column %zu; a trace is "
                 "text", n + 1);
      return -1;
    }
    if (n == MAX_LINE + 1) break;
    r->buf[n++] = (char)c;
  }
  if (c == EOF) {
    if (ferror(r->f)) {
      *st = fail(r, LMS_ERR_INVALID, "read error: %s", strerror(errno));
      return -1;
    }
    if (n == 0) {
      r->line--;
      return 0;
    }
  }
  if (n > 0 && r->buf[n - 1] == '\r') n--;
  if (n > MAX_LINE) {
    *st = fail(r, LMS_ERR_INVALID, "line is longer than %d bytes, the "
               "longest a trace may hold (long steps continue on refs "
               "lines)", MAX_LINE);
    return -1;
  }
  r->buf[n] = '\0';
  return 1;
}

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* Cuts the next field out of the line at *p; NULL when none is left. */
static char *next_field(char **p) {
  char *s = *p;
  while (is_blank(*s)) s++;
  if (*s == '\0') {
    *p = s;
    return NULL;
  }
  char *field = s;
  while (*s != '\0' && !is_blank(*s)) s++;
  if (*s != '\0') *s++ = '\0';
  *p = s;
  return field;
}

static lms_status_t missing(reader_t *r, const char *record,
                            const char *field, const char *usage) {
  return fail(r, LMS_ERR_INVALID, "%s line ends before its %s field; "
              "expected: %s", record, field, usage);
}

/* Fails unless the line at *p has no fields left. */
static lms_status_t expect_end(reader_t *r, char **p, const char *record,
                               const char *usage) {
  char *extra = next_field(p);
  if (extra == NULL) return LMS_OK;
  char s[200];
  return fail(r, LMS_ERR_INVALID, "unexpected field '%s' at the end of a "
              "%s line; expected: %s", show(extra, s), record, usage);
}

/* Parses a decimal number from lo to hi.  `what` names the field in the
 * message ("chunk size"). */
static lms_status_t parse_num(reader_t *r, const char *tok, const char *what,
                              unsigned long long lo, unsigned long long hi,
                              uint64_t *v) {
  char s[200];
  const char *why = NULL;
  if (tok[0] == '\0') {
    why = "is empty";
  } else if (tok[0] == '-') {
    why = "is negative";
  } else if (tok[0] == '+') {
    why = "has a sign";
  } else if (tok[0] == '0' && (tok[1] == 'x' || tok[1] == 'X')) {
    why = "is hexadecimal";
  } else if (tok[strspn(tok, "0123456789")] != '\0') {
    why = "is not a decimal number";
  } else {
    /* Only digits: strtoull cannot meet a sign or blank space here, and
     * ERANGE is the one failure left. */
    char *end;
    errno = 0;
    unsigned long long x = strtoull(tok, &end, 10);
    if (*end != '\0') {
      why = "is not a decimal number";
    } else if (errno == ERANGE || x < lo || x > hi) {
      why = "is out of range";
    } else {
      *v = x;
      return LMS_OK;
    }
  }
  return fail(r, LMS_ERR_INVALID, "%s '%s' %s; accepted: a decimal number "
              "from %llu to %llu", what, show(tok, s), why, lo, hi);
}

/* Refuses a value v that would take one of the trace's running sums (now
 * sum) past cap (Note [Workload totals]).  The message reads "<what> V
 * brings the trace's <sum_of> to more than CAP <cap_unit> in all;
 * accepted: <what>s summing to at most CAP<unit>". */
static lms_status_t check_sum(reader_t *r, const char *what, uint64_t v,
                              uint64_t sum, uint64_t cap, const char *sum_of,
                              const char *cap_unit, const char *unit) {
  if (v <= cap - sum) return LMS_OK;
  return fail(r, LMS_ERR_INVALID, "%s %llu brings the trace's %s to more "
              "than %llu %s in all; accepted: %ss summing to at most %llu%s",
              what, (unsigned long long)v, sum_of, (unsigned long long)cap,
              cap_unit, what, (unsigned long long)cap, unit);
}

/* Checks a name field and copies it to out ("-" becomes ""). */
static lms_status_t parse_name(reader_t *r, const char *tok, const char *what,
                               size_t max, char *out) {
  char s[200];
  size_t len = strlen(tok);
  if (len > max)
    return fail(r, LMS_ERR_INVALID, "%s '%s' is %zu characters long; "
                "accepted: 1 to %zu characters of %s", what, show(tok, s),
                len, max, NAME_ALPHABET);
  size_t bad = strspn(tok, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                           "0123456789_.:/+-");
  if (bad < len) {
    char c[2] = {tok[bad], '\0'};
    char cs[200];
    return fail(r, LMS_ERR_INVALID, "%s '%s' has the character '%s' at "
                "position %zu; accepted: 1 to %zu characters of %s", what,
                show(tok, s), show(c, cs), bad + 1, max, NAME_ALPHABET);
  }
  if (strcmp(tok, "-") == 0) tok = "";
  memcpy(out, tok, strlen(tok) + 1);
  return LMS_OK;
}

/* ---- The ID table (Note [Chunk IDs]) ----------------------------------- */

#define SIP_ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIP_ROUND(v0, v1, v2, v3)                                              \
  do {                                                                         \
    v0 += v1;                                                                  \
    v1 = SIP_ROTL(v1, 13);                                                     \
    v1 ^= v0;                                                                  \
    v0 = SIP_ROTL(v0, 32);                                                     \
    v2 += v3;                                                                  \
    v3 = SIP_ROTL(v3, 16);                                                     \
    v3 ^= v2;                                                                  \
    v0 += v3;                                                                  \
    v3 = SIP_ROTL(v3, 21);                                                     \
    v3 ^= v0;                                                                  \
    v2 += v1;                                                                  \
    v1 = SIP_ROTL(v1, 17);                                                     \
    v1 ^= v2;                                                                  \
    v2 = SIP_ROTL(v2, 32);                                                     \
  } while (0)

/* SipHash-1-3 of the ID as 4 bytes, little-endian, under the reader's key
 * (Note [Chunk IDs]).  Four bytes are a message shorter than one block,
 * so the one block is the ID with the length, 4, in its top byte. */
static uint64_t id_hash(const reader_t *r, uint32_t id) {
  uint64_t v0 = r->key[0] ^ 0x736f6d6570736575ull;
  uint64_t v1 = r->key[1] ^ 0x646f72616e646f6dull;
  uint64_t v2 = r->key[0] ^ 0x6c7967656e657261ull;
  uint64_t v3 = r->key[1] ^ 0x7465646279746573ull;
  uint64_t m = (uint64_t)id | (4ull << 56);
  v3 ^= m;
  SIP_ROUND(v0, v1, v2, v3);
  v0 ^= m;
  v2 ^= 0xff;
  SIP_ROUND(v0, v1, v2, v3);
  SIP_ROUND(v0, v1, v2, v3);
  SIP_ROUND(v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}

/* Draws the reader's hash key (Note [Chunk IDs]). */
static void draw_key(reader_t *r) {
  if (getentropy(r->key, sizeof r->key) == 0) return;
  /* No randomness from the system: the clock and this reader's address,
   * which address-space randomization varies from run to run.  SipHash
   * mixes its key itself; all it needs is one the file cannot know. */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  r->key[0] = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  r->key[1] = (uint64_t)(uintptr_t)r ^ ((uint64_t)getpid() << 32);
}

/* The index of chunk `id`, or UINT32_MAX if it is not declared. */
static uint32_t map_find(const reader_t *r, uint32_t id) {
  if (r->map_cap == 0) return UINT32_MAX;
  uint32_t mask = r->map_cap - 1;
  for (uint32_t i = (uint32_t)id_hash(r, id) & mask;; i = (i + 1) & mask) {
    if (r->keys[i] == 0) return UINT32_MAX;
    if (r->keys[i] == id + 1) return r->vals[i];
  }
}

static void map_put(reader_t *r, uint32_t id, uint32_t index) {
  uint32_t mask = r->map_cap - 1;
  uint32_t i = (uint32_t)id_hash(r, id) & mask;
  while (r->keys[i] != 0) i = (i + 1) & mask;
  r->keys[i] = id + 1;
  r->vals[i] = index;
  r->map_len++;
}

/* Makes room for one more ID in the table and one more chunk in the
 * per-index arrays; 0 on success, -1 when memory runs out. */
static int reserve_chunk(reader_t *r) {
  if ((r->map_len + 1) * 2 > r->map_cap) {
    if (r->map_cap >= (1u << 31)) return -1;
    uint32_t ncap = r->map_cap ? r->map_cap * 2 : 64;
    uint32_t *keys = calloc(ncap, sizeof *keys);
    uint32_t *vals = malloc((size_t)ncap * sizeof *vals);
    if (keys == NULL || vals == NULL) {
      free(keys);
      free(vals);
      return -1;
    }
    uint32_t *okeys = r->keys, *ovals = r->vals, ocap = r->map_cap;
    r->keys = keys;
    r->vals = vals;
    r->map_cap = ncap;
    r->map_len = 0;
    for (uint32_t i = 0; i < ocap; i++)
      if (okeys[i] != 0) map_put(r, okeys[i] - 1, ovals[i]);
    free(okeys);
    free(ovals);
  }
  if (r->w->nchunks >= r->aux_cap) {
    if (r->aux_cap >= UINT32_MAX / 2) return -1;
    uint32_t ncap = r->aux_cap ? r->aux_cap * 2 : 64;
    uint32_t *ids = realloc(r->ids, (size_t)ncap * sizeof *ids);
    if (ids == NULL) return -1;
    r->ids = ids;
    unsigned long long *decl =
        realloc(r->decl_line, (size_t)ncap * sizeof *decl);
    if (decl == NULL) return -1;
    r->decl_line = decl;
    uint32_t *last = realloc(r->last_step, (size_t)ncap * sizeof *last);
    if (last == NULL) return -1;
    r->last_step = last;
    r->aux_cap = ncap;
  }
  return 0;
}

/* ---- Records ----------------------------------------------------------- */

/* Parses the header, whose first field `magic` is already cut out. */
static lms_status_t parse_header(reader_t *r, char *p, const char *magic) {
  char s[200];
  if (strcmp(magic, TRACE_MAGIC) != 0)
    return fail(r, LMS_ERR_INVALID, "expected the header '%s' before any "
                "record; got '%s'", USAGE_HEADER, show(magic, s));
  char *version = next_field(&p);
  if (version == NULL) return missing(r, "header", "VERSION", USAGE_HEADER);
  unsigned long long v = 0;
  if (version[strspn(version, "0123456789")] == '\0') {
    errno = 0;
    v = strtoull(version, NULL, 10);
    if (errno == ERANGE) v = 0;
  }
  if (v != TRACE_VERSION)
    return fail(r, LMS_ERR_INVALID, "unsupported trace version '%s'; this "
                "reader accepts version %llu", show(version, s),
                TRACE_VERSION);
  LMS_CHECK(expect_end(r, &p, "header", USAGE_HEADER));
  r->header_line = r->line;
  return LMS_OK;
}

static lms_status_t parse_workload(reader_t *r, char *p) {
  if (r->workload_line != 0)
    return fail(r, LMS_ERR_INVALID, "a second workload line (the first is "
                "line %llu); a trace names its workload once",
                r->workload_line);
  if (r->seen_record)
    return fail(r, LMS_ERR_INVALID, "the workload line must come before "
                "any chunk or step line");
  char *name = next_field(&p);
  if (name == NULL) return missing(r, "workload", "NAME", USAGE_WORKLOAD);
  LMS_CHECK(parse_name(r, name, "workload name", NAME_MAX_WORKLOAD,
                       r->w->name));
  LMS_CHECK(expect_end(r, &p, "workload", USAGE_WORKLOAD));
  r->workload_line = r->line;
  return LMS_OK;
}

static lms_status_t parse_chunk(reader_t *r, char *p) {
  char s[200];
  uint64_t id, size;
  char name[LMS__WL_NAME];
  char *f = next_field(&p);
  if (f == NULL) return missing(r, "chunk", "ID", USAGE_CHUNK);
  LMS_CHECK(parse_num(r, f, "chunk ID", 0, MAX_CHUNK_ID, &id));
  uint32_t seen = map_find(r, (uint32_t)id);
  if (seen != UINT32_MAX)
    return fail(r, LMS_ERR_INVALID, "chunk ID %llu is declared twice (first "
                "on line %llu); each chunk line needs its own ID",
                (unsigned long long)id, r->decl_line[seen]);
  if ((f = next_field(&p)) == NULL)
    return missing(r, "chunk", "BYTES", USAGE_CHUNK);
  LMS_CHECK(parse_num(r, f, "chunk size", 1, LMS__WL_MAX_SIZE, &size));
  LMS_CHECK(check_sum(r, "chunk size", size, r->total_bytes,
                      LMS__WL_MAX_TOTAL_BYTES, "chunks", "bytes (1 PiB)", ""));
  if ((f = next_field(&p)) == NULL)
    return missing(r, "chunk", "NAME", USAGE_CHUNK);
  LMS_CHECK(parse_name(r, f, "chunk name", NAME_MAX_CHUNK, name));
  if ((f = next_field(&p)) == NULL)
    return missing(r, "chunk", "persistent|transient", USAGE_CHUNK);
  int transient;
  if (strcmp(f, "persistent") == 0) {
    transient = 0;
  } else if (strcmp(f, "transient") == 0) {
    transient = 1;
  } else {
    return fail(r, LMS_ERR_INVALID, "chunk lifetime '%s' is not known; "
                "accepted: persistent or transient", show(f, s));
  }
  LMS_CHECK(expect_end(r, &p, "chunk", USAGE_CHUNK));

  if (reserve_chunk(r) != 0) return fail_oom(r);
  uint32_t index;
  lms_status_t st = lms__wl_add_chunk(r->w, size, transient, name, &index);
  if (st == LMS_ERR_HOST_OOM) return fail_oom(r);
  if (st != LMS_OK)
    return fail(r, st, "chunk %llu was refused: %s", (unsigned long long)id,
                lms_strerror(st));
  map_put(r, (uint32_t)id, index);
  r->total_bytes += size;
  r->ids[index] = (uint32_t)id;
  r->decl_line[index] = r->line;
  r->last_step[index] = 0;
  return LMS_OK;
}

/* Parses the REF fields left on the line into the last step. */
static lms_status_t parse_refs(reader_t *r, char *p) {
  char s[200];
  char *f;
  while ((f = next_field(&p)) != NULL) {
    unsigned access;
    const char *num;
    if (strncmp(f, "rw:", 3) == 0) {
      access = LMS_ACCESS_RW;
      num = f + 3;
    } else if (strncmp(f, "r:", 2) == 0) {
      access = LMS_ACCESS_READ;
      num = f + 2;
    } else if (strncmp(f, "w:", 2) == 0) {
      access = LMS_ACCESS_WRITE;
      num = f + 2;
    } else {
      const char *colon = strchr(f, ':');
      if (colon == NULL)
        return fail(r, LMS_ERR_INVALID, "reference '%s' has no ':'; "
                    "accepted: r:ID, w:ID or rw:ID", show(f, s));
      char acc[200];
      size_t alen = (size_t)(colon - f);
      char head[48];
      memcpy(head, f, alen < 40 ? alen : 40);
      head[alen < 40 ? alen : 40] = '\0';
      return fail(r, LMS_ERR_INVALID, "reference '%s' has the access '%s'; "
                  "accepted: r:ID, w:ID or rw:ID", show(f, s),
                  show(head, acc));
    }
    if (*num == '\0')
      return fail(r, LMS_ERR_INVALID, "reference '%s' has no chunk ID; "
                  "accepted: r:ID, w:ID or rw:ID", show(f, s));
    uint64_t id;
    LMS_CHECK(parse_num(r, num, "chunk ID in reference", 0, MAX_CHUNK_ID,
                        &id));
    uint32_t index = map_find(r, (uint32_t)id);
    if (index == UINT32_MAX)
      return fail(r, LMS_ERR_INVALID, "reference '%s' names chunk %llu, "
                  "which no chunk line above declares", show(f, s),
                  (unsigned long long)id);
    if (r->last_step[index] == r->w->nsteps)
      return fail(r, LMS_ERR_INVALID, "the step names chunk %llu twice; "
                  "name a chunk once per step, as rw:%llu to read and "
                  "write it", (unsigned long long)id,
                  (unsigned long long)id);
    uint64_t size = r->w->chunks[index].size;
    if (size > LMS__WL_MAX_NAMED_BYTES - r->named_bytes)
      return fail(r, LMS_ERR_INVALID, "reference '%s' brings the bytes the "
                  "steps name to more than %llu (4 PiB) in all, each step "
                  "counting the chunks it names; accepted: at most %llu",
                  show(f, s), (unsigned long long)LMS__WL_MAX_NAMED_BYTES,
                  (unsigned long long)LMS__WL_MAX_NAMED_BYTES);
    r->last_step[index] = r->w->nsteps;
    lms_status_t st = lms__wl_add_ref(r->w, index, access);
    if (st == LMS_ERR_HOST_OOM) return fail_oom(r);
    if (st != LMS_OK)
      return fail(r, st, "reference '%s' was refused: %s", show(f, s),
                  lms_strerror(st));
    r->named_bytes += size;
  }
  return LMS_OK;
}

static lms_status_t parse_step(reader_t *r, char *p) {
  uint64_t ns;
  char name[LMS__WL_NAME];
  char *f = next_field(&p);
  if (f == NULL) return missing(r, "step", "NS", USAGE_STEP);
  LMS_CHECK(parse_num(r, f, "step time", 0, LMS__WL_MAX_STEP_NS, &ns));
  LMS_CHECK(check_sum(r, "step time", ns, r->total_ns, LMS__WL_MAX_TOTAL_NS,
                      "compute", "ns (10^7 s)", " ns"));
  if ((f = next_field(&p)) == NULL)
    return missing(r, "step", "NAME", USAGE_STEP);
  LMS_CHECK(parse_name(r, f, "step name", NAME_MAX_CHUNK, name));
  lms_status_t st = lms__wl_add_step(r->w, ns, name);
  if (st == LMS_ERR_HOST_OOM) return fail_oom(r);
  if (st != LMS_OK)
    return fail(r, st, "step was refused: %s", lms_strerror(st));
  r->total_ns += ns;
  return parse_refs(r, p);
}

static lms_status_t parse_more_refs(reader_t *r, char *p) {
  if (!r->in_step)
    return fail(r, LMS_ERR_INVALID, "a refs line must follow a step line "
                "or another refs line; it continues that step's "
                "references");
  while (is_blank(*p)) p++;
  if (*p == '\0') return missing(r, "refs", "REF", USAGE_REFS);
  return parse_refs(r, p);
}

/* Parses one line that is not a comment. */
static lms_status_t parse_record(reader_t *r, char *p, char *key) {
  char s[200];
  if (strcmp(key, "chunk") == 0) {
    r->seen_record = 1;
    r->in_step = 0;
    return parse_chunk(r, p);
  }
  if (strcmp(key, "step") == 0) {
    r->seen_record = 1;
    r->in_step = 1;
    return parse_step(r, p);
  }
  if (strcmp(key, "refs") == 0) return parse_more_refs(r, p);
  r->in_step = 0;
  if (strcmp(key, "workload") == 0) return parse_workload(r, p);
  if (strcmp(key, TRACE_MAGIC) == 0)
    return fail(r, LMS_ERR_INVALID, "a second header line (the header is "
                "line %llu)", r->header_line);
  return fail(r, LMS_ERR_INVALID, "unknown record '%s'; accepted: "
              "workload, chunk, step, refs, or a comment starting with #",
              show(key, s));
}

/* Checks what only the whole file shows. */
static lms_status_t finish(reader_t *r) {
  if (r->header_line == 0) {
    if (r->line == 0)
      return fail(r, LMS_ERR_INVALID, "the trace is empty; expected the "
                  "header '%s'", USAGE_HEADER);
    return fail(r, LMS_ERR_INVALID, "the trace has no header; expected "
                "'%s' as its first line that is not a comment",
                USAGE_HEADER);
  }
  if (r->w->nsteps == 0)
    return fail(r, LMS_ERR_INVALID, "the trace has no steps; expected at "
                "least one line '%s'", USAGE_STEP);
  for (uint32_t i = 0; i < r->w->nchunks; i++) {
    if (r->w->chunks[i].transient && r->last_step[i] == 0) {
      r->line = r->decl_line[i];
      return fail(r, LMS_ERR_INVALID, "transient chunk %u ('%s') is used "
                  "by no step; declare it persistent or remove it",
                  r->ids[i], r->w->chunks[i].name);
    }
  }
  char why[LMS__ERRBUF];
  lms_status_t st = lms__wl_validate(r->w, why);
  if (st != LMS_OK) return fail(r, st, "%s", why);
  return LMS_OK;
}

lms_status_t lms__trace_read_file(FILE *f, const char *label,
                                  lms__workload_t *out, char *err) {
  reader_t r;
  memset(&r, 0, sizeof r);
  r.f = f;
  r.label = label != NULL ? label : "trace";
  r.err = err;
  r.w = out;
  draw_key(&r);
  lms__wl_init(out, NULL);
  lms_status_t st = LMS_OK;
  r.buf = malloc(MAX_LINE + 2);
  if (r.buf == NULL) {
    st = fail_oom(&r);
    goto done;
  }
  flockfile(f);
  for (;;) {
    int got = read_line(&r, &st);
    if (got < 0) break;
    if (got == 0) {
      st = finish(&r);
      break;
    }
    char *p = r.buf;
    char *key = next_field(&p);
    if (key == NULL || key[0] == '#') continue;
    if (r.header_line == 0) {
      st = parse_header(&r, p, key);
    } else {
      st = parse_record(&r, p, key);
    }
    if (st != LMS_OK) break;
  }
  funlockfile(f);
done:
  if (st != LMS_OK) lms__wl_free(out);
  free(r.buf);
  free(r.keys);
  free(r.vals);
  free(r.ids);
  free(r.decl_line);
  free(r.last_step);
  return st;
}

lms_status_t lms__trace_read(const char *path, lms__workload_t *out,
                             char *err) {
  lms__wl_init(out, NULL);
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    lms__errf(err, "cannot open %s: %s", path, strerror(errno));
    return LMS_ERR_INVALID;
  }
  lms_status_t st = lms__trace_read_file(f, path, out, err);
  fclose(f);
  return st;
}

/* ---- Writing ----------------------------------------------------------- */

/* Copies name into out (max + 1 bytes) in the name alphabet: "-" when it
 * is empty, '_' for each character outside the alphabet. */
static const char *clean_name(const char *name, size_t max, char *out) {
  size_t n = strnlen(name, max);
  if (n == 0) return "-";
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
             (c >= '0' && c <= '9') || (c != '\0' && strchr("_.:/+-", c));
    out[i] = ok ? c : '_';
  }
  out[n] = '\0';
  return out;
}

static const char *access_tag(unsigned access) {
  switch (access) {
  case LMS_ACCESS_READ:
    return "r";
  case LMS_ACCESS_WRITE:
    return "w";
  default:
    return "rw";
  }
}

lms_status_t lms__trace_write_file(FILE *f, const lms__workload_t *w,
                                   char *err) {
  char why[LMS__ERRBUF];
  lms_status_t st = lms__wl_validate(w, why);
  if (st != LMS_OK) {
    lms__errf(err, "cannot write workload '%s' as a trace, which could not "
              "be read back: %s", w->name, why);
    return st;
  }
  char name[NAME_MAX_WORKLOAD + 1];
  errno = 0;
  fprintf(f, "%s %llu\n", TRACE_MAGIC, TRACE_VERSION);
  fprintf(f, "# chunks: %u, steps: %u; the format is docs/trace-format.md\n",
          w->nchunks, w->nsteps);
  fprintf(f, "workload %s\n",
          clean_name(w->name, NAME_MAX_WORKLOAD, name));
  for (uint32_t i = 0; i < w->nchunks; i++) {
    const lms__wl_chunk_t *c = &w->chunks[i];
    fprintf(f, "chunk %u %llu %s %s\n", i, (unsigned long long)c->size,
            clean_name(c->name, NAME_MAX_CHUNK, name),
            c->transient ? "transient" : "persistent");
  }
  for (uint32_t s = 0; s < w->nsteps; s++) {
    const lms__wl_step_t *step = &w->steps[s];
    fprintf(f, "step %llu %s", (unsigned long long)step->compute_ns,
            clean_name(step->name, NAME_MAX_CHUNK, name));
    for (uint32_t i = 0; i < step->nrefs; i++) {
      const lms__wl_ref_t *ref = &w->refs[step->first_ref + i];
      if (i > 0 && i % REFS_PER_LINE == 0) fputs("\nrefs", f);
      fprintf(f, " %s:%u", access_tag(ref->access), ref->chunk);
    }
    fputc('\n', f);
  }
  if (fflush(f) != 0 || ferror(f)) {
    lms__errf(err, "cannot write the trace: %s",
              strerror(errno != 0 ? errno : EIO));
    return LMS_ERR_INVALID;
  }
  return LMS_OK;
}

lms_status_t lms__trace_write(const char *path, const lms__workload_t *w,
                              char *err) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    lms__errf(err, "cannot open %s for writing: %s", path, strerror(errno));
    return LMS_ERR_INVALID;
  }
  char why[LMS__ERRBUF];
  lms_status_t st = lms__trace_write_file(f, w, why);
  errno = 0;
  int closed = fclose(f);
  if (st != LMS_OK) {
    lms__errf(err, "%s: %s", path, why);
    return st;
  }
  if (closed != 0) {
    lms__errf(err, "cannot write %s: %s", path,
              strerror(errno != 0 ? errno : EIO));
    return LMS_ERR_INVALID;
  }
  return LMS_OK;
}
