"""Real models' training steps under the tracer: results unchanged (bit for bit, against the
same steps run untraced), zero default findings over several steps, replay identical; the
usual in-place idioms quiet; an injected bug the one finding, at its line, with its names."""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import aliasflow as af  # noqa: E402
from models import MODELS, make  # noqa: E402

STEPS = 3


@pytest.mark.parametrize("name", list(MODELS))
def test_training_steps_unchanged_quiet_and_replayed(name):
    model_a, step_a = make(name)
    plain = [step_a() for _ in range(STEPS)]
    model_b, step_b = make(name)
    with af.trace() as tr:
        traced = [step_b() for _ in range(STEPS)]
    assert all(torch.equal(a, b) for a, b in zip(plain, traced))
    for (k, p), (_, q) in zip(model_a.state_dict().items(), model_b.state_dict().items()):
        assert torch.equal(p, q), k
    assert not any(c.untracked for c in tr.calls)
    assert tr.findings() == [], [f.describe() for f in tr.findings()]
    report = tr.replay(workers=2)
    assert report.identical, str(report)
    assert report.compared_storages > 20


def test_an_injected_bug_is_the_one_finding_at_its_line():
    model, _ = make("gpt2")
    ids = torch.randint(0, 100, (2, 15))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with af.trace() as tr:
        for _ in range(STEPS):
            labels = ids.clone()
            labels[:, :-1] = labels[:, 1:]   # the bug: shifts labels in place through a view
            out = model(input_ids=ids, labels=labels)
            opt.zero_grad()
            out.loss.backward()
            opt.step()
    (f,) = tr.findings()
    line = test_an_injected_bug_is_the_one_finding_at_its_line.__code__.co_firstlineno + 7
    assert f.severity in ("wrong", "hazard") and f.kind == "in-op-overlap"
    assert f.lines == [f"tests/interop/torch_trace/test_models.py:{line}"] or \
        f.lines[0].endswith(f"test_models.py:{line}")
    assert f.names == ["labels[:, :-1]", "labels[:, 1:]"]
    assert f.occurrences == STEPS and f.hint


class EMA(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n))
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        with torch.no_grad():
            self.mean.mul_(0.9).add_(x.mean(0), alpha=0.1)
            self.steps += 1
        return x - self.mean


def test_usual_in_place_idioms_are_quiet():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(inplace=True), EMA(8))
    opts = [torch.optim.Adam(net.parameters(), lr=1e-3, foreach=True),
            torch.optim.SGD(net.parameters(), lr=1e-3, momentum=0.9, fused=True)]
    x = torch.randn(4, 8)
    with af.trace() as tr:
        for opt in opts:
            for _ in range(2):
                h = net(x)
                h += x                         # x += h
                h = h.relu_()
                loss = h.square().mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
        # a static KV cache, written one slot at a time and read through growing views
        cache_k = torch.zeros(6, 8)
        cache_v = torch.zeros(6, 8)
        window = cache_k[:, :]                 # a view made once, read after each write
        q = torch.randn(8)
        for t in range(6):
            cache_k[t] = torch.randn(8)
            cache_v.index_copy_(0, torch.tensor([t]), torch.randn(1, 8))
            scores = (cache_k[:t + 1] @ q).softmax(0)
            out = scores @ cache_v[:t + 1]
            total = window.sum()
    del out, total
    assert tr.findings() == [], [f.describe() for f in tr.findings()]
    assert tr.findings(all=True)        # the flows are there, as order facts
