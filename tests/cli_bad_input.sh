#!/usr/bin/env bash
# cli_bad_input.sh LMS - the command line refuses bad input with exit status
# 2 and a message that names the option and what it accepts; good input
# passes.  Prints one line per case and "N passed, N failed" at the end.
set -u
lms=$1
pass=0
fail=0

# expect STATUS PATTERN [VAR=VALUE ...] -- ARGS...
expect() {
  local want=$1 pattern=$2
  shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local out rc
  out=$(env -u LMS_KB -u LMS_FRAC "${envs[@]}" "$lms" "$@" 2>&1)
  rc=$?
  if [ "$rc" -eq "$want" ] && grep -qF -- "$pattern" <<<"$out"; then
    pass=$((pass + 1))
    echo "ok   ${envs[*]} lms $*"
  else
    fail=$((fail + 1))
    echo "FAIL ${envs[*]} lms $* (exit $rc, wanted $want and '$pattern'):"
    echo "$out" | sed 's/^/     /'
  fi
}

expect 2 "-lms"             -- options -lms -5
expect 2 "whole number"     -- options -lms -5
expect 2 "-lms"             -- options -lms abc
expect 2 "no unit"          -- options -lms 12kb
expect 2 "-lms_frac"        -- options -lms_frac 1.5
expect 2 "2 MiB pages"      -- options --piece-size 3MiB
expect 2 "--piece-size"     -- options --piece-size -4MiB
expect 2 "or auto"          -- options --piece-size automatic
expect 2 "from 0 to 1"      -- options -lms_frac 1.5
expect 2 "-lms_frac"        -- options -lms_frac nan
expect 2 "--gpu-limit"      -- options --gpu-limit 0
expect 2 "--gpu-limit"      -- options --gpu-limit -1G
expect 2 "--gpu-limit"      -- options --gpu-limit 10XB
expect 2 "GiB"              -- options --gpu-limit 10XB
expect 2 "--host-limit"     -- options --host-limit 2PiB
expect 2 "--link"           -- options --link pcie9
expect 2 "--device"         -- options --device tpu
expect 2 "unknown option"   -- options --frobnicate
expect 2 "missing"          -- options --gpu-limit
expect 2 "LMS_GPU_LIMIT"    LMS_GPU_LIMIT=lots -- options
expect 2 "LMS_FRAC"         LMS_FRAC=2 -- options
expect 2 "unknown command"  -- frobnicate
expect 2 "no command"       --
expect 2 "--prefetch-window" -- options --prefetch-window 8,200%
expect 2 "percentage"       -- options --prefetch-window 8,200%
expect 2 "--prefetch-window" -- options --prefetch-window -3
expect 2 "--policy"         -- options --policy fast
expect 2 "--schedule"       -- options --schedule psychic
expect 2 "--sim-bytes"      -- options --sim-bytes maybe
# lms sim: its own flags and its input.
expect 2 "name a built-in"  -- sim
expect 2 "cannot open"      -- sim /nonexistent/run.trace
expect 2 "--batch"          -- sim googlenet --batch 0
expect 2 "--discard-dead takes no value" -- sim googlenet --discard-dead=1
expect 2 "--train takes no value" -- report googlenet --train=yes
expect 2 "--batch"          -- sim googlenet --batch ten
expect 2 "--links"          -- sim googlenet --links pcie3,pcie9
expect 2 "unknown policy"   -- sim googlenet --policies fast
expect 2 "--capacities"     -- sim googlenet --capacities 16GiB,0
expect 2 "--iterations"     -- sim googlenet --iterations 1
expect 2 "--device-tflops"  -- sim googlenet --device-tflops -3
expect 2 "unknown option"   -- sim googlenet --frobnicate
expect 2 "size"             -- sim unet3d --size 100
expect 2 "needs a value"    -- sim googlenet --batch
bad_trace=$(mktemp)
trap 'rm -f "$bad_trace"' EXIT
printf 'lms-trace 1\nchunk 0 -5 a persistent\n' >"$bad_trace"
expect 2 ":2: chunk size '-5' is negative" -- sim "$bad_trace"
printf 'lms-trace 1\nchunk 0 4096 a persistent\nstep 10 s r:1\n' >"$bad_trace"
expect 2 ":3:"              -- sim "$bad_trace"
expect 0 "googlenet-1200-b1-fwd" -- sim googlenet --batch 1 --forward --links pcie3 --policies schedule
expect 0 '"runs": ['        -- sim googlenet --batch 1 --forward --links nvlink2 --json -
expect 2 "range is empty"   -- tune --workload googlenet --lms-values ""
expect 2 "--frac-values"    -- tune --workload googlenet --frac-values 0,2
expect 2 "from 0 to 1"      -- tune --workload googlenet --frac-values 0,2
expect 2 "--lms-values"     -- tune --workload googlenet --lms-values 0,abc
expect 2 "--window-values"  -- tune --workload googlenet --window-values "8,200%"
expect 2 "empty or over-long" -- tune --workload googlenet --lms-values 0,,8
expect 2 "give --workload"  -- tune
expect 2 "nothing to run"   -- tune --
expect 2 "cannot open"      -- tune --workload /nonexistent/run.trace
expect 2 "needs a value"    -- tune --workload
expect 2 "--in-step or --link-group (tune times one GPU alone" -- tune --workload googlenet --gpus-per-link 2
expect 2 "--in-step or --link-group (tune times one GPU alone" -- tune --workload googlenet --link-group g
expect 2 "--links (give one link as --link" -- tune --workload googlenet --links pcie3,pcie4
expect 2 "--policies (give one as --policy" -- tune --workload googlenet --policies lru
expect 2 "--repeat: '0' is not accepted; accepted: a whole number of runs per setting from 1 to 100" -- tune --repeat 0 -- true
expect 2 "--repeat: '1e3' is not accepted" -- tune --repeat 1e3 -- true
expect 2 "--repeat is for a program" -- tune --workload googlenet --repeat 3
expect 2 "--json: cannot write '/nonexistent/t.json'" -- tune --json /nonexistent/t.json -- true
expect 2 "'--batch' is not accepted with a program" -- tune --batch 3 -- true
expect 2 "accepted: link"   -- bench
expect 2 "accepted: link"   -- bench frobnicate
expect 2 "--batch: '0' is not accepted; accepted: a whole number from 1 to 4096" -- bench net --batch 0
expect 2 "--batch: 'x' is not accepted" -- bench net --batch 1,x
expect 2 "accepted: plain or lms:KB" -- bench net --configs plain,frob
expect 2 "accepted: plain or lms:KB" -- bench net --configs lms:-5
expect 2 "--size: '100' is not accepted; accepted: a whole number from 224 to 4096" -- bench net --size 100
expect 2 "lms bench net: --discard takes no value" -- bench net --discard=1
expect 2 "--trace-dir '/proc/no/such': cannot create" -- bench net --trace-dir /proc/no/such
expect 2 "--iterations: '0' is not accepted" -- bench net --iterations 0
# No GPU is its own status, 3, after the arguments are checked (Note [Exit
# statuses]); where a GPU answers, these would run the benchmarks.
if ! nvidia-smi -L >/dev/null 2>&1; then
  expect 3 "CUDA device" -- bench link
  expect 3 "CUDA device" -- bench net --batch 1
  expect 3 "CUDA device" -- bench overlap
