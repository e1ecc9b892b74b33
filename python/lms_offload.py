"""lms_offload: PyTorch's saved activations through lms's swap engine.

Autograd hands every tensor it saves for backward to a pack hook and asks
for it back through an unpack hook.  With offload installed, a saved
tensor at or above the -lms threshold, once device demand passes -lms_frac
of the limit, is copied to lms's pinned host pool on lms's own copy stream
(lms_alloc_copy), and its memory goes back to PyTorch once the copy has
read it.  At unpack it comes back as a tensor over lms's device copy
(lms_acquire_dlpack): prefetched ahead of its use by the schedule lms
learns from the pack and unpack order, or brought in at once and counted
as a demand miss.  The tensor's memory is released when PyTorch drops it,
and the saved bytes are freed with autograd's handle, so dead bytes never
travel back.  Python only glues: copies, streams, the window, victims,
stats and traces are the C engine's (liblms.so).

    import lms_offload
    off = lms_offload.install(gpu_limit="8GiB", lms_kb=1024)
    ... train as usual ...
    print(off.stats())
    off.close()

liblms.so links Debian's jemalloc, whose initial-exec TLS cannot be
loaded late by dlopen unless the process starts with room for it:
GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536, which
`python -m lms_offload script.py` sets for you.
"""

import ctypes
import hashlib
import os
import sys
import time
import weakref

TUNABLE = "glibc.rtld.optional_static_tls=65536"
_DLTENSOR = b"dltensor"  # lives as long as the module: capsules name it

_OPTIONS = {
    # keyword: (lms option, what is accepted)
    "gpu_limit": ("gpu-limit", "a size with a unit, e.g. '8GiB'"),
    "lms_kb": ("lms", "whole KB, -1 for off"),
    "lms_frac": ("lms_frac", "a fraction in 0..1"),
    "prefetch_window": ("prefetch-window", "STEPS[,BYTES or PERCENT%]"),
    "device": ("device", "sim, cuda or auto"),
    "link": ("link", "a link name or GB/s (simulated device)"),
    "policy": ("policy", "schedule, lru or ondemand"),
    "trace": ("trace", "a path: the run as an lms trace"),
    "stats": ("stats", "a path: the engine's stats as JSON"),
    "host_limit": ("host-limit", "a size with a unit"),
    "log": ("log", "a level, e.g. 'info'"),
}

MAX_DIMS = 16


class _Desc(ctypes.Structure):
    _fields_ = [("ndim", ctypes.c_int),
                ("shape", ctypes.c_int64 * MAX_DIMS),
                ("strides", ctypes.c_int64 * MAX_DIMS),
                ("byte_offset", ctypes.c_uint64),
                ("dtype_code", ctypes.c_uint8),
                ("dtype_bits", ctypes.c_uint8),
                ("device_id", ctypes.c_int)]


def find_library():
    """The path of liblms.so: LMS_LIB; else the one pip installed beside
    this file (lms.libs/, python/pyproject.toml); else the source tree's
    build (../build/lib beside this file); else the loader's search
    path."""
    env = os.environ.get("LMS_LIB")
    if env:
        if not os.path.exists(env):
            raise FileNotFoundError(f"LMS_LIB={env}: no such file")
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "lms.libs", "liblms.so.0"),
                 os.path.join(here, "..", "build", "lib", "liblms.so")):
        if os.path.exists(cand):
            return os.path.normpath(cand)
    return "liblms.so"


_lib = None


