#!/usr/bin/env bash
# cli_report.sh LMS - `lms report`: its numbers are the ones `lms sim
# --json` gives for the same runs; recording the timeline does not change
# the run it records; the Markdown has a row per link; the charts are PNG
# files when gnuplot is there, and a note says why when it is not
# (LMS_GNUPLOT=/nonexistent); a run's stats are read back as written; the
# U-Net comparison sits beside the published figures; `lms demo` ends with
# the report's files.
set -u
lms=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
no() { echo "FAIL: $*"; fail=1; }

# field FILE LINK KEY: KEY of the "lms" run of LINK in a report.json.
field() {
  grep "{\"link\": \"$2\", \"h2d_gbps\"" "$1" |
    sed -n "s/.*\"lms\": {[^}]*\"$3\": \([0-9.]*\).*/\1/p"
}
# simfield JSON LINK POLICY KEY: KEY of one run of `lms sim --json`.
simfield() {
  grep "\"link\": \"$2\", \"policy\": \"$3\"" "$1" |
    sed -n "s/.*\"$4\": \([0-9.]*\).*/\1/p"
}

# 1. The report's numbers are lms sim's.
"$lms" report --compare-links googlenet --out "$tmp/gn" >"$tmp/gn.out" 2>&1 ||
  { no "lms report --compare-links googlenet exited with $?"; cat "$tmp/gn.out"; }
"$lms" sim googlenet --policies schedule,ondemand \
  --links pcie3,pcie4,pcie5,nvlink1,nvlink2,c2c --json "$tmp/sim.json" >/dev/null 2>&1 ||
  no "lms sim --json failed"
for l in pcie3 pcie4 pcie5 nvlink1 nvlink2 c2c; do
  for k in iteration_ns bytes_h2d bytes_d2h stall_ns; do
    a=$(field "$tmp/gn/report.json" $l $k)
    b=$(simfield "$tmp/sim.json" $l schedule $k)
    [ -n "$a" ] && [ "$a" = "$b" ] || no "$l $k: report $a, lms sim $b"
  done
  od=$(grep "{\"link\": \"$l\", \"h2d_gbps\"" "$tmp/gn/report.json" |
       sed -n 's/.*"ondemand": {"iteration_ns": \([0-9]*\).*/\1/p')
  [ "$od" = "$(simfield "$tmp/sim.json" $l ondemand iteration_ns)" ] ||
    no "$l on-demand: report $od"
  # One row per link in the Markdown table, with lms sim's time in ms.
  ms=$(awk -v n="$(simfield "$tmp/sim.json" $l schedule iteration_ns)" \
       'BEGIN{printf "%.1f", n/1e6}')
  n=$(grep -c "^| $l | [0-9./]* | predicted | $ms |" "$tmp/gn/report.md")
  [ "$n" -eq 1 ] || no "report.md has $n rows for $l at $ms ms, not 1"
done
echo "numbers: report.json and report.md agree with lms sim --json"

# 2. The recorded timelines: spans were recorded, the recorded run took as
# long as the unrecorded one, and PCIe waits more than NVLink.
for l in pcie3 nvlink2; do
  t=$(grep "{\"link\": \"$l\", \"first_step\"" "$tmp/gn/report.json")
  spans=$(sed -n 's/.*"spans": \([0-9]*\).*/\1/p' <<<"$t")
  it=$(sed -n 's/.*"iteration_ns": \([0-9]*\).*/\1/p' <<<"$t")
  [ "${spans:-0}" -gt 0 ] || no "no spans recorded on $l"
  [ "$it" = "$(simfield "$tmp/sim.json" $l schedule iteration_ns)" ] ||
    no "the recorded run on $l took $it ns, unrecorded $(simfield "$tmp/sim.json" $l schedule iteration_ns)"
  grep -q "truncated\": 0" <<<"$t" || no "timeline on $l truncated"
