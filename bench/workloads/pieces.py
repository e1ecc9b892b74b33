#!/usr/bin/env python3
"""What keeping large chunks on the device in part gives, measured on
traces rewritten in pieces, with any piece size and threshold.

By default lms moves whole chunks: a 768 MiB embedding table is on the
device or not.  The lower bound (`lms sim`'s "lower") lets a chunk stay in
part, and a fetch into room a dirty victim leaves waits for the victim's
whole write-back.  With large chunks made of pieces mapped into one
address range (`--piece-size`, Note [Chunks of pieces] in
src/swap/residency.c), some pieces stay and others go, copied piece by
piece.  Seen from the scheduler, such a chunk is a run of smaller chunks
that every step names together; this script writes each trace so, and
runs it, so that a piece size and threshold other than the runtime's (an
eighth of the budget) can be tried without building them.

For each trace and oversubscription (the capacity as bench/workloads/
sweep.py sets it), the chunks of at least capacity / DIV bytes become
pieces of PIECE bytes (the last one the remainder), each step naming all
of a chunk's pieces with the chunk's access.  The schedule policy's
settled iteration on the pieced trace, and on the trace as it is, are
both held to the lesser of the two traces' lower bounds: the bound of
whole chunks keeps only whole chunks (Note [A lower bound no policy can
beat] in src/replay/bound.c, "Whole chunks"), which pieces need not, and
the bound of pieces charges each piece a copy's latency, which whole
chunks do not pay.

    bench/workloads/pieces.py LMS TRACE... [--piece MiB] [--div DIV]
                              [--over 2,4,10]
                              [--links pcie3,pcie5,nvlink2,c2c]
                              [--json OUT] [--keep DIR]

--piece 32 and --div 8 by default; --div 0 splits every chunk larger than
a piece.  --keep DIR keeps the pieced traces there.  The exit status is 1
if a pieced trace's bytes differ from the original's or lms refuses one.
"""
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep  # noqa: E402


def piece_trace(src, dst, piece, least):
    """Writes src to dst with every chunk of at least `least` bytes and
    more than `piece` made pieces; returns (chunks split, bytes before,
    bytes after)."""
    out, ids, split, before, after, nid = [], {}, 0, 0, 0, 0
    with open(src) as f:
        lines = f.read().splitlines()
    for line in lines:
        w = line.split()
        if w and w[0] == "chunk":
            size = int(w[2])
            before += size
            n = (size + piece - 1) // piece if size >= least and size > piece else 1
            split += n > 1
            ids[w[1]] = []
            for i in range(n):
                s = piece if i < n - 1 else size - piece * (n - 1)
                after += s
                name = w[3] + (f".p{i}" if n > 1 else "")
                out.append(" ".join(["chunk", str(nid), str(s), name] + w[4:]))
                ids[w[1]].append(str(nid))
                nid += 1
        elif w and w[0] in ("step", "refs"):
            head, refs = (w[:3], w[3:]) if w[0] == "step" else (w[:1], w[1:])
            new = []
            for r in refs:
                mode, c = r.split(":", 1)
                new += [f"{mode}:{p}" for p in ids[c]]
            out.append(" ".join(head + new))
        else:
            out.append(line)
    with open(dst, "w") as f:
        f.write("\n".join(out) + "\n")
    return split, before, after


