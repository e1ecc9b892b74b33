#!/usr/bin/env bash
# cli_workloads.sh LMS - lms sim never refuses a workload whose largest
# step fits, on traces written outside the built-in workloads: equal chunks
# of awkward sizes (the shapes the device cache once refused at every
# capacity) and the traces of bench/workloads/gen_traces.py, at 2x, 4x and
# 10x oversubscription, where no run may beat the lower bound of lms sim
# and furthest-next-use victims may not bring in more bytes than LRU.
set -u
lms=$1
# "sanitized": a sanitizer build, where the sweep with waits measured is
# left to the plain build (tests/cli_tests.cmake says why).
mode=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
pass=0 fail=0

# N equal chunks of SIZE bytes: each written by one step, read back by
# another in reverse order (a forward and a backward pass).
probe() {
  local n=$1 size=$2 out=$3
  {
    echo "lms-trace 1"
    echo "workload probe-$n-$size"
    for ((i = 0; i < n; i++)); do echo "chunk $i $size c$i transient"; done
    for ((i = 0; i < n; i++)); do echo "step 100000 f$i w:$i"; done
    for ((i = n - 1; i >= 0; i--)); do echo "step 100000 b$i r:$i"; done
  } >"$out"
}

check() { # NAME CAPACITY TRACE
  local out
  if out=$("$lms" sim "$3" --capacities "$2" --links pcie3 \
           --policies ondemand,schedule 2>&1); then
    pass=$((pass + 1)); echo "ok   $1 under $2"
  else
    fail=$((fail + 1)); echo "FAIL $1 under $2:"; echo "$out" | sed 's/^/     /'
  fi
}

MiB=1048576
for spec in "100 2359296" "100 $((MiB + 1))" "60 $((2 * MiB + 1))" \
            "40 $((4 * MiB + 1))" "100 $((MiB + MiB / 8))" \
            "100 $((MiB + MiB / 2))" "60 $((3 * MiB))" "100 786432"; do
  set -- $spec
  probe "$1" "$2" "$dir/p.trace"
  total=$(($1 * $2))
  # In memory (the run lms sim compares with) and at 2x and 10x over.
  for cap in $((total + total / 20)) $((total / 2)) $((total / 10)); do
    check "$1 chunks of $2 bytes" "${cap}B" "$dir/p.trace"
  done
done

