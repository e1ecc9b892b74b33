#!/usr/bin/env bash
# cli_tune.sh LMS - `lms tune` on the simulator finds a setting at least as
# fast as the best of a fixed grid of 20 hand-picked settings, in at most
# the runs of two rounds of its search (Note [Searching by coordinates] in
# src/cli/tune.c: the defaults, then each round every other value of each
# setting, 1 + 2 x (4 + 3 + 4) = 23, against 100 for the whole grid), and
# its printed command reproduces its time; the
# same search drives a real program through the LMS_* environment (here
# `lms sim` itself, timed).
set -u
lms=$1
fail=0
wl=(unet3d --size 144)
opts=(--gpu-limit 6GiB --link pcie3)

out=$("$lms" tune --workload "${wl[@]}" "${opts[@]}" 2>&1) || {
  echo "FAIL: lms tune exited with $?"; echo "$out"; exit 1; }
echo "$out"
best=$(sed -n 's/^fastest of \([0-9]*\) runs: \([0-9.]*\) ms$/\2/p' <<<"$out")
runs=$(sed -n 's/^fastest of \([0-9]*\) runs: .*/\1/p' <<<"$out")
[ -n "$best" ] && [ -n "$runs" ] || { echo "FAIL: no result line"; exit 1; }

# The grid: thresholds, fractions and windows a person would try by hand.
grid=(
  "0 0 0" "0 0 8,25%" "0 0 64,50%" "0 0 1000,60%" "0 0.5 64,50%"
  "1024 0 0" "1024 0 8,25%" "1024 0 1000,60%" "1024 0.5 1000,60%" "1024 0.75 64,50%"
  "8192 0 0" "8192 0 64,50%" "8192 0 1000,100%" "8192 0.25 64,50%" "8192 0.5 8,25%"
  "65536 0 0" "65536 0 64,50%" "65536 0 1000,60%" "65536 0.25 1000,60%" "1048576 0 64,50%"
)
grid_best=""
for g in "${grid[@]}"; do
  read -r kb frac win <<<"$g"
  t=$("$lms" sim "${wl[@]}" --capacities 6GiB --links pcie3 --policies schedule \
      -lms "$kb" -lms_frac "$frac" --prefetch-window "$win" 2>/dev/null |
      awk '$2 == "schedule" && $4 ~ /^[0-9.]+$/ {print $4}')
  echo "grid -lms $kb -lms_frac $frac --prefetch-window $win: ${t:-failed}"
  [ -z "$t" ] && continue
  if [ -z "$grid_best" ] || awk -v a="$t" -v b="$grid_best" 'BEGIN{exit !(a<b)}'; then
    grid_best=$t
  fi
done
echo "tune: $best ms in $runs runs; grid of ${#grid[@]}: best $grid_best ms"
awk -v a="$best" -v b="$grid_best" 'BEGIN{exit !(a <= b + 0.05)}' ||
  { echo "FAIL: tune's best is slower than the grid's"; fail=1; }
[ "$runs" -le 23 ] ||
  { echo "FAIL: tune took $runs runs, more than two rounds can (23)"; fail=1; }

# The printed command gives the printed time.
cmd=$(sed -n 's/^  lms sim //p' <<<"$out")
again=$(eval "\"$lms\" sim $cmd --policies schedule" 2>/dev/null |
        awk '$2 == "schedule" {print $4}')
[ "$again" = "$best" ] || { echo "FAIL: the printed command gives $again ms, not $best"; fail=1; }

# A real program: the same search through the environment.
out2=$("$lms" tune --lms-values 0,1024 --frac-values 0 --window-values '0;1000,60%' \
       -- "$lms" sim "${wl[@]}" --capacities 6GiB --links pcie3 --policies schedule 2>&1) ||
  { echo "FAIL: lms tune -- CMD exited with $?"; echo "$out2"; fail=1; }
echo "$out2"
grep -q "^  LMS_KB=.* LMS_FRAC=0 LMS_PREFETCH_WINDOW=.* $lms sim" <<<"$out2" ||
  { echo "FAIL: no command line to use"; fail=1; }
runs2=$(grep -c '^  run ' <<<"$out2")
[ "$runs2" -ge 3 ] && [ "$runs2" -le 4 ] ||
  { echo "FAIL: $runs2 runs over a 2 x 1 x 2 range"; fail=1; }
min2=$(sed -n 's/^  run .*: \([0-9.]*\) ms$/\1/p' <<<"$out2" | sort -g | head -1)
grep -q "^fastest of $runs2 runs: $min2 ms" <<<"$out2" ||
  { echo "FAIL: the fastest printed is not the fastest run ($min2 ms)"; fail=1; }
# --repeat: each setting run N times, its median compared; a program that
# fails is shown with the end of what it wrote to stderr; --json - writes
# every setting tried, with each run's time, and the fastest.
prog=$(mktemp)
trap 'rm -f "$prog"' EXIT
cat >"$prog" <<'PROG'
#!/bin/sh
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo "complaint $i" >&2; done
[ "$LMS_KB" = "1024" ] && exit 4
exit 0
PROG
chmod +x "$prog"
out3=$("$lms" tune --lms-values 0,1024 --frac-values 0 --window-values '0' \
       --repeat 3 --json - -- "$prog" 2>/dev/null) ||
  { echo "FAIL: lms tune --repeat 3 --json - exited with $?"; fail=1; }
echo "$out3"
python3 - "$out3" <<'PY' || fail=1
import json, statistics, sys
j = json.loads(sys.argv[1])
ok = {t["lms"]: t for t in j["tried"]}
assert j["repeat"] == 3 and j["settings_tried"] == 2, j
good = ok["0"]
assert len(good["times_ms"]) == 3, good
assert abs(good["ms"] - statistics.median(good["times_ms"])) < 0.002, good
assert ok["1024"]["ms"] is None and "exit 4" in ok["1024"]["skipped"], ok["1024"]
assert j["fastest"]["lms"] == "0" and j["fastest"]["ms"] == good["ms"], j["fastest"]
print("ok   --json: medians of 3 runs, the failing setting skipped with its exit")
PY
err3=$("$lms" tune --lms-values 1024 --frac-values 0 --window-values '0' \
       -- "$prog" 2>&1)
grep -q "skipped, the program failed (exit 4)" <<<"$err3" &&
  grep -q "^    | complaint 12$" <<<"$err3" && grep -q "^    | complaint 3$" <<<"$err3" &&
  ! grep -q "complaint 2$" <<<"$err3" ||
  { echo "FAIL: no stderr tail (its last ten lines) after the failure:"; echo "$err3"; fail=1; }
[ "$fail" -eq 0 ] && echo "ok"
exit "$fail"
