"""Replay: run a trace's aten calls again, in dependency order, on copies of its storages.

Every storage generation the trace did not create starts as the copy taken when the trace
first saw it; a generation an op created is whatever that op creates in the replay (for ops
whose fresh output has unspecified contents, such as ``empty``, the traced bytes are copied
in). Calls run level by level over ``af.analyze`` of the trace (ops in one level in parallel
threads), random ops with their generator's traced state. After each call, every tensor it
wrote is compared byte for byte with what the traced call wrote; at the end, every storage
alive when tracing ended is compared with its bytes then. Anything that changed memory
outside PyTorch's dispatcher (a write through ``.numpy()``) shows up as a difference.
"""
from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import torch

from ...analysis.dependencies import analyze
from ...core.errors import AliasflowError
from .memory import Ref


_DEFAULT_GENERATOR = threading.Lock()


@dataclass
class Mismatch:
    """A difference: ``what`` ("result" of an op, or "storage"), ``where`` (op or storage
    name), ``storage``, ``count`` differing bytes and the first differing byte offsets (for
    a storage, from its start; for a result, into the written tensor's bytes in index
    order)."""
    what: str
    where: str
    storage: str
    count: int
    offsets: list = field(default_factory=list)

    def __str__(self) -> str:
        return (f"{self.what} {self.where} (storage {self.storage}): {self.count} byte(s) "
                f"differ, first at offsets {self.offsets}")


@dataclass
class ReplayReport:
    """``identical``: every result and storage matched; ``mismatches`` lists the rest."""
    ops: int
    levels: int
    workers: int
    compared_results: int
    compared_storages: int
    mismatches: list

    @property
    def identical(self) -> bool:
        return not self.mismatches

    def __bool__(self) -> bool:
        return self.identical

    def __str__(self) -> str:
        head = (f"replayed {self.ops} ops in {self.levels} levels on {self.workers} "
                f"worker(s); {self.compared_results} results and {self.compared_storages} "
                f"storages compared: ")
        if self.identical:
            return head + "identical"
        return head + f"{len(self.mismatches)} differ\n" + "\n".join(
            f"  {m}" for m in self.mismatches[:20])


def _bytes(t: torch.Tensor) -> torch.Tensor:
    t = t.resolve_conj().resolve_neg().contiguous().reshape(-1)
    return t.view(torch.uint8) if t.dtype != torch.uint8 else t


def _storage_bytes(st) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8).set_(st)