py=$(command -v python3 || true)
if [ -n "$py" ]; then
  "$py" "$here/../bench/workloads/gen_traces.py" "$dir" >/dev/null
  # No refusal, no run below the lower bound, and furthest-next-use
  # victims never bring in more than LRU victims (sweep.py's exit status),
  # but for the runs --known-over-lru lists, which are open failures of
  # that and must go on failing (one that stops is reported, to be taken
  # off).  DLRM, held out until the plan by density (bench/results/
  # 2026-11-28-sim-whole-chunks-kept.md), brought in more than LRU over
  # pcie3 before it; the mixed-precision decoder was held out until
  # bench/results/2026-11-28-sim-leaving-before-room.md, the two
  # mixture-of-experts decoders until Note [A false period] in
  # src/graph/plan.c (bench/results/2026-11-29-sim-home-before-leaving.md).
  # The U-Net and the LSTM joined untuned (bench/results/
  # 2026-11-29-sim-fresh-room.md), and so did the ViT fine-tune and the
  # diffusion model's inference (bench/results/
  # 2026-11-29-sim-dense-on-trial.md), and LoRA fine-tuning, speech
  # recognition with a beam, a pipeline stage's one-forward-one-backward
  # order and EfficientNet-B0's training (bench/results/
  # 2026-11-29-sim-lora-whisper.md).  A 1.1B decoder's decoding step
  # joined untuned (bench/results/2026-12-02-sim-victims.md), and so did
  # a graph network's full-batch training and a 7B decoder serving with
  # continuous batching (bench/results/2026-12-04-sim-idle-while-copies-land.md).
  # The trace paths have no spaces: $traces is split on purpose.
  traces="$dir/oddsizes.trace $dir/stream.trace $dir/resnet50.trace
          $dir/gpt2-medium.trace $dir/random4k.trace $dir/vgg16.trace
          $dir/llama-decode.trace $dir/dlrm.trace $dir/gpt-mixed.trace
          $dir/moe-decode.trace $dir/unet2d.trace $dir/lstm.trace
          $dir/vit-accum.trace $dir/sd-infer.trace $dir/lora-7b.trace
          $dir/whisper-beam.trace $dir/pp-1f1b.trace $dir/effnet.trace
          $dir/tinyllama-decode.trace $dir/gcn-products.trace
          $dir/serve-cb.trace"
  # Known: the 7B decoder at 10x over pcie3, pcie5 and c2c, where the
  # window, kept on trial, goes on to wander (which layers stay turns from one
  # iteration to the next) and brings in 0.6 % more than LRU (20.46 GB
  # against 20.33); counted as settled on its first two alike iterations
  # before Note [A settled iteration] asked for the same chunks on the
  # device at both ends (bench/results/2026-12-02-sim-settled.md).  At
  # 4x over pcie3 and pcie5, in runs of up to 64 iterations, where the
  # window drifts from 16.57 GB to 17.24 (with Belady's victims for large
  # requests too, a few iterations later) and the ways that replace it
  # bring in as much, 0.75 % and 1.5 % more than LRU; runs of 48 stopped
  # before the drift over pcie3 (bench/results/
  # 2026-12-04-sim-belady-for-large.md).  At 10x over nvlink2 the watch
  # (Note [The trial keeps score] in src/graph/plan.c) now replaces the
  # window with the plan by density, which brought in 1 % fewer bytes on
  # trial and was no slower, and the run brings in 20.19 GB
  # (bench/results/2026-12-04-sim-watch-holds-the-run.md).
  # Under the sanitizers the sweep takes two of the four links (the
  # slowest and the fastest): it is there to run every trace's code paths
  # under them, and at all four it took a quarter of CI's time; the plain
  # build sweeps all four.
  links=pcie3,pcie5,nvlink2,c2c
  [ "$mode" = sanitized ] && links=pcie3,c2c
  out=$("$py" "$here/../bench/workloads/sweep.py" "$lms" $traces \
        "$dir/moe-decode-b1.trace" --over 2,4,10 \
        --links "$links" \
        --known-over-lru llama-decode:4:pcie3,llama-decode:4:pcie5,llama-decode:10:pcie3,llama-decode:10:pcie5,llama-decode:10:c2c 2>&1)
  if [ $? -eq 0 ]; then
    pass=$((pass + 1)); echo "ok   generated traces at 2x, 4x, 10x"
  else
    fail=$((fail + 1)); echo "FAIL generated traces:"; echo "$out" | sed 's/^/     /'
  fi
  # The same where the device tells a stream's wait only after it, as a
  # GPU does (Note [Stalls measured after the fact]).  Known: the decoder
  # of experts at batch 1 at 10x over pcie3, pcie5 and nvlink2, where the
  # window brings in 0.2 % more than LRU victims with the window do (over
  # nvlink2 again since a run is no longer settled by six alike
  # iterations whose chunks differ: Note [A settled iteration] in
  # src/replay/replay.c), and the 7B decoder at 4x over every link,
  # 0.75 % more (the window wandering as above), and at 10x over pcie5,
  # where it brought in 20.73 GB against LRU's 20.33 and the plan that
  # replaces it wanders too: of the run, which does not settle in 64, the
  # iteration reported brought in no more than LRU until the run was held
  # while the watch counts, and 20.46 GB since (bench/results/
  # 2026-12-04-sim-watch-holds-the-run.md); and
  # EfficientNet-B0 at 4x and
  # 10x (one capacity) over c2c, where the spread plan, 7 % faster on
  # trial than the plan, brings in 3.492 GB against LRU's 3.482; and the
  # 7B decoder serving with continuous batching at 2x over c2c and at 4x
  # over pcie5 and c2c (at 2x over pcie5 and nvlink2 too until the watch
  # broke ties on bytes), where the window, kept, holds
  # the requests' caches, dirtied at every step, and brings the weights in
  # instead: 1.1-4.2 % more bytes in than LRU, 61-88 % of its
  # write-backs (39.1 GB against 55.9 at 2x over c2c), and faster in each
  # (bench/results/2026-12-04-sim-watch-holds-the-run.md): open
  # failures of the check, held in the sweep so that a change shows.
  # Over all four links since Note [The plan says when]
  # (bench/results/2026-11-29-sim-room-before-use.md).
  if [ "$mode" = sanitized ]; then
    echo "skip generated traces, waits measured as on a GPU: left to the" \
         "plain build under the sanitizers (the sweep above ran here)"
  elif out=$(LMS_SIM_MEASURED_WAITS=on "$py" \
        "$here/../bench/workloads/sweep.py" \
        "$lms" $traces "$dir/moe-decode-b1.trace" --over 2,4,10 \
        --links pcie3,pcie5,nvlink2,c2c \
        --known-over-lru moe-decode-b1:10:pcie3,moe-decode-b1:10:pcie5,moe-decode-b1:10:nvlink2,llama-decode:4:pcie3,llama-decode:4:pcie5,llama-decode:4:nvlink2,llama-decode:4:c2c,llama-decode:10:pcie5,effnet:4:c2c,effnet:10:c2c,serve-cb:2:c2c,serve-cb:4:pcie5,serve-cb:4:c2c 2>&1); then
    pass=$((pass + 1)); echo "ok   generated traces, waits measured as on a GPU"
  else
    fail=$((fail + 1)); echo "FAIL generated traces, waits measured:"
    echo "$out" | sed 's/^/     /'
  fi
  # --known-over-lru: a listing it cannot read is refused by name, and a
  # listed run that brings in no more than LRU fails the sweep, named.
  sw="$here/../bench/workloads/sweep.py"
  e1=$("$py" "$sw" "$lms" "$dir/oddsizes.trace" --over 2 --links pcie3 \
       --known-over-lru oddsizes 2>&1); r1=$?
  e2=$("$py" "$sw" "$lms" "$dir/oddsizes.trace" --over 2 --links pcie3 \
       --known-over-lru oddsizes:two 2>&1); r2=$?
  e3=$("$py" "$sw" "$lms" "$dir/oddsizes.trace" --over 2 --links pcie3 \
       --known-over-lru oddsizes:2:pcie3 2>&1); r3=$?
  if [ $r1 -ne 0 ] && echo "$e1" | grep -q "'oddsizes' is not NAME:OVER" &&
     [ $r2 -ne 0 ] && echo "$e2" | grep -q "'oddsizes:two' is not" &&
     [ $r3 -ne 0 ] &&
     echo "$e3" | grep -q "KNOWN FAILURE GONE: oddsizes 2x pcie3"; then
    pass=$((pass + 1)); echo "ok   sweep.py --known-over-lru checks its list"
  else
    fail=$((fail + 1)); echo "FAIL sweep.py --known-over-lru:"
    printf '%s\n%s\n%s\n' "$e1" "$e2" "$e3" | tail -n 12 | sed 's/^/     /'
  fi
  # Note [A window that adapts]: streaming inference under the default
  # window brings in at most 1.3x the fewest bytes (1.73x with the whole
  # window, before the window adapted).
  if "$lms" sim "$dir/stream.trace" --capacities 1.13GiB --links pcie3 \
       --policies schedule --json "$dir/stream.json" >/dev/null 2>&1 &&
     "$py" -c 'import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
