"""Pausing Python's cyclic garbage collector around work that makes many objects and frees
none (lowering a program, checking and preparing a run, building a trace's records):
collections in between would only scan them again and again. Reference counting frees memory
as usual meanwhile."""
from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def paused_gc():
    """The cyclic collector off inside the block (as it was after)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
