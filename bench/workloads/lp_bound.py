#!/usr/bin/env python3
"""The least time of a settled iteration, both links and the room at once.

The lower bound of `lms sim` (Note [A lower bound no policy can beat] in
src/replay/bound.c) takes the fewest bytes each way from two programmes,
each with the whole capacity to itself, and the time from cuts of the
cycle: each part's bytes over one link.  It never asks whether the copies
in can find their room when the link in is free, so where the room must
be made by copies out (training's forward, whose outputs must go home
before anything can come in) it can have the link in busy all iteration,
which no schedule can.  This programme asks that: one linear programme
over the whole cycle, every chunk's state at every step.

For step t, "window t" runs from the start of t's compute to the start of
t+1's, and lasts T(t) >= c(t), the step's compute.  For each chunk c alive
at t: x(c,t), the fraction of its bytes on the device and valid when t's
compute starts, and h(c,t), the fraction with a valid copy in host memory;
its copies in window t are p(c,t) in and op(c,t) out while t computes,
q(c,t) in and oq(c,t) out after; y(c,t) is what is on the device when
t's compute ends.  Then:

  a use that reads has the chunk whole:   x(c,t) = 1
  room at the start of t, and at the end of its compute:
                     sum of t's chunks + sum of the others' x(c,t) x size
                     <= C, and the same with y(c,t)
  a chunk t does not use:
                     y <= x + p, op <= x   (what is there grows only by
                     copies in; only what is there goes out)
                     x(c,t+1) <= y + q, oq <= y
                     h(c,t+1) <= h + op + oq,  p + q <= h(c,t+1)
                     y + h + op >= 1 where its bytes are read later
  a chunk t reads:   on the device after it; h(c,t+1) <= h + op + oq
  a chunk t writes:  its new bytes exist once t's compute ends, so
                     h(c,t+1) <= oq (and no op)
  nothing lost:      x(c,t) + h(c,t) >= 1 where c's bytes are read later
                     before they are overwritten
  the links:         during the compute, sum of p x size <= H2D rate x c(t),
                     after it sum of q x size <= H2D rate x (T(t) - c(t)),
                     the same out, and in + out within the two ways' rate
                     together where the link has one (pcie5's 87 GB/s)
  minimise           sum of T(t), the state of the persistent chunks
                     the same at the cycle's end as at its start

Any schedule of whole chunks or of pieces gives a solution of it (its
copies counted in the part of the window they end in, its room at each
start and end of a step's compute), so the optimum is a lower bound on
any policy's settled iteration; and since the programme is linear, the
average of k iterations repeating a cycle of k is a solution too, so it
bounds that average as well.  It relaxes: fractions of chunks; the room
of a copy in flight after a step's compute (counted once it has landed,
at the next step's start); the link's latency per copy.  Each only
lowers the optimum.  It can be below `lms sim`'s bound where that one
counts copies' latencies or rounds the room to whole chunks; the larger
of the two is a bound.

Rates are the simulated links' (src/core/link.c).  The programme has
about seven variables a step a chunk is alive; scipy's linprog (HiGHS,
Debian's python3-scipy) solves the nineteen traces' smaller ones in
seconds (ResNet-50's 222 thousand variables in 20 s here) and the
pipeline stage's 1.7 million in 16 minutes and 4 GB; traces of a million
chunk-steps and more (the LSTM, speech recognition) are out of its reach.

    lp_bound.py TRACE CAPACITY[,CAPACITY..] [--links pcie3,pcie5,..]
                [--json PATH] [--bytes] [--whole [--time-limit S]] [--show]
    lp_bound.py --against SWEEP.json TRACE.. [--json PATH]

CAPACITY is in bytes (as `lms sim --json` prints it) or with a suffix
(MiB, GiB, MB, GB).  --bytes also prints the fewest bytes in, the
programme minimising them instead of time.  --whole also solves it with
every chunk taking its whole size of the room wherever any of it is on
the device (a 0-or-1 variable beside each fraction: an integer
programme, scipy's milp), the bound for schedules of whole chunks, which
pieces can beat; it says how much of a run's distance from the bound is
the chunks' size.  HiGHS stops after --time-limit seconds (60) with the
least time it has proved, printed, and the best schedule it found.
--show prints the programme's schedule in part, a line a step: its
window's time and compute, the bytes copied in and out during its
compute and after it, the chunks of an eighth of the capacity or more
that it uses, and the share of each such chunk on the device at its
start (what a schedule of whole chunks can be held to, step by step;
--json then has them as each row's "steps"); with --whole, the best
schedule of whole chunks found as well ("whole_steps").
--against takes the runs of
a sweep (bench/workloads/sweep.py --json) of the traces given, solves the
programme at each run's capacity and link, and prints each policy's
settled iteration over the larger of the two bounds; a run faster than
the programme says BEATEN (the programme would be wrong) and the exit
status is 1.
"""
import argparse
import json
import re
import sys
import time

