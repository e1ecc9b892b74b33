#!/usr/bin/env python3
"""The runs whose lower bound differs between two sweeps (sweep.py --json),
and whether any run's iteration did: python3 bounds_moved.py A.json B.json"""
import json
import lzma
import sys


def rows(path):
    op = lzma.open if path.endswith(".xz") else open
    with op(path, "rt") as f:
        return json.load(f)["rows"]


def key(r):
    return (r["workload"], r["over"], r["link"])


a = {key(r): r for r in rows(sys.argv[1])}
moved = []
for r in rows(sys.argv[2]):
    o = a[key(r)]
    for pol in ("schedule", "lru"):
        if o[pol]["iteration_ns"] != r[pol]["iteration_ns"]:
            print("iteration differs:", key(r), pol)
    lo, ln = o["schedule"]["lower_bound_ns"], r["schedule"]["lower_bound_ns"]
    if lo != ln:
        moved.append((ln / lo, key(r), lo, ln, r["schedule"]["iteration_ns"]))
print(f"{len(moved)} runs' bounds differ")
for f, k, lo, ln, it in sorted(moved, reverse=True):
    print(f"{k[0]:14s} {k[1]:4.0f}x {k[2]:8s} {lo / 1e6:9.2f} -> {ln / 1e6:9.2f} ms "
          f"(x{f:.4f}); schedule {it / lo:.3f} -> {it / ln:.3f} of it")