else
  echo "skip bench without a GPU: nvidia-smi lists one"
fi
expect 2 "needs a value"    -- bench net --trace-dir
expect 2 "unknown option '--frob'" -- bench net --frob
expect 2 "unexpected argument 'frob'" -- bench net frob
# One table per command (Note [A command's flags]): --flag=VALUE is
# --flag VALUE everywhere, and each command names itself.
expect 2 "--iterations: '0' is not accepted" -- bench net --iterations=0
expect 2 "lms tune: --repeat: '0' is not accepted" -- tune --repeat=0 -- true
expect 2 "lms tune: --train takes no value" -- tune --workload googlenet --train=1
expect 2 "lms tune: unexpected argument 'extra'; see 'lms tune --help'" -- tune --workload googlenet extra
expect 2 "lms report: --batch: '0' is not accepted" -- report googlenet --batch=0
expect 2 "lms sim: --json: the path is empty" -- sim googlenet --json=
expect 2 "lms options: --json takes no value" -- options --json=1
expect 0 '"gpu-limit": {"value": ' -- options --json

# `lms CMD --help` lists every flag of the command's table with what its
# value must be; each is documented in the usage above that list (tune's
# and report's "[sim flags]" under sim), and an INT flag one past either
# end of its stated range is refused.
help_values() { sed -n '/^values lms/,/^OPTIONS/p' | awk '$1 ~ /^--/ {print $1}'; }
int_ranges() {
  sed -n 's/^  \(--[a-z-]*\) *a whole number\( of [a-z ]*\)\{0,1\},\{0,1\} from \([0-9]*\)[^0-9]*\([0-9][0-9]*\)$/\1 \3 \4/p'
}
sim_flags=$("$lms" sim --help | help_values)
for c in sim tune report bench demo; do
  out=$("$lms" $c --help 2>&1)
  usage=$(sed '/^values lms/,$d' <<<"$out")
  n=0
  for f in $(help_values <<<"$out"); do
    n=$((n + 1))
    if [ "$c" != sim ] && grep -qx -- "$f" <<<"$sim_flags"; then continue; fi
    if ! grep -q -- "$f" <<<"$usage"; then
      fail=$((fail + 1))
      echo "FAIL lms $c --help lists $f but its usage does not"
    fi
  done
  if [ "$n" -eq 0 ]; then
    fail=$((fail + 1))
    echo "FAIL lms $c --help lists no values"
  fi
  case $c in
    sim) pre="sim googlenet"; post="" ;;
    tune) pre="tune"; post="-- true" ;;
    report) pre="report googlenet"; post="" ;;
    bench) pre="bench net"; post="" ;;
    *) continue ;;
  esac
  while read -r f lo hi; do
    [ -n "$f" ] || continue
    for v in $((lo - 1)) $((hi + 1)); do
      # shellcheck disable=SC2086
      expect 2 "$f: '$v' is not accepted" -- $pre "$f" "$v" $post
    done
  done < <(int_ranges <<<"$out")
