"""More silent wrong results from PyTorch's issue tracker (and a few other projects' trackers
that hit the same torch behaviour), each flagged once at its line; the same program written
without the aliasing gives no finding (reports whose eager result is right:
``test_real_bugs_quiet.py``).

Each program is written to a file and run unmodified under ``af.trace()`` (the programs of
``test_real_bugs.py`` are not repeated here). ``wrong`` cases have an oracle below, computed
without the tracer: the op on the program's own aliased tensors against the same op on copies.
``hazard`` cases are either refused by torch 2.13 (the oracle checks it raises) or computed
right this time by its kernel (the oracle checks the value equals the copy semantics).
"""
import warnings

import pytest

torch = pytest.importorskip("torch")

import aliasflow as af  # noqa: E402
from bug_programs import run_case  # noqa: E402

# (issue, program, [(severity, kind, line, names)], twin: the program without the aliasing)
CASES = [
    ("pytorch#15358", """
        import torch
        a = torch.arange(4).expand(5, 4)
        b = torch.arange(20).view(5, 4)
        try:
            a += b
        except RuntimeError:
            pass
        """, [("hazard", "self-overlap-write", 5, ["a"])], """
        import torch
        a = torch.arange(4).expand(5, 4).clone()
        b = torch.arange(20).view(5, 4)
        a += b
        """),
    ("pytorch#17185", """
        import torch
        a = torch.tensor([1, 2, 3]).view(1, 3)
        b = torch.tensor([4, 5]).view(2, 1)
        a = a.expand(2, 3)
        b = b.expand(2, 3)
        try:
            a *= b
        except RuntimeError:
            pass
        """, [("hazard", "self-overlap-write", 7, ["a"])], """
        import torch
        a = torch.tensor([1, 2, 3]).view(1, 3)
        b = torch.tensor([4, 5]).view(2, 1)
        a = a.expand(2, 3).contiguous()
        b = b.expand(2, 3)
        a *= b
        """),
    ("pytorch#1424", """
        import torch
        x = torch.randn(1).expand(4)
        y = torch.randn(4)
        try:
            x += y
        except RuntimeError:
            pass
        """, [("hazard", "self-overlap-write", 5, ["x"])], """
        import torch
        x = torch.randn(1).expand(4)
        y = torch.randn(4)
        x = x + y
        """),
    ("pytorch#957", """
        import torch
        T = torch.Tensor([2]).expand(1, 3)
        try:
            T.mul_(2)
        except RuntimeError:
            pass
        """, [("hazard", "self-overlap-write", 4, ["T"])], """
        import torch
        T = torch.Tensor([2]).repeat(1, 3)
        T.mul_(2)
        """),
    ("pytorch#22513", """
        import torch
        x = torch.rand(2, 5)
        y2 = torch.zeros(1, 5).expand(3, -1)
        try:
            z2 = y2.scatter_(0, torch.tensor([[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]]), x)
        except RuntimeError:
            pass
        """, [("hazard", "self-overlap-write", 5, ["y2"])], """
        import torch
        x = torch.rand(2, 5)
        y1 = torch.zeros(3, 5)
        z1 = y1.scatter_(0, torch.tensor([[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]]), x)
        """),
    ("pytorch#114747", """
        import torch
        destination = torch.tensor([[4.0, 0.0, 3.0, 1.0, 0.0],
                                    [0.0, 5.0, 8.0, 0.0, 0.0],
                                    [6.0, 0.0, 0.0, 9.0, 0.0]])
        source = torch.tensor([[0.3992, 0.2908, 0.9044, 0.4850, 0.6004],
                               [0.5735, 0.9006, 0.6797, 0.4152, 0.1732]])
        place_at = torch.tensor([[0, 1, 2, 0], [2, 0, 0, 1]])
        out = torch.scatter(destination, 1, place_at, source)
        """, [("wrong", "duplicate-index", 8, ["out"])], """
        import torch
        destination = torch.tensor([[4.0, 0.0, 3.0, 1.0, 0.0],
                                    [0.0, 5.0, 8.0, 0.0, 0.0],
                                    [6.0, 0.0, 0.0, 9.0, 0.0]])
        source = torch.tensor([[0.3992, 0.2908, 0.9044, 0.4850, 0.6004],
                               [0.5735, 0.9006, 0.6797, 0.4152, 0.1732]])
        place_at = torch.tensor([[0, 1, 2, 3], [2, 0, 4, 1]])
        out = torch.scatter(destination, 1, place_at, source)
        """),
    ("pytorch#3176", """
        import torch
        a = torch.ones(5)
        i = torch.ones(5, dtype=torch.long)
        try:
            a.index_add_(0, i, a)
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 5, ["a"])], """
        import torch
        a = torch.ones(5)
        i = torch.ones(5, dtype=torch.long)
        a.index_add_(0, i, a.clone())
        """),
    ("pytorch#30577", """
        import torch
        x = torch.zeros(2)
        y = torch.ones(2)
        try:
            torch.cat([y, x], out=x.view(2))
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 5, ["x.view(2)", "x"])], """
        import torch
        x = torch.zeros(2)
        y = torch.ones(2)
        out = torch.empty(4)
        torch.cat([y, x], out=out)
        """),
    ("pytorch#63837", """
        import torch
        index = torch.tensor([0, 1, 2, 3])
        try:
            output = torch.scatter(index.clone(), 0, index[1:], index.clone()[1:], out=index[:1])
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 4, ["index[:1]", "index[1:]"])], """
        import torch
        index = torch.tensor([0, 1, 2, 3])
        output = torch.scatter(index.clone(), 0, index[1:], index.clone()[1:])
        """),
    ("fvdb-core#427 (cumsum_out into its input)", """
        import torch
        tiles_per_gaussian = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6])
        torch.cumsum(tiles_per_gaussian, 0, out=tiles_per_gaussian)
        """, [("hazard", "in-op-overlap", 3, ["tiles_per_gaussian"])], """
        import torch
        tiles_per_gaussian = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6])
        cum = torch.cumsum(tiles_per_gaussian, 0)
        """),
    ("pytorch#107110", """
        import torch
        dst = torch.full([7, 2], -1).int()
        dst_with_bizarre_stride = torch.as_strided(dst, [7, 2], [1, 2])
        src = torch.tensor([[1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14]]).int()
        src_t = src.t()
        dst_with_bizarre_stride.copy_(src_t)
        """, [("wrong", "self-overlap-write", 6, ["dst_with_bizarre_stride"])], """
        import torch
        dst = torch.full([7, 2], -1).int()
        dst_with_normal_stride = torch.as_strided(dst, [7, 2], [1, 7])
        src = torch.tensor([[1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14]]).int()
        src_t = src.t()
        dst_with_normal_stride.copy_(src_t)
        """),
    ("pytorch#23812", """
        import torch
        a = torch.arange(20)
        try:
            a[1:].sub_(a[:-1])
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 4, ["a[1:]", "a[:-1]"])], """
        import torch
        a = torch.arange(20)
        d = a[1:].sub(a[:-1])
        """),
    ("pytorch#135487", """
        import torch
        a = torch.randn((2, 2))
        b = torch.clone(a)
        a -= a[:, :1]
        b = b - b[:, :1]
        """, [("wrong", "in-op-overlap", 4, ["a", "a[:, :1]"])], """
        import torch
        a = torch.randn((2, 2))
        b = torch.clone(a)
        a -= a[:, :1].clone()
        b = b - b[:, :1]
        """),
    # torch.arange returned floats in 2018; this kernel now happens to compute it right
    ("pytorch#8212", """
        import torch
        c = torch.arange(101.)[None, :].repeat(50, 1)
        c /= c[:, 100:]
        m = c.max()
        """, [("hazard", "in-op-overlap", 3, ["c", "c[:, 100:]"])], """
        import torch
        c = torch.arange(101.)[None, :].repeat(50, 1)
        c = c / c[:, 100:]
        m = c.max()
        """),
    ("pytorch#180377", """
        import torch
        X = torch.randn(2, 2)
        B = torch.zeros_like(X)
        torch.linalg.qr(X, out=(B, B))
        """, [("wrong", "in-op-overlap", 4, ["B"])], """
        import torch
        X = torch.randn(2, 2)
        Q = torch.zeros_like(X)
        R = torch.zeros_like(X)
        torch.linalg.qr(X, out=(Q, R))
        """),
    ("pytorch#57955 (triangular_solve out= its right-hand side)", """
        import torch
        import warnings
        warnings.simplefilter("ignore")
        a = torch.randn(3, 3).triu() + 3 * torch.eye(3)
        b = torch.randn(3, 2)
        torch.triangular_solve(b, a, out=(b, torch.empty(0)))
        """, [("hazard", "in-op-overlap", 6, ["b"])], """
        import torch
        import warnings
        warnings.simplefilter("ignore")
        a = torch.randn(3, 3).triu() + 3 * torch.eye(3)
        b = torch.randn(3, 2)
        x = torch.triangular_solve(b, a)
        """),
    ("titans-pytorch#64 (a Parameter over an expanded view, stepped)", """
        import torch
        from torch import nn
        w = torch.randn(8)
        per_head = nn.Parameter(w.expand(4, 8))
        opt = torch.optim.SGD([per_head], lr=0.1)
        per_head.sum().backward()
        try:
            opt.step()
        except RuntimeError:
            pass
        """, [("hazard", "self-overlap-write", 8, ["per_head"])], """
        import torch
        from torch import nn
        w = torch.randn(8)
        per_head = nn.Parameter(w.expand(4, 8).clone())
        opt = torch.optim.SGD([per_head], lr=0.1)
        per_head.sum().backward()
        opt.step()
        """),
    ("pytorch#165503", """
        import torch
        B, C, P, R, L, N = 2, 1, 1, 6, 3, 3
        y_chirp = torch.arange(1., N * C * P * L + 1).reshape(N, C, P, L)
        b0 = torch.tensor([0, 0, 1])
        r_int = torch.tensor([0, 1, 2])
        y_vec = torch.zeros(B, C, P, R + L)
        b_idx = b0.view(N, 1, 1, 1).expand(-1, C, P, L)
        c_idx = torch.arange(C).view(1, C, 1, 1).expand(N, -1, P, L)
        p_idx = torch.arange(P).view(1, 1, P, 1).expand(N, C, -1, L)
        r_idx = r_int.view(N, 1, 1, 1) + torch.arange(L).view(1, 1, 1, L)
        y_vec[b_idx, c_idx, p_idx, r_idx] += y_chirp
        """, [("wrong", "duplicate-index", 11, ["y_vec"])], """
        import torch
        B, C, P, R, L, N = 2, 1, 1, 6, 3, 3
        y_chirp = torch.arange(1., N * C * P * L + 1).reshape(N, C, P, L)
        b0 = torch.tensor([0, 0, 1])
        r_int = torch.tensor([0, 1, 2])
        y_vec = torch.zeros(B, C, P, R + L)
        b_idx = b0.view(N, 1, 1, 1).expand(-1, C, P, L)
        c_idx = torch.arange(C).view(1, C, 1, 1).expand(N, -1, P, L)
        p_idx = torch.arange(P).view(1, 1, P, 1).expand(N, C, -1, L)
        r_idx = r_int.view(N, 1, 1, 1) + torch.arange(L).view(1, 1, 1, L)
        y_vec.index_put_((b_idx, c_idx, p_idx, r_idx), y_chirp, accumulate=True)
        """),
    ("suite2p#1265 (bidiphase shift of a torch tensor, in a function)", """
        import numpy as np
        import torch
        def shift(frames, bidiphase):
            if bidiphase > 0:
                frames[:, 1::2, bidiphase:] = frames[:, 1::2, :-bidiphase]
            return frames
        fr = np.arange(2 * 4 * 8, dtype=np.int16).reshape(2, 4, 8)
        shifted = shift(torch.from_numpy(fr.copy()), 3)
        """, [("wrong", "in-op-overlap", 5, ["frames[:, 1::2, bidiphase:]",
                                           "frames[:, 1::2, :-bidiphase]"])], """
        import numpy as np
        import torch
        def shift(frames, bidiphase):
            if bidiphase > 0:
                frames[:, 1::2, bidiphase:] = frames[:, 1::2, :-bidiphase].clone()
            return frames
        fr = np.arange(2 * 4 * 8, dtype=np.int16).reshape(2, 4, 8)
        shifted = shift(torch.from_numpy(fr.copy()), 3)
        """),
    # the PR says torch rejects this; 2.13 computes it, wrong (a column shift, like #144861)
    ("pytorch#181325", """
        import torch
        base = torch.tensor([[1, 2, 4, 8], [16, 32, 64, 128]])
        try:
            base[:, 1:].bitwise_or_(base[:, :-1])
        except RuntimeError:
            pass
        """, [("wrong", "in-op-overlap", 4, ["base[:, 1:]", "base[:, :-1]"])], """
        import torch
        base = torch.tensor([[1, 2, 4, 8], [16, 32, 64, 128]])
        base[:, 1:].bitwise_or_(base[:, :-1].clone())
        """),
    ("pytorch#23063 (copy_ into an expanded tensor)", """
        import torch
        a = torch.empty(1)
        c = torch.randn(10)
        b = a.expand(10)
        try:
            b.copy_(c)
        except RuntimeError:
            pass
        """, [("hazard", "self-overlap-write", 6, ["b"])], """
        import torch
        a = torch.empty(10)
        c = torch.randn(10)
        a.copy_(c)
        """),
    ("torchaug#10 (grayscale expanded to 3 channels, then normalized in place)", """
        import torch
        img = torch.rand(4, 3, 8, 8)
        gray = (0.2989 * img[:, 0] + 0.587 * img[:, 1] + 0.114 * img[:, 2]).unsqueeze(1)
        out = gray.expand(-1, 3, -1, -1)
        mean = torch.tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
        std = torch.tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
        try:
            out.sub_(mean).div_(std)
        except RuntimeError:
            pass
        """, [("hazard", "self-overlap-write", 8, ["out"])], """
        import torch
        img = torch.rand(4, 3, 8, 8)
        gray = (0.2989 * img[:, 0] + 0.587 * img[:, 1] + 0.114 * img[:, 2]).unsqueeze(1)
        out = gray.expand(-1, 3, -1, -1).contiguous()
        mean = torch.tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
        std = torch.tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
        out.sub_(mean).div_(std)
        """),
    # x[idx] += v runs as a gather, the operator and one store: an index given twice gets v
    # once, whatever the values (counting with += is the classic)
    ("pytorch#3844", """
        import torch
        m = torch.tensor([[4, 4, 3, 0], [3, 4, 2, 3]])
        p = torch.ones(2, 4, dtype=torch.long)
        g = torch.LongTensor(5, 5).zero_()
        g[p, m] += 1
        """, [("wrong", "duplicate-index", 5, ["g"])], """
        import torch
        m = torch.tensor([[4, 4, 3, 0], [3, 4, 2, 3]])
        p = torch.ones(2, 4, dtype=torch.long)
        g = torch.LongTensor(5, 5).zero_()
        g.index_put_((p, m), torch.tensor(1), accumulate=True)
        """),
    ("pytorch#42805", """
        import torch
        a = torch.zeros(4)
        a[[1, 1, 2, 3]] += 1
        """, [("wrong", "duplicate-index", 3, ["a"])], """
        import torch
        a = torch.zeros(4)
        a.put_(torch.tensor([1, 1, 2, 3]), torch.ones(4), accumulate=True)
        """),
    ("pytorch#60846", """
        import torch
        a = torch.zeros((4, 6))
        b = torch.tensor([1, 3, 5])
        indices = [[0, 0, 1], [0, 0, 1]]
        a[indices] += b
        """, [("wrong", "duplicate-index", 5, ["a"])], """
        import torch
        a = torch.zeros((4, 6))
        b = torch.tensor([1., 3, 5])
        a.index_put_((torch.tensor([0, 0, 1]), torch.tensor([0, 0, 1])), b, accumulate=True)
        """),
    ("nn-zero-to-hero#57 (embedding gradient by +=, in a loop)", """
        import torch
        torch.manual_seed(0)
        C = torch.randn(27, 10)
        Xb = torch.tensor([[1, 1, 5], [0, 1, 2]])
        demb = torch.randn(2, 3, 10)
        dC = torch.zeros_like(C)
        for k in range(Xb.shape[0]):
            dC[Xb[k]] += demb[k]
        """, [("wrong", "duplicate-index", 8, ["dC"])], """
        import torch
        torch.manual_seed(0)
        C = torch.randn(27, 10)
        Xb = torch.tensor([[1, 1, 5], [0, 1, 2]])
        demb = torch.randn(2, 3, 10)
        dC = torch.zeros_like(C)
        dC.index_add_(0, Xb.view(-1), demb.view(-1, 10))
        """),
    # the documented hazard of .data: autograd's version check does not see the write
    ("pytorch#6990", """
        import torch
        a = torch.tensor([1, 2, 3.], requires_grad=True)
        out = a.sigmoid()
        c = out.data
        c.zero_()
        out.sum().backward()
        """, [("stale-view", "RAW", 5, ["out", "c"])], """
        import torch
        a = torch.tensor([1, 2, 3.], requires_grad=True)
        out = a.sigmoid()
        c = out.detach().clone()
        c.zero_()
        out.sum().backward()
        """),
    ("pytorch#9391 (written through .data)", """
        import torch
        a = torch.tensor([1, 2, 3.], requires_grad=True)
        b = a.sigmoid()
        b.data[1] = 2
        b.sum().backward()
        """, [("stale-view", "RAW", 4, ["b", "b.data[1]"])], """
        import torch
        a = torch.tensor([1, 2, 3.], requires_grad=True)
        b = a.sigmoid()
        b.sum().backward()
        b.data[1] = 2
        """),
]


