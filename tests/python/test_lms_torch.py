"""python/lms_torch.py against liblms_torch.so and the CUDA driver double,
with a stand-in for torch (the CI machine has no PyTorch).

Run by CTest with LMS_TORCH_LIB set and the double first on the library
path.  Each case runs in a fresh interpreter, as the library reads its
options once per process."""

import os
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.join(HERE, "..", "..", "python")

# A stand-in for torch: what lms_torch calls of it, recorded in `calls`.
STAND_IN = textwrap.dedent("""
    import types
    calls = []
    class Alloc:
        def __init__(self, path, m, f):
            calls.append(("alloc", path, m, f))
        def allocator(self):
            return ("raw", self)
    def change(a):
        calls.append(("change", a))
    cuda = types.SimpleNamespace(memory=types.SimpleNamespace(
        CUDAPluggableAllocator=Alloc, change_current_allocator=change))
""")

PRELUDE = textwrap.dedent("""
    import sys, types
    sys.path.insert(0, %r)
    torch = types.ModuleType("torch")
    exec(%r, torch.__dict__)
    calls = torch.calls
    sys.modules["torch"] = torch
    import lms_torch

    def raw_lib(**options):  # loaded, its malloc and free declared
        import ctypes
        lib = lms_torch.load(**options)
        lib.lms_torch_malloc.restype = ctypes.c_void_p
        lib.lms_torch_malloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int,
                                         ctypes.c_void_p]
        lib.lms_torch_free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t,
                                       ctypes.c_int, ctypes.c_void_p]
        return lib

    def refused(kind, call, *words):  # call() raises kind naming each word
        try:
            call()
        except kind as e:
            for w in words:
                assert w in str(e), e
            return
        raise AssertionError("no error")
""") % (PYDIR, STAND_IN)

CASES = {
    "install_names_the_library_and_both_functions": """
        a = lms_torch.install(gpu_limit="64MiB")
        import os
        assert calls[0] == ("alloc", os.environ["LMS_TORCH_LIB"],
                            "lms_torch_malloc", "lms_torch_free"), calls
        assert calls[1] == ("change", a), calls
        assert lms_torch.install() is a and len(calls) == 2
        s = lms_torch.stats()
        assert s["limit"] == 64 << 20 and s["allocs"] == 0, s
    """,
    "stats_count_allocations_made_through_the_library": """
        lib = raw_lib(gpu_limit="4MiB")
        ps = [lib.lms_torch_malloc(3 << 20, 0, None) for _ in range(2)]
        s = lms_torch.stats()
        assert s["allocs"] == 2 and s["managed_allocs"] == 1, s
        assert s["device_live"] == 3 << 20, s
        lib.lms_torch_free(ps[0], 3 << 20, 0, None)
        assert lms_torch.stats()["frees"] == 1
    """,
    "memory_stats_in_pytorchs_key_names": """
        lib = raw_lib(gpu_limit="4MiB")
        ps = [lib.lms_torch_malloc(3 << 20, 0, None) for _ in range(2)]
        m = lms_torch.memory_stats()
        assert m["allocated_bytes.all.current"] == 6 << 20, m
        assert m["reserved_bytes.all.current"] >= 6 << 20, m
        assert m["allocation.all.current"] == 2, m
        assert m["lms.managed_live"] == 3 << 20, m
        lib.lms_torch_free(ps[1], 3 << 20, 0, None)
        m = lms_torch.memory_stats()
        assert m["allocated_bytes.all.current"] == 3 << 20, m
        assert m["allocation.all.freed"] == 1, m
    """,
    "a_bad_value_raises_naming_the_variable": """
        refused(ValueError, lambda: lms_torch.load(gpu_limit="lots"),
                "LMS_GPU_LIMIT", "lots")
    """,
    "an_unknown_keyword_is_refused_with_the_accepted_ones": """
        refused(TypeError, lambda: lms_torch.option_env(gpu_limt="8GiB"),
                "gpu_limt", "gpu_limit")
        assert lms_torch.option_env(lms_frac=0.5, lms_kb=None) == \\
            {"LMS_FRAC": "0.5"}
    """,
    "pool_needs_a_pytorch_with_mempool_and_says_so": """
        torch.__version__ = "1.13.0"
        def enter_pool():
            with lms_torch.pool(gpu_limit="8MiB"):
                pass
        refused(RuntimeError, enter_pool, "PyTorch 2.5", "1.13.0", "install()")
        assert calls == [], calls
    """,
    "pool_routes_the_blocks_allocations_to_lms_only": """
        # PyTorch 2.5's MemPool and use_mem_pool, recorded.
        import contextlib
        class MemPool:
            def __init__(self, raw):
                calls.append(("pool", raw))
        @contextlib.contextmanager
        def use_mem_pool(p):
            calls.append(("enter", p))
            yield
            calls.append(("exit", p))
        torch.cuda.MemPool = MemPool
        torch.cuda.use_mem_pool = use_mem_pool
        import os
        with lms_torch.pool(gpu_limit="64MiB") as mp:
            assert [c[0] for c in calls] == ["alloc", "pool", "enter"], calls
            assert calls[0] == ("alloc", os.environ["LMS_TORCH_LIB"],
                                "lms_torch_malloc", "lms_torch_free"), calls
            assert calls[1][1][0] == "raw" and calls[2] == ("enter", mp)
        assert calls[-1] == ("exit", mp), calls
        # The whole program's allocator was left alone; a second block
        # takes a new pool over the same allocator; the options held.
        assert not any(c[0] == "change" for c in calls), calls
        with lms_torch.pool():
            pass
        assert [c[0] for c in calls].count("alloc") == 1, calls
        assert [c[0] for c in calls].count("pool") == 2, calls
        assert lms_torch.stats()["limit"] == 64 << 20
    """,
    "options_after_the_first_load_are_refused": """
        lms_torch.load(gpu_limit="8MiB")
        refused(RuntimeError, lambda: lms_torch.load(gpu_limit="16MiB"),
                "already loaded")
    """,
}


