#!/usr/bin/env python3
"""timeline_gaps.py DIR [FIRST:END]: from the timelines `lms report
--steps A:64 --out DIR/A` wrote (one directory per window of steps, each
holding timeline-LINK.json), each step of FIRST..END-1 with the wait
before its compute and how long each way of the link was busy from the
end of the step before to the end of this one; then the link in's idle
spans, longest first, with the step running or awaited when each began.
The iteration is taken as a cycle: what a copy runs past the last step's
end it runs at the start of the next iteration, counted at the start of
this one (the timelines hold the copies of their own steps only)."""
import bisect, glob, json, sys

ev = {}
for f in glob.glob(sys.argv[1] + "/*/timeline-*.json"):
    for e in json.load(open(f))["traceEvents"]:
        if e.get("ph") != "X":
            continue
        a = e["args"]
        ev[(e["cat"], a["start_ns"], a["step"], e["name"])] = e
E = sorted(ev.values(), key=lambda e: e["args"]["start_ns"])
comp = [e for e in E if e["cat"] == "compute"]
span = lambda e: (e["args"]["start_ns"], e["args"]["start_ns"] + e["args"]["dur_ns"])
h2d = sorted(span(e) for e in E if e["cat"] == "h2d")
d2h = sorted(span(e) for e in E if e["cat"] == "d2h")


end = max(span(c)[1] for c in comp)


def wrap(lst):
    out = []
    for a, b in lst:
        if a < end:
            out.append((a, min(b, end)))
        if b > end:
            out.append((max(a, end) - end, b - end))
    return sorted(out)


h2d, d2h = wrap(h2d), wrap(d2h)


def busy(lst, a, b):
    return sum(max(0, min(b, y) - max(a, x)) for x, y in lst)


print("iteration %.1f ms; link in busy %.1f ms, out %.1f ms" %
      (end / 1e6, busy(h2d, 0, end) / 1e6, busy(d2h, 0, end) / 1e6))
first, last = (map(int, sys.argv[2].split(":")) if len(sys.argv) > 2
               else (0, 1 << 30))
prev = 0
for c in comp:
    st, fin = span(c)
    s = c["args"]["step"]
    if first <= s < last:
        print("step %4d %-20s start %8.1f wait %7.2f in %7.2f out %7.2f "
              "compute %6.2f" % (s, c["name"], st / 1e6, (st - prev) / 1e6,
                                 busy(h2d, prev, fin) / 1e6,
                                 busy(d2h, prev, fin) / 1e6, (fin - st) / 1e6))
    prev = fin
idle, t = [], 0
for a, b in h2d:  # overlapping spans: the wrapped ones start at 0
    if a > t:
        idle.append((t, a))
    t = max(t, b)
if t < end:
    idle.append((t, end))
starts = [span(c)[0] for c in comp]
print("link in idle %.1f ms in all" % (sum(b - a for a, b in idle) / 1e6))
for a, b in sorted(idle, key=lambda x: x[0] - x[1])[:12]:
    i = max(0, bisect.bisect_right(starts, a) - 1)
    print("  idle %7.2f ms from %8.1f ms, at step %d %s" %
          ((b - a) / 1e6, a / 1e6, comp[i]["args"]["step"], comp[i]["name"]))
