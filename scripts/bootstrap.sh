#!/usr/bin/env bash
# Installs what building and testing lms needs on a Debian machine, and only
# what is missing: cmake, a C compiler, pkg-config, jemalloc and Criterion.
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
[ ${#missing[@]} -eq 0 ] && exit 0

echo "bootstrap: installing ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
  sudo=""
elif command -v sudo >/dev/null 2>&1; then
  sudo="sudo"
else
  echo "bootstrap: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