x = r["bytes_h2d"] / r["min_bytes_h2d"]
print("stream at 2x: %.3f x the fewest bytes in" % x)
sys.exit(0 if x <= 1.3 else 1)' "$dir/stream.json"; then
    pass=$((pass + 1)); echo "ok   streaming at 2x within 1.3x of the fewest bytes"
  else
    fail=$((fail + 1)); echo "FAIL streaming at 2x moves too much"
  fi
  # Note [Leaving late] in src/graph/plan.c: the 2D U-Net's training at
  # 2x (773148672 bytes) over pcie5 writes home more in forward than
  # forward computes, and a plan that sends its dirty chunks away at once
  # makes new tensors wait for write-backs they do not need; its trial
  # keeps them until their room is needed (43.6 ms against 45.6 with the
  # plan by density sending them at once: bench/results/
  # 2026-11-29-sim-dense-on-trial.md).  ResNet-50 at 2x, which this check
  # held until then (57.5 ms leaving late against 61.6: bench/results/
  # 2026-11-25-sim-leaving-late.md), now keeps the plan by density, 53.6
  # ms at 1.24 GiB without leaving late.
  if "$lms" sim "$dir/unet2d.trace" --capacities 773148672B --links pcie5 \
       --policies schedule --json "$dir/unet.json" >/dev/null 2>&1 &&
     "$py" -c 'import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
