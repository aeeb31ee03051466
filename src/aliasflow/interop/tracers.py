"""The tracers the command line, the pytest plugin and the notebook magic can use, each
found without importing its framework until it is asked for: ``torch_tracer()`` (PyTorch
alone) and ``numpy_tracer()`` (NumPy, and PyTorch when the program uses it)."""
from __future__ import annotations

TORCH_MISSING = "tracing PyTorch programs needs PyTorch: pip install 'aliasflow[torch]'"


class TracerUnavailable(ImportError):
    """The tracer's framework is not installed (the message names the extra to install)."""


def torch_tracer():
    """The PyTorch tracer's ``trace`` factory; :class:`TracerUnavailable` (one line naming
    the extra) when PyTorch is missing or does not import."""
    try:
        import torch  # noqa: F401
    except ImportError as exc:
        if getattr(exc, "name", None) == "torch" or "torch" in str(exc).split("'"):
            raise TracerUnavailable(TORCH_MISSING) from None
        raise TracerUnavailable(f"{TORCH_MISSING} (importing it failed: {exc})") from None
    except Exception as exc:  # noqa: BLE001 - a broken install: say so in one line
        raise TracerUnavailable(f"{TORCH_MISSING} (importing it failed: "
                                f"{type(exc).__name__}: {exc})") from None
    from .torch_trace import trace
    return trace


def numpy_tracer():
    """The tracer ``aliasflow trace`` runs programs under: NumPy (always: NumPy is a
    dependency) and PyTorch once the program imports it, where it is installed. A factory
    ``(lazy_torch=True, include=()) -> JointTrace`` whose ``run_path``/``run_module`` rewrite the
    program's own code (see ``interop/numpy_trace/joint.py``)."""
    from .numpy_trace.joint import JointTrace

    def make(lazy_torch: bool = True, include=()):
        return JointTrace(lazy_torch=lazy_torch, include=include)
    return make
