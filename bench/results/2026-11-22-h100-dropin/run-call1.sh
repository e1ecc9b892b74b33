#!/bin/bash
# Session 2026-11-22b, call 1: fast path, VMM vs UM, LD_PRELOAD (nvcc static + CuPy), GoogLeNet.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64
export LMS_TORCH_LIB=$PWD/.gpu/lib/liblms_torch.so
export PYTHONUNBUFFERED=1
B=$PWD/.gpu/bin
R=$OUT/r; mkdir -p $R
{
date -u; nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv
python3 -c "import torch,torchvision,cupy;print('torch',torch.__version__,'torchvision',torchvision.__version__,'cupy',cupy.__version__)"
nproc; free -g | head -2
} > $R/info.txt 2>&1
{
echo "== fast path"; timeout 60 $B/lms_bench_torch_alloc 100000 1048576; echo "rc=$?"
echo "== vmm_um"; timeout 90 $B/vmm_um --size 1024; echo "rc=$?"
echo "== oversub static, no lms, 3x the real card"; timeout 60 $B/oversub --total 245760 --chunk 1024; echo "rc=$?"
echo "== oversub static, lms 4GiB, 12GiB"; timeout 90 $B/lms --gpu-limit 4GiB run --stats -- $B/oversub --total 12288 --chunk 256; echo "rc=$?"
echo "== cupy, no lms, 3x the real card"; timeout 90 python3 bench/gpu/oversub_cupy.py --total 245760 --chunk 1024; echo "rc=$?"
echo "== cupy, lms 4GiB, 12GiB"; timeout 100 $B/lms --gpu-limit 4GiB run --stats -- python3 bench/gpu/oversub_cupy.py --total 12288 --chunk 256; echo "rc=$?"
} > $OUT/log_a.txt 2>&1
T="python3 bench/torch/train.py --model googlenet --size 1200 --batch 10"
{
echo "== plain"; timeout 90 $T --mode plain --iters 3 --out $R/g_plain.json; echo "rc=$?"
LIM=$(python3 -c "import json;r=json.load(open('$R/g_plain.json'));print(round(r['torch_max_allocated']/2**30/2,2))")
echo "limit GiB: $LIM"
echo "== fraction"; timeout 90 $T --mode fraction --limit-gib $LIM --iters 1 --warmup 0 --out $R/g_frac.json; echo "rc=$?"
echo "== lms"; timeout 120 $T --mode lms --limit-gib $LIM --iters 2 --out $R/g_lms.json; echo "rc=$?"
echo "== lms hints"; timeout 120 $T --mode lms --limit-gib $LIM --iters 2 --hints --window 1000,40% --out $R/g_lms_h.json; echo "rc=$?"
python3 bench/torch/compare.py $R/g_plain.json $R/g_frac.json $R/g_lms.json $R/g_lms_h.json
} > $OUT/log_g.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
