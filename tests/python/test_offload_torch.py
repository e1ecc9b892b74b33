"""python/lms_offload.py with real PyTorch (Debian's CPU build), CPU
tensors standing for GPU ones and the simulated device for the GPU.

Each case runs in a fresh interpreter that has torch (this one, else
/usr/bin/python3) with GLIBC_TUNABLES set so that liblms.so (LMS_LIB) can
be loaded.  Without torch the whole test reports itself skipped (exit 77)
with the reason."""

import os
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.normpath(os.path.join(HERE, "..", "..", "python"))
SKIP = 77

PRELUDE = textwrap.dedent("""
    import sys
    sys.path.insert(0, %r)
    import torch, lms_offload
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)

    def cnn():
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16),
            torch.nn.ReLU(), torch.nn.Conv2d(16, 16, 3, padding=1),
            torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Dropout(0.2),
            torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(),
            torch.nn.Linear(32 * 16, 10))

    class Tiny(torch.nn.Module):  # a small transformer: equal layers
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.emb = torch.nn.Embedding(100, 64)
            layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.1,
                                                     batch_first=True)
            self.enc = torch.nn.TransformerEncoder(layer, 3)
            self.head = torch.nn.Linear(64, 100)
        def forward(self, x):
            return self.head(self.enc(self.emb(x)))

    def data(kind):
        g = torch.Generator().manual_seed(1)
        if kind == "cnn":
            return (torch.randn(8, 3, 32, 32, generator=g),
                    torch.randint(0, 10, (8,), generator=g))
        x = torch.randint(0, 100, (4, 33), generator=g)
        return x[:, :-1], x[:, 1:]

    def train(model, kind, iters, off=None, each=None):
        x, y = data(kind)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        out = []
        for it in range(iters):
            torch.manual_seed(100 + it)  # the same dropout masks each run
            opt.zero_grad()
            if off is not None:
                off.__enter__()
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
            loss.backward()
            if off is not None:
                off.__exit__(None, None, None)
            out.append((loss.item(),
                        [p.grad.clone() for p in model.parameters()]))
            opt.step()
            if each is not None:
                each(it)
        return out

    def same(a, b):
        for (la, ga), (lb, gb) in zip(a, b):
            assert la == lb, (la, lb)
            assert len(ga) == len(gb)
            for x, y in zip(ga, gb):
                assert torch.equal(x, y), (x - y).abs().max()

    def total(off, key):
        return off.stats()[key]["total"]

    def offload(**kw):
        kw.setdefault("device", "sim")
        kw.setdefault("verify", True)
        return lms_offload.Offload(**kw)
""") % PYDIR

# Loss, every gradient and every saved tensor's bytes equal to the run
# without offload; nothing written back; dead tensors freed; from the
# second iteration on every offloaded tensor comes back by prefetch.
TRAIN_CHECKS = textwrap.dedent("""
    ref = train(build(), KIND, 4)
    off = offload(gpu_limit=LIMIT, lms_kb=0)
    snap = {}
    def each(it):
        s = off.stats()
        snap[it] = s
        assert s["chunks"]["current"] == 0, s["chunks"]
    got = train(build(), KIND, 4, off, each)
    same(ref, got)
    h = off.stats()["hooks"]
    assert h["offloaded"] > 0 and h["verified"] == h["unpacks"], h
    a, b = snap[2], snap[3]
    d = lambda k: b[k]["total"] - a[k]["total"]
    assert d("demand_misses") == 0, (d("demand_misses"), h)
    assert d("prefetch_hits") + d("prefetch_late") > 0
    assert b["swaps_out"]["total"] == 0
    assert b["bytes_d2h"]["total"] == h["offloaded_bytes"], (b, h)
    assert b["device_allocated"]["peak"] <= LIMIT_BYTES
    off.close()
""")

