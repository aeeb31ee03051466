"""What rewritten code reaches as the builtin ``@aliasflow_numpy`` (see :mod:`.rewrite`).

Each watched operation is one call of :mod:`.fastpath` (compiled when built), which
records the operation, performs it and, when asked, confirms it: ``setitem``, ``setattr``,
``aug_load``/``aug_load_attr`` + ``aug_store``, ``aug_name``, ``call``. Only the stale-view
bookkeeping (``born``, ``bind``) is here in Python. With no trace recording everything just
performs the operation, so rewritten code keeps working after a trace ends.

The module also numbers the watched places of the source (:data:`SITES`).
"""
from __future__ import annotations

import builtins
import operator
import os
import sys

import numpy as np

from .fastpath import (aug_load, aug_load_attr, aug_name, aug_store, call, setattr,
                       setitem)

__all__ = ["aug_load", "aug_load_attr", "aug_name", "aug_store", "call", "setattr", "setitem",
           "slice", "born", "bind", "install", "SITES", "Site", "register_site"]

slice = builtins.slice   # noqa: A001 - what ``a[1:2]`` builds, unshadowable here

_recorder = None          # the active recorder (see .recorder.Recorder), or None
_unwrapped: dict = {}     # id(a trace's wrapper of a NumPy function) -> that function
_ndarray = np.ndarray


def born(*values):
    """Values unpacked by one statement before its stores (tuple assignment)."""
    rec = _recorder
    if rec is not None:
        try:
            rec.born(values)
        except Exception:  # noqa: BLE001 - only the stale-view check loses a fact
            pass


def bind(value):
    """``name = <an expression that makes a view>``: when the view was made."""
    rec = _recorder
    if rec is not None and type(value) is _ndarray and value.base is not None:
        try:
            rec.bind(value)
        except Exception:  # noqa: BLE001
            pass
    return value


def _in_forked_child() -> None:
    """A child process forked while recording (a DataLoader worker) is another program's
    run: it records nothing."""
    global _recorder
    _recorder = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_in_forked_child)


def install() -> None:
    """Make the runtime reachable from rewritten code (a builtin no identifier can name)."""
    builtins.__dict__["@aliasflow_numpy"] = sys.modules[__name__]


# ---- sites ------------------------------------------------------------------------------------
SITES: list = []   # index -> Site; rewritten code refers to its sites by index


class Site(tuple):
    """A watched place in the source: ``path, line, col, end_line, end_col, kind, text,
    names`` (``(label, text)`` of the operands as written)."""
    __slots__ = ()
    path = property(operator.itemgetter(0))
    line = property(operator.itemgetter(1))
    kind = property(operator.itemgetter(5))
    text = property(operator.itemgetter(6))
    names = property(operator.itemgetter(7))


def register_site(path, line, col, end_line, end_col, kind, text, names) -> int:
    SITES.append(Site((path, line, col, end_line, end_col, kind, text, names)))
    return len(SITES) - 1
