"""Compares runs of bench/torch/train.py with a reference run.

  python3 bench/torch/compare.py REF.json RUN.json [RUN.json ...]

For each run: whether it completed, its median iteration time against the
reference's, and the largest relative difference of the loss and of any
parameter's gradient norm.  Exits 1 when a completed run differs by more
than --rtol."""

import argparse
import json
import sys


def load(path):
    with open(path) as f:
        return json.loads(f.readline())


def rel(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ref")
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--rtol", type=float, default=1e-3)
    a = ap.parse_args()
    ref = load(a.ref)
    bad = 0
    print(f"reference {a.ref}: loss {ref['loss']:.6f}, grad norm "
          f"{ref['grad_norm']:.6f}, {ref['median_s'] * 1e3:.1f} ms/iter")
    for path in a.runs:
        r = load(path)
        name = f"{r['mode']} {r['limit_bytes'] / 2**30:.2f} GiB" + \
            (" hints" if r.get("hints") else "")
        if not r.get("ok"):
            print(f"{name}: did not complete ({r.get('error')})")
            continue
        dl = rel(ref["loss"], r["loss"])
        dg = max(rel(x, y) for x, y in zip(ref["grad_norms"], r["grad_norms"]))
        ok = dl <= a.rtol and dg <= a.rtol and \
            len(ref["grad_norms"]) == len(r["grad_norms"])
        bad += not ok
        print(f"{name}: {r['median_s'] * 1e3:.1f} ms/iter "
              f"({r['median_s'] / ref['median_s']:.2f}x), loss rel diff "
              f"{dl:.2e}, max grad-norm rel diff {dg:.2e}: "
              f"{'equal within' if ok else 'DIFFERS beyond'} {a.rtol:g}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
