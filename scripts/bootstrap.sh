#!/usr/bin/env bash
# Installs what building and testing lms needs on a Debian machine, and only
# what is missing: cmake, a C compiler, pkg-config, jemalloc and Criterion,
# and, optional, gnuplot (gnuplot-nox) for the charts of `lms report`,
# python3-torch for the PyTorch offload tests, python3-scipy for the
# linear programme's test, chromium for the test that
# renders the report, and clang with its runtimes for `make test`'s clang
# sanitizer and fuzzing stages.
# Quiet and quick when everything is there.
set -euo pipefail

missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v cc >/dev/null 2>&1 || missing+=(gcc)
command -v make >/dev/null 2>&1 || missing+=(make)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
if command -v pkg-config >/dev/null 2>&1; then
  pkg-config --exists jemalloc 2>/dev/null || missing+=(libjemalloc-dev)
  pkg-config --exists criterion 2>/dev/null || missing+=(libcriterion-dev)
else
  missing+=(libjemalloc-dev libcriterion-dev)
fi
# gnuplot draws the charts of `lms report`; without it the report still
# comes out, with a note, so failing to install it fails nothing.  Debian's
# CPU build of PyTorch runs the autograd-offload tests with real PyTorch
# (tests/python/test_offload_torch.py); without it they report themselves
# skipped.
optional=()
command -v gnuplot >/dev/null 2>&1 || optional+=(gnuplot-nox)
if [ -x /usr/bin/python3 ] && ! /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then
  optional+=(python3-torch)
fi
# python3-scipy solves the linear programme of bench/workloads/lp_bound.py
# (tests/lp_bound_test.py); without it that test is skipped.
if [ -x /usr/bin/python3 ] && ! /usr/bin/python3 -c 'import scipy' >/dev/null 2>&1; then
  optional+=(python3-scipy)
fi
# chromium renders report.html in the test that looks at it as a person
# would (tests/report_render.py); without it that test is skipped.
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 ||
  optional+=(chromium)
# python3-venv for the test that pip-installs ./python into a fresh
# environment (tests/pip_install.sh); without it that test is skipped.
if [ -x /usr/bin/python3 ] && ! /usr/bin/python3 -c 'import ensurepip' >/dev/null 2>&1; then
  optional+=(python3-venv)
fi
# clang builds the suites once more for `make test`, for the checks only
# its sanitizers make, and links the fuzz harnesses with its libFuzzer;
# without it those stages report themselves skipped.  Debian ships clang's
# sanitizer runtimes and libFuzzer in libclang-rt-dev, only recommended by
# clang, which --no-install-recommends below leaves out.
if ! command -v clang >/dev/null 2>&1 &&
   ! ls /usr/bin/clang-[0-9]* >/dev/null 2>&1; then
  optional+=(clang libclang-rt-dev)
else
  cl=$(command -v clang 2>/dev/null ||
       ls /usr/bin/clang-[0-9]* | sort -V | tail -n 1)
  [ -f "$("$cl" -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null)" ] ||
    [ "$(uname -m)" != x86_64 ] || optional+=(libclang-rt-dev)
fi
[ ${#missing[@]} -eq 0 ] && [ ${#optional[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  sudo=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo="sudo"
else
  sudo="none"
fi
export DEBIAN_FRONTEND=noninteractive

# Tries the optional packages once, quietly; never fails the bootstrap.
install_optional() {
  [ ${#optional[@]} -eq 0 ] && return 0
  if [ "$sudo" = none ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: cannot install ${optional[*]}; their charts or tests will be skipped" >&2
    return 0
  fi
  echo "bootstrap: installing ${optional[*]} (charts of lms report, PyTorch tests, the linear programme's test, report rendering, clang sanitizer and fuzzing stages)" >&2
  { $sudo apt-get install -y -qq --no-install-recommends "${optional[@]}" ||
    { $sudo apt-get update -qq &&
      $sudo apt-get install -y -qq --no-install-recommends "${optional[@]}"; }
  } >/dev/null 2>&1 ||
    echo "bootstrap: could not install ${optional[*]}; their charts or tests will be skipped" >&2
  return 0
}

if [ ${#missing[@]} -eq 0 ]; then
  install_optional
  exit 0
fi

echo "bootstrap: installing ${missing[*]}" >&2
if [ "$sudo" = none ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "bootstrap: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  fi
fi
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_optional
