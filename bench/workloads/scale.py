#!/usr/bin/env python3
"""How `lms sim`'s cost grows with the references of an iteration.

    bench/workloads/scale.py LMS [REFS,...]   (default 12500,25000,50000,100000)

For each size it writes a trace of that many references per iteration: a
stack of layers whose steps each read a weight and the previous
activation and write the next, forward then backward (a quarter of the
chunks are weights, live throughout; the rest are activations), with
sizes from 64 KiB to 4 MiB.  It runs `lms sim TRACE --policies schedule
--links pcie3 --iterations 3` at half the trace's bytes and prints
seconds per iteration, peak memory of the process, and the growth
exponent between sizes (1.0 is linear; n log n shows as slightly above).
"""
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time


def write_trace(path, refs):
    rng = random.Random(refs)
    layers = max(1, refs // 8)  # forward 3 refs + backward 5 refs a layer
    with open(path, "w") as f:
        f.write(f"lms-trace 1\nworkload scale-{refs}\n")
        sizes = [rng.choice((64, 256, 1024, 4096)) * 1024 for _ in range(layers)]
        for i in range(layers):
            f.write(f"chunk {2 * i} {sizes[i]} w{i} persistent\n")
            f.write(f"chunk {2 * i + 1} {sizes[i]} a{i} transient\n")
        g = 2 * layers
        f.write(f"chunk {g} 1048576 input persistent\n")
        # A step of its own shape begins the iteration, as a batch being
        # loaded does, so that the planner learns the whole iteration as
        # the period (a layer's step recurs in other layers' shapes).
        f.write(f"step 20000 load w:{g}\n")
        prev = g
        for i in range(layers):
            f.write(f"step 20000 f{i} r:{prev} r:{2 * i} w:{2 * i + 1}\n")
            prev = 2 * i + 1
        for i in reversed(range(layers)):
            back = g if i == 0 else 2 * i - 1
            f.write(f"step 40000 b{i} r:{2 * i + 1} r:{back} rw:{2 * i}\n")
        total = sum(sizes) * 2 + 1048576
    return total


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    lms = sys.argv[1]
    sizes = [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else
                              "12500,25000,50000,100000").split(",")]
    print(f"{'refs/iter':>10} {'chunks':>8} {'s/iter':>8} {'peak MiB':>9} "
          f"{'growth':>7}")
    prev = None
    with tempfile.TemporaryDirectory() as d:
        for refs in sizes:
            path = os.path.join(d, f"s{refs}.trace")
            total = write_trace(path, refs)
            cap = total // 2
            t0 = time.monotonic()
            p = subprocess.Popen([lms, "sim", path, "--capacities", f"{cap}B",
                                  "--links", "pcie3", "--policies", "schedule",
                                  "--iterations", "3"],
                                 stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
            _, err = p.communicate()
            wall = time.monotonic() - t0
            ru = resource.getrusage(resource.RUSAGE_CHILDREN)
            if p.returncode != 0:
                sys.exit(f"scale: lms sim failed at {refs}: {err.strip()}")
            # The in-memory run plus three iterations of the policy run.
            per_iter = wall / 6
            growth = ""
            if prev is not None:
                growth = (f"{math.log(per_iter / prev[1]) / math.log(refs / prev[0]):7.2f}")
            print(f"{refs:10d} {refs // 4:8d} {per_iter:8.2f} "
                  f"{ru.ru_maxrss / 1024:9.1f} {growth:>7}", flush=True)
            prev = (refs, per_iter)


if __name__ == "__main__":
    main()