print("unet2d at 2x over pcie5: %s, leaving late %s, %.1f ms" %
      (r["ahead"], r["leaves_late"], r["iteration_ns"] / 1e6))
sys.exit(0 if r["ahead"] != "window" and r["leaves_late"] else 1)' \
       "$dir/unet.json"; then
    pass=$((pass + 1)); echo "ok   unet2d at 2x over pcie5 leaves late"
  else
    fail=$((fail + 1)); echo "FAIL unet2d at 2x over pcie5 does not leave late"
  fi
  # Note [Copies in by their use] in src/graph/ahead.c: GPT-2 medium
  # training at 2x over pcie5, where a copy in queued as soon as room
  # allows holds up backward's own behind the optimiser's state; its
  # trial keeps a plan bringing chunks in by their use (the spread plan
  # so, 343.9 ms against 366.3 with the window at ad20b72: bench/results/
  # 2026-11-25-sim-copies-in-order.md; the plan by density so since it is
  # tried wherever it decides otherwise, 314.9 ms settled, 317.6 on trial
  # where with its copies in as soon as room allows it took 344.7:
  # 2026-11-29-sim-dense-on-trial.md).
  if "$lms" sim "$dir/gpt2-medium.trace" --capacities 8430083072B \
       --links pcie5 --policies schedule --json "$dir/gpt2.json" \
       >/dev/null 2>&1 &&
     "$py" -c 'import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
print("gpt2-medium at 2x over pcie5: %s, in order %s, %.1f ms" %
      (r["ahead"], r["in_order"], r["iteration_ns"] / 1e6))
sys.exit(0 if r["ahead"] != "window" and r["in_order"] else 1)' \
       "$dir/gpt2.json"; then
    pass=$((pass + 1)); echo "ok   gpt2-medium at 2x over pcie5 brings chunks in by their use"
  else
    fail=$((fail + 1)); echo "FAIL gpt2-medium at 2x over pcie5 does not bring chunks in by their use"
  fi
  # Note [Back to the window] in src/graph/plan.c: a 7B decoder's
  # decoding step at 2x over pcie3 and nvlink2, where the trial keeps the
  # window after the plans ran; started over, it was measured no more than
  # 2 % slower than its iteration on trial (handed the device as the last
  # plan on trial left it, 3.6 % and 3.4 % slower:
  # bench/results/2026-11-28-sim-whole-chunks-kept.md).  But that was its
  # first two alike iterations: the window wanders (which layers stay
  # turns from one iteration to the next), and settled as Note [A settled
  # iteration] asked it settled 3.6 % and 4.8 % slower than on trial
  # (950.1 ms against 917.1, 178.0 against 169.9;
  # bench/results/2026-12-02-sim-settled.md).  Run on, not settled by six
  # alike iterations whose chunks differ, it goes on to 994.4 and 180.4 ms
  # and the watch (Note [The trial keeps score]) hands it to the spread
  # plan, which takes 963.8 and 178.9: still 5.1 % and 5.3 % slower than
  # the window on trial (bench/results/2026-12-04-sim-belady-for-large.md).
  # An open failure, held so that a change shows: the check fails once
  # either run comes within 2 % of the window on trial.  Over c2c the
  # window (31.5 ms on trial) goes on to take 33.4 an iteration, and the
  # plan by density counting write-backs, 32.4 on trial, replaces it: the
  # run settles under what the window went on to take, by 2 % at least.
  if "$lms" sim "$dir/llama-decode.trace" --capacities 10902589440B \
       --links pcie3,nvlink2,c2c --policies schedule \
       --json "$dir/decode.json" >/dev/null 2>&1 &&
     "$py" -c 'import json, sys
