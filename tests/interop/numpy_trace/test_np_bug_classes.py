"""Every class of silently wrong write found on NumPy 2.4.6 (by the differential probe,
``tests/np_overlap_cases.py``), each as a program: the tracer must flag it ``wrong`` at its
line. Each program's last line is the bug; the expected values (copy semantics) are worked
out by hand here, and the test first checks that NumPy really computes something else (it
is skipped, not passed, if a NumPy version fixed the class).
"""
import textwrap

import numpy as np
import pytest

from aliasflow.interop.numpy_trace.cli import run_traced

# name -> (program, the variable the last line writes, its values under copy semantics, kind)
BUGS = {
    # one-dimensional assignment copies like memmove: right only for equal strides and dtypes
    "assign-row-from-column": ("""
        a = np.arange(16).reshape(4, 4)
        a[1] = a[:, 3]""", "a", [[0, 1, 2, 3], [3, 7, 11, 15], [8, 9, 10, 11],
                                 [12, 13, 14, 15]], "in-op-overlap"),
    "assign-reinterpreted": ("""
        a = np.arange(12, dtype=np.int64)
        h = a.view(np.int32)
        a[1:4] = h[2:5]""", "a", [0, 1, 0, 2, 4, 5, 6, 7, 8, 9, 10, 11], "in-op-overlap"),
    "copyto-1d": ("""
        a = np.arange(16).reshape(4, 4)
        np.copyto(a[1], a[:, 3])""", "a", [[0, 1, 2, 3], [3, 7, 11, 15], [8, 9, 10, 11],
                                          [12, 13, 14, 15]], "in-op-overlap"),
    "set-real": ("""
        z = np.arange(8, dtype=np.complex64)
        f = z.view(np.float32)
        z.real = f[1:9]""", "z", [0, 1, 0, 2, 0, 3, 0, 4], "in-op-overlap"),
    "set-imag": ("""
        z = np.arange(8, dtype=np.complex128)
        f = z.view(np.float64)
        z.imag = f[2:10]""", "z", [k + 1j * v for k, v in enumerate([1, 0, 2, 0, 3, 0, 4, 0])],
                     "in-op-overlap"),
    "setfield": ("""
        a = np.arange(6, dtype=np.int64)
        h = a.view(np.int32)
        a.setfield(h[3:9], np.int32, 4)""", "a",
                 [k + (v << 32) for k, v in enumerate([0, 2, 0, 3, 0, 4])], "in-op-overlap"),
    # boolean-mask assignment has no overlap check
    "mask": ("""
        a = np.arange(10)
        m = a % 2 == 0
        a[m] = a[1:6][::-1]""", "a", [5, 1, 4, 3, 3, 5, 2, 7, 1, 9], "in-op-overlap"),
    # .flat assignment has no overlap check
    "flat-slice": ("""
        a = np.arange(6)
        a.flat[1:] = a[:5]""", "a", [0, 0, 1, 2, 3, 4], "in-op-overlap"),
    "flat-index": ("""
        a = np.arange(8)
        i = np.arange(1, 8)
        a.flat[i] = a[:7]""", "a", [0, 0, 1, 2, 3, 4, 5, 6], "in-op-overlap"),
    "set-flat": ("""
        a = np.arange(6)
        a.flat = a[1:]""", "a", [1, 2, 3, 4, 5, 1], "in-op-overlap"),
    # np.place reads its values in order while it writes the selected places
    "place": ("""
        a = np.arange(8)
        np.place(a, a > 0, a[:-1])""", "a", [0, 0, 1, 2, 3, 4, 5, 6], "in-op-overlap"),
    # NumPy's fill_diagonal writes through .flat
    "fill-diagonal": ("""
        a = np.arange(9).reshape(3, 3)
        np.fill_diagonal(a, a.diagonal()[::-1])""", "a", [[8, 1, 2], [3, 4, 5], [6, 7, 0]],
                      "in-op-overlap"),
    # concatenate/stack copy their inputs in turn into out
    "concatenate-out": ("""
        a = np.arange(4)
        np.concatenate([a[2:], a[:2]], out=a)""", "a", [2, 3, 0, 1], "in-op-overlap"),
    "stack-out": ("""
        a = np.arange(6).reshape(2, 3)
        np.stack([a[1], a[0]], out=a)""", "a", [[3, 4, 5], [0, 1, 2]], "in-op-overlap"),
    # duplicate indices writing different values: which lands is not defined
    "duplicate-index": ("""
        a = np.zeros(4)
        a[[0, 0, 1]] = [1, 2, 3]""", "a", None, "duplicate-index"),
    "put-duplicate": ("""
        a = np.zeros(4)
        np.put(a, [1, 1], [5, 6])""", "a", None, "duplicate-index"),
    # no overlap at all: NumPy 2.4.6's kernels for these layouts are wrong
    "negative-strided": ("""
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        o = np.zeros(6, np.float32)
        np.negative(x[:, 0], out=o[::2])""", "o", [0, 0, -4, 0, -8, 0], "kernel"),
    "isfinite-strided": ("""
        x = np.arange(40.)
        o = np.zeros(80, bool)
        np.isfinite(x, out=o[::2])""", "o", [True, False] * 40, "kernel"),
    "choose-strided-out": ("""
        b = np.zeros(12, dtype=np.int64)
        i = np.array([0, 1, 0])
        np.choose(i, [np.arange(3), np.arange(10, 13)], out=b[::2][:3], mode='wrap')""", "b",
                           [0, 0, 11, 0, 2] + [0] * 7, "kernel"),
}

