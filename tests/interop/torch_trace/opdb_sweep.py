"""PyTorch's own operator database (``op_db``) as the tracer's oracle.

For every OpInfo, its sample inputs, and its function, in-place and ``out=`` variants, the
sweep runs each sample twice, untraced and traced, on separate copies (each copy rebuilds the
sample's storages, strides, offsets and argument aliasing), and checks:

- **results**: the traced run returns the same values (bit for bit) and leaves the same
  memory, or raises the same exception;
- **writes**: every byte that changed in any storage of the sample lies in a write the trace
  recorded;
- **reads**: on a third copy whose float elements outside the recorded reads are set to NaN,
  the untraced op gives the same values (so it read nothing the trace did not record);
- **quiet**: a sample whose arguments share no memory (and whose written arguments do not
  overlap themselves) gets no finding.

Run ``python tests/interop/torch_trace/opdb_sweep.py [--write docs/torch_opdb_coverage.md]``
for the whole sweep and its coverage table.
"""
from __future__ import annotations

import itertools
import sys
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import aliasflow as af

# Ops whose outputs are unspecified (uninitialized memory), or random beyond what one seed
# reproduces: values are not compared, only memory footprints.
UNSPECIFIED = {"empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided",
               "empty_permuted", "resize_", "resize_as_", "nn.functional.dropout",
               "bernoulli", "multinomial", "normal", "uniform", "cauchy", "exponential",
               "geometric", "log_normal", "randint_like", "rand_like", "randn_like",
               # the gelsy driver leaves values unspecified: two untraced runs differ
               "linalg.lstsq"}


class EmptyMode(TorchDispatchMode):
    """A dispatch mode that only calls the op: what any Python tracer costs and changes."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def pick_dtype(op):
    dtypes = op.supported_dtypes("cpu")
    for d in (torch.float32, torch.float64, torch.int64, torch.bool):
        if d in dtypes:
            return d
    return next(iter(dtypes), None)


def tensors_in(x, out=None):
    """Tensors in ``x`` (nested lists, tuples, dicts), in a fixed order."""
    out = [] if out is None else out
    if isinstance(x, torch.Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            tensors_in(y, out)
    elif isinstance(x, dict):
        for k in sorted(x, key=str):
            tensors_in(x[k], out)
    return out


def _storage_key(t):
    return t.untyped_storage().data_ptr() if t.layout == torch.strided and \
        t.device.type == "cpu" else id(t)


class Copier:
    """Copies of a sample's structure with the same storages shared between its tensors, the
    same sizes, strides and offsets, the same conj/neg bits."""

    def __init__(self):
        self.storages = {}

    def tensor(self, t):
        if t.layout != torch.strided or t.device.type != "cpu" or t.is_quantized or \
                t.is_nested:
            return t.clone()
        key = t.untyped_storage().data_ptr()
        st = self.storages.get(key)
        if st is None:
            st = self.storages[key] = t.untyped_storage().clone()
        c = torch.empty(0, dtype=t.dtype).set_(st, t.storage_offset(), t.shape, t.stride())
        if t.is_conj():
            torch._C._set_conj(c, True)
        if t.is_neg():
            torch._C._set_neg(c, True)
        return c

    def __call__(self, x):
        if isinstance(x, torch.Tensor):
            return self.tensor(x)
        if isinstance(x, list):
            return [self(y) for y in x]
        if isinstance(x, tuple):
            return tuple(self(y) for y in x)
        if isinstance(x, dict):
            return {k: self(v) for k, v in x.items()}
        return x


def _dense(t):
    t = t.resolve_conj().resolve_neg().reshape(-1)
    return torch.empty(t.shape, dtype=t.dtype).copy_(t)


def same_value(a, b) -> bool:
    """Bit-for-bit equality of two results (nested), NaNs of one pattern equal."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype or a.layout != b.layout:
            return False
        if a.layout != torch.strided:
            return torch.equal(a.to_dense(), b.to_dense())
        if a.is_quantized:
            return torch.equal(a.int_repr(), b.int_repr())
        x, y = _dense(a), _dense(b)
        return torch.equal(x.view(torch.uint8), y.view(torch.uint8)) if x.numel() else True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return type(a) is type(b) and a == b


