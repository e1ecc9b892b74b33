#!/usr/bin/env bash
# preload_tests.sh CASE - one test of liblms_preload.so against the CUDA
# driver double; the paths come from the environment (PT_*, set by
# preload_tests.cmake).  Prints what it ran and why it failed; exits 0 only
# when every check of the case held.
set -u
case_name=$1
pre=$(readlink -f "$PT_PRELOAD")
dd=$PT_DOUBLE_DIR
linked=$PT_LINKED
dl=$PT_DL
lms=$PT_LMS
san=${PT_SAN_RT:-}

fails=0
out=""
err=""
rc=0

# What LD_PRELOAD must hold for an instrumented program: the sanitizer
# runtime first (see preload_tests.cmake).
preload_value() {
  if [ -n "$san" ]; then echo "$san:$pre"; else echo "$pre"; fi
}

# run [VAR=VALUE ...] -- CMD ARGS: runs with the double on the library
# path and the LMS_* of the caller's environment cleared; sets out, err, rc.
run() {
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local o e
  o=$(mktemp) e=$(mktemp)
  env -u LMS_GPU_LIMIT -u LMS_KB -u LMS_FRAC -u LMS_LOG -u LMS_STATS_LINE \
    -u LD_PRELOAD LD_LIBRARY_PATH="$dd" CUDOUBLE_MEMORY=128M "${envs[@]}" \
    "$@" >"$o" 2>"$e"
  rc=$?
  out=$(cat "$o") err=$(cat "$e")
  rm -f "$o" "$e"
  echo "+ ${envs[*]} $* -> exit $rc"
}

# run_pre [VAR=VALUE ...] -- CMD ARGS: the same under the preload.
run_pre() {
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  run LD_PRELOAD="$(preload_value)" "${envs[@]}" "$@"
}

show() {
  [ -n "$out" ] && echo "$out" | sed 's/^/  out: /'
  [ -n "$err" ] && echo "$err" | sed 's/^/  err: /'
  return 0
}

check() { # check DESCRIPTION TEST...
  local what=$1
  shift
  if "$@"; then
    echo "  ok   $what"
  else
    echo "  FAIL $what"
    fails=$((fails + 1))
    show
  fi
}

status_is() { [ "$rc" -eq "$1" ]; }
out_has() { grep -qF -- "$1" <<<"$out"; }
err_has() { grep -qF -- "$1" <<<"$err"; }
err_lacks() { ! grep -qF -- "$1" <<<"$err"; }
out_lacks() { ! grep -qF -- "$1" <<<"$out"; }
out_line() { grep -qxF -- "$1" <<<"$out"; }
# stat NAME: a field of the stats line on stderr
stat() { grep -o "lms preload: .*" <<<"$err" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
stat_is() { [ "$(stat "$1")" = "$2" ]; }

resolve_case() { # resolve_case PROG ROUTE WHAT: the hook found by ROUTE
  run_pre -- "$1" "$2" resolve
  check "$3" status_is 0 ; show
}

limit_case() { # limit_case PROG ROUTE
  # The placement rule alone: without the prefetch's share of the limit
  # (Note [The prefetch's share of the limit]).
  run_pre LMS_GPU_LIMIT=64MiB LMS_PREFETCH_WINDOW=0 LMS_STATS_LINE=1 -- \
    "$1" "$2" limit 64
  check "the program's checks pass" status_is 0
  check "it says so" out_has "limit ok"
  # 48 MiB and 8 MiB on the device, 32 MiB managed; six kernels, each
  # handed one of our allocations, two of them a managed one.
  check "3 allocations, 1 managed" stat_is allocs 3
  check "2 on the device" stat_is device_allocs 2
  check "1 managed" stat_is managed_allocs 1
  check "3 frees and 1 unknown" stat_is frees 3
  check "1 unknown free" stat_is unknown_frees 1
  check "nothing held at exit" stat_is device_bytes 0
  check "no managed held at exit" stat_is managed_bytes 0
  check "device peak 56 MiB" stat_is device_peak 58720256
  check "managed peak 32 MiB" stat_is managed_peak 33554432
  check "6 launches" stat_is launches 6
  check "6 pointers recognised in launches" stat_is launch_ptrs 6
  check "2 launches with managed memory" stat_is launches_managed 2
}

case $case_name in
resolve_direct) resolve_case "$linked" direct "hooked by name" ;;
resolve_dlopen) resolve_case "$dl" dlopen "hooked through dlsym" ;;
resolve_procaddr)
  resolve_case "$dl" procaddr "hooked through cuGetProcAddress_v2" ;;