done
w3=$(grep '"link": "pcie3", "first_step"' "$tmp/gn/report.json" | sed -n 's/.*"waiting_ns": \([0-9]*\).*/\1/p')
wn=$(grep '"link": "nvlink2", "first_step"' "$tmp/gn/report.json" | sed -n 's/.*"waiting_ns": \([0-9]*\).*/\1/p')
[ "$w3" -gt "$wn" ] || no "the GPU waits $w3 ns on pcie3, not more than $wn on nvlink2"
grep -q "GPU waits" "$tmp/gn.out" || no "no summary line on stdout"
# The verdict (Note [A report's verdict]): first in the report, one entry
# per link, each class the one its own figures give.
python3 - "$tmp/gn" <<'PY' || no "the verdict does not hold"
import json, sys
d = sys.argv[1]
j = json.load(open(d + "/report.json"))
md = open(d + "/report.md").read()
assert 0 < md.index("## Verdict") < md.index("## Side by side"), "order"
links = {r["link"]: r["lms"] for r in j["links"]}
assert sorted(v["link"] for v in j["verdict"]) == sorted(links), j["verdict"]
mem = j["in_memory_ns"]
for v in j["verdict"]:
    r = links[v["link"]]
    x, lx = r["iteration_ns"] / mem, r["iteration_ns"] / r["lower_bound_ns"]
    assert abs(v["x_in_memory"] - x) < 1e-3 and abs(v["x_lower_bound"] - lx) < 1e-3, v
    want = ("in_memory" if x <= 1.05 else
            "link_bound" if r["lower_bound_ns"] > 1.05 * mem and lx <= 1.10
            else "schedule_bound")
    assert v["verdict"] == want, (v, want)
    assert "**%s**" % v["link"] in md, v["link"]
print("verdict:", ", ".join("%s %s" % (v["link"], v["verdict"]) for v in j["verdict"]))
PY
# How much GPU it needs (Note [How much GPU a workload needs]): per
# timeline link, 8 limits rising, each run no faster than its lower bound,
# and more room moving no more bytes in at the top than at the bottom.
python3 - "$tmp/gn" <<'PY' || no "the limits section does not hold"
import json, sys
d = sys.argv[1]
j = json.load(open(d + "/report.json"))
by = {}
for p in j["limits"]:
    by.setdefault(p["link"], []).append(p)
assert sorted(by) == sorted(t["link"] for t in j["timelines"]), sorted(by)
for link, ps in by.items():
    assert len(ps) == 8, (link, len(ps))
    caps = [p["gpu_limit"] for p in ps]
    assert caps == sorted(set(caps)), caps
    for p in ps:
        assert p["iteration_ns"] is not None, p
        assert p["lower_bound_ns"] <= p["iteration_ns"], p
    assert ps[-1]["iteration_ns"] <= ps[0]["iteration_ns"], (link, ps)
assert "## How much GPU it needs" in open(d + "/report.md").read()
print("limits:", {l: [round(p["iteration_ns"] / 1e6) for p in ps] for l, ps in by.items()})
PY
# The whole iteration as Chrome traces (Perfetto): the Trace Event Format,
# and the run's compute and bytes.
python3 "$(dirname "$0")/check_trace_events.py" "$tmp/gn" ||
  no "the timeline traces do not hold"

# 3. Charts: PNG files with gnuplot, a note without it.
for g in timeline links busy; do
  [ -s "$tmp/gn/$g.gp" ] || no "$g.gp missing"
done
[ -s "$tmp/gn/timeline-pcie3.dat" ] && [ -s "$tmp/gn/links.dat" ] || no "chart data missing"
png() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; }
if command -v gnuplot >/dev/null 2>&1 && [ -z "${LMS_GNUPLOT:-}" ]; then
  for g in timeline links busy; do
    png "$tmp/gn/$g.png" || no "$g.png is not a PNG file"
    grep -q "($g.png)" "$tmp/gn/report.md" || no "report.md does not show $g.png"
    grep -q "<img src=\"$g.png\"" "$tmp/gn/report.html" || no "report.html does not show $g.png"
  done
  echo "charts: three PNG files"
else
  echo "SKIP the PNG checks: gnuplot is not installed here"
fi
LMS_GNUPLOT=/nonexistent "$lms" report googlenet --links pcie3,nvlink2 \
  --out "$tmp/nogp" >"$tmp/nogp.out" 2>&1 || no "without gnuplot the report failed"
grep -q "warning" "$tmp/nogp.out" && no "LMS_GNUPLOT draws a warning"
grep -q "charts were skipped: LMS_GNUPLOT names '/nonexistent'" "$tmp/nogp/report.md" ||
  no "no note in report.md when gnuplot is missing"