@dataclass
class Case:
    """One variant of one sample: ``call(args) -> result`` on a structure ``(input, args,
    kwargs)``."""
    op: str
    variant: str
    sample: object
    call: object


def variants(op, sample):
    yield "function", lambda s: op.op(s[0], *s[1], **s[2])
    if op.inplace_variant is not None:
        yield "inplace", lambda s: op.inplace_variant(s[0], *s[1], **s[2])
    if op.supports_out:
        yield "out", None


def _run(call, structure, seed):
    torch.manual_seed(seed)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("ok", call(structure))
    except Exception as exc:  # noqa: BLE001
        return ("raise", type(exc).__name__, str(exc).split("\n")[0])


def computed(x, sample_storages):
    """``x`` with every tensor that aliases the sample's memory (a view it returned, the
    argument an in-place op returns) replaced by None: only computed values remain."""
    if isinstance(x, torch.Tensor):
        if x.layout == torch.strided and x.untyped_storage().data_ptr() in sample_storages:
            return None
        return x
    if isinstance(x, (list, tuple)):
        return [computed(y, sample_storages) for y in x]
    return x


def same_written(b, c, writes, changed) -> bool:
    """Do ``b`` and ``c`` (same structure) agree on the elements of ``b`` the op wrote (the
    trace recorded them as written, and their bytes changed)?"""
    bs, cs = tensors_in(b), tensors_in(c)
    if len(bs) != len(cs):
        return False
    for x, y in zip(bs, cs):
        if x.shape != y.shape or x.layout != torch.strided or x.numel() == 0:
            continue
        k = x.element_size()
        starts = torch.full((), x.data_ptr(), dtype=torch.int64)
        for n, st in zip(x.shape, x.stride()):
            starts = starts.unsqueeze(-1) + torch.arange(n, dtype=torch.int64) * st * k
        mask = torch.tensor([any(a + j in writes and a + j in changed for j in range(k))
                             for a in starts.reshape(-1).tolist()],
                            dtype=torch.bool).reshape(x.shape)
        if not same_value(x[mask], y[mask]):
            return False
    return True


def _bytes_of(t):
    st = t.untyped_storage()
    return st.data_ptr(), torch.empty(0, dtype=torch.uint8).set_(st).clone()


def _recorded(tr, modes):
    """Absolute byte addresses of the trace's accesses with one of ``modes``."""
    out = set()
    for op in tr.ops:
        for acc in op.accesses:
            if acc.mode in modes:
                base = acc.view.tensor.storage.address
                out.update(int(a) + base for a in acc.view.footprint())
    return out


def _shares_memory(tensors) -> bool:
    spans = []
    for t in tensors:
        if t.layout != torch.strided or t.numel() == 0:
            continue
        lo = hi = t.data_ptr()
        for n, s in zip(t.shape, t.stride()):
            if s < 0:
                lo += s * (n - 1) * t.element_size()
            else:
                hi += s * (n - 1) * t.element_size()
        spans.append((lo, hi + t.element_size()))
    spans.sort()
    return any(spans[k + 1][0] < spans[k][1] for k in range(len(spans) - 1))


def _overlaps_itself(t) -> bool:
    if t.layout != torch.strided or t.numel() < 2:
        return False
    seen = set()
    for idx in itertools.product(*(range(n) for n in t.shape)):
        e = sum(i * s for i, s in zip(idx, t.stride()))
        if e in seen:
            return True
        seen.add(e)
    return False


@dataclass
class Stats:
    ops: set = field(default_factory=set)
    cases: int = 0
    checked_writes: int = 0
    checked_reads: int = 0
    checked_quiet: int = 0
    untracked: Counter = field(default_factory=Counter)
    failures: list = field(default_factory=list)
    variants: Counter = field(default_factory=Counter)
    mode_effects: set = field(default_factory=set)   # differ under an empty dispatch mode too
    nondeterministic: set = field(default_factory=set)   # two untraced runs differ

    def fail(self, op, variant, what):
        self.failures.append(f"{op} [{variant}]: {what}")


