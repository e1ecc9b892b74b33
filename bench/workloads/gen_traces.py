#!/usr/bin/env python3
"""Writes traces (docs/trace-format.md) of workloads lms was not tuned on.

    bench/workloads/gen_traces.py OUTDIR

Each is a shape of a program people run, from its architecture, with
fp32 sizes (fp16 for the decoders) and compute times from FLOP counts at a modelled device speed
(TFLOPS below); none is fitted to anything lms prints:

  gpt2-medium.trace   a GPT-2 medium training step (24 layers, d 1024,
                      16 heads, sequence 1024, batch 4), Adam
  resnet50.trace      ResNet-50 training at 224^2, batch 64 (bottleneck
                      blocks, BN and ReLU folded into each conv's output)
  stream.trace        streaming inference: 48 weight blocks read in turn
                      by a fresh batch each iteration, activations small
  random4k.trace      8,000 chunks of 4 KiB, each step touching 24 of
                      them at random (a key-value cache, a sparse model)
  oddsizes.trace      a chain of steps over chunks of awkward sizes: just
                      above powers of two, 768x768 fp32, 1.125/1.5/3 MiB,
                      odd multiples of 512, small beside large
  vgg16.trace         VGG-16 training at 224^2, batch 32, SGD with
                      momentum: large activations first, a 411 MB fully
                      connected layer last
  llama-decode.trace  one decoding step of a 7B decoder in fp16 (32
                      layers, d 4096, batch 8): every layer's weights and
                      the output head read once, each layer's 2048-token
                      key-value cache read and written (appending a
                      token dirties the whole tensor, as the runtime sees
                      it), next to no compute
  dlrm.trace          a recommendation model's training step: eight
                      embedding tables of 100-805 MB read in forward and
                      updated in place in backward, small MLPs around
                      them, lookups bound by device memory
  gpt-mixed.trace     a 1.2B decoder's training step in mixed precision:
                      bf16 weights, fp32 master weights and Adam moments
                      (12 bytes a parameter) read only by the optimizer,
                      gradients made in backward and freed after it
  moe-decode.trace    eight decoding steps of a sparse mixture-of-experts
                      decoder in bf16 (16 layers, d 2048, 8 experts of
                      69 MB a layer, top-2 routing, batch 4): each step
                      reads the experts its four tokens chose, a different
                      set each step and layer (seeded), so an expert
                      comes back after one layer pass or several; steps
                      bound by device memory
  moe-decode-b1.trace the same at batch 1: two experts a layer, so every
                      token's steps look alike but for which experts
  unet2d.trace        a 2D U-Net's training step at 256^2, batch 8, Adam:
                      each level's output kept across the network for
                      the decoder's skip connection and for backward
  lstm.trace          a three-layer LSTM's training step, layer by layer
                      over 256 time steps (hidden 2048, batch 64, Adam):
                      a layer's weights read at every time step, its
                      gradient added to at every step of backward
  vit-accum.trace     a ViT-H/14-sized encoder's fine-tuning step in
                      mixed precision: four micro-batches at 197-577
                      tokens (activation sizes of their own each),
                      activation checkpointing (each block's forward run
                      again in backward), gradients accumulated over the
                      four, and AdamW's fp32 master weights and moments
                      read and written once, at the end
  sd-infer.trace      text-to-image diffusion inference, a U-Net shaped
                      like Stable Diffusion's in fp16: 25 denoising steps
                      each reading its 1.08 GB of weights, skips kept
                      across each pass, a text encoder before and a VAE
                      decoder after
  lora-7b.trace       LoRA fine-tuning of a 7B decoder in bf16 (32
                      layers, d 4096, 2048 tokens): frozen weights read
                      in forward and twice in backward (each layer run
                      again under activation checkpointing), adapters of
                      rank 16 on the query and value projections the only
                      weights with gradients and AdamW state
  whisper-beam.trace  speech recognition with an encoder-decoder in fp16
                      (Whisper large's shape): the encoder once over 1500
                      frames, then 64 tokens decoded with a beam of 5,
                      each reading the decoder's weights, every layer's
                      cross-attention keys and values, and its own
                      key-value cache, reordered for the beams each token
  pp-1f1b.trace       the first stage of a four-stage pipeline training a
                      decoder in mixed precision, eight micro-batches in
                      the one-forward-one-backward order: each micro-
                      batch's activations live from its forward to its
                      backward, first in, first out, up to four at once
  tinyllama-decode.trace  one decoding step of a 1.1B decoder in fp16
                      (22 layers, d 2048, grouped-query attention with 4
                      key-value heads of 32, batch 16, 4096 tokens): the
                      7B decoder's loop at a sixth of its bytes, each
                      layer's cache (67 MB) beside its MLP's weight (69
                      MB) and attention's (19 MB), each step as long as
                      device memory takes to read what it touches
  effnet.trace        EfficientNet-B0's training step at 224^2, batch 128,
                      SGD with momentum: inverted bottlenecks whose
                      expanded activations (up to 616 MB) dwarf the 21 MB
                      of weights, depthwise convolutions and squeeze-and-
                      excitation bound by device memory, hundreds of
                      small chunks beside a few large ones
  gcn-products.trace  full-batch training of a three-layer graph
                      convolutional network on a graph of ogbn-products'
                      size (2.4 M nodes, 124 M edges), Adam: a 1.5 GB
                      adjacency read by five sparse products an
                      iteration, 2.5 GB activations, weights of KBs
  serve-cb.trace      a 7B decoder serving with continuous batching:
                      eight decoding steps of ten running requests whose
                      caches differ in size, four more prefilled, decoded
                      and finished within the iteration, their caches
                      allocated and freed
"""
import os
import random
import sys

TFLOPS = 50e12  # the modelled device: FLOP per second
F4 = 4  # bytes per fp32 element
HBM_BPS = 2e12  # the modelled device's memory: bytes per second


def mem(nbytes):
    """A step bound by device memory moving nbytes, as FLOPs at TFLOPS."""
    return nbytes / HBM_BPS * TFLOPS


class Trace:
    def __init__(self, name):
        self.name = name
        self.chunks = []  # (id, bytes, name, kind)
        self.steps = []  # (ns, name, [refs])

    def chunk(self, nbytes, name, persistent=False):
        cid = len(self.chunks)
        self.chunks.append((cid, int(nbytes), name,
                            "persistent" if persistent else "transient"))
        return cid

    def step(self, flops, name, *refs):
        ns = max(1000, int(flops / TFLOPS * 1e9))
        self.steps.append((ns, name, list(refs)))

    def write(self, path):
        with open(path, "w") as f:
            f.write("lms-trace 1\n")
            f.write(f"# {self.name}: written by bench/workloads/gen_traces.py\n")
            f.write(f"workload {self.name}\n")
            for cid, nbytes, name, kind in self.chunks:
                f.write(f"chunk {cid} {nbytes} {name} {kind}\n")
            for ns, name, refs in self.steps:
                f.write(f"step {ns} {name}")
                for k in range(0, len(refs), 64):
                    if k:
                        f.write("\nrefs")
                    f.write("".join(f" {a}:{c}" for a, c in refs[k:k + 64]))
                f.write("\n")


def block_activations(t, i, tok, att):
    """A transformer block's activations (att: the softmax's bytes)."""
    return {"ln1": t.chunk(tok, f"h{i}.ln1"),
            "qkv": t.chunk(3 * tok, f"h{i}.qkv"),
            "att": t.chunk(att, f"h{i}.softmax"),
            "ctx": t.chunk(tok, f"h{i}.ctx"),
            "res1": t.chunk(tok, f"h{i}.res1"),
            "ln2": t.chunk(tok, f"h{i}.ln2"),
            "fc1": t.chunk(4 * tok, f"h{i}.gelu"),
            "out": t.chunk(tok, f"h{i}.out")}


def block_forward(t, i, b, s, d, x, w, a):
    """Block i's forward steps from its input x, weights w, activations a."""
    t.step(8 * b * s * d, f"h{i}.ln1", ("r", x), ("w", a["ln1"]))
    t.step(2 * b * s * 3 * d * d, f"h{i}.qkv", ("r", a["ln1"]),
           ("r", w["qkv"]), ("w", a["qkv"]))
    t.step(2 * b * s * s * d, f"h{i}.scores", ("r", a["qkv"]),
           ("w", a["att"]))
    t.step(2 * b * s * s * d, f"h{i}.attend", ("r", a["att"]),
           ("r", a["qkv"]), ("w", a["ctx"]))
    t.step(2 * b * s * d * d, f"h{i}.proj", ("r", a["ctx"]),
           ("r", w["proj"]), ("r", x), ("w", a["res1"]))
    t.step(8 * b * s * d, f"h{i}.ln2", ("r", a["res1"]), ("w", a["ln2"]))
    t.step(2 * b * s * 4 * d * d, f"h{i}.fc1", ("r", a["ln2"]),
           ("r", w["fc1"]), ("w", a["fc1"]))
    t.step(2 * b * s * 4 * d * d, f"h{i}.fc2", ("r", a["fc1"]),
           ("r", w["fc2"]), ("r", a["res1"]), ("w", a["out"]))


