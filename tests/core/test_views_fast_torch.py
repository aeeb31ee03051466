"""The cheap import and view paths with PyTorch: DLPack imports of torch slices, and the
tracer's views (made with their names written out later) against torch's own layouts."""
import numpy as np
import pytest

import aliasflow as af

from test_views_fast import assert_same_memory, view_address

torch = pytest.importorskip("torch")


def test_from_dlpack_torch_slices_match_torch():
    t = torch.arange(60, dtype=torch.float32).reshape(6, 10)
    for piece in [t[1:, 3:9:2], t.T[2:5], t[:, 4], t[2:2], t.view(torch.int16)[1:, ::3],
                  t[3:4, 5:6].expand(3, 4)]:
        v = af.from_dlpack(piece)
        arr = np.from_dlpack(piece)  # NumPy's own reading of torch's export
        assert_same_memory(v, arr)
        if piece.numel():
            assert view_address(v) == piece.data_ptr()
            assert v.byte_strides == tuple(s * piece.element_size() if n > 1 else 0
                                           for s, n in zip(piece.stride(), piece.shape))


def test_tracer_views_match_torch_layouts_and_names():
    x = torch.arange(48, dtype=torch.float32).reshape(6, 8)
    with af.trace() as tr:
        y = x[1:, ::2].t()
        z = y * 2
        w = x[::3, 1:4]
        w.add_(1)
        total = z.sum()
    # torch's own layouts of every tensor the ops touched: (address, shape, byte strides)
    torch_side = {(t.data_ptr(), tuple(t.shape), tuple(s * t.element_size() for s in t.stride()))
                  for t in (y, z, w, total)}
    built = tr._build()
    seen = set()
    for refs, info in zip(built.refs, built.infos):
        for ref, slot in zip(refs, info.slots):
            v = slot.view
            if v is None:
                continue
            base = v.tensor.storage.address
            seen.add((base + v.offset, v.shape, v.stride))
            # the same view as the constructor with every check makes, and the same name
            check = af.TensorView(ref.describe(), v.tensor, v.offset, v.shape, v.stride,
                                  dtype=v.dtype)
            assert v == check and v.extent == check.extent and v.name == ref.describe()
            assert v.dtype.itemsize == 4 and base == ref.gen.address   # real addresses
    assert seen == torch_side
