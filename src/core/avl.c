/* avl.c - see avl.h.  Recursive insert and remove that return the new root
 * of the subtree; successor by a search from the root, so nodes need no
 * parent pointer. */
#include "core/avl.h"

static int height(const lms__avl_node_t *n) { return n ? n->height : 0; }

static void update(lms__avl_node_t *n) {
  int l = height(n->left), r = height(n->right);
  n->height = 1 + (l > r ? l : r);
}

static lms__avl_node_t *rotate_right(lms__avl_node_t *n) {
  lms__avl_node_t *l = n->left;
  n->left = l->right;
  l->right = n;
  update(n);
  update(l);
  return l;
}

static lms__avl_node_t *rotate_left(lms__avl_node_t *n) {
  lms__avl_node_t *r = n->right;
  n->right = r->left;
  r->left = n;
  update(n);
  update(r);
  return r;
}

static lms__avl_node_t *rebalance(lms__avl_node_t *n) {
  update(n);
  int bal = height(n->left) - height(n->right);
  if (bal > 1) {
    if (height(n->left->left) < height(n->left->right))
      n->left = rotate_left(n->left);
    return rotate_right(n);
  }
  if (bal < -1) {
    if (height(n->right->right) < height(n->right->left))
      n->right = rotate_right(n->right);
    return rotate_left(n);
  }
  return n;
}

void lms__avl_init(lms__avl_t *t, lms__avl_cmp_fn cmp) {
  t->root = NULL;
  t->cmp = cmp;
  t->count = 0;
}

static lms__avl_node_t *insert(lms__avl_cmp_fn cmp, lms__avl_node_t *root,
                               lms__avl_node_t *n) {
  if (root == NULL) return n;
  if (cmp(n, root) < 0)
    root->left = insert(cmp, root->left, n);
  else
    root->right = insert(cmp, root->right, n);
  return rebalance(root);
}

void lms__avl_insert(lms__avl_t *t, lms__avl_node_t *n) {
  n->left = n->right = NULL;
  n->height = 1;
  t->root = insert(t->cmp, t->root, n);
  t->count++;
}

/* Detaches the smallest node of the subtree into *min. */
static lms__avl_node_t *remove_min(lms__avl_node_t *root,
                                   lms__avl_node_t **min) {
  if (root->left == NULL) {
    *min = root;
    return root->right;
  }
  root->left = remove_min(root->left, min);
  return rebalance(root);
}

static lms__avl_node_t *remove_node(lms__avl_cmp_fn cmp,
                                    lms__avl_node_t *root,
                                    lms__avl_node_t *n) {
  if (root == NULL) return NULL;
  if (root != n) {
    if (cmp(n, root) < 0)
      root->left = remove_node(cmp, root->left, n);
    else
      root->right = remove_node(cmp, root->right, n);
    return rebalance(root);
  }
  if (root->right == NULL) return root->left;
  lms__avl_node_t *min = NULL;
  lms__avl_node_t *right = remove_min(root->right, &min);
  min->left = root->left;
  min->right = right;
  return rebalance(min);
}

void lms__avl_remove(lms__avl_t *t, lms__avl_node_t *n) {
  t->root = remove_node(t->cmp, t->root, n);
  t->count--;
}

lms__avl_node_t *lms__avl_ceil(const lms__avl_t *t,
                               const lms__avl_node_t *probe) {
  lms__avl_node_t *best = NULL;
  for (lms__avl_node_t *n = t->root; n != NULL;) {
    int c = t->cmp(probe, n);
    if (c == 0) return n;
    if (c < 0) {
      best = n;
      n = n->left;
    } else {
      n = n->right;
    }
  }
  return best;
}

lms__avl_node_t *lms__avl_floor(const lms__avl_t *t,
                                const lms__avl_node_t *probe) {
  lms__avl_node_t *best = NULL;
  for (lms__avl_node_t *n = t->root; n != NULL;) {
    int c = t->cmp(probe, n);
    if (c == 0) return n;
    if (c > 0) {
      best = n;
      n = n->right;
    } else {
      n = n->left;
    }
  }
  return best;
}

lms__avl_node_t *lms__avl_next(const lms__avl_t *t, const lms__avl_node_t *x) {
  lms__avl_node_t *best = NULL;
  for (lms__avl_node_t *n = t->root; n != NULL;) {
    if (t->cmp(x, n) < 0) {
      best = n;
      n = n->left;
    } else {
      n = n->right;
    }
  }
  return best;
}

lms__avl_node_t *lms__avl_first(const lms__avl_t *t) {
  lms__avl_node_t *n = t->root;
  while (n != NULL && n->left != NULL) n = n->left;
  return n;
}

static int check(lms__avl_cmp_fn cmp, const lms__avl_node_t *n, size_t *count) {
  if (n == NULL) return 0;
  (*count)++;
  if (n->left && cmp(n->left, n) >= 0) return -1;
  if (n->right && cmp(n->right, n) <= 0) return -1;
  int l = check(cmp, n->left, count);
  int r = check(cmp, n->right, count);
  if (l < 0 || r < 0) return -1;
  if (l - r > 1 || r - l > 1) return -1;
  int h = 1 + (l > r ? l : r);
  return h == n->height ? h : -1;
}

int lms__avl_check(const lms__avl_t *t) {
  size_t count = 0;
  /* Order is checked between parent and children only; a full in-order walk
   * catches what that misses. */
  if (check(t->cmp, t->root, &count) < 0 || count != t->count) return -1;
  const lms__avl_node_t *prev = NULL;
  for (const lms__avl_node_t *n = lms__avl_first(t); n != NULL;
       n = lms__avl_next(t, n)) {
    if (prev != NULL && t->cmp(prev, n) >= 0) return -1;
    prev = n;
  }
  return 0;
}
