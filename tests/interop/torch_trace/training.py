"""The oracle for a real model's training steps under ``af.trace()``: the same steps run
untraced on an identically seeded copy. ``Training`` is what a model factory returns;
``check(make, steps)`` runs both and returns the trace and a list of every difference:
losses, parameters, buffers, gradients and optimizer state compared bit for bit (NaNs
included), warnings the tracer raised, calls it could not record, findings, and the replay
of the trace on two workers."""
from __future__ import annotations

import random
import warnings
from typing import Callable, NamedTuple, Optional

import numpy as np
import torch

from torch.utils._python_dispatch import TorchDispatchMode

import aliasflow as af
from aliasflow.interop.torch_trace.tracer import AliasflowTraceWarning


class Training(NamedTuple):
    """A model, its optimizer (None: the step updates the parameters itself) and one
    training step, which returns the loss (detached)."""
    model: torch.nn.Module
    optimizer: Optional[torch.optim.Optimizer]
    step: Callable[[], torch.Tensor]


def _bits(t: torch.Tensor) -> torch.Tensor:
    t = t.detach()
    if t.is_sparse:
        t = t.coalesce().to_dense()
    if t.is_complex():
        t = torch.view_as_real(t)
    t = t.contiguous().reshape(-1)
    return t.view(torch.uint8) if t.element_size() == 1 or t.dtype == torch.bool else \
        t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def same_bits(a, b) -> bool:
    """``a`` and ``b`` equal bit for bit (NaN payloads and signed zeros included)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype == torch.bool:
            return torch.equal(a, b)
        return torch.equal(_bits(a), _bits(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_bits(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_bits(x, y) for x, y in zip(a, b))
    return a == b or (a != a and b != b)


def state_of(run: Training) -> dict:
    """Everything a training step leaves behind: parameters and buffers, gradients, and
    the optimizer's state (moments, step counts, momentum buffers) and hyperparameters."""
    state = {f"state_dict.{k}": v for k, v in run.model.state_dict(keep_vars=True).items()}
    for k, p in run.model.named_parameters():
        state[f"grad.{k}"] = p.grad
    if run.optimizer is not None:
        opt = run.optimizer.state_dict()
        for i, s in opt["state"].items():
            for k, v in s.items():
                state[f"optimizer.state[{i}].{k}"] = v
        for g, group in enumerate(opt["param_groups"]):
            for k, v in group.items():
                state[f"optimizer.param_groups[{g}].{k}"] = v
    return state


def differences(plain_losses, plain: Training, traced_losses, traced: Training) -> list:
    diffs = [f"loss of step {i}" for i, (a, b) in
             enumerate(zip(plain_losses, traced_losses)) if not same_bits(a, b)]
    a, b = state_of(plain), state_of(traced)
    if a.keys() != b.keys():
        diffs.append(f"state keys differ: {sorted(a.keys() ^ b.keys())[:5]}")
    diffs += [k for k in a if k in b and not same_bits(a[k], b[k])]
    return diffs


def seeded(make: Callable[[], Training]) -> Training:
    """``make()`` with every generator a model may draw from reset (wav2vec2 draws its
    masks from NumPy's)."""
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    return make()


# Ops whose result lies in a larger storage whose other bytes they leave uninitialised
# (``F.mse_loss(a, b)`` returns its 0-dim mean in element 0 of an ``a.numel()``-element
# storage): replay runs them twice and reports them nondeterministic, as it should.
UNINITIALIZED_TAILS = frozenset({"aten.mse_loss.default"})
# Ops whose bits depend on how many threads compute them (MKL's FFT): a parallel replay may
# give them fewer than the traced run had, and replay reports them nondeterministic.
THREAD_COUNT_BITS = frozenset({"aten._fft_r2c.default", "aten._fft_c2r.default",
                               "aten._fft_c2c.default"})


class _EmptyMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def check(make: Callable[[], Training], steps: int = 2, workers: int = 2):
    """Run ``steps`` steps of ``make()`` untraced and of a second ``make()`` traced (each
    seeded alike); return ``(trace, problems)``. Where the traced run differs, the steps
    run again untraced and under an empty ``TorchDispatchMode`` (see :func:`explain`): a
    difference the latter shows too is PyTorch's (any dispatch mode makes
    ``at::isTensorSubclassLike`` true, and the autograd engine then adds gradients out of
    place), and is named as such."""
    plain = seeded(make)
    plain_losses = [plain.step() for _ in range(steps)]
    traced = seeded(make)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AliasflowTraceWarning)
        with af.trace() as tr:
            traced_losses = [traced.step() for _ in range(steps)]
    problems = [f"not a training step: {k}" for k in sanity(traced_losses, traced)]
    changed = differences(plain_losses, plain, traced_losses, traced)
    if changed:
        problems += [f"differs from the untraced run: {k}{why}"
                     for k, why in explain(make, steps, plain_losses, plain, changed,
                                           traced_losses, traced)]
    problems += [f"warning: {w.message}" for w in caught
                 if issubclass(w.category, AliasflowTraceWarning)]
    problems += sorted({f"untracked: {c.func}: {c.untracked}" for c in tr.calls
                        if c.untracked})
    problems += [f"finding: {f.describe()}" for f in tr.findings()]
    if not any(c.untracked for c in tr.calls):
        report = tr.replay(workers=workers)
        odd = {n.split("#")[0] for n in report.nondeterministic} - UNINITIALIZED_TAILS - \
            THREAD_COUNT_BITS
        if not report.identical or odd:
            problems.append(f"replay: {report}")
        if report.compared_storages == 0:
            problems.append("replay compared no storage")
    return tr, problems


def explain(make, steps, plain_losses, plain, changed, traced_losses, traced):
    """Each difference with what else shows it: a second untraced run (the model is not
    deterministic), or a run under an empty dispatch mode that matches the traced one."""
    again = seeded(make)
    again_losses = [again.step() for _ in range(steps)]
    unstable = set(differences(plain_losses, plain, again_losses, again))
    moded = seeded(make)
    with _EmptyMode():
        moded_losses = [moded.step() for _ in range(steps)]
    also = set(differences(plain_losses, plain, moded_losses, moded))
    unlike = set(differences(moded_losses, moded, traced_losses, traced))
    for k in changed:
        yield k, (" (between two untraced runs too)" if k in unstable else
                  " (as under an empty TorchDispatchMode)" if k in also and k not in unlike
                  else "")


def sanity(losses, run: Training) -> list:
    """What makes the comparison mean something: finite losses, gradients, optimizer
    state."""
    out = [f"loss {float(x)}" for x in losses if not torch.isfinite(x).all()]
    if run.optimizer is not None and \
            not any(p.grad is not None for p in run.model.parameters()):
        out.append("no gradient")
    if run.optimizer is not None and not run.optimizer.state_dict()["state"]:
        out.append("no optimizer state")
    return out
