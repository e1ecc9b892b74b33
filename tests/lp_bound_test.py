#!/usr/bin/env python3
"""bench/workloads/lp_bound.py: its programme on workloads whose least time
is known by hand, and its bound against what `lms sim` achieves.

A lower bound that a run beats is wrong, so every iteration `lms sim`
measures (the schedule policy, LRU, and the schedule with chunks made of
pieces, which can keep parts of chunks as the programme does) must take
at least the programme's time.  Exits 77 (skipped, with why) where no
Python here has scipy.

    lp_bound_test.py LMS
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench", "workloads"))

try:
    import scipy  # noqa: F401
except ImportError:
    # Debian's python3-scipy (scripts/bootstrap.sh) is /usr/bin/python3's
    if (os.path.exists("/usr/bin/python3") and
            os.path.realpath(sys.executable) !=
            os.path.realpath("/usr/bin/python3") and
            subprocess.run(["/usr/bin/python3", "-c", "import scipy"],
                           capture_output=True).returncode == 0):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("SKIPPED: no scipy for this Python (Debian's python3-scipy; "
          "scripts/bootstrap.sh installs it)")
    sys.exit(77)

import lp_bound  # noqa: E402

failures = 0


def check(ok, what):
    global failures
    print("%s: %s" % ("ok" if ok else "FAILED", what))
    if not ok:
        failures += 1


def close(a, b, rel=1e-6):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1.0)


def write(path, chunks, steps):
    with open(path, "w") as f:
        f.write("lms-trace 1\nworkload lp-test\n")
        for cid, size, kind in chunks:
            f.write("chunk %d %d c%d %s\n" % (cid, size, cid, kind))
        for ns, refs in steps:
            f.write("step %d s %s\n" % (ns, " ".join(refs)))


def lp(path, cap, link):
    chunks, steps = lp_bound.read_trace(path)
    return lp_bound.solve(lp_bound.build(chunks, steps), steps, cap, link,
                          "time")


def by_hand(tmp):
    C = 10**9
    c = 2_000_000  # ns of compute a step
    s = 6 * C // 10
    # Two chunks of 0.6 C read in turn: across each step 0.4 C of the other
    # stays (2/3 of it); the third that left comes in after the step that
    # holds the room has computed, not while it does.
    p = os.path.join(tmp, "read.trace")
    write(p, [(0, s, "persistent"), (1, s, "persistent")],
          [(c, ["r:0"]), (c, ["r:1"])])
    for link in ("pcie3", "c2c"):
        rin = lp_bound.LINKS[link][0]
        want = 2 * c + 2 * (s / 3) / rin
        r = lp(p, C, link)
        got = r["ns"]
        check(close(got, want), "two chunks read in turn over %s: %.0f ns, "
              "by hand %.0f" % (link, got, want))
        # its schedule, step by step (--show): the windows add up to the
        # iteration and the copies to its bytes; each step starts with
        # the chunk it reads whole and two thirds of the other, and the
        # third that left comes in after the compute, none during it
        w = r["steps"]
        check(len(w) == 2 and close(sum(x["ns"] for x in w), got) and
              close(sum(x["in_during"] + x["in_after"] for x in w),
                    r["bytes_h2d"]) and
              close(sum(x["out_during"] + x["out_after"] for x in w),
                    r["bytes_d2h"]) and
              all(close(x["ns"], c + (s / 3) / rin) for x in w),
              "  its steps add up: %s" % ["%.0f ns" % x["ns"] for x in w])
        check(all(close(x["on_device"].get(str(t), 0.0), 1.0) and
                  close(x["on_device"].get(str(1 - t), 0.0), 2 / 3) and
                  x["in_during"] < 1e-3 and close(x["in_after"], s / 3)
                  for t, x in enumerate(w)) and
              sorted(r["large"]) == ["0", "1"],
              "  on the device at each step's start: %s"
              % [x["on_device"] for x in w])
    # Kept whole, neither fits beside the other (1.2 C): each comes in
    # whole after the step before its use has computed.
    for link in ("pcie3", "c2c"):
        rin = lp_bound.LINKS[link][0]
        want = 2 * c + 2 * s / rin
        chunks, steps = lp_bound.read_trace(p)
        r = lp_bound.solve(lp_bound.build(chunks, steps), steps, C, link,
                           "time", whole=True, limit=60)
        check(r["optimal"] and close(r["ns"], want) and
              close(r["proved_ns"], want),
              "the same kept whole over %s: %.0f ns (proved %.0f), by hand "
              "%.0f" % (link, r["ns"], r["proved_ns"], want))
    # The same chunks written in turn: a third of each goes home after its
    # step and a third of the other comes in, both ways at once; over pcie5
    # the two together move at 87 GB/s, not 55 + 53.
    p = os.path.join(tmp, "write.trace")
    write(p, [(0, s, "persistent"), (1, s, "persistent")],
          [(c, ["rw:0"]), (c, ["rw:1"])])
    for link in ("pcie3", "pcie5"):
        rin, rout, both = lp_bound.LINKS[link]
        wait = max(s / 3 / rin, s / 3 / rout)
        if both > 0:
            wait = max(wait, 2 * s / 3 / both)
        want = 2 * c + 2 * wait
        r = lp(p, C, link)
        check(close(r["ns"], want), "two chunks written in turn over %s: "
              "%.0f ns, by hand %.0f" % (link, r["ns"], want))
        # at least a third of each goes home each iteration (the time
        # does not care if more does)
        check(r["bytes_d2h"] >= 2 * s / 3 * (1 - 1e-6),
              "  and %.0f bytes home, at least %.0f by hand"
              % (r["bytes_d2h"], 2 * s / 3))
    # Everything fits: the compute alone, nothing moved.
    p = os.path.join(tmp, "fits.trace")
    write(p, [(0, 1000, "persistent"), (1, 2000, "transient")],
          [(5000, ["w:1", "r:0"]), (7000, ["r:1", "rw:0"])])
    r = lp(p, 10**6, "pcie3")
    check(close(r["ns"], 12000) and r["bytes_h2d"] < 1e-3,
          "a workload that fits: %.1f ns, %.3g bytes in" % (r["ns"],
                                                           r["bytes_h2d"]))
    # A step larger than the capacity has no answer.
    check(lp(p, 2500, "pcie3") is None,
          "a step over the capacity is said to be so")


def shown(tmp):
    """--show prints a line a step and --json keeps them."""
    tool = os.path.join(HERE, "..", "bench", "workloads", "lp_bound.py")
    out = os.path.join(tmp, "show.json")
    p = subprocess.run([sys.executable, tool,
                        os.path.join(tmp, "read.trace"), "1GB", "--links",
                        "pcie3", "--show", "--json", out],
                       capture_output=True, text=True)
    rows = json.load(open(out)) if p.returncode == 0 else []
    lines = [l for l in p.stdout.splitlines() if l[:4].strip().isdigit()]
    check(p.returncode == 0 and len(rows) == 1 and
          len(rows[0].get("steps", [])) == 2 and len(lines) == 2 and
          "r:0" in lines[0] and "1=0.67" in lines[0] and
          "r:1" in lines[1] and "0=0.67" in lines[1],
          "lp_bound.py --show: exit %d, %s" % (p.returncode,
                                               lines or p.stderr.strip()))


def bad_input(tmp):
    tool = os.path.join(HERE, "..", "bench", "workloads", "lp_bound.py")
    good = os.path.join(tmp, "read.trace")
    bad = os.path.join(tmp, "bad.trace")
    with open(bad, "w") as f:
        f.write("lms-trace 1\nchunk 0 4096 a persistent\nstep 10 s r:7\n")
    # (arguments, what the message names, whether it says what is accepted)
    for args, want, accepted in (
            ([good, "0"], "capacity '0'", True),
            ([good, "-5GiB"], "capacity '-5GiB'", True),
            ([good, "4furlongs"], "capacity '4furlongs'", True),
            ([good, "1GiB", "--links", "pcie9"], "'pcie9'", True),
            ([good, "1GiB", "--whole", "--time-limit", "0"],
             "--time-limit: '0'", True),
            ([good, "1GiB", "--whole", "--time-limit", "soon"],
             "--time-limit: 'soon'", True),
            ([bad, "1GiB"], "bad.trace:3", False),
            ([os.path.join(tmp, "none.trace"), "1GiB"], "none.trace", False),
            (["--against", bad, good], "not a sweep", False)):
        p = subprocess.run([sys.executable, tool] + args,
                           capture_output=True, text=True)
        check(p.returncode == 2 and want in p.stderr and
              (not accepted or "accepted" in p.stderr),
              "lp_bound.py %s: exit %d, %s" % (" ".join(args), p.returncode,
                                               p.stderr.strip()))


def against_sim(lms, tmp):
    gen = os.path.join(HERE, "..", "bench", "workloads", "gen_traces.py")
    subprocess.run([sys.executable, gen, tmp], check=True,
                   stdout=subprocess.DEVNULL)
    for name in ("dlrm", "vgg16", "stream", "llama-decode"):
        path = os.path.join(tmp, name + ".trace")
        chunks, steps = lp_bound.read_trace(path)
        model = lp_bound.build(chunks, steps)
        total = sum(sz for sz, _ in chunks.values())
        compute = sum(ns for ns, _ in steps)
        for over in (2, 4):
            cap = total // over
            for link in ("pcie3", "pcie5"):
                r = lp_bound.solve(model, steps, cap, link, "time")
                if r is None:
                    continue  # its largest step does not fit
                runs = []
                for extra in ([], ["--piece-size", "32MiB"]):
                    out = subprocess.run(
                        [lms, "--gpu-limit", "%dB" % cap] + extra +
                        ["sim", path, "--links", link, "--policies",
                         "schedule,lru", "--json", "-", "--quiet"],
                        check=True, capture_output=True, text=True).stdout
                    for row in json.loads(out)["runs"]:
                        runs.append(("%s%s" % (row["policy"],
                                               " pieces" if extra else ""),
                                     row["iteration_ns"]))
                least = min(ns for _, ns in runs)
                check(r["ns"] >= compute * (1 - 1e-9) and
                      r["ns"] <= least * (1 + 1e-6),
                      "%s at 1/%d over %s: the programme %.2f ms, compute "
                      "%.2f, runs %s" % (name, over, link, r["ns"] / 1e6,
                                         compute / 1e6,
                                         ", ".join("%s %.2f" % (p, ns / 1e6)
                                                   for p, ns in runs)))


def whole_against_sim(lms, tmp):
    """Kept whole, the 1.1B decoder's step at a quarter of its bytes over
    pcie5: the least time HiGHS proves in 30 s may not be beaten by a run
    of whole chunks, and is no less than the programme in part."""
    path = os.path.join(tmp, "tinyllama-decode.trace")
    chunks, steps = lp_bound.read_trace(path)
    model = lp_bound.build(chunks, steps)
    cap = sum(sz for sz, _ in chunks.values()) // 4
    part = lp_bound.solve(model, steps, cap, "pcie5", "time")
    whole = lp_bound.solve(model, steps, cap, "pcie5", "time", whole=True,
                           limit=30)
    out = subprocess.run(
        [lms, "--gpu-limit", "%dB" % cap, "sim", path, "--links", "pcie5",
         "--policies", "schedule,lru", "--json", "-", "--quiet"],
        check=True, capture_output=True, text=True).stdout
    runs = [(row["policy"], row["iteration_ns"])
            for row in json.loads(out)["runs"]]
    least = min(ns for _, ns in runs)
    check(part["ns"] <= whole["proved_ns"] * (1 + 1e-6) and
          whole["proved_ns"] <= whole["ns"] * (1 + 1e-6) and
          whole["proved_ns"] <= least * (1 + 1e-6),
          "tinyllama-decode at 1/4 over pcie5 kept whole: proved %.2f ms "
          "(found %.2f; in part %.2f), runs %s"
          % (whole["proved_ns"] / 1e6, whole["ns"] / 1e6, part["ns"] / 1e6,
             ", ".join("%s %.2f" % (p, ns / 1e6) for p, ns in runs)))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: lp_bound_test.py LMS")
    with tempfile.TemporaryDirectory() as tmp:
        by_hand(tmp)
        shown(tmp)
        bad_input(tmp)
        against_sim(sys.argv[1], tmp)
        whole_against_sim(sys.argv[1], tmp)
    print("%d failed" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
