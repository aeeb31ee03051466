"""TensorFlow in aliasflow: graph mode in TensorFlow 1's names (seed 004) and the C++ tensor
memory model (seed 002, in :mod:`.memory`)."""
from . import memory
from .memory import *  # noqa: F401,F403
from .memory import __all__ as _memory_all

__all__ = ["memory", *_memory_all]
