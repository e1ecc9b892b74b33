#!/usr/bin/env python3
"""The model of Note [A plan searched by its time] against the trial.

    model_calibration.py LMS SWEEP.json TRACES_DIR OUT.json

LMS is an `lms` built with model-calibration.patch (it prints, under
LMS_CAL_MODEL=1, the model's time of each plan it builds and each way's
time on trial).  For each run of SWEEP.json (a sweep.py --json), the
schedule policy is run again alone; of each two ways the trial timed more
than 0.5 % apart, it counts those the model puts in the same order; and
whether the model's fastest of them was within 1 % of the trial's fastest.
"""
import json, os, re, subprocess, sys
from itertools import combinations

lms, sweep, traces, out_path = sys.argv[1:5]
runs = [(r["workload"], r["over"], r["capacity"], r["link"])
        for r in json.load(open(sweep))["rows"]]
env = dict(os.environ, LMS_CAL_MODEL="1")
dense_bits = {0: 0, 1: 1, 2: 17, 3: 33, 4: 65}
out = []
for w, o, cap, link in runs:
    p = subprocess.run([lms, "sim", os.path.join(traces, w + ".trace"),
                        "--links", link, "--policies", "schedule",
                        "--capacities", str(cap), "--quiet"],
                       capture_output=True, text=True, env=env)
    model, trial = {}, {}
    for line in p.stderr.splitlines():
        m = re.match(r"MODEL s(\d) o(\d) d(\d) c(\d): ([0-9.]+)", line)
        if m:
            s_, o_, d_, c_ = map(int, m.groups()[:4])
            k = dense_bits[d_] if d_ else 0
            if d_ != 4:
                k |= (2 if s_ else 0) | (4 if o_ else 0) | (8 if c_ else 0)
            model[k] = float(m.group(5))  # the last build of each kind
        m = re.match(r"TRIAL (\d+) ([0-9.]+)", line)
        if m:
            trial[int(m.group(1))] = float(m.group(2))
    out.append(dict(workload=w, over=o, link=link, model=model, trial=trial))
json.dump(out, open(out_path, "w"))
pairs = same = hit = n = 0
ratios = []
for r in out:
    t, m = r["trial"], r["model"]
    ks = [k for k in t if m.get(k, 0) > 0]
    if len(ks) < 2:
        continue
    n += 1
    for a, b in combinations(ks, 2):
        dt, dm = t[a] - t[b], m[a] - m[b]
        if abs(dt) < 0.005 * max(t[a], t[b]):
            continue
        pairs += 1
        same += dt * dm > 0
    fastest = min(ks, key=lambda k: t[k])
    chosen = min(ks, key=lambda k: m[k])
    hit += t[chosen] <= t[fastest] * 1.01
    ratios += [m[k] / t[k] for k in ks]
ratios.sort()
q = lambda f: ratios[int(f * (len(ratios) - 1))]
print("runs %d, pairs %d, in the trial's order %.3f, the model's fastest "
      "within 1 %% of the trial's in %d; model / trial: median %.3f, "
      "tenth %.3f, ninetieth %.3f" % (n, pairs, same / max(1, pairs), hit,
                                      q(0.5), q(0.1), q(0.9)))