grep -q "charts skipped" "$tmp/nogp.out" || no "no note on stdout when gnuplot is missing"
ls "$tmp/nogp"/*.png >/dev/null 2>&1 && no "PNG files without gnuplot"
[ -s "$tmp/nogp/links.gp" ] || no "no scripts without gnuplot"
rows=$(grep -c '^| \(pcie3\|nvlink2\) | [0-9./]* | predicted |' "$tmp/nogp/report.md")
[ "$rows" -eq 2 ] || no "--links pcie3,nvlink2 gave $rows rows"
# A gnuplot that fails is reported, not fatal.
printf '#!/bin/sh\necho "broken plotter" >&2\nexit 3\n' >"$tmp/badgp"
chmod +x "$tmp/badgp"
LMS_GNUPLOT="$tmp/badgp" "$lms" report googlenet --links pcie3 --out "$tmp/badgp-out" \
  >/dev/null 2>&1 || no "a failing gnuplot failed the report"
grep -q "failed: broken plotter" "$tmp/badgp-out/report.md" || no "gnuplot's failure not in the note"

# 4. A run's stats and trace: the measurement is what the stats file says.
"$lms" sim googlenet --batch 1 --forward --links pcie3 --policies schedule \
  --gpu-limit 5GiB --stats "$tmp/run.json" --trace "$tmp/run.trace" >/dev/null 2>&1 ||
  no "making a run's files failed"
"$lms" report --stats "$tmp/run.json" --trace "$tmp/run.trace" --link pcie3 \
  --out "$tmp/run" >/dev/null 2>&1 || no "lms report --stats failed"
el=$(sed -n 's/.*"elapsed_ns": \([0-9]*\).*/\1/p' "$tmp/run.json")
h2d=$(grep '"bytes_h2d"' "$tmp/run.json" | sed -n 's/.*"total": \([0-9]*\).*/\1/p')
grep -q "\"kind\": \"measured\", \"link\": \"pcie3\", \"elapsed_ns\": $el, \"bytes_h2d\": $h2d," \
  "$tmp/run/report.json" || no "the measured row is not the stats file's ($el ns, $h2d bytes)"
grep -q "^| measured (" "$tmp/run/report.md" || no "no measured row in report.md"
grep -q '"capacity": 5368709120' "$tmp/run/report.json" || no "the GPU size is not the run's"

# 5. The U-Net against the published figures.
"$lms" report --compare-links unet3d --size 192 --out "$tmp/unet" >/dev/null 2>&1 ||
  no "the U-Net comparison failed"
"$lms" sim unet3d --size 192 --links pcie3,nvlink2 --policies ondemand,schedule \
  --json "$tmp/unet.json" >/dev/null 2>&1
r=$(awk -v a="$(simfield "$tmp/unet.json" pcie3 ondemand iteration_ns)" \
        -v b="$(simfield "$tmp/unet.json" nvlink2 ondemand iteration_ns)" 'BEGIN{printf "%.4f", a/b}')
grep -q "\"unet_ondemand\": {\"ratio\": $r," "$tmp/unet/report.json" ||
  no "the on-demand U-Net ratio is not lms sim's ($r)"
grep -q '^| published (TFLMS) | 1467 s per epoch | 590 s per epoch | 2.49x |' "$tmp/unet/report.md" ||
  no "no published row"
grep -q '^| predicted, on-demand' "$tmp/unet/report.md" || no "no predicted row"
# Calibrated to the x86 busy share, then AC922 and two GPUs per link: the
# figures are lms sim's at --calibrate-busy 29.1.
grep -q '^| predicted, on-demand swapping, calibrated | .* | 29.1% (fitted) |' \
  "$tmp/unet/report.md" || no "no calibrated row fitted to 29.1 %"
"$lms" sim unet3d --size 192 --links pcie3,nvlink2 --policies ondemand \
  --calibrate-busy 29.1 --gpus-per-link 2 --json "$tmp/unetc.json" >/dev/null 2>&1 ||
  no "lms sim --calibrate-busy 29.1 failed"
read -r r tc < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["runs"]
print("%.4f %.4f" % (d[0]["iteration_ns"] / d[1]["iteration_ns"],
                     d[0]["shared"]["iteration_change"]))' "$tmp/unetc.json")
grep -q "\"unet_calibrated\": {.*\"ratio\": $r," "$tmp/unet/report.json" ||
  no "the calibrated U-Net ratio is not lms sim's ($r)"