def _line(f):
    return int(f.lines[0].rsplit(":", 1)[1])


@pytest.mark.parametrize("issue,code,expected,twin", CASES, ids=[c[0] for c in CASES])
def test_flagged_once_at_its_line(tmp_path, issue, code, expected, twin):
    tr, path = run_case(tmp_path, code)
    found = tr.findings()
    assert len(found) == len(expected), [f.describe() for f in found]
    got = [(f.severity, f.kind, _line(f), list(f.names[:len(names)]))
           for f, (_, _, _, names) in zip(found, expected)]
    assert got == expected
    for f in found:
        assert f.lines[0].startswith(str(path)) and f.hint
        if f.severity == "wrong":
            assert f.differs > 0 and f.example is not None


@pytest.mark.parametrize("issue,code,expected,twin", CASES, ids=[c[0] for c in CASES])
def test_the_same_program_without_aliasing_has_no_finding(tmp_path, issue, code, expected,
                                                          twin):
    tr, _ = run_case(tmp_path, twin, "twin.py")
    assert tr.findings() == [], [f.describe() for f in tr.findings()]


# ---- oracles, without the tracer -------------------------------------------------------
# wrong: (got, expected) = the op on the program's aliased tensors, and on copies
WRONG = {}
# hazard: a callable that torch refuses (RuntimeError), or (got, expected) that agree
HAZARD = {}


