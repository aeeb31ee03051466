"""Pausing Python's cyclic garbage collector around work that makes many objects and frees
none (lowering a program, checking and preparing a run, building a trace's records or its
findings): collections in between would only scan them again and again. Reference counting
frees memory as usual meanwhile."""
from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def paused_gc():
    """The cyclic collector off inside the block (as it was after). What the block made and
    kept goes straight to the oldest generation (``gc.freeze()`` then ``gc.unfreeze()``), as
    it would after surviving the collections the pause skipped, instead of being scanned as
    young all at once on the first allocation after; garbage cycles among the objects moved
    wait for the next full collection."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()
