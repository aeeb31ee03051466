"""Recall on PyTorch's own operator database: every op with an ``out=`` variant, called with
``out=`` one of its own tensor inputs (where the result's shape and dtype fit it).

The oracle is the same op on clones of its inputs, computed here without the tracer:

- the value differs from it (NaNs compared as equal): the tracer must say ``wrong``;
- the tracer says ``wrong``: the value must differ;
- PyTorch refuses the call for the overlap (``unsupported operation``): a ``hazard``;
- otherwise a finding, if any, is a ``hazard`` (a pointwise op writing the very view it reads
  is exempt and may have none).

A sample of ops runs in the normal suite, every op as a slow test.
"""
import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")

import aliasflow as af  # noqa: E402

# non-pointwise ops whose out= aliasing torch 2.13 does not check, or refuses: the quick sample
QUICK = {"mm", "mv", "addmv", "addmm", "baddbmm", "bmm", "matmul", "cumsum", "cumprod",
         "sum", "mean", "amax", "sort", "cross", "linalg.inv", "tril", "kron", "take",
         "index_select", "gather", "cat", "add"}


def _ops(names=None):
    from torch.testing._internal.common_methods_invocations import op_db
    return [op for op in op_db if op.supports_out and (names is None or op.name in names)
            and torch.float32 in op.supported_dtypes("cpu")]


def _cases(op, samples=4):
    """``(args, kwargs, k, expected)`` for each tensor argument ``k`` of the first samples that
    fits the result (``expected``: the op on clones)."""
    try:
        found = list(op.sample_inputs("cpu", torch.float32))[:samples]
    except Exception:  # noqa: BLE001 - a sample generator that needs more than we have
        return
    for s in found:
        args = [s.input, *s.args]
        try:
            torch.manual_seed(0)
            want = op(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args],
                      **s.kwargs)
        except Exception:  # noqa: BLE001
            continue
        if not isinstance(want, torch.Tensor):
            continue
        for k, a in enumerate(args):
            if isinstance(a, torch.Tensor) and a.shape == want.shape and \
                    a.dtype == want.dtype and a.numel() > 1:
                yield args, s.kwargs, k, want


def _same(a, b) -> bool:
    return a.shape == b.shape and bool(torch.eq(a, b).logical_or(a.isnan() & b.isnan()).all())


def check(op) -> list[str]:
    """What each case showed: "wrong", "refused" or "same"."""
    seen = []
    random = op.name.startswith("normal")   # not re-run: a differing value stays a hazard
    for args, kwargs, k, want in _cases(op):
        args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        error = None
        torch.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with af.trace() as tr:
                try:
                    op(*args, out=args[k], **kwargs)
                except Exception as exc:  # noqa: BLE001
                    error = str(exc)
        found = [f.severity for f in tr.findings()
                 if f.kind in ("in-op-overlap", "self-overlap-write")]
        name = f"{op.name} out=argument {k}"
        if error is None and not _same(args[k], want) and not random:
            assert "wrong" in found, (name, found)
            seen.append("wrong")
            continue
        assert "wrong" not in found or random, (name, found)
        if error is not None and "unsupported operation" in error:
            assert found == ["hazard"], (name, found, error)
            seen.append("refused")
            continue
        assert set(found) <= {"hazard"}, (name, found)
        seen.append("same")
    return seen


def test_out_aliasing_its_input_quick_sample():
    seen = {op.name: check(op) for op in _ops(QUICK)}
    counts = {v: sum(x.count(v) for x in seen.values()) for v in ("wrong", "refused", "same")}
    # the sample must exercise both classes, or it proves nothing
    assert counts["wrong"] >= 5 and counts["refused"] >= 3, seen


@pytest.mark.slow
def test_out_aliasing_its_input_every_op():
    seen = {f"{op.name}.{op.variant_test_name}": check(op) for op in _ops()}
    counts = {v: sum(x.count(v) for x in seen.values()) for v in ("wrong", "refused", "same")}
    print("out= aliasing its input, op_db samples:", counts)
    assert counts["wrong"] >= 15 and counts["refused"] >= 10, counts
