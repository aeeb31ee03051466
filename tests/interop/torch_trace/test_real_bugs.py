"""Silent wrong results reported on PyTorch's issue tracker, each flagged at its line.

Every program is written to a file and run (unmodified) under ``af.trace()``. Where torch
2.13 still computes a wrong value the finding is ``wrong``, and the test checks independently
(the same op on ``clone()`` s) that the value really is wrong; where torch now refuses the
program it is a ``hazard`` on the refused op.
"""
import warnings

import pytest

torch = pytest.importorskip("torch")

import aliasflow as af  # noqa: E402
from bug_programs import run_case  # noqa: E402

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
    # ---- more reports from PyTorch's tracker -------------------------------------------
    ("pytorch#20854", """
        import torch
        A = torch.Tensor([[1, 2, 3], [4, 5, 6]])
        A -= A[:, 0].unsqueeze(1)
        """, [("wrong", "in-op-overlap", 3, ["A", "A[:, 0].unsqueeze(1)"])]),
    ("pytorch#76891", """
        import torch
        a = torch.Tensor([[1, 2, 3], [4, 5, 6]])
        a -= a[:, 0, None]
        """, [("wrong", "in-op-overlap", 3, ["a", "a[:, 0, None]"])]),
    ("pytorch#85852", """
        import torch
        torch.manual_seed(420)
        A = torch.rand(50, 50)
        C = torch.clone(A)
        torch.mm(C, C, out=C)
        """, [("wrong", "in-op-overlap", 5, ["C"])]),
    ("pytorch#1930", """
        import torch
        x = torch.randperm(16).resize_(4, 4)
        torch.sum(x, 0, out=x)
        """, [("wrong", "in-op-overlap", 3, ["x"])]),
    ("pytorch#5272 (sum into a row of its input)", """
        import torch
        x = torch.randn(4, 4)
        torch.sum(x, 0, out=x[0])
        """, [("wrong", "in-op-overlap", 3, ["x[0]", "x"])]),
    ("pytorch#98143 (unfold then sin_)", """
        import torch
        t1 = torch.rand(1, 5)
        t2 = t1.unfold(1, 3, 2)
        t2.sin_()
        """, [("wrong", "self-overlap-write", 4, ["t2"])]),
    ("pytorch#165409", """
        import torch
        x = torch.rand(1, 5) - 0.5
        t1 = torch.add(x, x)
        t2 = t1.unfold(1, 3, 2)
        t3 = t2.abs_()
        """, [("hazard", "self-overlap-write", 5, ["t2"])]),
    ("pytorch#12230", """
        import torch
        mask = torch.tensor([[[1, 0]], [[0, 1]]], dtype=torch.bool)
        x = torch.randn(2, 2)
        x, mask = torch.broadcast_tensors(x, mask)
        x.masked_fill_(mask, 0)
        """, [("wrong", "self-overlap-write", 5, ["x"])]),
    ("pytorch#7731", """
        import torch
        x = torch.Tensor([[1], [2], [3]])
        t1 = x.expand(3, 3)
        t2 = x.t().expand(3, 3)
        try:
            t1 *= t2
        except RuntimeError:
            pass
        """, [("hazard", "self-overlap-write", 6, ["t1", "t2"])]),
    ("pytorch#4718", """
        import torch
        a_ = torch.randn(2, 1, 2)
        b = torch.randn(4, 2)
        a = a_.expand(2, 4, 2)
        try:
            a.mul_(b)
        except RuntimeError:
            pass
        """, [("hazard", "self-overlap-write", 6, ["a"])]),
    ("pytorch#9138", """
        import torch
        a = torch.tensor([[1, 2]]).expand(3, -1)
        b = torch.tensor([[10], [20], [30]])
        try:
            a.sub_(b)
        except RuntimeError:
            pass
        """, [("hazard", "self-overlap-write", 5, ["a"])]),
    ("pytorch#17935", """
        import torch
        import math
        x = torch.tensor(math.pi / 4)
        y = x.expand(3)
        try:
            y.cos_()
        except RuntimeError:
            pass
        """, [("hazard", "self-overlap-write", 6, ["y"])]),
    ("pytorch#48401", """
        import torch
        a = torch.arange(4).reshape(2, 2)
        try:
            a += a.t()
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 4, ["a", "a.t()"])]),
    ("pytorch#950", """
        import torch
        test = torch.Tensor([1, 2, 3, 4, 5])
        try:
            test[1:] -= test[:-1]
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 4, ["test[1:]", "test[:-1]"])]),
    ("pytorch#24843", """
        import torch
        a = torch.tensor([10, 11, 12, 13, 14, 13, 12, 11], dtype=torch.float)
        try:
            a[1:] /= a[:len(a) - 1]
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 4, ["a[1:]", "a[:len(a) - 1]"])]),
    ("pytorch#48281", """
        import torch
        base = torch.randn(2, 4)
        x = base[..., ::2]
        m = torch.zeros(2, 2)
        torch.matmul(x, m, out=x)
        """, [("hazard", "in-op-overlap", 5, ["x"])]),
    ("pytorch#91894", """
        import torch
        torch.manual_seed(0)
        num_envs, num_steps, frame_dim = 4, 10, 6
        src = torch.randn(num_envs, num_steps, frame_dim)
        buffer = src.clone()
        buffer[:, 1:num_steps] = buffer[:, 0:(num_steps - 1)]
        """, [("wrong", "in-op-overlap", 6, ["buffer[:, 1:num_steps]",
                                           "buffer[:, 0:(num_steps - 1)]"])]),
    ("pytorch#126097", """
        import torch
        a = torch.arange(16).view(4, 4)
        a[:3, :3] = a[:3, :3].T
        """, [("wrong", "in-op-overlap", 3, ["a[:3, :3]", "a[:3, :3].T"])]),
    ("pytorch#40967", """
        import torch
        w = torch.nn.Parameter(torch.ones(3))
        opt = torch.optim.SGD([w, w], lr=0.1, foreach=True)
        w.sum().backward()
        opt.step()
        """, [("wrong", "in-op-overlap", 5, ["w"])]),
    # ---- out= and in-place aliasing torch 2.13 does not check (found here) --------------
    ("from_numpy of its own memory, shifted", """
        import torch
        a = torch.arange(10.)
        n = a.numpy()
        b = torch.from_numpy(n[:-1])
        a[1:] += b
        """, [("wrong", "in-op-overlap", 5, ["a[1:]", "b"])]),
    ("mv out= its vector", """
        import torch
        M = torch.randn(4, 4)
        v = torch.randn(4)
        torch.mv(M, v, out=v)
        """, [("wrong", "in-op-overlap", 4, ["v"])]),
    ("addmv out= its vector", """
        import torch
        M = torch.randn(4, 4)
        v = torch.randn(4)
        b = torch.randn(4)
        torch.addmv(b, M, v, out=v)
        """, [("wrong", "in-op-overlap", 5, ["v"])]),
    ("baddbmm out= batch1", """
        import torch
        b = torch.randn(2, 3, 3)
        b1 = torch.randn(2, 3, 3)
        b2 = torch.randn(2, 3, 3)
        torch.baddbmm(b, b1, b2, out=b1)
        """, [("wrong", "in-op-overlap", 5, ["b1"])]),
    ("addmm_ with self as mat1", """
        import torch
        x = torch.randn(3, 3)
        w = torch.randn(3, 3)
        x.addmm_(x, w)
        """, [("wrong", "in-op-overlap", 4, ["x"])]),
    ("tril out= the input's transpose", """
        import torch
        x = torch.randn(4, 4)
        torch.tril(x, out=x.t())
        """, [("wrong", "in-op-overlap", 3, ["x.t()", "x"])]),
    ("linalg.inv out= the input's transpose", """
        import torch
        A = torch.randn(3, 3) + 3 * torch.eye(3)
        torch.linalg.inv(A, out=A.t())
        """, [("wrong", "in-op-overlap", 3, ["A.t()", "A"])]),
    ("linalg.cholesky out= the input's transpose", """
        import torch
        A = torch.randn(3, 3)
        A = A @ A.t() + torch.eye(3)
        torch.linalg.cholesky(A, out=A.t())
        """, [("wrong", "in-op-overlap", 4, ["A.t()", "A"])]),
    ("linalg.matrix_power out= its input", """
        import torch
        A = torch.randn(3, 3)
        torch.linalg.matrix_power(A, 3, out=A)
        """, [("wrong", "in-op-overlap", 3, ["A"])]),
    ("histc out= part of its input", """
        import torch
        x = torch.tensor([0.5, 1.5, 1.7, 2.5, 3.5, 3.6, 3.7, 0.1])
        torch.histc(x, bins=4, min=0, max=4, out=x[:4])
        """, [("wrong", "in-op-overlap", 3, ["x[:4]", "x"])]),
    ("searchsorted out= its sorted sequence", """
        import torch
        x = torch.arange(8)
        torch.searchsorted(x, x.flip(0), out=x)
        """, [("wrong", "in-op-overlap", 3, ["x"])]),
    ("masked_scatter_ from itself", """
        import torch
        x = torch.arange(6.)
        mask = torch.tensor([False, True, True, True, True, True])
        x.masked_scatter_(mask, x)
        """, [("wrong", "in-op-overlap", 4, ["x"])]),
    ("cummax out= its input shifted", """
        import torch
        x = torch.tensor([3., 1., 4., 1., 5., 9., 2., 6.])
        i = torch.empty(8, dtype=torch.long)
        torch.cummax(x[:-1], 0, out=(x[1:], i[1:]))
        """, [("wrong", "in-op-overlap", 4, ["x[1:]", "x[:-1]"])]),
    ("index_copy_ from a column slice of self", """
        import torch
        x = torch.arange(12.).reshape(3, 4)
        x.index_copy_(1, torch.tensor([1, 2, 3]), x[:, :3])
        """, [("wrong", "in-op-overlap", 3, ["x", "x[:, :3]"])]),
    ("scatter_ from a column slice of self", """
        import torch
        x = torch.arange(12.).reshape(3, 4)
        idx = torch.tensor([[1, 2, 3]] * 3)
        x.scatter_(1, idx, x[:, :3])
        """, [("wrong", "in-op-overlap", 4, ["x", "x[:, :3]"])]),
    ("kron out= holding its input", """
        import torch
        out = torch.zeros(4, 4)
        b = out[:2, :2]
        b.copy_(torch.tensor([[1., 2.], [3., 4.]]))
        torch.kron(torch.tensor([[2., 3.], [4., 5.]]), b, out=out)
        """, [("wrong", "in-op-overlap", 5, ["out", "b"])]),
    ("as_strided windows mul_", """
        import torch
        x = torch.arange(1., 7.)
        x.as_strided((3, 2), (1, 1)).mul_(2)
        """, [("wrong", "self-overlap-write", 3, ["x.as_strided((3, 2), (1, 1))"])]),
    # ---- overlaps PyTorch's own tests expect it to refuse (test/test_torch.py) ----------
    ("torch test_shift_mem_overlap", """
        import torch
        x = torch.randint(0, 8, (3,))
        try:
            x[:-1] <<= x[1:]
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 4, ["x[:-1]", "x[1:]"])]),
    ("torch test_bernoulli_mem_overlap", """
        import torch
        x = torch.rand((1,)).expand((6,))
        p = torch.rand(6)
        try:
            x.bernoulli_(p=p)
        except RuntimeError:
            pass
        """, [("hazard", "self-overlap-write", 5, ["x"])]),
    ("torch test_index_put_mem_overlap", """
        import torch
        ind = torch.tensor([2, 1, 0])
        try:
            ind.index_put_((ind,), ind)
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 4, ["ind"])]),
    ("torch test_masked_fill_mem_overlap", """
        import torch
        mask = torch.tensor([True, False, True, True, False, False])
        try:
            mask[1:].masked_fill_(mask[:-1], False)
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 4, ["mask[1:]", "mask[:-1]"])]),
    ("torch test_scatter_mem_overlap", """
        import torch
        ind = torch.tensor([2, 1, 0])
        try:
            ind.scatter_(0, ind, ind.clone())
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 4, ["ind"])]),
    ("torch test_masked_select_mem_overlap", """
        import torch
        mask = torch.tensor([True, False, True, True, False, False])
        try:
            torch.masked_select(mask.clone(), mask, out=mask)
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 4, ["mask"])]),
    ("torch test_index_select_mem_overlap", """
        import torch
        x = torch.rand((1, 6)).expand((2, 6))
        y = torch.rand((3, 6))
        ind = torch.tensor([0, 1])
        try:
            torch.index_select(y, 1, ind, out=x)
        except RuntimeError:
            pass
        """, [("hazard", "self-overlap-write", 6, ["x"])]),
    ("torch test_gather_mem_overlap (out= resized onto the index, then refused)", """
        import torch
        ind = torch.tensor([2, 1, 0])
        try:
            torch.gather(ind.clone(), 0, ind[1:], out=ind[:1])
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 4, ["ind[:1]", "ind[1:]"])]),
    ("torch test_ternary_op_mem_overlap (addcmul_)", """
        import torch
        x = torch.rand(6)
        try:
            x[1:].addcmul_(x[:-1], x[:-1])
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 4, ["x[1:]", "x[:-1]"])]),
    ("torch test_index_fill_mem_overlap", """
        import torch
        x = torch.rand((1,)).expand((6,))
        ind = torch.tensor([2, 1, 0])
        x.index_fill_(0, ind, 1.0)
        """, [("wrong", "self-overlap-write", 4, ["x"])]),
]


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