resolve_procaddr1)
  resolve_case "$dl" procaddr1 "hooked through cuGetProcAddress" ;;
resolve_rules)
  # The driver answers with addresses that are not its exports: the
  # version rules pick the hook, and refuse versions newer than ours.
  run_pre CUDOUBLE_PROC_TRAMPOLINES=1 -- "$dl" procaddr resolve
  check "v2 by the version rules" status_is 0
  check "in trampoline mode" out_has "(trampolines)"
  run_pre CUDOUBLE_PROC_TRAMPOLINES=1 -- "$dl" procaddr1 resolve
  check "v1 by the version rules" status_is 0 ; show ;;
resolve_needs_preload)
  # The resolve checks can fail: without the preload every one does.
  run -- "$dl" dlopen resolve
  check "dlsym route fails without the preload" status_is 1
  check "and names the function" out_has "cuMemAlloc_v2 by route dlopen is"
  run -- "$dl" procaddr resolve
  check "cuGetProcAddress route fails without the preload" status_is 1
  run -- "$linked" direct resolve
  check "direct route fails without the preload" status_is 1 ;;
limit_direct) limit_case "$linked" direct ;;
limit_dlopen) limit_case "$dl" dlopen ;;
limit_procaddr) limit_case "$dl" procaddr ;;
prefetch_loop)
  # Note [Learned prefetch in the preload]: 12 chunks of 8 MiB, all managed
  # by the -lms rule under a 32 MiB limit, checked in 6 passes.  The period
  # (12 launches) is found, chunks go to the device ahead of their kernel
  # and back after, never more than the window's 50 % (16 MiB) at once,
  # and every byte checks at every pass.
  run_pre LMS_GPU_LIMIT=32MiB LMS_KB=1024 LMS_FRAC=0 LMS_PREFETCH_WINDOW=4,50% \
    LMS_STATS_LINE=1 -- "$dl" procaddr loop 12 6
  check "the loop's checks pass" status_is 0
  check "all 12 managed" stat_is managed_allocs 12
  check "period 12 found" stat_is period 12
  check "chunks prefetched" test "$(stat prefetches)" -gt 12
  check "and sent back" test "$(stat evictions)" -gt 0
  check "resident at most 16 MiB" test "$(stat resident_peak)" -le 16777216
  check "the double saw at most 16 MiB moved in" out_has "managed on the device at most 16 MiB"
  check "nothing reserved at exit" stat_is device_bytes 0
  # The window 0 turns it off: the same loop, nothing moved.
  run_pre LMS_GPU_LIMIT=32MiB LMS_KB=1024 LMS_FRAC=0 LMS_PREFETCH_WINDOW=0 \
    LMS_STATS_LINE=1 -- "$dl" procaddr loop 12 6
  check "off: the loop's checks pass" status_is 0
  check "off: no prefetch" stat_is prefetches 0
  check "off: the double saw none" out_has "0 prefetch calls"
  # Launches captured into a graph are left alone.
  run_pre CUDOUBLE_CAPTURING=1 LMS_GPU_LIMIT=32MiB LMS_KB=1024 LMS_FRAC=0 \
    LMS_PREFETCH_WINDOW=4,50% LMS_STATS_LINE=1 -- "$dl" procaddr loop 12 6
  check "capturing: the loop's checks pass" status_is 0
  check "capturing: nothing prefetched at launches" \
    [ "$(stat prefetches)" = "$(stat adopted)" ]
  check "capturing: no period learned" stat_is period 0
  # Note [The prefetch's share of the limit]: no -lms rule, so device
  # allocations take the limit less the share (16 MiB: 2 chunks), the
  # next 2 are managed and adopted on the device, the rest managed; the
  # learned prefetch then rotates them through the share.
  run_pre LMS_GPU_LIMIT=32MiB LMS_PREFETCH_WINDOW=4,50% LMS_STATS_LINE=1 -- \
    "$dl" procaddr loop 12 6
  check "share: the loop's checks pass" status_is 0
  check "share: 2 device allocations" stat_is device_allocs 2
  check "share: 10 managed" stat_is managed_allocs 10
  check "share: 2 adopted" stat_is adopted 2
  check "share: more moved in the loop" test "$(stat prefetches)" -gt 2
  check "share: and sent back" test "$(stat evictions)" -gt 0
  check "share: the double saw at most 32 MiB on the device" \
    out_has "device and managed on the device together at most 32 MiB" ;;
