#!/bin/sh
# run.sh FUZZER SECONDS WORKDIR DICT SEEDS... - one bounded libFuzzer
# search, as the tests fuzz_<harness> run it (fuzz/fuzz.cmake).
#
# New inputs go to WORKDIR/corpus, which later runs start from; the seed
# directories (fuzz/corpus/<harness>, fuzz/regressions/<harness>) are only
# read.  A crash, a hang of more than 10 s on one input, a leak or a
# sanitizer report fails the run: the input is saved in WORKDIR/artifacts
# and the end of libFuzzer's report is printed.  Either way one line, also
# kept in WORKDIR/summary for `make test-fuzz` to print, says how many
# inputs were run, so a search that ran too few is seen.
set -u
fuzzer=$1 seconds=$2 work=$3 dict=$4
shift 4
name=$(basename "$fuzzer")
mkdir -p "$work/corpus" "$work/artifacts" || exit 1
log=$work/fuzz.log
dict_arg=
[ -f "$dict" ] && dict_arg=-dict=$dict
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" $dict_arg \
  "$work/corpus" "$@" >"$log" 2>&1
rc=$?
runs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 runs in \2 s/p' \
  "$log" | tail -n 1)
inputs=$(ls "$work/corpus" | wc -l)
if [ "$rc" -eq 0 ] && [ -n "$runs" ]; then
  echo "$name: $runs, no crash; $inputs inputs in $work/corpus" |
    tee "$work/summary"
  exit 0
fi
echo "$name: FAILED (exit status $rc) after ${runs:-an unknown number of runs}" |
  tee "$work/summary"
tail -n 60 "$log"
for a in "$work"/artifacts/*; do
  [ -f "$a" ] && echo "$name: saved input: $a (replay: $fuzzer $a)"
done
echo "$name: the whole log is $log"
exit 1