done
expect 2 "lms tune: --workload: the path is empty" -- tune --workload ""
expect 2 "unexpected argument 'x'" -- bench overlap x
expect 2 "25/26/40"         -- --link 25/26/x options
# An unknown LMS_* variable is a warning, not an error.
expect 0 "LMS_FROBNICATE"   LMS_FROBNICATE=1 -- options
# Good input, through flags and the environment, with flags winning.
expect 0 "8192"             -- options -lms 8192 -lms_frac 0.4 --gpu-limit 16GiB
expect 0 "17179869184"      -- options --gpu-limit=16GiB
expect 0 "0.4"              LMS_FRAC=0.9 -- options --lms-frac 0.4
expect 0 "--gpu-limit"      -- help

# lms sim --gpus-per-link: GPUs sharing one host link, 1 to 8.
expect 2 "--gpus-per-link"  -- sim googlenet --gpus-per-link 0
expect 2 "1 (alone) to 8"   -- sim googlenet --gpus-per-link 0
expect 2 "1 (alone) to 8"   -- sim googlenet --gpus-per-link 9
expect 2 "--gpus-per-link"  -- sim googlenet --gpus-per-link two
expect 2 "--gpus-per-link"  -- sim googlenet --gpus-per-link 2.5
expect 2 "--gpus-per-link"  -- sim googlenet --gpus-per-link=-1
expect 2 "--gpus-per-link"  -- sim googlenet --gpus-per-link ""
expect 2 "needs a value"    -- sim googlenet --gpus-per-link
expect 0 "2 GPUs per host link" -- sim unet3d --size 48 --capacities 400MiB --links pcie3 --policies schedule --gpus-per-link 2
# lms sim --calibrate-busy: a share above 0 and below 100 %, one that can
# be reached; tune refuses it.
expect 2 "--calibrate-busy" -- sim googlenet --calibrate-busy 0
expect 2 "above 0 and below 100" -- sim googlenet --calibrate-busy 100
expect 2 "above 0 and below 100" -- sim googlenet --calibrate-busy -5
expect 2 "--calibrate-busy" -- sim googlenet --calibrate-busy lots
expect 2 "--calibrate-busy" -- sim googlenet --calibrate-busy nan
expect 2 "needs a value"    -- sim googlenet --calibrate-busy
expect 2 "cannot be reached" -- sim unet3d --size 48 --capacities 8GiB --links pcie3 --policies schedule --calibrate-busy 5
expect 2 "--calibrate-busy (calibrate with lms sim" -- tune --workload googlenet --calibrate-busy 30
expect 0 "(asked 40.00 %"   -- sim unet3d --size 48 --capacities 400MiB --links pcie3 --policies ondemand --calibrate-busy 40
# ... and lands within the calibration's tolerance (0.05 points) of it.
busy=$("$lms" sim unet3d --size 48 --capacities 400MiB --links pcie3 \
  --policies ondemand --calibrate-busy 40 2>&1 |
  sed -n 's/.* is busy \([0-9.]*\) % (asked.*/\1/p')