launch_kernels)
  # cudart 12 launches CUkernels: their parameters come from
  # cuKernelGetParamInfo (Note [Which launch parameters are pointers]).
  run_pre CUDOUBLE_LIBRARY_KERNELS=1 LMS_GPU_LIMIT=64MiB LMS_PREFETCH_WINDOW=0 \
    LMS_STATS_LINE=1 -- "$dl" procaddr limit 64
  check "CUkernel launches run" status_is 0
  check "6 pointers recognised through cuKernelGetParamInfo" stat_is launch_ptrs 6
  check "2 launches with managed memory" stat_is launches_managed 2
  # A driver that describes no parameter: launches still run, unseen.
  run_pre CUDOUBLE_LIBRARY_KERNELS=2 LMS_GPU_LIMIT=64MiB LMS_PREFETCH_WINDOW=0 \
    LMS_STATS_LINE=1 -- "$dl" procaddr limit 64
  check "undescribed launches run" status_is 0
  check "6 launches counted" stat_is launches 6
  check "no pointer seen" stat_is launch_ptrs 0 ;;
limit_procaddr1) limit_case "$dl" procaddr1 ;;
oversub)
  # 3 x a 64 MiB limit on a 128 MiB device, the placement rule alone.
  run_pre LMS_GPU_LIMIT=64MiB LMS_PREFETCH_WINDOW=0 LMS_STATS_LINE=1 -- \
    "$dl" procaddr oversub 64 3
  check "completes" status_is 0
  check "all 192 MiB" out_has "oversub ok: 192 MiB in 24 chunks, 128 MiB managed, device peak 64 MiB"
  check "24 allocations" stat_is allocs 24
  check "16 managed" stat_is managed_allocs 16
  check "device peak at the limit" stat_is device_peak 67108864
  check "all freed" stat_is frees 24
  # With the prefetch's default share (60 %, 38.4 MiB): 3 chunks on the
  # device, 4 managed and adopted, then one more on the device, which the
  # share had no room for and the limit had.
  run_pre LMS_GPU_LIMIT=64MiB LMS_STATS_LINE=1 -- "$dl" procaddr oversub 64 3
  check "share: completes" status_is 0
  check "share: 4 on the device" stat_is device_allocs 4
  check "share: 4 adopted" stat_is adopted 4
  check "share: device use at the limit" stat_is device_peak 67108864
  # No limit: the device's own out-of-memory sends the rest to managed.
  run_pre LMS_STATS_LINE=1 -- "$dl" procaddr oversub 64 3
  check "completes without a limit" status_is 0
  check "8 fell back when the device was full" stat_is oom_fallbacks 8
  check "device peak at the double's 128 MiB" stat_is device_peak 134217728 ;;
oversub_without_preload)
  run -- "$dl" procaddr oversub 64 3
  check "fails" status_is 1
  check "at the double's physical size" out_has "out of memory after 128 MiB" ;;