# The ``wrong`` cases added above, computed here without the tracer: ``(got, expected)`` =
# the op on the program's own aliased tensors, and on copies (written into fresh memory).
ORACLES = {}


def oracle(issue):
    def register(f):
        ORACLES[issue] = f
        return f
    return register


@oracle("pytorch#20854")
def _():
    A = torch.Tensor([[1, 2, 3], [4, 5, 6]])
    return A.sub_(A[:, 0].unsqueeze(1)), torch.tensor([[0., 1, 2], [0, 1, 2]])


@oracle("pytorch#1930")
def _():
    x = torch.randperm(16).resize_(4, 4)
    expected = torch.sum(x, 0)
    return torch.sum(x, 0, out=x), expected


@oracle("pytorch#5272 (sum into a row of its input)")
def _():
    x = torch.randn(4, 4)
    expected = x.sum(0)
    return torch.sum(x, 0, out=x[0]), expected


@oracle("pytorch#98143 (unfold then sin_)")
def _():
    t2 = torch.rand(1, 5).unfold(1, 3, 2)
    expected = t2.clone().sin_()
    return t2.sin_(), expected


@oracle("pytorch#12230")
def _():
    x, mask = torch.broadcast_tensors(torch.randn(2, 2),
                                      torch.tensor([[[1, 0]], [[0, 1]]], dtype=torch.bool))
    expected = x.clone().masked_fill_(mask, 0)
    return x.masked_fill_(mask, 0), expected