# python -m lms_torch: the stand-in as a torch package on PYTHONPATH, and a
# script that checks it runs as __main__ with its own arguments after lms
# became the allocator.
SCRIPT = textwrap.dedent("""
    import sys, torch
    assert __name__ == "__main__"
    assert sys.argv[1:] == ["--epochs", "2"], sys.argv
    assert [c[0] for c in torch.calls] == ["alloc", "change"], torch.calls
    print("script ran")
""")

RUN_CASES = {
    # (flags before the script, extra environment, exit status, output)
    "runs_the_script_with_lms_installed":
        (["--gpu-limit", "64MiB", "--stats"], {}, 0,
         ["script ran", '"limit": 67108864']),
    "lms_conf_sets_the_options":
        (["--stats"], {"LMS_CONF": "gpu_limit:32MiB,lms_frac:0.5"}, 0,
         ['"limit": 33554432']),
    "a_bad_option_value_is_refused_before_the_script":
        (["--gpu-limit", "lots"], {}, 2, ["LMS_GPU_LIMIT", "lots"]),
}


def run_cases(tmp):
    os.makedirs(os.path.join(tmp, "torch"))
    with open(os.path.join(tmp, "torch", "__init__.py"), "w") as f:
        f.write(STAND_IN)
    script = os.path.join(tmp, "train.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    failed = 0
    for name, (flags, env, status, wanted) in RUN_CASES.items():
        e = dict(os.environ, **env)
        e["PYTHONPATH"] = os.pathsep.join([tmp, PYDIR])
        r = subprocess.run([sys.executable, "-m", "lms_torch"] + flags +
                           [script, "--epochs", "2"], capture_output=True,
                           text=True, timeout=60, env=e)
        out = r.stdout + r.stderr
        ok = r.returncode == status and all(w in out for w in wanted)
        if status != 0:
            ok = ok and "script ran" not in out
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {name}")
        if not ok:
            print(f"exit {r.returncode}, wanted {status} and {wanted}:\n{out}")
    return failed


def main():
    import tempfile
    failed = 0
    for name, body in CASES.items():
        code = PRELUDE + textwrap.dedent(body)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                           text=True, timeout=60)
        ok = r.returncode == 0
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {name}")
        if not ok:
            print(r.stdout + r.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        failed += run_cases(tmp)
    total = len(CASES) + len(RUN_CASES)
    print(f"{total - failed} of {total} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
