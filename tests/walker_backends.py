"""Run analysis tests on both dependency walks: the compiled one and the Python reference.

``from walker_backends import walker_backend`` in a test module makes every test in it run
twice (as ``solver_backends`` does for the solver).
"""

import pytest

from aliasflow.analysis import compiled


@pytest.fixture(autouse=True, scope="module", params=["compiled", "pure"])
def walker_backend(request):
    """Select the walk for the module's tests (restored afterwards)."""
    saved = compiled.walker
    if request.param == "compiled":
        if saved is None:
            pytest.skip("compiled walker not loaded (AF_PURE=1, or not built: "
                        "tests/test_native.py::test_extension_built fails then)")
    else:
        compiled.walker = None
    try:
        yield request.param
    finally:
        compiled.walker = saved