class _Replayer:
    def __init__(self, trace):
        self.trace = trace
        self.buffers = {}
        for gen in trace.storages:
            if gen.snapshot is not None:
                self.buffers[gen.id] = gen.snapshot.clone()
        self.mismatches = []
        self.results = 0

    def tensor(self, ref: Ref) -> torch.Tensor:
        st = self.buffers.get(ref.gen.id)
        if st is None:
            # only an argument whose data the op does not touch (``empty_like(x)``) can get
            # here before its storage is made: the analysis orders every data access
            return torch.empty_strided(ref.sizes, ref.strides, dtype=ref.dtype)
        t = torch.empty(0, dtype=ref.dtype, device=st.device)
        t.set_(st, ref.offset, ref.sizes, ref.strides)
        if ref.conj:
            torch._C._set_conj(t, True)
        if ref.neg:
            torch._C._set_neg(t, True)
        return t

    def arg(self, x, fresh: bool = False):
        if isinstance(x, Ref):
            if fresh:
                return torch.empty(0, dtype=x.dtype)
            return self.tensor(x)
        if isinstance(x, (list, tuple)) and any(isinstance(y, Ref) for y in x):
            return type(x)(self.arg(y) for y in x)
        return x

    def adopt(self, ref, value, raw):
        if isinstance(ref, Ref) and isinstance(value, torch.Tensor):
            if ref.gen.id not in self.buffers:
                self.buffers[ref.gen.id] = value.untyped_storage()
                if raw.spec.uninitialized:
                    traced = next((v for r, v in raw.values if r is ref), None)
                    if traced is not None:
                        value.copy_(traced)
        elif isinstance(ref, (list, tuple)) and isinstance(value, (list, tuple)):
            for r, v in zip(ref, value):
                self.adopt(r, v, raw)

    def run(self, op) -> None:
        raw = op.raw
        spec = raw.spec
        args = [self.arg(a, spec.args[k].name in raw.resized if k < len(spec.args) else False)
                for k, a in enumerate(raw.args)]
        kwargs = {k: self.arg(v, k in raw.resized) for k, v in raw.kwargs.items()}
        if raw.rng is not None and spec.takes_generator:
            g = torch.Generator()
            g.set_state(raw.rng)
            kwargs["generator"] = g
            out = raw.func(*args, **kwargs)
        elif raw.rng is not None:   # only the default generator: one such op at a time
            with _DEFAULT_GENERATOR:
                saved = torch.default_generator.get_state()
                torch.default_generator.set_state(raw.rng)
                try:
                    out = raw.func(*args, **kwargs)
                finally:
                    torch.default_generator.set_state(saved)
        else:
            out = raw.func(*args, **kwargs)
        for label in raw.resized:   # out= arguments the op moved onto new memory
            new = next(a.ref for a in op.accesses if a.label == label and a.mode == "W")
            arg = kwargs.get(label)
            if arg is None:
                k = next(a.position for a in spec.args if a.name == label)
                arg = args[k]
            self.buffers[new.gen.id] = arg.untyped_storage()
        self.adopt(raw.results, out, raw)
        for ref, traced in raw.values or ():
            self.results += 1
            self.compare("result", op.name, ref, self.tensor(ref), traced)
        if not isinstance(raw.results, (Ref, list, tuple)) and raw.results is not None:
            self.results += 1
            a, b = raw.results, out
            if a != b and not (isinstance(a, float) and math.isnan(a) and math.isnan(b)):
                self.mismatches.append(Mismatch("result", op.name, "-", 1, []))

    def compare(self, what, where, ref, got, expected) -> None:
        a, b = _bytes(got), _bytes(expected)
        if a.shape == b.shape and torch.equal(a, b):
            return
        if a.shape != b.shape:
            self.mismatches.append(Mismatch(what, where, ref.gen.name, max(a.numel(), 1)))
            return
        diff = torch.nonzero(a != b).reshape(-1)[:8].tolist()
        self.mismatches.append(Mismatch(what, where, ref.gen.name,
                                        int((a != b).sum()), diff))


def replay(trace, workers: int = 1) -> ReplayReport:
    if trace.running:
        raise AliasflowError("replay: the trace is still running; replay after its with-block")
    if not trace.values:
        raise AliasflowError("replay needs a trace made with values=True")
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise AliasflowError(f"replay: workers must be a positive int, got {workers!r}")
    blind = next((op for op in trace.ops if op.untracked), None)
    if blind is not None:
        raise AliasflowError(f"replay: the trace could not record the tensors of "
                             f"{blind.name} at {blind.line} ({blind.untracked}), so a replay "
                             f"could not be complete")
    ops = [op for op in trace.ops if not op.failed and op.accesses]
    graph = analyze(ops)
    by_name = {op.name: op for op in ops}
    levels = graph.levels() if ops else []
    r = _Replayer(trace)
    with torch.no_grad():
        if workers == 1:
            for level in levels:
                for name in level:
                    r.run(by_name[name])
        else:
            with ThreadPoolExecutor(workers) as pool:
                for level in levels:
                    list(pool.map(lambda name: r.run(by_name[name]), level))
    storages = 0
    for gen in trace.storages:
        if gen.final is None:
            continue
        storages += 1
        got = r.buffers.get(gen.id)
        if got is None:
            r.mismatches.append(Mismatch("storage", gen.name, gen.name, gen.nbytes))
            continue
        a, b = _storage_bytes(got), _storage_bytes(gen.final)
        if not torch.equal(a, b):
            diff = torch.nonzero(a != b).reshape(-1)
            r.mismatches.append(Mismatch("storage", gen.name, gen.name, int(diff.numel()),
                                         diff[:8].tolist()))
    return ReplayReport(len(ops), len(levels), workers, r.results, storages, r.mismatches)