def oracle(table, issue):
    def register(f):
        table[issue] = f
        return f
    return register


@oracle(WRONG, "pytorch#114747")
def _():
    # every index written once, in order, the last write winning (a loop over the source)
    destination = torch.tensor([[4.0, 0.0, 3.0, 1.0, 0.0], [0.0, 5.0, 8.0, 0.0, 0.0],
                                [6.0, 0.0, 0.0, 9.0, 0.0]])
    source = torch.tensor([[0.3992, 0.2908, 0.9044, 0.4850, 0.6004],
                           [0.5735, 0.9006, 0.6797, 0.4152, 0.1732]])
    place_at = torch.tensor([[0, 1, 2, 0], [2, 0, 0, 1]])
    orders = []
    for order in (range(4), reversed(range(4))):
        expected = destination.clone()
        for i in range(2):
            for j in order:
                expected[i, place_at[i, j]] = source[i, j]
        orders.append(expected)
    assert not torch.equal(*orders)    # the answer depends on the order of the writes
    got = torch.scatter(destination, 1, place_at, source)
    return got, orders[0] if not torch.equal(got, orders[0]) else orders[1]


@oracle(WRONG, "pytorch#107110")
def _():
    dst = torch.full([7, 2], -1).int()
    view = torch.as_strided(dst, [7, 2], [1, 2])
    src_t = torch.tensor([[1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14]]).int().t()
    view.copy_(src_t)
    return view, src_t        # read back, the view does not hold what was copied into it


