#!/usr/bin/env python3
"""Runs `lms sim` over traces at several oversubscriptions, links and
policies, and prints what a user would check first:

  - refusals: a run that failed although its capacity holds the largest
    step (a memory runtime must never refuse what fits);
  - the schedule policy's iteration against the lower bound no policy can
    beat (`lms sim`'s "lower") and against the overlap bound (the run's
    own max(compute, H2D bytes / rate, D2H bytes / rate)), over all runs
    and by workload (its median, its worst, its runs over 1.25x and those
    that never settled);
  - bytes brought in with furthest-next-use victims against LRU victims
    (the exit status is 1 if the schedule policy brings in more, but for
    the runs --known-over-lru lists, which must bring in more: a known
    failure is reported, and one that stops failing is noticed), and
    bytes both ways, which write-backs ahead add to;
  - any run faster, or moving fewer bytes, than the lower bound allows
    (which would make the bound wrong; the exit status is then 1).

    bench/workloads/sweep.py LMS TRACE... [--over 2,4,10]
                             [--links pcie3,pcie5,nvlink2,c2c] [--json OUT]
                             [--known-over-lru NAME:OVER[:LINK],...]

Oversubscription k sets the capacity to the trace's peak of live bytes
over k, but never below 1.05x its largest step.
"""
import json
import statistics
import subprocess
import sys


def parse_trace(path):
    """Peak live bytes and largest step of a trace (chunks live from the
    first step that uses them to the last; persistent ones throughout)."""
    size, persistent, steps, cur = {}, set(), [], None
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w or w[0].startswith("#"):
                continue
            if w[0] == "chunk":
                size[w[1]] = int(w[2])
                if w[4] == "persistent":
                    persistent.add(w[1])
            elif w[0] in ("step", "refs"):
                if w[0] == "step":
                    cur = []
                    steps.append(cur)
                    w = w[3:]
                else:
                    w = w[1:]
                cur.extend(r.split(":", 1)[1] for r in w)
    first, last = {}, {}
    for i, refs in enumerate(steps):
        for c in refs:
            first.setdefault(c, i)
            last[c] = i
    delta = [0] * (len(steps) + 1)
    base = sum(size[c] for c in persistent)
    for c in first:
        if c in persistent:
            continue
        delta[first[c]] += size[c]
        delta[last[c] + 1] -= size[c]
    live, peak = base, base
    for i in range(len(steps)):
        live += delta[i]
        peak = max(peak, live)
    largest = max(sum(size[c] for c in set(refs)) for refs in steps)
    return peak, largest


def sim(lms, trace, cap, links):
    cmd = [lms, "sim", trace, "--capacities", f"{cap}B", "--links",
           ",".join(links), "--policies", "lru,schedule", "--json", "-"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=3600)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1] if p.stderr else ""
    return json.loads(p.stdout), ""


def parse_opts(args, opts, prog, strict=False):
    """Takes the options named in opts (each with a value) out of args,
    into opts; returns the other arguments.  strict: any other argument
    starting with -- is refused."""
    rest = []
    args = list(args)
    while args:
        a = args.pop(0)
        if a in opts:
            if not args:
                sys.exit(f"{prog}: {a} needs a value")
            opts[a] = args.pop(0)
        elif strict and a.startswith("--"):
            sys.exit(f"{prog}: unknown option {a}; accepted: "
                     + ", ".join(opts))
        else:
            rest.append(a)
    return rest