CASES = {
    "a_cnn_trains_equal_with_its_activations_offloaded":
        "build, KIND, LIMIT, LIMIT_BYTES = cnn, 'cnn', '2MiB', 2 << 20\n"
        + TRAIN_CHECKS,
    "a_transformer_trains_equal_with_its_activations_offloaded":
        "build, KIND, LIMIT, LIMIT_BYTES = Tiny, 'tiny', '1MiB', 1 << 20\n"
        + TRAIN_CHECKS,
    "without_a_window_every_unpack_is_a_demand_miss": """
        off = offload(gpu_limit="2MiB", lms_kb=0, prefetch_window="0")
        train(cnn(), "cnn", 3, off)
        s = off.stats()
        assert s["prefetch_hits"]["total"] == 0
        assert s["prefetches"]["total"] == 0
        assert s["demand_misses"]["total"] > 0
        off.close()
    """,
    "a_graph_freed_without_backward_brings_nothing_back": """
        off = offload(gpu_limit="2MiB", lms_kb=0)
        model, (x, y) = cnn(), data("cnn")
        with off:
            for _ in range(3):
                loss = model(x).sum()
                del loss
        s = off.stats()
        assert s["hooks"]["offloaded"] > 0
        assert s["bytes_h2d"]["total"] == 0, s["bytes_h2d"]
        assert s["chunks"]["current"] == 0, s["chunks"]
        off.close()
    """,
    "the_threshold_and_the_fill_level_keep_tensors_in_place": """
        off = offload(gpu_limit="2MiB", lms_kb=1 << 20)  # 1 GiB threshold
        same(train(cnn(), "cnn", 2), train(cnn(), "cnn", 2, off))
        h = off.stats()["hooks"]
        assert h["offloaded"] == 0 and h["kept"] > 0, h
        off.close()
        off = offload(gpu_limit="64MiB", lms_kb=0, lms_frac=1)
        train(cnn(), "cnn", 1, off)
        assert off.stats()["hooks"]["offloaded"] == 0
        off.close()
        off = offload(gpu_limit="2MiB", lms_kb=0, lms_frac=0.5)
        train(cnn(), "cnn", 1, off)
        h = off.stats()["hooks"]
        assert h["offloaded"] > 0 and h["kept"] > 0, h
        off.close()
    """,
    "parameters_are_never_offloaded": """
        off = offload(gpu_limit="2MiB", lms_kb=0)
        model = torch.nn.Sequential(torch.nn.Linear(256, 256),
                                    torch.nn.Linear(256, 256))
        x = torch.randn(64, 256)
        with off:
            model(x).pow(2).sum().backward()
        h = off.stats()["hooks"]
        # The first Linear saves its input; the second its input and its
        # weight, transposed (a view of a parameter), which stays; pow
        # saves its input.
        assert h["packs"] == 4 and h["offloaded"] == 3, h
        assert h["kept"] == 0 and h["shared"] == 0, h
        off.close()
    """,
    "the_run_is_written_as_a_trace_that_lms_sim_replays": """
        import os, subprocess, tempfile
        d = tempfile.mkdtemp()
        path = os.path.join(d, "cnn.trace")
        off = offload(gpu_limit="2MiB", lms_kb=0, trace=path)
        train(cnn(), "cnn", 3, off)
        off.close()
        text = open(path).read()
        assert text.count("\\nstep ") > 40, text[:400]
        lms = os.environ["LMSTEST_CLI"]
        r = subprocess.run([lms, "sim", path, "--gpu-limit", "2MiB",
                            "--links", "pcie3", "--policies", "schedule"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "schedule" in r.stdout, r.stdout
    """,
    "python_m_lms_offload_runs_a_script_unchanged": """
        import os, subprocess, tempfile
        script = os.path.join(tempfile.mkdtemp(), "train.py")
        open(script, "w").write(
            "import torch, lms_offload\\n"
            "m = torch.nn.Sequential(torch.nn.Linear(64, 64),\\n"
            "                        torch.nn.ReLU(), torch.nn.Linear(64, 1))\\n"
            "m(torch.randn(32, 64)).sum().backward()\\n"
            "print('offloaded', lms_offload._installed.stats()"
            "['hooks']['offloaded'])\\n")
        env = dict(os.environ, LMS_DEVICE="sim", LMS_KB="0",
                   LMS_GPU_LIMIT="64MiB")
        env.pop("GLIBC_TUNABLES")  # it sets it and starts Python again
        r = subprocess.run([sys.executable, "-m", "lms_offload", script],
                           capture_output=True, text=True, env=env,
                           cwd=%r)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "offloaded 2" in r.stdout, r.stdout + r.stderr
    """ % PYDIR,
    # Note [One lms per rank] (src/core/rank.h): two ranks of a DDP job
    # (gloo, CPU), each with its own lms on the simulated device under one
    # node budget; each rank's losses and gradients equal those of the
    # same job without lms, and each writes its own stats (LMS_STATS with
    # %r), which `lms report --ranks` puts in one table.
    "two_ddp_ranks_train_equal_each_with_its_own_lms": """
        import glob, json, os, subprocess, tempfile, textwrap
        d = tempfile.mkdtemp()
        script = os.path.join(d, "ddp.py")
        open(script, "w").write(textwrap.dedent(\'\'\'
            import os, sys, torch, torch.distributed as dist
            sys.path.insert(0, %r)
            out, mode = sys.argv[1], sys.argv[2]
            dist.init_process_group("gloo")
            rank = dist.get_rank()
            torch.use_deterministic_algorithms(True)
            torch.set_num_threads(1)
            torch.manual_seed(0)
            model = torch.nn.Sequential(
                torch.nn.Linear(64, 128), torch.nn.ReLU(),
                torch.nn.Linear(128, 128), torch.nn.ReLU(),
                torch.nn.Linear(128, 10))
            ddp = torch.nn.parallel.DistributedDataParallel(model)
            opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
            g = torch.Generator().manual_seed(1 + rank)
            x = torch.randn(32, 64, generator=g)
            y = torch.randint(0, 10, (32,), generator=g)
            off = None
            if mode == "lms":
                import lms_offload
                off = lms_offload.Offload(device="sim", gpu_limit="64KiB",
                                          lms_kb=0)
            res = []
            for it in range(3):
                opt.zero_grad()
                if off is not None:
                    off.__enter__()
                loss = torch.nn.functional.cross_entropy(ddp(x), y)
                loss.backward()
                if off is not None:
                    off.__exit__(None, None, None)
                res.append((loss.item(),
                            [p.grad.clone() for p in model.parameters()]))
                opt.step()
            if off is not None:
                assert off.stats()["hooks"]["offloaded"] > 0
                off.close()
            torch.save(res, os.path.join(out, "%%s-%%d.pt" %% (mode, rank)))
            dist.destroy_process_group()
        \'\'\'))
        # The ranks are started as torchrun starts them, with its variables
        # (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): Debian's
        # torchrun (PyTorch 1.13 under Python 3.11) fails in its own
        # launcher before any rank starts (Std.from_str returns None).
        import socket
        for mode in ("plain", "lms"):
            with socket.socket() as sk:
                sk.bind(("127.0.0.1", 0))
                port = str(sk.getsockname()[1])
            procs = []
            for rank in (0, 1):
                env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank),
                           WORLD_SIZE="2", LOCAL_WORLD_SIZE="2",
                           MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                           LMS_STATS=os.path.join(d, "stats-%%r.json"),
                           LMS_NODE_HOST_LIMIT="512MiB", LMS_LOG="error")
                if mode == "plain":
                    env.pop("LMS_STATS")
                procs.append(subprocess.Popen(
                    [sys.executable, script, d, mode], env=env,
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    text=True))
            for p in procs:
                out, _ = p.communicate(timeout=300)
                assert p.returncode == 0, mode + ": " + out
        for rank in (0, 1):
            a = torch.load(os.path.join(d, "plain-%%d.pt" %% rank))
            b = torch.load(os.path.join(d, "lms-%%d.pt" %% rank))
            same(a, b)
            st = json.load(open(os.path.join(d, "stats-%%d.json" %% rank)))
            assert st["bytes_d2h"]["total"] > 0, st
        assert sorted(os.path.basename(f) for f in
                      glob.glob(os.path.join(d, "stats-*.json"))) == \\
            ["stats-0.json", "stats-1.json"]
        # The job's ranks in one table (Note [A report per rank]).
        r = subprocess.run([os.environ["LMSTEST_CLI"], "report", "--ranks",
                            os.path.join(d, "stats-%%r.json"), "--out",
                            os.path.join(d, "ranks")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        assert r.returncode == 0, r.stdout
        rows = json.load(open(os.path.join(d, "ranks", "report.json")))["rows"]
        assert [x["rank"] for x in rows] == ["0", "1", "node"], rows
        for rank in (0, 1):
            st = json.load(open(os.path.join(d, "stats-%%d.json" %% rank)))
            assert rows[rank]["bytes_d2h"] == st["bytes_d2h"]["total"], rows
        assert rows[2]["bytes_d2h"] == rows[0]["bytes_d2h"] + rows[1]["bytes_d2h"]
    """ % PYDIR,
    "bad_options_are_refused_by_name": """
        try:
            offload(gpu_limit="lots")
        except ValueError as e:
            assert "gpu_limit" in str(e) and "lots" in str(e), e
        else:
            raise AssertionError("no error")
        try:
            offload(lms_frac=1.5)
        except ValueError as e:
            assert "lms_frac" in str(e), e
        else:
            raise AssertionError("no error")
        try:
            offload(gpu_limt="1GiB")
        except TypeError as e:
            assert "gpu_limt" in str(e) and "gpu_limit" in str(e), e
        else:
            raise AssertionError("no error")
    """,
}


