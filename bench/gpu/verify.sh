#!/usr/bin/env bash
# verify.sh - the GPU verification pass of the lms command line, in parts
# that each fit one device call (10 minutes), every log kept whole.
#
#   bench/gpu/verify.sh build   BUILD            cmake + nvcc build, tests built
#   bench/gpu/verify.sh tests   BUILD OUT        gpu_test_cuda; memcheck over it
#                                                and over a small bench net
#                                                (also with --piece-size)
#   bench/gpu/verify.sh links   BUILD OUT        bench link; bench overlap three
#                                                times native, once at pcie3
#   bench/gpu/verify.sh net     BUILD OUT [RUN]  bench net b1,b10, plain and
#                                                lms:8192, with and without
#                                                --discard, native and pcie3
#   bench/gpu/verify.sh oversub BUILD OUT        lms run over bench/gpu/oversub
#                                                (12 GiB under 4 GiB), default
#                                                window and window 0
#
# OUT gets one log per figure, named after it, and `device.txt` (nvidia-smi,
# driver, CUDA, the commit and its state): what a results file in
# bench/results/ cites.  A step that fails is logged with its exit status
# and the part goes on; the part's own status is the number of steps that
# failed (at most 125).  PyTorch runs (bench/torch/train.py under `lms run`
# and through lms_torch) are not here: see the call scripts of
# bench/results/2026-11-22-h100-dropin/ for their commands.
set -u
part=${1:?part: build, tests, links, net or oversub}
build=${2:?the build directory}
out=${3:-}
here=$(cd "$(dirname "$0")/../.." && pwd)
failed=0

# step NAME CMD...: runs CMD, its whole output into OUT/NAME.log.
step() {
  local name=$1
  shift
  {
    echo "\$ $*"
    echo "# $(date -u +%FT%TZ)"
  } >"$out/$name.log"
  "$@" >>"$out/$name.log" 2>&1
  local rc=$?
  echo "# exit $rc" >>"$out/$name.log"
  echo "verify.sh: $name: exit $rc"
  [ "$rc" -eq 0 ] || failed=$((failed + 1))
}

device_info() {
  {
    date -u +%FT%TZ
    nvidia-smi || true
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
    /usr/local/cuda/bin/nvcc --version | tail -2 || true
    git -C "$here" rev-parse HEAD
    git -C "$here" status --short | head -20
    "$build/bin/lms" --version
  } >"$out/device.txt" 2>&1
}

if [ "$part" = build ]; then
  cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLMS_WITH_CUDA=ON &&
    cmake --build "$build" -j"$(nproc)"
  exit $?
fi
[ -n "$out" ] || { echo "verify.sh: give OUT, the directory for the logs" >&2; exit 64; }
mkdir -p "$out"
device_info
lms=$build/bin/lms
san=${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}

case $part in
tests)
  step gpu_test_cuda "$build/bin/gpu_test_cuda" --verbose
  step memcheck-gpu_test_cuda "$san" --tool memcheck --error-exitcode 9 \
    "$build/bin/gpu_test_cuda" --jobs 1
  step memcheck-bench_net "$san" --tool memcheck --error-exitcode 9 \
    "$lms" --gpu-limit 4GiB bench net --size 224 --batch 1,4 \
    --configs plain,lms:1024 --iterations 1
  step memcheck-bench_net-discard "$san" --tool memcheck --error-exitcode 9 \
    "$lms" --gpu-limit 4GiB bench net --size 224 --batch 1,4 \
    --configs lms:1024 --iterations 1 --discard
  # Note [Mapping pieces on a GPU] in src/device/cuda.c: at 480^2 the
  # classifier's weight is about 330 MB (1000 x 1024 x 9 x 9 fp32), over an
  # eighth of 2 GiB, so it is made of 32 MiB pieces.
  step memcheck-bench_net-pieces "$san" --tool memcheck --error-exitcode 9 \
    "$lms" --gpu-limit 2GiB --piece-size 32MiB bench net --size 480 \
    --batch 1 --configs plain,lms:1024 --iterations 1
  ;;
links)
  step bench_link "$lms" bench link
  for i in 1 2 3; do step "bench_overlap-native-$i" "$lms" bench overlap; done
  step bench_overlap-pcie3 "$lms" --link pcie3 bench overlap
  ;;
net)
  run=${4:-1}
  for link in native pcie3; do
    lf=()
    [ "$link" = native ] || lf=(--link "$link")
    for d in plain discard; do
      df=()
      [ "$d" = plain ] || df=(--discard)
      step "bench_net-$link-$d-run$run" "$lms" "${lf[@]}" --gpu-limit 16GiB \
        bench net --batch 1,10 --configs plain,lms:8192 "${df[@]}" \
        --trace-dir "$out/traces-$link-$d-run$run"
    done
  done
  ;;
oversub)
  "$here/bench/gpu/build.sh" "$out/bin" >"$out/oversub-build.log" 2>&1 ||
    failed=$((failed + 1))
  for w in default 0; do
    wf=()
    [ "$w" = default ] || wf=(--prefetch-window 0)
    step "oversub-window-$w" /usr/bin/time -v "$lms" --gpu-limit 4GiB \
      "${wf[@]}" run --stats -- "$out/bin/oversub" --total 12288 --chunk 256
  done
  ;;
*)
  echo "verify.sh: unknown part '$part'; accepted: build, tests, links, net, oversub" >&2
  exit 64
  ;;
esac
[ "$failed" -le 125 ] || failed=125
exit "$failed"