if awk -v b="$busy" 'BEGIN { exit !(b != "" && b >= 39.95 && b <= 40.05) }'; then
  pass=$((pass + 1)); echo "ok   calibrated busy $busy % is within 0.05 of 40 %"
else
  fail=$((fail + 1)); echo "FAIL calibrated busy '$busy' % is not within 0.05 of 40 %"
fi

# lms report: its inputs (missing or corrupt stats and traces, links).
rep_dir=$(mktemp -d)
trap 'rm -f "$bad_trace"; rm -rf "$rep_dir"' EXIT
expect 2 "name a built-in"  -- report
expect 2 "cannot open"      -- report /nonexistent/run.trace
expect 2 "cannot open the stats file" -- report --stats /nonexistent/run.json --trace "$bad_trace"
printf '{"version": 2,\n "elapsed_ns": 12' >"$rep_dir/cut.json"
expect 2 "cut.json: byte 32: expected ',' or '}'; got the end of the file" -- report --stats "$rep_dir/cut.json" --trace "$bad_trace"
printf 'not json\n' >"$rep_dir/text.json"
expect 2 "byte 0: expected '{'"  -- report --stats "$rep_dir/text.json" --trace "$bad_trace"
printf '{"version": 3, "elapsed_ns": 5}\n' >"$rep_dir/v3.json"
expect 2 "stats version 3; this lms reads version 2" -- report --stats "$rep_dir/v3.json" --trace "$bad_trace"
printf '{"version": 2, "device_limit": 1, "elapsed_ns": 5}\n' >"$rep_dir/few.json"
expect 2 "lacks"            -- report --stats "$rep_dir/few.json" --trace "$bad_trace"
expect 2 "need the trace the run wrote" -- report --stats "$rep_dir/few.json" googlenet
expect 2 "--links: --link: 'pcie9'" -- report googlenet --links pcie3,pcie9
expect 2 "--link"           -- report googlenet --link pcie9
expect 2 "--native: --link: 'pcie9'" -- report --compare-links "$bad_trace" --native pcie9=x.json
expect 2 "should be LINK=STATS" -- report --compare-links "$bad_trace" --native nvlink2
expect 2 "--emulated: /nonexistent/s.json: cannot open" -- report --compare-links "$bad_trace" --emulated pcie3=/nonexistent/s.json
expect 2 "belong to --compare-links" -- report "$bad_trace" --native nvlink2="$rep_dir/v3.json"
expect 2 "FIRST:COUNT"      -- report googlenet --steps 5
expect 2 "--steps COUNT"    -- report googlenet --steps 5:0
expect 2 "past the last step" -- report googlenet --forward --batch 1 --steps 100000:4 --links pcie3 --out "$rep_dir/o"
# Refused before any work: nothing written, not even the directory.
if [ -e "$rep_dir/o" ]; then
  fail=$((fail + 1))
  echo "FAIL a refused report left $rep_dir/o behind"