def block_backward(t, i, b, s, d, tok, dx, w, g, gacc, a, xin):
    """Block i's backward steps from the gradient dx of its output; each
    weight's gradient in g is accessed as gacc ("rw": added to, "w":
    made).  Returns the gradient of its input."""
    d1 = t.chunk(4 * tok, f"h{i}.gelu.grad")
    t.step(4 * b * s * 4 * d * d, f"h{i}.fc2.bwd", ("r", dx),
           ("r", a["fc1"]), ("r", w["fc2"]), (gacc, g["fc2"]), ("w", d1))
    d2 = t.chunk(tok, f"h{i}.ln2.grad")
    t.step(4 * b * s * 4 * d * d, f"h{i}.fc1.bwd", ("r", d1),
           ("r", a["ln2"]), ("r", w["fc1"]), (gacc, g["fc1"]), ("w", d2))
    d3 = t.chunk(tok, f"h{i}.ctx.grad")
    t.step(4 * b * s * d * d, f"h{i}.proj.bwd", ("r", d2), ("r", dx),
           ("r", a["res1"]), ("r", a["ctx"]), ("r", w["proj"]),
           (gacc, g["proj"]), ("w", d3))
    d4 = t.chunk(3 * tok, f"h{i}.qkv.grad")
    t.step(8 * b * s * s * d, f"h{i}.attention.bwd", ("r", d3),
           ("r", a["att"]), ("r", a["qkv"]), ("w", d4))
    d5 = t.chunk(tok, f"h{i}.in.grad")
    t.step(4 * b * s * 3 * d * d, f"h{i}.qkv.bwd", ("r", d4),
           ("r", a["ln1"]), ("r", w["qkv"]), (gacc, g["qkv"]),
           ("r", d2), ("r", xin), ("w", d5))
    return d5