@oracle(WRONG, "pytorch#135487")
def _():
    a = torch.randn((2, 2))
    b = a.clone()
    a -= a[:, :1]
    return a, b - b[:, :1]


@oracle(WRONG, "pytorch#180377")
def _():
    X = torch.randn(2, 2)
    B = torch.zeros_like(X)
    Q, _ = torch.linalg.qr(X)
    torch.linalg.qr(X, out=(B, B))
    return B, Q               # Q is lost


@oracle(WRONG, "pytorch#165503")
def _():
    B, C, P, R, L, N = 2, 1, 1, 6, 3, 3
    y = torch.arange(1., N * C * P * L + 1).reshape(N, C, P, L)
    b0, r_int = torch.tensor([0, 0, 1]), torch.tensor([0, 1, 2])
    y_loop = torch.zeros(B, C, P, R + L)
    for i in range(N):
        y_loop[b0[i], :, :, torch.arange(r_int[i], r_int[i] + L)] += y[i]
    y_vec = torch.zeros(B, C, P, R + L)
    r_idx = r_int.view(N, 1, 1, 1) + torch.arange(L).view(1, 1, 1, L)
    y_vec[b0.view(N, 1, 1, 1).expand(-1, C, P, L), torch.zeros(N, C, P, L, dtype=torch.long),
          torch.zeros(N, C, P, L, dtype=torch.long), r_idx] += y
    return y_vec, y_loop


