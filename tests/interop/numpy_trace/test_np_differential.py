"""Differential property test of the NumPy tracer: random overlapping source and destination
views over one buffer, for every watched operation.

For each case: NumPy's result (the statement run as written, rewritten and traced) against
copy semantics (the same statement on contiguous copies: ``np_overlap_cases.copy_semantics``,
no aliasflow code) and against the same statement untraced. The tracer must report ``wrong``
at the statement's line exactly when NumPy's result differs from copy semantics (or repeated
indices write different values), never change the result, and never call a case NumPy
protects against overlap a hazard.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from aliasflow.interop.numpy_trace import runtime
from aliasflow.interop.numpy_trace.rewrite import rewrite
from aliasflow.interop.numpy_trace.trace import NumpyTrace
from np_overlap_cases import FAMILIES, copy_semantics, differ

runtime.install()
_CODE = {}


def _rewritten(family):
    if family.name not in _CODE:
        code, _ = rewrite(family.code + "\n", f"<{family.name}>", runtime.register_site)
        _CODE[family.name] = (code, compile(family.code, "<plain>", "exec"))
    return _CODE[family.name]


def _repeats_differ(family, ns):
    """Do repeated indices write different values (the duplicate-index rule)?"""
    if family.name not in ("setitem-fancy", "aug-fancy", "put"):
        return False
    idx = np.asarray(ns["idx"]).ravel()
    if family.name == "put":
        idx = np.where(idx < 0, idx + ns["d"].size, idx)
        values = np.resize(np.asarray(ns["s"]).ravel(), idx.size)
    elif family.name == "setitem-fancy":
        values = np.broadcast_to(np.array(ns["s"]), idx.shape)
    else:
        with np.errstate(all="ignore"):
            values = np.array(ns["d"])[idx] + np.array(ns["s"])
    values = values.astype(ns["d"].dtype)
    for i in np.unique(idx):
        group = values[idx == i]
        if group.size > 1 and not (group == group[0]).all():
            return True
    return False


def check_case(family, seed):
    rng = np.random.default_rng(seed)
    case = family.make(rng)
    assume(case is not None)
    buf, ns, written = case
    code, plain = _rewritten(family)
    expected = copy_semantics(plain, ns, written, buf)
    assume(expected is not None)
    dup = _repeats_differ(family, ns)
    before = buf.copy()
    with np.errstate(all="ignore"):
        try:
            exec(plain, {"np": np}, dict(ns))
        except Exception:  # noqa: BLE001 - NumPy refuses these operands in place
            assume(False)
    untraced = buf.copy()
    buf[...] = before
    with np.errstate(all="ignore"), NumpyTrace() as t:
        exec(code, {"np": np}, dict(ns))
    assert np.array_equal(buf, untraced), "the tracer changed the result"
    differs = differ(buf, expected, ns, written, buf, family.exact)
    found = t.findings()
    wrong = [f for f in found if f.severity == "wrong"]
    assert bool(wrong) == (differs or dup), (family.name, differs, dup, found)
    if family.guarded:
        assert not [f for f in found if f.severity == "hazard"], found
    for f in wrong:
        assert f.lines == [f"<{family.name}>:1"]
        if f.kind != "duplicate-index":
            assert f.differs >= 1


SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
pytestmark = pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
@settings(max_examples=40, **SETTINGS)
@given(seed=st.integers(0, 2**32 - 1))
def test_finding_exactly_when_numpy_differs(family, seed):
    check_case(family, seed)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
@settings(max_examples=600, **SETTINGS)
@given(seed=st.integers(0, 2**32 - 1))
def test_finding_exactly_when_numpy_differs_sweep(family, seed):
    check_case(family, seed)
