"""Training idioms from PyTorch's own library code, each on a small model built from
``torch.nn`` parts: activation checkpointing (reentrant and not), gradient scaling under
float16 autocast, an EMA of the weights, learning-rate schedules, gradient accumulation over
micro-batches, in-place activations and dropout, Embedding(max_norm) renormalising its
weight in place during forward, spectral and weight norm, pruning masks, packed sequences,
nn.Transformer, a gradient penalty (double backward), LBFGS, a custom autograd Function
that marks its input dirty, a gradient hook, anomaly detection, bfloat16 weights, module
hooks, optimizer steps inside backward. ``IDIOMS[name]() -> Training``."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from training import Training
from zoo_text import OPTIMIZERS, step_of


def _mlp(width=16, out=4, inplace=True):
    return nn.Sequential(nn.Linear(8, width), nn.ReLU(inplace=inplace),
                         nn.Linear(width, width), nn.Hardswish(inplace=inplace),
                         nn.Dropout(0.2, inplace=inplace), nn.Linear(width, out))


def _classify(model, x, y, optimizer="adamw", **kw):
    opt = OPTIMIZERS[optimizer](model.parameters())
    model.train()
    return Training(model, opt, step_of(model, opt, lambda: F.cross_entropy(model(x), y),
                                        **kw))


def _data(n=6, features=8, classes=4):
    return torch.randn(n, features), torch.randint(0, classes, (n,))


class Checkpointed(nn.Module):
    def __init__(self, reentrant):
        super().__init__()
        self.a, self.b, self.head = _mlp(16, 8), _mlp(16, 8), nn.Linear(8, 4)
        self.reentrant = reentrant

    def forward(self, x):
        h = checkpoint(self.a, x, use_reentrant=self.reentrant)
        h = checkpoint(self.b, h, use_reentrant=self.reentrant)
        return self.head(h)


def checkpoint_reentrant():
    x, y = _data()
    return _classify(Checkpointed(True), x.requires_grad_(), y, "sgd_nesterov")


def checkpoint_non_reentrant():
    return _classify(Checkpointed(False), *_data(), "adamw_foreach", clip="norm")


def grad_scaler_float16():
    model, (x, y) = _mlp(), _data()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=1)

    def step():
        with torch.autocast("cpu", dtype=torch.float16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        scaler.step(opt)
        scaler.update()
        return loss.detach()
    return Training(model, opt, step)


class _WithEMA(nn.Module):
    """The model and its exponential moving average (both in the compared state)."""
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.ema = torch.optim.swa_utils.AveragedModel(
            model, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(0.9))


def ema_and_one_cycle():
    inner, (x, y) = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.GELU(),
                                  nn.Linear(16, 4)), _data()
    both = _WithEMA(inner)
    opt = torch.optim.SGD(inner.parameters(), lr=0.1, momentum=0.9, foreach=True)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10)

    def step():
        loss = F.cross_entropy(inner(x), y)
        opt.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()
        sched.step()
        both.ema.update_parameters(inner)
        return loss.detach()
    return Training(both, opt, step)


def accumulate_micro_batches():
    model, (x, y) = _mlp(inplace=False), _data(8)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)

    def step():
        opt.zero_grad()
        total = 0
        for xs, ys in zip(x.chunk(4), y.chunk(4)):
            loss = F.cross_entropy(model(xs), ys) / 4
            loss.backward()
            total = total + loss.detach()
        opt.step()
        return total
    return Training(model, opt, step)


class EmbeddingBag(nn.Module):
    """Embedding(max_norm) renormalises the rows it looks up in place, in forward."""
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8, max_norm=1.0)
        self.bag = nn.EmbeddingBag(20, 8, mode="mean")
        self.head = nn.Linear(16, 4)

    def forward(self, ids):
        return self.head(torch.cat([self.emb(ids).mean(1), self.bag(ids)], 1))


def embedding_max_norm():
    ids = torch.randint(0, 20, (6, 5))
    return _classify(EmbeddingBag(), ids, torch.randint(0, 4, (6,)), "rmsprop")


def spectral_and_weight_norm():
    sn = nn.utils.parametrizations.spectral_norm   # power iteration: buffers in place
    wn = nn.utils.parametrizations.weight_norm
    model = nn.Sequential(sn(nn.Linear(8, 16)), nn.LeakyReLU(0.1, inplace=True),
                          wn(nn.Linear(16, 16)), nn.ELU(inplace=True), nn.Linear(16, 4))
    return _classify(model, *_data(), "adamw")


def pruned():
    import torch.nn.utils.prune as prune
    model = _mlp(inplace=False)
    prune.l1_unstructured(model[0], "weight", amount=0.5)
    prune.random_structured(model[2], "weight", amount=0.25, dim=0)
    return _classify(model, *_data(), "sgd_fused")


class PackedGRU(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 16, num_layers=2, bidirectional=True, dropout=0.2,
                          batch_first=True)
        self.head = nn.Linear(32, 4)

    def forward(self, x, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True,
                                                   enforce_sorted=False)
        out, _ = self.gru(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
        return self.head(out.sum(1))


def packed_gru():
    model, x = PackedGRU(), torch.randn(4, 7, 8)
    lengths, y = torch.tensor([7, 3, 5, 2]), torch.randint(0, 4, (4,))
    opt = OPTIMIZERS["adam_amsgrad"](model.parameters())
    model.train()
    return Training(model, opt, step_of(
        model, opt, lambda: F.cross_entropy(model(x, lengths), y), "norm"))


def transformer():
    model = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=1,
                           dim_feedforward=32, dropout=0.1, batch_first=True, norm_first=True)
    src, tgt = torch.randn(2, 6, 16), torch.randn(2, 5, 16)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    pad = torch.tensor([[False] * 5 + [True], [False] * 6])
    opt = OPTIMIZERS["adamw_fused"](model.parameters())
    model.train()
    return Training(model, opt, step_of(model, opt, lambda: model(
        src, tgt, tgt_mask=mask, src_key_padding_mask=pad, tgt_is_causal=True).square().mean()))


def gradient_penalty():
    critic, (x, _) = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)), _data()
    opt = torch.optim.Adam(critic.parameters(), lr=1e-3, betas=(0.5, 0.9), foreach=True)

    def step():
        real, fake = x[:3], x[3:]
        eps = torch.rand(3, 1)
        mix = (eps * real + (1 - eps) * fake).requires_grad_()
        (g,) = torch.autograd.grad(critic(mix).sum(), mix, create_graph=True)
        loss = critic(fake).mean() - critic(real).mean() + \
            10 * ((g.norm(2, dim=1) - 1) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()
    return Training(critic, opt, step)


def lbfgs():
    model, (x, y) = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 4)), _data()
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4, history_size=3,
                            line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss
    return Training(model, opt, lambda: opt.step(closure).detach())


class _ScaleInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, s):
        ctx.mark_dirty(x)
        return x.mul_(s)

    @staticmethod
    def backward(ctx, grad):
        return grad * 2.0, None


class Dirty(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 4)
        self.a.weight.register_hook(lambda g: g.clamp_(-0.1, 0.1))   # edits its grad in place

    def forward(self, x):
        return self.b(_ScaleInPlace.apply(self.a(x), 2.0))


def custom_function_dirty():
    return _classify(Dirty(), *_data(), "nadam", clip="value")


def anomaly_detection():
    run = _classify(_mlp(), *_data(), "adamw")

    def step():
        with torch.autograd.detect_anomaly(check_nan=True):
            return run.step()
    return Training(run.model, run.optimizer, step)


def bfloat16_weights():
    x, y = _data()
    return _classify(_mlp(inplace=False).to(torch.bfloat16), x.to(torch.bfloat16), y,
                     "adamw_fused")


def module_hooks():
    """A forward hook that edits the output in place, full backward (pre-)hooks."""
    model = _mlp(inplace=False)
    model[0].register_forward_hook(lambda mod, args, out: out.mul_(0.5))
    model[2].register_full_backward_hook(lambda mod, grad_in, grad_out: (grad_in[0] * 0.9,))
    model[1].register_full_backward_pre_hook(lambda mod, grad_out: None)
    return _classify(model, *_data(), "adamw")


def optimizer_in_backward():
    """Each parameter stepped by its own optimizer from a post-accumulate-grad hook, while
    backward goes on (PyTorch's memory-saving recipe)."""
    model, (x, y) = _mlp(inplace=False), _data()
    opts = {p: torch.optim.Adam([p], lr=1e-3) for p in model.parameters()}

    def hook(p):
        opts[p].step()
        opts[p].zero_grad()
    for p in model.parameters():
        p.register_post_accumulate_grad_hook(hook)

    def step():
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss.detach()
    return Training(model, None, step)


IDIOMS = {f.__name__: f for f in [
    checkpoint_reentrant, checkpoint_non_reentrant, grad_scaler_float16, ema_and_one_cycle,
    accumulate_micro_batches, embedding_max_norm, spectral_and_weight_norm, pruned,
    packed_gru, transformer, gradient_penalty, lbfgs, custom_function_dirty,
    anomaly_detection, bfloat16_weights, module_hooks, optimizer_in_backward]}
