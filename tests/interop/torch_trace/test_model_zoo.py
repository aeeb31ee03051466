"""Training steps of models nobody here wrote under ``af.trace()``: transformers' text,
vision and audio models (tiny random configs), torchvision's classification families and
two segmentation models, PyTorch's own training machinery (checkpointing, GradScaler, EMA,
DDP, torch.func, QAT, torch.compile, LBFGS...), with a dozen optimizers in their for-loop,
foreach and fused forms. For each (``training.check``): two steps traced give the losses,
parameters, buffers, gradients and optimizer state of the same two steps untraced, bit for
bit; no AliasflowTraceWarning and no untracked call; no finding; ``t.replay(workers=2)``
identical. A quick sample runs in the normal suite, the whole zoo under ``-m slow``."""
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from repo import ROOT  # noqa: E402
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
    """An MLP's training step with one defect: a loss that changes only when traced
    ("result"), a write PyTorch's dispatcher never sees ("numpy"), an in-place copy between
    overlapping views ("bug")."""
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


# ---- the command line on a real training script ----------------------------------------------
TRAIN_SCRIPT = """import sys
import torch
sys.modules.setdefault("torchvision", None)   # transformers' optional import: not needed
from transformers import Qwen2Config, Qwen2ForCausalLM

torch.manual_seed(0)
model = Qwen2ForCausalLM(Qwen2Config(
    hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, vocab_size=100, max_position_embeddings=64))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
ids = torch.randint(0, 100, (2, 12))
for step in range(2):
    loss = model(input_ids=ids, labels=ids).loss
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    print(f"step {step} loss {loss.item()!r}")
print(f"checksum {sum(p.double().sum().item() for p in model.parameters())!r}")
sys.exit(int(sys.argv[1]))
"""


@pytest.mark.slow
def test_the_command_line_on_a_training_script(tmp_path):
    """``aliasflow trace train.py 3`` prints what ``python train.py 3`` prints (then its
    report: no finding) and exits with the script's status."""
    script = tmp_path / "train.py"
    script.write_text(TRAIN_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1"}

    def run(*command):
        return subprocess.run([sys.executable, *command, script, "3"], capture_output=True,
                              text=True, env=env, cwd=tmp_path, timeout=600)
    plain, traced = run(), run("-m", "aliasflow.cli", "trace")
    assert plain.returncode == traced.returncode == 3, traced.stderr[-2000:]
    lines = plain.stdout.splitlines()
    assert len(lines) == 3 and lines[0].startswith("step 0 loss")
    assert traced.stdout.splitlines()[:3] == lines
    assert "0 finding(s)" in traced.stdout
    assert "AliasflowTraceWarning" not in traced.stderr and "untraced" not in traced.stderr
