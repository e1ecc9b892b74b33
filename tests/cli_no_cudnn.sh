#!/usr/bin/env bash
# cli_no_cudnn.sh LMS [LMS_BENCH_NET] - lms starts and simulates where
# cuDNN and cuBLAS are absent (Note [bench net in a binary of its own] in
# CMakeLists.txt).  The libraries are hidden by a directory, first on
# LD_LIBRARY_PATH, of files with their names that are not libraries: a
# binary that needs one fails to load.  lms-bench-net, which does need
# them, is the control that the hiding works; without it (a build with no
# cuDNN) the names hidden are those of the CUDA toolkit's.
set -u
lms=$1
helper=${2:-}
fail=0
hide=$(mktemp -d)
trap 'rm -rf "$hide"' EXIT

names="libcudnn.so.9 libcudnn.so.8 libcublas.so.13 libcublas.so.12 libcublasLt.so.13 libcublasLt.so.12"
if [ -n "$helper" ]; then
  names="$names $(ldd "$helper" | awk '/libcudnn|libcublas/ {print $1}')"
fi
for n in $names; do echo "not a library" > "$hide/$n"; done

# lms needs neither library, directly or through what it loads.
if ldd "$lms" | grep -E 'libcudnn|libcublas'; then
  echo "FAIL: $lms needs cuDNN or cuBLAS (above)"
  fail=1
fi

export LD_LIBRARY_PATH="$hide${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out=$("$lms" --version 2>&1) || { echo "FAIL: lms --version exited $?: $out"; fail=1; }
echo "$out"
out=$("$lms" sim googlenet --batch 1 --size 224 --capacities 1GiB \
      --links pcie3 --policies schedule 2>&1)
rc=$?
echo "$out"
if [ $rc -ne 0 ] || ! grep -qE "^pcie3 +schedule +1.0 " <<<"$out"; then
  echo "FAIL: lms sim without cuDNN: exit $rc, no schedule row"
  fail=1
fi

if [ -n "$helper" ]; then
  out=$("$helper" --version 2>&1)
  rc=$?
  if [ $rc -eq 0 ]; then
    echo "FAIL: $helper started with cuDNN hidden: the hiding hides nothing"
    fail=1
  else
    echo "control: $helper does not start with cuDNN hidden (exit $rc)"
  fi
  # lms bench net is lms-bench-net's: lms names it in lms version.
  unset LD_LIBRARY_PATH
  # A wrong LMS_BENCH_NET is named, with what is accepted, exit status 3.
  out=$(LMS_BENCH_NET=/nonexistent/lms-bench-net "$lms" bench net 2>&1)
  rc=$?
  if [ $rc -ne 3 ] || ! grep -q "LMS_BENCH_NET='/nonexistent/lms-bench-net'.*accepted: the path of lms-bench-net" <<<"$out"; then
    echo "FAIL: a wrong LMS_BENCH_NET: exit $rc: $out"
    fail=1
  fi
  grep -q "^bench net: .*lms-bench-net$" <<<"$("$lms" --version)" || {
    echo "FAIL: lms version does not name $helper"; fail=1; }
fi
[ $fail -eq 0 ] && echo "PASS: lms runs without cuDNN and cuBLAS"
exit $fail