known = replaced = True
for r in json.load(open(sys.argv[1]))["runs"]:
    t, w = r["iteration_ns"], r["trial_window_ns"]
    print("llama-decode at 2x over %s: %s, %.1f ms, %.1f ms on trial, "
          "replaced %d (then %.1f ms)" % (r["link"], r["ahead"], t / 1e6,
          w / 1e6, r["replaced"], r["replaced_ns"] / 1e6))
    if r["link"] == "c2c":
        replaced = (r["replaced"] == 1 and r["ahead"] != "window" and
                    r["settled"] and 0 < w < t and
                    t <= r["replaced_ns"] / 50 * 49)
    else:
        known = known and 0 < w and t > 1.02 * w
print("known" if known else "not known", "replaced" if replaced else
      "not replaced")
sys.exit(0 if known and replaced else 1)' "$dir/decode.json" >"$dir/decode.txt"; then
    pass=$((pass + 1)); echo "ok   llama-decode at 2x: over pcie3 and nvlink2 the run ends over 2 % slower than the window on trial, as known; over c2c a plan replaces the window"
  else
    fail=$((fail + 1)); echo "FAIL llama-decode at 2x: over pcie3 or nvlink2 the run no longer ends over 2 % slower than the window on trial (known open failure: take it off if fixed), or over c2c no plan replaced the window:"
    sed 's/^/     /' "$dir/decode.txt"
  fi
  # Note [The trial keeps score] in src/graph/plan.c: the ViT fine-tune at
  # 10x over pcie3 with waits measured keeps the window (2236.8 ms on
  # trial), which goes on to take 2551.7; the run once settled there, two
  # iterations before the watch would have replaced it.  Held while the
  # watch counts, the run goes on until a plan replaces the window and
  # settles at least 2 % under what the window went on to take.
  if LMS_SIM_MEASURED_WAITS=on "$lms" sim "$dir/vit-accum.trace" \
       --capacities 1199603123B --links pcie3 --policies schedule \
       --json "$dir/vit.json" >/dev/null 2>&1 &&
     "$py" -c 'import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
t, w = r["iteration_ns"], r["trial_window_ns"]
print("vit-accum at 10x over pcie3, waits measured: %s, %.1f ms, %.1f ms "
      "on trial, replaced %d (then %.1f ms), settled %s" % (r["ahead"],
      t / 1e6, w / 1e6, r["replaced"], r["replaced_ns"] / 1e6,
      r["settled"]))
sys.exit(0 if r["replaced"] == 1 and r["ahead"] != "window" and
         r["settled"] and t <= r["replaced_ns"] / 50 * 49 else 1)' \
       "$dir/vit.json" >"$dir/vit.txt"; then
    pass=$((pass + 1)); echo "ok   vit-accum at 10x, waits measured: the run is held until a plan replaces the window that went on slower"
  else
    fail=$((fail + 1)); echo "FAIL vit-accum at 10x, waits measured: the run settled on the window the watch would replace, or nothing replaced it:"
    sed 's/^/     /' "$dir/vit.txt"
  fi
  # Note [Pieces where whole chunks take turns] in src/swap/residency.c:
  # --piece-size auto cuts only chunks of half the budget or more.  DLRM at
  # 4x over pcie3 (a table of 805 MB under 881 MB) is at least 10 % faster
  # with it than whole; VGG-16 at 4x, whose largest chunk is a third of its
  # budget, runs exactly as whole.
  dl=0
  for t in dlrm:880803840 vgg16:1295091712; do
    for p in none auto; do
      args=(sim "$dir/${t%%:*}.trace" --capacities "${t#*:}B" --links pcie3
            --policies schedule --json "$dir/auto-${t%%:*}-$p.json")
      [ "$p" = auto ] && args=(--piece-size auto "${args[@]}")
      "$lms" "${args[@]}" >/dev/null 2>&1 || dl=1
    done
  done
  if [ $dl = 0 ] && "$py" -c 'import json, sys