def gpt2_medium():
    L, d, h, s, b = 24, 1024, 16, 1024, 4
    t = Trace("gpt2-medium-b4-s1024-train")
    tok = b * s * d * F4
    emb = t.chunk(50257 * d * F4, "wte", True)
    demb = t.chunk(50257 * d * F4, "wte.grad", True)
    emb_m = t.chunk(50257 * d * F4, "wte.adam", True)
    x0 = t.chunk(tok, "embed.out")
    t.step(2 * b * s * d, "embed", ("r", emb), ("w", x0))
    layers = []
    x = x0
    for i in range(L):
        w = {k: t.chunk(n * F4, f"h{i}.{k}", True) for k, n in
             (("qkv", 3 * d * d), ("proj", d * d), ("fc1", 4 * d * d),
              ("fc2", 4 * d * d))}
        g = {k: t.chunk(t.chunks[c][1], f"h{i}.{k}.grad", True)
             for k, c in w.items()}
        m = {k: t.chunk(2 * t.chunks[c][1], f"h{i}.{k}.adam", True)
             for k, c in w.items()}
        a = block_activations(t, i, tok, b * h * s * s * F4)
        block_forward(t, i, b, s, d, x, w, a)
        layers.append((w, g, m, a, x))
        x = a["out"]
    logits = t.chunk(b * s * 50257 * F4 // 8, "logits.chunked")
    t.step(2 * b * s * d * 50257, "lm_head", ("r", x), ("r", emb),
           ("w", logits))
    dx = t.chunk(tok, "grad.out")
    t.step(4 * b * s * d * 50257, "lm_head.bwd", ("r", logits), ("r", x),
           ("r", emb), ("rw", demb), ("w", dx))
    for i in reversed(range(L)):
        w, g, m, a, xin = layers[i]
        d5 = block_backward(t, i, b, s, d, tok, dx, w, g, "rw", a, xin)
        dx = d5
    t.step(2 * b * s * d, "embed.bwd", ("r", dx), ("rw", demb))
    t.step(10 * 50257 * d, "adam.wte", ("rw", emb), ("r", demb),
           ("rw", emb_m))
    for i in range(L):
        w, g, m, a, xin = layers[i]
        for k in w:
            t.step(10 * t.chunks[w[k]][1] // F4, f"adam.h{i}.{k}",
                   ("rw", w[k]), ("r", g[k]), ("rw", m[k]))
    return t


def resnet50():
    b, F = 64, F4
    t = Trace("resnet50-224-b64-train")
    x = t.chunk(b * 3 * 224 * 224 * F, "input", True)
    convs = []  # (weight, grad, momentum, in, out, flops)

    def conv(name, cin, cout, k, hw_out, inp):
        wbytes = cin * cout * k * k * F
        w = t.chunk(wbytes, f"{name}.w", True)
        g = t.chunk(wbytes, f"{name}.w.grad", True)
        m = t.chunk(wbytes, f"{name}.w.momentum", True)
        out = t.chunk(b * cout * hw_out * hw_out * F, f"{name}.out")
        flops = 2 * b * cin * cout * k * k * hw_out * hw_out
        t.step(flops, name, ("r", inp), ("r", w), ("w", out))
        convs.append((name, w, g, m, inp, out, flops))
        return out

    y = conv("conv1", 3, 64, 7, 112, x)
    pool = t.chunk(b * 64 * 56 * 56 * F, "pool1.out")
    t.step(b * 64 * 56 * 56 * 9, "pool1", ("r", y), ("w", pool))
    y, cin, hw = pool, 64, 56
    for stage, (blocks, width) in enumerate(((3, 64), (4, 128), (6, 256),
                                             (3, 512))):
        for blk in range(blocks):
            hw_out = hw // 2 if (blk == 0 and stage > 0) else hw
            n = f"s{stage + 1}b{blk + 1}"
            a = conv(n + ".c1", cin, width, 1, hw, y)
            a = conv(n + ".c2", width, width, 3, hw_out, a)
            a = conv(n + ".c3", width, 4 * width, 1, hw_out, a)
            if blk == 0:
                sc = conv(n + ".down", cin, 4 * width, 1, hw_out, y)
            else:
                sc = y
            out = t.chunk(b * 4 * width * hw_out * hw_out * F, n + ".sum")
            t.step(b * 4 * width * hw_out * hw_out * 2, n + ".add",
                   ("r", a), ("r", sc), ("w", out))
            y, cin, hw = out, 4 * width, hw_out
    fc_w = t.chunk(2048 * 1000 * F, "fc.w", True)
    fc_g = t.chunk(2048 * 1000 * F, "fc.w.grad", True)
    logits = t.chunk(b * 1000 * F, "fc.out")
    t.step(2 * b * 2048 * (49 + 1000), "pool+fc", ("r", y), ("r", fc_w),
           ("w", logits))
    dy = t.chunk(b * 2048 * 7 * 7 * F, "fc.in.grad")
    t.step(4 * b * 2048 * 1000, "fc.bwd", ("r", logits), ("r", y),
           ("r", fc_w), ("rw", fc_g), ("w", dy))
    for name, w, g, m, inp, out, flops in reversed(convs):
        din = t.chunk(t.chunks[inp][1], name + ".in.grad")
        t.step(2 * flops, name + ".bwd", ("r", dy), ("r", inp), ("r", w),
               ("rw", g), ("w", din))
        dy = din
    for name, w, g, m, inp, out, flops in convs:
        t.step(6 * t.chunks[w][1] // F, "sgd." + name, ("rw", w), ("r", g),
               ("rw", m))
    return t


def stream():
    t = Trace("stream-48x48MiB-inference")
    blocks = [t.chunk(48 << 20, f"block{i}.w", True) for i in range(48)]
    batch = t.chunk(6 << 20, "batch")
    x = batch
    t.step(1e9, "load", ("w", batch))
    for i, w in enumerate(blocks):
        y = t.chunk(6 << 20, f"block{i}.out")
        # 2 FLOP per weight per token, 128 tokens: compute ~ weight bytes
        t.step(2 * (48 << 20) // F4 * 128, f"block{i}", ("r", x), ("r", w),
               ("w", y))
        x = y
    return t


def random4k():
    rng = random.Random(4096)
    t = Trace("random-4KiB-8000")
    ids = [t.chunk(4096, f"kv{i}", True) for i in range(8000)]
    for s in range(600):
        picks = rng.sample(ids, 24)
        refs = [("r", c) for c in picks[:18]] + [("rw", c) for c in picks[18:]]
        t.step(2e6, f"lookup{s}", *refs)
    return t


def oddsizes():
    rng = random.Random(2250)
    M, K = 1 << 20, 1 << 10

    def size():
        k = rng.randrange(6)
        if k == 0:
            return (M << rng.randrange(4)) + 1
        if k == 1:
            return 768 * 768 * 4
        if k == 2:
            return rng.choice((M + M // 8, M + M // 2, 3 * M))
        if k == 3:
            return rng.randrange(M + 1, 24 * M)
        if k == 4:
            return (2 * rng.randrange(8192) + 1) * 512
        return rng.randrange(1, 256 * K)

    t = Trace("odd-sizes-chain")
    params = [t.chunk(size(), f"p{i}", True) for i in range(40)]
    acts = []
    x = t.chunk(size(), "in")
    t.step(1e9, "load", ("w", x))
    for i in range(80):
        y = t.chunk(size(), f"a{i}")
        ps = rng.sample(params, 2)
        t.step(rng.randrange(1, 8) * 5e10, f"f{i}", ("r", x), ("r", ps[0]),
               ("r", ps[1]), ("w", y))
        acts.append((x, ps, y))
        x = y
    g = t.chunk(t.chunks[x][1], "g")
    t.step(1e10, "loss", ("r", x), ("w", g))
    for i, (xin, ps, y) in reversed(list(enumerate(acts))):
        gi = t.chunk(t.chunks[xin][1], f"g{i}")
        t.step(rng.randrange(2, 16) * 5e10, f"b{i}", ("r", g), ("r", xin),
               ("rw", ps[0]), ("r", ps[1]), ("w", gi))
        g = gi
    return t


def vgg16():
    b = 32
    t = Trace("vgg16-224-b32-train")
    x = t.chunk(b * 3 * 224 * 224 * F4, "input", True)
    layers = []  # (weight, grad, momentum, in, flops); no weight: a pool
    y, c, hw = x, 3, 224
    for i, cout in enumerate((64, 64, "M", 128, 128, "M", 256, 256, 256, "M",
                              512, 512, 512, "M", 512, 512, 512, "M")):
        if cout == "M":
            hw //= 2
            out = t.chunk(b * c * hw * hw * F4, f"pool{i}.out")
            flops = 4 * b * c * hw * hw
            t.step(flops, f"pool{i}", ("r", y), ("w", out))
            layers.append((None, None, None, y, flops))
            y = out
            continue
        wbytes = c * cout * 9 * F4
        w, g, m = (t.chunk(wbytes, f"conv{i}.{k}", True)
                   for k in ("w", "w.grad", "w.momentum"))
        out = t.chunk(b * cout * hw * hw * F4, f"conv{i}.out")
        flops = 2 * b * c * cout * 9 * hw * hw
        t.step(flops, f"conv{i}", ("r", y), ("r", w), ("w", out))
        layers.append((w, g, m, y, flops))
        y, c = out, cout
    for i, (fin, fout) in enumerate(((25088, 4096), (4096, 4096),
                                     (4096, 1000))):
        w, g, m = (t.chunk(fin * fout * F4, f"fc{i}.{k}", True)
                   for k in ("w", "w.grad", "w.momentum"))
        out = t.chunk(b * fout * F4, f"fc{i}.out")
        flops = 2 * b * fin * fout
        t.step(flops, f"fc{i}", ("r", y), ("r", w), ("w", out))
        layers.append((w, g, m, y, flops))
        y = out
    dy = t.chunk(t.chunks[y][1], "loss.grad")
    t.step(1e6, "loss", ("r", y), ("w", dy))
    for w, g, m, inp, flops in reversed(layers):
        din = t.chunk(t.chunks[inp][1], "in.grad")
        if w is None:
            t.step(flops, "pool.bwd", ("r", dy), ("r", inp), ("w", din))
        else:
            t.step(2 * flops, "bwd", ("r", dy), ("r", inp), ("r", w),
                   ("rw", g), ("w", din))
        dy = din
    for w, g, m, inp, flops in layers:
        if w is not None:
            t.step(6 * t.chunks[w][1] // F4, "sgd", ("rw", w), ("r", g),
                   ("rw", m))
    return t


def llama_decode():
    layers, d, ff, b, ctx, F2 = 32, 4096, 11008, 8, 2048, 2
    t = Trace("llama7b-decode-b8-ctx2048")
    x = t.chunk(b * d * F2, "token")
    t.step(1e5, "embed", ("w", x))
    for i in range(layers):
        attn = t.chunk(4 * d * d * F2, f"l{i}.attn.w", True)
        mlp = t.chunk(3 * d * ff * F2, f"l{i}.mlp.w", True)
        kv = t.chunk(2 * b * ctx * d * F2, f"l{i}.kv", True)
        a = t.chunk(b * d * F2, f"l{i}.attn.out")
        y = t.chunk(b * d * F2, f"l{i}.out")
        t.step(2 * b * 4 * d * d + 4 * b * ctx * d, f"l{i}.attn", ("r", x),
               ("r", attn), ("rw", kv), ("w", a))
        t.step(2 * b * 3 * d * ff, f"l{i}.mlp", ("r", a), ("r", mlp),
               ("w", y))
        x = y
    head = t.chunk(32000 * d * F2, "lm_head.w", True)
    logits = t.chunk(b * 32000 * F4, "logits")
    t.step(2 * b * 32000 * d, "lm_head", ("r", x), ("r", head),
           ("w", logits))
    t.step(1e5, "sample", ("r", logits))
    return t


def tinyllama_decode():
    """A 1.1B decoder's decoding step (TinyLlama's shape: 22 layers, d
    2048, MLP 5632, 32 query heads and 4 key-value heads of 64) in fp16,
    batch 16 at 4096 tokens of context.  A step takes the longer of its
    FLOPs and device memory reading its weights and cache."""
    layers, d, ff, kvd, b, ctx, F2 = 22, 2048, 5632, 256, 16, 4096, 2
    t = Trace("tinyllama1b-decode-b16-ctx4096")
    x = t.chunk(b * d * F2, "token")
    t.step(1e5, "embed", ("w", x))
    for i in range(layers):
        wa = (2 * d * d + 2 * d * kvd) * F2
        wm = 3 * d * ff * F2
        wkv = 2 * b * ctx * kvd * F2
        attn = t.chunk(wa, f"l{i}.attn.w", True)
        mlp = t.chunk(wm, f"l{i}.mlp.w", True)
        kv = t.chunk(wkv, f"l{i}.kv", True)
        a = t.chunk(b * d * F2, f"l{i}.attn.out")
        y = t.chunk(b * d * F2, f"l{i}.out")
        t.step(max(b * wa + 4 * b * ctx * d, mem(wa + 2 * wkv)),
               f"l{i}.attn", ("r", x), ("r", attn), ("rw", kv), ("w", a))
        t.step(max(b * wm, mem(wm)), f"l{i}.mlp", ("r", a), ("r", mlp),
               ("w", y))
        x = y
    head = t.chunk(32000 * d * F2, "lm_head.w", True)
    logits = t.chunk(b * 32000 * F4, "logits")
    t.step(max(2 * b * 32000 * d, mem(32000 * d * F2)), "lm_head",
           ("r", x), ("r", head), ("w", logits))
    t.step(1e5, "sample", ("r", logits))
    return t


def dense_layers(t, b, name, shapes, y):
    """Fully connected layers of (in, out) shapes on batch b from chunk y:
    their (weight, grad, in, out, flops) and the last output."""
    layers = []
    for i, (fin, fout) in enumerate(shapes):
        w, g = (t.chunk(fin * fout * F4, f"{name}{i}.{k}", True)
                for k in ("w", "w.grad"))
        out = t.chunk(b * fout * F4, f"{name}{i}.out")
        flops = 2 * b * fin * fout
        t.step(flops, f"{name}{i}", ("r", y), ("r", w), ("w", out))
        layers.append((w, g, y, out, flops))
        y = out
    return layers, y


def dlrm():
    """A recommendation model's training step (DLRM's shape: a bottom and
    a top MLP around the pairwise interaction of a dense vector with
    pooled embeddings), batch 32768, eight embedding tables of 128-wide
    fp32 rows, 20 lookups a sample, updated in place in backward with
    row-wise Adagrad (one accumulator per row); the dense layers take
    SGD.  Lookups are bound by device memory (HBM_BPS), not FLOPs."""
    b, dim, pool = 32768, 128, 20
    t = Trace("dlrm-8tables-b32768-train")
    rows = (196613, 393221, 786433, 1572869, 131101, 524309, 1048583,
            327689)  # odd row counts: 100-805 MB tables
    tables = [(t.chunk(r * dim * F4, f"emb{i}", True),
               t.chunk(r * F4, f"emb{i}.adagrad", True))
              for i, r in enumerate(rows)]
    dense = t.chunk(b * 13 * F4, "dense.in")
    idx = [t.chunk(b * pool * 8, f"idx{i}") for i in range(len(rows))]
    t.step(1e5, "load", ("w", dense), *(("w", x) for x in idx))
    mlp, y = dense_layers(t, b, "bot", ((13, 512), (512, 256), (256, dim)),
                          dense)
    pooled = []
    for i, ((tab, _), x) in enumerate(zip(tables, idx)):
        e = t.chunk(b * dim * F4, f"emb{i}.out")
        t.step(mem(b * pool * dim * F4), f"emb{i}", ("r", x), ("r", tab),
               ("w", e))
        pooled.append(e)
    nf = len(rows) + 1
    zdim = nf * (nf - 1) // 2 + dim
    z = t.chunk(b * zdim * F4, "interact.out")
    t.step(2 * b * nf * nf * dim, "interact", ("r", y),
           *(("r", e) for e in pooled), ("w", z))
    top, top_in = dense_layers(t, b, "top", ((zdim, 1024), (1024, 1024),
                                            (1024, 512), (512, 256), (256, 1)),
                               z)
    dy = t.chunk(b * F4, "loss.grad")
    t.step(1e5, "loss", ("r", top_in), ("w", dy))
    for w, g, inp, out, flops in reversed(top):
        din = t.chunk(t.chunks[inp][1], "in.grad")
        t.step(2 * flops, "top.bwd", ("r", dy), ("r", inp), ("r", w),
               ("w", g), ("w", din))
        dy = din
    dpooled = [t.chunk(b * dim * F4, f"emb{i}.grad") for i in range(len(rows))]
    dbot = t.chunk(b * dim * F4, "bot.grad")
    t.step(4 * b * nf * nf * dim, "interact.bwd", ("r", dy), ("r", y),
           *(("r", e) for e in pooled), ("w", dbot),
           *(("w", d) for d in dpooled))
    for i, ((tab, acc), x, d) in enumerate(zip(tables, idx, dpooled)):
        t.step(mem(3 * b * pool * dim * F4), f"emb{i}.update", ("r", d),
               ("r", x), ("rw", tab), ("rw", acc))
    dy = dbot
    for w, g, inp, out, flops in reversed(mlp):
        din = t.chunk(t.chunks[inp][1], "in.grad")
        t.step(2 * flops, "bot.bwd", ("r", dy), ("r", inp), ("r", w),
               ("w", g), ("w", din))
        dy = din
    for w, g, _, _, _ in mlp + top:
        t.step(3 * t.chunks[w][1] // F4, "sgd", ("rw", w), ("r", g))
    return t


def gpt_mixed():
    """A 1.2B-parameter decoder's training step in mixed precision, as
    frameworks run it: bf16 weights and activations, fp32 master weights
    and Adam's two moments (12 bytes a parameter) touched only by the
    optimizer, gradients made afresh in backward (set to None after each
    step, so the first accumulation writes them whole) and freed once the
    optimizer has read them, which then overwrites the bf16 copy of each
    weight from its master.  24 layers, d 2048, 16 heads, sequence 1024,
    batch 2; the optimizer is bound by device memory (HBM_BPS)."""
    L, d, h, s, b, F2 = 24, 2048, 16, 1024, 2, 2
    t = Trace("gpt-1.2b-mixed-b2-s1024-train")
    tok = b * s * d * F2
    vocab = 50304
    emb = t.chunk(vocab * d * F2, "wte.bf16", True)
    emb_master = t.chunk(vocab * d * F4, "wte.master", True)
    emb_adam = t.chunk(2 * vocab * d * F4, "wte.adam", True)
    x0 = t.chunk(tok, "embed.out")
    t.step(2 * b * s * d, "embed", ("r", emb), ("w", x0))
    layers, x = [], x0
    for i in range(L):
        n = {"qkv": 3 * d * d, "proj": d * d, "fc1": 4 * d * d,
             "fc2": 4 * d * d}
        w = {k: t.chunk(v * F2, f"h{i}.{k}.bf16", True) for k, v in n.items()}
        master = {k: t.chunk(v * F4, f"h{i}.{k}.master", True)
                  for k, v in n.items()}
        adam = {k: t.chunk(2 * v * F4, f"h{i}.{k}.adam", True)
                for k, v in n.items()}
        a = block_activations(t, i, tok, b * h * s * s * F2)
        block_forward(t, i, b, s, d, x, w, a)
        layers.append((n, w, master, adam, a, x))
        x = a["out"]
    logits = t.chunk(b * s * vocab * F2 // 8, "logits.chunked")
    t.step(2 * b * s * d * vocab, "lm_head", ("r", x), ("r", emb),
           ("w", logits))
    demb = t.chunk(vocab * d * F2, "wte.grad")
    dx = t.chunk(tok, "grad.out")
    t.step(4 * b * s * d * vocab, "lm_head.bwd", ("r", logits), ("r", x),
           ("r", emb), ("w", demb), ("w", dx))
    grads = []
    for i in reversed(range(L)):
        n, w, master, adam, a, xin = layers[i]
        g = {k: t.chunk(v * F2, f"h{i}.{k}.grad") for k, v in n.items()}
        d5 = block_backward(t, i, b, s, d, tok, dx, w, g, "w", a, xin)
        grads.append(g)
        dx = d5
    t.step(2 * b * s * d, "embed.bwd", ("r", dx), ("rw", demb))
    t.step(mem(18 * vocab * d), "adam.wte", ("r", demb), ("rw", emb_master),
           ("rw", emb_adam), ("rw", emb))
    for i, g in zip(reversed(range(L)), grads):
        n, w, master, adam, a, xin = layers[i]
        for k in n:
            t.step(mem(18 * n[k]), f"adam.h{i}.{k}", ("r", g[k]),
                   ("rw", master[k]), ("rw", adam[k]), ("w", w[k]))
    return t


def moe_decode(b=4):
    layers, d, ff, ne, ctx, F2 = 16, 2048, 5632, 8, 1024, 2
    rng = random.Random(8)
    t = Trace(f"moe-16x8-decode-b{b}-ctx1024")

    def bound(flops, nbytes):
        # Decoding is bound by device memory: a step takes at least its
        # bytes read at HBM_BPS, as FLOPs at the modelled speed.
        return max(flops, mem(nbytes))

    attn = [t.chunk(4 * d * d * F2, f"l{i}.attn.w", True) for i in range(layers)]
    router = [t.chunk(d * ne * F2, f"l{i}.router.w", True) for i in range(layers)]
    kv = [t.chunk(2 * b * ctx * d * F2, f"l{i}.kv", True) for i in range(layers)]
    experts = [[t.chunk(3 * d * ff * F2, f"l{i}.expert{e}.w", True)
                for e in range(ne)] for i in range(layers)]
    head = t.chunk(32000 * d * F2, "lm_head.w", True)
    for tok in range(8):
        x = t.chunk(b * d * F2, f"t{tok}.token")
        t.step(1e5, f"t{tok}.embed", ("w", x))
        for i in range(layers):
            a = t.chunk(b * d * F2, f"t{tok}.l{i}.attn.out")
            t.step(bound(2 * b * 4 * d * d + 4 * b * ctx * d,
                       (4 * d * d + 2 * b * ctx * d) * F2),
                   f"t{tok}.l{i}.attn",
                   ("r", x), ("r", attn[i]), ("rw", kv[i]), ("w", a))
            gate = t.chunk(b * ne * F4, f"t{tok}.l{i}.gate")
            t.step(2 * b * d * ne, f"t{tok}.l{i}.router", ("r", a),
                   ("r", router[i]), ("w", gate))
            # Each of the b tokens picks two experts; each expert chosen
            # runs once on the tokens that chose it.
            chosen = {}
            for _ in range(b):
                for e in rng.sample(range(ne), 2):
                    chosen[e] = chosen.get(e, 0) + 1
            y = t.chunk(b * d * F2, f"t{tok}.l{i}.out")
            for k, e in enumerate(sorted(chosen)):
                t.step(bound(2 * chosen[e] * 3 * d * ff, 3 * d * ff * F2),
                       f"t{tok}.l{i}.expert{e}",
                       ("r", a), ("r", gate), ("r", experts[i][e]),
                       ("rw" if k else "w", y))
            x = y
        logits = t.chunk(b * 32000 * F4, f"t{tok}.logits")
        t.step(bound(2 * b * 32000 * d, 32000 * d * F2), f"t{tok}.lm_head",
               ("r", x), ("r", head), ("w", logits))
    return t


def unet2d():
    """A 2D U-Net's training step (a diffusion model's denoiser, without
    attention) at 256^2, batch 8, Adam: two 3x3 convolutions a level at
    64-512 channels, a strided convolution down and a transposed one up,
    each level's output kept for the decoder's concatenation (the skip)
    and read again in backward."""
    b, F = 8, F4
    t = Trace("unet2d-256-b8-train")
    x = t.chunk(b * 4 * 256 * 256 * F, "input", True)
    layers = []  # (name, weight, grad, m, v, ins, flops)

    def conv(name, ins, cin, cout, k, hw):
        wbytes = cin * cout * k * k * F
        w, g, m, v = (t.chunk(wbytes, f"{name}.{s}", True)
                      for s in ("w", "w.grad", "adam.m", "adam.v"))
        out = t.chunk(b * cout * hw * hw * F, f"{name}.out")
        flops = 2 * b * cin * cout * k * k * hw * hw
        t.step(flops, name, *[("r", i) for i in ins], ("r", w), ("w", out))
        layers.append((name, w, g, m, v, ins, flops))
        return out

    widths = (64, 128, 256, 512)
    y, c, hw, skips = x, 4, 256, []
    for lvl, wd in enumerate(widths):
        y = conv(f"down{lvl}.a", [y], c, wd, 3, hw)
        y = conv(f"down{lvl}.b", [y], wd, wd, 3, hw)
        skips.append((y, wd, hw))
        c = wd
        if lvl + 1 < len(widths):
            hw //= 2
            y = conv(f"down{lvl}.pool", [y], wd, wd, 2, hw)
    for lvl in range(len(widths) - 2, -1, -1):
        sk, wd, shw = skips[lvl]
        y = conv(f"up{lvl}.t", [y], c, wd, 2, shw)
        y = conv(f"up{lvl}.a", [y, sk], 2 * wd, wd, 3, shw)
        y = conv(f"up{lvl}.b", [y], wd, wd, 3, shw)
        c = wd
    y = conv("head", [y], c, 4, 1, 256)
    dy = t.chunk(t.chunks[y][1], "loss.grad")
    t.step(1e6, "loss", ("r", y), ("w", dy))
    grads = {}  # a chunk read by two layers gets its gradient added to
    for name, w, g, m, v, ins, flops in reversed(layers):
        refs = [("r", dy), ("r", w), ("w", g)]
        for i in ins:
            if i == x:
                continue
            if i in grads:
                refs.append(("rw", grads[i]))
            else:
                grads[i] = t.chunk(t.chunks[i][1], name + ".in.grad")
                refs.append(("w", grads[i]))
            refs.append(("r", i))
        t.step(2 * flops, name + ".bwd", *refs)
        dy = grads.get(ins[0], dy)
    for name, w, g, m, v, ins, flops in layers:
        t.step(10 * t.chunks[w][1] // F, "adam." + name, ("rw", w),
               ("r", g), ("rw", m), ("rw", v))
    return t


def lstm():
    """A three-layer LSTM language model's training step, layer by layer
    as cuDNN runs it (hidden 2048, batch 64, 256 time steps, Adam): each
    layer's 134 MB of weights read at every time step of its layer, its
    gradient added to at every time step of backward, and each step's
    gates and states (2.6 MB) kept from forward for backward."""
    b, h, steps, F = 64, 2048, 256, F4
    t = Trace("lstm3-h2048-b64-t256-train")
    emb = t.chunk(steps * b * h * F, "embedded", True)
    w, g, m, v = [], [], [], []
    for lyr in range(3):
        wb = 4 * h * 2 * h * F
        w.append(t.chunk(wb, f"l{lyr}.w", True))
        g.append(t.chunk(wb, f"l{lyr}.w.grad", True))
        m.append(t.chunk(wb, f"l{lyr}.adam.m", True))
        v.append(t.chunk(wb, f"l{lyr}.adam.v", True))
    flops = 2 * b * 4 * h * 2 * h
    saved = []  # per layer, per time step: (gates, h)
    xs = [None] * steps  # layer input per time step; None: the embedding
    for lyr in range(3):
        hs, layer = [], []
        for s in range(steps):
            gates = t.chunk(b * 4 * h * F, f"l{lyr}.t{s}.gates")
            hc = t.chunk(2 * b * h * F, f"l{lyr}.t{s}.hc")
            refs = [("r", emb if xs[s] is None else xs[s]), ("r", w[lyr])]
            if s:
                refs.append(("r", hs[-1]))
            t.step(flops, f"l{lyr}.t{s}", *refs, ("w", gates), ("w", hc))
            hs.append(hc)
            layer.append((gates, hc))
        saved.append(layer)
        xs = hs
    logits_g = t.chunk(b * h * F * steps, "out.grad")
    t.step(2 * b * h * 32000 * steps, "head+loss", *[("r", x) for x in xs],
           ("w", logits_g))
    dys = [None] * steps
    for lyr in range(2, -1, -1):
        dh = None
        nd = [None] * steps
        for s in range(steps - 1, -1, -1):
            gates, hc = saved[lyr][s]
            din = t.chunk(b * h * F, f"l{lyr}.t{s}.in.grad")
            dnext = t.chunk(2 * b * h * F, f"l{lyr}.t{s}.h.grad")
            refs = [("r", logits_g if dys[s] is None else dys[s]),
                    ("r", gates), ("r", hc), ("r", w[lyr]),
                    ("w" if s == steps - 1 else "rw", g[lyr])]
            if dh is not None:
                refs.append(("r", dh))
            t.step(2 * flops, f"l{lyr}.t{s}.bwd", *refs, ("w", din),
                   ("w", dnext))
            dh = dnext
            nd[s] = din
        dys = nd
    for lyr in range(3):
        t.step(10 * t.chunks[w[lyr]][1] // F, f"adam.l{lyr}", ("rw", w[lyr]),
               ("r", g[lyr]), ("rw", m[lyr]), ("rw", v[lyr]))
    return t


def vit_accum():
    """A ViT-H/14-sized encoder's fine-tuning step in mixed precision with
    activation checkpointing and gradient accumulation: four micro-batches
    of 8 images at mixed resolutions (257, 577, 401 and 197 tokens, so
    every micro-batch's activations have sizes of their own), each
    block's input kept from forward and the block's forward run again in
    backward; bf16 weights, fp32 gradients made by the first micro-batch
    and added to by the others, and after the four the AdamW step (fp32
    master weights and two moments, 12 bytes a parameter, read and
    written only there), which writes the bf16 weights afresh."""
    L, d, h, b, B2 = 32, 1280, 16, 8, 2
    t = Trace("vit-h14-accum4-ckpt-train")
    patch = t.chunk(3 * 14 * 14 * d * B2, "patch.w", True)
    patch_g = t.chunk(3 * 14 * 14 * d * F4, "patch.w.grad", True)
    patch_m = t.chunk(3 * 14 * 14 * d * 12, "patch.master+adam", True)
    blocks = []
    for i in range(L):
        w = {k: t.chunk(n * B2, f"h{i}.{k}", True) for k, n in
             (("qkv", 3 * d * d), ("proj", d * d), ("fc1", 4 * d * d),
              ("fc2", 4 * d * d))}
        g = {k: t.chunk(t.chunks[c][1] * 2, f"h{i}.{k}.grad", True)
             for k, c in w.items()}
        m = {k: t.chunk(t.chunks[c][1] * 6, f"h{i}.{k}.master+adam", True)
             for k, c in w.items()}
        blocks.append((w, g, m))
    for mb, s in enumerate((257, 577, 401, 197)):
        tok = b * s * d * B2
        img = t.chunk(b * (s - 1) * 3 * 14 * 14 * B2, f"mb{mb}.images")
        t.step(1e6, f"mb{mb}.load", ("w", img))
        x = t.chunk(tok, f"mb{mb}.embed")
        t.step(2 * b * s * 3 * 14 * 14 * d, f"mb{mb}.patch", ("r", img),
               ("r", patch), ("w", x))
        inputs = []
        for i, (w, g, m) in enumerate(blocks):
            inputs.append(x)
            a = block_activations(t, i, tok, b * h * s * s * B2)
            block_forward(t, i, b, s, d, x, w, a)
            x = a["out"]
        dx = t.chunk(tok, f"mb{mb}.loss.grad")
        t.step(2 * b * s * d * 1000, f"mb{mb}.head+loss", ("r", x),
               ("w", dx))
        acc = "w" if mb == 0 else "rw"
        for i in reversed(range(L)):
            w, g, m = blocks[i]
            a = block_activations(t, i, tok, b * h * s * s * B2)
            block_forward(t, i, b, s, d, inputs[i], w, a)
            dx = block_backward(t, i, b, s, d, tok, dx, w, g, acc, a,
                                inputs[i])
        t.step(2 * b * s * 3 * 14 * 14 * d, f"mb{mb}.patch.bwd", ("r", dx),
               ("r", img), (acc, patch_g))
    t.step(12 * t.chunks[patch][1] // B2, "adamw.patch", ("r", patch_g),
           ("rw", patch_m), ("w", patch))
    for i, (w, g, m) in enumerate(blocks):
        for k in w:
            t.step(12 * t.chunks[w[k]][1] // B2, f"adamw.h{i}.{k}",
                   ("r", g[k]), ("rw", m[k]), ("w", w[k]))
    return t


def sd_infer():
    """Text-to-image diffusion inference with a denoiser shaped like
    Stable Diffusion's, in fp16: a text encoder run once (12 layers, d
    768, 77 tokens), 25 denoising steps each running the whole U-Net on a
    batch of 2 (the prompt and the empty one) from 64^2 latents (four
    levels of 320, 640, 1280 and 1280 channels down to 8^2, two residual
    blocks a level down and three up, attention fused as flash attention
    does at the three finer levels, each block's output kept for the way
    up), and a VAE decoder to 512^2 at the end.  The U-Net's 1.08 GB of
    weights (Stable Diffusion 1.5's has 1.7: here the way up's first
    convolution of a block reads the skip but is sized for the block's
    own channels, and attention has no feed-forward layer) are read once
    a denoising step; activations are made and freed within each."""
    B2, b = 2, 2
    t = Trace("sd-512-25steps-infer")
    weights = {}

    def wt(name, nbytes):
        if name not in weights:
            weights[name] = t.chunk(nbytes, name, True)
        return weights[name]

    def op(name, flops, ins, wname, wbytes, out_bytes, tag):
        out = t.chunk(out_bytes, f"{tag}.{name}.out")
        refs = [("r", i) for i in ins]
        if wname:
            refs.append(("r", wt(wname, wbytes)))
        t.step(flops, f"{tag}.{name}", *refs, ("w", out))
        return out

    toks = t.chunk(2 * 77 * 4, "prompt.tokens", True)
    x = op("embed", 1e6, [toks], "te.embed", 49408 * 768 * B2,
           b * 77 * 768 * B2, "te")
    for i in range(12):
        x = op(f"layer{i}", 2 * b * 77 * 12 * 768 * 768, [x], f"te.l{i}",
               12 * 768 * 768 * B2, b * 77 * 768 * B2, "te")
    text = x
    lat = t.chunk(1 * 4 * 64 * 64 * B2, "latents", True)
    widths, attn = (320, 640, 1280, 1280), (True, True, True, False)
    for step in range(25):
        tag = f"s{step}"
        x2 = op("in", 2 * b * 64 * 64 * 4 * 320 * 9, [lat], "u.in",
                4 * 320 * 9 * B2, b * 320 * 64 * 64 * B2, tag)
        y, c, hw, skips = x2, 320, 64, [x2]

        def res(name, y, cin, cout, hw, extra=()):
            a = op(name + ".c1", 2 * b * hw * hw * cin * cout * 9,
                   [y, *extra], "u." + name + ".c1", cin * cout * 9 * B2,
                   b * cout * hw * hw * B2, tag)
            return op(name + ".c2", 2 * b * hw * hw * cout * cout * 9,
                      [a, y], "u." + name + ".c2", cout * cout * 9 * B2,
                      b * cout * hw * hw * B2, tag)

        def att(name, y, c, hw):
            n = hw * hw
            return op(name, 2 * b * n * c * c * 6 + 4 * b * n * n * c
                      + 4 * b * n * 77 * c, [y, text], "u." + name,
                      (6 * c * c + 2 * 768 * c) * B2, b * c * n * B2, tag)

        for lvl, wd in enumerate(widths):
            for r in range(2):
                y = res(f"d{lvl}.r{r}", y, c, wd, hw)
                c = wd
                if attn[lvl]:
                    y = att(f"d{lvl}.a{r}", y, c, hw)
                skips.append(y)
            if lvl + 1 < len(widths):
                y = op(f"d{lvl}.down", 2 * b * (hw // 2) ** 2 * c * c * 9,
                       [y], f"u.d{lvl}.down", c * c * 9 * B2,
                       b * c * (hw // 2) ** 2 * B2, tag)
                hw //= 2
                skips.append(y)
        y = res("mid.r0", y, c, c, hw)
        y = att("mid.a", y, c, hw)
        y = res("mid.r1", y, c, c, hw)
        for lvl in reversed(range(len(widths))):
            wd = widths[lvl]
            for r in range(3):
                sk = skips.pop()
                y = res(f"u{lvl}.r{r}", y, c, wd, hw, extra=(sk,))
                c = wd
                if attn[lvl]:
                    y = att(f"u{lvl}.a{r}", y, c, hw)
            if lvl > 0:
                hw *= 2
                y = op(f"u{lvl}.up", 2 * b * hw * hw * c * c * 9, [y],
                       f"u.u{lvl}.up", c * c * 9 * B2,
                       b * c * hw * hw * B2, tag)
        t.step(2 * b * 64 * 64 * 320 * 4 * 9, f"{tag}.out+update",
               ("r", y), ("r", wt("u.out", 320 * 4 * 9 * B2)), ("rw", lat))
    y, c, hw = lat, 4, 64
    for lvl, wd in enumerate((512, 512, 256, 128)):
        y = op(f"up{lvl}", 2 * hw * hw * c * wd * 9 * 3, [y], f"vae.up{lvl}",
               3 * c * wd * 9 * B2, wd * hw * hw * B2, "vae")
        c = wd
        if lvl < 3:
            hw *= 2
    op("rgb", 2 * hw * hw * c * 3 * 9, [y], "vae.rgb", c * 3 * 9 * B2,
       3 * hw * hw * B2, "vae")
    return t


def lora_7b():
    """LoRA fine-tuning of a 7B decoder (LLaMA-7B's shape: 32 layers, d
    4096, SwiGLU of 11008, 32000 tokens) in bf16 on one sequence of 2048
    tokens.  The base weights are frozen: read in forward, and in backward
    twice, since under activation checkpointing each layer's forward runs
    again (only its input kept from forward) before its backward, which
    computes input gradients only.  Adapters of rank 16 on the query and
    value projections are the only weights trained: fp32 gradients and
    AdamW state (master weights and two moments), updated at the end.
    Attention is fused as flash attention does (no score matrix kept);
    the norms are folded into the projections that follow them."""
    L, d, ff, s, r, B2, V = 32, 4096, 11008, 2048, 16, 2, 32000
    t = Trace("lora7b-r16-s2048-ckpt-train")
    tok = s * d * B2
    emb = t.chunk(V * d * B2, "embed.w", True)
    head = t.chunk(V * d * B2, "lm_head.w", True)
    ids = t.chunk(s * 8, "tokens")
    t.step(1e5, "load", ("w", ids))
    x = t.chunk(tok, "embed.out")
    t.step(1e6, "embed", ("r", ids), ("r", emb), ("w", x))
    layers = []
    for i in range(L):
        w = {k: t.chunk(n * B2, f"l{i}.{k}", True) for k, n in
             (("qkv", 3 * d * d), ("o", d * d), ("gateup", 2 * d * ff),
              ("down", ff * d))}
        lw = t.chunk(2 * 2 * d * r * B2, f"l{i}.lora", True)
        lg = t.chunk(2 * 2 * d * r * F4, f"l{i}.lora.grad", True)
        lm = t.chunk(3 * 2 * 2 * d * r * F4, f"l{i}.lora.adamw", True)
        layers.append((w, lw, lg, lm))

    def forward(i, x, w, lw, tag):
        qkv = t.chunk(3 * tok, f"l{i}.{tag}.qkv")
        t.step(2 * s * (3 * d * d + 4 * d * r), f"l{i}.{tag}.qkv", ("r", x),
               ("r", w["qkv"]), ("r", lw), ("w", qkv))
        ctx = t.chunk(tok, f"l{i}.{tag}.ctx")
        t.step(2 * s * s * d, f"l{i}.{tag}.attention", ("r", qkv),
               ("w", ctx))
        res = t.chunk(tok, f"l{i}.{tag}.res")
        t.step(2 * s * d * d, f"l{i}.{tag}.o", ("r", ctx), ("r", w["o"]),
               ("r", x), ("w", res))
        h = t.chunk(2 * s * ff * B2, f"l{i}.{tag}.gateup")
        t.step(2 * s * d * 2 * ff, f"l{i}.{tag}.gateup", ("r", res),
               ("r", w["gateup"]), ("w", h))
        hm = t.chunk(s * ff * B2, f"l{i}.{tag}.swiglu")
        t.step(4 * s * ff, f"l{i}.{tag}.swiglu", ("r", h), ("w", hm))
        out = t.chunk(tok, f"l{i}.{tag}.out")
        t.step(2 * s * ff * d, f"l{i}.{tag}.down", ("r", hm),
               ("r", w["down"]), ("r", res), ("w", out))
        return {"qkv": qkv, "ctx": ctx, "res": res, "h": h, "hm": hm,
                "out": out}

    inputs = []
    for i, (w, lw, lg, lm) in enumerate(layers):
        inputs.append(x)
        x = forward(i, x, w, lw, "fwd")["out"]
    logits = t.chunk(s * V * F4, "logits")
    t.step(2 * s * d * V, "lm_head", ("r", x), ("r", head), ("w", logits))
    dx = t.chunk(tok, "lm_head.grad")
    t.step(2 * s * d * V, "loss+lm_head.bwd", ("r", logits), ("r", head),
           ("w", dx))
    for i in reversed(range(L)):
        w, lw, lg, lm = layers[i]
        a = forward(i, inputs[i], w, lw, "again")
        dhm = t.chunk(s * ff * B2, f"l{i}.swiglu.grad")
        t.step(2 * s * ff * d, f"l{i}.down.bwd", ("r", dx), ("r", w["down"]),
               ("w", dhm))
        dh = t.chunk(2 * s * ff * B2, f"l{i}.gateup.grad")
        t.step(8 * s * ff, f"l{i}.swiglu.bwd", ("r", dhm), ("r", a["h"]),
               ("w", dh))
        dres = t.chunk(tok, f"l{i}.res.grad")
        t.step(2 * s * d * 2 * ff, f"l{i}.gateup.bwd", ("r", dh),
               ("r", w["gateup"]), ("r", dx), ("w", dres))
        dctx = t.chunk(tok, f"l{i}.ctx.grad")
        t.step(2 * s * d * d, f"l{i}.o.bwd", ("r", dres), ("r", w["o"]),
               ("w", dctx))
        dqkv = t.chunk(3 * tok, f"l{i}.qkv.grad")
        t.step(5 * s * s * d, f"l{i}.attention.bwd", ("r", dctx),
               ("r", a["qkv"]), ("r", a["ctx"]), ("w", dqkv))
        din = t.chunk(tok, f"l{i}.in.grad")
        t.step(2 * s * (3 * d * d + 8 * d * r), f"l{i}.qkv.bwd",
               ("r", dqkv), ("r", inputs[i]), ("r", w["qkv"]), ("r", lw),
               ("w", lg), ("r", dres), ("w", din))
        dx = din
    for i, (w, lw, lg, lm) in enumerate(layers):
        t.step(1e6, f"adamw.l{i}", ("r", lg), ("rw", lm), ("w", lw))
    return t


def whisper_beam():
    """Speech recognition with an encoder-decoder in fp16, Whisper large's
    shape (32 + 32 layers, d 1280, feed-forward 5120, 51865 tokens): the
    encoder once over 1500 frames (30 s of audio), each decoder layer's
    cross-attention keys and values computed once from its output and
    repeated for the 5 beams, then 64 tokens decoded.  Each token reads
    every decoder layer's weights, its cross-attention keys and values
    and its self-attention cache (preallocated for 448 tokens, written
    each token), and the beams' caches are reordered after each token,
    as a generation loop that index-selects every layer's cache does.
    Decoding steps take their time from device memory (HBM_BPS)."""
    L, d, ff, T, beam, F, V, B2 = 32, 1280, 5120, 64, 5, 1500, 51865, 2
    t = Trace("whisper-large-beam5-64tok-infer")
    mel = t.chunk(80 * 3000 * B2, "mel")
    t.step(1e5, "load", ("w", mel))
    stem = t.chunk((80 * d * 3 + d * d * 3) * B2, "enc.stem.w", True)
    x = t.chunk(F * d * B2, "enc.stem.out")
    t.step(2 * 3000 * 80 * d * 3 + 2 * F * d * d * 3, "enc.stem",
           ("r", mel), ("r", stem), ("w", x))
    for i in range(L):
        att = t.chunk(4 * d * d * B2, f"enc{i}.attn.w", True)
        mlp = t.chunk(2 * d * ff * B2, f"enc{i}.mlp.w", True)
        a = t.chunk(F * d * B2, f"enc{i}.attn.out")
        t.step(2 * F * 4 * d * d + 4 * F * F * d, f"enc{i}.attn",
               ("r", x), ("r", att), ("w", a))
        y = t.chunk(F * d * B2, f"enc{i}.out")
        t.step(2 * F * 2 * d * ff, f"enc{i}.mlp", ("r", a), ("r", mlp),
               ("w", y))
        x = y
    emb = t.chunk(V * d * B2, "dec.embed.w", True)
    dec = []
    for i in range(L):
        sa = t.chunk(4 * d * d * B2, f"dec{i}.self.w", True)
        cq = t.chunk(2 * d * d * B2, f"dec{i}.cross.qo.w", True)
        ckv = t.chunk(2 * d * d * B2, f"dec{i}.cross.kv.w", True)
        mlp = t.chunk(2 * d * ff * B2, f"dec{i}.mlp.w", True)
        cache = t.chunk(2 * beam * 448 * d * B2, f"dec{i}.kv", True)
        cross = t.chunk(2 * beam * F * d * B2, f"dec{i}.cross.kv")
        t.step(2 * F * 2 * d * d, f"dec{i}.cross.kv", ("r", x), ("r", ckv),
               ("w", cross))
        dec.append((sa, cq, mlp, cache, cross))
    toks = t.chunk(beam * 8, "beam.tokens", True)
    for n in range(T):
        h = t.chunk(beam * d * B2, f"t{n}.embed")
        t.step(mem(beam * d * B2), f"t{n}.embed", ("r", toks), ("r", emb),
               ("w", h))
        for i, (sa, cq, mlp, cache, cross) in enumerate(dec):
            a = t.chunk(beam * d * B2, f"t{n}.dec{i}.self")
            t.step(mem(4 * d * d * B2 + 2 * beam * (n + 4) * d * B2),
                   f"t{n}.dec{i}.self", ("r", h), ("r", sa), ("rw", cache),
                   ("w", a))
            c = t.chunk(beam * d * B2, f"t{n}.dec{i}.cross")
            t.step(mem(2 * d * d * B2 + 2 * beam * F * d * B2),
                   f"t{n}.dec{i}.cross", ("r", a), ("r", cq), ("r", cross),
                   ("w", c))
            y = t.chunk(beam * d * B2, f"t{n}.dec{i}.out")
            t.step(mem(2 * d * ff * B2), f"t{n}.dec{i}.mlp", ("r", c),
                   ("r", mlp), ("w", y))
            h = y
        logits = t.chunk(beam * V * F4, f"t{n}.logits")
        t.step(mem(V * d * B2), f"t{n}.logits", ("r", h), ("r", emb),
               ("w", logits))
        t.step(mem(2 * L * 2 * beam * 448 * d * B2), f"t{n}.beam.reorder",
               ("r", logits), ("rw", toks),
               *(("rw", cache) for _, _, _, cache, _ in dec))
    return t


def pp_1f1b():
    """The first of four pipeline stages training a decoder in mixed
    precision (8 of its layers, d 2560, 32 heads, sequence 2048, micro-
    batch 1, attention fused as flash attention does), eight micro-batches
    in the one-forward-one-backward order (Megatron's): three forwards to
    fill the pipeline, then each forward followed by the backward of the
    oldest micro-batch in flight, then the last three backwards.  A
    micro-batch's activations live from its forward to its backward, so
    up to four sets are live and they go first in, first out, not last in,
    first out as in one forward and backward.  Sending activations to the
    next stage and receiving gradients from it are steps of their own.
    bf16 weights, fp32 gradients accumulated over the micro-batches, and
    the optimizer's fp32 master weights and Adam moments (12 bytes a
    parameter) read and written once, at the end; the stage holds the
    token embedding, whose gradient is accumulated likewise."""
    L, d, h, s, m, P, F2, V = 8, 2560, 32, 2048, 8, 4, 2, 50304
    t = Trace("pp-stage0of4-1f1b-m8-train")
    tok = s * d * F2
    emb = t.chunk(V * d * F2, "wte.bf16", True)
    emb_g = t.chunk(V * d * F4, "wte.grad", True)
    emb_m = t.chunk(V * d * 12, "wte.master+adam", True)
    n = {"qkv": 3 * d * d, "proj": d * d, "fc1": 4 * d * d, "fc2": 4 * d * d}
    layers = []
    for i in range(L):
        w = {k: t.chunk(v * F2, f"h{i}.{k}.bf16", True) for k, v in n.items()}
        g = {k: t.chunk(v * F4, f"h{i}.{k}.grad", True) for k, v in n.items()}
        o = {k: t.chunk(v * 12, f"h{i}.{k}.master+adam", True)
             for k, v in n.items()}
        layers.append((w, g, o))
    live = {}

    def forward(mb):
        ids = t.chunk(s * 8, f"mb{mb}.tokens")
        t.step(1e5, f"mb{mb}.load", ("w", ids))
        x = t.chunk(tok, f"mb{mb}.embed")
        t.step(2 * s * d, f"mb{mb}.embed", ("r", ids), ("r", emb), ("w", x))
        acts = []
        for i, (w, g, o) in enumerate(layers):
            a = block_activations(t, i, tok, h * s * F4)
            block_forward(t, i, 1, s, d, x, w, a)
            acts.append((a, x))
            x = a["out"]
        t.step(1e6, f"mb{mb}.send", ("r", x))
        live[mb] = (ids, acts)

    def backward(mb):
        ids, acts = live.pop(mb)
        dx = t.chunk(tok, f"mb{mb}.recv")
        t.step(1e6, f"mb{mb}.recv", ("w", dx))
        acc = "w" if mb == 0 else "rw"
        for i in reversed(range(L)):
            w, g, o = layers[i]
            a, xin = acts[i]
            dx = block_backward(t, i, 1, s, d, tok, dx, w, g, acc, a, xin)
        t.step(2 * s * d, f"mb{mb}.embed.bwd", ("r", dx), ("r", ids),
               (acc, emb_g))

    warm = min(P - 1, m)
    for mb in range(warm):
        forward(mb)
    for mb in range(warm, m):
        forward(mb)
        backward(mb - warm)
    for mb in range(m - warm, m):
        backward(mb)
    t.step(mem(18 * V * d), "adam.wte", ("r", emb_g), ("rw", emb_m),
           ("w", emb))
    for i, (w, g, o) in enumerate(layers):
        for k in n:
            t.step(mem(18 * n[k]), f"adam.h{i}.{k}", ("r", g[k]),
                   ("rw", o[k]), ("w", w[k]))
    return t


def effnet():
    """EfficientNet-B0's training step at 224^2, batch 128, fp32, SGD with
    momentum: a stem convolution, sixteen inverted bottleneck blocks (a
    1x1 expansion by 6, a depthwise 3x3 or 5x5, squeeze-and-excitation, a
    1x1 projection, a residual sum where shapes agree), a 1x1 head to 1280
    channels, pooling and a classifier.  Batch norm and the activation
    are folded into each convolution's output.  A step takes the longer
    of its FLOPs at TFLOPS and its bytes at device memory's HBM_BPS, so
    depthwise convolutions and the excitation's scaling, which do little
    arithmetic on large tensors, are bound by memory."""
    b = 128
    t = Trace("efficientnet-b0-224-b128-train")
    params = []  # (weight, grad, momentum)

    def step(name, flops, refs):
        nbytes = sum(t.chunks[c][1] for _, c in refs)
        t.step(max(flops, mem(nbytes)), name, *refs)

    def weight(name, n):
        w = t.chunk(n * F4, f"{name}.w", True)
        g = t.chunk(n * F4, f"{name}.w.grad", True)
        m = t.chunk(n * F4, f"{name}.w.momentum", True)
        params.append((w, g, m))
        return w, g

    ops = []  # (name, inputs, weight or None, grad, output, flops)

    def op(name, ins, wn, cout, hw, flops):
        w, g = weight(name, wn) if wn else (None, None)
        out = t.chunk(b * cout * hw * hw * F4, f"{name}.out")
        refs = [("r", i) for i in ins] + ([("r", w)] if w else [])
        step(name, flops, refs + [("w", out)])
        ops.append((name, ins, w, g, out, flops))
        return out

    x = t.chunk(b * 3 * 224 * 224 * F4, "input", True)
    y = op("stem", [x], 3 * 32 * 9, 32, 112, 2 * b * 3 * 32 * 9 * 112 * 112)
    cin, hw = 32, 112
    for st, (e, c, n, stride, k) in enumerate(
            ((1, 16, 1, 1, 3), (6, 24, 2, 2, 3), (6, 40, 2, 2, 5),
             (6, 80, 3, 2, 3), (6, 112, 3, 1, 5), (6, 192, 4, 2, 5),
             (6, 320, 1, 1, 3))):
        for r in range(n):
            nm, s2 = f"b{st}.{r}", stride if r == 0 else 1
            mid = cin * e
            h = y if e == 1 else op(nm + ".expand", [y], cin * mid, mid, hw,
                                    2 * b * cin * mid * hw * hw)
            hw2 = hw // s2
            dw = op(nm + ".dw", [h], mid * k * k, mid, hw2,
                    2 * b * mid * k * k * hw2 * hw2)
            se = max(1, cin // 4)
            pooled = op(nm + ".se.pool", [dw], 0, mid, 1, b * mid * hw2 * hw2)
            gate = op(nm + ".se.fc", [pooled], 2 * mid * se, mid, 1,
                      4 * b * mid * se)
            sc = op(nm + ".se.scale", [dw, gate], 0, mid, hw2,
                    b * mid * hw2 * hw2)
            out = op(nm + ".project", [sc], mid * c, c, hw2,
                     2 * b * mid * c * hw2 * hw2)
            if s2 == 1 and cin == c:
                out = op(nm + ".add", [out, y], 0, c, hw2, b * c * hw2 * hw2)
            y, cin, hw = out, c, hw2
    y = op("head", [y], cin * 1280, 1280, hw, 2 * b * cin * 1280 * hw * hw)
    y = op("pool", [y], 0, 1280, 1, b * 1280 * hw * hw)
    logits = op("fc", [y], 1280 * 1000, 1000, 1, 2 * b * 1280 * 1000)
    dy = t.chunk(t.chunks[logits][1], "loss.grad")
    step("loss", 1e6, [("r", logits), ("w", dy)])
    grad_of = {logits: dy}
    for name, ins, w, g, out, flops in reversed(ops):
        dout = grad_of.pop(out)
        refs = [("r", dout)] + [("r", i) for i in ins]
        if w is not None:
            refs += [("r", w), ("w", g)]
        outs = []
        for i in ins:
            if i == x:
                continue
            if i in grad_of:  # a tensor read by two ops: add to its gradient
                outs.append(("rw", grad_of[i]))
            else:
                grad_of[i] = t.chunk(t.chunks[i][1], f"{name}.in.grad")
                outs.append(("w", grad_of[i]))
        step(name + ".bwd", 2 * flops, refs + outs)
    for w, g, m in params:
        step(f"sgd.{w}", 3 * t.chunks[w][1] // F4, [("rw", w), ("r", g),
                                                      ("rw", m)])
    return t


def gcn_products():
    """Full-batch training of a three-layer graph convolutional network on
    a graph the size of ogbn-products (2,449,029 nodes, 123,718,280
    directed edges, 100 input features, 256 hidden, 47 classes), fp32,
    Adam.  Each layer aggregates its neighbours' features with a sparse
    product over the adjacency (CSR: int64 row offsets and columns, fp32
    normalised weights, 1.5 GB read by every layer's forward and all but
    the first's backward, the graph being symmetric) and then applies its
    weight; the aggregated features and each layer's output are kept for
    backward (the activation is folded into the output).  Sparse products
    are bound by device memory (the gathered rows and the adjacency at
    HBM_BPS); the weights are a few hundred KB, the activations 2.5 GB
    each."""
    N, E, dims = 2449029, 123718280, [100, 256, 256, 47]
    t = Trace("gcn-ogbn-products-fullbatch-train")
    rowptr = t.chunk((N + 1) * 8, "adj.rowptr", True)
    col = t.chunk(E * 8, "adj.col", True)
    val = t.chunk(E * F4, "adj.val", True)
    x = t.chunk(N * dims[0] * F4, "features", True)
    labels = t.chunk(N * 8, "labels", True)
    adj = [("r", rowptr), ("r", col), ("r", val)]

    def spmm_flops(width):
        # the adjacency once, each edge's source row gathered, each
        # node's row written
        return mem(E * 12 + E * width * F4 + N * width * F4)

    params, saved, h = [], [], x
    for i in range(3):
        fi, fo = dims[i], dims[i + 1]
        w = t.chunk(fi * fo * F4, f"l{i}.w", True)
        g = t.chunk(fi * fo * F4, f"l{i}.w.grad", True)
        m = t.chunk(fi * fo * F4, f"l{i}.adam.m", True)
        v = t.chunk(fi * fo * F4, f"l{i}.adam.v", True)
        params.append((w, g, m, v))
        agg = t.chunk(N * fi * F4, f"l{i}.agg")
        t.step(spmm_flops(fi), f"l{i}.spmm", *adj, ("r", h), ("w", agg))
        z = t.chunk(N * fo * F4, f"l{i}.out")
        t.step(2 * N * fi * fo, f"l{i}.linear", ("r", agg), ("r", w),
               ("w", z))
        saved.append((agg, z))
        h = z
    dz = t.chunk(N * dims[3] * F4, "logits.grad")
    t.step(mem(3 * N * dims[3] * F4), "loss", ("r", h), ("r", labels),
           ("w", dz))
    for i in (2, 1, 0):
        fi, fo = dims[i], dims[i + 1]
        w, g, _, _ = params[i]
        agg, _ = saved[i]
        t.step(2 * N * fi * fo, f"l{i}.linear.wgrad", ("r", agg), ("r", dz),
               ("w", g))
        if i == 0:
            break
        dagg = t.chunk(N * fi * F4, f"l{i}.agg.grad")
        t.step(2 * N * fi * fo, f"l{i}.linear.dgrad", ("r", dz), ("r", w),
               ("w", dagg))
        dprev = t.chunk(N * fi * F4, f"l{i - 1}.out.grad")
        # the sparse product back through the adjacency, then the
        # activation's gradient against the layer below's output
        t.step(spmm_flops(fi), f"l{i}.spmm.bwd", *adj, ("r", dagg),
               ("r", saved[i - 1][1]), ("w", dprev))
        dz = dprev
    for i, (w, g, m, v) in enumerate(params):
        n = dims[i] * dims[i + 1] * F4
        t.step(mem(7 * n), f"l{i}.adam", ("rw", w), ("r", g), ("rw", m),
               ("rw", v))
    return t


def serve_cb():
    """Serving a 7B decoder in fp16 with continuous batching (LLaMA-7B's
    shape): one iteration is eight decoding steps of the running batch.
    Ten requests run throughout, their key-value caches allocated for
    their own lengths (300 to 3,800 tokens, seeded: 16 KiB a token a
    layer, so no two caches of a layer alike in size); four more arrive
    during the iteration, each prefilled layer by layer from a prompt of
    its own length, decoded for a few steps and finished, their caches
    freed.  Each decoding step reads every layer's weights and the
    caches of the requests running then (appending a token dirties the
    cache as the runtime sees it) and the output head; decoding steps
    take their time from device memory, prefill from its FLOPs."""
    L, d, ff, V, B2, S = 32, 4096, 11008, 32000, 2, 8
    rng = random.Random(7)
    t = Trace("llama7b-serve-continuous-batching")
    attn = [t.chunk(4 * d * d * B2, f"l{i}.attn.w", True) for i in range(L)]
    mlp = [t.chunk(3 * d * ff * B2, f"l{i}.mlp.w", True) for i in range(L)]
    head = t.chunk(V * d * B2, "lm_head.w", True)
    per_tok = 2 * d * B2  # a token's keys and values in one layer
    # (first step, last step, tokens, caches, prompt or 0)
    reqs = []
    for r in range(10):
        n = rng.randint(300, 3800)
        reqs.append((0, S - 1, n, [t.chunk(n * per_tok, f"r{r}.l{i}.kv", True)
                                   for i in range(L)], 0))
    for r in range(10, 14):
        first = rng.randint(0, S - 3)
        last = rng.randint(first + 1, S - 1)
        prompt = rng.randint(100, 2000)
        n = prompt + (last - first) + 1
        reqs.append((first, last, n, [t.chunk(n * per_tok, f"r{r}.l{i}.kv")
                                      for i in range(L)], prompt))
    for s in range(S):
        for first, last, n, kv, prompt in reqs:
            if prompt and first == s:
                x = t.chunk(prompt * d * B2, f"s{s}.prefill.x")
                t.step(1e5, f"s{s}.prefill.embed", ("w", x))
                for i in range(L):
                    y = t.chunk(prompt * d * B2, f"s{s}.prefill.l{i}.out")
                    t.step(2 * prompt * (4 * d * d + 3 * d * ff)
                           + 2 * prompt * prompt * d, f"s{s}.prefill.l{i}",
                           ("r", x), ("r", attn[i]), ("r", mlp[i]),
                           ("w", kv[i]), ("w", y))
                    x = y
        running = [q for q in reqs if q[0] <= s <= q[1]]
        b = len(running)
        x = t.chunk(b * d * B2, f"s{s}.token")
        t.step(1e5, f"s{s}.embed", ("w", x))
        for i in range(L):
            a = t.chunk(b * d * B2, f"s{s}.l{i}.attn.out")
            cache = sum(q[2] for q in running) * per_tok
            t.step(mem(4 * d * d * B2 + cache), f"s{s}.l{i}.attn", ("r", x),
                   ("r", attn[i]), *(("rw", q[3][i]) for q in running),
                   ("w", a))
            y = t.chunk(b * d * B2, f"s{s}.l{i}.out")
            t.step(mem(3 * d * ff * B2), f"s{s}.l{i}.mlp", ("r", a),
                   ("r", mlp[i]), ("w", y))
            x = y
        logits = t.chunk(b * V * F4, f"s{s}.logits")
        t.step(mem(V * d * B2), f"s{s}.lm_head", ("r", x), ("r", head),
               ("w", logits))
        t.step(1e5, f"s{s}.sample", ("r", logits))
    return t


WORKLOADS = {"gpt2-medium": gpt2_medium, "resnet50": resnet50,
             "stream": stream, "random4k": random4k, "oddsizes": oddsizes,
             "vgg16": vgg16, "llama-decode": llama_decode,
             "tinyllama-decode": tinyllama_decode, "dlrm": dlrm,
             "gpt-mixed": gpt_mixed, "moe-decode": moe_decode,
             "moe-decode-b1": lambda: moe_decode(1), "unet2d": unet2d,
             "lstm": lstm, "vit-accum": vit_accum, "sd-infer": sd_infer,
             "lora-7b": lora_7b, "whisper-beam": whisper_beam,
             "pp-1f1b": pp_1f1b, "effnet": effnet,
             "gcn-products": gcn_products, "serve-cb": serve_cb}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, make in WORKLOADS.items():
        path = os.path.join(out, name + ".trace")
        make().write(path)
        print(path)


if __name__ == "__main__":
    main()
