/* test_registry.c - the address registry and the AVL tree under it.
 *
 * The registry maps an address to the one range [start, start + size) that
 * holds it; ranges never overlap and are never empty.  Addresses here are
 * plain numbers: the registry never dereferences them.  The registry is
 * also run against a brute-force list of ranges.  The AVL tree is checked
 * against a table of the keys present, in key order: after random inserts
 * and removes it must stay balanced and ordered, and ceil, floor, next and
 * first must agree with a linear search of the table. */
#include <criterion/criterion.h>
#include "check.h"
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc.h"
#include "core/avl.h"
#include "support.h"

#define AT(x) ((const void *)(uintptr_t)(x))

static lms__registry_t reg;

static void reg_up(void) { lms__registry_init(&reg); }

static lms__reg_entry_t *find(uintptr_t addr) {
  return lms__registry_find(&reg, AT(addr));
}

/* ---- Lookup ------------------------------------------------------------ */

Test(registry_find, edges_of_a_range, .init = reg_up) {
  lms__reg_entry_t a, b, c;
  int oa, ob, oc;
  cr_assert(eq(ptr, find(0x1000), NULL), "an empty registry holds nothing");
  cr_assert(eq(int, lms__registry_add(&reg, &b, AT(0x3000), 0x100, &ob),
               LMS_OK));
  cr_assert(eq(int, lms__registry_add(&reg, &a, AT(0x1000), 0x1000, &oa),
               LMS_OK));
  cr_assert(eq(int, lms__registry_add(&reg, &c, AT(0x3100), 1, &oc),
               LMS_OK), "a range may start where another ends");
  cr_assert(eq(ptr, a.owner, &oa));

  cr_assert(eq(ptr, find(0xFFF), NULL), "before the first range");
  cr_assert(eq(ptr, find(0), NULL));
  cr_assert(eq(ptr, find(0x1000), &a), "the start");
  cr_assert(eq(ptr, find(0x1800), &a), "inside");
  cr_assert(eq(ptr, find(0x1FFF), &a), "the last byte");
  cr_assert(eq(ptr, find(0x2000), NULL), "one past the end");
  cr_assert(eq(ptr, find(0x2FFF), NULL), "in the gap");
  cr_assert(eq(ptr, find(0x3000), &b));
  cr_assert(eq(ptr, find(0x30FF), &b));
  cr_assert(eq(ptr, find(0x3100), &c), "one past b is c's only byte");
  cr_assert(eq(ptr, find(0x3101), NULL));
  cr_assert(eq(ptr, find(UINTPTR_MAX), NULL), "far past the last range");
}

/* A range reaching the top of the address space still finds its last
 * byte without the end wrapping around. */
Test(registry_find, range_at_the_top, .init = reg_up) {
  lms__reg_entry_t e;
  uintptr_t start = UINTPTR_MAX - 0xFF;
  cr_assert(eq(int, lms__registry_add(&reg, &e, AT(start), 0xFF, NULL),
               LMS_OK));
  cr_assert(eq(ptr, find(start), &e));
  cr_assert(eq(ptr, find(UINTPTR_MAX - 1), &e));
  cr_assert(eq(ptr, find(UINTPTR_MAX), NULL));
  cr_assert(eq(ptr, find(start - 1), NULL));
}

/* ---- Adding ------------------------------------------------------------ */

struct overlap_case {
  char what[48];
  uintptr_t start;
  size_t size;
  int ok;
};

/* Against [0x1000, 0x2000) with neighbours [0x800, 0x900) and
 * [0x3000, 0x3100). */