def main():
    opts = {"--piece": "32", "--div": "8", "--over": "2,4,10",
            "--links": "pcie3,pcie5,nvlink2,c2c", "--json": None,
            "--keep": None}
    rest = sweep.parse_opts(sys.argv[1:], opts, "pieces", strict=True)
    if len(rest) < 2:
        sys.exit(__doc__)
    try:
        piece = int(float(opts["--piece"]) * 2**20)
        div = float(opts["--div"])
        overs = [float(x) for x in opts["--over"].split(",")]
        if piece < 2**20 or div < 0 or not overs or min(overs) <= 0:
            raise ValueError
    except ValueError:
        sys.exit("pieces: --piece is MiB, at least 1; --div 0 or more; "
                 "--over positive numbers, as 2,4,10")
    links = opts["--links"].split(",")
    lms, traces = rest[0], rest[1:]
    keep = opts["--keep"]
    tmp = tempfile.TemporaryDirectory()
    outdir = keep or tmp.name
    os.makedirs(outdir, exist_ok=True)
    rows, bad = [], []
    print(f"{'workload':28} {'over':>5} {'link':8} {'split':>5} "
          f"{'lower ms':>9} {'whole ms':>9} {'pieces ms':>9} {'x lower':>8} "
          f"{'pieced':>8} {'in GB':>7} {'pieced':>7}")
    for trace in traces:
        name = trace.rsplit("/", 1)[-1].removesuffix(".trace")
        peak, largest = sweep.parse_trace(trace)
        for k in overs:
            cap = max(int(peak / k), int(largest * 1.05))
            cap = (cap + 511) // 512 * 512
            least = cap / div if div > 0 else 0
            dst = os.path.join(outdir, f"{name}-{k:g}x.trace")
            split, before, after = piece_trace(trace, dst, piece, least)
            if before != after:
                bad.append(f"{name} {k:g}x: pieces hold {after} bytes, the "
                           f"chunks {before}")
                continue
            whole, why = sweep.sim(lms, trace, cap, links)
            cut, why2 = sweep.sim(lms, dst, cap, links) if split else (whole, "")
            if whole is None or cut is None:
                bad.append(f"{name} {k:g}x: refused: {why or why2}")
                continue
            w = {(r["link"], r["policy"]): r for r in whole["runs"]}
            c = {(r["link"], r["policy"]): r for r in cut["runs"]}
            for link in links:
                ws, cs = w[(link, "schedule")], c[(link, "schedule")]
                low = min(ws["lower_bound_ns"], cs["lower_bound_ns"])
                rows.append({"workload": name, "over": k, "capacity": cap,
                             "link": link, "split": split,
                             "lower_bound_ns": low, "whole": ws,
                             "pieces": cs, "pieces_lru": c[(link, "lru")]})
                print(f"{name:28} {k:5g} {link:8} {split:5d} {low / 1e6:9.1f} "
                      f"{ws['iteration_ns'] / 1e6:9.1f} "
                      f"{cs['iteration_ns'] / 1e6:9.1f} "
                      f"{ws['iteration_ns'] / low:8.3f} "
                      f"{cs['iteration_ns'] / low:8.3f} "
                      f"{ws['bytes_h2d'] / 1e9:7.2f} "
                      f"{cs['bytes_h2d'] / 1e9:7.2f}")
    if rows:
        a = [r["whole"]["iteration_ns"] / r["lower_bound_ns"] for r in rows]
        b = [r["pieces"]["iteration_ns"] / r["lower_bound_ns"] for r in rows]
        faster = sum(y < x / 1.003 for x, y in zip(a, b))
        slower = sum(y > x * 1.003 for x, y in zip(a, b))
        print()
        print(f"runs: {len(rows)}; schedule / the lesser lower bound:")
        print(f"  whole chunks: median {statistics.median(a):.3f}, worst "
              f"{max(a):.3f}, {sum(x > 1.25 for x in a)} over 1.25x")
        print(f"  pieces:       median {statistics.median(b):.3f}, worst "
              f"{max(b):.3f}, {sum(x > 1.25 for x in b)} over 1.25x")
        print(f"  pieces faster by more than 0.3 % in {faster} runs, slower "
              f"in {slower}")
    for why in bad:
        print(f"FAILED: {why}")
    if opts["--json"]:
        with open(opts["--json"], "w") as f:
            json.dump({"piece": piece, "div": div, "rows": rows,
                       "failed": bad}, f, indent=1)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
