#!/usr/bin/env python3
"""oversub_cupy.py - oversub.cu's experiment through CuPy.

Allocates --total MiB as --chunk MiB CuPy uint64 arrays, all kept alive, so
that CuPy's default memory pool has to grow to hold every one of them.
Word j of chunk k is ((k << 32) + j) * 0x9E3779B97F4A7C15 mod 2**64, the
same pattern as oversub.cu, so both print the same checksum.  Each chunk is
summed on the device; the sums are compared, chunk by chunk, with the same
computation done by NumPy on the host; chunk 0 is summed again at the end,
after every other chunk was touched.

    python3 oversub_cupy.py [--total MiB] [--chunk MiB]

Exit status: 0 all sums matched, 1 a sum differed, 2 CuPy ran out of device
memory (the message says how much was allocated), 64 bad arguments (argparse
would use 2, which is taken by out-of-memory here).
"""
import argparse
import sys
import time

import cupy
import numpy

GOLDEN = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1
MIB = 1 << 20
MAX_CHUNK_MIB = 32768  # j must fit in 32 bits
MAX_TOTAL_MIB = 1 << 20
HOST_STEP = 1 << 24  # words per NumPy slice: 128 MiB of temporaries


class Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(64)


def mib_arg(limit):
    def parse(text):
        try:
            v = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number of MiB: {text!r}")
        if not 1 <= v <= limit:
            raise argparse.ArgumentTypeError(f"{v} MiB is outside 1..{limit}")
        return v
    return parse


def parse_args():
    p = Parser(description="Allocate more than the GPU holds with CuPy and "
               "check every chunk's sum.")
    p.add_argument("--total", type=mib_arg(MAX_TOTAL_MIB), default=12288,
                   metavar="MiB", help="memory to allocate in all (default 12288)")
    p.add_argument("--chunk", type=mib_arg(MAX_CHUNK_MIB), default=256,
                   metavar="MiB", help="size of each array (default 256)")
    a = p.parse_args()
    if a.chunk > a.total:
        p.error("--chunk must not exceed --total")
    return a


def chunk_sizes(total, chunk):
    n = (total + chunk - 1) // chunk
    return [chunk if k + 1 < n else total - k * chunk for k in range(n)]


def fill(k, words):
    """Chunk k on the device, built in place so that no temporary of the
    chunk's size is taken from the pool."""
    a = cupy.arange(words, dtype=cupy.uint64)
    a += numpy.uint64(k << 32)
    a *= numpy.uint64(GOLDEN)
    return a


def host_sum(k, words):
    s = 0
    for lo in range(0, words, HOST_STEP):
        x = numpy.arange(lo, min(lo + HOST_STEP, words), dtype=numpy.uint64)
        x += numpy.uint64(k << 32)
        x *= numpy.uint64(GOLDEN)
        s = (s + int(x.sum(dtype=numpy.uint64))) & MASK
    return s


def main():
    a = parse_args()
    free_b, total_b = cupy.cuda.runtime.memGetInfo()
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    print(f"oversub_cupy: {name}: cudaMemGetInfo free {free_b >> 20} MiB "
          f"of {total_b >> 20} MiB")
    pool = cupy.get_default_memory_pool()
    sizes = chunk_sizes(a.total, a.chunk)
    arrays = []
    done = 0
    t0 = time.monotonic()
    for k, mib in enumerate(sizes):
        try:
            arrays.append(fill(k, mib * MIB // 8))
            cupy.cuda.Device().synchronize()
        except cupy.cuda.memory.OutOfMemoryError as e:
            print(f"oversub_cupy: allocation of chunk {k} ({mib} MiB, {done} MiB "
                  f"allocated so far, pool holds {pool.total_bytes() >> 20} MiB) "
                  f"failed: OutOfMemoryError: {e}")
            return 2
        done += mib
    t_fill = time.monotonic() - t0
    print(f"oversub_cupy: allocated and filled {len(sizes)} chunks in "
          f"{t_fill:.3f} s; pool holds {pool.total_bytes() >> 20} MiB")

    t0 = time.monotonic()
    sums = cupy.stack([x.sum(dtype=cupy.uint64) for x in arrays])
    total_dev = int(sums.sum(dtype=cupy.uint64))
    got = [int(v) for v in cupy.asnumpy(sums)]
    print(f"oversub_cupy: summed {len(sizes)} chunks in "
          f"{time.monotonic() - t0:.3f} s")

    ok = True
    want_total = 0
    want = []
    for k, mib in enumerate(sizes):
        w = host_sum(k, mib * MIB // 8)
        want.append(w)
        want_total = (want_total + w) & MASK
        if got[k] != w:
            ok = False
            print(f"oversub_cupy: first pass: chunk {k}: sum 0x{got[k]:016x}, "
                  f"expected 0x{w:016x}")
    verdict = "OK" if ok and total_dev == want_total else \
        f"expected 0x{want_total:016x} FAIL"
    print(f"oversub_cupy: {a.total} MiB in {len(sizes)} chunks of {a.chunk} MiB: "
          f"checksum 0x{total_dev:016x} {verdict}")

    again = int(arrays[0].sum(dtype=cupy.uint64))
    ok0 = again == want[0]
    print(f"oversub_cupy: chunk 0 re-read after all others: checksum "
          f"0x{again:016x} {'OK' if ok0 else 'FAIL, expected 0x%016x' % want[0]}")
    return 0 if ok and ok0 and total_dev == want_total else 1


if __name__ == "__main__":
    sys.exit(main())