# explicit layouts over one buffer, found by the probe (its minimal cases); their expected
# values are copy semantics computed here from a copy of the buffer
BUFFER = "buf = (np.arange({n}) * 7 % 61 + 1).astype(np.uint8)"
LAYOUT_BUGS = {
    "mask-zero-d-source": (128, """
        d = np.ndarray((2,), '>f8', buffer=buf, offset=24, strides=(-24,))
        s = np.ndarray((), '>f8', buffer=buf, offset=19, strides=())
        m = np.array([True, True])
        d[m] = s""", "d[m] = s"),
    "ufunc-where-nothing-selected": (128, """
        d = np.ndarray((2,), '>f8', buffer=buf, offset=56, strides=(-24,))
        x0 = np.ndarray((2,), '<f4', buffer=buf, offset=60, strides=(-4,))
        x1 = np.ndarray((2,), '<i2', buffer=buf, offset=4, strides=(4,))
        m = np.array([False, False])
        np.add(x0, x1, out=d, where=m)""", "np.add(x0, x1, out=d, where=m)"),
    "reduce-max-out": (128, """
        d = np.ndarray((1,), '|u1', buffer=buf, offset=30, strides=(-5,))
        s = np.ndarray((1, 2), '<i4', buffer=buf, offset=40, strides=(-12, -12))
        np.max(s, axis=1, out=d)""", "np.max(s, axis=1, out=d)"),
    "reduce-min-out": (128, """
        d = np.ndarray((1,), '|u1', buffer=buf, offset=30, strides=(-5,))
        s = np.ndarray((1, 2), '<i4', buffer=buf, offset=40, strides=(-12, -12))
        np.min(s, axis=1, out=d)""", "np.min(s, axis=1, out=d)"),
    "assign-unaligned-cast": (96, """
        d = np.ndarray((2,), '<i8', buffer=buf, offset=48, strides=(-48,))
        s = np.ndarray((2,), '|i1', buffer=buf, offset=6, strides=(-1,))
        d[...] = s""", "d[...] = s"),
    "copyto-byte-strides": (96, """
        d = np.ndarray((3,), '<i2', buffer=buf, offset=90, strides=(-12,))
        s = np.ndarray((3,), '<i2', buffer=buf, offset=78, strides=(-6,))
        np.copyto(d, s)""", "np.copyto(d, s)"),
    "stack-big-endian": (128, """
        d = np.ndarray((2, 1), '>f8', buffer=buf, offset=112, strides=(8, -24))
        p0 = np.ndarray((1,), '>f8', buffer=buf, offset=8, strides=(-40,))
        p1 = np.ndarray((1,), '>f8', buffer=buf, offset=112, strides=(8,))
        np.stack([p0, p1], out=d)""", "np.stack([p0, p1], out=d)"),
}


def _run(tmp_path, source):
    script = tmp_path / "prog.py"
    script.write_text("import numpy as np\n" + textwrap.dedent(source).strip() + "\n")
    code, trace, _ = run_traced(script=str(script))
    assert code == 0
    return script, trace, len(script.read_text().splitlines())