@oracle(WRONG, "pytorch#6990")
def _():
    a = torch.tensor([1, 2, 3.], requires_grad=True)
    out = a.sigmoid()
    out.data.zero_()
    out.sum().backward()
    s = torch.tensor([1, 2, 3.]).sigmoid()
    return a.grad, s * (1 - s)


@oracle(WRONG, "pytorch#9391 (written through .data)")
def _():
    a = torch.tensor([1, 2, 3.], requires_grad=True)
    b = a.sigmoid()
    b.data[1] = 2
    b.sum().backward()
    s = torch.tensor([1, 2, 3.]).sigmoid()
    return a.grad, s * (1 - s)


@oracle(WRONG, "suite2p#1265 (bidiphase shift of a torch tensor, in a function)")
def _():
    fr = torch.arange(2 * 4 * 8, dtype=torch.int16).reshape(2, 4, 8)
    n = fr.numpy().copy()
    fr[:, 1::2, 3:] = fr[:, 1::2, :-3]
    n[:, 1::2, 3:] = n[:, 1::2, :-3]          # NumPy copies an overlapping source first
    return fr, torch.from_numpy(n)


@oracle(WRONG, "pytorch#181325")
def _():
    base = torch.tensor([[1, 2, 4, 8], [16, 32, 64, 128]])
    expected = base[:, 1:] | base[:, :-1]
    base[:, 1:].bitwise_or_(base[:, :-1])
    return base[:, 1:], expected


