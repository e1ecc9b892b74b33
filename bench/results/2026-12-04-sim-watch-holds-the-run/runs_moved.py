import json, lzma, sys, statistics
def load(p):
    f = lzma.open(p) if p.endswith(".xz") else open(p)
    return {(r["workload"], r["over"], r["link"]): r for r in json.load(f)["rows"]}
a, b = load(sys.argv[1]), load(sys.argv[2])
ch = []
for k in a:
    if k not in b: continue
    x, y = a[k]["schedule"], b[k]["schedule"]
    r = y["iteration_ns"] / x["iteration_ns"]
    ch.append(r)
    if abs(r - 1) > 0.001:
        print(f"{k[0]:18} {k[1]:3.0f}x {k[2]:8} {x['iteration_ns']/1e6:9.1f} -> {y['iteration_ns']/1e6:9.1f} ({(r-1)*100:+.1f} %) lower x {x['iteration_ns']/x['lower_bound_ns']:.3f} -> {y['iteration_ns']/y['lower_bound_ns']:.3f}  in {x['bytes_h2d']/1e9:.2f} -> {y['bytes_h2d']/1e9:.2f} it {x['iterations']}{'' if x.get('settled',1) else '!'} -> {y['iterations']}{'' if y.get('settled',1) else '!'}")
import math
print("runs", len(ch), "faster", sum(r < 0.999 for r in ch), "slower", sum(r > 1.001 for r in ch), "geomean %.4f" % math.exp(sum(map(math.log, ch)) / len(ch)))
print("mean iterations %.1f -> %.1f" % (statistics.mean(a[k]["schedule"]["iterations"] for k in a), statistics.mean(b[k]["schedule"]["iterations"] for k in b)))
