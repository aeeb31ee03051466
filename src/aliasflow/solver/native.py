"""Loading a compiled module that sits beside a pure-Python reference.

``AF_PURE=1`` in the environment selects every pure-Python reference on purpose; a module
that did not build is None too (the install still works; tests/solver/test_native.py fails then).
"""
from __future__ import annotations

import importlib
import os


def pure_requested() -> bool:
    """True when ``AF_PURE`` asks for the pure-Python references."""
    return os.environ.get("AF_PURE", "") not in ("", "0")


def load(module: str):
    """The compiled module ``module`` (a full dotted name), or None."""
    if pure_requested():
        return None
    try:
        return importlib.import_module(module)
    except ImportError:
        return None
