"""``mge.functional`` (import it as ``F``): the functions seed 001 uses."""
from __future__ import annotations

from .tensor import Tensor, _operand_tensor

__all__ = ["transpose", "reshape", "add", "sub", "mul", "div", "copy"]


def transpose(inp, pattern=None) -> Tensor:
    """Permute the axes by ``pattern`` (reverse them when it is None). Shares the storage from
    version 1.9 on; copies in 1.8."""
    inp = _operand_tensor(inp, "transpose")
    return inp.transpose() if pattern is None else inp.transpose(tuple(pattern))


def reshape(inp, target_shape) -> Tensor:
    """Same elements in a new shape (shares the storage from 1.9 on when no copy is needed)."""
    return _operand_tensor(inp, "reshape").reshape(target_shape)


def add(x, y) -> Tensor:
    return _operand_tensor(x, "add") + y


def sub(x, y) -> Tensor:
    return _operand_tensor(x, "sub") - y


def mul(x, y) -> Tensor:
    return _operand_tensor(x, "mul") * y


def div(x, y) -> Tensor:
    return _operand_tensor(x, "div") / y


def copy(inp) -> Tensor:
    """A new tensor on a new storage with the same values."""
    return _operand_tensor(inp, "copy")._contiguous()
