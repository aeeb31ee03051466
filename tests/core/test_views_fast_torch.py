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
        x[::3, 1:4].add_(1)
        z.sum()
    built = tr._build()
    seen = 0
    for refs, info in zip(built.refs, built.infos):
        for ref, slot in zip(refs, info.slots):
            v = slot.view
            if v is None:
                continue
            seen += 1
            start, shape, stride = ref.byte_layout()
            # the same view as the constructor with every check makes, and the same name
            base = v.tensor.storage.address
            check = af.TensorView(ref.describe(), v.tensor, start - base, shape, stride)
            assert v == check and v.extent == check.extent and v.name == ref.describe()
            # the bytes it covers are those torch's sizes and strides reach
            lo = ref.start + sum(s * (n - 1) for n, s in zip(ref.sizes, ref.strides) if s < 0
                                 ) * ref.itemsize
            hi = ref.start + sum(s * (n - 1) for n, s in zip(ref.sizes, ref.strides) if s > 0
                                 ) * ref.itemsize + ref.itemsize
            assert (v.extent[0] + base, v.extent[1] + base + 1) == (lo, hi)
            assert base == ref.gen.address            # views sit at their real addresses
    assert seen >= 5
