#!/usr/bin/env python3
"""How many bytes a period's plan brings in, kept whole, three ways.

Note [Whole chunks kept] in src/graph/ahead.c.  For one trace and one
capacity (bytes), under the plan's rules: each step holds its own
chunks; between two uses of a chunk (a gap) it is kept whole, holding its
bytes at every step inside the gap, or it leaves, and if the second use
reads it comes back with room at the step before that use; the plan
holds at most the capacity less 1/64.  Prints the bytes brought in an
iteration by:

  end      the gaps decided in order of their end (the plan)
  density  the gaps decided by size over the steps inside, most first
           (the plan by density)
  best     every subset of the gaps of at least --large bytes kept, the
           smaller ones then decided by end: the best of those subsets

  exact    (--exact) the fewest bytes with every gap kept whole or not,
           by an integer programme over all of them (scipy's milp, HiGHS:
           Debian's python3-scipy), and beside it the same programme with
           gaps kept in part, as the lower bound of lms sim keeps them.
           Every copy in has its room at the step before its use: none is
           late, where `end`, `density` and `best` let a copy in take
           room a step does not have (the plan counts those as late), so
           `exact` can bring in more than they do

With --copies-free a copy in takes no room before its use (a bound on
what the plan's rule of that room costs; with --exact, the bytes no
whole-chunk policy can beat, where the lower bound's own programme
keeps parts of chunks).

Sizes are the trace's own (the runtime rounds large chunks to 512 bytes
and counts a small one's share of its segment; neither moves these
figures by more than a few bytes a chunk).  `best` tries 2^n subsets of
the n large gaps and refuses more than 24.

    whole_keep.py TRACE CAPACITY [--large BYTES] [--copies-free] [--exact]
"""
import argparse
import sys


def parse(path):
    chunks, steps = {}, []
    with open(path) as f:
        for line in f:
            t = line.split()
            if not t or t[0].startswith("#"):
                continue
            if t[0] == "chunk":
                chunks[int(t[1])] = (int(t[2]), t[3], t[4])
            elif t[0] == "step":
                steps.append([(r.split(":")[0], int(r.split(":")[1]))
                              for r in t[3:]])
    return chunks, steps


def gaps_of(chunks, steps):
    """(chunk, first step, second step (may be past the period), size,
    whether the second use reads), for gaps with a step inside."""
    n = len(steps)
    uses = {}
    for i, refs in enumerate(steps):
        for mode, c in refs:
            uses.setdefault(c, []).append((i, mode))
    out = []
    for c, u in uses.items():
        size, _, kind = chunks[c]
        pairs = list(zip(u, u[1:]))
        if kind == "persistent":
            pairs.append((u[-1], (u[0][0] + n, u[0][1])))
        for (a, _), (b, mb) in pairs:
            if b - a > 1:
                out.append((c, a, b, size, mb in ("r", "rw")))
    return out


def decide(order, room, n, fixed=(), copies=True):
    """Bytes kept of gaps whose second use reads, deciding `order` after
    the gaps in `fixed` (kept, or copied in where `fixed` says so)."""
    room = room[:]
    kept = 0
    for g, keep in fixed:
        inside = [t % n for t in range(g[1] + 1, g[2])]
        if keep:
            for t in inside:
                room[t] -= g[3]
            kept += g[3] if g[4] else 0
        elif g[4] and copies:
            room[(g[2] - 1) % n] -= g[3]
    if min(room) < 0:
        return None
    for g in order:
        inside = [t % n for t in range(g[1] + 1, g[2])]
        if all(room[t] >= g[3] for t in inside):
            for t in inside:
                room[t] -= g[3]
            kept += g[3] if g[4] else 0
        elif g[4] and copies:
            room[(g[2] - 1) % n] -= g[3]
    return kept