def _namespace(source):
    ns = {"np": np}
    exec(textwrap.dedent(source).strip(), ns)
    return ns


@pytest.mark.parametrize("name", sorted(BUGS))
def test_bug_class_is_wrong_at_its_line(name, tmp_path):
    source, var, expected, kind = BUGS[name]
    got = _namespace(source)[var]
    if expected is not None:
        if np.array_equal(got, np.array(expected, dtype=got.dtype)):
            pytest.skip(f"NumPy {np.__version__} computes {name} right")
    script, trace, last = _run(tmp_path, source)
    wrong = [f for f in trace.findings() if f.severity == "wrong"]
    assert [(f.kind, f.lines) for f in wrong] == [(kind, [f"{script}:{last}"])], \
        trace.findings()
    f = wrong[0]
    assert f.differs >= 1 and f.count >= 1 and f.hint and f.occurrences == 1
    if kind == "kernel":
        assert f.numpy == np.__version__
    if expected is not None and kind != "duplicate-index" and f.example[0] is not None:
        # the example's index is into the written operand, as the finding names it
        index, value, should = f.example
        ns = _namespace(source)
        assert np.asarray(eval(f.names[0], ns))[index].item() == value
        ns[var] = np.array(expected, dtype=got.dtype)
        assert np.asarray(eval(f.names[0], ns))[index].item() == should


@pytest.mark.parametrize("name", sorted(LAYOUT_BUGS))
def test_layout_bug_class_is_wrong_at_its_line(name, tmp_path):
    n, source, last_line = LAYOUT_BUGS[name]
    setup = BUFFER.format(n=n) + "\n" + textwrap.dedent(source).strip()
    ns = _namespace(setup)   # ran: buf holds NumPy's result
    before = _namespace(setup.rsplit("\n", 1)[0])
    copies = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in before.items()}
    exec(last_line, copies)          # copy semantics: each operand its own memory
    d = before["d"]
    expected = before["buf"].copy()
    off = d.__array_interface__["data"][0] - before["buf"].__array_interface__["data"][0]
    np.ndarray(d.shape, d.dtype, buffer=expected, offset=off, strides=d.strides)[...] = \
        copies["d"]
    if np.array_equal(ns["buf"], expected):
        pytest.skip(f"NumPy {np.__version__} computes {name} right")
    script, trace, last = _run(tmp_path, setup)
    wrong = [f for f in trace.findings() if f.severity == "wrong"]
    assert [f.lines for f in wrong] == [[f"{script}:{last}"]], trace.findings()


def test_row_swap_through_views_is_a_stale_view(tmp_path):
    script, trace, last = _run(tmp_path, """
        g = np.arange(9).reshape(3, 3)
        g[0], g[1] = g[1], g[0]""")
    found = trace.findings()
    assert [(f.severity, f.lines, f.names) for f in found] == \
        [("stale-view", [f"{script}:{last}"], ["g[0]", "g[0]"])]


def test_swap_through_a_temporary_view_is_a_stale_view(tmp_path):
    script, trace, last = _run(tmp_path, """
        g = np.arange(9).reshape(3, 3)
        row = g[0]
        g[0] = g[1]
        g[1] = row""")
    found = trace.findings()
    # the read through the stale view first, then the write (both tracers' order)
    assert [(f.severity, f.lines) for f in found] == \
        [("stale-view", [f"{script}:{last}", f"{script}:{last - 1}"])]


def test_overlapping_outputs_are_a_hazard(tmp_path):
    script, trace, last = _run(tmp_path, """
        a = np.arange(1, 9)
        np.divmod(a[2:], 3, out=(a[:6], a[1:7]))""")
    assert [(f.severity, f.kind) for f in trace.findings()] == [("hazard", "in-op-overlap")]


def test_augmented_repeated_index_is_a_hazard(tmp_path):
    script, trace, last = _run(tmp_path, """
        a = np.zeros(4)
        a[[0, 0, 1]] += 1""")
    found = trace.findings()
    assert [(f.severity, f.kind, f.lines) for f in found] == \
        [("hazard", "duplicate-index", [f"{script}:{last}"])]
    assert "np.add.at" in found[0].hint
