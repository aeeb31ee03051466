"""DLPack in and out, with NumPy and PyTorch: shared memory both ways, refusals, lifetime."""
import gc
import weakref

import numpy as np
import pytest

import aliasflow as af

torch = pytest.importorskip("torch")


def test_numpy_round_trip_shares_memory():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    v = af.from_dlpack(a[:, 1::2])
    assert v.shape == (3, 2) and v.numpy().tolist() == a[:, 1::2].tolist()
    back = np.from_dlpack(v)
    back[0, 0] = -1
    assert a[0, 1] == -1
    v.numpy()[2, 1] = -2
    assert a[2, 3] == -2 and back[2, 1] == -2


def test_torch_round_trip_shares_memory():
    t = torch.arange(20, dtype=torch.float64).reshape(4, 5)
    v = af.from_dlpack(t.t()[1:3])  # a transposed, sliced, non-contiguous tensor
    assert v.shape == (2, 4) and v.numpy().tolist() == t.t()[1:3].tolist()
    v.numpy()[0, 0] = 100.0
    assert t[0, 1].item() == 100.0
    u = torch.from_dlpack(v)
    u[1, 3] = 7.0
    assert t[3, 2].item() == 7.0
    assert u.data_ptr() == v.numpy().__array_interface__["data"][0]


def test_torch_views_alias_like_torch_says():
    base = torch.zeros(64, dtype=torch.float32)
    views = [base[3:40:3], base.view(8, 8).t()[2], base.view(torch.int8)[12:20], base[1:2]]
    imported = [af.from_dlpack(x) for x in views]
    for i in range(len(views)):
        for j in range(len(views)):
            a, b = views[i], views[j]
            # brute force over byte addresses from torch's own metadata
            def footprint(x):
                out = set()
                for k in range(x.numel()):
                    idx = np.unravel_index(k, tuple(x.shape)) if x.dim() else ()
                    off = x.storage_offset() + sum(int(i_) * s for i_, s in zip(idx, x.stride()))
                    start = x.untyped_storage().data_ptr() + off * x.element_size()
                    out.update(range(start, start + x.element_size()))
                return out
            expected = bool(footprint(a) & footprint(b))
            assert af.check_memory_overlap(imported[i], imported[j]) == expected


def test_two_from_numpy_wrappers_of_one_buffer():
    buf = np.zeros(10, np.float32)
    t1, t2 = torch.from_numpy(buf), torch.from_numpy(buf[4:])
    assert t1.untyped_storage().data_ptr() != t2.untyped_storage().data_ptr()
    v1, v2 = af.from_dlpack(t1[:6]), af.from_dlpack(t2[1:])
    assert af.overlap(v1, v2).elements().tolist() == [5]


def test_zero_size_zero_strides_and_scalars():
    z = af.from_dlpack(torch.zeros(0, 3))
    assert z.shape == (0, 3) and torch.from_dlpack(z).shape == (0, 3)
    e = torch.arange(3.0).expand(4, 3)
    v = af.from_dlpack(e)
    assert v.stride == (0, 1) and v.has_internal_overlap()
    assert torch.from_dlpack(v).tolist() == e.tolist()
    s = af.from_dlpack(torch.tensor(5.0))
    assert s.shape == () and s.numpy().item() == 5.0


def test_negative_strides_refused_or_copied():
    a = np.arange(6.0)
    v = af.from_numpy(a[::-1], "rev")
    with pytest.raises(BufferError, match="'rev' has negative strides"):
        torch.from_dlpack(v)
    copied = torch.from_dlpack(v.__dlpack__(copy=True))
    assert copied.tolist() == a[::-1].tolist()
    copied[0] = 99
    assert a[-1] == 5.0  # a copy: the original is untouched


def test_read_only_exports_read_only():
    a = np.arange(4.0)
    a.flags.writeable = False
    v = af.from_numpy(a, "ro")
    assert not np.from_dlpack(v).flags.writeable
    with pytest.raises(BufferError, match="'ro'"):
        v.__dlpack__()  # an unversioned capsule cannot say read-only
    assert not af.from_dlpack(np.from_dlpack(v)).numpy().flags.writeable


def test_virtual_and_other_devices_refused():
    v = af.Tensor.virtual("V", (4,)).view()
    with pytest.raises(BufferError, match="no memory"):
        np.from_dlpack(v)
    w = af.Tensor("W", (4,)).view()
    with pytest.raises(BufferError, match="device"):
        w.__dlpack__(dl_device=(2, 0))
    assert w.__dlpack_device__() == (1, 0)


def test_lifetime_source_deleted_view_still_works():
    t = torch.arange(8.0)
    ref = weakref.ref(t)
    v = af.from_dlpack(t[2:5])
    del t
    gc.collect()
    assert v.numpy().tolist() == [2.0, 3.0, 4.0]
    cap_holder = torch.from_dlpack(v)
    del v
    gc.collect()
    assert cap_holder.tolist() == [2.0, 3.0, 4.0]  # the capsule kept the memory alive
    del cap_holder
    gc.collect()
    assert ref() is None


def test_refusals_name_the_problem():
    with pytest.raises(af.AliasflowError, match="does not export DLPack"):
        af.from_dlpack(object())
    needs_grad = torch.zeros(3, requires_grad=True)
    with pytest.raises(af.AliasflowError, match="cannot be imported"):
        af.from_dlpack(needs_grad)
    with pytest.raises(af.AliasflowError, match="cannot be imported"):
        af.from_dlpack(torch.zeros(3, dtype=torch.bfloat16))


class _Producer:
    """A DLPack producer that cannot export to the host (as a GPU tensor's would)."""

    def __init__(self, device):
        self.device = device

    def __dlpack__(self, **kwargs):
        raise BufferError("cannot export to the host")

    def __dlpack_device__(self):
        if isinstance(self.device, Exception):
            raise self.device
        return self.device


@pytest.mark.parametrize("device, match", [
    ((2, 0), r"_Producer lives on DLPack device type 2; only host"),
    (RuntimeError("no driver"), r"_Producer.__dlpack_device__\(\) failed: no driver"),
    ((1, 0), r"_Producer cannot be imported: cannot export to the host"),
])
def test_from_dlpack_names_the_device_of_what_it_cannot_import(device, match):
    with pytest.raises(af.AliasflowError, match=match):
        af.from_dlpack(_Producer(device))


def test_from_dlpack_of_torch_tensors_keeps_their_memory():
    t = torch.arange(24.0).reshape(4, 6)
    for piece in [t, t[1:, ::2], t.T, t[::2].flip(1)]:
        v = af.from_dlpack(piece)
        arr = piece.numpy()
        assert v.storage.address == np.lib.array_utils.byte_bounds(arr)[0]
        np.testing.assert_array_equal(v.numpy(), arr)