def _one_by_one(target, index, values):
    """``target[i] += v`` for each index in turn: what ``target[index] += values`` means."""
    out = target.clone()
    for i, v in zip(index.tolist(), values.reshape(len(index), -1)):
        out[i] += v.reshape(out[i].shape)
    return out


@oracle(WRONG, "pytorch#3844")
def _():
    m, p = torch.tensor([[4, 4, 3, 0], [3, 4, 2, 3]]), torch.ones(2, 4, dtype=torch.long)
    g = torch.zeros(5, 5, dtype=torch.long)
    flat = (p * 5 + m).reshape(-1)
    expected = _one_by_one(g.view(-1), flat, torch.ones(8, dtype=torch.long)).view(5, 5)
    g[p, m] += 1
    return g, expected


@oracle(WRONG, "pytorch#42805")
def _():
    a = torch.zeros(4)
    expected = _one_by_one(a, torch.tensor([1, 1, 2, 3]), torch.ones(4))
    a[[1, 1, 2, 3]] += 1
    return a, expected


@oracle(WRONG, "pytorch#60846")
def _():
    a, b = torch.zeros((4, 6)), torch.tensor([1., 3, 5])
    expected = _one_by_one(a.view(-1), torch.tensor([0, 0, 7]), b).view(4, 6)
    a[[[0, 0, 1], [0, 0, 1]]] += b
    return a, expected


