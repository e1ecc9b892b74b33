"""lms_torch: run PyTorch models larger than the GPU with lms.

Installs lms's stable-pointer allocator (liblms_torch.so) as PyTorch's CUDA
allocator through torch.cuda.memory.CUDAPluggableAllocator.  Tensors keep
one address for their whole life; while the process stays within the GPU
limit they are device memory, past it they live in host memory that the GPU
reads in place, and layer hints move them to the GPU ahead of use.  Results
never depend on where a tensor lives.

    import lms_torch
    lms_torch.install(gpu_limit="8GiB")      # before the first CUDA tensor
    model = build_model().cuda()
    lms_torch.hint_modules(model)            # optional: prefetch per layer
    ...
    print(lms_torch.stats())

The library is found through LMS_TORCH_LIB, then where `pip install
./python` put it (lms.libs/ beside this file), then in the source tree's
build (../build/lib), then on the loader's path.

    python -m lms_torch [--gpu-limit 8GiB] [--lms-frac F] ... train.py ARGS

runs an unchanged script with lms as its allocator (options as for
install(), or in LMS_CONF, below).
"""

import contextlib
import ctypes
import json
import os

_lib = None
_installed = None

_OPTIONS = {
    # keyword: (environment variable, what is accepted)
    "gpu_limit": ("LMS_GPU_LIMIT", "a size with a unit, e.g. '8GiB'"),
    "lms_kb": ("LMS_KB", "whole KB, -1 for off"),
    "lms_frac": ("LMS_FRAC", "a fraction in 0..1"),
    "prefetch_window": ("LMS_PREFETCH_WINDOW",
                        "STEPS[,BYTES or PERCENT], e.g. '1000,40%'"),
    "log": ("LMS_LOG", "a level, e.g. 'info' or 'debug:alloc'"),
    "log_file": ("LMS_LOG_FILE", "a path"),
}


def find_library():
    """The path of liblms_torch.so, or raise FileNotFoundError."""
    env = os.environ.get("LMS_TORCH_LIB")
    if env:
        if not os.path.exists(env):
            raise FileNotFoundError(f"LMS_TORCH_LIB={env}: no such file")
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "lms.libs", "liblms_torch.so.0"),
                 os.path.join(here, "..", "build", "lib", "liblms_torch.so")):
        if os.path.exists(cand):
            return os.path.normpath(cand)
    return "liblms_torch.so"  # the loader's search path


def option_env(**options):
    """The LMS_* environment for the given keyword options.

    Raises TypeError for an unknown keyword; values are checked by the
    library itself when it starts (see load)."""
    env = {}
    for key, value in options.items():
        if key not in _OPTIONS:
            known = ", ".join(sorted(_OPTIONS))
            raise TypeError(f"lms_torch: unknown option {key!r}; "
                            f"accepted: {known}")
        if value is None:
            continue
        env[_OPTIONS[key][0]] = str(value)
    return env


def load(path=None, **options):
    """Loads the library with the options, without touching PyTorch.

    Raises ValueError naming the option when a value is refused."""
    global _lib
    env = option_env(**options)
    if _lib is not None:
        if env:
            raise RuntimeError("lms_torch: the library is already loaded; "
                               "options must be given before the first load")
        return _lib
    os.environ.update(env)
    lib = ctypes.CDLL(path or find_library())
    lib.lms_torch_init.restype = ctypes.c_int
    lib.lms_torch_last_error.restype = ctypes.c_char_p
    lib.lms_torch_stats_json.restype = ctypes.c_size_t
    lib.lms_torch_stats_json.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.lms_torch_prefetch.restype = ctypes.c_int
    lib.lms_torch_prefetch.argtypes = [ctypes.POINTER(ctypes.c_void_p),
                                       ctypes.c_int, ctypes.c_void_p]
    lib.lms_torch_evict_all.argtypes = [ctypes.c_void_p]
    if lib.lms_torch_init() != 0:
        raise ValueError(lib.lms_torch_last_error().decode())
    _lib = lib
    return lib


