#!/usr/bin/env bash
# install_consume.sh BUILD_DIR SOURCE_DIR WORK_DIR - installs the build
# into a fresh prefix, then builds and runs tests/consumer against it two
# ways: a CMake project with find_package(lms), and a plain compile with
# pkg-config's flags.  Also runs the installed lms.  CC and
# LMS_CONSUMER_CFLAGS (the build's sanitizers, from CTest) build the
# consumer as the libraries were built.
set -eu
build=$1 src=$2 work=$3
cc=${CC:-cc}
cflags=${LMS_CONSUMER_CFLAGS:-}
rm -rf "$work"
mkdir -p "$work"
prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
echo "ok   installed into $prefix"
lib=$(dirname "$(find "$prefix" -name 'liblms.so.0' | head -1)")
test -n "$lib" || { echo "FAIL no liblms.so.0 installed"; exit 1; }
# find_package(lms)
cmake -S "$src/tests/consumer" -B "$work/cm" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$cflags" \
  >"$work/cm.log" 2>&1 || { cat "$work/cm.log"; echo "FAIL find_package(lms)"; exit 1; }
cmake --build "$work/cm" >>"$work/cm.log" 2>&1 || { cat "$work/cm.log"; echo "FAIL build with find_package"; exit 1; }
LD_LIBRARY_PATH="$lib" "$work/cm/consumer" || { echo "FAIL the find_package consumer"; exit 1; }
echo "ok   find_package(lms) consumer"
# pkg-config
flags=$(PKG_CONFIG_PATH="$lib/pkgconfig" pkg-config --cflags --libs lms)
$cc $cflags "$src/tests/consumer/main.c" $flags -o "$work/pc_consumer"
LD_LIBRARY_PATH="$lib" "$work/pc_consumer" || { echo "FAIL the pkg-config consumer"; exit 1; }
echo "ok   pkg-config consumer ($flags)"
# The installed command, and lms run finding the installed preload.
"$prefix/bin/lms" --version
# Where the build made lms-bench-net, the installed lms finds the
# installed one (Note [bench net in a binary of its own]).
if [ -x "$build/bin/lms-bench-net" ]; then
  helper="$prefix/libexec/lms/lms-bench-net"
  test -x "$helper" || { echo "FAIL no $helper installed"; exit 1; }
  "$prefix/bin/lms" --version | grep -qx "bench net: .*/libexec/lms/lms-bench-net" ||
    { echo "FAIL the installed lms does not find $helper"; exit 1; }
  echo "ok   the installed lms finds $helper"
fi
if [ -f "$lib/liblms_preload.so" ] && [ -z "$cflags" ]; then
  out=$(env -u LMS_PRELOAD_LIB "$prefix/bin/lms" --gpu-limit 1GiB run -- true 2>&1) ||
    { echo "$out"; echo "FAIL lms run from the install"; exit 1; }
  echo "ok   the installed lms run finds $lib/liblms_preload.so"
fi
rm -rf "$work"
