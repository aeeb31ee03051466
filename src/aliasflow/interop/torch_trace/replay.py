"""Replay: run a trace's aten calls again, in dependency order, on copies of its storages.

Every storage generation the trace did not create starts as the copy taken when the trace
first saw it; a generation an op created is whatever that op creates in the replay (for ops
whose fresh output has unspecified contents, such as ``empty``, the traced bytes are copied
in). Calls run level by level over ``af.analyze`` of the trace (ops in one level in parallel
threads), random ops with their generator's traced state, and every value an op returned to
the program that is not a tensor (``loss.item()``) is compared with the traced one. At the
end every storage alive when tracing ended is compared with its bytes then (CRC-32, and byte
by byte for small storages). Anything that changed memory outside PyTorch's dispatcher (a
write through ``.numpy()``) shows up as a difference.

When something differs, the replay runs again, one op at a time, each op twice from the same
state, the second time with another intra-op thread count (one, or two where PyTorch uses
one): an op whose two runs differ (it leaves part of its output unwritten, reads memory it
does not own, or computes bits that depend on how many threads it gets, as MKL's FFT does,
which under a parallel replay may be fewer than when traced) is *nondeterministic*, and the
differences it explains (its outputs and what depends on them) are reported as such, never
as mismatches.

A trace holding ops the tracer could not record (sparse, quantized, nested tensors) is
refused before anything runs.
"""
from __future__ import annotations

import ctypes
import math
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import torch

from ...analysis.dependencies import analyze
from ...core.errors import AliasflowError
from .tracer import _Slot

_DEFAULT_GENERATOR = threading.Lock()


@dataclass
class Mismatch:
    """A difference: ``what`` ("result" of an op, or "storage"), ``where`` (op or storage
    name), ``storage``, ``count`` differing bytes (-1: not known, only the CRC differs) and
    the first differing byte offsets from the storage's start."""
    what: str
    where: str
    storage: str
    count: int
    offsets: list = field(default_factory=list)

    def __str__(self) -> str:
        count = "some" if self.count < 0 else str(self.count)
        at = f", first at offsets {self.offsets}" if self.offsets else ""
        return f"{self.what} {self.where} (storage {self.storage}): {count} byte(s) differ{at}"


@dataclass
class ReplayReport:
    """``identical``: every result and storage matched, apart from what nondeterministic ops
    (``nondeterministic``: their names) explain; ``mismatches`` lists the rest."""
    ops: int
    levels: int
    workers: int
    compared_results: int
    compared_storages: int
    mismatches: list
    nondeterministic: list = field(default_factory=list)
    explained: list = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.mismatches

    def __bool__(self) -> bool:
        return self.identical

    def __str__(self) -> str:
        head = (f"replayed {self.ops} ops in {self.levels} levels on {self.workers} "
                f"worker(s); {self.compared_results} results and {self.compared_storages} "
                f"storages compared: ")
        nd = ""
        if self.nondeterministic:
            nd = (f"; nondeterministic: {', '.join(self.nondeterministic[:10])} "
                  f"({len(self.explained)} difference(s) explained)")
        if self.identical:
            return head + "identical" + nd
        return head + f"{len(self.mismatches)} differ{nd}\n" + "\n".join(
            f"  {m}" for m in self.mismatches[:20])


def _storage_bytes(st) -> torch.Tensor:
    """The bytes of a storage (or of ``bytes``: a generation's ``final_bytes``) as uint8."""
    if isinstance(st, bytes):
        return torch.frombuffer(bytearray(st), dtype=torch.uint8) if st else \
            torch.empty(0, dtype=torch.uint8)
    return torch.empty(0, dtype=torch.uint8).set_(st)


def _storage_of(snapshot) -> torch.UntypedStorage:
    """A new storage holding a generation's ``snapshot`` (bytes for memory on the CPU, else
    a storage copy), from PyTorch's allocator: resizable, as the program's was (an op that
    resizes its argument, QAT's ``_fused_moving_avg_obs_fq_helper``, refuses a storage over
    a Python buffer)."""
    if isinstance(snapshot, bytes):
        st = torch.UntypedStorage(len(snapshot))
        if snapshot:
            ctypes.memmove(st.data_ptr(), snapshot, len(snapshot))
        return st
    return snapshot.clone()


def _crc(st) -> int:
    return zlib.crc32(_storage_bytes(st).numpy()) if st.nbytes() else 0