def install(**options):
    """Makes lms PyTorch's CUDA allocator.  Call before any CUDA tensor.

    Keywords: gpu_limit, lms_kb, lms_frac, prefetch_window, log, log_file,
    and path (the library)."""
    global _installed
    import torch
    path = options.pop("path", None) or find_library()
    load(path, **options)
    if _installed is not None:
        return _installed
    alloc = torch.cuda.memory.CUDAPluggableAllocator(
        path, "lms_torch_malloc", "lms_torch_free")
    try:
        torch.cuda.memory.change_current_allocator(alloc)
    except RuntimeError as e:
        raise RuntimeError("lms_torch.install() must come before the first "
                           f"CUDA tensor is made ({e})") from e
    _installed = alloc
    return alloc


_pool_alloc = None


def _mem_pool_api(torch):
    """torch's MemPool and the context manager that routes allocations to
    one, or None where this PyTorch has none (before 2.5)."""
    cuda = torch.cuda
    mem = getattr(cuda, "memory", None)
    pool = getattr(cuda, "MemPool", None) or getattr(mem, "MemPool", None)
    use = getattr(cuda, "use_mem_pool", None) or \
        getattr(mem, "use_mem_pool", None)
    if pool is None or use is None:
        return None
    return pool, use


@contextlib.contextmanager
def pool(**options):
    """Routes the CUDA allocations this thread makes inside the block to
    lms; the rest of the program keeps PyTorch's own allocator:

        with lms_torch.pool(gpu_limit="8GiB"):
            activations = big_model(x)      # may live past the GPU limit

    Tensors made inside keep their memory after the block until they are
    freed, which goes back through lms.  Keywords as install(); the
    options take effect at the first load of the library, whichever of
    pool() and install() comes first.  Needs torch.cuda.MemPool and
    use_mem_pool (PyTorch 2.5 or newer): RuntimeError naming the version
    otherwise, with install() as the way for the whole program.  Yields
    the MemPool."""
    global _pool_alloc
    import torch
    api = _mem_pool_api(torch)
    if api is None:
        raise RuntimeError(
            "lms_torch.pool() needs torch.cuda.MemPool and use_mem_pool "
            f"(PyTorch 2.5 or newer); this is PyTorch "
            f"{getattr(torch, '__version__', 'unknown')}: use "
            "lms_torch.install() to make lms the allocator of the whole "
            "program")
    mem_pool, use_mem_pool = api
    path = options.pop("path", None) or find_library()
    load(path, **options)
    if _pool_alloc is None:
        _pool_alloc = torch.cuda.memory.CUDAPluggableAllocator(
            path, "lms_torch_malloc", "lms_torch_free")
    mp = mem_pool(_pool_alloc.allocator())
    with use_mem_pool(mp):
        yield mp


def stats():
    """The allocator's counters as a dict (bytes and counts)."""
    lib = load()
    cap = 4096
    buf = ctypes.create_string_buffer(cap)
    n = lib.lms_torch_stats_json(buf, cap)
    if n >= cap:
        raise RuntimeError("lms_torch: stats longer than expected")
    return json.loads(buf.value.decode())


# memory_stats(): PyTorch's key names (torch.cuda.memory_stats(), which a
# pluggable allocator does not serve) from lms's counters.
_TORCH_KEYS = {
    "allocated_bytes.all.current": ("device_live", "managed_live"),
    "active_bytes.all.current": ("device_live", "managed_live"),
    "reserved_bytes.all.current": ("device_held", "managed_held"),
    "allocation.all.allocated": ("allocs",),
    "allocation.all.freed": ("frees",),
    "num_device_alloc": ("driver_allocs",),
    "num_device_free": ("driver_frees",),
    "num_ooms": ("failed",),
}


def memory_stats():
    """The counters under the keys of torch.cuda.memory_stats() where one
    means the same (bytes in tensors, bytes held from the driver, counts of
    allocations and driver calls, failures), then every lms counter as
    "lms.NAME" (device bytes, managed bytes, prefetches, evictions...).
    Tensors past the GPU limit live in managed memory, so "allocated" and
    "reserved" count both kinds."""
    s = stats()
    out = {key: sum(s[f] for f in fields)
           for key, fields in _TORCH_KEYS.items()}
    out["allocation.all.current"] = s["allocs"] - s["frees"]
    out.update({"lms." + k: v for k, v in s.items()})
    return out


def _stream_handle(stream=None):
    import torch
    s = stream if stream is not None else torch.cuda.current_stream()
    return ctypes.c_void_p(s.cuda_stream)


