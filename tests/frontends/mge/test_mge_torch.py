"""alias semantics against PyTorch, which writes through views the same way: the seed's four
exercises and random in-place programs on views give the same values."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from aliasflow import mge  # noqa: E402
from aliasflow.mge import functional as F  # noqa: E402


def run(lib, i):
    make = (lambda v: mge.tensor(v)) if lib == "mge" else (lambda v: torch.tensor(v))
    a = make([1, 2])
    if i == 0:
        b = a
        b += 1
        return a
    if i == 1:
        b = a
        b = b + 1
        return a
    if i == 2:
        b = a[0]
        b += 1
        return a
    b = a
    a[0] += 1
    return b


@pytest.mark.parametrize("i", range(4))
def test_exercises_match_pytorch_in_alias_mode(i):
    with mge.config(semantics="alias"):
        ours = run("mge", i).numpy().tolist()
    assert ours == run("torch", i).tolist()


def test_views_and_writes_match_pytorch():
    with mge.config(semantics="alias"):
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        a, ta = mge.tensor(x), torch.tensor(x)
        b, tb = a[1:, ::2], ta[1:, ::2]
        c, tc = F.transpose(a), ta.t()
        b *= 3
        tb *= 3
        c[0] = c[1] + 1
        tc[0] = tc[1] + 1
        d, td = a.reshape(2, 6), ta.reshape(2, 6)
        d -= 2
        td -= 2
        for ours, theirs in [(a, ta), (b, tb), (c, tc), (d, td)]:
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