d = sys.argv[1]
t = {(w, p): json.load(open("%s/auto-%s-%s.json" % (d, w, p)))["runs"][0]
     ["iteration_ns"] for w in ("dlrm", "vgg16") for p in ("none", "auto")}
print("at 4x over pcie3: dlrm %.1f ms whole, %.1f ms with --piece-size auto; "
      "vgg16 %.1f and %.1f ms" % tuple(t[w, p] / 1e6 for w in ("dlrm", "vgg16")
                                       for p in ("none", "auto")))
sys.exit(0 if t["dlrm", "auto"] <= t["dlrm", "none"] * 0.9 and
         t["vgg16", "auto"] == t["vgg16", "none"] else 1)' "$dir" >"$dir/auto.txt"; then
    pass=$((pass + 1)); echo "ok   --piece-size auto: DLRM at 4x 10 % faster in pieces, VGG-16 untouched"
  else
    fail=$((fail + 1)); echo "FAIL --piece-size auto: DLRM at 4x not 10 % faster, or VGG-16 moved:"
    sed 's/^/     /' "$dir/auto.txt"
  fi
  # Note [A settled iteration] in src/replay/replay.c: speech recognition
  # with a beam at 4x over pcie5 repeats a cycle of three iterations once
  # its trial is over, which is a steady state: the run settles well
  # before the last (the 64th) and measures the slowest of the three.
  if "$lms" sim "$dir/whisper-beam.trace" --capacities 1169718784B \
       --links pcie5 --policies schedule --json "$dir/whisper.json" \
       >/dev/null 2>&1 &&
     "$py" -c 'import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
print("whisper-beam at 4x over pcie5: settled %s after %d iterations, %.1f ms"
      % (r["settled"], r["iterations"], r["iteration_ns"] / 1e6))
sys.exit(0 if r["settled"] and r["iterations"] < 40 else 1)' \
       "$dir/whisper.json"; then
    pass=$((pass + 1)); echo "ok   whisper-beam at 4x over pcie5 settles in a cycle"
  else
    fail=$((fail + 1)); echo "FAIL whisper-beam at 4x over pcie5 does not settle"
  fi
  # bench/workloads/whole_keep.py (Note [Whole chunks kept] in
  # src/graph/ahead.c): on DLRM at 2x deciding by density brings in less
  # than by end, and the search over the large gaps no more than either;
  # a corrupt trace and a capacity of 0 are refused by name.
  wk="$here/../bench/workloads/whole_keep.py"
  if out=$("$py" "$wk" "$dir/dlrm.trace" 1686503424 --large 400000000) &&
     echo "$out" | "$py" -c 'import sys
