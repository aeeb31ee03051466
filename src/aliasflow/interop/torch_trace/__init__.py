"""Trace real PyTorch programs and find where aliasing decides their results.

>>> import torch, aliasflow as af
>>> a = torch.ones(3, 4)
>>> with af.trace() as t:
...     a -= a[:, :1]
>>> [(f.kind, f.ops[0].aten, f.count) for f in t.findings()]
[('in-op-overlap', 'aten.sub_.Tensor', 3)]
"""
from .tracer import Trace, trace
from .findings import Finding

__all__ = ["Trace", "trace", "Finding"]