fi
expect 2 "unknown option"   -- report googlenet --frobnicate
expect 2 "needs a value"    -- report googlenet --out
expect 2 "is not a directory" -- report googlenet --out "$bad_trace"
expect 2 "--out needs a value" -- demo --out
expect 0 "wrote $rep_dir/ok/report.md" LMS_GNUPLOT=/nonexistent -- report googlenet --forward --batch 1 --links pcie3 --out "$rep_dir/ok"

expect 2 "'.' is not a number" -- options -lms_frac .
expect 2 "looks like an option" -- options --log-file --stats
expect 2 "looks like an option" -- options --stats -x.json

# Under one byte is refused however it rounds; the 1 PiB limit can be
# written in the unit it is stated in.
expect 2 "less than 1 byte" -- options --gpu-limit 0.5
expect 2 "less than 1 byte" -- options --gpu-limit 0.4
expect 0 "1 PiB"            -- options --gpu-limit 1PiB
expect 2 "more than 1 PiB"  -- options --gpu-limit 1.5PiB

# LMS_PRELOAD_LIB must name a shared library: the loader would only warn
# and run the program without lms (a text file; an executable).
expect 2 "is not a shared library" LMS_PRELOAD_LIB="$bad_trace" -- run -- /bin/true
expect 2 "is not a shared library" LMS_PRELOAD_LIB=/bin/true -- run -- /bin/true
# An ELF shared library the loader cannot load (a library it needs is
# gone) is refused too, with the loader's reason.
libs=$(mktemp -d)
printf 'int lms_dep(void) { return 1; }\n' >"$libs/dep.c"
printf 'int lms_dep(void);\nint lms_use(void) { return lms_dep(); }\n' >"$libs/use.c"
if ${CC:-cc} -shared -fPIC "$libs/dep.c" -o "$libs/liblmsdep.so" 2>/dev/null &&
   ${CC:-cc} -shared -fPIC "$libs/use.c" -L"$libs" -llmsdep \
     -o "$libs/libuse.so" 2>/dev/null; then
  rm "$libs/liblmsdep.so"
  expect 2 "liblmsdep.so: cannot open shared object file" \
    LMS_PRELOAD_LIB="$libs/libuse.so" -- run -- /bin/true
else
  echo "skip a preload library with a missing dependency: no C compiler (${CC:-cc})"
fi
rm -rf "$libs"

# A link so slow that copy times would overflow the clock is refused.
expect 2 "from 0.001 to 100000" -- sim googlenet --batch 1 --forward --policies ondemand --link 0.000000001
expect 2 "from 0.001 to 100000" -- sim googlenet --batch 1 --forward --policies ondemand --link 1e-300
expect 2 "from 0.001 to 100000" -- options --link 25/1e-300

# A path longer than the buffers hold is refused, never cut short: cut,
# it would name another file (one made here, so reading it would work).
long_dir="$rep_dir/$(printf 'd%.0s' $(seq 1 200))"
mkdir -p "$long_dir"
cp "$bad_trace" "$long_dir/a-trace-whose-path-is-too-long.trace"
long="$long_dir/a-trace-whose-path-is-too-long.trace"
cut=$(printf '%s' "$long" | head -c 255)
cp "$bad_trace" "$cut" 2>/dev/null || true
expect 2 "the workload: the path is" -- sim "$long"
expect 2 "at most 255 are accepted" -- sim googlenet --forward --batch 1 --links pcie3 --json "$long.json"
expect 2 "--stats: the path is" -- report --stats "$long" --trace "$bad_trace"
expect 2 "--trace: the path is" -- report --stats "$rep_dir/few.json" --trace "$long"
expect 2 "the input: the path is" -- report "$long"
expect 2 "--native: the path is" -- report --compare-links "$bad_trace" --native nvlink2="$long"
# The file the cut --json path would name is the cut trace: unwritten.
if [ -e "$cut" ] && ! cmp -s "$cut" "$bad_trace"; then
  fail=$((fail + 1)); echo "FAIL the file a --json path cut short names was written"