class _Replayer:
    def __init__(self, trace, built):
        self.trace = trace
        self.built = built
        self.buffers = {}
        for gen in trace.storages:
            if gen.snapshot is not None and gen.creator is None:
                self.buffers[gen.id] = _storage_of(gen.snapshot)
        self.mismatches = []
        self.results = 0

    def tensor(self, ref) -> torch.Tensor:
        st = self.buffers.get(ref.gen.id) if ref.gen is not None else None
        if st is None:
            # only an argument whose data the op does not touch (``empty_like(x)``) or a
            # tensor without memory can get here: the analysis orders every data access
            device = "meta" if ref.gen is None else "cpu"
            return torch.empty_strided(ref.sizes, ref.strides, dtype=ref.dtype, device=device)
        t = torch.empty(0, dtype=ref.dtype, device=st.device)
        t.set_(st, ref.offset, ref.sizes, ref.strides)
        if ref.conj:
            torch._C._set_conj(t, True)
        if ref.neg:
            torch._C._set_neg(t, True)
        return t

    def arg(self, x, refs, fresh):
        if isinstance(x, _Slot):
            if x.k in fresh:
                return torch.empty(0, dtype=refs[x.k].dtype)
            return self.tensor(refs[x.k])
        if isinstance(x, (list, tuple)) and any(isinstance(y, _Slot) for y in x):
            return type(x)(self.arg(y, refs, fresh) for y in x)
        return x

    def adopt(self, slot, value, call, refs):
        if isinstance(slot, _Slot) and isinstance(value, torch.Tensor):
            ref = refs[slot.k]
            if ref.gen is not None and ref.gen.id not in self.buffers:
                self.buffers[ref.gen.id] = value.untyped_storage()
                if ref.gen.snapshot is not None:   # unspecified contents: the traced bytes
                    self.buffers[ref.gen.id].copy_(_storage_of(ref.gen.snapshot))
        elif isinstance(slot, (list, tuple)) and isinstance(value, (list, tuple)):
            for s, v in zip(slot, value):
                self.adopt(s, v, call, refs)

    def call(self, i: int):
        """Run call ``i`` on the replay's buffers; returns what it returned."""
        call = self.trace.calls[i]
        refs = self.built.refs[i]
        resized = (call.extra or {}).get("resized", set())
        # an out= argument moved by the op starts empty; one it read first (in place) is
        # passed as it was (its template slot is the read)
        fresh = {k for k in resized if call.accesses[k][0] == "W" and
                 not any(acc[0] == "R" and acc[1:3] == call.accesses[k][1:3]
                         for acc in call.accesses)}
        targs, tkwargs = call.template
        args = [self.arg(a, refs, fresh) for a in targs]
        kwargs = {k: self.arg(v, refs, fresh) for k, v in tkwargs.items()}
        if call.rng is not None and call.rng[0]:
            g = torch.Generator()
            g.set_state(call.rng[1])
            name = "generator"
            pos = next((a.position for a in call.spec.args if a.name == name), None)
            if pos is not None and pos < len(args):
                args[pos] = g
            else:
                kwargs[name] = g
            out = call.func(*args, **kwargs)
        elif call.rng is not None:   # the default generator: one such op at a time
            with _DEFAULT_GENERATOR:
                saved = torch.default_generator.get_state()
                torch.default_generator.set_state(call.rng[1])
                try:
                    out = call.func(*args, **kwargs)
                finally:
                    torch.default_generator.set_state(saved)
        else:
            out = call.func(*args, **kwargs)
        _wait_for_work(out)
        for k in resized:   # out= arguments the op moved onto new memory
            acc = call.accesses[k]
            a = call.spec.args[acc[1]]
            v = args[a.position] if a.position < len(args) else kwargs[a.name]
            t = v[acc[2]] if acc[2] >= 0 else v
            self.buffers[refs[k].gen.id] = t.untyped_storage()
        self.adopt(call.results, out, call, refs)
        return out

    def run(self, i: int) -> None:
        out = self.call(i)
        call = self.trace.calls[i]
        traced = call.results
        if traced is not None and not isinstance(traced, (_Slot, list, tuple)):
            self.results += 1
            if traced != out and not (isinstance(traced, float) and math.isnan(traced)
                                      and isinstance(out, float) and math.isnan(out)):
                self.mismatches.append(Mismatch("result", self.built.infos[i].name, "-", 1))


def _wait_for_work(out) -> None:
    """A collective (``c10d.allreduce_``, ``_allgather_base_``) returns a ``Work`` handle
    and may write its tensors after returning; the program waited on it (``dist.all_reduce``
    does, in Python, which is not an aten call): replay waits for it here, before anything
    reads what it wrote."""
    for item in out if isinstance(out, (list, tuple)) else (out,):
        if _is_work(item):
            item.wait()


_WORK = getattr(getattr(torch._C, "_distributed_c10d", None), "Work", ())


def _is_work(x) -> bool:
    """A c10d ``Work`` (as a Python object, or as the TorchScript object ops return)."""
    if isinstance(x, torch._C.ScriptObject):
        return "c10d.Work" in str(x._type())
    return isinstance(x, _WORK) if _WORK else False


