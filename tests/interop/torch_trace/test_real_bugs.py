"""Silent wrong results reported on PyTorch's issue tracker, each flagged at its line.

Every program is written to a file and run (unmodified) under ``af.trace()``. Where torch
2.13 still computes a wrong value the finding is ``wrong``, and the test checks independently
(the same op on ``clone()`` s) that the value really is wrong; where torch now refuses the
program it is a ``hazard`` on the refused op.
"""
import runpy
import textwrap

import pytest

torch = pytest.importorskip("torch")

import aliasflow as af  # noqa: E402

# (issue, program, [(severity, kind, line, names of the tensors involved)]); lines count from
# 1 at the program's first line
CASES = [
    ("pytorch#114350", """
        import torch
        torch.autograd.set_grad_enabled(False)
        w = torch.tensor([[1., 1.]])
        g = torch.tensor([[1., 0.], [0., 1.]])
        torch.matmul(w, g, out=w)
        """, [("wrong", "in-op-overlap", 5, ["w"])]),
    ("pytorch#48900", """
        import torch
        t = torch.ones(5, 5)
        weight = torch.eye(5)
        bias = torch.zeros(5, 5)
        out = torch.addmm(bias, t, weight, out=t)
        """, [("wrong", "in-op-overlap", 5, ["t"])]),
    ("pytorch#114087", """
        import torch
        x = torch.randn(32, 32)
        out = torch.mm(x, x, out=x)
        """, [("wrong", "in-op-overlap", 3, ["x"])]),
    ("pytorch#13892", """
        import torch
        torch.random.manual_seed(1)
        b = torch.randn([4, 4])
        torch.mm(b, b.t(), out=b)
        """, [("wrong", "in-op-overlap", 4, ["b", "b.t()"])]),
    ("pytorch#87551", """
        import torch
        input_1 = torch.randn(2, 1, 5)
        y = torch.bmm(input_1, input_1.transpose(-1, -2), out=input_1)
        """, [("wrong", "in-op-overlap", 3, ["input_1", "input_1.transpose(-1, -2)"])]),
    ("pytorch#87551 (linalg.cross)", """
        import torch
        a = torch.tensor([1, 2, 3])
        b = torch.tensor([4, 5, 6])
        try:
            torch.linalg.cross(a, b, out=a)
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 5, ["a"])]),
    ("pytorch#144861", """
        import torch
        arr = torch.arange(9).reshape(3, 3)
        arr[:, 1:] = arr[:, :-1]
        """, [("wrong", "in-op-overlap", 3, ["arr[:, 1:]", "arr[:, :-1]"])]),
    ("pytorch#115521", """
        import torch
        a = torch.arange(24.).reshape(4, 3, 2)
        try:
            a -= a[:1]
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 4, ["a", "a[:1]"])]),
    ("pytorch#25573 / #906", """
        import torch
        a = torch.arange(10)
        try:
            a[1:] = a[:9]
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 4, ["a[1:]", "a[:9]"])]),
    ("pytorch#39639", """
        import torch
        tensor_cpu = torch.LongTensor([[0], [1]]).expand(2, 4)
        mask_cpu = torch.BoolTensor([[False, True, False, False], [False, False, False, False]])
        tensor_cpu.masked_fill_(mask_cpu, 3)
        """, [("wrong", "self-overlap-write", 4, ["tensor_cpu"])]),
    ("pytorch#4664 / #17935", """
        import torch
        a = torch.ones(1, 1)
        b = a.expand(4, 5)
        try:
            b += 1
        except RuntimeError:
            pass
        """, [("hazard", "self-overlap-write", 5, ["b"])]),
    ("pytorch#23063", """
        import torch
        a = torch.empty(1)
        b = a.expand(10)
        try:
            torch.arange(10, out=b)
        except RuntimeError:
            pass
        """, [("hazard", "self-overlap-write", 5, ["b"])]),
    ("pytorch#33798", """
        import torch
        a = torch.tensor([1., 2., 3., 4.])
        b = torch.tensor([0, 1, 0, 3])
        c1 = torch.zeros(5)
        c1[b] += a
        """, [("wrong", "duplicate-index", 5, ["c1"])]),
    ("pytorch#55516", """
        import torch
        a = torch.zeros(10)
        r = a.index_put((torch.tensor([0, 0]),), torch.tensor([0., 1.]), accumulate=False)
        """, [("wrong", "duplicate-index", 3, ["r"])]),
    ("pytorch#46743", """
        import torch
        x = torch.zeros(4, 2)
        x.index_copy_(0, torch.tensor([1, 1]), torch.tensor([[1., 2.], [3., 4.]]))
        """, [("wrong", "duplicate-index", 3, ["x"])]),
    ("pytorch#152755", """
        import torch
        x = torch.zeros(6)
        x.put_(torch.tensor([2, 5, 2]), torch.tensor([1., 2., 3.]))
        """, [("wrong", "duplicate-index", 3, ["x"])]),
    ("pytorch#5260 (cat)", """
        import torch
        x = torch.randn(3, 3)
        y = torch.randn(3, 3)
        try:
            torch.cat([x, y], out=x)
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 5, ["x"])]),
    ("aminmax out=(t, t)", """
        import torch
        x = torch.tensor([[3., 1.], [5., 9.], [0., 4.]])
        t = torch.zeros(2)
        torch.aminmax(x, dim=0, out=(t, t))
        """, [("wrong", "in-op-overlap", 4, ["t"])]),
    ("scatter with repeated indices", """
        import torch
        x = torch.zeros(5)
        y = x.scatter(0, torch.tensor([3, 1, 3]), torch.tensor([1., 2., 4.]))
        """, [("wrong", "duplicate-index", 3, ["y"])]),
    ("pytorch#25983", """
        import torch
        x = torch.randn(5, 3, 2)
        first = x[:, :1, :1]
        x[..., :1] = x[..., :1] - first
        m = first.mean()
        """, [("stale-view", "RAW", 5, ["first"])]),
]


