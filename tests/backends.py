"""Run a test module on both builds of a compiled part: compiled and the pure-Python reference.

``backend_fixture(module, attribute)`` makes an autouse, module-scoped fixture that runs every
test of the module twice: once with ``module.attribute`` as loaded (skipped when the compiled
part is not in use) and once with it set to None (the pure reference).
"""

import pytest


def backend_fixture(module, attribute: str, compiled_name: str):
    @pytest.fixture(autouse=True, scope="module", params=[compiled_name, "pure"],
                    name=f"{attribute.strip('_')}_backend")
    def backend(request):
        saved = getattr(module, attribute)
        if request.param == compiled_name:
            if saved is None:
                pytest.skip(f"{module.__name__}.{attribute}: compiled part not loaded (AF_PURE=1, "
                            "or not built: tests/test_native.py fails then)")
        else:
            setattr(module, attribute, None)
        try:
            yield request.param
        finally:
            setattr(module, attribute, saved)

    return backend