def load(path=None):
    """Loads liblms.so and declares the functions used here."""
    global _lib
    if _lib is not None:
        return _lib
    path = path or find_library()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        if "static TLS" in str(e):
            raise RuntimeError(
                f"lms_offload: {path} needs room for jemalloc's TLS, which "
                "only a process started with GLIBC_TUNABLES="
                f"{TUNABLE} has; run `python -m lms_offload script.py` or "
                "set that variable before Python starts") from e
        raise
    P, S, U64 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64
    sigs = {
        "lms_options_create": [ctypes.POINTER(P)],
        "lms_options_set": [P, ctypes.c_char_p, ctypes.c_char_p],
        "lms_options_load_env": [P],
        "lms_options_destroy": [P],
        "lms_ctx_create": [P, ctypes.POINTER(P)],
        "lms_ctx_destroy": [P],
        "lms_stream_create": [P, ctypes.POINTER(P)],
        "lms_step_begin": [P],
        "lms_compute": [P, P, U64],
        "lms_trace_compute": [P, U64],
        "lms_alloc_copy": [P, P, S, P, ctypes.POINTER(P)],
        "lms_chunk_query": [P, P],
        "lms_free_when_released": [P, P],
        "lms_acquire_dlpack": [P, P, P, ctypes.POINTER(_Desc),
                               ctypes.POINTER(P)],
        "lms_stats_get": [P, P],
        "lms_stats_format_json": [P, ctypes.c_char_p, S],
        "lms_offload_wanted": [P, U64, U64, U64],
    }
    for name, args in sigs.items():
        getattr(lib, name).argtypes = args
        getattr(lib, name).restype = ctypes.c_int
    lib.lms_options_error.argtypes = [P]
    lib.lms_options_error.restype = ctypes.c_char_p
    lib.lms_ctx_last_error.argtypes = [P]
    lib.lms_ctx_last_error.restype = ctypes.c_char_p
    lib.lms_ctx_device_name.argtypes = [P]
    lib.lms_ctx_device_name.restype = ctypes.c_char_p
    lib.lms_stats_format_json.restype = ctypes.c_size_t
    _lib = lib
    return lib


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def _dl_dtype(torch, dtype):
    """DLPack's (code, bits) for a dtype; bool travels as uint8."""
    table = {torch.float16: (2, 16), torch.float32: (2, 32),
             torch.float64: (2, 64), torch.bfloat16: (4, 16),
             torch.int8: (0, 8), torch.uint8: (1, 8), torch.int16: (0, 16),
             torch.int32: (0, 32), torch.int64: (0, 64),
             torch.bool: (1, 8), torch.complex64: (5, 64),
             torch.complex128: (5, 128)}
    return table.get(dtype)


def _digest(t):
    return hashlib.blake2b(t.detach().contiguous().cpu().view(-1)
                           .view(__import__("torch").uint8).numpy()
                           .tobytes(), digest_size=16).digest()


class _Saved:
    """Autograd's handle to one offloaded tensor: its chunk and shape."""
    __slots__ = ("off", "chunk", "shape", "strides", "dtype", "nbytes",
                 "digest", "key", "__weakref__")

    def __del__(self):
        off = self.off
        if off.ctx:
            off._lib.lms_free_when_released(off.ctx, self.chunk)
            off.offloaded_live -= self.nbytes
            entry = off._dedup.get(self.key)
            if entry is not None and entry[0]() is None:
                del off._dedup[self.key]


