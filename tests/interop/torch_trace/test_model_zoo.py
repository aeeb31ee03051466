"""Training steps of models nobody here wrote under ``af.trace()``: transformers' text,
vision and audio models (tiny random configs), torchvision's classification families and
two segmentation models, PyTorch's own training machinery (checkpointing, GradScaler, EMA,
DDP, torch.func, QAT, torch.compile, LBFGS...), with a dozen optimizers in their for-loop,
foreach and fused forms. For each (``training.check``): two steps traced give the losses,
parameters, buffers, gradients and optimizer state of the same two steps untraced, bit for
bit; no AliasflowTraceWarning and no untracked call; no finding; ``t.replay(workers=2)``
identical. A quick sample runs in the normal suite, the whole zoo under ``-m slow``."""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from training import check  # noqa: E402
from zoo_idioms import IDIOMS  # noqa: E402
from zoo_runtime import RUNTIME  # noqa: E402
from zoo_text import TEXT  # noqa: E402
from zoo_vision import VISION  # noqa: E402

ZOO = {**TEXT, **VISION, **IDIOMS, **RUNTIME}
QUICK = ["qwen2_moe", "t5", "grad_scaler_float16", "ddp"]
# the models whose test below says what is special about them
SPECIAL = {"mobilenet_v3_small_channels_last", "sparse_embedding"}


def _clean(name):
    tr, problems = check(ZOO[name])
    assert problems == [], "\n".join(problems)
    assert len(tr.calls) > 100


@pytest.mark.parametrize("name", QUICK)
def test_a_sample_of_the_zoo(name):
    _clean(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(ZOO) - set(QUICK) - SPECIAL))
def test_the_zoo(name):
    _clean(name)


@pytest.mark.slow
def test_what_any_dispatch_mode_changes():
    """Every difference from the untraced run is one an empty TorchDispatchMode makes too:
    under any mode ``at::isTensorSubclassLike`` is true, so autograd adds the gradients of
    a tensor used twice out of place (``a + b``) instead of in place (``a.add_(b)``); at 1x1
    pixels the sum's strides then differ, and BatchNorm's backward picks another kernel."""
    tr, problems = check(ZOO["mobilenet_v3_small_channels_last"])
    assert all(p.endswith("(as under an empty TorchDispatchMode)") for p in problems), \
        "\n".join(problems)


def test_sparse_gradients_are_untracked_with_their_reason():
    tr, problems = check(ZOO["sparse_embedding"])
    assert problems and all(p.startswith(("warning:", "untracked:")) for p in problems), \
        "\n".join(problems)
    assert all("sparse" in p for p in problems if p.startswith("untracked:"))


# ---- the oracle sees what it must see -----------------------------------------------------
def _tracing() -> bool:
    from torch.utils._python_dispatch import _get_current_dispatch_mode
    mode = _get_current_dispatch_mode()
    return mode is not None and type(mode).__module__.startswith("aliasflow")


def _sensitive(what):
    """gpt-2-free MLP steps that misbehave only when traced, each in one way."""
    from zoo_idioms import _data, _mlp
    from training import Training

    def make():
        model, (x, y) = _mlp(inplace=False), _data()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step():
            loss = torch.nn.functional.cross_entropy(model(x), y)
            if what == "result" and _tracing():
                loss = loss * 1.0001
            opt.zero_grad()
            loss.backward()
            opt.step()
            if what == "numpy":     # a write PyTorch's dispatcher never sees
                model[0].bias.detach().numpy()[0] += 1.0
            if what == "bug":
                h = x.clone()
                h[:, :-1] = h[:, 1:]
            return loss.detach()
        return Training(model, opt, step)
    return make


@pytest.mark.parametrize("what, expected", [
    ("result", "differs from the untraced run: loss of step 0"),
    ("numpy", "replay: "),
    ("bug", "finding: "),
])
def test_the_oracle_sees_a_changed_step(what, expected):
    _, problems = check(_sensitive(what))
    assert any(p.startswith(expected) and "TorchDispatchMode" not in p for p in problems), \
        problems