grep -q "\"unet_shared_calibrated\": {.*\"time_change\": $tc," "$tmp/unet/report.json" ||
  no "the calibrated shared-link time change is not lms sim's ($tc)"
grep -q '^| published (TFLMS) | 10.9 -> 7.6 (-30%) | 11.7 -> 8.2 (-30%) | -30.1% | +37.8% (1506 -> 2076 s) | 29.1% -> 22.6% |' \
  "$tmp/unet/report.md" || no "no published shared-link row"
grep -q '^| predicted, on-demand, the model.s speed | ' "$tmp/unet/report.md" ||
  no "no shared-link row at the model's speed"

# 6. Real runs: bench net's GoogLeNet on the H100 at its own link and with
# copies slowed to pcie3 (bench/results/2026-11-22-h100.md, run 6).  The
# measured rows are the stats files' per-iteration means, the predictions
# are lms sim's replay of the trace for warm-up plus measured iterations,
# and what a file left out is shown as absent.
res=$(cd "$(dirname "$0")/../bench/results/2026-11-22-h100" && pwd)
tr=$res/googlenet-b10-train-lms8192-native.trace
"$lms" -lms 8192 --lms_frac 0 report --compare-links "$tr" \
  --native "54.7/55.1/90.0=$res/googlenet-b10-train-lms8192-native.stats.json" \
  --emulated "pcie3=$res/googlenet-b10-train-lms8192-pcie3.stats.json" \
  --out "$tmp/h100" >"$tmp/h100.out" 2>&1 ||
  { no "the report of the H100 runs failed"; cat "$tmp/h100.out"; }
for k in native:54.7/55.1/90.0:491300000 emulated:pcie3:1604300000; do
  IFS=: read -r kind link meas <<<"$k"
  "$lms" --gpu-limit 16911433728 -lms 8192 --lms_frac 0 --link "$link" sim "$tr" \
    --iterations 5 --policies schedule --json "$tmp/h100-$kind.json" >/dev/null 2>&1 ||
    no "lms sim of the $kind run failed"
  pred=$(sed -n 's/.*"iteration_ns": \([0-9]*\).*/\1/p' "$tmp/h100-$kind.json" | head -1)
  e=$(awk -v p="$pred" -v m="$meas" 'BEGIN{printf "%.4f", p/m-1}')
  row=$(grep "{\"kind\": \"$kind\"" "$tmp/h100/report.json")
  grep -q "\"elapsed_ns\": $meas, \"bytes_h2d\": 18660000000, \"bytes_d2h\": 18490000000, \"stall_ns\": null, \"error\": $e, \"predicted\": {\"iteration_ns\": $pred," <<<"$row" ||
    no "$kind: report row '$row' is not measured $meas ns against lms sim's $pred ns ($e)"
done
grep -q "^| native (\`.*native.stats.json\`) | custom | 491.3 | [0-9.]* | [-+][0-9.]*% | 28.4% | [0-9.]*% | 18.66 | [0-9.]* | 18.49 | [0-9.]* | - | " \
  "$tmp/h100/report.md" || no "report.md's native row: $(grep '^| native' "$tmp/h100/report.md")"
grep -q "for 5 iterations, the last compared with the mean of the 3 the run measured after 2 of warm-up" \
  "$tmp/h100/report.md" || no "report.md does not say how the runs were compared"
# Stats of different spans do not sit in one table.
cp "$res/googlenet-b10-train-lms8192-pcie3.stats.json" "$tmp/other.json"
sed -i 's/"warmup_iterations": 2/"warmup_iterations": 4/' "$tmp/other.json"
"$lms" report --compare-links "$tr" --native "pcie5=$res/googlenet-b10-train-lms8192-native.stats.json" \
  --emulated "pcie3=$tmp/other.json" --out "$tmp/mixed" >"$tmp/mixed.out" 2>&1
[ $? -eq 2 ] && grep -q "cover different spans (measured iterations after different warm-ups)" "$tmp/mixed.out" ||
  no "stats of different spans: $(cat "$tmp/mixed.out")"
echo "real runs: the H100's measured iterations beside lms sim's replays"

# 7. lms sim --discard-dead: the same trace with dead blobs discarded
# moves fewer bytes out, and says how many blobs it found dead.
"$lms" --gpu-limit 12GiB -lms 8192 --lms_frac 0 --link pcie3 sim "$tr" \
  --policies schedule --json "$tmp/kept.json" >/dev/null 2>&1 || no "lms sim of the trace failed"