class Offload:
    """One lms context and the saved-tensor hooks that feed it."""

    def __init__(self, lib_path=None, verify=False, compute_scale=1.0,
                 pending_bytes=1 << 30, **options):
        import torch
        self._torch = torch
        self._lib = lib = load(lib_path)
        self.verify = verify
        self.compute_scale = compute_scale
        self.pending_cap = pending_bytes
        self.ctx = None
        o = ctypes.c_void_p()
        if lib.lms_options_create(ctypes.byref(o)) != 0:
            raise MemoryError("lms_offload: lms_options_create failed")
        try:
            if lib.lms_options_load_env(o) != 0:
                raise ValueError(lib.lms_options_error(o).decode())
            for key, value in options.items():
                if key not in _OPTIONS:
                    known = ", ".join(sorted(_OPTIONS))
                    raise TypeError(f"lms_offload: unknown option {key!r}; "
                                    f"accepted: {known}")
                if value is None:
                    continue
                name = _OPTIONS[key][0]
                if lib.lms_options_set(o, name.encode(),
                                       str(value).encode()) != 0:
                    raise ValueError(
                        f"lms_offload: {key}={value!r}: "
                        f"{lib.lms_options_error(o).decode()}")
            ctx = ctypes.c_void_p()
            if lib.lms_ctx_create(o, ctypes.byref(ctx)) != 0:
                raise RuntimeError("lms_offload: no lms context (see stderr)")
        finally:
            lib.lms_options_destroy(o)
        self.ctx = ctx
        self.cuda = lib.lms_ctx_device_name(ctx) == b"cuda"
        self._sim_stream = None
        if not self.cuda:
            s = ctypes.c_void_p()
            self._check(lib.lms_stream_create(ctx, ctypes.byref(s)),
                        "lms_stream_create")
            self._sim_stream = s
        self._pending = []          # (weakref handle, source, bytes)
        self._pending_bytes = 0
        self._dedup = {}            # key -> (weakref handle, weakref source)
        self._last = time.perf_counter_ns()
        self.offloaded_live = 0     # bytes of live offloaded tensors
        self.kept_live = 0          # bytes of saved tensors left in place
        self.counts = dict(packs=0, offloaded=0, kept=0, shared=0,
                           unpacks=0, verified=0, offloaded_bytes=0)
        self._hooks = torch.autograd.graph.saved_tensors_hooks(
            self._pack, self._unpack)

    # -- plumbing --------------------------------------------------------
    def _check(self, st, what):
        if st != 0:
            msg = self._lib.lms_ctx_last_error(self.ctx).decode()
            raise RuntimeError(f"lms_offload: {what}: {msg}")

    def _stream(self):
        if self.cuda:
            return ctypes.c_void_p(
                self._torch.cuda.current_stream().cuda_stream)
        return self._sim_stream

    def _step(self):
        """A step boundary, with the time since the last one as the
        compute of the step that ends."""
        now = time.perf_counter_ns()
        ns = int((now - self._last) * self.compute_scale)
        self._last = now
        if self.cuda:
            self._lib.lms_trace_compute(self.ctx, ns)
        else:
            self._lib.lms_compute(self.ctx, self._sim_stream, ns)
        self._check(self._lib.lms_step_begin(self.ctx), "lms_step_begin")

    def _reap(self, wait=False):
        """Lets go of source tensors whose bytes have been copied.  A
        source whose handle autograd has dropped is let go at once: its
        bytes are dead, so whatever the copy reads no longer matters."""
        q = self._lib.lms_chunk_query
        while self._pending:
            ref, _t, nbytes = self._pending[0]
            h = ref()
            st = 0 if h is None else q(self.ctx, h.chunk)
            if st == 6 and (wait or self._pending_bytes > self.pending_cap):
                continue  # LMS_NOT_READY: the oldest copy is still running
            if st == 6:
                return
            self._check(st, "lms_chunk_query")
            self._pending.pop(0)
            self._pending_bytes -= nbytes

    def _demand(self):
        live = self.offloaded_live
        if self.cuda:
            return self._torch.cuda.memory_allocated() + live
        return self.kept_live + live

    def _keep(self, t, nbytes):
        self.counts["kept"] += 1
        if self.cuda:
            return t  # PyTorch's own count of allocated bytes has it
        self.kept_live += nbytes

        def gone(off=weakref.ref(self), n=nbytes):
            o = off()
            if o is not None:
                o.kept_live -= n
        weakref.finalize(t, gone)
        return t

    # -- the hooks -------------------------------------------------------
    def _offloadable(self, t):
        torch = self._torch
        if t.layout != torch.strided or _dl_dtype(torch, t.dtype) is None:
            return False
        if t.is_cuda != self.cuda or (not self.cuda and t.device.type != "cpu"):
            return False
        if isinstance(t, torch.nn.Parameter) or (t.is_leaf and t.requires_grad):
            return False  # parameters stay where the allocator put them
        base = t._base
        if base is not None and base.is_leaf and base.requires_grad:
            return False
        return t.numel() > 0 and all(s >= 0 for s in t.stride())

    def _pack(self, t):
        self.counts["packs"] += 1
        if not self._offloadable(t):
            return t
        span = 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
        nbytes = span * t.element_size()
        key = (t.data_ptr(), t.dtype, tuple(t.shape), t.stride(), t._version)
        hit = self._dedup.get(key)
        if hit is not None and hit[0]() is not None and hit[1]() is t:
            self.counts["shared"] += 1
            return hit[0]()
        if not self._lib.lms_offload_wanted(self.ctx, nbytes, self._demand(),
                                            0):
            return self._keep(t, nbytes)
        self._step()
        chunk = ctypes.c_void_p()
        self._check(self._lib.lms_alloc_copy(self.ctx, t.data_ptr(), nbytes,
                                             self._stream(),
                                             ctypes.byref(chunk)),
                    "lms_alloc_copy")
        h = _Saved()
        h.off, h.chunk, h.nbytes, h.key = self, chunk, nbytes, key
        h.shape, h.strides, h.dtype = tuple(t.shape), t.stride(), t.dtype
        h.digest = _digest(t) if self.verify else None
        self.offloaded_live += nbytes
        self.counts["offloaded"] += 1
        self.counts["offloaded_bytes"] += nbytes
        self._dedup[key] = (weakref.ref(h), weakref.ref(t))
        # The bytes, not the graph: t.grad_fn would keep autograd's graph,
        # and with it this very handle, alive.
        self._pending.append((weakref.ref(h), t.detach(), nbytes))
        self._pending_bytes += nbytes
        self._reap()
        return h

    def _unpack(self, h):
        if not isinstance(h, _Saved):
            return h
        self._reap()
        torch = self._torch
        self.counts["unpacks"] += 1
        self._step()
        d = _Desc()
        d.ndim = len(h.shape)
        for i, (n, s) in enumerate(zip(h.shape, h.strides)):
            d.shape[i], d.strides[i] = n, s
        d.dtype_code, d.dtype_bits = _dl_dtype(torch, h.dtype)
        d.device_id = torch.cuda.current_device() if self.cuda else 0
        m = ctypes.c_void_p()
        self._check(self._lib.lms_acquire_dlpack(self.ctx, h.chunk,
                                                 self._stream(),
                                                 ctypes.byref(d),
                                                 ctypes.byref(m)),
                    "lms_acquire_dlpack")
        t = torch.utils.dlpack.from_dlpack(_capsule_new(m, _DLTENSOR, None))
        if h.dtype == torch.bool:
            t = t.view(torch.bool)
        if h.digest is not None:
            if _digest(t) != h.digest:
                raise RuntimeError("lms_offload: a saved tensor's bytes "
                                   "changed between pack and unpack")
            self.counts["verified"] += 1
        return t

    # -- the user's side -------------------------------------------------
    def __enter__(self):
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self._hooks.__exit__(*exc)
        return False

    def stats(self):
        """The engine's counters ({current, peak, total} each, as in
        lms_stats_t) and the hooks' own counts."""
        import json
        st = ctypes.create_string_buffer(1024)  # lms_stats_t is ~700 bytes
        self._check(self._lib.lms_stats_get(self.ctx, st), "lms_stats_get")
        buf = ctypes.create_string_buffer(16384)
        self._lib.lms_stats_format_json(st, buf, len(buf))
        out = json.loads(buf.value.decode())
        out["hooks"] = dict(self.counts)
        return out

    def memory_stats(self):
        """The engine's counters under PyTorch's memory_stats() key
        names: 'lms.<counter>.all.current', '.peak' and '.allocated'."""
        out = {}
        for name, v in self.stats().items():
            if isinstance(v, dict) and "current" in v:
                for k, pk in (("current", "current"), ("peak", "peak"),
                              ("total", "allocated")):
                    out[f"lms.{name}.all.{pk}"] = v[k]
        return out

    def close(self):
        """Waits for the engine, writes its trace and stats files when
        asked, and frees everything.  Saved tensors still alive must not be
        unpacked afterwards."""
        if self.ctx:
            self._reap(wait=True)
            self._pending.clear()
            self._dedup.clear()
            st = self._lib.lms_ctx_destroy(self.ctx)
            self.ctx = None
            if st != 0:
                raise RuntimeError("lms_offload: lms_ctx_destroy failed "
                                   f"({st}); see stderr")


