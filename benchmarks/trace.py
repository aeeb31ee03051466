"""Synthetic op traces for benchmarking aliasflow's analysis and execution.

:func:`make_trace` models a transformer training loop the way a framework would see it at
the memory level:

* **activations** live in one big ``arena`` tensor managed like a caching allocator (best fit,
  block splitting, coalescing of free neighbours). Freed offsets are handed out again, often
  with a different shape (the number of tokens varies from step to step), so later ops reuse
  memory earlier ops used: WAR and WAW dependencies through reuse, mostly implicit;
* **parameters** and **gradients** are slices of two flat buffers (``params``, ``grads``),
  reshaped to 2-D weight matrices (1-D for the layernorm gains);
* **forward**: matmuls (``BinaryOperation(fn=np.matmul)``) including reads of transposed
  weights (``W.T``) and transposed activations, layernorm-ish ``mean`` reduces, in-place
  residual adds (input and output the same view), a ``tanh`` MLP nonlinearity;
* **backward**: weight gradients accumulated into grad slices in place (read and write the
  same view), reading the activations saved in the forward pass;
* **optimizer**: one SGD update per parameter slice (reads param and grad, writes param),
  after a ``zero_grad`` fill of the whole gradient buffer at the start of the step;
* **decode**: a ring KV cache ``kv[ring, heads, head_dim]`` written one slot per decode step
  and read through a sliding window: ``as_strided`` when the window is contiguous, two
  slices when it wraps around the end of the ring.

All shapes are consistent, so small traces also *execute* (``aliasflow.run``) -- useful to
check that a parallel run matches program order bit for bit.

``tensor_scale`` multiplies ``d_model`` (hence head_dim and the MLP width); weight matrices
grow as its square. Storage comes from ``np.zeros`` (calloc): pages that are never written
are never touched, so huge logical tensors cost address space, not memory, as long as the
trace is only analysed.

:func:`make_parallel_trace` gives ``n`` independent tiny ops (scheduler overhead) and
:func:`make_gil_trace` a few independent chains of big elementwise ops, whose NumPy kernels
release the GIL (parallel speedup).
"""
from __future__ import annotations

import random
from bisect import bisect_left, insort

import numpy as np

import aliasflow as af

__all__ = ["make_trace", "make_parallel_trace", "make_gil_trace", "trace_tensors"]

LAYERS = 4
HEADS = 4
BASE_D = 16          # d_model at tensor_scale 1
MAX_TOKENS = 8       # tokens per training step vary in [MAX_TOKENS // 2, MAX_TOKENS]
RING = 64            # KV cache slots
WINDOW = 16          # sliding attention window (slots)
DECODE_STEPS = 6     # decode steps after each training step
ALIGN = 16           # allocation granularity in elements (64 bytes of float32)


# ---- kernels ----------------------------------------------------------------------------------
def matmul(a, b):
    return np.matmul(a, b)


def MatMulOperation(name: str) -> af.BinaryOperation:
    """``out = a @ b``: a binary op with a callable kernel (not elementwise, so its inputs
    need not broadcast); for the analysis an ordinary two-input, one-output op."""
    return af.BinaryOperation(name, fn=matmul)


def sgd(p, g):
    return p - np.float32(0.01) * g


def attend(q, window):
    """Scores of one query against a window of cached keys: (heads, hd) x (w, heads, hd)."""
    return (window * q).sum(axis=-1)


