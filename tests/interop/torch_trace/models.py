"""Real models nobody here wrote, one training step each (``make(name) -> (model, step)``):
transformers' GPT-2, Llama and BERT with tiny random configs and AdamW (no downloads),
torchvision's resnet18 with SGD momentum and BatchNorm, an LSTM+GRU with Adam and gradient
clipping, and an MLP with in-place ReLUs and a fused or foreach Adam."""
import importlib.util
import os
import sys
import types

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _torchvision_models():
    """``torchvision.models``; where torchvision's compiled ops cannot load (a CUDA wheel
    beside a CPU torch), the package is entered without its op registrations, which the
    models do not use."""
    try:
        import torchvision
        return torchvision.models
    except (ImportError, RuntimeError, OSError):
        for name in [n for n in sys.modules if n == "torchvision" or
                     n.startswith("torchvision.")]:
            del sys.modules[name]
        spec = importlib.util.find_spec("torchvision")
        pkg = types.ModuleType("torchvision")
        pkg.__path__ = list(spec.submodule_search_locations)
        pkg.__spec__ = spec
        sys.modules["torchvision"] = pkg
        import torchvision.models
        return torchvision.models


TORCHVISION_MODELS = _torchvision_models()   # before transformers, which imports torchvision


def _lm(model, vocab, labels_fn=None):
    ids = torch.randint(0, vocab, (2, 12))
    labels = labels_fn(ids) if labels_fn else ids
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        out = model(input_ids=ids, labels=labels)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        return out.loss.detach()
    return model, step


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=100, n_positions=32,
                     bos_token_id=0, eos_token_id=0)
    return _lm(GPT2LMHeadModel(cfg), 100)


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, vocab_size=100,
                      max_position_embeddings=64, bos_token_id=0, eos_token_id=0)
    return _lm(LlamaForCausalLM(cfg), 100)


def bert():
    from transformers import BertConfig, BertForMaskedLM

    def masked(ids):
        labels = ids.clone()
        labels[:, ::3] = -100
        return labels
    cfg = BertConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                     num_attention_heads=4, vocab_size=100, max_position_embeddings=64)
    return _lm(BertForMaskedLM(cfg), 100, masked)


def resnet():
    model = TORCHVISION_MODELS.resnet18(num_classes=10)
    x, y = torch.randn(2, 3, 32, 32), torch.randint(0, 10, (2,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()
    return model, step


class _Recurrent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(8, 16, batch_first=True)
        self.gru = torch.nn.GRU(16, 16, batch_first=True)
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        h, _ = self.lstm(x)
        h, _ = self.gru(h)
        return self.head(h[:, -1])


def rnn():
    model = _Recurrent()
    x, y = torch.randn(3, 5, 8), torch.randint(0, 4, (3,))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step():
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.detach()
    return model, step


def mlp(kind):
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(inplace=True),
                                torch.nn.Linear(32, 32), torch.nn.ReLU(inplace=True),
                                torch.nn.Linear(32, 4))
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, **{kind: True})

    def step():
        h = model(x)
        h += 0.5
        h.relu_()
        loss = (h - y).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()
    return model, step


MODELS = {"gpt2": gpt2, "llama": llama, "bert": bert, "resnet18": resnet, "lstm_gru": rnn,
          "mlp_fused": lambda: mlp("fused"), "mlp_foreach": lambda: mlp("foreach")}


def make(name, seed=0):
    torch.manual_seed(seed)
    return MODELS[name]()
