"""Tensors autograd saved for backward, overwritten before backward through a tensor autograd
does not track (``.data``): the gradient silently uses the new values. Each real program is
flagged once, at the overwriting line, as a ``stale-view`` with the forward line beside it;
the oracle (the same program without the overwrite, or with the old values restored) shows
the gradient really changed. Programs that overwrite memory backward does not read, update
after backward, or update the forward op's own state (BatchNorm's running statistics, one
module applied twice) stay quiet."""
import pytest

torch = pytest.importorskip("torch")

from test_real_bugs import run_case  # noqa: E402

# (source, program, the overwriting line, the forward line, names)
BUGS = [
    ("ShusenTang/Dive-into-DL-PyTorch#12", """
        import torch
        x = torch.ones(1, requires_grad=True)
        y = 2 * x * x
        x.data *= 100
        y.backward()
        """, 4, 3, ["x.data"]),
    ("OmidPoursaeed/Generative_Adversarial_Perturbations#4", """
        import torch
        a = torch.tensor([2.0], requires_grad=True)
        b = torch.tensor([3.0], requires_grad=True)
        c = b * 4
        loss = a * c
        c.data[0] = c.data[0] * 4
        loss.backward()
        """, 6, 5, ["c", "c.data[0]"]),   # c: the operand of `a * c`
    ("sigmoid's saved output", """
        import torch
        x = torch.randn(5, requires_grad=True)
        y = x.sigmoid()
        y.data.mul_(2)
        y.sum().backward()
        """, 4, 3, ["y", "y.data"]),
    ("a weight scaled through .data between forward and backward", """
        import torch
        lin = torch.nn.Linear(4, 3)
        x = torch.randn(2, 4, requires_grad=True)
        out = lin(x)
        lin.weight.data.mul_(0.5)
        out.sum().backward()
        """, 5, 4, ["lin.weight.data"]),
]


@pytest.mark.parametrize("source,code,line,forward,names", BUGS, ids=[b[0] for b in BUGS])
def test_a_saved_tensor_overwritten_before_backward_is_flagged(tmp_path, source, code, line,
                                                               forward, names):
    tr, path = run_case(tmp_path, code)
    found = tr.findings()
    assert [(f.severity, f.kind) for f in found] == [("stale-view", "RAW")], \
        [f.describe() for f in found]
    f = found[0]
    assert f.lines == [f"{path}:{line}", f"{path}:{forward}"]
    assert f.names == names
    assert "autograd saved this tensor" in f.hint and "saved for backward" in f.note


def test_the_overwrite_really_changes_the_gradient():
    """Oracle, no tracer: each program's gradients with the overwrite differ from those
    without it (the values the forward pass saw)."""
    import textwrap
    for source, code, line, _, _ in BUGS:
        lines = textwrap.dedent(code).strip("\n").split("\n")
        grads = []
        for keep in (True, False):
            torch.manual_seed(0)
            ns: dict = {}
            exec("\n".join(lines if keep else lines[:line - 1] + ["pass"] + lines[line:]), ns)
            grads.append([v.grad.clone() for v in ns.values()
                          if isinstance(v, torch.Tensor) and v.is_leaf and v.grad is not None] +
                         [p.grad.clone() for m in ns.values() if isinstance(m, torch.nn.Module)
                          for p in m.parameters()])
        assert any(not torch.equal(a, b) for a, b in zip(*grads)), source


QUIET = [
    ("an overwrite backward does not read (mul by a number saves nothing)", """
        import torch
        x = torch.ones(3, requires_grad=True)
        y = x * 2
        x.data *= 100
        y.sum().backward()
        """),
    ("an update after backward (old-style optimizer)", """
        import torch
        lin = torch.nn.Linear(4, 3)
        for _ in range(2):
            lin(torch.randn(2, 4)).sum().backward()
            for p in lin.parameters():
                p.data.add_(p.grad, alpha=-0.1)
                p.grad = None
        """),
    ("BatchNorm applied twice in one forward (its running statistics)", """
        import torch
        bn = torch.nn.BatchNorm1d(4)
        lin = torch.nn.Linear(4, 4)
        x = torch.randn(8, 4, requires_grad=True)
        out = bn(lin(bn(x)))
        out.sum().backward()
        """),
    ("an embedding row reset through .data (backward does not read the weight)", """
        import torch
        emb = torch.nn.Embedding(10, 3)
        out = emb(torch.tensor([1, 2, 3]))
        emb.weight.data[5].zero_()
        out.sum().backward()
        """),
]


@pytest.mark.parametrize("what,code", QUIET, ids=[q[0] for q in QUIET])
def test_quiet_where_backward_reads_nothing_overwritten(tmp_path, what, code):
    tr, _ = run_case(tmp_path, code)
    assert tr.findings() == [], [f.describe() for f in tr.findings()]
