#!/usr/bin/env python3
"""The runs whose lower bound differs between two sweeps (sweep.py --json,
plain or .xz), and whether any run's iteration did; runs of traces the
first sweep lacks are left out:  python3 bounds_moved.py A.json B.json"""
import json
import lzma
import statistics
import sys


def runs(path):
    """The sweep's runs by (workload, oversubscription, link)."""
    op = lzma.open if path.endswith(".xz") else open
    with op(path, "rt") as f:
        return {(r["workload"], r["over"], r["link"]): r
                for r in json.load(f)["rows"]}


def ratio(r):
    s = r["schedule"]
    return s["iteration_ns"] / s["lower_bound_ns"]


a = runs(sys.argv[1])
moved, before, after = [], [], []
for k, r in runs(sys.argv[2]).items():
    o = a.get(k)
    if o is None:
        continue
    for pol in ("schedule", "lru"):
        if o[pol]["iteration_ns"] != r[pol]["iteration_ns"]:
            print("iteration differs:", k, pol)
    before.append(ratio(o))
    after.append(ratio(r))
    lo, ln = o["schedule"]["lower_bound_ns"], r["schedule"]["lower_bound_ns"]
    if lo != ln:
        moved.append((ln / lo, k, lo, ln, r["schedule"]["iteration_ns"]))
print(f"{len(after)} runs in both; {len(moved)} runs' bounds differ")
for b, name in ((before, "before"), (after, "after")):
    print(f"{name}: median {statistics.median(b):.3f}, worst {max(b):.3f}, "
          f"{sum(x > 1.25 for x in b)} over 1.25x")
for f, k, lo, ln, it in sorted(moved, reverse=True):
    print(f"{k[0]:<17} {k[1]:>3.0f}x {k[2]:<8} bound {lo / 1e6:10.2f} -> "
          f"{ln / 1e6:10.2f} ms (+{(f - 1) * 100:5.2f} %)  schedule "
          f"{it / lo:.3f} -> {it / ln:.3f} of it")