_installed = None


def install(**options):
    """Offloads saved activations of every autograd graph from now on.
    Keywords: the lms options (gpu_limit, lms_kb, lms_frac,
    prefetch_window, device, link, policy, trace, stats, host_limit, log)
    and verify, compute_scale, pending_bytes, lib_path."""
    global _installed
    if _installed is not None:
        raise RuntimeError("lms_offload: already installed")
    _installed = Offload(**options).__enter__()
    return _installed


def uninstall():
    global _installed
    if _installed is not None:
        _installed.__exit__(None, None, None)
        _installed.close()
        _installed = None


def _main(argv):
    """python -m lms_offload script.py args: runs the script with offload
    installed (options from LMS_* variables), in a process that can load
    liblms.so."""
    if not argv:
        print("usage: python -m lms_offload script.py [args]",
              file=sys.stderr)
        return 2
    if TUNABLE not in os.environ.get("GLIBC_TUNABLES", ""):
        env = dict(os.environ)
        env["GLIBC_TUNABLES"] = ":".join(
            x for x in (env.get("GLIBC_TUNABLES"), TUNABLE) if x)
        here = os.path.dirname(os.path.abspath(__file__))
        env["PYTHONPATH"] = os.pathsep.join(
            x for x in (here, env.get("PYTHONPATH")) if x)
        os.execve(sys.executable,
                  [sys.executable, "-m", "lms_offload"] + argv, env)
    import importlib
    import runpy
    # The script's `import lms_offload` must find the installed state, not
    # this copy run as __main__.
    mod = importlib.import_module("lms_offload")
    mod.install()
    sys.argv = argv
    runpy.run_path(argv[0], run_name="__main__")
    mod.uninstall()
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
