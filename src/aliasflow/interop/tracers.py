"""The tracers the command line, the pytest plugin and the notebook magic can use, each
found without importing its framework until it is asked for."""
from __future__ import annotations

import importlib.util

TORCH_MISSING = "tracing PyTorch programs needs PyTorch: pip install 'aliasflow[torch]'"


class TracerUnavailable(ImportError):
    """The tracer's framework is not installed (the message names the extra to install)."""


def torch_tracer():
    """The PyTorch tracer's ``trace`` factory; :class:`TracerUnavailable` (one line naming
    the extra) when PyTorch is missing or does not import."""
    if importlib.util.find_spec("torch") is None:
        raise TracerUnavailable(TORCH_MISSING)
    try:
        from .torch_trace import trace
    except ImportError as exc:  # torch is there but does not import
        raise TracerUnavailable(f"{TORCH_MISSING} (importing it failed: {exc})") from None
    return trace