ParameterizedTestParameters(registry_add, overlaps) {
  static struct overlap_case cases[] = {
      {"same range", 0x1000, 0x1000, 0},
      {"same start, shorter", 0x1000, 0x10, 0},
      {"same start, longer", 0x1000, 0x1800, 0},
      {"inside", 0x1800, 0x10, 0},
      {"inside, ending at the end", 0x1F00, 0x100, 0},
      {"the last byte", 0x1FFF, 1, 0},
      {"straddling the start", 0xF00, 0x200, 0},
      {"ending on the first byte", 0xFFF, 2, 0},
      {"straddling the end", 0x1F00, 0x200, 0},
      {"enclosing", 0xA00, 0x2000, 0},
      {"enclosing two ranges", 0x700, 0x3000, 0},
      {"reaching into the next range", 0x2000, 0x1001, 0},
      {"adjacent below", 0xF00, 0x100, 1},
      {"adjacent above", 0x2000, 0x100, 1},
      {"filling the gap exactly", 0x2000, 0x1000, 1},
      {"between neighbours", 0x900, 0x700, 1},
      {"empty", 0x2800, 0, 0},
      {"empty at a range's start", 0x1000, 0, 0},
      {"wrapping past the top", UINTPTR_MAX - 0xF, 0x20, 0},
  };
  return cr_make_param_array(struct overlap_case, cases,
                             sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct overlap_case *c, registry_add, overlaps,
                  .init = reg_up) {
  lms__reg_entry_t lo, mid, hi, e;
  cr_assert(eq(int, lms__registry_add(&reg, &lo, AT(0x800), 0x100, NULL),
               LMS_OK));
  cr_assert(eq(int, lms__registry_add(&reg, &mid, AT(0x1000), 0x1000, NULL),
               LMS_OK));
  cr_assert(eq(int, lms__registry_add(&reg, &hi, AT(0x3000), 0x100, NULL),
               LMS_OK));
  lms_status_t st = lms__registry_add(&reg, &e, AT(c->start), c->size, NULL);
  cr_assert(eq(int, st, c->ok ? LMS_OK : LMS_ERR_INVALID), "%s", c->what);
  cr_assert(eq(sz, reg.ranges.count, c->ok ? 4u : 3u), "%s", c->what);
  cr_assert(eq(int, lms__avl_check(&reg.ranges), 0));
  /* The ranges already there are untouched either way. */
  cr_assert(eq(ptr, find(0x1000), &mid), "%s", c->what);
  cr_assert(eq(ptr, find(0x1FFF), &mid), "%s", c->what);
  cr_assert(eq(ptr, find(0x800), &lo), "%s", c->what);
  cr_assert(eq(ptr, find(0x30FF), &hi), "%s", c->what);
  if (c->ok) {
    cr_assert(eq(ptr, find(c->start), &e), "%s", c->what);
    cr_assert(eq(ptr, find(c->start + c->size - 1), &e), "%s", c->what);
  }
}

/* ---- Removing ---------------------------------------------------------- */

Test(registry_remove, then_find_is_null, .init = reg_up) {
  lms__reg_entry_t e[3];
  for (int i = 0; i < 3; i++)
    cr_assert(eq(int, lms__registry_add(&reg, &e[i], AT(0x1000 * (i + 1)),
                                        0x800, NULL), LMS_OK));
  lms__registry_remove(&reg, &e[1]);
  cr_assert(eq(ptr, find(0x2000), NULL));
  cr_assert(eq(ptr, find(0x27FF), NULL));
  cr_assert(eq(ptr, find(0x1000), &e[0]));
  cr_assert(eq(ptr, find(0x3000), &e[2]));
  cr_assert(eq(sz, reg.ranges.count, 2));
  /* The space is free again, for a range that spans the old one. */
  lms__reg_entry_t big;
  cr_assert(eq(int, lms__registry_add(&reg, &big, AT(0x1800), 0x1800, NULL),
               LMS_OK));
  cr_assert(eq(ptr, find(0x2400), &big));
  lms__registry_remove(&reg, &e[0]);
  lms__registry_remove(&reg, &big);
  lms__registry_remove(&reg, &e[2]);
  cr_assert(eq(sz, reg.ranges.count, 0));
  cr_assert(eq(ptr, find(0x1000), NULL));
  cr_assert(eq(ptr, find(0x3000), NULL));
}

/* ---- Randomized against a brute-force list ------------------------------ */

static uint64_t rng;

static uint64_t rnd(void) { return lms_test_next(&rng); }

#define NE 3000
#define SPACE ((uintptr_t)1 << 22)

static lms__reg_entry_t ents[NE];
static int in_reg[NE];

static lms__reg_entry_t *brute_find(uintptr_t a) {
  lms__reg_entry_t *hit = NULL;
  for (int i = 0; i < NE; i++)
    if (in_reg[i] && a >= ents[i].start && a - ents[i].start < ents[i].size) {
      cr_assert(eq(ptr, hit, NULL), "the brute-force list overlaps");
      hit = &ents[i];
    }
  return hit;
}

static int brute_overlaps(uintptr_t s, size_t n) {
  for (int i = 0; i < NE; i++)
    if (in_reg[i] && s < ents[i].start + ents[i].size &&
        ents[i].start < s + n)
      return 1;
  return 0;
}

Test(registry_random, agrees_with_brute_force, .init = reg_up) {
  rng = 0xC0FFEEull;
  memset(in_reg, 0, sizeof in_reg);
  size_t live = 0;
  int added = 0, refused = 0;
  for (int op = 0; op < 12000; op++) {
    int i = (int)(rnd() % NE);
    if (in_reg[i] && rnd() % 2) {
      lms__registry_remove(&reg, &ents[i]);
      in_reg[i] = 0;
      live--;
    } else if (!in_reg[i]) {
      /* Sizes from 1 byte to 4 KiB, placed densely enough that about
       * half the adds collide. */
      uintptr_t s = 0x10000 + (uintptr_t)(rnd() % SPACE);
      size_t n = 1 + (size_t)(rnd() % (rnd() % 2 ? 16 : 4096));
      int expect_ok = !brute_overlaps(s, n);
      lms_status_t st = lms__registry_add(&reg, &ents[i], AT(s), n, &in_reg[i]);
      cr_assert(eq(int, st, expect_ok ? LMS_OK : LMS_ERR_INVALID),
                "op %d: [%#lx, +%zu)", op, (unsigned long)s, n);
      if (expect_ok) {
        in_reg[i] = 1;
        live++;
        added++;
      } else {
        refused++;
      }
    }
    cr_assert(eq(sz, reg.ranges.count, live));
    /* Probes: near a random live range's edges, and anywhere. */
    for (int k = 0; k < 3; k++) {
      uintptr_t a;
      int j = (int)(rnd() % NE);
      if (k < 2 && in_reg[j]) {
        uintptr_t end = ents[j].start + ents[j].size;
        uintptr_t edges[3] = {ents[j].start - 1, end - 1, end};
        a = edges[rnd() % 3];
      } else {
        a = 0x10000 + (uintptr_t)(rnd() % (SPACE + 8192)) - 4096;
      }
      cr_assert(eq(ptr, find(a), brute_find(a)), "op %d: probe %#lx", op,
                (unsigned long)a);
    }
    if (op % 1000 == 0) cr_assert(eq(int, lms__avl_check(&reg.ranges), 0));
  }
  cr_assert(gt(int, added, 2000));
  cr_assert(gt(int, refused, 1000), "too few collisions to test overlap");
  cr_assert(eq(int, lms__avl_check(&reg.ranges), 0));
}

/* ---- AVL ---------------------------------------------------------------- */

typedef struct knode {
  lms__avl_node_t node;
  int key;
} knode_t;

static int cmp_key(const lms__avl_node_t *a, const lms__avl_node_t *b) {
  int x = LMS__CONTAINER_OF(a, knode_t, node)->key;
  int y = LMS__CONTAINER_OF(b, knode_t, node)->key;
  return (x > y) - (x < y);
}

static int key_of(const lms__avl_node_t *n) {
  return n ? LMS__CONTAINER_OF(n, const knode_t, node)->key : -1;
}

#define KEYS 8192
static knode_t nodes[KEYS]; /* nodes[k] has key 2k + 1: gaps for probes */
static int present[KEYS];

/* The reference answers, by scanning the presence table. */
static int ref_ceil(int probe) {
  for (int k = probe < 1 ? 0 : (probe - 1) / 2; k < KEYS; k++)
    if (present[k] && 2 * k + 1 >= probe) return 2 * k + 1;
  return -1;
}

static int ref_floor(int probe) {
  int k = probe < 1 ? -1 : (probe - 1) / 2;
  if (k >= KEYS) k = KEYS - 1;
  for (; k >= 0; k--)
    if (present[k] && 2 * k + 1 <= probe) return 2 * k + 1;
  return -1;
}

/* The height a balanced tree of n nodes may reach: 1.44 log2(n + 2). */
static int avl_height_bound(size_t n) {
  int lg = 0;
  while (((size_t)1 << lg) < n + 2) lg++;
  return (int)(1.4405 * lg) + 1;
}

static void check_against_reference(lms__avl_t *t, size_t count) {
  cr_assert(eq(int, lms__avl_check(t), 0), "the tree is unsound");
  cr_assert(eq(sz, t->count, count));
  if (t->root) cr_assert(le(int, t->root->height, avl_height_bound(count)));
  /* In-order walk: exactly the present keys, ascending. */
  const lms__avl_node_t *n = lms__avl_first(t);
  for (int k = 0; k < KEYS; k++) {
    if (!present[k]) continue;
    cr_assert(eq(int, key_of(n), 2 * k + 1));
    n = lms__avl_next(t, n);
  }
  cr_assert(eq(ptr, (void *)n, NULL), "the walk goes past the last key");
  /* ceil and floor at random probes, present keys and gaps alike. */
  for (int i = 0; i < 200; i++) {
    knode_t probe = {.key = (int)(rnd() % (2 * KEYS + 4)) - 2};
    cr_assert(eq(int, key_of(lms__avl_ceil(t, &probe.node)),
                 ref_ceil(probe.key)), "ceil(%d)", probe.key);
    cr_assert(eq(int, key_of(lms__avl_floor(t, &probe.node)),
                 ref_floor(probe.key)), "floor(%d)", probe.key);
    /* next of a probe not in the tree: the first key above it. */
    cr_assert(eq(int, key_of(lms__avl_next(t, &probe.node)),
                 ref_ceil(probe.key + 1)), "next(%d)", probe.key);
  }
}

Test(avl, random_insert_remove) {
  lms__avl_t t;
  lms__avl_init(&t, cmp_key);
  memset(present, 0, sizeof present);
  rng = 42;
  for (int k = 0; k < KEYS; k++) nodes[k].key = 2 * k + 1;
  size_t count = 0;
  cr_assert(eq(ptr, lms__avl_first(&t), NULL));
  check_against_reference(&t, 0);
  for (int batch = 0; batch < 40; batch++) {
    /* Early batches mostly insert, later ones mostly remove. */
    unsigned insert_pct = batch < 20 ? 75 : 25;
    for (int i = 0; i < 500; i++) {
      int k = (int)(rnd() % KEYS);
      int ins = (unsigned)(rnd() % 100) < insert_pct;
      if (ins && !present[k]) {
        lms__avl_insert(&t, &nodes[k].node);
        present[k] = 1;
        count++;
      } else if (!ins && present[k]) {
        lms__avl_remove(&t, &nodes[k].node);
        present[k] = 0;
        count--;
      }
    }
    check_against_reference(&t, count);
  }
  /* Empty it completely, in random order. */
  for (int k = 0; k < KEYS; k++) {
    int j = (int)(rnd() % KEYS);
    if (present[j]) {
      lms__avl_remove(&t, &nodes[j].node);
      present[j] = 0;
      count--;
    }
  }
  for (int k = 0; k < KEYS; k++)
    if (present[k]) {
      lms__avl_remove(&t, &nodes[k].node);
      present[k] = 0;
      count--;
    }
  check_against_reference(&t, 0);
  cr_assert(eq(ptr, t.root, NULL));
}

/* Sorted input is the worst case for an unbalanced tree. */
Test(avl, sorted_inserts_stay_balanced) {
  lms__avl_t t;
  lms__avl_init(&t, cmp_key);
  memset(present, 0, sizeof present);
  rng = 7;
  for (int k = 0; k < KEYS; k++) {
    nodes[k].key = 2 * k + 1;
    lms__avl_insert(&t, &nodes[k].node);
    present[k] = 1;
  }
  check_against_reference(&t, KEYS);
  cr_assert(le(int, t.root->height, 14), "8192 nodes fit in 14 levels");
  /* Remove from the low end: again a one-sided pattern. */
  for (int k = 0; k < KEYS / 2; k++) {
    lms__avl_remove(&t, &nodes[k].node);
    present[k] = 0;
  }
  check_against_reference(&t, KEYS / 2);
  /* And insert descending. */
  for (int k = KEYS / 2 - 1; k >= 0; k--) {
    lms__avl_insert(&t, &nodes[k].node);
    present[k] = 1;
  }
  check_against_reference(&t, KEYS);
}

/* The checker the other suites rely on must catch a broken tree. */
Test(avl, check_catches_damage) {
  lms__avl_t t;
  lms__avl_init(&t, cmp_key);
  for (int k = 0; k < 15; k++) {
    nodes[k].key = 2 * k + 1;
    lms__avl_insert(&t, &nodes[k].node);
  }
  cr_assert(eq(int, lms__avl_check(&t), 0));
  t.root->height++;
  cr_assert(ne(int, lms__avl_check(&t), 0), "a wrong height passed");
  t.root->height--;
  int saved = nodes[0].key;
  nodes[0].key = 1000; /* the leftmost node, now out of order */
  cr_assert(ne(int, lms__avl_check(&t), 0), "a misplaced key passed");
  nodes[0].key = saved;
  t.count++;
  cr_assert(ne(int, lms__avl_check(&t), 0), "a wrong count passed");
  t.count--;
  cr_assert(eq(int, lms__avl_check(&t), 0));
}
