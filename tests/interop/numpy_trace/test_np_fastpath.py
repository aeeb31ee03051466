"""The compiled runtime (``_fastpath``) against its pure-Python reference (``fastpath.py``):
the same programs give the same notes (operations, accesses, exact layouts, outcomes)."""
import os

import numpy as np
import pytest

from aliasflow.interop.numpy_trace import fastpath, runtime
from aliasflow.interop.numpy_trace.rewrite import rewrite
from aliasflow.interop.numpy_trace.trace import NumpyTrace
from np_overlap_cases import FAMILIES

PURE = os.environ.get("AF_PURE", "") not in ("", "0")
needs_compiled = pytest.mark.skipif(not fastpath.COMPILED, reason="_fastpath not in use")
pytestmark = pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
runtime.install()


def test_fastpath_extension_built():
    """Fails when the NumPy tracer's compiled runtime did not build (unless AF_PURE=1)."""
    if PURE:
        assert not fastpath.COMPILED
        return
    from aliasflow.interop.numpy_trace import _fastpath  # the import error, if any, is the message
    assert fastpath.COMPILED and runtime.setitem is _fastpath.setitem

EXTRA = [
    "d[0] = s[0]", "d[...] = 1.5", "d[1:] = d[:-1]", "d[::-1] = s", "x = d; x += 1",
    "x = d; x *= s", "np.add(d, s, out=d)", "np.add(d, s, d)", "np.negative(s, out=(d,))",
    "np.sqrt(d, out=d)", "d[0] += 1", "d[:1] -= s[:1]", "np.multiply(d, 2)",
]


def _place(lay, buf):
    """A layout with its address relative to the buffer (a temporary's: elsewhere)."""
    base = buf.__array_interface__["data"][0]
    offset = lay[0] - base
    return (offset if 0 <= offset < buf.nbytes else "elsewhere",) + tuple(lay[1:])


def _notes(code, ns, buf):
    with np.errstate(all="ignore"), NumpyTrace(wrap_functions=False) as t:
        try:
            exec(code, {"np": np}, dict(ns))
        except Exception as exc:  # noqa: BLE001 - both runtimes must record the refusal
            error = type(exc).__name__
        else:
            error = None
    notes = [(n[1], [(a[0], a[1], _place(a[2], buf)) for a in n[2]],
              None if n[3] is None else (n[3].severity, n[3].kind)) for n in t.recorder.ops]
    return notes, sorted(t.recorder.errors.items()), error


@pytest.fixture
def pure(monkeypatch):
    def use():
        for name, fn in fastpath.PURE.items():
            monkeypatch.setattr(fastpath, name, fn)
            if hasattr(runtime, name):
                monkeypatch.setattr(runtime, name, fn)
    return use


@needs_compiled
@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_same_notes_as_the_reference(family, pure):
    code, _ = rewrite(family.code + "\n", "<case>", runtime.register_site)
    got = []
    for seed in range(12):
        case = family.make(np.random.default_rng(seed))
        if case is None:
            continue
        buf, ns, _ = case
        before = buf.copy()
        got.append((buf, before, ns, _notes(code, ns, buf)))
        buf[...] = before
    pure()
    for buf, before, ns, compiled in got:
        buf[...] = before
        assert _notes(code, ns, buf) == compiled


@needs_compiled
@pytest.mark.parametrize("statement", EXTRA)
def test_same_notes_on_common_statements(statement, pure):
    code, _ = rewrite(statement + "\n", "<stmt>", runtime.register_site)
    buf = np.arange(64, dtype=np.uint8)
    ns = {"d": buf[:32].view(np.float64), "s": buf[16:48].view(np.float64)}
    before = buf.copy()
    compiled = _notes(code, ns, buf)
    buf[...] = before
    pure()
    assert _notes(code, ns, buf) == compiled