LINKS = {  # H2D GB/s, D2H GB/s, both ways together (0: the sum)
    "pcie3": (12.2, 12.9, 0.0),
    "pcie4": (25.0, 26.0, 0.0),
    "pcie5": (55.0, 53.0, 87.0),
    "nvlink1": (33.0, 33.0, 0.0),
    "nvlink2": (66.0, 60.0, 0.0),
    "c2c": (360.0, 297.0, 0.0),
}

SUFFIX = {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
          "KB": 10**3, "MB": 10**6, "GB": 10**9}


def fail(msg):
    sys.stderr.write("lp_bound.py: %s\n" % msg)
    sys.exit(2)


def parse_size(text):
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)([A-Za-z]*)", text)
    if not m or m.group(2) not in SUFFIX:
        fail("capacity '%s' is not accepted; accepted: bytes, or a number "
             "with B, KiB, MiB, GiB, KB, MB or GB" % text)
    v = int(float(m.group(1)) * SUFFIX[m.group(2)])
    if v <= 0:
        fail("capacity '%s' is not accepted; accepted: more than 0 bytes"
             % text)
    return v


def read_trace(path):
    """Chunks {id: (size, persistent)} and steps [(ns, [(mode, id)])]."""
    chunks, steps = {}, []
    try:
        f = open(path)
    except OSError as e:
        fail("%s: %s" % (path, e.strerror))
    with f:
        for no, line in enumerate(f, 1):
            w = line.split()
            if not w or w[0].startswith("#") or w[0] in ("lms-trace",
                                                         "workload"):
                continue
            try:
                if w[0] == "chunk":
                    if len(w) != 5 or w[4] not in ("persistent", "transient"):
                        raise ValueError(w[0])
                    size = int(w[2])
                    if size < 1:
                        raise ValueError(w[2])
                    chunks[int(w[1])] = (size, w[4] == "persistent")
                elif w[0] in ("step", "refs"):
                    refs = w[3:] if w[0] == "step" else w[1:]
                    if w[0] == "step":
                        if int(w[1]) < 0:
                            raise ValueError(w[1])
                        steps.append((int(w[1]), []))
                    for r in refs:
                        mode, cid = r.split(":")
                        if mode not in ("r", "w", "rw") or int(cid) not in chunks:
                            raise ValueError(r)
                        steps[-1][1].append((mode, int(cid)))
                else:
                    raise ValueError(w[0])
            except (ValueError, IndexError):
                fail("%s:%d: not a line of an lms trace this programme reads "
                     "(`lms sim` reads it and says why)" % (path, no))
    if not steps:
        fail("%s: no step" % path)
    return chunks, steps


