#!/usr/bin/env bash
# libs_no_tools.sh LIB... - the shared libraries hold the runtime, not the
# tools: no built-in workload, replay, lower bound, calibration, link
# sharing or timeline symbol in the whole symbol table, and only the
# public API (lms_*) among the exported symbols, plus the CUDA entry
# points a preload library interposes.  Prints a line per library.
set -u
tools='build_googlenet|build_unet3d|lms__wl_builtins|lms__wl_find_builtin|lms__replay_|lms__lower_bound|lms__calibrat|lms__timeline_|replay_shared|lms__shared_'
fail=0
for lib in "$@"; do
  if [ ! -f "$lib" ]; then
    echo "FAIL $lib: not built"; fail=1; continue
  fi
  found=$(nm "$lib" | grep -E "$tools" || true)
  exported=$(nm -D --defined-only "$lib" | awk '{print $3}' |
             grep -vE '^(lms_|cu[A-Z]|cuda[A-Z]|dlsym$|__cuda)' || true)
  case "$lib" in *preload*) exported=$(grep -vE '^(cu|cuda)' <<<"$exported" || true) ;; esac
  if [ -n "$found" ]; then
    echo "FAIL $lib holds tool code:"; sed 's/^/     /' <<<"$found" | head -10; fail=1
  elif [ -n "$exported" ]; then
    echo "FAIL $lib exports more than the API:"; sed 's/^/     /' <<<"$exported" | head -10; fail=1
  elif [ -z "$(nm -D --defined-only "$lib" | awk '$3 ~ /^lms_/' )" ] && [[ "$lib" != *preload* ]]; then
    echo "FAIL $lib exports no lms_ symbol"; fail=1
  else
    echo "ok   $lib: $(nm -D --defined-only "$lib" | wc -l) exports, no tool symbol"
  fi
done
exit $fail
