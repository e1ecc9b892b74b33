#!/usr/bin/env bash
# build.sh - build the GPU benchmarks (vmm_um, oversub) for sm_90.
#
#   bench/gpu/build.sh [OUTDIR]      (default bench/gpu/bin)
#
# NVCC and ARCH override the compiler and the target (defaults
# /usr/local/cuda/bin/nvcc and sm_90).  vmm_um calls the driver API, so it
# links -lcuda; where no driver is installed (a build machine) it links
# against the toolkit's stub library instead, and the real libcuda.so.1 is
# found at run time.  oversub links only the default static cudart.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/bin}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
arch=${ARCH:-sm_90}
stubs=$(dirname "$(dirname "$nvcc")")/lib64/stubs
flags=(-O2 "-arch=$arch" -Xcompiler -Wall,-Wextra)

mkdir -p "$out"

echo "build.sh: oversub"
"$nvcc" "${flags[@]}" "$here/oversub.cu" -o "$out/oversub"

echo "build.sh: vmm_um"
if ! "$nvcc" "${flags[@]}" "$here/vmm_um.cu" -lcuda -o "$out/vmm_um" \
    2>"$out/.vmm_um.link.log"; then
  if ! grep -q "cannot find -lcuda" "$out/.vmm_um.link.log"; then
    cat "$out/.vmm_um.link.log" >&2
    rm -f "$out/.vmm_um.link.log"
    exit 1
  fi
  echo "build.sh: no libcuda here; linking vmm_um against $stubs"
  "$nvcc" "${flags[@]}" "$here/vmm_um.cu" "-L$stubs" -lcuda -o "$out/vmm_um"
else
  cat "$out/.vmm_um.link.log" >&2
fi
rm -f "$out/.vmm_um.link.log"
echo "build.sh: built $out/oversub $out/vmm_um"