"$lms" --gpu-limit 12GiB -lms 8192 --lms_frac 0 --link pcie3 sim "$tr" \
  --policies schedule --discard-dead --json "$tmp/dead.json" >/dev/null 2>"$tmp/dead.err" ||
  no "lms sim --discard-dead failed"
grep -q "^lms: --discard-dead: 261 chunks (23.63 GB) are discarded" "$tmp/dead.err" ||
  no "no count of dead blobs: $(cat "$tmp/dead.err")"
k=$(sed -n 's/.*"bytes_d2h": \([0-9]*\).*/\1/p' "$tmp/kept.json" | head -1)
d=$(sed -n 's/.*"bytes_d2h": \([0-9]*\).*/\1/p' "$tmp/dead.json" | head -1)
[ -n "$k" ] && [ -n "$d" ] && [ "$d" -lt "$k" ] || no "discarding moved $d bytes out, keeping $k"
echo "discard: $k -> $d bytes out"

# 8. lms demo ends with the report and names its files.
(cd "$tmp" && "$lms" demo --out demo-report >demo.out 2>&1) || no "lms demo failed"
grep -q "wrote demo-report/report.md" "$tmp/demo.out" || no "lms demo does not name the report"
[ -s "$tmp/demo-report/report.md" ] && [ -s "$tmp/demo-report/report.html" ] ||
  no "lms demo wrote no report"

# 9. A job's ranks (Note [A report per rank]): two runs as ranks 0 and 1
# of a launcher, each writing stats-%r.json; a row per rank that is its
# file's, and the node's row the ranks' largest time and summed bytes.
for r in 0 1; do
  RANK=$r "$lms" sim googlenet --batch 1 --forward --links pcie3 \
    --policies schedule --gpu-limit $((5 - r))GiB --stats "$tmp/stats-%r.json" \
    >/dev/null 2>&1 || no "rank $r's run failed"
done
[ -s "$tmp/stats-0.json" ] && [ -s "$tmp/stats-1.json" ] || no "no stats per rank"
"$lms" report --ranks "$tmp/stats-%r.json" --out "$tmp/ranks" >"$tmp/ranks.out" 2>&1 ||
  no "lms report --ranks failed: $(cat "$tmp/ranks.out")"
python3 - "$tmp" <<'PY' || no "the per-rank report is not the files'"
import json, sys
d = sys.argv[1]
rows = json.load(open(d + "/ranks/report.json"))["rows"]
assert [r["rank"] for r in rows] == ["0", "1", "node"], rows
for r in (0, 1):
    st = json.load(open(f"{d}/stats-{r}.json"))
    assert rows[r]["elapsed_ns"] == st["elapsed_ns"], (r, rows[r])
    assert rows[r]["bytes_h2d"] == st["bytes_h2d"]["total"], (r, rows[r])
    assert rows[r]["pinned_peak"] == st["host_pinned"]["peak"], (r, rows[r])
node = rows[2]
assert node["elapsed_ns"] == max(rows[0]["elapsed_ns"], rows[1]["elapsed_ns"])
for k in ("bytes_h2d", "bytes_d2h", "pinned_peak", "stall_ns"):
    assert node[k] == rows[0][k] + rows[1][k], k
assert rows[0]["bytes_h2d"] != rows[1]["bytes_h2d"], "the two runs differ"
md = open(d + "/ranks/report.md").read()
assert md.count("\n| ") == 4 and "| node |" in md, md
print("ranks:", [(r["rank"], round(r["elapsed_ns"] / 1e6)) for r in rows])
PY
# The same files named in a list; a missing rank 0, files of a whole run
# beside a measured iteration's, and --ranks with a workload are refused.
"$lms" report --ranks "$tmp/stats-0.json,$tmp/stats-1.json" --out "$tmp/ranks2" \
  >/dev/null 2>&1 || no "lms report --ranks LIST failed"
cmp -s "$tmp/ranks/report.json" "$tmp/ranks2/report.json" || no "--ranks LIST differs"
"$lms" report --ranks "$tmp/none-%r.json" --out "$tmp/r3" >"$tmp/r3.out" 2>&1
[ $? -eq 2 ] && grep -q "none-0.json" "$tmp/r3.out" ||
  no "a missing rank 0 not named (exit 2): $(cat "$tmp/r3.out")"