def run_case(tmp_path, code):
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(code).lstrip("\n"))
    grad = torch.is_grad_enabled()
    try:
        with af.trace() as tr:
            runpy.run_path(str(path), run_name="__main__")
    finally:
        torch.set_grad_enabled(grad)   # a program may switch it off for the whole process
    return tr, path


@pytest.mark.parametrize("issue,code,expected", CASES, ids=[c[0] for c in CASES])
def test_real_silent_wrong_programs_are_flagged_at_their_line(tmp_path, issue, code, expected):
    tr, path = run_case(tmp_path, code)
    got = [(f.severity, f.kind, int(f.lines[0].rsplit(":", 1)[1]), f.names[:len(names)])
           for f, (_, _, _, names) in zip(tr.findings(), expected)]
    assert len(tr.findings()) == len(expected), [f.describe() for f in tr.findings()]
    assert got == expected
    for f in tr.findings():
        assert f.lines[0].startswith(str(path)) and f.hint
        if f.severity == "wrong":
            assert f.differs > 0 and f.example is not None


def test_the_wrong_ones_really_are_wrong():
    """The values the tracer calls wrong differ from the same op on clones (computed here)."""
    w = torch.tensor([[1., 1.]])
    g = torch.eye(2)
    expected = torch.matmul(w.clone(), g)
    with torch.no_grad():
        torch.matmul(w, g, out=w)
    assert not torch.equal(w, expected)
    t = torch.ones(5, 5)
    expected = torch.addmm(torch.zeros(5, 5), t.clone(), torch.eye(5))
    torch.addmm(torch.zeros(5, 5), t, torch.eye(5), out=t)
    assert not torch.equal(t, expected)
    arr = torch.arange(9).reshape(3, 3)
    expected = arr[:, :-1].clone()
    arr[:, 1:] = arr[:, :-1]
    assert not torch.equal(arr[:, 1:], expected)