@oracle(WRONG, "nn-zero-to-hero#57 (embedding gradient by +=, in a loop)")
def _():
    demb, Xb = torch.randn(2, 3, 10), torch.tensor([[1, 1, 5], [0, 1, 2]])
    dC = torch.zeros(27, 10)
    expected = _one_by_one(dC, Xb.view(-1), demb.view(-1, 10))
    for k in range(2):
        dC[Xb[k]] += demb[k]
    return dC, expected


def _refused(f):
    def check():
        with pytest.raises(RuntimeError, match="unsupported operation|single memory location"):
            f()
    return check


for _issue, _f in {
    "pytorch#15358": lambda: torch.arange(4).expand(5, 4).add_(torch.arange(20).view(5, 4)),
    "pytorch#17185": lambda: torch.tensor([1, 2, 3]).view(1, 3).expand(2, 3).mul_(
        torch.tensor([4, 5]).view(2, 1).expand(2, 3)),
    "pytorch#1424": lambda: torch.randn(1).expand(4).add_(torch.randn(4)),
    "pytorch#22513": lambda: torch.zeros(1, 5).expand(3, -1).scatter_(
        0, torch.tensor([[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]]), torch.rand(2, 5)),
    "pytorch#3176": lambda: (lambda a: a.index_add_(0, torch.ones(5, dtype=torch.long), a))(
        torch.ones(5)),
    "pytorch#30577": lambda: (lambda x: torch.cat([torch.ones(2), x], out=x.view(2)))(
        torch.zeros(2)),
    "pytorch#63837": lambda: (lambda i: torch.scatter(i.clone(), 0, i[1:], i.clone()[1:],
                                                      out=i[:1]))(torch.tensor([0, 1, 2, 3])),
    "pytorch#23812": lambda: (lambda a: a[1:].sub_(a[:-1]))(torch.arange(20)),
    "pytorch#957": lambda: torch.Tensor([2]).expand(1, 3).mul_(2),
    "pytorch#23063 (copy_ into an expanded tensor)": lambda: torch.empty(1).expand(10).copy_(
        torch.randn(10)),
    "torchaug#10 (grayscale expanded to 3 channels, then normalized in place)":
    lambda: torch.rand(4, 1, 8, 8).expand(-1, 3, -1, -1).sub_(torch.rand(3, 1, 1)),
    "titans-pytorch#64 (a Parameter over an expanded view, stepped)":
    lambda: torch.randn(8).expand(4, 8).sub_(torch.ones(4, 8), alpha=0.1),
}.items():
    HAZARD[_issue] = _refused(_f)


