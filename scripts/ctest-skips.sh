#!/usr/bin/env bash
# ctest-skips.sh BUILD_DIR - after a ctest run in BUILD_DIR, says how many
# tests skipped and why (the "SKIP: ..." lines they printed, exit 77), so
# that `make test` does not end on a list of passes that hides what did not
# run.
log="$1/Testing/Temporary/LastTest.log"
[ -f "$log" ] || exit 0
# CTest logs a skipped test as passed, so a test is counted as skipped by
# the convention every skipping test here keeps: it prints "SKIP: why" and
# exits 77 (SKIP_RETURN_CODE).
awk '
  /^[0-9]+\/[0-9]+ Test: / { name = $3; why = "" }
  /^SKIP: / && why == "" {
    why = substr($0, 7); n++; lines[n] = "  " name ": " why
  }
  END {
    if (n == 0) { print "skipped: none"; exit }
    print "skipped: " n
    for (i = 1; i <= n; i++) print lines[i]
  }' "$log"