fi

# A stats file's numbers are checked against their field's range before
# they are converted: a negative time once made a report of -100 %, 1e30
# and 1e300 undefined conversions (UBSan) and wrong messages.
printf '{"version": 2, "device_limit": 1, "elapsed_ns": -5}\n' >"$rep_dir/neg.json"
expect 2 '"elapsed_ns" is -5; accepted: a whole number from 0' -- report --stats "$rep_dir/neg.json" --trace "$bad_trace"
printf '{"version": 2, "device_limit": 1, "elapsed_ns": 1e30}\n' >"$rep_dir/huge.json"
expect 2 '"elapsed_ns" is 1e30; accepted' -- report --stats "$rep_dir/huge.json" --trace "$bad_trace"
printf '{"version": 2, "elapsed_ns": 1e999}\n' >"$rep_dir/inf.json"
expect 2 '"elapsed_ns" is 1e999; accepted' -- report --stats "$rep_dir/inf.json" --trace "$bad_trace"
printf '{"version": 1e300, "elapsed_ns": 5}\n' >"$rep_dir/v.json"
expect 2 '"version" is 1e300; accepted: a whole number (this lms reads 2)' -- report --stats "$rep_dir/v.json" --trace "$bad_trace"
printf '{"version": 2, "bytes_h2d": {"current": 0, "peak": 0, "total": -1}}\n' >"$rep_dir/ctr.json"
expect 2 '"bytes_h2d.total" is -1; accepted' -- report --stats "$rep_dir/ctr.json" --trace "$bad_trace"
printf '{"version": 2, "fragmentation": 2}\n' >"$rep_dir/frag.json"
expect 2 '"fragmentation" is 2; accepted: a number from 0 to 1' -- report --stats "$rep_dir/frag.json" --trace "$bad_trace"

# Exit status 2 for bad input, found before any work: an unknown fault
# name (was 1, after loading the workload), a directory the demo's report
# cannot be written in (was found after the whole demo), a program tune
# or run cannot start (tune tried every setting, then advised a larger
# --gpu-limit), a capacity below the largest step (was skipped, status 1).
expect 2 "accepted operations: mem_info" -- sim googlenet --fail bogus:1
expect 2 "LMS_FAIL: fault spec: unknown operation 'bogus'" LMS_FAIL=bogus:1 -- options
expect 2 "--out: cannot create the directory '/proc/nope'" -- demo --out /proc/nope
expect 2 "--out: cannot write in the directory '/proc'" -- demo --out /proc
expect 2 "lms tune: cannot run '/nonexistent'" -- tune -- /nonexistent
expect 2 "'no-such-program-lms' not found in PATH" -- tune -- no-such-program-lms
expect 2 "'/tmp': not a regular file" -- tune -- /tmp
expect 2 "the program's name is empty" -- run -- ''
expect 2 "the program's name is empty" -- tune -- ''
expect 2 "'/tmp': not a regular file" -- run -- /tmp
expect 2 "--capacities: 1073741824 bytes cannot hold the largest step" -- sim googlenet --capacities 16GiB,1GiB

# A value too long for a message is quoted shortened, so the message
# still ends with what is accepted (cut at 512 bytes, it ended inside the
# value); a list too long for its buffer is refused, not cut short.
huge=$(printf 'x%.0s' $(seq 1 2000))
expect 2 "...'; accepted: ondemand, lru or schedule" -- options --policy "$huge"
expect 2 "(the last: both ways at once)" -- options --link "$huge"
expect 2 "accepted units: B, K or KiB" -- options --gpu-limit "1$huge"
expect 2 "e.g. dev_alloc:3" -- options --fail "$huge"
expect 2 "accepted levels: none" -- options --log "$huge"
expect 2 "(the last: both ways at once)" -- report googlenet --links "pcie3,${huge:0:300}"
expect 2 "the list is 2006 characters long; at most 1023" -- report googlenet --links "pcie3,$huge"
expect 2 "the list is 2002 characters long; at most 255" -- tune --workload googlenet --lms-values "1,$huge"
expect 2 "the list is 2000 characters long; at most 1023" -- sim googlenet --links "$huge"

