"""The IPython shell fixture of the notebook tests (`from ipython_shell import shell`)."""
import pytest


@pytest.fixture(scope="module")
def shell():
    """An IPython shell with ``%load_ext aliasflow`` done (one per test module)."""
    interactiveshell = pytest.importorskip("IPython.core.interactiveshell")
    ip = interactiveshell.InteractiveShell.instance()
    ip.run_line_magic("load_ext", "aliasflow")
    yield ip
    interactiveshell.InteractiveShell.clear_instance()
