#!/bin/bash
# Session 2026-11-22b, call 3: GoogLeNet + ResNet-50 with the partial-release policy; issue-4 checks.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64
export LMS_TORCH_LIB=$PWD/.gpu/lib/liblms_torch.so
export PYTHONUNBUFFERED=1
B=$PWD/.gpu/bin
R=$OUT/r; mkdir -p $R
T="python3 bench/torch/train.py --model googlenet --size 1200 --batch 10"
{
echo "== plain"; timeout 60 $T --mode plain --iters 3 --out $R/g_plain.json | cut -c1-400; echo "rc=$?"
echo "== lms 8.14"; timeout 100 $T --mode lms --limit-gib 8.14 --iters 3 --out $R/g_lms.json; echo "rc=$?"
echo "== lms 8.14 hints"; timeout 100 $T --mode lms --limit-gib 8.14 --iters 3 --hints --window 1000,40% --out $R/g_lms_h.json; echo "rc=$?"
python3 bench/torch/compare.py $R/g_plain.json $R/g_lms.json $R/g_lms_h.json
T="python3 bench/torch/train.py --model resnet50 --size 224 --batch 64"
echo "== r plain"; timeout 60 $T --mode plain --iters 3 --out $R/r_plain.json | cut -c1-400
echo "== r lms 2x"; timeout 60 $T --mode lms --limit-gib 2.72 --iters 3 --out $R/r_lms2.json; echo "rc=$?"
echo "== r lms 4x"; timeout 60 $T --mode lms --limit-gib 1.36 --iters 3 --out $R/r_lms4.json; echo "rc=$?"
python3 bench/torch/compare.py $R/r_plain.json $R/r_lms2.json $R/r_lms4.json
} > $OUT/log_t.txt 2>&1
{
echo "== cuda_faults"; timeout 120 $B/gpu_test_cuda --filter 'cuda_faults/*' --verbose 2>&1 | tail -8
echo "== cuda_faults memcheck"; timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $B/gpu_test_cuda --filter 'cuda_faults/*' --jobs 1 2>&1 | tail -8; echo "rc=$?"
echo "== bench net discard"; timeout 200 $B/lms --gpu-limit 16GiB bench net --batch 1,10 --configs plain,lms:8192 --discard --iterations 3 --trace-dir $R/traces 2>&1 | tail -40; echo "rc=$?"
ls -la $R/traces | head
} > $OUT/log_4.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
