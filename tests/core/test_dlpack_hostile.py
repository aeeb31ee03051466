"""Issue 28: DLPack export arguments, producers that lie or fail, PyTorch's lazy negation and
conjugation bits, and overlap questions about arrays that only forward their memory."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import aliasflow as af

torch = pytest.importorskip("torch")

GARBAGE = st.one_of(st.none(), st.integers(-2**70, 2**70), st.booleans(), st.text(max_size=3),
                    st.floats(allow_nan=True), st.tuples(st.integers(-3, 3)),
                    st.tuples(st.integers(-2**70, 2**70), st.integers(-2**70, 2**70)),
                    st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)),
                    st.lists(st.integers(0, 2), max_size=3), st.just((1.0, 0)))


@settings(max_examples=150, deadline=None)
@given(dl_device=GARBAGE, max_version=GARBAGE, stream=GARBAGE, copy=GARBAGE,
       pick=st.integers(0, 3))
def test_dlpack_export_reads_back_exactly_or_refuses_with_a_buffer_error(
        dl_device, max_version, stream, copy, pick):
    t = af.Tensor("A", (3, 4), "int16", data=np.arange(12).reshape(3, 4))
    v = [t[:], t[1:, ::2], t.T, t[::-1]][pick]
    try:
        cap = v.__dlpack__(dl_device=dl_device, max_version=max_version, stream=stream,
                           copy=copy)
    except BufferError as exc:
        assert isinstance(exc, af.AliasflowError) and "'A" in str(exc)
        return

    class Holder:
        def __dlpack__(self, **_):
            return cap

        def __dlpack_device__(self):
            return (1, 0)
    np.testing.assert_array_equal(np.from_dlpack(Holder()), v.numpy())
    # only what the protocol allows got through
    assert dl_device is None or tuple(dl_device) == (1, 0)
    assert stream is None and (copy is None or isinstance(copy, bool))


def test_dlpack_export_names_a_device_that_is_not_a_pair():
    v = af.Tensor("A", (4,))[:]
    with pytest.raises(BufferError, match=r"dl_device must be a \(device type, device id\) "
                                          r"pair of ints, got 5"):
        v.__dlpack__(dl_device=5)
    assert torch.from_dlpack(v).tolist() == [0.0] * 4      # consumers still read it


def test_negative_and_conjugate_bits_are_refused_not_read_with_the_wrong_sign():
    z = torch.tensor([1 + 2j, 3 - 4j])
    for lazy, fix in [(z.conj().imag, "resolve_neg"), (z.conj(), "resolve_conj"),
                      ((-z).imag, None), (z.imag, None)]:
        if fix is None:  # no lazy bit: imported as it is, values as PyTorch reads them
            np.testing.assert_array_equal(af.from_dlpack(lazy).numpy(), lazy.numpy())
            continue
        with pytest.raises(af.AliasflowError, match=rf"bit set .*x\.{fix}\(\)"):
            af.from_dlpack(lazy)
        resolved = getattr(lazy, fix)()
        np.testing.assert_array_equal(af.from_dlpack(resolved).numpy(), resolved.numpy())


class _Liar:
    def __init__(self, dlpack, device=lambda: (1, 0)):
        self._dlpack, self._device = dlpack, device

    def __dlpack__(self, **kw):
        return self._dlpack(**kw)

    def __dlpack_device__(self):
        return self._device()


def _raise(exc):
    def go(**_):
        raise exc
    return go


@pytest.mark.parametrize("producer", [
    _Liar(lambda **kw: None), _Liar(lambda **kw: b"not a capsule"),
    _Liar(_raise(ZeroDivisionError("zero"))), _Liar(_raise(KeyError("k"))),
    _Liar(_raise(RecursionError())), _Liar(_raise(MemoryError())),
    _Liar(_raise(BufferError("no")), lambda: 1 / 0),
    _Liar(_raise(BufferError("no")), lambda: None)], ids=str)
def test_producers_that_fail_or_lie_are_refused_cleanly(producer):
    with pytest.raises(af.AliasflowError, match="from_dlpack: _Liar"):
        af.from_dlpack(producer)


def test_a_used_capsule_is_refused():
    real = torch.arange(6.0)
    cap = real.__dlpack__()
    np.from_dlpack(_Liar(lambda **kw: cap))
    with pytest.raises(af.AliasflowError, match="cannot be imported"):
        af.from_dlpack(_Liar(lambda **kw: cap))


class _Forward:
    """As NumPy's overlap suite's MyArray: only ``__array_interface__``."""

    def __init__(self, data):
        self.data = data

    @property
    def __array_interface__(self):
        return self.data.__array_interface__


class _Convert:
    """As its MyArray2: only ``__array__``."""

    def __init__(self, data):
        self.data = data

    def __array__(self, dtype=None, copy=None):
        return self.data


@pytest.mark.parametrize("cls", [_Forward, _Convert, np.asarray])
def test_overlap_questions_take_arrays_by_address_as_numpy_does(cls):
    x = np.arange(5)
    for a, b in [(x[::2], x[1::2]), (x[1::3], x[::2]), (x[:3], x[2:]), (x[:0], x)]:
        assert af.check_memory_overlap(cls(a), b) == np.shares_memory(a, b, max_work=-1)
        assert af.overlap(cls(a), af.from_numpy(b)).count == len(
            set(range(5))
            & {(a.ctypes.data - x.ctypes.data) // 8 + i * a.strides[0] // 8
               for i in range(a.size)}
            & {(b.ctypes.data - x.ctypes.data) // 8 + i * b.strides[0] // 8
               for i in range(b.size)})
    with pytest.raises(af.AliasflowError, match="expected a TensorView, a Tensor or an array"):
        af.overlap(3, x)
