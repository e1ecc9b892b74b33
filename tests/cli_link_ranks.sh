#!/usr/bin/env bash
# cli_link_ranks.sh LMS - ranks sharing one host link for real, each its
# own `lms sim` process on a simulated device (Note [Ranks on one link] in
# src/replay/linkboard.c):
#   - two or four ranks running the same workload each get what the model
#     with the GPUs in step (`--gpus-per-link N --in-step`) predicts, and
#     are slower than alone, with slower copies both ways;
#   - two ranks running different workloads each slow down, and not as the
#     in-step model of their own workload says;
#   - a rank killed mid-run is not waited for: the other finishes, and the
#     board is gone after it;
#   - a rank whose partner never comes fails by name within --link-wait;
#   - bad groups and runs are refused, naming what is accepted.
set -u
lms=$1
fail=0
group="cli-test-$$"
board=/dev/shm/lms-link-$(id -u)-$group
trap 'rm -f /dev/shm/lms-link-$(id -u)-cli-test-$$*' EXIT
base=(--links pcie3 --policies ondemand --gpus-per-link 2 --quiet --json -)
unet=(sim unet3d --size 48 --capacities 400MiB --iterations 4)

json_field() { # FILE: the shared object's figures of the one run
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
s = r["shared"]
print(s["alone_iteration_ns"], s["iteration_ns"], s["alone_h2d_gbps"],
      s["h2d_gbps"], s["alone_d2h_gbps"], s["d2h_gbps"])' "$1"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; rm -f /dev/shm/lms-link-$(id -u)-cli-test-$$*' EXIT

# N ranks of one workload against the in-step model (with four, a rank
# that ran ahead and posted its next round must not change what a slower
# one shares with).
for n in 2 4; do
  nb=(--links pcie3 --policies ondemand --gpus-per-link $n --quiet --json -)
  "$lms" "${unet[@]}" "${nb[@]}" --in-step >"$tmp/model$n.json" 2>/dev/null ||
    { echo "FAIL: the in-step model of $n exited $?"; fail=1; }
  pids=()
  for i in $(seq 0 $((n - 1))); do
    LOCAL_RANK=$i "$lms" "${unet[@]}" "${nb[@]}" --link-group "$group-a$n" \
      --link-wait 120 >"$tmp/r$n-$i.json" 2>"$tmp/r$n-$i.err" &
    pids+=($!)
  done
  bad=0
  for p in "${pids[@]}"; do wait "$p" || bad=1; done
  if [ $bad -ne 0 ]; then
    echo "FAIL: $n ranks: one exited non-zero"; cat "$tmp"/r$n-*.err; fail=1
  elif python3 - "$tmp/model$n.json" "$tmp"/r$n-*.json <<'PY'
import json, sys
model, *ranks = [json.load(open(p))["runs"][0]["shared"] for p in sys.argv[1:]]
for s in ranks:
    assert s["iteration_ns"] > s["alone_iteration_ns"], s
    assert s["h2d_gbps"] < s["alone_h2d_gbps"], s
    assert s["d2h_gbps"] < s["alone_d2h_gbps"], s
    for k in ("iteration_ns", "h2d_gbps", "d2h_gbps"):
        assert abs(s[k] - model[k]) <= 0.001 * model[k], (k, s[k], model[k])
print("     rank / alone: %s; in-step model %.3f" % (
    " ".join("%.3f" % (s["iteration_ns"] / s["alone_iteration_ns"]) for s in ranks),
    model["iteration_ns"] / model["alone_iteration_ns"]))
PY
  then
    echo "ok   $n ranks of one workload match the in-step model"
  else
    echo "FAIL: $n ranks against the in-step model"; fail=1
  fi
  if [ -e "$board-a$n" ]; then echo "FAIL: the board outlived its ranks"; fail=1; fi
done

# Two ranks, two workloads: each slower than alone, and not as its own
# in-step model says (its partner copies otherwise).
goog=(sim googlenet --size 224 --batch 8 --capacities 100MiB --iterations 4)
"$lms" "${goog[@]}" "${base[@]}" --in-step >"$tmp/gmodel.json" 2>/dev/null
LOCAL_RANK=0 "$lms" "${unet[@]}" "${base[@]}" --link-group "$group-b" \
  --link-wait 120 >"$tmp/u.json" 2>"$tmp/u.err" &
p0=$!
LOCAL_RANK=1 "$lms" "${goog[@]}" "${base[@]}" --link-group "$group-b" \
  --link-wait 120 >"$tmp/g.json" 2>"$tmp/g.err"
r1=$?
wait $p0
r0=$?
if [ $r0 -ne 0 ] || [ $r1 -ne 0 ]; then
  echo "FAIL: two workloads exited $r0 and $r1"; cat "$tmp/u.err" "$tmp/g.err"
  fail=1
elif python3 - "$tmp/model2.json" "$tmp/u.json" "$tmp/gmodel.json" "$tmp/g.json" <<'PY'
import json, sys
um, u, gm, g = [json.load(open(p))["runs"][0]["shared"] for p in sys.argv[1:]]
for s, m in ((u, um), (g, gm)):
    assert s["iteration_ns"] > s["alone_iteration_ns"], s
    assert abs(s["iteration_ns"] - m["iteration_ns"]) > 0.001 * m["iteration_ns"], (s, m)
print("     unet3d / alone %.3f (beside itself %.3f), googlenet %.3f (%.3f)" % (
    u["iteration_ns"] / u["alone_iteration_ns"], um["iteration_ns"] / um["alone_iteration_ns"],
    g["iteration_ns"] / g["alone_iteration_ns"], gm["iteration_ns"] / gm["alone_iteration_ns"]))
PY
then
  echo "ok   two ranks of two workloads slow each other, each as its partner copies"
else
  echo "FAIL: two ranks of two workloads"; fail=1
fi

# A rank killed mid-run: stopped once it has joined, so that the other
# blocks waiting for its first round (their logs say when), then killed.
until_in() { # FILE TEXT: waits up to 120 s for TEXT in FILE
  for _ in $(seq 1 1200); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
LMS_LOG=info,device LOCAL_RANK=1 "$lms" "${unet[@]}" "${base[@]}" \
  --link-group "$group-c" --link-wait 120 >/dev/null 2>"$tmp/victim.err" &
victim=$!
joined=0 blocked=0
until_in "$tmp/victim.err" "rank 1 joined" && joined=1
kill -STOP $victim
LMS_LOG=info,device LOCAL_RANK=0 "$lms" "${unet[@]}" "${base[@]}" \
  --link-group "$group-c" --link-wait 120 >"$tmp/survivor.json" \
  2>"$tmp/survivor.err" &
survivor=$!
until_in "$tmp/survivor.err" "waits for rank 1" && blocked=1
kill -KILL $victim
wait $victim 2>/dev/null
wait $survivor
rs=$?
if [ $joined -eq 1 ] && [ $blocked -eq 1 ] && [ $rs -eq 0 ] &&
   grep -q "rank 1 (process $victim) is gone" "$tmp/survivor.err" &&
   python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["runs"][0]["shared"]
assert s["iteration_ns"] > 0' "$tmp/survivor.json" && [ ! -e "$board-c" ]; then
  echo "ok   a rank killed mid-run is not waited for, and the board goes with the last"
else
  echo "FAIL: a rank killed mid-run: joined $joined, the other blocked on it"
  echo "      $blocked, then exited $rs (board left: $(ls "$board-c" 2>&1))"
  cat "$tmp/survivor.err"; fail=1
fi

# A partner that never comes.
out=$("$lms" "${unet[@]}" "${base[@]}" --link-group "$group-d" --link-wait 1 2>&1)
rc=$?
if [ $rc -ne 0 ] && grep -q "1 of the 2 ranks announced (--gpus-per-link) joined within 1 s" <<<"$out"; then
  echo "ok   a partner that never comes is named"
else
  echo "FAIL: a lone rank exited $rc:"; echo "$out" | sed 's/^/     /'; fail=1
fi

# Bad input.
check_bad() { # WHAT PATTERN ARGS...
  local what=$1 pat=$2; shift 2
  local o; o=$("$lms" "$@" 2>&1)
  local r=$?
  if [ $r -eq 2 ] && grep -q -- "$pat" <<<"$o"; then
    echo "ok   $what"
  else
    echo "FAIL: $what: exit $r:"; echo "$o" | sed 's/^/     /'; fail=1
  fi
}
check_bad "a group without --gpus-per-link" "needs --gpus-per-link 2 to 8" \
  "${unet[@]}" --links pcie3 --policies ondemand --link-group "$group"
check_bad "a group name with a slash" "accepted: 1 to 40 of the letters" \
  "${unet[@]}" --links pcie3 --policies ondemand --gpus-per-link 2 --link-group a/b
check_bad "a group with two runs" "accepted: one link, one policy and one capacity" \
  "${unet[@]}" --links pcie3 --gpus-per-link 2 --link-group "$group"
check_bad "--in-step with a group" "the ranks' clocks place them" \
  "${unet[@]}" --links pcie3 --policies ondemand --gpus-per-link 2 --in-step --link-group "$group"
check_bad "--link-wait 0" "1 to 86400" \
  "${unet[@]}" --gpus-per-link 2 --link-wait 0
exit $fail