lms_rule)
  # caffe's -lms 4096 -lms_frac 0.5 under 64 MiB: 8 MiB chunks stay on
  # the device until demand passes 32 MiB.
  run_pre LMS_GPU_LIMIT=64MiB LMS_KB=4096 LMS_FRAC=0.5 LMS_PREFETCH_WINDOW=0 \
    LMS_STATS_LINE=1 -- "$dl" procaddr oversub 64 1
  check "completes" status_is 0
  check "device peak 32 MiB" stat_is device_peak 33554432
  check "4 managed" stat_is managed_allocs 4
  run_pre LMS_GPU_LIMIT=64MiB LMS_KB=16384 LMS_FRAC=0.5 LMS_PREFETCH_WINDOW=0 \
    LMS_STATS_LINE=1 -- "$dl" procaddr oversub 64 1
  check "chunks under -lms stay on the device" stat_is managed_allocs 0
  # The one placement rule (core/placement.h), on the decimal edge:
  # -lms_frac 0.29 of 800 MiB is exactly 232 MiB, 29 chunks of 8 MiB, and
  # the 29th brings demand exactly there, not past it (the product in
  # doubles lands under 232 MiB; the preload's own copy of the rule sent
  # the 29th to managed memory, where handle mode kept it on the device).
  run_pre CUDOUBLE_MEMORY=1G LMS_GPU_LIMIT=800MiB LMS_KB=0 LMS_FRAC=0.29 \
    LMS_PREFETCH_WINDOW=0 LMS_STATS_LINE=1 -- "$dl" procaddr oversub 40 8
  check "completes on the decimal edge" status_is 0
  check "device peak exactly 0.29 of 800 MiB" stat_is device_peak 243269632
  check "the 11 past it managed" stat_is managed_allocs 11 ;;
async)
  run_pre LMS_GPU_LIMIT=32MiB LMS_STATS_LINE=1 -- "$dl" procaddr async 32
  check "stream-ordered, pool, pitched, managed (per-thread forms)" status_is 0
  check "nothing held at exit" stat_is device_bytes 0
  check "no managed held at exit" stat_is managed_bytes 0
  check "the program's managed memory counted" stat_is app_managed_allocs 1
  run_pre LMS_GPU_LIMIT=32MiB -- "$dl" dlopen async 32
  check "the same through dlsym" status_is 0 ; show ;;
threads)
  run_pre LMS_GPU_LIMIT=16MiB LMS_STATS_LINE=1 -- "$dl" procaddr threads
  check "four threads" status_is 0
  check "nothing held at exit" stat_is device_bytes 0
  check "no managed held at exit" stat_is managed_bytes 0
  check "as many frees as allocations" [ "$(stat allocs)" = "$(stat frees)" ]
  check "some went managed" [ "$(stat managed_allocs)" -gt 0 ] ; show ;;
dlsym_passthrough)
  run_pre -- "$dl" dlopen dlsym
  check "glibc's answers for other names, RTLD_NEXT included" status_is 0
  show ;;
malloc_untouched)
  run_pre -- "$dl" procaddr malloc
  check "the program's malloc is its own" status_is 0
  check "not jemalloc" out_lacks "jemalloc" ; show ;;
deps)
  out=$(readelf -d "$pre") err=""
  check "does not depend on jemalloc" out_lacks "jemalloc"
  check "readelf works" out_has "NEEDED"
  out=$(ldd "$pre" 2>&1)
  check "ldd shows no jemalloc" out_lacks "jemalloc"
  out=$(nm -D --defined-only "$pre")
  check "exports dlsym" grep -qw dlsym <<<"$out"
  check "exports cuMemAlloc_v2" grep -qw cuMemAlloc_v2 <<<"$out"
  check "exports cuMemAllocAsync_ptsz" grep -qw cuMemAllocAsync_ptsz <<<"$out"
  check "exports no lms_ function" out_lacks " lms_"
  check "exports no malloc" out_lacks " malloc" ;;
bad_env)
  while IFS='|' read -r var value words; do
    run_pre "$var=$value" -- "$dl" procaddr resolve
    check "$var=$value: exit 2" status_is 2
    check "$var=$value: names the variable" err_has "$var"
    check "$var=$value: shows the value" err_has "'$value'"
    check "$var=$value: $words" err_has "$words"
    check "$var=$value: main never ran" out_lacks "resolve by"
  done <<'EOF'
LMS_GPU_LIMIT|-1|is negative; accepted: a size
LMS_GPU_LIMIT|2000TiB|more than 1 PiB
LMS_GPU_LIMIT|lots|is not a size
LMS_GPU_LIMIT|16QiB|unknown unit
LMS_FRAC|1.5|outside 0..1
LMS_FRAC|-0.25|outside 0..1
LMS_FRAC|half|is not a number
LMS_KB|abc|is not a number
LMS_LOG|chatty|unknown log level
LMS_STATS_LINE|maybe|is not a boolean
EOF
  ;;
