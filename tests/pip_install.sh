#!/usr/bin/env bash
# pip_install.sh SOURCE_DIR BUILD_DIR PYTHON WORK_DIR - `pip install ./python`
# into a fresh virtual environment, offline (--no-index: the build backend
# needs nothing from an index), the two ways python/build_backend/lms_build.py
# gets the C libraries: a CMake build of the source tree (the simulated
# device alone, to be quick), and LMS_LIB_DIR naming a build's.  Each time
# `import lms_torch, lms_offload` in the environment finds the libraries
# the wheel put beside them, not the source tree's, and liblms_torch.so
# loads.  Exits 77 (skipped) with why when PYTHON cannot make a venv.
set -u
src=$1 build=$2 py=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
if ! "$py" -m venv "$work/probe" >"$work/probe.log" 2>&1; then
  echo "SKIP: $py cannot make a virtual environment (python3-venv):"
  cat "$work/probe.log"
  exit 77
fi
fail=0
check() { # VENV WHAT
  local venv=$1 what=$2 out
  # Run from elsewhere, so that python/ is not on the path.
  out=$(cd "$work" && env -u LMS_TORCH_LIB -u LMS_LIB "$venv/bin/python" -c '
import ctypes, os, sys, lms_torch, lms_offload
site = os.path.dirname(lms_torch.__file__)
for f in (lms_torch.find_library(), lms_offload.find_library()):
    assert f.startswith(os.path.join(site, "lms.libs") + os.sep), (f, site)
    assert os.path.exists(f), f
ctypes.CDLL(lms_torch.find_library())
print("found", lms_torch.find_library(), lms_offload.find_library())
' 2>&1) || { echo "FAIL $what: $out"; fail=1; return; }
  echo "ok   $what: $out"
}
for how in cmake libdir; do
  venv="$work/venv-$how"
  "$py" -m venv "$venv" || { echo "FAIL venv"; exit 1; }
  if [ "$how" = cmake ]; then
    env LMS_CMAKE_ARGS="-DLMS_WITH_CUDA=OFF" "$venv/bin/pip" install -q \
      --no-index "$src/python" >"$work/pip-$how.log" 2>&1
  else
    env LMS_LIB_DIR="$build/lib" "$venv/bin/pip" install -q --no-index \
      "$src/python" >"$work/pip-$how.log" 2>&1
  fi || { echo "FAIL pip install ./python ($how):"; cat "$work/pip-$how.log"; fail=1; continue; }
  check "$venv" "pip install ./python ($how)"
done
# Bad input: LMS_LIB_DIR without the libraries is refused, naming it.
venv="$work/venv-cmake"
out=$(env LMS_LIB_DIR="$work" "$venv/bin/pip" install -q --no-index \
      --force-reinstall "$src/python" 2>&1) &&
  { echo "FAIL LMS_LIB_DIR=$work was accepted"; fail=1; }
grep -q "LMS_LIB_DIR=$work holds no liblms.so.0" <<<"$out" ||
  { echo "FAIL no message naming LMS_LIB_DIR:"; echo "$out"; fail=1; }
[ $fail -eq 0 ] && echo "PASS: pip install ./python"
exit $fail
