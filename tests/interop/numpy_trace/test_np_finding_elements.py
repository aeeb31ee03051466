"""A NumPy finding's elements (what the report's grid marks, ``Finding.elements()``) against
a brute-force oracle: every byte address of the arrays, worked out from NumPy's own
``__array_interface__`` and strides, intersected."""
import textwrap

import numpy as np
import pytest

from aliasflow.interop.numpy_trace.cli import run_traced


def byte_sets(x: np.ndarray):
    """Per element of ``x`` (C order), the set of byte addresses it occupies."""
    base = x.__array_interface__["data"][0]
    out = []
    for index in np.ndindex(*x.shape):
        start = base + sum(i * s for i, s in zip(index, x.strides))
        out.append(set(range(start, start + x.itemsize)))
    return out


def storage_elements(written: np.ndarray, read: np.ndarray, storage: np.ndarray) -> list[int]:
    """Elements of ``written`` that share a byte with ``read``, as ``written``-dtype element
    numbers from the start of ``storage`` (the base array)."""
    read_bytes = set().union(*byte_sets(read))
    start = storage.__array_interface__["data"][0]
    base = written.__array_interface__["data"][0]
    hits = set()
    for index, element in zip(np.ndindex(*written.shape), byte_sets(written)):
        if element & read_bytes:
            address = base + sum(i * s for i, s in zip(index, written.strides))
            hits.add((address - start) // written.itemsize)
    return sorted(hits)


# program, then (written view, read view, storage) as expressions of its names
CASES = {
    "row-from-column": ("""
        a = np.arange(16).reshape(4, 4)
        a[1] = a[:, 3]""", ("a[1]", "a[:, 3]", "a")),
    "reinterpreted": ("""
        a = np.arange(12, dtype=np.int64)
        h = a.view(np.int32)
        a[1:4] = h[2:5]""", ("a[1:4]", "h[2:5]", "a")),
    "set-real": ("""
        z = np.arange(8, dtype=np.complex64)
        f = z.view(np.float32)
        z.real = f[1:9]""", ("z.real", "f[1:9]", "f")),
    "copyto-1d": ("""
        a = np.arange(36).reshape(6, 6)
        np.copyto(a[2], a[:, 5])""",
                  ("a[2]", "a[:, 5]", "a")),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_finding_elements_are_the_shared_elements(name, tmp_path):
    source, (written, read, storage) = CASES[name]
    body = textwrap.dedent(source).strip()
    script = tmp_path / "prog.py"
    script.write_text("import numpy as np\n" + body + "\n")
    code, trace, _ = run_traced(script=str(script))
    assert code == 0
    found = [f for f in trace.findings() if f.kind == "in-op-overlap"]
    assert len(found) == 1, trace.findings()
    ns = {"np": np}
    exec(body.rsplit("\n", 1)[0], ns)    # the arrays as they are before the last line
    want = storage_elements(eval(written, ns), eval(read, ns), eval(storage, ns))
    assert found[0].elements() == want
    assert found[0].count == len(want)


def test_repeated_indices_and_stale_views_mark_their_elements(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("import numpy as np\nh = np.zeros(7)\nh[[5, 1, 1, 3, 5]] += 1\n"
                      "r = np.arange(6.).reshape(3, 2)\nr[0], r[1] = r[1], r[0]\n")
    code, trace, _ = run_traced(script=str(script))
    dup, stale = trace.findings()
    assert (dup.kind, dup.elements(), dup.count) == ("duplicate-index", [1, 5], 2)
    assert (stale.severity, stale.elements(), stale.names) == ("stale-view", [0, 1],
                                                               ["r[0]", "r[0]"])
