"""Machinery around a model, from PyTorch's own library code: DistributedDataParallel (one
gloo process; gradients as views of its buckets), a DataLoader with worker processes, torch.func per-sample gradients (vmap
over grad), quantization-aware training (fake-quantize ops updating observer buffers),
a complex-valued spectral layer (FFT, view_as_real), torch.compile with the eager
backend, and a sparse embedding with SparseAdam. ``RUNTIME[name]() -> Training``."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from training import Training
from zoo_idioms import _classify, _data, _mlp
from zoo_text import OPTIMIZERS, step_of


def one_process_group():
    """A gloo process group of this process alone (an in-memory store: no network)."""
    import torch.distributed as dist
    if not dist.is_initialized():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)


def ddp(bucket_views=False):
    """DistributedDataParallel with small buckets (several all-reduces a step);
    ``bucket_views``: the gradients are views of the buckets."""
    one_process_group()
    model = nn.parallel.DistributedDataParallel(
        _mlp(inplace=False), gradient_as_bucket_view=bucket_views, bucket_cap_mb=1e-4)
    return _classify(model, *_data(), "adamw_foreach")


def ddp_bucket_views():
    return ddp(bucket_views=True)


def per_sample_grads():
    from torch.func import functional_call, grad, vmap
    model, (x, y) = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4)), _data()

    def loss_one(params, xi, yi):
        out = functional_call(model, params, (xi[None],))
        return F.cross_entropy(out, yi[None])

    def step():
        params = {k: v.detach() for k, v in model.named_parameters()}
        per = vmap(grad(loss_one), in_dims=(None, 0, 0))(params, x, y)
        with torch.no_grad():
            for k, p in model.named_parameters():   # DP-SGD: clip each sample, average
                g = per[k]
                norms = g.flatten(1).norm(dim=1).clamp(min=1.0)
                p.sub_(0.1 * (g / norms.view(-1, *[1] * (g.dim() - 1))).mean(0))
        return F.cross_entropy(model(x), y).detach()
    return Training(model, None, step)


def qat():
    from torch.ao.quantization import get_default_qat_qconfig, prepare_qat
    model = nn.Sequential(torch.ao.quantization.QuantStub(), nn.Linear(8, 16), nn.ReLU(),
                          nn.Linear(16, 4), torch.ao.quantization.DeQuantStub())
    model.qconfig = get_default_qat_qconfig("x86")
    model.train()
    model = prepare_qat(model)
    return _classify(model, *_data(), "sgd_nesterov")


class Spectral(nn.Module):
    """A Fourier-neural-operator layer: complex weights on the lowest modes."""
    def __init__(self, width=8, modes=4):
        super().__init__()
        self.w = nn.Parameter(torch.randn(width, width, modes, dtype=torch.cfloat) / width)
        self.modes = modes
        self.lift, self.head = nn.Linear(1, width), nn.Linear(width, 1)

    def forward(self, x):                        # x: (batch, points, 1)
        h = self.lift(x).transpose(1, 2)         # (batch, width, points)
        f = torch.fft.rfft(h)
        out = torch.zeros_like(f)
        out[..., :self.modes] = torch.einsum("bim,iom->bom", f[..., :self.modes], self.w)
        h = h + torch.fft.irfft(out, n=h.shape[-1])
        return self.head(F.gelu(h).transpose(1, 2))


def fourier_operator():
    model, x = Spectral(), torch.randn(2, 16, 1)
    target = torch.view_as_real(torch.fft.rfft(x.squeeze(-1))).sum(-1)
    opt = OPTIMIZERS["adamw"](model.parameters())
    return Training(model, opt, step_of(model, opt, lambda: F.mse_loss(
        torch.view_as_real(torch.fft.rfft(model(x).squeeze(-1))).sum(-1), target)))


def compiled_eager():
    model, (x, y) = _mlp(inplace=False), _data()
    compiled = torch.compile(model, backend="eager")
    opt = OPTIMIZERS["adamw"](model.parameters())
    return Training(model, opt, step_of(model, opt,
                                        lambda: F.cross_entropy(compiled(x), y)))


def sparse_embedding():
    emb, head = nn.Embedding(30, 8, sparse=True), nn.Linear(8, 4)
    model = nn.ModuleDict({"emb": emb, "head": head})
    ids, y = torch.randint(0, 30, (6, 3)), torch.randint(0, 4, (6,))
    sparse, dense = torch.optim.SparseAdam([emb.weight]), torch.optim.Adam(head.parameters())

    def step():
        loss = F.cross_entropy(head(emb(ids).mean(1)), y)
        sparse.zero_grad()
        dense.zero_grad()
        loss.backward()
        sparse.step()
        dense.step()
        return loss.detach()
    return Training(model, dense, step)


def data_loader_workers():
    """Batches from two worker processes (shared memory the trace first sees when read),
    an epoch per step."""
    model = _mlp(inplace=False)
    data = torch.utils.data.TensorDataset(torch.randn(16, 8), torch.randint(0, 4, (16,)))
    loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True, num_workers=2,
                                         generator=torch.Generator().manual_seed(0))
    opt = OPTIMIZERS["adamw"](model.parameters())

    def step():
        total = torch.zeros(())
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total = total + loss.detach()
        return total
    return Training(model, opt, step)


RUNTIME = {f.__name__: f for f in [ddp, ddp_bucket_views, data_loader_workers, per_sample_grads, qat, fourier_operator,
                                   compiled_eager, sparse_embedding]}
