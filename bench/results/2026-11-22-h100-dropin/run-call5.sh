#!/bin/bash
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64
B=$PWD/.gpu/bin
T=$OUT/traces
{ date -u
timeout 200 $B/lms --gpu-limit 16GiB bench net --batch 10 --configs lms:8192 --discard --iterations 3 --trace-dir $T 2>&1 | tail -12; echo "rc=$?"
ls -la $T
$B/lms report --stats $T/googlenet-b10-train-lms8192.stats.json --trace $T/googlenet-b10-train-lms8192.trace --out $OUT/rep 2>&1 | tail -5 || true
} > $OUT/log_stats.txt 2>&1
rm -f $T/*.trace; rm -rf $OUT/rep/*.png
