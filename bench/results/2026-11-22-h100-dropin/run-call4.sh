#!/bin/bash
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64
B=$PWD/.gpu/bin
R=$OUT/r; mkdir -p $R
{
echo "== bench net discard"; date -u
timeout 300 $B/lms --gpu-limit 16GiB bench net --batch 1,10 --configs plain,lms:8192 --discard --iterations 3 --trace-dir $R/traces 2>&1 | tail -45; echo "rc=$?"
ls -la $R/traces | head -12
} > $OUT/log_net.txt 2>&1
{
echo "== cuda_faults"; timeout 150 $B/gpu_test_cuda --filter 'cuda_faults/every*' 2>&1 | tail -8
} > $OUT/log_f.txt 2>&1
cd $OUT && rm -f r/traces/*.trace; tar czf r.tgz r && rm -rf r