def check_case(op, sample, variant, call, seed, stats: Stats):
    """Run the four checks on one variant of one sample; failures go to ``stats``."""
    name = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
    structure = (sample.input, list(sample.args), dict(sample.kwargs))
    if variant == "out":
        first = _run(lambda s: op.op(s[0], *s[1], **s[2]), Copier()(structure), seed)
        if first[0] != "ok":
            return
        res = first[1]
        if isinstance(res, torch.Tensor):
            out = torch.zeros_like(res)
        elif isinstance(res, (tuple, list)) and all(isinstance(r, torch.Tensor) for r in res):
            out = tuple(torch.zeros_like(r) for r in res)
        else:
            return
        structure[2]["out"] = out

        def call(s):
            return op.op(s[0], *s[1], **s[2])
    stats.cases += 1
    stats.ops.add(name)
    stats.variants[variant] += 1
    a, b = Copier()(structure), Copier()(structure)
    plain = _run(call, a, seed)
    tensors_b = tensors_in(b)
    ptrs_b = [t.untyped_storage().data_ptr() if t.layout == torch.strided else None
              for t in tensors_b]
    before = {}
    for t in tensors_b:
        if t.layout == torch.strided and t.device.type == "cpu" and not t.is_quantized:
            ptr, data = _bytes_of(t)
            before.setdefault(ptr, data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with af.trace() as tr:
            traced = _run(call, b, seed)
    # results
    if plain[0] != traced[0] or (plain[0] == "raise" and plain[1:] != traced[1:]):
        stats.fail(name, variant, f"traced run differs: {plain[:2]} vs {traced[:2]}")
        return
    unspecified = op.name in UNSPECIFIED or getattr(op, "has_nondeterministic_output", False) \
        or name in stats.nondeterministic
    if plain[0] == "ok" and not unspecified:
        if not same_value(plain[1], traced[1]) or not same_value(tensors_in(a), tensors_b):
            # does any Python dispatch mode change it (PyTorch takes another path)?
            m = Copier()(structure)
            with EmptyMode():
                moded = _run(call, m, seed)
            more = [_run(call, Copier()(structure), seed) for _ in range(3)]
            if moded[0] == "ok" and same_value(moded[1], traced[1]) and \
                    same_value(tensors_in(m), tensors_b):
                stats.mode_effects.add(name)
            elif any(r[0] == "ok" and not same_value(r[1], plain[1]) for r in more + [moded]):
                stats.nondeterministic.add(name)    # two untraced runs differ already
                unspecified = True
            else:
                stats.fail(name, variant, "traced result or memory differs")
    untracked = [c.untracked for c in tr.calls if c.untracked]
    if untracked:
        for why in untracked:
            stats.untracked[why.split(":")[-1].strip()[:60]] += 1
        return
    # writes
    writes = _recorded(tr, ("W", "RW"))
    changed_bytes = set()
    stray = 0
    for t in tensors_b:
        if t.layout != torch.strided or t.device.type != "cpu" or t.is_quantized:
            continue
        ptr, now = _bytes_of(t)
        old = before.get(ptr)
        if old is None or old.numel() != now.numel():
            continue
        changed = torch.nonzero(old != now).reshape(-1).tolist()
        changed_bytes.update(ptr + k for k in changed)
        stray += sum(1 for k in changed if ptr + k not in writes)
        before[ptr] = now   # count each storage once
    stats.checked_writes += 1
    if stray:
        stats.fail(name, variant, f"{stray} changed byte(s) outside recorded writes")
    # reads: NaN in every float element of the sample that no recorded read touches
    if plain[0] == "ok" and not unspecified and not op.name.startswith(("empty", "new_")):
        reads = _recorded(tr, ("R", "RW"))
        c = Copier()(structure)
        tensors_c = tensors_in(c)
        poisoned = 0
        done = set()
        for tb, tc, ptr in zip(tensors_b, tensors_c, ptrs_b):
            if tb.layout != torch.strided or not tb.is_floating_point() or tb.is_quantized:
                continue
            if ptr in done:
                continue
            done.add(ptr)
            k = tb.element_size()
            n = tc.untyped_storage().nbytes() // k
            flat = torch.empty(0, dtype=tb.dtype).set_(tc.untyped_storage(), 0, (n,), (1,))
            for e in range(n):
                if not any(ptr + e * k + j in reads for j in range(k)):
                    flat[e] = float("nan")
                    poisoned += 1
        if poisoned:
            with EmptyMode():   # the kernel path the traced run took
                again = _run(call, c, seed)
            stats.checked_reads += 1
            mine = {p for p in ptrs_b if p is not None}
            theirs = {t.untyped_storage().data_ptr() for t in tensors_c
                      if t.layout == torch.strided}
            # what the op computed: fresh results, and the elements it wrote in place
            kept_b = b[0] if variant == "inplace" else b[2].get("out")
            kept_c = c[0] if variant == "inplace" else c[2].get("out")
            if again[0] != "ok" or not same_value(computed(traced[1], mine),
                                                  computed(again[1], theirs)) \
                    or not same_written(kept_b, kept_c, writes, changed_bytes):
                with EmptyMode():
                    twice = _run(call, Copier()(structure), seed)
                if twice[0] == "ok" and not same_value(twice[1], traced[1]):
                    stats.nondeterministic.add(name)
                else:
                    stats.fail(name, variant, "result changed when unread elements were NaN")
    # quiet on samples without shared memory
    sample_tensors = tensors_in(structure)
    if not _shares_memory(sample_tensors) and not any(
            _overlaps_itself(t) for t in sample_tensors if t.numel() <= 4096):
        stats.checked_quiet += 1
        found = tr.findings()
        if found:
            stats.fail(name, variant, f"finding on a sample without shared memory: "
                       f"{[(f.severity, f.kind) for f in found]}")


def sweep(ops=None, samples_per_op=None, stats=None, progress=False):
    from torch.testing._internal.common_methods_invocations import op_db
    stats = stats or Stats()
    for k, op in enumerate(op_db if ops is None else ops):
        dtype = pick_dtype(op)
        if dtype is None:
            continue
        try:
            samples = list(itertools.islice(op.sample_inputs("cpu", dtype,
                                                             requires_grad=False),
                                            samples_per_op))
        except Exception:  # noqa: BLE001 - samples that cannot be made on this machine
            continue
        for n, sample in enumerate(samples):
            for variant, call in variants(op, sample):
                try:
                    check_case(op, sample, variant, call, 1000 * k + n, stats)
                except Exception as exc:  # noqa: BLE001 - the oracle's own trouble, reported
                    stats.fail(op.name, variant, f"oracle error {type(exc).__name__}: "
                               f"{str(exc)[:80]}")
        if progress:
            print(f"{k + 1}/{len(op_db)} {op.name}: {stats.cases} cases, "
                  f"{len(stats.failures)} failures", file=sys.stderr, flush=True)
    return stats


def coverage(stats: Stats) -> str:
    lines = [f"op_db sweep: {len(stats.ops)} OpInfos, {stats.cases} cases "
             f"({', '.join(f'{v} {k}' for k, v in sorted(stats.variants.items()))}); "
             f"writes checked on {stats.checked_writes}, reads (NaN poisoning) on "
             f"{stats.checked_reads}, quiet on {stats.checked_quiet}; "
             f"untracked {sum(stats.untracked.values())}; failures {len(stats.failures)}"]
    if stats.mode_effects:
        lines.append(f"  results that differ under an empty TorchDispatchMode as well (PyTorch "
                     f"takes another path under any Python dispatch mode): "
                     f"{', '.join(sorted(stats.mode_effects))}")
    if stats.nondeterministic:
        lines.append(f"  nondeterministic (two untraced runs differ; values not compared): "
                     f"{', '.join(sorted(stats.nondeterministic))}")
    for why, n in stats.untracked.most_common():
        lines.append(f"  untracked x{n}: {why}")
    for f in stats.failures:
        lines.append(f"  FAIL {f}")
    return "\n".join(lines)


if __name__ == "__main__":
    import argparse
    p = argparse.ArgumentParser()
    p.add_argument("--write")
    p.add_argument("--samples", type=int, default=None)
    args = p.parse_args()
    s = sweep(samples_per_op=args.samples, progress=True)
    text = coverage(s)
    print(text)
    if args.write:
        from pathlib import Path
        Path(args.write).write_text(text + "\n")