@oracle("pytorch#91894")
def _():
    buffer = torch.randn(4, 10, 6)
    expected = buffer[:, 0:9].clone()
    buffer[:, 1:10] = buffer[:, 0:9]
    return buffer[:, 1:10], expected


@oracle("pytorch#126097")
def _():
    a = torch.arange(16).view(4, 4)
    expected = a[:3, :3].T.clone()
    a[:3, :3] = a[:3, :3].T
    return a[:3, :3], expected


@oracle("from_numpy of its own memory, shifted")
def _():
    a = torch.arange(10.)
    b = torch.from_numpy(a.numpy()[:-1])
    expected = a[1:] + b
    a[1:] += b
    return a[1:], expected


@oracle("pytorch#40967")
def _():
    w = torch.nn.Parameter(torch.ones(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # "duplicate parameters": a warning, not an error
        opt = torch.optim.SGD([w, w], lr=0.1, foreach=True)
    w.sum().backward()
    opt.step()
    return w.detach(), torch.full((3,), 0.9)   # each list entry reads w = 1 before the writes


@oracle("mv out= its vector")
def _():
    M, v = torch.randn(4, 4), torch.randn(4)
    expected = M @ v
    return torch.mv(M, v, out=v), expected


@oracle("addmv out= its vector")
def _():
    M, v, b = torch.randn(4, 4), torch.randn(4), torch.randn(4)
    expected = torch.addmv(b, M, v)
    return torch.addmv(b, M, v, out=v), expected


@oracle("baddbmm out= batch1")
def _():
    b, b1, b2 = torch.randn(2, 3, 3), torch.randn(2, 3, 3), torch.randn(2, 3, 3)
    expected = torch.baddbmm(b, b1, b2)
    return torch.baddbmm(b, b1, b2, out=b1), expected


@oracle("addmm_ with self as mat1")
def _():
    x, w = torch.randn(3, 3), torch.randn(3, 3)
    expected = torch.addmm(x, x, w)
    return x.addmm_(x, w), expected


@oracle("tril out= the input's transpose")
def _():
    x = torch.randn(4, 4)
    expected = torch.tril(x)
    return torch.tril(x, out=x.t()), expected


@oracle("linalg.inv out= the input's transpose")
def _():
    A = torch.randn(3, 3) + 3 * torch.eye(3)
    expected = torch.linalg.inv(A)
    return torch.linalg.inv(A, out=A.t()), expected


@oracle("linalg.matrix_power out= its input")
def _():
    A = torch.randn(3, 3)
    expected = torch.linalg.matrix_power(A, 3)
    return torch.linalg.matrix_power(A, 3, out=A), expected


@oracle("histc out= part of its input")
def _():
    x = torch.tensor([0.5, 1.5, 1.7, 2.5, 3.5, 3.6, 3.7, 0.1])
    expected = torch.histc(x, bins=4, min=0, max=4)
    return torch.histc(x, bins=4, min=0, max=4, out=x[:4]), expected


@oracle("searchsorted out= its sorted sequence")
def _():
    x = torch.arange(8)
    expected = torch.searchsorted(x, x.flip(0))
    return torch.searchsorted(x, x.flip(0), out=x), expected


@oracle("masked_scatter_ from itself")
def _():
    x, mask = torch.arange(6.), torch.tensor([False, True, True, True, True, True])
    expected = x.clone().masked_scatter_(mask, x.clone())
    return x.masked_scatter_(mask, x), expected


@oracle("index_copy_ from a column slice of self")
def _():
    x, index = torch.arange(12.).reshape(3, 4), torch.tensor([1, 2, 3])
    expected = x.clone().index_copy_(1, index, x[:, :3].clone())
    return x.index_copy_(1, index, x[:, :3]), expected


@oracle("as_strided windows mul_")
def _():
    windows = torch.arange(1., 7.).as_strided((3, 2), (1, 1))
    expected = windows.clone().mul_(2)
    return windows.mul_(2), expected


@pytest.mark.parametrize("issue", sorted(ORACLES))
def test_the_added_wrong_ones_really_are_wrong(issue):
    """Each op's value on torch 2.13 differs from the same op on copies, and the programs
    test above expects ``wrong`` for it."""
    assert any(c[0] == issue and c[2][0][0] == "wrong" for c in CASES)
    torch.manual_seed(0)
    got, expected = ORACLES[issue]()
    assert got.shape == expected.shape and not torch.equal(got, expected), (got, expected)


def test_two_written_arguments_sharing_memory_get_their_own_hint(tmp_path):
    """A tensor written through two arguments (a parameter listed twice, ``out=(t, t)``) is
    not fixed by cloning an input: the hint says so; an input read while written keeps the
    clone() hint."""
    by_issue = {c[0]: c[1] for c in CASES}
    for issue in ("pytorch#40967", "aminmax out=(t, t)"):
        (f,) = run_case(tmp_path, by_issue[issue])[0].findings()
        assert "passed twice" in f.hint and "clone()" not in f.hint, (issue, f.hint)
    (f,) = run_case(tmp_path, by_issue["pytorch#114087"])[0].findings()
    assert "clone()" in f.hint and "passed twice" not in f.hint
