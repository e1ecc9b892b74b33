#!/bin/bash
# Session 2026-11-22b, call 2: GoogLeNet under lms, ResNet-50 at 2x and 4x, overhead with nothing to swap.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64
export LMS_TORCH_LIB=$PWD/.gpu/lib/liblms_torch.so
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
lim() { python3 -c "import json;r=json.load(open('$1'));print(round(r['torch_max_allocated']/2**30/$2,2))"; }
T="python3 bench/torch/train.py --model googlenet --size 1200 --batch 10"
{
echo "== plain"; timeout 60 $T --mode plain --iters 3 --out $R/g_plain.json; echo "rc=$?"
LIM=$(lim $R/g_plain.json 2); echo "limit GiB: $LIM"
echo "== fraction"; timeout 60 $T --mode fraction --limit-gib $LIM --iters 1 --warmup 0 --out $R/g_frac.json; echo "rc=$?"
echo "== lms"; timeout 120 $T --mode lms --limit-gib $LIM --iters 2 --out $R/g_lms.json; echo "rc=$?"
echo "== lms hints"; timeout 120 $T --mode lms --limit-gib $LIM --iters 2 --hints --window 1000,40% --out $R/g_lms_h.json; echo "rc=$?"
python3 bench/torch/compare.py $R/g_plain.json $R/g_frac.json $R/g_lms.json $R/g_lms_h.json
} > $OUT/log_g.txt 2>&1
T="python3 bench/torch/train.py --model resnet50 --size 224 --batch 64"
{
echo "== plain"; timeout 60 $T --mode plain --iters 3 --out $R/r_plain.json; echo "rc=$?"
L2=$(lim $R/r_plain.json 2); L4=$(lim $R/r_plain.json 4); echo "limits GiB: $L2 $L4"
echo "== fraction 2x"; timeout 60 $T --mode fraction --limit-gib $L2 --iters 1 --warmup 0 --out $R/r_frac2.json; echo "rc=$?"
echo "== lms 2x"; timeout 90 $T --mode lms --limit-gib $L2 --iters 2 --out $R/r_lms2.json; echo "rc=$?"
echo "== lms 4x"; timeout 90 $T --mode lms --limit-gib $L4 --iters 2 --out $R/r_lms4.json; echo "rc=$?"
echo "== lms 4x hints"; timeout 90 $T --mode lms --limit-gib $L4 --iters 2 --hints --window 1000,40% --out $R/r_lms4h.json; echo "rc=$?"
python3 bench/torch/compare.py $R/r_plain.json $R/r_frac2.json $R/r_lms2.json $R/r_lms4.json $R/r_lms4h.json
echo "== overhead: plain vs lms without a limit, resnet50 b64 SGD step, 40 iters after 10"
for k in 1 2; do
timeout 60 $T --mode plain --optimizer --warmup 10 --iters 40 --out $R/o_plain$k.json | cut -c1-300
timeout 60 $T --mode lms --limit-gib 70 --optimizer --warmup 10 --iters 40 --out $R/o_lms$k.json | cut -c1-300
done
python3 -c "
import json
for k in (1,2):
  p=json.load(open('$R/o_plain%d.json'%k)); l=json.load(open('$R/o_lms%d.json'%k))
  print('round',k,'plain %.2f ms lms %.2f ms overhead %+.2f%%'%(p['median_s']*1e3,l['median_s']*1e3,(l['median_s']/p['median_s']-1)*100), 'loss equal', abs(p['loss']-l['loss'])<=1e-3*abs(p['loss']))
"
} > $OUT/log_r.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