def exact(gaps, room, n, copies):
    """The most bytes kept of gaps whose second use reads, every gap kept
    whole or not (an integer programme), and kept in part (its
    relaxation)."""
    try:
        import numpy as np
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import lil_matrix
    except ImportError:
        sys.exit("whole_keep: --exact needs scipy (Debian: apt-get install "
                 "python3-scipy; run with that python3)")
    a = lil_matrix((n, len(gaps)))
    ub = np.array(room, dtype=float)
    for j, g in enumerate(gaps):
        for t in range(g[1] + 1, g[2]):
            a[t % n, j] += g[3]
        if g[4] and copies:
            # Not kept, its copy in holds room at the step before its use:
            # size x (1 - keep) there.
            t = (g[2] - 1) % n
            a[t, j] -= g[3]
            ub[t] -= g[3]
    gain = -np.array([g[3] if g[4] else 0 for g in gaps], dtype=float)
    out = []
    for whole in (1, 0):
        r = milp(gain, constraints=LinearConstraint(a.tocsr(), -np.inf, ub),
                 bounds=Bounds(0, 1), integrality=np.full(len(gaps), whole))
        if r.x is None:
            sys.exit("whole_keep: no choice fits (%s): a copy in finds no "
                     "room before its use; try --copies-free" % r.message)
        out.append(-r.fun)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("capacity", type=int, help="bytes")
    ap.add_argument("--large", type=int, default=50_000_000,
                    help="gaps of at least this many bytes are searched "
                         "whole in `best` (default 50000000)")
    ap.add_argument("--copies-free", action="store_true",
                    help="a copy in takes no room before its use")
    ap.add_argument("--exact", action="store_true",
                    help="also the fewest bytes by an integer programme "
                         "(needs scipy)")
    a = ap.parse_args()
    if a.capacity <= 0:
        sys.exit("whole_keep: the capacity must be a positive number of bytes")
    try:
        chunks, steps = parse(a.trace)
        if not steps:
            raise ValueError("no steps")
        gaps = gaps_of(chunks, steps)
    except KeyError as e:
        sys.exit("whole_keep: %s: a step names chunk %s, which no chunk "
                 "line declares" % (a.trace, e))
    except (OSError, ValueError, IndexError) as e:
        sys.exit("whole_keep: %s is not a trace lms can read (%s): it "
                 "takes the text format of docs/trace-format.md, as "
                 "bench/workloads/gen_traces.py writes it" % (a.trace, e))
    n = len(steps)
    cap = a.capacity - a.capacity // 64
    own = [sum(chunks[c][0] for _, c in refs) for refs in steps]
    room = [cap - o for o in own]
    if min(room) < 0:
        sys.exit("whole_keep: a step needs more than the capacity less 1/64")
    need = sum(g[3] for g in gaps if g[4])
    by_end = sorted(gaps, key=lambda g: (g[2], -g[1]))
    dense = sorted(gaps, key=lambda g: (-g[3] / (g[2] - g[1] - 1), g[2], -g[1]))
    cp = not a.copies_free
    print("end      %.3f GB in" %
          ((need - decide(by_end, room, n, copies=cp)) / 1e9))
    print("density  %.3f GB in" %
          ((need - decide(dense, room, n, copies=cp)) / 1e9))
    if a.exact:
        whole, part = exact(gaps, room, n, cp)
        print("exact    %.3f GB in (kept whole; in part %.3f GB)" %
              ((need - whole) / 1e9, (need - part) / 1e9))
    large = [g for g in by_end if g[3] >= a.large]
    if len(large) > 24:
        if a.exact:
            return
        sys.exit("whole_keep: %d gaps of %d bytes or more; at most 24 are "
                 "searched (raise --large)" % (len(large), a.large))
    small = [g for g in by_end if g[3] < a.large]
    best = None
    for mask in range(1 << len(large)):
        fixed = [(g, mask >> i & 1) for i, g in enumerate(large)]
        k = decide(small, room, n, fixed, copies=cp)
        if k is not None and (best is None or k > best):
            best = k
    print("best     %.3f GB in (every subset of the %d gaps of %d bytes or "
          "more)" % ((need - best) / 1e9, len(large), a.large))


if __name__ == "__main__":
    main()
