"""torch.distributed's collectives under the tracer, in a gloo group of this process alone.

Their schemas (``c10d::allreduce_(Tensor[] tensors, ...) -> (Tensor[], Work)``) carry no
alias annotation: read as written, the tensors would be inputs only and the returned lists
new tensors at the inputs' own addresses (an in-op overlap on every DDP step). PyTorch's
documentation says what they do: ``all_reduce``/``broadcast`` change their tensor in place,
``all_gather_into_tensor`` writes its output; the tables in ``schema.COLLECTIVES`` say so,
and the returned objects are the very tensors passed (checked here, untraced)."""
import warnings

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available():
    pytest.skip("torch.distributed is not built in", allow_module_level=True)

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import aliasflow as af  # noqa: E402
from aliasflow.interop.torch_trace.tracer import AliasflowTraceWarning  # noqa: E402
from zoo_runtime import one_process_group  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def group():
    one_process_group()
    yield


def _accesses(tr, name):
    (call,) = [c for c in tr.calls if str(c.func) == name]
    return call, sorted({(a[0], a[1]) for a in call.accesses})


class _Returns(TorchDispatchMode):
    """Keeps each c10d call's tensor arguments and what it returned (no tracer involved)."""
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if str(func).startswith("c10d."):
            self.seen.append((str(func), args[0], out[0]))
        return out


def test_the_collectives_return_the_tensors_they_were_given():
    t, row = torch.arange(4.), torch.ones(2)
    with _Returns() as mode:
        dist.all_reduce(t)
        dist.broadcast(row, src=0)
    assert [name for name, _, _ in mode.seen] == ["c10d.allreduce_.default",
                                                  "c10d.broadcast_.default"]
    for _, given, returned in mode.seen:
        assert len(given) == len(returned) == 1 and returned[0] is given[0]


def test_all_reduce_and_broadcast_write_their_tensor_in_place():
    t = torch.arange(6.).reshape(2, 3)
    with af.trace() as tr:
        dist.all_reduce(t)
        dist.broadcast(t[1], src=0)
        total = t.sum()
    assert _accesses(tr, "c10d.allreduce_.default")[1] == [("RW", 0)]
    assert _accesses(tr, "c10d.broadcast_.default")[1] == [("RW", 0)]
    assert tr.findings() == [], [f.describe() for f in tr.findings()]
    assert total.item() == 15.0
    report = tr.replay(workers=2)
    assert report.identical, str(report)


def test_all_gather_into_tensor_writes_its_output():
    x, out = torch.arange(3.), torch.full((3,), -1.0)
    with af.trace() as tr:
        dist.all_gather_into_tensor(out, x)
    assert torch.equal(out, x)           # written (one rank: a copy of the input)
    assert _accesses(tr, "c10d._allgather_base_.default")[1] == [("R", 1), ("W", 0)]
    assert tr.findings() == []
    assert tr.replay().identical


def test_a_list_of_lists_of_tensors_is_untracked_with_its_reason():
    x = torch.arange(3.)
    outs = [torch.zeros(3)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AliasflowTraceWarning)
        with af.trace() as tr:
            dist.all_gather(outs, x)
    assert torch.equal(outs[0], x)
    (call,) = [c for c in tr.calls if str(c.func) == "c10d.allgather_.default"]
    assert "output_tensors is a list of lists of tensors" in call.untracked
    assert any("allgather_" in str(w.message) for w in caught)
    with pytest.raises(af.AliasflowError, match="allgather_"):
        tr.replay()


def _views_of_a_flat_buffer():
    flat = torch.arange(10.)
    return flat, flat[:6].view(2, 3), flat[6:9]


def test_views_of_a_buffer_a_collective_writes_are_not_stale():
    """DDP(gradient_as_bucket_view=True) and ZeroRedundancyOptimizer(
    parameters_as_bucket_view=True) hand out views of a flat buffer made once, which each
    step's all-reduce or broadcast rewrites whole; reading them after is what they are for.
    The same views rewritten by an ordinary op stay stale (the program may have expected
    copies)."""
    x = torch.randn(4, 2)
    for publish, stale in ((lambda flat: dist.broadcast(flat, src=0), False),
                           (lambda flat: flat.mul_(0.5), True)):
        flat, w, b = _views_of_a_flat_buffer()
        with af.trace() as tr:
            for _ in range(2):
                out = x @ w + b
                publish(flat)
        del out
        assert [f.severity for f in tr.findings()] == (["stale-view"] * 2 if stale else [])


def test_zero_redundancy_optimizer_with_bucket_views_is_quiet():
    from torch.distributed.optim import ZeroRedundancyOptimizer
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    x, y = torch.randn(6, 8), torch.randint(0, 4, (6,))
    opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.SGD, lr=0.1,
                                  parameters_as_bucket_view=True)
    with af.trace() as tr:
        for _ in range(2):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert tr.findings() == [], [f.describe() for f in tr.findings()]
    assert tr.replay(workers=2).identical


def test_wait_tensor_returns_its_argument():
    """``_c10d_functional.wait_tensor`` (functional collectives, DTensor) returns the tensor
    it was given; its schema says a new one."""
    t = torch.arange(4.)
    with af.trace() as tr:
        u = torch.ops._c10d_functional.wait_tensor(t)
        u.add_(1)
        s = t.sum()
    assert u is t and s.item() == 10.0
    assert tr.findings() == [], [f.describe() for f in tr.findings()]
    assert tr.replay().identical