# 0 if PATTERN shows in FILE while process PID still runs, looking every
# 50 ms up to TRIES times; the process is stopped either way.
seen_while_running() {
  local found=1
  for _ in $(seq 1 "$4"); do
    if grep -q "$1" "$2"; then
      kill -0 "$3" 2>/dev/null && found=0
      break
    fi
    kill -0 "$3" 2>/dev/null || break
    sleep 0.05
  done
  kill -TERM "$3" 2>/dev/null
  wait "$3" 2>/dev/null
  return $found
}

# lms sim's rows reach a pipe as each run ends, not at exit (a run killed
# after 30 minutes had printed nothing): the first row is read while the
# later runs still go on, and then the command is stopped.  Its whole
# output is under the 4 KiB a full buffer holds.
rows=$(mktemp)
links16=$(printf 'pcie3,%.0s' $(seq 1 15))pcie3
"$lms" sim googlenet --iterations 64 --links "$links16" --policies schedule \
  --quiet 2>/dev/null >"$rows" &
sim_pid=$!
early=0
seen_while_running '^pcie3 ' "$rows" "$sim_pid" 1200 && early=1
if [ "$early" -eq 1 ]; then
  pass=$((pass + 1)); echo "ok   lms sim's first row reached the pipe while it ran"
else
  fail=$((fail + 1)); echo "FAIL lms sim's first row reached the pipe only at its exit:"
  sed 's/^/     /' "$rows" | head -5
fi
rm -f "$rows"
expect 2 "--quiet takes no value" -- sim googlenet --quiet=1

# One long run says how far it is, on stderr, every 10 s: a trace of
# 100,000 steps over 64 iterations runs well past that, and is
# stopped once the line has come.
big=$(mktemp)
awk 'BEGIN { n = 50000; print "lms-trace 1"; print "workload long";
  for (i = 0; i < n; i++) { printf "chunk %d 65536 w%d persistent\n", 2*i, i;
    printf "chunk %d 65536 a%d transient\n", 2*i+1, i }
  print "chunk " 2*n " 65536 in persistent"; prev = 2*n;
  for (i = 0; i < n; i++) { printf "step 1000 f%d r:%d r:%d w:%d\n", i, prev, 2*i, 2*i+1; prev = 2*i+1 }
  for (i = n - 1; i >= 0; i--) { back = i ? 2*i-1 : 2*n;
    printf "step 1000 b%d r:%d r:%d rw:%d\n", i, 2*i+1, back, 2*i }
}' >"$big"
said=$(mktemp)
"$lms" sim "$big" --iterations 64 --links pcie3 --policies schedule \
  >/dev/null 2>"$said" &
sim_pid=$!
seen=0
seen_while_running 'iteration [0-9]*, step [0-9]* of 100000' "$said" \
  "$sim_pid" 2400 && seen=1
if [ "$seen" -eq 1 ]; then
  pass=$((pass + 1)); echo "ok   a long lms sim run says its iteration and step"
else
  fail=$((fail + 1)); echo "FAIL a long lms sim run said nothing of its progress:"
  sed 's/^/     /' "$said" | head -5
fi
rm -f "$big" "$said"

# A trace whose totals would overflow a sum is refused at the line that
# crosses one, naming the total and its limit (Note [Workload totals]):
# chunks past 1 PiB (65,536 of the largest once added up to 0 and named a
# --gpu-limit nobody gave), compute past 10^7 s (1.9 million of the
# longest steps once printed a wrapped time, status 0), steps naming past
# 4 PiB.  At the limit a trace still runs.
tot="$rep_dir/totals.trace"
{ echo 'lms-trace 1'; for i in 0 1 2 3 4; do echo "chunk $i 281474976710656 big persistent"; done
  echo 'step 1 s r:0'; } >"$tot"
