"""Reports from PyTorch's issue tracker whose eager result on torch 2.13 is right (the bug was
in torch.compile, or there was none), and correct programs shaped like the real bugs of
``test_real_bugs.py`` / ``test_real_bugs_more.py``: the tracer must say nothing about them.
Each program is written to a file and run unmodified under ``af.trace()``."""

import pytest

torch = pytest.importorskip("torch")

import aliasflow as af  # noqa: E402
from bug_programs import run_case  # noqa: E402

# Reports whose eager result is right (the bug was in torch.compile, or there was none):
# the tracer must say nothing.
CORRECT = [
    ("pytorch#198102 (unfold windows with gaps, doubled in place)", """
        import torch
        x = torch.arange(1, 25, dtype=torch.int64).reshape(4, 6)
        v = x.unfold(1, 1, 5)
        v.add_(v)
        """),
    ("pytorch#198270 (index_put_ then add_ of its flip)", """
        import torch
        x = torch.rand(4, 8)
        x.index_put_((torch.arange(x.size(0)),), x * 2.0)
        x.add_(x.flip(0))
        """),
    ("pytorch#198280 (copy_ of its own transpose, through a temporary)", """
        import torch
        x = torch.rand(652, 5, 5)
        x.copy_(x.transpose(-1, -2) * 1.0)
        """),
    ("pytorch#198033 (_foreach_add_ of its flip)", """
        import torch
        x = torch.rand(8, 8)
        torch._foreach_add_([x], [x.flip(0)])
        """),
    ("pytorch#197829 (a shift through a clone)", """
        import torch
        x = torch.rand(3, 16, 16)
        x[1:] = x[:-1].clone()
        """),
    ("pytorch#18189 (in-place activations on chunks of one tensor)", """
        import torch
        import torch.nn as nn
        linear = nn.Linear(20, 6)
        with torch.no_grad():
            y_fwd = linear(torch.randn(7, 1, 20))
            z_gate_fwd, f_gate_fwd, o_gate_fwd = y_fwd.chunk(3, dim=2)
            z_gate_fwd.tanh_()
            f_gate_fwd.sigmoid_()
        """),
    ("pytorch#97130 (a write through one full view, read through another, in a closure)", """
        import torch
        def forward():
            a = torch.ones(2)
            b = a.reshape(2)
            c = a[0:2]
            def subfunc():
                b[0] = 2
                if b.sum() >= -1e5:
                    pass
            subfunc()
            return c
        s = forward().sum()
        """),
    ("pytorch#197054 (a leaf's view written under no_grad between two grad calls)", """
        import torch
        x = torch.randn(10, requires_grad=True)
        view = x.view(-1)
        out = view * 2.0
        grads = torch.autograd.grad(out.sum(), x, retain_graph=True, create_graph=True)
        with torch.no_grad():
            view.add_(1.0)
        grads_2 = torch.autograd.grad(out.sum(), x)
        """),
    # slots of one buffer written one by one, each read before any later write reaches it
    # (with torch.mul autograd's version check refuses the backward: a false alarm there)
    ("pytorch#74806 (a reduction through slots of one buffer)", """
        import torch
        from torch import Tensor
        def reduce(x: Tensor, y: Tensor, z: Tensor, op) -> Tensor:
            tensor = torch.zeros((5,), dtype=torch.float32, requires_grad=False)
            tensor[0] = x
            tensor[1] = y
            tensor[3] = z
            tensor[2] = op(tensor[0], tensor[1])
            tensor[4] = op(tensor[2], tensor[3])
            return tensor[4]
        inputs = [torch.randn((1,), requires_grad=True) for _ in range(3)]
        out = reduce(*inputs, op=torch.add)
        grad = torch.autograd.grad(out, inputs, torch.randn_like(out))
        out = reduce(*inputs, op=torch.mul)
        try:
            grad = torch.autograd.grad(out, inputs, torch.randn_like(out))
        except RuntimeError:
            pass
        """),
    ("pytorch#183986 (out-of-place index_add of an expanded tensor; compile's bug)", """
        import torch
        def fn(src, idx):
            x = torch.zeros(1, 8).expand(4, -1)
            return x.index_add(0, idx, src)
        src = torch.ones(3, 8)
        idx = torch.tensor([0, 1, 0])
        eager = fn(src, idx)
        """),
    # as_strided re-reads its base storage: no window below repeats an element, and the
    # bugs were in torch.compile's functionalization
    ("pytorch#104505 (as_strided of a diagonal, added to in place)", """
        import torch
        def foo(a):
            e = a.diagonal()
            f = e.as_strided((2,), (1,), 0)
            f.add_(1.0)
            return a
        a = torch.randn(2, 4)
        a_ref = a.clone()
        out = foo(a)
        """),
    ("pytorch#133512 (as_strided_copy of a strided tensor after add_)", """
        import torch
        def f(x):
            x.add_(1)
            result = torch.as_strided_copy(x, (3,), (2,))
            return result
        x = torch.arange(10)[::2]
        y = f(x)
        """),
    ("pytorch#185888 (as_strided_ then a read)", """
        import torch
        def fn():
            x = torch.arange(4.0, dtype=torch.float32)
            y = x.as_strided_((2, 2), (2, 1))
            observer = torch.max(y)
            return y, x.size(), y.size(), x.stride()
        out = fn()
        """),
    ("pytorch#197431 (as_strided over a repeat's slice)", """
        import torch
        def fn(x):
            full = x.repeat((3, 2))
            return torch.as_strided(full[:, ::2], (3, 2), full.stride())
        torch.manual_seed(0)
        x = torch.randn(1, 1)
        out1 = fn(x)
        """),
    # eager writes the one element every index of the expanded view shares, as its strides
    # say (one index written, no element written twice); static torch.compile did not
    ("pytorch#152425 (one element of an expanded 0-dim view written)", """
        import torch
        def expand(x, n):
            a = x.expand((n,))
            a[-1] = 3
            return a
        def f(n: int, device: str):
            numbers = torch.arange(2, device=device)
            for i in range(len(numbers)):
                expanded = expand(numbers[i], n)
        f(2, "cpu")
        """),
    ("pytorch#97083 (a squeeze view read after writes through its base)", """
        import torch
        def forward():
            a = torch.tensor([1])
            a = a[0:1]
            b = a.squeeze()
            a[0] = 0
            if a[0] < 1e5:
                pass
            a[0] = 2
            return b
        with torch.no_grad():
            out = forward()
        """),
    ("pytorch#198101 (a fresh tensor from a dtype view, its input written after)", """
        import torch
        def fn(x):
            y = x.view(torch.int32) * 2
            y.sub_(-4)
            x[:, 2:5] = 2
            return y.view(torch.int64)
        x = torch.arange(-12, 12, dtype=torch.int64).reshape(4, 6)
        out = fn(x.clone())
        """),
    ("pytorch#94777 (log, then log_ of its input)", """
        import torch
        x = torch.tensor(3.)
        def func(x):
            y = torch.log(x)
            x.log_()
            return y
        out = func(x.clone())
        """),
    ("pytorch#114302 (one element of an expanded view written)", """
        import torch
        def foo(x):
            y = x.expand(2, *x.shape)
            y[0, 0] = 5
            return y
        x = torch.arange(6)
        r = foo(x)
        """),
    ("pytorch#197448 (fill_ of an expanded view: one value everywhere)", """
        import torch
        import torch.nn as nn
        class Model(nn.Module):
            def forward(self, base):
                v = base.expand(3, -1)
                v.fill_(2.0)
                return base
        x1 = torch.tensor([-1.0, -0.5, 0.0, 0.5])
        out1 = Model()(x1)
        """),
    ("pytorch#55980 (a column of a conv output scaled in place in forward)", """
        import torch
        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = torch.nn.Conv2d(12, 12, 3)
            def forward(self, x, y):
                x = self.conv(x)
                y = self.conv(y)
                var = y.flatten()
                x[0, :, 0, 0] *= var
                loss = torch.mean(x)
                var.register_hook(lambda grad: print('var grad', grad.sum()))
                return loss
        model = Model()
        x = torch.ones([1, 12, 3, 3]).float()
        y = torch.ones([1, 12, 3, 3]).float()
        loss = model(x, y)
        loss.backward()
        """),
    # Python names, not views: dd *= 2 changes the one tensor cc also names
    ("pytorch#5828 (two names for one tensor, one written in place)", """
        import torch
        from torch.autograd import Variable
        aa = Variable(torch.FloatTensor([[1, 2], [3, 4]]))
        bb = aa
        bb = bb * 2
        cc = Variable(torch.FloatTensor([[1, 2], [3, 4]]))
        dd = cc
        dd *= 2
        """),
    # the fix the tutorials give for pytorch#34765: a deep copy reads the parameters at once
    ("pytorch#34765's fix (the best state_dict deep-copied while training goes on)", """
        import torch
        import copy
        import io
        torch.manual_seed(0)
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=1.5)
        x = torch.randn(8, 2)
        y = torch.randn(8, 1)
        best_loss, best_state = float("inf"), None
        for step in range(6):
            loss = ((model(x) - y) ** 2).mean()
            if loss.item() < best_loss:
                best_loss, best_state = loss.item(), copy.deepcopy(model.state_dict())
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.load_state_dict(best_state)
        torch.save(model.state_dict(), io.BytesIO())
        """),
    ("pytorch#3569 (l += tmp where l is the list's first tensor itself)", """
        import torch
        torch.manual_seed(1)
        loss_list = []
        for i in range(2):
            tmp = torch.FloatTensor(1).normal_()
            loss_list.append(tmp)
            if i == 0:
                l = tmp
            else:
                l += tmp
        total = torch.cat(loss_list)
        """),
    ("pytorch#39227 (index_put_ accumulate with repeated indices)", """
        import torch
        a = torch.zeros(3)
        a.index_put_([torch.tensor([0, 0])], torch.tensor(1.), accumulate=True)
        """),
    # out = beta * self + alpha * (a product): out= self is self.addmm_(...), BLAS scales C
    # in place (the factors are what must not alias the output)
    ("pytorch#96037 (baddbmm out= its self, beta=0: no NaN kept on 2.13)", """
        import torch
        a, b, c, z = [torch.rand((3, 2, 2)) for _ in range(4)]
        z = c
        z[1, 1, 1] = z[0, 0, 0] = torch.nan
        torch.baddbmm(c, a, b, alpha=1, beta=0, out=z)
        n = z.isnan().sum()
        """),
    ("addmm, baddbmm, addbmm, addmv, addr with out= their self", """
        import torch
        c = torch.randn(3, 4)
        torch.addmm(c, torch.randn(3, 5), torch.randn(5, 4), beta=0.5, out=c)
        d = torch.randn(2, 3, 4)
        torch.baddbmm(d, torch.randn(2, 3, 5), torch.randn(2, 5, 4), out=d)
        e = torch.randn(3)
        torch.addmv(e, torch.randn(3, 5), torch.randn(5), out=e)
        f = torch.randn(3, 4)
        torch.addr(f, torch.randn(3), torch.randn(4), out=f.view(3, 4))
        g = torch.randn(3, 4)
        torch.addbmm(g, torch.randn(2, 3, 5), torch.randn(2, 5, 4), out=g)
        """),
    ("index_add, index_copy, scatter, scatter_add with out= their self", """
        import torch
        idx = torch.tensor([0, 2])
        x = torch.randn(4, 3)
        torch.index_add(x, 0, idx, torch.ones(2, 3), out=x)
        torch.index_copy(x, 0, idx, torch.ones(2, 3), out=x)
        torch.scatter(x, 0, torch.tensor([[0, 1, 2]]), torch.ones(1, 3), out=x)
        torch.scatter_add(x, 0, torch.tensor([[0, 1, 2]]), torch.ones(1, 3), out=x.view(4, 3))
        """),
    ("read-modify-writes through repeated indices that lose nothing", """
        import torch
        a = torch.randn(4)
        idx = torch.tensor([1, 1, 2])
        a[idx] = a[idx].clamp(min=0)
        m = torch.tensor([1, 2, 4, 8])
        m[idx] |= 1
        m[idx] &= 6
        a[idx] = 3.
        b = torch.zeros(4)
        b[idx] = a[idx] + 1
        """),
    # elementwise ops writing the very tensor they read, through overloads torch does not
    # tag pointwise (where.self_out, gt_.Tensor, floor_divide_, ...)
    ("elementwise out= and in-place forms without the pointwise tag", """
        import torch
        x = torch.randn(4, 5)
        y = torch.randn(4, 5)
        torch.where(x > 0, x, y, out=x)
        x.floor_divide_(x)
        y.copysign_(y)
        y.heaviside_(y)
        y.gt_(y)
        n = torch.arange(6)
        n.gcd_(n)
        torch.ops.aten.threshold_backward.grad_input(y, x, 0., grad_input=y)
        torch.ops.aten.gelu.out(x, out=x)
        torch.tril(x, out=x)
        torch.triu(y, 1, out=y)
        """),
    # a detach() is a snapshot only against writes through other tensors: written through
    # itself, then its parameter updated after the last read of it
    ("a detached snapshot written through itself", """
        import torch
        w = torch.nn.Parameter(torch.randn(3))
        snap = w.detach()
        snap.mul_(0.5)
        total = snap.sum()
        with torch.no_grad():
            w.add_(1.0)
        again = w.detach().sum()
        """),
    # an optimizer's own detach (ASGD makes its state with .clone().detach() inside step())
    # is no snapshot the program asked for: its in-place updates are what the state is for
    ("an optimizer's state made by detach() and updated in place, step after step", """
        import torch
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 2)
        opt = torch.optim.ASGD(model.parameters(), lr=0.1, foreach=True)
        x = torch.randn(8, 4)
        for step in range(3):
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """),
    ("repeated indices writing one value, and reductions over them", """
        import torch
        x = torch.zeros(5)
        idx = torch.tensor([1, 1, 3])
        v = torch.tensor([1., 2., 3.])
        x[torch.tensor([1, 1])] = 5.
        x.index_add_(0, idx, v)
        x.scatter_add_(0, idx, v)
        x.put_(idx, v, accumulate=True)
        x.scatter_reduce_(0, idx, v, reduce="amax")
        x.index_reduce_(0, idx, v, "amax", include_self=False)
        y = torch.zeros(5).scatter_add(0, idx, v)
        x.scatter_(0, idx, 2.5)
        x.index_fill_(0, idx, -1.)
        m = torch.zeros(3, 5)
        m[:, idx] = torch.ones(3, 1)
        """),
]


@pytest.mark.parametrize("issue,code", CORRECT, ids=[c[0] for c in CORRECT])
def test_reports_whose_eager_result_is_right_have_no_finding(tmp_path, issue, code):
    tr, _ = run_case(tmp_path, code)
    assert tr.findings() == [], [f.describe() for f in tr.findings()]
