"""The PyTorch reader (``_reader``, compiled against PyTorch's headers where PyTorch was
installed before aliasflow): the facts it reads of a tensor are the ones its Python accessors
give, it leaves everything else to them, and the compiled per-call path records the same with
it and without it. The oracle is PyTorch's own accessors."""
import pytest

torch = pytest.importorskip("torch")

from hypothesis import given, settings, strategies as st  # noqa: E402

from aliasflow.interop.torch_trace import tracer  # noqa: E402
from aliasflow.solver.native import load  # noqa: E402

_reader = load("aliasflow.interop.torch_trace._reader")
needs_reader = pytest.mark.skipif(
    _reader is None or tracer._hot is None,
    reason="the PyTorch reader is built only where PyTorch is installed before aliasflow")


def accessors(t):
    s = t.untyped_storage()
    return (torch._C._storage_address(t), t.data_ptr(), s.data_ptr(), s.nbytes(), t._cdata,
            t.shape, t.stride(), t.dtype)


DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
          torch.uint8, torch.int64, torch.bool, torch.complex64]


@st.composite
def views(draw):
    """A view of a fresh tensor: sliced with steps, transposed, expanded, or a 0-dim or empty
    one, of any dtype."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.lists(st.integers(0, 5), min_size=0, max_size=3))
    base = torch.zeros(shape, dtype=dtype)
    t = base
    for d in range(t.dim()):
        start = draw(st.integers(0, max(t.shape[d] - 1, 0)))
        step = draw(st.integers(1, 3))
        t = t.narrow(d, min(start, t.shape[d]), max(t.shape[d] - start, 0))[
            (slice(None),) * d + (slice(None, None, step),)]
    if t.dim() >= 2 and draw(st.booleans()):
        t = t.transpose(0, 1)
    if draw(st.booleans()):
        t = t.unsqueeze(0).expand(draw(st.integers(1, 3)), *t.shape)
    if draw(st.booleans()) and t.is_floating_point():
        t = torch.nn.Parameter(t.detach().clone()) if draw(st.booleans()) else t
    return t


@needs_reader
@settings(max_examples=200, deadline=None)
@given(views())
def test_facts_are_the_accessors(t):
    assert _reader.facts(t) == accessors(t)
    assert type(_reader.facts(t)[5]) is torch.Size


@needs_reader
def test_what_it_does_not_read_is_left_to_the_accessors():
    assert _reader.TORCH_VERSION == torch.__version__
    bit_views = [torch.randn(2, 2, dtype=torch.complex64).conj(),
                 torch._neg_view(torch.ones(3))]
    for t in bit_views:   # (their facts are the base's; the bits are read apart)
        assert t.is_conj() or t.is_neg()
        assert _reader.facts(t) == accessors(t)
    left = [torch.ones(2, device="meta"),
            torch.ones(3).to_sparse(),
            torch._lazy_clone(torch.ones(3)),   # copy-on-write: data_ptr() gives it memory
            1.5, None, "tensor"]
    for t in left:
        assert _reader.facts(t) is None, t


@needs_reader
def test_the_compiled_path_records_the_same_with_and_without_the_reader():
    """The odd cases and a training step (backward calls: the node a backward pass runs,
    read where autograd keeps it), compiled with the reader and with the accessors, each
    against the reference."""
    from test_hot_path import mlp, odd_cases, same_records, seeded
    keep = []
    assert tracer._hot.reader_in_use()
    for make in (odd_cases, lambda: seeded(mlp, keep)):
        fast, _ = same_records(make)          # compiled with the reader vs the reference
        tracer._hot.use_reader(None)
        try:
            same_records(make)                # compiled with the accessors vs the reference
        finally:
            tracer._install_reader()
        assert tracer._hot.reader_in_use()
    assert any(c.node is not None for c in fast.calls)   # (the step's backward calls)


@needs_reader
def test_a_reader_built_for_another_pytorch_is_not_used(monkeypatch):
    tracer._hot.use_reader(None)
    monkeypatch.setattr(_reader, "TORCH_VERSION", "0.0.0")
    try:
        tracer._install_reader()
        assert not tracer._hot.reader_in_use()
    finally:
        monkeypatch.undo()
        tracer._install_reader()
    assert tracer._hot.reader_in_use()


@needs_reader
def test_bad_capsules_are_refused():
    with pytest.raises(TypeError, match="expected the reader's capsule or None, got object"):
        tracer._hot.use_reader(object())
    import ctypes
    other = ctypes.pythonapi.PyCapsule_New
    other.restype = ctypes.py_object
    other.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    with pytest.raises(ValueError, match="PyCapsule_GetPointer called with incorrect name"):
        tracer._hot.use_reader(other(id(other), b"some.other.API", None))
    assert tracer._hot.reader_in_use()   # (a refused capsule leaves the reader as it was)