run_env)
  export ASAN_OPTIONS=verify_asan_link_order=0
  run LD_PRELOAD="$PT_SHADOW_B" -- "$lms" --gpu-limit 64MiB run -lms 2048 \
    --lms_frac=0.25 --stats -- "$dl" x status 7
  check "returns the child's status" status_is 7
  check "sets LMS_GPU_LIMIT" out_has "LMS_GPU_LIMIT=64MiB"
  check "sets LMS_KB" out_has "LMS_KB=2048"
  check "sets LMS_FRAC" out_has "LMS_FRAC=0.25"
  check "sets LMS_STATS_LINE" out_has "LMS_STATS_LINE=1"
  check "prepends the preload, keeping LD_PRELOAD" \
    out_has "LD_PRELOAD=$pre:$PT_SHADOW_B"
  run LMS_LOG=info -- "$lms" run -- "$dl" x status 0
  check "passes LMS_* from its own environment" out_has "LMS_LOG=info"
  check "adds no LMS_STATS_LINE without --stats" out_line "LMS_STATS_LINE="
  check "LD_PRELOAD is the preload alone" out_line "LD_PRELOAD=$pre"
  run LMS_PRELOAD_LIB="$pre" -- "$lms" run -- "$dl" x status 0
  check "LMS_PRELOAD_LIB is used" out_has "LD_PRELOAD=$pre"
  check "no warning about LMS_PRELOAD_LIB" err_lacks "unknown environment"
  show ;;
run_stats)
  export ASAN_OPTIONS=verify_asan_link_order=0
  run -- "$lms" --gpu-limit 64MiB --prefetch-window 0 run --stats -- \
    "$dl" procaddr limit 64
  check "the program passes under lms run" status_is 0
  check "the summary is printed at exit" err_has "lms preload: allocs=3 device_allocs=2 managed_allocs=1"
  run -- "$lms" run --gpu-limit 64MiB --prefetch-window 0 -- \
    "$linked" direct limit 64
  check "a flag after run works too, linked program" status_is 0
  check "no summary without --stats" err_lacks "lms preload:"
  show ;;
run_status)
  export ASAN_OPTIONS=verify_asan_link_order=0
  run -- "$lms" run -- "$dl" x status 3
  check "exit status 3 comes back" status_is 3
  run -- "$lms" run -- "$dl" x status 0
  check "exit status 0 comes back" status_is 0 ;;
run_bad)
  export ASAN_OPTIONS=verify_asan_link_order=0
  run -- "$lms" run
  check "no command: exit 2" status_is 2
  check "no command: says what is expected" err_has "lms run: no command"
  run -- "$lms" run "$dl" x status 0
  check "no --: exit 2" status_is 2
  check "no --: says so" err_has "'--'"
  run -- "$lms" run --
  check "nothing after --: exit 2" status_is 2
  check "nothing after --: says so" err_has "lms run: no command"
  run -- "$lms" run -- /no/such/program arg
  check "missing program: exit 2" status_is 2
  check "missing program: names it" err_has "/no/such/program"
  run -- "$lms" run -- no-such-program-in-path
  check "missing program in PATH: exit 2" status_is 2
  check "missing program in PATH: names it" err_has "no-such-program-in-path"
  run LMS_PRELOAD_LIB=/no/such/liblms_preload.so -- "$lms" run -- "$dl" x status 0
  check "missing preload: exit 2" status_is 2
  check "missing preload: names LMS_PRELOAD_LIB" err_has "LMS_PRELOAD_LIB"
  run -- "$lms" run --gpu-limit -5 -- "$dl" x status 0
  check "bad flag: exit 2" status_is 2
  check "bad flag: named" err_has "--gpu-limit"
  run -- "$lms" run --stats=1 -- "$dl" x status 0
  check "a value to run's --stats: exit 2" status_is 2
  check "a value to run's --stats: named" err_has "lms run: --stats takes no value"
  run LMS_GPU_LIMIT=-5 -- "$lms" run -- "$dl" x status 0
  check "bad variable: exit 2" status_is 2
  check "bad variable: named" err_has "LMS_GPU_LIMIT" ;;
*)
  echo "unknown case '$case_name'"
  exit 2 ;;
esac

if [ "$fails" -gt 0 ]; then
  echo "$case_name: $fails check(s) failed"
  exit 1
fi
echo "$case_name: passed"
