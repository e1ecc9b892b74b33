"""Forward + backward of a torchvision model under a GPU memory limit.

Modes:
  plain     stock PyTorch, no limit (the reference)
  fraction  stock PyTorch limited by set_per_process_memory_fraction
  lms       lms's allocator (python/lms_torch.py) with --limit as gpu_limit

Every run uses the same seed, weights and data, so the loss and the
gradient norms of different runs must agree within float tolerance.  It
prints one line "RESULT {json}" and writes it to --out when given.

  python3 bench/torch/train.py --model googlenet --size 1200 --batch 10 \
      --mode lms --limit-gib 12 --iters 3
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "python"))


def parse():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="googlenet")
    ap.add_argument("--size", type=int, default=1200)
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--mode", choices=["plain", "fraction", "lms"],
                    default="plain")
    ap.add_argument("--limit-gib", type=float, default=0.0)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--hints", action="store_true",
                    help="lms: prefetch hints from module hooks")
    ap.add_argument("--window", default=None,
                    help="lms: prefetch window, e.g. '1000,40%%'")
    ap.add_argument("--optimizer", action="store_true",
                    help="a full SGD step (weights change every iteration)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.mode != "plain" and not a.limit_gib > 0:
        ap.error("--limit-gib must be above 0 for modes fraction and lms")
    if a.iters < 1 or a.warmup < 0:
        ap.error("--iters must be at least 1 and --warmup at least 0")
    return a


def main():
    a = parse()
    limit = int(a.limit_gib * (1 << 30))
    lms = None
    if a.mode == "lms":
        import lms_torch as lms
        lms.install(gpu_limit=f"{limit}B", prefetch_window=a.window)
    import torch
    import torchvision

    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if a.mode == "fraction":
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(limit / total)

    torch.manual_seed(1234)
    kw = {"weights": None, "num_classes": 1000}
    if a.model == "googlenet":
        kw.update(aux_logits=False, init_weights=True)
    model = getattr(torchvision.models, a.model)(**kw)
    gen = torch.Generator().manual_seed(99)
    x = torch.randn(a.batch, 3, a.size, a.size, generator=gen)
    y = torch.randint(0, 1000, (a.batch,), generator=gen)
    res = {"model": a.model, "size": a.size, "batch": a.batch,
           "mode": a.mode, "limit_bytes": limit, "hints": a.hints,
           "optimizer": a.optimizer}
    try:
        model = model.cuda().train()
        x, y = x.cuda(), y.cuda()
        if lms is not None and a.hints:
            lms.hint_modules(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.01) \
            if a.optimizer else None
        loss_fn = torch.nn.CrossEntropyLoss()
        times = []
        for it in range(a.warmup + a.iters):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            model.zero_grad(set_to_none=True)
            torch.manual_seed(7)  # the same dropout masks every iteration
            out = model(x)
            loss = loss_fn(out, y)
            loss.backward()
            if opt is not None:
                opt.step()
            torch.cuda.synchronize()
            if it >= a.warmup:
                times.append(time.perf_counter() - t0)
        grads = [p.grad.double().norm().item() for p in model.parameters()
                 if p.grad is not None]
        res.update(ok=True, loss=loss.item(),
                   grad_norm=math.sqrt(sum(g * g for g in grads)),
                   grad_norms=grads, times_s=times,
                   median_s=statistics.median(times))
    except torch.OutOfMemoryError as e:
        res.update(ok=False, error="out of memory: " + str(e).split("\n")[0])
    if lms is None:  # the pluggable allocator keeps no such counters
        res["torch_max_allocated"] = torch.cuda.max_memory_allocated()
        res["torch_max_reserved"] = torch.cuda.max_memory_reserved()
    if lms is not None:
        res["lms"] = lms.stats()
    line = json.dumps(res)
    short = {k: v for k, v in res.items() if k != "grad_norms"}
    print("RESULT " + json.dumps(short), flush=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write(line + "\n")
    return 0 if res.get("ok") else 3


if __name__ == "__main__":
    sys.exit(main())