def build(chunks, steps):
    """Per chunk: the steps it is alive at, its uses, and where its bytes
    are live; shared by every capacity and link."""
    n = len(steps)
    uses = {}
    for t, (_, refs) in enumerate(steps):
        for mode, c in refs:
            uses.setdefault(c, []).append((t, mode))
    model = []
    for c, (size, persistent) in chunks.items():
        if c not in uses:
            continue
        u = uses[c]
        if persistent:
            alive = list(range(n))
            cyclic = True
        else:
            alive = list(range(u[0][0], u[-1][0] + 1))
            cyclic = False
        mode_at = {t: m for t, m in u}
        if not cyclic:  # a transient chunk starts each iteration empty
            mode_at[u[0][0]] = "w"
        # live(t): the next use at or after t reads (cyclic for persistent)
        live = {}
        nxt = None
        order = alive[::-1] * (2 if cyclic else 1)
        for t in order:
            if t in mode_at:
                nxt = mode_at[t]
            live[t] = nxt in ("r", "rw")
        model.append((size, cyclic, alive, mode_at, live, c))
    return model


def solve(model, steps, cap, link, objective, whole=False, limit=None):
    import numpy as np
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    n = len(steps)
    rin, rout, rboth = LINKS[link]
    nv = 0
    lb, ub, cost, integral = [], [], [], []

    def var(lo, hi, c=0.0, z=0):
        nonlocal nv
        lb.append(lo)
        ub.append(hi)
        cost.append(c)
        integral.append(z)
        nv += 1
        return nv - 1

    def held(v):
        """What v takes of the room: itself, or with --whole a 0-or-1
        that is 1 wherever any of it is on the device."""
        if not whole:
            return v
        z = var(0.0, 1.0, 0.0, 1)
        le([(v, 1.0), (z, -1.0)], 0.0)
        return z

    T = [var(float(steps[t][0]), None, 1.0 if objective == "time" else 0.0)
         for t in range(n)]
    rows, cols, vals, rhs = [], [], [], []
    nrow = 0

    def le(terms, b):  # sum of coef x var <= b
        nonlocal nrow
        for v, a in terms:
            rows.append(nrow)
            cols.append(v)
            vals.append(a)
        rhs.append(b)
        nrow += 1

    room = [[] for _ in range(n)]   # at the start of step t
    busy = [[] for _ in range(n)]   # at the end of step t's compute
    fixed = [0.0] * n
    # the window's copies: in and out, during t's compute or after it
    cin = [[] for _ in range(n)]
    win = [[] for _ in range(n)]
    cout = [[] for _ in range(n)]
    wout = [[] for _ in range(n)]
    scale = float(cap)  # sizes in capacities keep the matrix well scaled
    cb = 1.0 if objective == "bytes" else 0.0
    # the chunks whose state `steps` shows: an eighth of the capacity or
    # more (the chunks a schedule of whole chunks finds hardest to place)
    shown = []
    for size, cyclic, alive, mode_at, live, cid in model:
        s = size / scale
        x, h = {}, {}
        if size * 8 >= cap:
            shown.append((cid, x, size))
        for t in alive:
            m = mode_at.get(t)
            if m is not None:
                fixed[t] += s
            x[t] = var(1.0 if m in ("r", "rw") else 0.0, 1.0)
            h[t] = var(0.0, 1.0)
            if m is None:
                room[t].append((held(x[t]), s))
                if live[t]:
                    le([(x[t], -1.0), (h[t], -1.0)], -1.0)
        windows = alive if cyclic else alive[:-1]
        for t in windows:
            t1 = (t + 1) % n
            m = mode_at.get(t)
            oq = var(0.0, 1.0)
            wout[t].append((oq, s))
            if m is None:
                # not used by t: copies in during its compute need room
                # beside its chunks (y, on the device when it ends)
                p = var(0.0, 1.0, cb * s)
                q = var(0.0, 1.0, cb * s)
                op = var(0.0, 1.0)
                y = var(0.0, 1.0)
                cin[t].append((p, s))
                win[t].append((q, s))
                cout[t].append((op, s))
                busy[t].append((held(y), s))
                le([(y, 1.0), (x[t], -1.0), (p, -1.0)], 0.0)
                le([(op, 1.0), (x[t], -1.0)], 0.0)
                le([(x[t1], 1.0), (y, -1.0), (q, -1.0)], 0.0)
                le([(oq, 1.0), (y, -1.0)], 0.0)
                le([(h[t1], 1.0), (h[t], -1.0), (op, -1.0), (oq, -1.0)], 0.0)
                le([(p, 1.0), (q, 1.0), (h[t1], -1.0)], 0.0)
                if live[t]:
                    le([(y, -1.0), (h[t], -1.0), (op, -1.0)], -1.0)
            elif m == "r":
                # read: on the device, its host copy as it was; it may go
                # home while t computes
                op = var(0.0, 1.0)
                cout[t].append((op, s))
                le([(h[t1], 1.0), (h[t], -1.0), (op, -1.0), (oq, -1.0)], 0.0)
            else:
                # written: its bytes exist once t's compute has ended
                le([(h[t1], 1.0), (oq, -1.0)], 0.0)
    for t in range(n):
        if fixed[t] > 1.0 + 1e-12:
            return None  # a step larger than the capacity
        if room[t]:
            le(room[t], 1.0 - fixed[t])
        if busy[t]:
            le(busy[t], 1.0 - fixed[t])
        # bytes / (GB/s) = ns, sizes in capacities; during the compute
        # (c ns) and after it (T - c ns)
        c = float(steps[t][0])
        for terms, rate in ((cin[t], rin), (cout[t], rout)):
            if terms:
                le(terms, rate * c / scale)
        for terms, rate in ((win[t], rin), (wout[t], rout)):
            if terms:
                le(terms + [(T[t], -rate / scale)], -rate * c / scale)
        if rboth > 0.0:
            if cin[t] or cout[t]:
                le(cin[t] + cout[t], rboth * c / scale)
            if win[t] or wout[t]:
                le(win[t] + wout[t] + [(T[t], -rboth / scale)],
                   -rboth * c / scale)
    a = coo_matrix((vals, (rows, cols)), shape=(nrow, nv)).tocsr()
    if whole:
        from scipy.optimize import Bounds, LinearConstraint, milp
        hi = np.array([np.inf if u is None else u for u in ub])
        opts = {"time_limit": limit} if limit else {}
        res = milp(np.array(cost), integrality=np.array(integral),
                   bounds=Bounds(np.array(lb), hi),
                   constraints=LinearConstraint(a, -np.inf, np.array(rhs)),
                   options=opts)
        if res.x is None:
            raise RuntimeError("HiGHS: %s" % res.message)
        # Stopped at the time limit: the best bound proved, not the
        # incumbent, is what no schedule can beat.
        dual = getattr(res, "mip_dual_bound", None)
    else:
        res = linprog(np.array(cost), A_ub=a, b_ub=np.array(rhs),
                      bounds=list(zip(lb, ub)), method="highs")
        if res.status != 0:
            raise RuntimeError("HiGHS: %s" % res.message)
    xs = res.x
    ns = sum(xs[v] for v in T)
    # Each step's window: its time, its copies during its compute and
    # after, and the share of each large chunk on the device at its start.
    per_step = []
    for t in range(n):
        per_step.append({
            "ns": xs[T[t]], "compute_ns": float(steps[t][0]),
            "in_during": sum(xs[v] * s for v, s in cin[t]) * scale,
            "in_after": sum(xs[v] * s for v, s in win[t]) * scale,
            "out_during": sum(xs[v] * s for v, s in cout[t]) * scale,
            "out_after": sum(xs[v] * s for v, s in wout[t]) * scale,
            "on_device": {str(cid): xs[x[t]] for cid, x, _ in shown
                          if t in x and xs[x[t]] > 0.005}})
    bytes_in = sum(w["in_during"] + w["in_after"] for w in per_step)
    bytes_out = sum(w["out_during"] + w["out_after"] for w in per_step)
    out = {"ns": ns, "bytes_h2d": bytes_in, "bytes_d2h": bytes_out,
           "variables": nv, "rows": nrow, "steps": per_step,
           "large": {str(cid): size for cid, _, size in shown}}
    if whole:
        # The least time proved; the schedule found (ns) is no bound
        # unless HiGHS proved it optimal.
        out["proved_ns"] = dual if dual is not None and res.status != 0 \
            else ns
        out["optimal"] = res.status == 0
    return out