def main():
    opts = {"--over": "2,4,10", "--links": "pcie3,pcie5,nvlink2,c2c",
            "--json": None, "--known-over-lru": ""}
    rest = parse_opts(sys.argv[1:], opts, "sweep")
    if len(rest) < 2:
        sys.exit(__doc__)
    lms, traces = rest[0], rest[1:]
    known = []  # (name, over, link or None)
    for item in filter(None, opts["--known-over-lru"].split(",")):
        f = item.split(":")
        try:
            if len(f) not in (2, 3):
                raise ValueError
            known.append((f[0], float(f[1]), f[2] if len(f) == 3 else None))
        except ValueError:
            sys.exit(f"sweep: --known-over-lru: '{item}' is not "
                     f"NAME:OVER or NAME:OVER:LINK (as dlrm:4:pcie3)")
    overs = [float(x) for x in opts["--over"].split(",")]
    links = opts["--links"].split(",")
    rows, refusals, ratios, lowers, fnu_worse, below = [], [], [], [], [], []
    more_total = []
    print(f"{'workload':28} {'over':>5} {'GiB':>7} {'link':8} "
          f"{'sched ms':>9} {'lower ms':>9} {'x lower':>8} {'x bound':>8} "
          f"{'lru ms':>9} {'sched GB':>9} {'lru GB':>9} {'min GB':>9}")
    for trace in traces:
        peak, largest = parse_trace(trace)
        for k in overs:
            cap = max(int(peak / k), int(largest * 1.05))
            cap = (cap + 511) // 512 * 512
            res, why = sim(lms, trace, cap, links)
            name = trace.rsplit("/", 1)[-1].removesuffix(".trace")
            if res is None:
                refusals.append((name, k, cap, why))
                print(f"{name:28} {k:5.0f} {cap / 2**30:7.2f} REFUSED: {why}")
                continue
            by = {(r["link"], r["policy"]): r for r in res["runs"]}
            for link in links:
                s, l = by[(link, "schedule")], by[(link, "lru")]
                x = s["iteration_ns"] / s["overlap_bound_ns"]
                xl = s["iteration_ns"] / s["lower_bound_ns"]
                sgb = (s["bytes_h2d"] + s["bytes_d2h"]) / 1e9
                lgb = (l["bytes_h2d"] + l["bytes_d2h"]) / 1e9
                mgb = (s["min_bytes_h2d"] + s["min_bytes_d2h"]) / 1e9
                ratios.append(x)
                lowers.append(xl)
                for run in (s, l):
                    if (run["iteration_ns"] < run["lower_bound_ns"] or
                            run["bytes_h2d"] < run["min_bytes_h2d"] or
                            run["bytes_d2h"] < run["min_bytes_d2h"]):
                        below.append((name, k, link, run["policy"]))
                # Furthest-next-use victims against LRU victims: the bytes
                # brought in (written home ahead counts out, not in).
                if s["bytes_h2d"] > l["bytes_h2d"] * 1.0001:
                    fnu_worse.append((name, k, link, s["bytes_h2d"] / 1e9,
                                      l["bytes_h2d"] / 1e9))
                if sgb > lgb * 1.0001:
                    more_total.append((name, k, link, sgb, lgb))
                rows.append({"workload": name, "over": k, "capacity": cap,
                             "link": link, "schedule": s, "lru": l})
                print(f"{name:28} {k:5.0f} {cap / 2**30:7.2f} {link:8} "
                      f"{s['iteration_ns'] / 1e6:9.1f} "
                      f"{s['lower_bound_ns'] / 1e6:9.1f} {xl:8.3f} {x:8.3f} "
                      f"{l['iteration_ns'] / 1e6:9.1f} {sgb:9.2f} {lgb:9.2f} "
                      f"{mgb:9.2f}")
    print()
    print(f"runs: {len(ratios)} schedule runs, {len(refusals)} refused "
          f"capacities")
    if ratios:
        print(f"schedule / lower bound: median {statistics.median(lowers):.3f}"
              f", worst {max(lowers):.3f}")
        print(f"schedule / overlap bound: median {statistics.median(ratios):.3f}"
              f", worst {max(ratios):.3f}")
        # Each workload's runs apart: what a trace written after is judged
        # by (the targets are per run, the median over them).
        print(f"{'by workload':28} {'runs':>5} {'median':>8} {'worst':>8} "
              f"{'over 1.25x':>10} {'not settled':>11}")
        for name in dict.fromkeys(r["workload"] for r in rows):
            mine = [r["schedule"] for r in rows if r["workload"] == name]
            xs = [r["iteration_ns"] / r["lower_bound_ns"] for r in mine]
            print(f"{name:28} {len(xs):5d} {statistics.median(xs):8.3f} "
                  f"{max(xs):8.3f} {sum(x > 1.25 for x in xs):10d} "
                  f"{sum(not r.get('settled', True) for r in mine):11d}")
    def listed(name, k, link):
        return any(n == name and o == k and (l is None or l == link)
                   for n, o, l in known)
    print(f"schedule brought in more bytes than lru in {len(fnu_worse)} "
          f"runs")
    for name, k, link, sgb, lgb in fnu_worse:
        tag = " (known)" if listed(name, k, link) else ""
        print(f"  {name} {k:.0f}x {link}: {sgb:.3f} GB vs {lgb:.3f} GB{tag}")
    unknown = [w for w in fnu_worse if not listed(*w[:3])]
    swept = {(r["workload"], r["over"], r["link"]) for r in rows}
    over = {w[:3] for w in fnu_worse}
    mended = [(n, k, l) for n, k, l in swept
              if listed(n, k, l) and (n, k, l) not in over]
    for name, k, link in sorted(mended):
        print(f"KNOWN FAILURE GONE: {name} {k:.0f}x {link} no longer brings "
              f"in more than lru; take it off --known-over-lru")
    print(f"schedule moved more bytes both ways than lru in "
          f"{len(more_total)} runs (write-backs ahead)")
    for name, k, link, sgb, lgb in more_total:
        print(f"  {name} {k:.0f}x {link}: {sgb:.2f} GB vs {lgb:.2f} GB")
    for name, k, link, policy in below:
        print(f"BOUND BROKEN: {name} {k:.0f}x {link} {policy} beat the lower "
              f"bound")
    if opts["--json"]:
        with open(opts["--json"], "w") as f:
            json.dump({"rows": rows, "refusals": refusals}, f, indent=1)
    sys.exit(1 if refusals or below or unknown or mended else 0)


if __name__ == "__main__":
    main()
