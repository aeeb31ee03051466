"""Trace real PyTorch programs and find where aliasing decides their results.

>>> import torch, aliasflow as af
>>> a = torch.arange(12.).reshape(3, 4)
>>> with af.trace() as t:
...     a -= a[:, :1]
>>> [(f.severity, f.kind, f.ops[0].label, f.count, f.differs) for f in t.findings()]
[('wrong', 'in-op-overlap', 'aten.sub_.Tensor', 3, 6)]
"""
from ..findings import Finding
from .tracer import AliasflowTraceWarning, Trace, trace

__all__ = ["Trace", "trace", "Finding", "AliasflowTraceWarning"]