def against(sweep, traces, json_out):
    try:
        rows = json.load(open(sweep))["rows"]
    except (OSError, ValueError, KeyError) as e:
        fail("--against %s: not a sweep's JSON (%s)" % (sweep, e))
    out, beaten = [], 0
    print("%-14s %5s %-8s %11s %11s %11s %9s %9s  %s"
          % ("workload", "over", "link", "schedule", "bound", "programme",
             "x bound", "x both", "LRU x both"))
    for path in traces:
        name = path.split("/")[-1].rsplit(".", 1)[0]
        mine = [r for r in rows if r["workload"] == name]
        if not mine:
            fail("--against: no run of '%s' in %s" % (name, sweep))
        chunks, steps = read_trace(path)
        model = build(chunks, steps)
        for r in mine:
            t0 = time.time()
            lp = solve(model, steps, r["capacity"], r["link"], "time")
            if lp is None:
                continue
            row = {"workload": name, "over": r["over"], "link": r["link"],
                   "capacity": r["capacity"], "lp_ns": lp["ns"],
                   "seconds": time.time() - t0}
            best = None
            for pol in ("schedule", "lru"):
                if pol not in r:
                    continue
                it = r[pol]["iteration_ns"]
                both = max(lp["ns"], r[pol]["lower_bound_ns"])
                row[pol + "_ns"] = it
                row[pol + "_x_bound"] = it / r[pol]["lower_bound_ns"]
                row[pol + "_x_both"] = it / both
                row["bound_ns"] = r[pol]["lower_bound_ns"]
                if it < lp["ns"] * (1 - 1e-6):
                    beaten += 1
                    row[pol + "_beaten"] = True
            out.append(row)
            print("%-14s %4.0fx %-8s %9.1fms %9.1fms %9.1fms %9.3f %9.3f  "
                  "%.3f%s" % (name, r["over"], r["link"],
                              row["schedule_ns"] / 1e6, row["bound_ns"] / 1e6,
                              lp["ns"] / 1e6, row["schedule_x_bound"],
                              row["schedule_x_both"],
                              row.get("lru_x_both", float("nan")),
                              "  BEATEN" if any(k.endswith("_beaten")
                                                for k in row) else ""),
                  flush=True)
    if json_out:
        with open(json_out, "w") as f:
            json.dump(out, f, indent=1)
    return 1 if beaten else 0


