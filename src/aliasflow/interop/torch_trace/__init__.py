"""Trace real PyTorch programs and find where aliasing decides their results.

>>> import torch, aliasflow as af
>>> a = torch.arange(12.).reshape(3, 4)
>>> with af.trace() as t:
...     a -= a[:, :1]
>>> [(f.severity, f.kind, f.ops[0].label, f.count, f.differs) for f in t.findings()]
[('wrong', 'in-op-overlap', 'aten.sub_.Tensor', 3, 6)]
"""
__all__ = ["Trace", "trace", "Finding", "AliasflowTraceWarning"]


def __getattr__(name):
    # torch loads with the tracer, not with the package: ``aliasflow trace`` starts the
    # PyTorch tracer only once the traced program imports torch
    if name in ("Trace", "trace", "AliasflowTraceWarning"):
        from . import tracer
        return getattr(tracer, name)
    if name == "Finding":
        from ..findings import Finding
        return Finding
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