"$lms" report --ranks "$tmp/stats-0.json,$res/googlenet-b10-train-lms8192-pcie3.stats.json" \
  --out "$tmp/r4" >"$tmp/r4.out" 2>&1
[ $? -eq 2 ] && grep -q "give files of one kind" "$tmp/r4.out" ||
  no "mixed kinds accepted: $(cat "$tmp/r4.out")"
"$lms" report googlenet --ranks "$tmp/stats-%r.json" >"$tmp/r5.out" 2>&1
[ $? -eq 2 ] && grep -q -- "--ranks makes a report of its own" "$tmp/r5.out" ||
  no "--ranks with a workload accepted: $(cat "$tmp/r5.out")"

# 10. What lms bench link printed, charted (Note [A link report]): the
# H100's second run, whose host-to-device swap figures were wrongly timed
# (faster than the link), and a file made here with a known verdict.
"$lms" report --bench-link "$res/run2-bench_link.txt" --out "$tmp/link" \
  >"$tmp/link.out" 2>&1 || no "lms report --bench-link failed: $(cat "$tmp/link.out")"
python3 - "$tmp/link" <<'PY' || no "the link report is not the file's"
import json, sys
d = sys.argv[1]
j = json.load(open(d + "/report.json"))
rows = j["rows"]
assert len(rows) == 8 and rows[0]["bytes"] == 65536 and rows[-1]["bytes"] == 1 << 30, rows
assert rows[0]["h2d_plain"] == 10.19 and rows[5]["d2h_ratio"] == 0.998, rows
md = open(d + "/report.md").read()
assert "**host to device**: not measured: at 8 of the 8 sizes" in md, md
assert "**device to host**: 0.997-1.001 of plain copies at 64 MiB and more (target 0.95: met)" in md, md
dat = [l.split() for l in open(d + "/link.dat") if not l.startswith("#")]
assert all(r[2] == "-" for r in dat) and dat[0][5] == "6.9200", dat
print("link: h2d not measured, d2h", md.split("**device to host**: ")[1].split(" of")[0])
PY
if command -v gnuplot >/dev/null 2>&1 && [ -z "${LMS_GNUPLOT:-}" ]; then
  png "$tmp/link/link.png" || no "link.png is not a PNG file"
fi
printf 'lms bench link: made up\n     chunk   h2d  lms ratio  d2h  lms ratio  both lms ratio\n' >"$tmp/mine.txt"
printf '    16 MiB  50 40 0.800  50 48 0.960  90 90 1.000\n' >>"$tmp/mine.txt"
printf '    64 MiB  50 49 0.980  50 45 0.900  90 90 1.000\n' >>"$tmp/mine.txt"
printf '   256 MiB  50 49 0.980  50 49 0.980  90 90 1.000\n' >>"$tmp/mine.txt"
"$lms" report --bench-link "$tmp/mine.txt" --out "$tmp/mine" >/dev/null 2>&1 ||
  no "a made-up link file was refused"
grep -q "host to device\*\*: 0.980-0.980 of plain copies at 64 MiB and more (target 0.95: met); the swap path keeps up from chunks of 64 MiB" "$tmp/mine/report.md" ||
  no "h2d verdict: $(grep 'host to device' "$tmp/mine/report.md")"
grep -q "device to host\*\*: 0.900-0.980 of plain copies at 64 MiB and more (target 0.95: not met); the swap path keeps up from chunks of 256 MiB" "$tmp/mine/report.md" ||
  no "d2h verdict: $(grep 'device to host' "$tmp/mine/report.md")"
printf '    64 KiB  1 2 3\n' >"$tmp/bad-link.txt"
"$lms" report --bench-link "$tmp/bad-link.txt" --out "$tmp/bl" >"$tmp/bl.out" 2>&1
[ $? -eq 2 ] && grep -q "bad-link.txt:1 is not a row of" "$tmp/bl.out" ||
  no "a bad row not named (exit 2): $(cat "$tmp/bl.out")"
: >"$tmp/empty-link.txt"
"$lms" report --bench-link "$tmp/empty-link.txt" --out "$tmp/el" >"$tmp/el.out" 2>&1
[ $? -eq 2 ] && grep -q "holds no row" "$tmp/el.out" || no "an empty file: $(cat "$tmp/el.out")"

[ "$fail" -eq 0 ] && echo "ok"
exit "$fail"
