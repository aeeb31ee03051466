"""The IPython shell fixture of the notebook tests (`from ipython_shell import shell`)."""
import sys

import pytest


@pytest.fixture(scope="module")
def shell():
    """An IPython shell with ``%load_ext aliasflow`` done (one per test module). IPython puts
    its own module in ``sys.modules["__main__"]`` (and its hooks in ``sys``) and does not put
    them back when the instance is cleared; they are put back here, as later tests (a
    process pool spawning workers reads ``__main__.__spec__``) need the real ones."""
    interactiveshell = pytest.importorskip("IPython.core.interactiveshell")
    saved = sys.modules.get("__main__"), sys.displayhook, sys.excepthook
    ip = interactiveshell.InteractiveShell.instance()
    try:
        ip.run_line_magic("load_ext", "aliasflow")
        yield ip
    finally:
        interactiveshell.InteractiveShell.clear_instance()
        sys.modules["__main__"], sys.displayhook, sys.excepthook = saved
