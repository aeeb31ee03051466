"""Pausing Python's cyclic garbage collector around work that makes many objects and frees
none (lowering a program, checking and preparing a run, building a trace's records or its
findings): collections in between would only scan them again and again. Reference counting
frees memory as usual meanwhile."""
from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def paused_gc(promote: bool = False):
    """The cyclic collector off inside the block (as it was after).

    With ``promote`` (work done once per trace, not in a caller's loop), what the block made
    and kept goes straight to the oldest generation on exit (``gc.freeze()`` then
    ``gc.unfreeze()``), as it would after surviving the collections the pause skipped,
    instead of being scanned as young all at once on the first allocation after. Everything
    young in the process moves with it, so garbage cycles among those objects wait for the
    next full collection: not for work a program repeats. A process that froze objects itself
    (``gc.freeze()`` before forking workers, say) keeps them frozen: no promotion then, as
    ``gc.unfreeze()`` would thaw its objects too."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            resume(promote)


def resume(promote: bool = False) -> None:
    """The collector back on after a pause (see :func:`paused_gc`); with ``promote``, what the
    pause made first goes to the oldest generation, unless the process froze objects itself."""
    if promote and gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
    gc.enable()