v = {l.split()[0]: float(l.split()[1]) for l in sys.stdin}
print("whole_keep on dlrm at 2x: %s" % v)
sys.exit(0 if v["density"] < v["end"] and v["best"] <= v["density"] else 1)'; then
    pass=$((pass + 1)); echo "ok   whole_keep: by density brings in less on dlrm"
  else
    fail=$((fail + 1)); echo "FAIL whole_keep on dlrm: $out"
  fi
  # --exact (an integer programme, with scipy where a python3 has it): on
  # DLRM at 2x with copies in free, the whole choice it finds is no worse
  # than the search's and no better than the same programme in part.
  sp=""
  for c in "$py" /usr/bin/python3; do
    if [ -x "$c" ] && "$c" -c 'import scipy.optimize' 2>/dev/null; then sp=$c; break; fi
  done
  if [ -z "$sp" ]; then
    # Without scipy, --exact is refused by name.
    e0=$("$py" "$wk" "$dir/dlrm.trace" 1686503424 --exact 2>&1); r0=$?
    if [ $r0 -ne 0 ] && echo "$e0" | grep -q "exact needs scipy"; then
      pass=$((pass + 1)); echo "ok   whole_keep --exact without scipy says it needs it"
    else
      fail=$((fail + 1)); echo "FAIL whole_keep --exact without scipy: $e0"
    fi
  elif out=$("$sp" "$wk" "$dir/dlrm.trace" 1686503424 --large 400000000 \
             --copies-free --exact) &&
       echo "$out" | "$sp" -c 'import sys
v = {l.split()[0]: l.split() for l in sys.stdin}
whole, part, best = float(v["exact"][1]), float(v["exact"][8]), float(v["best"][1])
print("whole_keep --exact on dlrm at 2x: whole %.3f, in part %.3f, best %.3f" % (whole, part, best))
sys.exit(0 if part < whole <= best else 1)'; then
    pass=$((pass + 1)); echo "ok   whole_keep --exact: in part < whole <= the search's best"
  else
    fail=$((fail + 1)); echo "FAIL whole_keep --exact on dlrm: $out"
  fi
  printf 'lms-trace 1\nchunk 0 x a persistent\n' >"$dir/bad.trace"
  e1=$("$py" "$wk" "$dir/bad.trace" 1000 2>&1); r1=$?
  e2=$("$py" "$wk" "$dir/dlrm.trace" 0 2>&1); r2=$?
  if [ $r1 -ne 0 ] && [ $r2 -ne 0 ] &&
     echo "$e1" | grep -q "is not a trace lms can read" &&
     echo "$e2" | grep -q "positive number of bytes"; then
    pass=$((pass + 1)); echo "ok   whole_keep refuses a corrupt trace and a capacity of 0"
  else
    fail=$((fail + 1)); echo "FAIL whole_keep bad input: $e1 / $e2"
  fi
  # pieces.py: the chunks of at least capacity / DIV bytes become pieces
  # that every step names together; the pieced trace holds the same bytes
  # (the script fails otherwise), lms runs it, and it has more chunks.
  pc="$here/../bench/workloads/pieces.py"
  out=$("$py" "$pc" "$lms" "$dir/oddsizes.trace" --piece 4 --div 16 \
        --over 2 --links pcie3 --keep "$dir/pieced" 2>&1); r=$?
  n0=$(grep -c '^chunk' "$dir/oddsizes.trace")
  n1=$(grep -c '^chunk' "$dir/pieced/oddsizes-2x.trace" 2>/dev/null || echo 0)
  b0=$(awk '$1 == "chunk" { s += $3 } END { print s }' "$dir/oddsizes.trace")
  b1=$(awk '$1 == "chunk" { s += $3 } END { print s }' \
       "$dir/pieced/oddsizes-2x.trace" 2>/dev/null)
  e=$("$py" "$pc" "$lms" "$dir/oddsizes.trace" --piece 0.5 2>&1); r2=$?
  if [ $r -eq 0 ] && echo "$out" | grep -q "^  pieces: *median" &&
     [ "$n1" -gt "$n0" ] && [ "$b0" = "$b1" ] && [ $r2 -ne 0 ] &&
     echo "$e" | grep -q "piece is MiB, at least 1"; then
    pass=$((pass + 1)); echo "ok   pieces.py splits large chunks ($n0 -> $n1 chunks, $b1 bytes) and refuses a piece under 1 MiB"
  else
    fail=$((fail + 1)); echo "FAIL pieces.py (exit $r, $n0 -> $n1 chunks, $b0 vs $b1 bytes): $out / $e"
  fi
else
  echo "skip generated traces: no python3"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