@oracle(HAZARD, "fvdb-core#427 (cumsum_out into its input)")
def _():
    t = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6])
    expected = torch.cumsum(t.clone(), 0)
    return torch.cumsum(t, 0, out=t), expected


@oracle(HAZARD, "pytorch#8212")
def _():
    c = torch.arange(101.)[None, :].repeat(50, 1)
    expected = c / c[:, 100:].clone()
    c /= c[:, 100:]
    return c, expected


@oracle(HAZARD, "pytorch#57955 (triangular_solve out= its right-hand side)")
def _():
    a = torch.randn(3, 3).triu() + 3 * torch.eye(3)
    b = torch.randn(3, 2)
    expected = torch.linalg.solve_triangular(a, b.clone(), upper=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # deprecated (warned once per process)
        torch.triangular_solve(b, a, out=(b, torch.empty(0)))
    return b, expected


def test_every_case_has_an_oracle_of_its_class():
    for issue, _, expected, _ in CASES:
        severity = expected[0][0]
        if severity == "wrong" or (severity == "stale-view" and issue in WRONG):
            assert issue in WRONG, issue
        elif severity == "hazard":
            assert issue in HAZARD, issue
    assert set(WRONG) | set(HAZARD) <= {c[0] for c in CASES}


@pytest.mark.parametrize("issue", sorted(WRONG))
def test_wrong_ones_really_are_wrong(issue):
    torch.manual_seed(0)
    got, expected = WRONG[issue]()
    assert got.shape == expected.shape and not torch.equal(got, expected), (got, expected)


@pytest.mark.parametrize("issue", sorted(HAZARD))
def test_hazards_are_refused_or_come_out_right_this_time(issue):
    torch.manual_seed(0)
    result = HAZARD[issue]()
    if result is not None:
        got, expected = result
        torch.testing.assert_close(got, expected)


def test_a_loop_whose_early_steps_come_out_right_is_one_wrong_finding(tmp_path):
    """A history buffer shifted in place each step (pytorch#91894's line, in a loop): the
    steps while it holds zeros agree with copy semantics, the later ones do not. One line,
    one mechanism: one ``wrong`` finding counting every step, not a ``wrong`` and a
    ``hazard`` at the same line."""
    tr, _ = run_case(tmp_path, """
        import torch
        history = torch.zeros(2, 4)
        for step in range(5):
            history[:, 1:] = history[:, :-1]
            history[:, 0] = step + 1.
        """)
    (f,) = tr.findings()
    assert (f.severity, f.kind, _line(f), f.occurrences) == ("wrong", "in-op-overlap", 4, 5)
    assert f.differs > 0 and f.example is not None
    # the oracle: the same steps on copies keep the history, the aliased copy smears it
    history, expected = torch.zeros(2, 4), torch.zeros(2, 4)
    for step in range(5):
        history[:, 1:] = history[:, :-1]
        history[:, 0] = step + 1.
        expected[:, 1:] = expected[:, :-1].clone()
        expected[:, 0] = step + 1.
    assert expected[0].tolist() == [5., 4., 3., 2.] and not torch.equal(history, expected)
