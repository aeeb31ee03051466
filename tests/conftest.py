"""Tests are laid out by package (``tests/core`` tests ``aliasflow.core``, and so on). This
directory is on ``sys.path`` (pytest puts a rootdir conftest's directory there), so the shared
helpers beside this file (``strategies``, ``backends``, ``repo``, ...) import by name from any
subdirectory."""

import pytest


@pytest.fixture(autouse=True)
def threads_for_small_ops(request, monkeypatch):
    """Parallel runs of small ops go through the thread pool, as large ones do, so tests
    with small tensors exercise it; a test marked ``light_in_order`` keeps the library's
    default (a run of light ops only goes in program order on the calling thread)."""
    if request.node.get_closest_marker("light_in_order") is None:
        from aliasflow.execution import runner
        monkeypatch.setattr(runner, "LIGHT_IN_ORDER", False)
