"""The rewriting changes nothing a program can see: Python itself is the oracle (the same
source run as compiled by Python, and as rewritten with a trace recording)."""
import sys
import textwrap
import traceback

import numpy as np
import pytest

from aliasflow.interop.numpy_trace import fastpath, runtime
from aliasflow.interop.numpy_trace.rewrite import rewrite
from aliasflow.interop.numpy_trace.trace import NumpyTrace

runtime.install()

ORDER = """
    log = []
    def t(x, tag):
        log.append(tag)
        return x
    class Box:
        def __init__(self): self.d = {}
        def __getitem__(self, k): log.append(("get", k)); return self.d.get(k, 0)
        def __setitem__(self, k, v): log.append(("set", k, v)); self.d[k] = v
    b = Box()
    t(b, "container")[t("k", "key")] = t(1, "value")
    t(b, "container2")[t("k", "key2")] += t(5, "value2")
    x = t(2, "x")
    x += t(3, "rhs")
    t(b, "c3")[t("a", "k3")] = t(b, "c4")[t("b", "k4")] = t(7, "v")
    i, b[i] = t((1, 2), "tuple")
    (p, (q, *r)), b["z"] = (1, (2, 3, 4)), 9
    lst = [1, 2, 3]; lst[0] += 10; lst[1:] = [7]
    d = {}; d.setdefault("a", 0); d["a"] += 1
    s = "ab"; s += "c"
    n = 5; n **= 2; n //= 3; n <<= 1; n |= 1
    a = np.arange(6.)
    a[t(1, "ak")] = t(a[0] + 5, "av")
    a[t(slice(1, 3), "sk")] += t(a[:2], "sv")
    a.flat[t(0, "fk")] = t(3, "fv")
    np.add(t(a, "arg0"), t(1, "arg1"), out=t(a, "out"))
    m = np.ones((2, 2)); m @= m
    z = np.zeros(2, complex); z.real = np.arange(2.); z.imag += 1
    print(log, b.d, x, lst, d, s, n, a.tolist(), m.tolist(), z.tolist(), p, q, r, i)
    """

SCOPES = """
    class C:
        a = np.arange(4)
        a[0] = 5
        b, c = 1, 2
        a[1:] += a[:-1]
        v = [int(e) for e in a[:2]]
    def gen(v):
        v[0] += (yield v[0])
        yield v.tolist()
    g = gen(np.arange(3.))
    first = next(g)
    second = g.send(10)
    f = lambda arr: np.add(arr, 1, out=arr)
    arr = np.arange(3); f(arr)
    comp = [np.multiply(e, 2, out=e) for e in np.arange(6.).reshape(3, 2)]
    if (w := np.arange(3)) is not None:
        w[0] = 9
    def outer():
        q = np.arange(3)
        def inner():
            nonlocal q
            q += 1
            q[0] = 7
        inner()
        return q
    print(C.a.tolist(), C.b, C.c, C.v, first, second, arr.tolist(), [c.tolist() for c in comp],
          w.tolist(), outer().tolist(), sorted(k for k in C.__dict__ if not k.startswith("__")))
    """


def _run(source, traced):
    src = textwrap.dedent(source)
    code = rewrite(src, "<prog>", runtime.register_site)[0] if traced else \
        compile(src, "<prog>", "exec")
    out = []
    ns = {"np": np, "print": lambda *a: out.append(repr(a))}
    if traced:
        with NumpyTrace():
            exec(code, ns)
    else:
        exec(code, ns)
    return out, sorted(k for k in ns if not k.startswith("__"))


@pytest.mark.parametrize("source", [ORDER, SCOPES], ids=["order", "scopes"])
def test_same_behaviour_as_python(source):
    assert _run(source, True) == _run(source, False)


FAILURES = [
    "a = np.arange(4)\na[10] = 1\n",
    "a = np.arange(4)\na[:, 1] += 1\n",
    "a = np.arange(4)\na[1:] = np.ones(5)\n",
    "a = np.arange(4)\nnp.add(a, 1, out=np.zeros(5))\n",
    "a = np.arange(4)\na.imag = 3\n",
    "x = None\nx += 1\n",
    "a = np.arange(4)\na[np.array([9])] = 0\n",
    "def f():\n    v = np.arange(3)\n    v[5] = 0\nf()\n",
]


def _failure(source, traced):
    code = rewrite(source, "/tmp/failing.py", runtime.register_site)[0] if traced else \
        compile(source, "/tmp/failing.py", "exec")
    ns = {"np": np}
    try:
        if traced:
            with NumpyTrace():
                exec(code, ns)
        else:
            exec(code, ns)
    except Exception as exc:  # noqa: BLE001 - the program's failure is what is compared
        frames = traceback.extract_tb(exc.__traceback__)[1:]   # from the program's frame
        return (type(exc), str(exc),
                [(f.filename, f.lineno, f.colno, f.end_colno) for f in frames])
    return None


# the pure-Python runtime (AF_PURE=1) performs each operation in a frame of its own, which
# tracebacks and warnings then show; the compiled one adds none
frames_as_python = pytest.mark.skipif(not fastpath.COMPILED, reason="pure runtime: a frame more")


@frames_as_python
@pytest.mark.parametrize("source", FAILURES)
def test_same_exception_and_traceback(source):
    want = _failure(source, False)
    assert want is not None
    assert _failure(source, True) == want


@frames_as_python
def test_same_warnings():
    import warnings
    source = "a = np.ones(3)\nnp.divide(a, 0, out=a)\na[0] = np.float64(1e308) * 10\n"

    def caught(traced):
        with warnings.catch_warnings(record=True) as w, np.errstate(all="warn"):
            warnings.simplefilter("always")
            code = rewrite(source, "/tmp/warn.py", runtime.register_site)[0] if traced \
                else compile(source, "/tmp/warn.py", "exec")
            if traced:
                with NumpyTrace():
                    exec(code, {"np": np})
            else:
                exec(code, {"np": np})
        return [(str(x.message), x.category, x.filename, x.lineno) for x in w]
    assert caught(True) == caught(False) != []


def test_untouched_constructs_are_listed():
    source = textwrap.dedent("""
        import numba
        @numba.njit
        def f(a):
            a[0] = 1
        a = np.arange(3)
        for a[0] in range(2):
            pass
        np.add(a, 1, **{"out": a})
        class K:
            x, y = 1, 2
            p, q = np.arange(2), 3
            p[0], q = 5, 6
        """)
    summary = rewrite(source, "<s>", runtime.register_site)[1]
    assert set(summary.unwatched) == {"function compiled by a decorator",
                                     "for-loop target that is a subscript",
                                     "call with **kwargs",
                                     "tuple or chained assignment in a class body"}
    assert summary.imports == {"numba"}


def test_traces_see_every_watched_statement():
    source = textwrap.dedent("""
        a = np.arange(10.)
        a[1:] = a[:-1]
        a += 1
        a[::2] -= a[1::2]
        np.add(a, a, out=a)
        a.sort()
        np.copyto(a, 0.5)
        a.flat[2] = 3
        """)
    code = rewrite(source, "<p>", runtime.register_site)[0]
    with NumpyTrace() as t:
        exec(code, {"np": np})
    assert [n[1] for n in t.recorder.ops] == [
        "setitem", "aug-name", "aug-setitem", "ufunc add", "ndarray.sort", "np.copyto",
        "flat-setitem"]
    assert sys.modules["builtins"].__dict__["@aliasflow_numpy"] is runtime