expect 2 ":6: chunk size 281474976710656 brings the trace's chunks to more than 1125899906842624 bytes (1 PiB) in all" -- sim "$tot"
expect 2 "more than 1125899906842624 bytes (1 PiB)" -- report "$tot"
{ echo 'lms-trace 1'; echo 'chunk 0 64 a persistent'
  for i in $(seq 1 1000); do echo 'step 10000000000000 s r:0'; done; } >"$tot"
expect 0 "compute 10000000000.0 ms per iteration" -- sim "$tot" --iterations 2 --policies ondemand --links pcie3
echo 'step 1 one-more' >>"$tot"
expect 2 ":1003: step time 1 brings the trace's compute to more than 10000000000000000 ns (10^7 s) in all" -- sim "$tot"
expect 2 "(10^7 s)" -- tune --workload "$tot"
{ echo 'lms-trace 1'; echo 'chunk 0 281474976710656 big persistent'
  for i in $(seq 1 17); do echo 'step 1 s rw:0'; done; } >"$tot"
expect 2 ":19: reference 'rw:0' brings the bytes the steps name to more than 4503599627370496 (4 PiB) in all" -- sim "$tot"

# The command is the first word that names one, past the values of the
# options before it: a report written into a directory called "sim" is a
# report ("--out sim" once made it a sim run, "unknown option '--out'").
cmd_dir=$(mktemp -d)
{ echo 'lms-trace 1'; echo 'chunk 0 1048576 a persistent'
  echo 'chunk 1 1048576 b persistent'
  echo 'step 1000 s0 r:0'; echo 'step 1000 s1 rw:1'; } >"$cmd_dir/two.trace"
cd "$cmd_dir" || exit 1
expect 0 "wrote sim/report.md" -- --gpu-limit 2MiB report two.trace --links pcie3 --out sim
expect 0 "wrote sim/report.md" -- report two.trace --out sim --gpu-limit 2MiB --links pcie3
expect 0 "wrote report/report.md" -- report two.trace --out report --gpu-limit 2MiB --links pcie3
cd - >/dev/null || exit 1
rm -rf "$cmd_dir"
# lms --version is lms version; lms COMMAND --help is that command's help,
# not every command's.
expect 0 "$("$lms" version)" -- --version
expect 0 "usage: lms [OPTIONS] sim" -- sim --help
expect 0 "--gpu-limit SIZE" -- sim --help
expect 0 "usage: lms [OPTIONS] report" -- --gpu-limit 1GiB report --help
expect 0 "usage: lms [OPTIONS] COMMAND" -- --help
words='demo|sim|bench|tune|report|run|options|help|version'
for c in demo sim bench tune report run options; do
  others=$("$lms" "$c" --help | grep -E "^  ($words)( |$)" | grep -vc "^  $c\b" || true)
  if [ "$others" -eq 0 ] && "$lms" "$c" --help | grep -q "^  $c\b"; then
    pass=$((pass + 1)); echo "ok   lms $c --help is $c's alone"
  else
    fail=$((fail + 1)); echo "FAIL lms $c --help: $others lines of other commands' help"
  fi
done

# lms options --json: one JSON object, every option, where each came from.
if command -v python3 >/dev/null; then
  if LMS_FRAC=0.5 "$lms" options --json --gpu-limit 2GiB | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["gpu-limit"]["source"] == "set" and "2147483648" in d["gpu-limit"]["value"], d["gpu-limit"]
assert d["lms_frac"] == {"value": "0.5", "source": "env", "env": "LMS_FRAC"}, d["lms_frac"]
assert d["lms"]["source"] == "default" and len(d) >= 15, len(d)'; then
    pass=$((pass + 1)); echo "ok   lms options --json"
  else
    fail=$((fail + 1)); echo "FAIL lms options --json"
  fi
fi
expect 2 "unknown option '--json'" -- version --json

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
