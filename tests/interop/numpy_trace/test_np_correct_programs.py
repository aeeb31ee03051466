"""Correct NumPy programs full of overlap that NumPy handles: the tracer reports nothing
(by default), sees every write, and leaves the results as they are."""
import textwrap

import pytest

from aliasflow.interop.numpy_trace.cli import run_traced

PROGRAMS = {
    "one-dimensional shifts": """
        a = np.arange(10.)
        a[1:] = a[:-1]          # equal strides: NumPy copies like memmove
        a[:-1] = a[1:]
        a[::-1] = a             # opposite strides: NumPy copies first
        a[2:] = a[:-2]
        np.copyto(a[1:], a[:-1])
        for _ in range(3):
            a[1:] = a[:-1]
        """,
    "ufuncs over overlapping views": """
        a = np.arange(10.)
        a[1:] += a[:-1]         # ufuncs copy overlapping inputs
        a[2:] *= a[:-2]
        np.add(a[:-1], a[1:], out=a[1:])
        np.negative(a, out=a)
        np.multiply(a[::-1], 2, out=a)
        a -= a[::-1]
        v = a.view(np.int64)
        v[1:] ^= v[:-1]
        b = np.arange(16.).reshape(4, 4)
        b += b.T
        np.multiply(b, b.T, out=b)
        np.maximum(b[:, ::-1], b, out=b)
        b @= b
        """,
    "multi-dimensional assignment": """
        b = np.arange(16.).reshape(4, 4)
        b[...] = b.T            # more than one dimension: NumPy copies first
        b[1:, :] = b[:-1, :]
        b[:, 1:] = b[:, :-1]
        b[::-1] = b
        b[1:3, 1:3] = b[:2, :2].T
        np.copyto(b, b[::-1, ::-1])
        """,
    "fancy indices": """
        c = np.arange(12).reshape(3, 4)
        c[[0, 1]] = c[[1, 0]]   # gathers are copies
        c[:, [0, 2]] = c[:, [2, 0]]
        c[c > 5] = 0
        x = np.arange(8)
        x[x % 2 == 0] = x[1::2] * 10
        x[[0, 1, 2]] = x[1:4]
        x[[3, 1]] += 1
        np.add.at(x, [0, 0, 1], 1)
        """,
    "out= functions": """
        a = np.arange(8.)
        np.cumsum(a[:-1], out=a[1:])
        np.take(a, [3, 2, 1, 0], out=a[:4])
        m = np.arange(9.).reshape(3, 3)
        np.matmul(m, m, out=m)
        np.dot(m, np.eye(3), out=m)
        np.einsum('ij->ji', m, out=m)
        np.sum(m, axis=0, out=m[0])
        np.clip(a, 1, 5, out=a)
        np.round(a[::-1], out=a)
        np.concatenate([a[:2], a[2:4]], out=a[:4])
        """,
    "copies and swaps done right": """
        b = np.arange(9).reshape(3, 3)
        t = b[0].copy()
        b[0] = b[1]
        b[1] = t
        b[[0, 1]] = b[[1, 0]]
        b[0], b[1] = b[1].copy(), b[0].copy()
        u = np.zeros(10)
        u[1:-1] = 0.5 * (u[:-2] + u[2:])
        """,
    "named views meant as views": """
        a = np.arange(10.)
        x = a[1:]
        y = a[:-1]
        x += y
        x += y
        row = a[:5]
        a[:5] = 7
        total = np.zeros(5)
        np.add(total, row, out=total)
        w = a.reshape(2, 5)
        w[0] = w[1]
        np.copyto(total, row)
        u = np.zeros(10)
        u[0] = 1.0
        tmp = np.empty(8)
        prev = u[:-2]
        nxt = u[2:]
        for _ in range(3):          # Jacobi sweeps over live views
            np.add(prev, nxt, out=tmp)
            u[1:-1] = tmp
        """,
}


def _run(tmp_path, source):
    script = tmp_path / "prog.py"
    script.write_text("import numpy as np\n" + textwrap.dedent(source).strip() + "\n"
                      "print(sorted(k for k in dir() if not k.startswith('_')))\n")
    return script, run_traced(script=str(script))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_no_findings_on_correct_programs(name, tmp_path, capsys):
    script, (code, trace, _) = _run(tmp_path, PROGRAMS[name])
    traced_out = capsys.readouterr().out
    assert code == 0
    assert trace.findings() == []
    assert len(trace) >= PROGRAMS[name].count("\n") // 2   # its writes were seen
    # the same namespace as the untraced program
    plain = {}
    exec(compile(script.read_text(), str(script), "exec"), plain)
    assert traced_out == capsys.readouterr().out


def test_results_are_unchanged(tmp_path):
    source = textwrap.dedent(PROGRAMS["ufuncs over overlapping views"]) + \
        "\nprint(a.tolist(), b.tolist())"
    script = tmp_path / "prog.py"
    script.write_text("import numpy as np\n" + textwrap.dedent(source).strip() + "\n")
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run_traced(script=str(script))
    plain = io.StringIO()
    with contextlib.redirect_stdout(plain):
        exec(compile(script.read_text(), str(script), "exec"), {"__name__": "__main__"})
    assert out.getvalue() == plain.getvalue()
