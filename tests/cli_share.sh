#!/usr/bin/env bash
# cli_share.sh LMS - `lms sim --gpus-per-link`: one GPU per link prints
# exactly what no flag prints; two GPUs add the shared-link table and a
# "shared" object per JSON run whose figures hold together (each GPU's
# copies slower than alone, both GPUs within the link's rate); with
# --calibrate-busy the first run is as busy as asked.
set -u
lms=$1
fail=0
# --quiet: the progress lines come only when a run takes 2 s, which on a
# slow machine (the sanitizer builds) one run may and the other not.
args=(sim unet3d --size 48 --capacities 400MiB --links pcie3 --quiet)

plain=$("$lms" "${args[@]}" 2>&1) || { echo "FAIL: plain run exited $?"; fail=1; }
one=$("$lms" "${args[@]}" --gpus-per-link 1 2>&1) || { echo "FAIL: N=1 exited $?"; fail=1; }
if [ "$plain" != "$one" ]; then
  echo "FAIL: --gpus-per-link 1 differs from the run without it:"
  diff <(echo "$plain") <(echo "$one") | head -20
  fail=1
else
  echo "ok   --gpus-per-link 1 prints what no flag prints"
fi

two=$("$lms" "${args[@]}" --gpus-per-link 2 2>&1) || { echo "FAIL: N=2 exited $?"; fail=1; }
if grep -q "2 GPUs per host link" <<<"$two" &&
   [ "$(grep -c '^pcie3 ' <<<"$two")" -eq 6 ]; then
  echo "ok   --gpus-per-link 2 adds a row per run"
else
  echo "FAIL: --gpus-per-link 2 output:"; echo "$two" | sed 's/^/     /'; fail=1
fi

json=$("$lms" "${args[@]}" --gpus-per-link 2 --json - 2>/dev/null)
if python3 - "$json" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
assert len(d["runs"]) == 3, d["runs"]
for r in d["runs"]:
    s = r["shared"]
    assert s["gpus_per_link"] == 2
    assert s["h2d_gbps"] < s["alone_h2d_gbps"], s
    assert s["d2h_gbps"] < s["alone_d2h_gbps"], s
    assert s["iteration_ns"] >= s["alone_iteration_ns"], s
    assert s["alone_iteration_ns"] == r["iteration_ns"], (s, r)
    assert s["link_h2d_gbps"] <= 12.2 and s["link_d2h_gbps"] <= 12.9, s
PY
then
  echo "ok   --json has a consistent \"shared\" object per run"
else
  echo "FAIL: --json with --gpus-per-link 2"; fail=1
fi
# --calibrate-busy: the first run is as busy as asked, the JSON says so,
# and the shared runs use the calibrated speed.
cal=$("$lms" "${args[@]}" --policies ondemand,schedule --gpus-per-link 2 \
        --calibrate-busy 35 --json - 2>/dev/null)
if python3 - "$cal" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
c = d["calibration"]
assert abs(c["busy"] - 0.35) <= 0.0005, c
assert c["speedup"] > 0 and c["runs"] >= 3, c
first = d["runs"][0]
assert first["policy"] == "ondemand", first
assert abs(first["gpu_busy"] - 0.35) <= 0.0006, first
assert first["shared"]["alone_iteration_ns"] == first["iteration_ns"], first
assert d["runs"][1]["policy"] == "schedule"
PY
then
  echo "ok   --calibrate-busy 35 makes the first run 35 % busy"
else
  echo "FAIL: --calibrate-busy 35"; fail=1
fi
exit $fail