def _refuse(trace, built):
    if trace.running:
        raise AliasflowError("replay: the trace is still running; replay after its with-block")
    if not trace.values:
        raise AliasflowError("replay needs a trace made with values=True")
    blind = next((info for info in built.infos if info.untracked), None)
    if blind is not None:
        raise AliasflowError(f"replay: the trace could not record the tensors of "
                             f"{blind.name} at {blind.line} ({blind.untracked}), so a replay "
                             f"could not be complete")
    other = next((g for g in trace.storages if g.device not in ("cpu", "meta")), None)
    if other is not None:
        raise AliasflowError(f"replay: storage {other.name} is on {other.device}; replay "
                             f"runs CPU traces only")


def _compare_storages(trace, r) -> int:
    storages = 0
    for gen in trace.storages:
        if gen.final_crc is None:
            continue
        storages += 1
        got = r.buffers.get(gen.id)
        if got is None:
            r.mismatches.append(Mismatch("storage", gen.name, gen.name, gen.nbytes))
            continue
        if got.nbytes() == gen.nbytes and _crc(got) == gen.final_crc:
            continue
        if gen.final_bytes is not None and got.nbytes() == gen.nbytes:
            a, b = _storage_bytes(got), _storage_bytes(gen.final_bytes)
            diff = torch.nonzero(a != b).reshape(-1)
            r.mismatches.append(Mismatch("storage", gen.name, gen.name, int(diff.numel()),
                                         diff[:8].tolist()))
        else:
            r.mismatches.append(Mismatch("storage", gen.name, gen.name, -1))
    return storages


def _nondeterministic(trace, built, order) -> list[int]:
    """Calls whose two runs from one state differ (run in program order, each twice, the
    second time with another intra-op thread count; the count is put back)."""
    r = _Replayer(trace, built)
    found = []
    threads = torch.get_num_threads()
    other = 1 if threads > 1 else 2
    for i in order:
        refs = built.refs[i]
        call = trace.calls[i]
        written = {refs[k].gen.id for k, acc in enumerate(call.accesses)
                   if acc[0] in ("W", "RW") and refs[k].gen is not None
                   and refs[k].gen.id in r.buffers}
        saved = {g: r.buffers[g].clone() for g in written}
        known = set(r.buffers)
        first = r.call(i)
        crcs = {g: _crc(st) for g, st in r.buffers.items() if g in written or g not in known}
        for g, st in saved.items():
            r.buffers[g].copy_(st)
        made = {g: r.buffers.pop(g) for g in list(r.buffers) if g not in known}
        torch.set_num_threads(other)
        try:
            second = r.call(i)
        finally:
            torch.set_num_threads(threads)
        again = {g: _crc(st) for g, st in r.buffers.items() if g in written or g not in known}
        if again != crcs or (not isinstance(first, (torch.Tensor, list, tuple))
                             and first != second):
            found.append(i)
        del made
    return found


def replay(trace, workers: int = 1) -> ReplayReport:
    built = trace._build()
    _refuse(trace, built)
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise AliasflowError(f"replay: workers must be a positive int, got {workers!r}")
    live = [k for k, (op, info) in enumerate(zip(built.ops, built.infos))
            if not info.failed and op.accesses]
    ops = [built.ops[k] for k in live]
    graph = analyze(ops)
    levels = graph.levels() if ops else []
    by_name = {built.ops[k].name: k for k in live}
    r = _Replayer(trace, built)
    with torch.no_grad():
        if workers == 1:
            for level in levels:
                for name in level:
                    r.run(by_name[name])
        else:
            with ThreadPoolExecutor(workers) as pool:
                for level in levels:
                    list(pool.map(lambda name: r.run(by_name[name]), level))
    storages = _compare_storages(trace, r)
    report = ReplayReport(len(ops), len(levels), workers, r.results, storages, r.mismatches)
    if report.mismatches:
        _explain(trace, built, graph, live, by_name, report)
    return report


def _explain(trace, built, graph, live, by_name, report):
    """Move the differences nondeterministic ops explain out of the mismatches."""
    with torch.no_grad():
        bad = _nondeterministic(trace, built, live)
    if not bad:
        return
    report.nondeterministic = [built.infos[i].name for i in bad]
    reach = set(report.nondeterministic)
    for d in sorted(graph.dependencies, key=lambda d: by_name[d.src]):
        if d.src in reach and d.kind == "RAW":
            reach.add(d.dst)
    last_writer: dict = {}
    for k in live:
        for acc in built.ops[k].accesses:
            if acc.mode in ("W", "RW"):
                last_writer[acc.view.tensor.storage.name] = built.ops[k].name
    keep = []
    for m in report.mismatches:
        src = m.where if m.what == "result" else last_writer.get(m.storage)
        (report.explained if src in reach else keep).append(m)
    report.mismatches = keep
