"""``aliasflow.mge``: MegEngine-style eager tensors whose three layers (Python tensor, C++
tensor, storage) are visible and whose every memory access is recorded as aliasflow ops
(seed 001).

>>> from aliasflow import mge
>>> from aliasflow.mge import functional as F
>>> a = mge.tensor([[1., 2.], [3., 4.]])
>>> b = F.transpose(a)                       # 1.9: a new tensor on the same storage
>>> mge.layers(b).storage.uid == mge.layers(a).storage.uid, mge.layers(a).storage.refcount
(True, 2)
"""
from . import functional
from .runtime import (DEVICE, Impl, ImplInfo, Layers, Storage, StorageInfo, config,
                      recorded_ops, reset)
from .tensor import Tensor, layers, tensor

__all__ = ["functional", "Tensor", "tensor", "config", "layers", "recorded_ops", "reset",
           "Layers", "ImplInfo", "StorageInfo", "Storage", "Impl", "DEVICE"]