def show(r, steps):
    """--show: the schedule, a line a step (MB, ms)."""
    large = {int(c) for c in r["large"]}
    print("large chunks (MB): " + ", ".join(
        "%s %.1f" % (c, sz / 1e6) for c, sz in
        sorted(r["large"].items(), key=lambda i: int(i[0]))))
    print("%4s %8s %8s %15s %15s  %s" % ("step", "ms", "compute",
                                          "in MB dur+aft", "out MB dur+aft",
                                          "large chunks: used | on device"))
    for t, w in enumerate(r["steps"]):
        used = " ".join("%s:%d" % (m, c) for m, c in steps[t][1]
                        if c in large)
        dev = " ".join("%s=%.2f" % (c, f) for c, f in
                       sorted(w["on_device"].items(), key=lambda i: int(i[0])))
        print("%4d %8.3f %8.3f %7.1f+%7.1f %7.1f+%7.1f  %s | %s"
              % (t, w["ns"] / 1e6, w["compute_ns"] / 1e6,
                 w["in_during"] / 1e6, w["in_after"] / 1e6,
                 w["out_during"] / 1e6, w["out_after"] / 1e6, used, dev))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--against":
        ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
        ap.add_argument("--against", required=True)
        ap.add_argument("traces", nargs="+")
        ap.add_argument("--json")
        a = ap.parse_args()
        sys.exit(against(a.against, a.traces, a.json))
    for a in sys.argv[1:]:  # argparse would take "-5GiB" for an option
        if re.match(r"-[0-9.]", a):
            fail("capacity '%s' is not accepted; accepted: bytes, or a "
                 "number with B, KiB, MiB, GiB, KB, MB or GB, more than 0"
                 % a)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("capacities")
    ap.add_argument("--links", default="pcie3,pcie5,nvlink2,c2c")
    ap.add_argument("--json")
    ap.add_argument("--bytes", action="store_true")
    ap.add_argument("--whole", action="store_true")
    ap.add_argument("--time-limit", default="60")
    ap.add_argument("--show", action="store_true")
    args = ap.parse_args()
    try:
        limit = float(args.time_limit)
        if not 0 < limit <= 86400:
            raise ValueError
    except ValueError:
        fail("--time-limit: '%s' is not accepted; accepted: seconds above "
             "0, up to 86400" % args.time_limit)
    links = args.links.split(",")
    for l in links:
        if l not in LINKS:
            fail("--links: '%s' is not accepted; accepted: %s"
                 % (l, ", ".join(LINKS)))
    caps = [parse_size(c) for c in args.capacities.split(",")]
    chunks, steps = read_trace(args.trace)
    model = build(chunks, steps)
    out = []
    for cap in caps:
        for l in links:
            t0 = time.time()
            r = solve(model, steps, cap, l, "time")
            if r is None:
                print("%s at %d bytes: a step holds more than the capacity"
                      % (args.trace, cap))
                continue
            row = {"trace": args.trace, "capacity": cap, "link": l,
                   "lp_ns": r["ns"], "lp_bytes_h2d": r["bytes_h2d"],
                   "lp_bytes_d2h": r["bytes_d2h"],
                   "variables": r["variables"], "seconds": time.time() - t0}
            if args.show:
                row["steps"] = r["steps"]
                row["large"] = r["large"]
                show(r, steps)
            if args.bytes:
                rb = solve(model, steps, cap, l, "bytes")
                row["lp_min_bytes_h2d"] = rb["bytes_h2d"]
            if args.whole:
                t1 = time.time()
                rw = solve(model, steps, cap, l, "time", True, limit)
                row.update({"whole_proved_ns": rw["proved_ns"],
                            "whole_found_ns": rw["ns"],
                            "whole_optimal": rw["optimal"],
                            "whole_seconds": time.time() - t1})
            out.append(row)
            print("%-28s %14d %-8s %10.1f ms  in %7.3f GB  out %7.3f GB%s"
                  "  (%d variables, %.1f s)"
                  % (args.trace.split("/")[-1], cap, l, r["ns"] / 1e6,
                     r["bytes_h2d"] / 1e9, r["bytes_d2h"] / 1e9,
                     "  fewest in %.3f GB" % (row["lp_min_bytes_h2d"] / 1e9)
                     if args.bytes else "", r["variables"], row["seconds"]),
                  flush=True)
            if args.whole:
                print("%-28s %14s %-8s %10.1f ms  with whole chunks%s"
                      % ("", "", "", row["whole_proved_ns"] / 1e6,
                         "" if row["whole_optimal"] else
                         " (proved in %.0f s; the best schedule found "
                         "%.1f ms)" % (row["whole_seconds"],
                                       row["whole_found_ns"] / 1e6)),
                      flush=True)
                if args.show:
                    row["whole_steps"] = rw["steps"]
                    print("the schedule of whole chunks found:")
                    show(rw, steps)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