def interpreter():
    """A Python that can import torch, or None and the reason."""
    tried = []
    for exe in (sys.executable, "/usr/bin/python3"):
        if not os.path.exists(exe) or exe in tried:
            continue
        tried.append(exe)
        r = subprocess.run([exe, "-c", "import torch"], capture_output=True,
                           text=True)
        if r.returncode == 0:
            return exe, None
    return None, ("no Python with PyTorch (tried %s); scripts/bootstrap.sh "
                  "installs python3-torch" % ", ".join(tried))


def main():
    exe, why = interpreter()
    if exe is None:
        print("SKIP: " + why)
        return SKIP
    if os.environ.get("LMS_SANITIZED"):
        print("SKIP: PyTorch does not run with the sanitizer runtime "
              "preloaded; the plain build runs these cases")
        return SKIP
    env = dict(os.environ)
    env["GLIBC_TUNABLES"] = "glibc.rtld.optional_static_tls=65536"
    failed = 0
    for name, body in CASES.items():
        code = PRELUDE + textwrap.dedent(body)
        r = subprocess.run([exe, "-c", code], capture_output=True, text=True,
                           timeout=600, env=env)
        ok = r.returncode == 0
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {name}")
        if not ok:
            print(r.stdout + r.stderr)
    print(f"{len(CASES) - failed} of {len(CASES)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
