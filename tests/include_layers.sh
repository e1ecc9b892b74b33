#!/usr/bin/env bash
# include_layers.sh SRC_DIR - the include rule of docs/architecture.md: a
# file includes only headers of its own module, of a lower layer, or the
# public API (include/lms); the front ends beside handle mode (stable,
# preload) include only core/ and their own.  Prints each violation and
# exits 1 if there is one.
set -u
src=${1:?usage: include_layers.sh SRC_DIR}
rank() {
  case $1 in
    core) echo 0 ;; device) echo 1 ;; alloc) echo 2 ;; swap) echo 3 ;;
    graph) echo 4 ;; api) echo 5 ;; replay) echo 6 ;; cli) echo 7 ;;
    stable|preload) echo 100 ;; *) echo -1 ;;
  esac
}
bad=0
checked=0
for f in "$src"/*/*.[ch]; do
  mod=$(basename "$(dirname "$f")")
  own=$(rank "$mod")
  if [ "$own" -lt 0 ]; then
    echo "FAIL $f: module '$mod' has no layer (add it to docs/architecture.md and here)"
    bad=1; continue
  fi
  while IFS= read -r inc; do
    dep=${inc%%/*}
    checked=$((checked + 1))
    [ "$dep" = lms ] && continue
    [ "$inc" = lms_kernels.h ] && continue # kernels/: CUDA code below core
    [ "$dep" = "$mod" ] && continue
    d=$(rank "$dep")
    if [ "$own" -eq 100 ]; then
      [ "$dep" = core ] && continue
    elif [ "$d" -ge 0 ] && [ "$d" -lt 100 ] && [ "$d" -le "$own" ]; then
      continue
    fi
    echo "FAIL $f ($mod) includes $inc"
    bad=1
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done
echo "$checked includes checked, $([ $bad -eq 0 ] && echo none || echo some) against the layers"
exit $bad
