#!/usr/bin/env python3
"""check_trace_events.py REPORT_DIR - the Chrome traces `lms report` wrote
(timeline-LINK.json) hold to the Trace Event Format (the JSON Object form:
"traceEvents", each event with name, ph, pid, tid; complete events "X"
with ts and a dur >= 0 in microseconds; metadata events "M" naming the
process and threads) and to the run: on each thread (an engine, which runs
one piece of work at a time) the events do not overlap, the kernels' time
adds up to the iteration's compute and the copies' bytes to its bytes
each way, as report.json gives them.  Prints one line per trace; exits 1
on the first failure with what was wrong."""

import json
import os
import sys


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def check(path, row):
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail(f"{path}: no traceEvents list")
    events = doc["traceEvents"]
    names = {}
    per_tid = {}
    for i, e in enumerate(events):
        for key, kind in (("name", str), ("ph", str), ("pid", int), ("tid", int)):
            if not isinstance(e.get(key), kind):
                fail(f"{path}: event {i} has no {key} ({kind.__name__}): {e}")
        if e["ph"] == "M":
            if e["name"] not in ("process_name", "thread_name", "thread_sort_index"):
                fail(f"{path}: event {i}: unknown metadata {e['name']}")
            if e["name"] == "thread_name":
                names[e["tid"]] = e["args"]["name"]
            continue
        if e["ph"] != "X":
            fail(f"{path}: event {i}: phase {e['ph']}, only X and M expected")
        for key in ("ts", "dur"):
            if not isinstance(e.get(key), (int, float)) or e[key] < 0:
                fail(f"{path}: event {i}: {key} missing or negative: {e}")
        if abs(e["dur"] * 1e3 - e["args"]["dur_ns"]) > 1:
            fail(f"{path}: event {i}: dur {e['dur']} us is not {e['args']['dur_ns']} ns")
        per_tid.setdefault(e["tid"], []).append(e)
    if set(per_tid) - set(names):
        fail(f"{path}: threads without a name: {set(per_tid) - set(names)}")
    for tid, es in per_tid.items():
        es.sort(key=lambda e: e["args"]["start_ns"])
        for a, b in zip(es, es[1:]):
            if a["args"]["start_ns"] + a["args"]["dur_ns"] > b["args"]["start_ns"]:
                fail(f"{path}: on {names[tid]} '{a['name']}' overlaps '{b['name']}'")
    cat = {}
    for es in per_tid.values():
        for e in es:
            c = cat.setdefault(e["cat"], [0, 0])
            c[0] += e["args"]["dur_ns"]
            c[1] += e["args"]["bytes"]
    want = {"compute": ("dur", row["compute_ns"]), "h2d": ("bytes", row["bytes_h2d"]),
            "d2h": ("bytes", row["bytes_d2h"])}
    for c, (what, value) in want.items():
        got = cat.get(c, [0, 0])[0 if what == "dur" else 1]
        if got != value:
            fail(f"{path}: the {c} events' {what} add up to {got}, the run's is {value}")
    print(f"ok   {path}: {sum(len(v) for v in per_tid.values())} events, "
          f"{len(per_tid)} engines, compute {cat['compute'][0]} ns, "
          f"{cat.get('h2d', [0, 0])[1]} B in, {cat.get('d2h', [0, 0])[1]} B out")


def main():
    d = sys.argv[1]
    with open(os.path.join(d, "report.json")) as f:
        rows = json.load(f)["timelines"]
    if not rows:
        fail(f"{d}/report.json: no timelines")
    for row in rows:
        check(os.path.join(d, row["trace"]), row)


if __name__ == "__main__":
    main()