# ---- caching allocator over the arena -------------------------------------------------------
class CachingAllocator:
    """Best-fit allocator over ``arena`` with splitting and coalescing (offsets in elements).

    Views are memoised by (role, offset, shape): a role that gets the same block in the same
    shape again reuses the same view object, as a framework would reuse its tensor.
    """

    def __init__(self, arena: af.Tensor):
        self.arena = arena
        self.capacity = arena.get_storage_size()
        self.free_blocks: list[tuple[int, int]] = [(0, self.capacity)]  # sorted by offset
        self.live: dict[int, int] = {}  # offset -> size
        self.views: dict[tuple, af.TensorView] = {}
        self.high_water = 0

    def alloc(self, role: str, shape: tuple[int, ...]) -> af.TensorView:
        n = 1
        for d in shape:
            n *= d
        size = -(-n // ALIGN) * ALIGN
        best = None
        for k, (off, sz) in enumerate(self.free_blocks):
            if sz >= size and (best is None or sz < self.free_blocks[best][1]):
                best = k
        if best is None:
            raise MemoryError(f"arena of {self.capacity} elements exhausted ({size} wanted)")
        off, sz = self.free_blocks[best]
        if sz == size:
            del self.free_blocks[best]
        else:
            self.free_blocks[best] = (off + size, sz - size)
        self.live[off] = size
        self.high_water = max(self.high_water, off + size)
        key = (role, off, shape)
        view = self.views.get(key)
        if view is None:
            flat = self.arena[off:off + n]
            view = (flat.reshape(shape) if len(shape) != 1 else flat).rename(f"{role}@{off}")
            self.views[key] = view
        return view

    def free(self, view: af.TensorView) -> None:
        off = view.offset
        size = self.live.pop(off)
        blocks = self.free_blocks
        k = bisect_left(blocks, (off, 0))
        blocks.insert(k, (off, size))
        if k + 1 < len(blocks) and off + size == blocks[k + 1][0]:   # merge with next
            blocks[k] = (off, size + blocks[k + 1][1])
            del blocks[k + 1]
        if k > 0 and blocks[k - 1][0] + blocks[k - 1][1] == off:      # merge with previous
            blocks[k - 1] = (blocks[k - 1][0], blocks[k - 1][1] + blocks[k][1])
            del blocks[k]


# ---- the transformer trace ------------------------------------------------------------------
class _Builder:
    def __init__(self, seed: int, tensor_scale: int, kv_cache: bool = True,
                 variable_tokens: bool = True):
        self.rng = random.Random(seed)
        self.kv_cache = kv_cache
        self.variable_tokens = variable_tokens
        d = self.d = BASE_D * tensor_scale
        self.hd = d // HEADS
        self.f = 4 * d
        self.ops: list[af.Operation] = []
        self.count = 0
        self.cache: dict[tuple, af.TensorView] = {}

        # parameters and gradients: slices of two flat buffers
        names = ("Wq", "Wk", "Wv", "Wo", "W1", "W2", "gamma1", "gamma2")
        shapes = ((d, d), (d, d), (d, d), (d, d), (d, self.f), (self.f, d), (d,), (d,))
        total = LAYERS * sum(int(np.prod(s)) for s in shapes)
        self.params = af.Tensor("params", (total,))
        self.grads = af.Tensor("grads", (total,))
        self.P: list[dict] = []
        self.G: list[dict] = []
        off = 0
        for layer in range(LAYERS):
            p, g = {}, {}
            for name, shape in zip(names, shapes):
                n = int(np.prod(shape))
                p[name] = self.params[off:off + n].reshape(shape).rename(f"l{layer}.{name}")
                g[name] = self.grads[off:off + n].reshape(shape).rename(f"l{layer}.d{name}")
                off += n
            self.P.append(p)
            self.G.append(g)

        # activation arena: everything one step allocates, with room for fragmentation
        T, f = MAX_TOKENS, self.f
        per_layer = 10 * T * d + 2 * T * f + 2 * T * T + 2 * T + 2 * d * f + 8 * ALIGN
        self.arena = af.Tensor("arena", (2 * LAYERS * per_layer + 8 * T * f,))
        self.alloc = CachingAllocator(self.arena)

        self.kv = af.Tensor("kv", (RING, HEADS, self.hd))
        # token embeddings (read only): rows first .. first+T-1 feed each step
        rows = 2 * MAX_TOKENS
        self.tokens = af.Tensor("tokens", (rows, d), data=(
            np.arange(rows * d, dtype=np.float32).reshape(rows, d) % 7 if tensor_scale <= 16
            else None))
        self.pos = 0  # decode position (ring slot = pos % RING)

    # op helpers -----------------------------------------------------------------------------
    def _name(self, what: str) -> str:
        self.count += 1
        return f"{self.count}:{what}"

    def derived(self, view: af.TensorView, how: str) -> af.TensorView:
        key = (id(view), how)
        out = self.cache.get(key)
        if out is None:
            if how == "T":
                out = view.T
            else:  # "rows": (T,) -> (T, 1) for broadcasting
                out = view.reshape(view.shape[0], 1)
            self.cache[key] = out
        return out

    def emit(self, op: af.Operation) -> None:
        self.ops.append(op)

    def mm(self, what, a, b, out):
        self.emit(MatMulOperation(self._name(what)).set_inputs(a, b).set_outputs(out))

    def binary(self, what, fn, a, b, out):
        self.emit(af.BinaryOperation(self._name(what), fn=fn).set_inputs(a, b).set_outputs(out))

    def accumulate(self, what, acc, x):
        """``acc += x`` in place: input and output are the same view."""
        self.binary(what, "add", acc, x, acc)

    # one training step ----------------------------------------------------------------------
    def train_step(self, step: int) -> None:
        A, d, f = self.alloc, self.d, self.f
        T = self.rng.randint(MAX_TOKENS // 2, MAX_TOKENS) if self.variable_tokens else MAX_TOKENS
        self.emit(af.FillOperation(self._name("zero_grad"), 0.0).set_outputs(self.grads.view()))
        x = A.alloc("x", (T, d))
        first = self.rng.randrange(MAX_TOKENS)
        self.emit(af.TransformOperation(self._name("embed"), fn="sin")
                  .set_inputs(self.tokens[first:first + T]).set_outputs(x))
        saved = []
        for layer in range(LAYERS):
            P, L = self.P[layer], f"l{layer}"
            # attention block
            mu = A.alloc(f"{L}.mu", (T,))
            self.emit(af.ReduceOperation(self._name(f"{L}.ln1.mean"), axis=-1, fn="mean")
                      .set_inputs(x).set_outputs(mu))
            xn = A.alloc(f"{L}.xn", (T, d))
            self.binary(f"{L}.ln1.sub", "subtract", x, self.derived(mu, "rows"), xn)
            A.free(mu)
            self.binary(f"{L}.ln1.gain", "multiply", xn, P["gamma1"], xn)
            q, k, v = (A.alloc(f"{L}.{n}", (T, d)) for n in "qkv")
            self.mm(f"{L}.q", xn, P["Wq"], q)
            self.mm(f"{L}.k", xn, self.derived(P["Wk"], "T"), k)      # transposed weight
            self.mm(f"{L}.v", xn, P["Wv"], v)
            s = A.alloc(f"{L}.scores", (T, T))
            self.mm(f"{L}.scores", q, self.derived(k, "T"), s)
            a = A.alloc(f"{L}.attn", (T, d))
            self.mm(f"{L}.attn", s, v, a)
            o = A.alloc(f"{L}.o", (T, d))
            self.mm(f"{L}.o", a, P["Wo"], o)
            self.accumulate(f"{L}.residual1", x, o)                   # in place
            A.free(o)
            # MLP block
            mu2 = A.alloc(f"{L}.mu2", (T,))
            self.emit(af.ReduceOperation(self._name(f"{L}.ln2.mean"), axis=-1, fn="mean")
                      .set_inputs(x).set_outputs(mu2))
            xn2 = A.alloc(f"{L}.xn2", (T, d))
            self.binary(f"{L}.ln2.sub", "subtract", x, self.derived(mu2, "rows"), xn2)
            A.free(mu2)
            self.binary(f"{L}.ln2.gain", "multiply", xn2, P["gamma2"], xn2)
            h = A.alloc(f"{L}.h", (T, f))
            self.mm(f"{L}.fc1", xn2, P["W1"], h)
            g = A.alloc(f"{L}.g", (T, f))
            self.emit(af.TransformOperation(self._name(f"{L}.tanh"), fn="tanh")
                      .set_inputs(h).set_outputs(g))
            A.free(h)
            m = A.alloc(f"{L}.m", (T, d))
            self.mm(f"{L}.fc2", g, P["W2"], m)
            self.accumulate(f"{L}.residual2", x, m)
            A.free(m)
            saved.append((xn, q, k, v, s, a, xn2, g))

        # loss 0.5*|x|^2: its gradient is x itself
        loss = A.alloc("loss", (T,))
        self.emit(af.ReduceOperation(self._name("loss"), axis=-1, fn="sum")
                  .set_inputs(x).set_outputs(loss))
        dy = A.alloc("dy", (T, d))
        self.emit(af.TransformOperation(self._name("dloss")).set_inputs(x).set_outputs(dy))
        A.free(loss)

        for layer in reversed(range(LAYERS)):
            P, G, L = self.P[layer], self.G[layer], f"l{layer}"
            xn, q, k, v, s, a, xn2, g = saved[layer]
            # MLP backward
            tw = A.alloc(f"{L}.tmpW2", (f, d))
            self.mm(f"{L}.dW2", self.derived(g, "T"), dy, tw)          # saved activation
            self.accumulate(f"{L}.acc.W2", G["W2"], tw)                 # grad accumulation
            A.free(tw)
            dg = A.alloc(f"{L}.dg", (T, f))
            self.mm(f"{L}.dg", dy, self.derived(P["W2"], "T"), dg)
            self.binary(f"{L}.dtanh", "multiply", dg, g, dg)
            tw = A.alloc(f"{L}.tmpW1", (d, f))
            self.mm(f"{L}.dW1", self.derived(xn2, "T"), dg, tw)
            self.accumulate(f"{L}.acc.W1", G["W1"], tw)
            A.free(tw)
            dx = A.alloc(f"{L}.dxn2", (T, d))
            self.mm(f"{L}.dxn2", dg, self.derived(P["W1"], "T"), dx)
            A.free(dg)
            tg = A.alloc(f"{L}.tmpg2", (T, d))
            self.binary(f"{L}.dgain2", "multiply", dx, xn2, tg)
            gsum = A.alloc(f"{L}.gsum2", (d,))
            self.emit(af.ReduceOperation(self._name(f"{L}.dgamma2.sum"), axis=0, fn="sum")
                      .set_inputs(tg).set_outputs(gsum))
            self.accumulate(f"{L}.acc.gamma2", G["gamma2"], gsum)
            A.free(gsum)
            A.free(tg)
            self.accumulate(f"{L}.dres2", dy, dx)
            A.free(dx)
            A.free(g)
            A.free(xn2)
            # attention backward
            tw = A.alloc(f"{L}.tmpWo", (d, d))
            self.mm(f"{L}.dWo", self.derived(a, "T"), dy, tw)
            self.accumulate(f"{L}.acc.Wo", G["Wo"], tw)
            A.free(tw)
            da = A.alloc(f"{L}.da", (T, d))
            self.mm(f"{L}.da", dy, self.derived(P["Wo"], "T"), da)
            A.free(a)
            dv = A.alloc(f"{L}.dv", (T, d))
            self.mm(f"{L}.dv", self.derived(s, "T"), da, dv)
            ds = A.alloc(f"{L}.ds", (T, T))
            self.mm(f"{L}.ds", da, self.derived(v, "T"), ds)
            A.free(da)
            A.free(s)
            dq = A.alloc(f"{L}.dq", (T, d))
            self.mm(f"{L}.dq", ds, k, dq)
            dk = A.alloc(f"{L}.dk", (T, d))
            self.mm(f"{L}.dk", self.derived(ds, "T"), q, dk)
            A.free(ds)
            for name, grad_act in (("Wq", dq), ("Wv", dv)):
                tw = A.alloc(f"{L}.tmp{name}", (d, d))
                self.mm(f"{L}.d{name}", self.derived(xn, "T"), grad_act, tw)
                self.accumulate(f"{L}.acc.{name}", G[name], tw)
                A.free(tw)
            tw = A.alloc(f"{L}.tmpWk", (d, d))
            self.mm(f"{L}.dWk", self.derived(dk, "T"), xn, tw)
            self.accumulate(f"{L}.acc.Wk", G["Wk"], tw)
            A.free(tw)
            for name, grad_act in (("Wq", dq), ("Wk", dk), ("Wv", dv)):
                tx = A.alloc(f"{L}.dxn.{name}", (T, d))
                w = P[name] if name == "Wk" else self.derived(P[name], "T")
                self.mm(f"{L}.dxn.{name}", grad_act, w, tx)
                self.accumulate(f"{L}.dres1.{name}", dy, tx)
                A.free(tx)
            tg = A.alloc(f"{L}.tmpg1", (T, d))
            self.binary(f"{L}.dgain1", "multiply", dy, xn, tg)
            gsum = A.alloc(f"{L}.gsum1", (d,))
            self.emit(af.ReduceOperation(self._name(f"{L}.dgamma1.sum"), axis=0, fn="sum")
                      .set_inputs(tg).set_outputs(gsum))
            self.accumulate(f"{L}.acc.gamma1", G["gamma1"], gsum)
            A.free(gsum)
            A.free(tg)
            for t in (dq, dk, dv, q, k, v, xn):
                A.free(t)
        A.free(dy)

        # optimizer: every parameter slice
        for layer in range(LAYERS):
            for name, p in self.P[layer].items():
                self.binary(f"l{layer}.sgd.{name}", sgd, p, self.G[layer][name], p)

        # decode steps against the ring KV cache, reading rows of the final activations
        for _ in range(DECODE_STEPS if self.kv_cache else 0):
            self.decode_step(x, T)
        A.free(x)

    def kv_window(self, first: int, length: int) -> list[af.TensorView]:
        """Slots ``first .. first+length-1`` (mod RING): one as_strided window, or two slices."""
        key = ("win", first, length)
        parts = self.cache.get(key)
        if parts is None:
            slot = HEADS * self.hd
            if first + length <= RING:
                parts = [self.kv.as_strided((length, HEADS, self.hd), (slot, self.hd, 1),
                                            offset=first * slot,
                                            name=f"kv.window[{first}:{first + length}]")]
            else:
                tail = RING - first
                parts = [self.kv[first:], self.kv[:length - tail]]
            self.cache[key] = parts
        return parts

    def decode_step(self, x: af.TensorView, T: int) -> None:
        A, pos = self.alloc, self.pos
        self.pos += 1
        row = self.derived_row(x, pos % T)
        slot = pos % RING
        self.emit(af.TransformOperation(self._name("kv.write")).set_inputs(row)
                  .set_outputs(self.kv_slot(slot)))
        length = min(WINDOW, pos + 1)
        first = (pos - length + 1) % RING
        scores = A.alloc("dec.scores", (length, HEADS))
        done = 0
        for part in self.kv_window(first, length):
            n = part.shape[0]
            out = scores if n == length else self.cache_slice(scores, done, done + n)
            self.binary("dec.attend", attend, row, part, out)
            done += n
        pooled = A.alloc("dec.pooled", (HEADS,))
        self.emit(af.ReduceOperation(self._name("dec.pool"), axis=0, fn="max")
                  .set_inputs(scores).set_outputs(pooled))
        A.free(scores)
        self.emit(af.TransformOperation(self._name("dec.out"), fn="exp")
                  .set_inputs(pooled).set_outputs(pooled))
        A.free(pooled)

    def derived_row(self, x, r):
        key = (id(x), "row", r)
        out = self.cache.get(key)
        if out is None:
            out = self.cache[key] = x[r].reshape(HEADS, self.hd)
        return out

    def kv_slot(self, slot):
        key = ("slot", slot)
        out = self.cache.get(key)
        if out is None:
            out = self.cache[key] = self.kv[slot]
        return out

    def cache_slice(self, view, lo, hi):
        key = (id(view), "slice", lo, hi)
        out = self.cache.get(key)
        if out is None:
            out = self.cache[key] = view[lo:hi]
        return out


def make_trace(n_ops: int, seed: int = 0, tensor_scale: int = 1, kv_cache: bool = True,
               variable_tokens: bool = True) -> list[af.Operation]:
    """A transformer training loop (about 270 ops a step), cut to exactly ``n_ops`` ops.

    Deterministic for a ``seed``. ``kv_cache=False`` drops the decode steps and
    ``variable_tokens=False`` fixes the token count, so every reused arena block comes back
    in the same shape (a control: then later writes cover earlier accesses exactly).
    """
    b = _Builder(seed, tensor_scale, kv_cache, variable_tokens)
    b.emit(af.FillOperation(b._name("init.params"), 0.01).set_outputs(b.params.view()))
    b.emit(af.FillOperation(b._name("init.kv"), 0.0).set_outputs(b.kv.view()))
    step = 0
    while len(b.ops) < n_ops:
        b.train_step(step)
        step += 1
    return b.ops[:n_ops]


def trace_tensors(ops) -> list[af.Tensor]:
    """The distinct tensors the ops touch, in first-use order."""
    seen: dict[int, af.Tensor] = {}
    for op in ops:
        for v in op.input_views + op.output_views:
            seen.setdefault(id(v.tensor), v.tensor)
    return list(seen.values())


# ---- traces for the executor ----------------------------------------------------------------
def make_parallel_trace(n: int, size: int = 4) -> list[af.Operation]:
    """``n`` independent tiny ops: op k negates its own slice of ``src`` into ``dst``."""
    src = af.Tensor("src", (n * size,), data=np.arange(n * size, dtype=np.float32))
    dst = af.Tensor("dst", (n * size,))
    return [af.TransformOperation(f"neg{k}", fn="negative")
            .set_inputs(src[k * size:(k + 1) * size])
            .set_outputs(dst[k * size:(k + 1) * size]) for k in range(n)]


def make_gil_trace(chains: int = 2, length: int = 8, size: int = 2_000_000
                   ) -> list[af.Operation]:
    """``chains`` independent chains of ``length`` big elementwise ops (NumPy releases the GIL).

    Chain c ping-pongs between two slices of its own buffers: ``sin`` from one into the other.
    Ops are interleaved across chains in program order, so a sequential run gets no help.
    """
    bufs = []
    for c in range(chains):
        a = af.Tensor(f"chain{c}.a", (size,), data=np.linspace(0, 1, size, dtype=np.float32))
        b = af.Tensor(f"chain{c}.b", (size,))
        bufs.append((a[:], b[:]))
    ops = []
    for step in range(length):
        for c, (a, b) in enumerate(bufs):
            src, dst = (a, b) if step % 2 == 0 else (b, a)
            ops.append(af.TransformOperation(f"chain{c}.op{step}", fn="sin")
                       .set_inputs(src).set_outputs(dst))
    return ops


def make_nondense_trace(n: int, seed: int = 0, heads: int = 8, head_dim: int = 16,
                        tokens: int = 64, arena: bool = False) -> list[af.Operation]:
    """``n`` ops whose accesses are mostly **non-dense**, the way attention code touches
    memory: per-head column blocks ``M[:, h*d:(h+1)*d]`` of fused QKV and output
    projections (read and written), stepped windows over a signal buffer
    (``as_strided`` with a stride larger than one), transposed tiles ``W.T[a:b, c:d]`` read
    and written, and every other head's columns of a score matrix. Extents of different
    heads interleave, so almost every pair goes to the exact solver.

    With ``arena``, the same accesses land on regions of one flat buffer (as a framework's
    allocator lays tensors out): the views are the same, their tensor is one 1-D arena.
    """
    rng = random.Random(seed)
    d = heads * head_dim
    shapes = {"qkv": (tokens, 3 * d), "attn_out": (tokens, d), "scores": (tokens, heads * tokens),
              "W": (d, d), "signal": (tokens * 64,)}
    if arena:
        flat = af.Tensor("arena", (sum(int(np.prod(s)) for s in shapes.values()),))
        regions, at = [], 0
        for name, shape in shapes.items():
            regions.append(flat.as_strided(shape, af.row_major_strides(shape), at, name=name))
            at += int(np.prod(shape))
    else:
        regions = [af.Tensor(name, shape) for name, shape in shapes.items()]
    qkv, out, scores, weights, signal = regions
    base = signal.offset if arena else 0  # as_strided offsets are absolute on a view
    ops: list[af.Operation] = []
    for k in range(n):
        h = rng.randrange(heads)
        choice = rng.random()
        cols = slice(h * head_dim, (h + 1) * head_dim)
        if choice < 0.3:  # a head's Q block -> the head's output block
            part = rng.randrange(3)
            src = qkv[:, part * d + h * head_dim: part * d + (h + 1) * head_dim]
            op = af.TransformOperation(f"head{k}", "tanh").set_inputs(src) \
                .set_outputs(out[:, cols])
        elif choice < 0.5:  # write one head's block of the fused projection
            part = rng.randrange(3)
            dst = qkv[:, part * d + h * head_dim: part * d + (h + 1) * head_dim]
            op = af.TransformOperation(f"proj{k}", "negative").set_inputs(out[:, cols]) \
                .set_outputs(dst)
        elif choice < 0.65:  # stepped, overlapping windows over the signal
            step = rng.choice([2, 3, 4])
            width = rng.choice([4, 8])
            count = rng.randrange(4, 32)
            start = rng.randrange(0, signal.size - step * count - width)
            win = signal.as_strided((count, width), (step, 1), base + start)
            if rng.random() < 0.5:
                op = af.ReduceOperation(f"win{k}", axis=-1).set_inputs(win)
            else:
                dense = signal[start:start + count * step:step]
                op = af.FillOperation(f"stamp{k}", 0.5).set_outputs(dense)
        elif choice < 0.85:  # transposed tiles of the weights, read or updated in place
            a = rng.randrange(0, d - 8)
            c = rng.randrange(0, d - 8)
            tile = weights.T[a:a + 8, c:c + 8]
            if rng.random() < 0.5:
                op = af.TransformOperation(f"tile{k}", "square").set_inputs(tile) \
                    .set_outputs(tile)
            else:
                op = af.ReduceOperation(f"tsum{k}", axis=0).set_inputs(tile)
        else:  # every other head's score columns
            sc = scores.reshape(tokens, heads, tokens)[:, h::2, ::2]
            op = af.ReduceOperation(f"score{k}", axis=-1).set_inputs(sc)
        ops.append(op)
    return ops
