"""Run solver tests on both backends: the compiled core and the pure-Python reference.

``from solver_backends import backend`` in a test module makes every test in it run twice.
"""

import pytest

from aliasflow.solver import api


@pytest.fixture(autouse=True, scope="module", params=["native", "pure"])
def backend(request):
    """Select the solver backend for the module's tests (restored afterwards)."""
    saved = api._native
    if request.param == "native":
        if saved is None:
            pytest.skip("compiled backend not loaded (AF_PURE=1, or not built: "
                        "tests/test_native.py::test_extension_built fails then)")
    else:
        api._native = None
    try:
        yield request.param
    finally:
        api._native = saved