def _storage_ptrs(objs):
    import torch
    ptrs = []
    for o in objs:
        if isinstance(o, int):
            ptrs.append(o)
        elif isinstance(o, torch.Tensor) and o.is_cuda:
            p = o.untyped_storage().data_ptr()
            if p:
                ptrs.append(p)
        elif isinstance(o, (list, tuple)):
            ptrs.extend(_storage_ptrs(o))
    return ptrs


def prefetch(objs, stream=None):
    """Moves the blocks behind the given tensors (or raw block addresses)
    that live in host memory to the GPU ahead of use, in stream order.
    Returns how many blocks moved."""
    lib = load()
    ptrs = _storage_ptrs(objs)
    if not ptrs:
        return 0
    arr = (ctypes.c_void_p * len(ptrs))(*ptrs)
    return lib.lms_torch_prefetch(arr, len(ptrs), _stream_handle(stream))


def evict_all(stream=None):
    """Sends every prefetched block back to host memory."""
    return load().lms_torch_evict_all(_stream_handle(stream))


def empty_cache():
    """Returns lms's cached free blocks to the driver."""
    load().lms_torch_empty_cache()


def hint_modules(model):
    """Prefetch hints from module hooks.

    Forward: before each leaf module runs, its parameters and inputs.
    Backward: when a leaf's parameter gradient has been accumulated, the
    blocks the leaf before it (in forward order) read and wrote, which its
    backward is about to need.  Only addresses are remembered, never
    tensors, so hints keep nothing alive; a stale address is ignored or
    moves a block that no longer matters.  Returns the hook handles."""
    handles = []
    order = []          # leaf positions in forward order, this step
    touched = {}        # position -> block addresses read and written
    leaves = [m for m in model.modules()
              if next(m.children(), None) is None]

    def make(pos, mod):
        def pre_forward(_mod, args):
            if pos == 0 or (order and pos <= order[-1]):
                order.clear()  # a new step
            order.append(pos)
            prefetch(list(mod.parameters(recurse=False)) + list(args))

        def post_forward(_mod, args, out):
            touched[pos] = _storage_ptrs(list(args) + [out] +
                                         list(mod.parameters(recurse=False)))

        def after_grad(_param):
            i = order.index(pos) if pos in order else -1
            if i > 0:
                prefetch(touched.get(order[i - 1], []))

        hs = [mod.register_forward_pre_hook(pre_forward),
              mod.register_forward_hook(post_forward)]
        params = [p for p in mod.parameters(recurse=False) if p.requires_grad]
        if params:
            hs.append(params[0].register_post_accumulate_grad_hook(after_grad))
        return hs

    for pos, mod in enumerate(leaves):
        handles.extend(make(pos, mod))
    return handles


def main(argv=None):
    """python -m lms_torch [OPTIONS] SCRIPT [ARGS...]: runs SCRIPT, unchanged,
    with lms as PyTorch's CUDA allocator.  OPTIONS are install()'s keywords
    as flags (--gpu-limit 8GiB, --lms-kb, --lms-frac, --prefetch-window,
    --log, --log-file); --stats prints stats() to stderr at exit.  LMS_CONF
    and the LMS_* variables work as for every front end.  Returns the
    exit status: 2 for bad options."""
    import argparse
    import atexit
    import runpy
    import sys
    parser = argparse.ArgumentParser(
        prog="python -m lms_torch",
        description="Run a PyTorch script with lms as its CUDA allocator.")
    for key, (_env, accepted) in sorted(_OPTIONS.items()):
        parser.add_argument("--" + key.replace("_", "-"), dest=key,
                            metavar="VALUE", help=accepted)
    parser.add_argument("--stats", action="store_true",
                        help="print the allocator's counters at exit")
    parser.add_argument("script", help="the script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER,
                        help="its arguments")
    a = parser.parse_args(argv)
    options = {k: getattr(a, k) for k in _OPTIONS}
    try:
        install(**options)
    except ValueError as e:
        print(f"python -m lms_torch: {e}", file=sys.stderr)
        return 2
    if a.stats:
        atexit.register(lambda: print(json.dumps(stats()), file=sys.stderr))
    sys.argv = [a.script] + a.args
    sys.path.insert(0, os.path.dirname(os.path.abspath(a.script)))
    runpy.run_path(a.script, run_name="__main__")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
