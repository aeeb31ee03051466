"""Every entry of the schema reader's exception tables, with the program that proves it.

The schema says which arguments an op may mutate and which it returns as views; the tables
(``aliasflow.interop.torch_trace.schema``) say what it does not. Each claim is checked here
on real tensors, independently of the tracer: a write-only argument's old values never reach
the result; a metadata-only mutation changes no byte; a no-read argument's values never reach
the result; an unannotated write changes bytes; an unannotated view shares memory; an
elementwise op's element i depends on input element i alone; a random op without a Generator
argument draws from the default one. A table entry without a proof here fails the test.
"""
import pytest

torch = pytest.importorskip("torch")

from aliasflow.interop.torch_trace import schema as S  # noqa: E402

aten = torch.ops.aten
NAN = float("nan")


def same(a, b):
    return a.shape == b.shape and bool(((a == b) | (a.isnan() & b.isnan())).all())


def poisoned(t):
    return torch.full_like(t, NAN)


# ---- write-only: the mutated argument's old values never reach the result ----------------
def _seeded(fn):
    def run(x):
        torch.manual_seed(0)
        return fn(x)
    return run


WRITE_ONLY = {
    "copy_": lambda x: x.copy_(torch.arange(4.)),
    "fill_": lambda x: x.fill_(3.0),
    "zero_": lambda x: x.zero_(),
    "normal_": _seeded(lambda x: x.normal_()),
    "uniform_": _seeded(lambda x: x.uniform_()),
    "random_": _seeded(lambda x: x.random_(0, 10)),
    "bernoulli_": _seeded(lambda x: x.bernoulli_(0.5)),
    "exponential_": _seeded(lambda x: x.exponential_()),
    "geometric_": _seeded(lambda x: x.geometric_(0.5)),
    "cauchy_": _seeded(lambda x: x.cauchy_()),
    "log_normal_": _seeded(lambda x: x.log_normal_()),
}


@pytest.mark.parametrize("base", sorted(S.WRITE_ONLY))
def test_write_only(base):
    assert base in WRITE_ONLY, f"no proof for WRITE_ONLY entry {base!r}"
    run = WRITE_ONLY[base]
    clean, dirty = torch.ones(4), poisoned(torch.ones(4))
    run(clean)
    run(dirty)
    assert same(clean, dirty)          # the old (NaN) values did not matter


# ---- metadata only: no byte of the storage changes --------------------------------------
METADATA_ONLY = {
    "t_": lambda x: x.t_(), "transpose_": lambda x: x.transpose_(0, 1),
    "swapdims_": lambda x: x.swapdims_(0, 1), "swapaxes_": lambda x: x.swapaxes_(0, 1),
    "squeeze_": lambda x: x.unsqueeze_(0).squeeze_(0),
    "unsqueeze_": lambda x: x.unsqueeze_(0),
    "as_strided_": lambda x: x.as_strided_((2,), (1,)),
    "set_": lambda x: x.set_(x.untyped_storage(), 0, (2,), (1,)),
    "resize_": lambda x: x.resize_(2), "resize_as_": lambda x: x.resize_as_(torch.ones(3)),
    "detach_": lambda x: x.detach_(), "requires_grad_": lambda x: x.requires_grad_(True),
    "_set_conj": lambda x: None, "_set_neg": lambda x: None,
    "unsafe_split": lambda x: x.reshape(-1).unsafe_split(2),
    "unsafe_split_with_sizes": lambda x: x.reshape(-1).unsafe_split_with_sizes([1, 3]),
    "unsafe_chunk": lambda x: x.reshape(-1).unsafe_chunk(2),
}
NOT_ON_DENSE_CPU = {"_coalesced_", "retain_grad", "resize_as_sparse_", "sparse_resize_",
                    "sparse_resize_and_clear_", "_sparse_coo_tensor_with_dims_and_tensors"}


@pytest.mark.parametrize("base", sorted(S.METADATA_ONLY))
def test_metadata_only(base):
    if base in NOT_ON_DENSE_CPU:
        # sparse layouts are untracked; retain_grad is not an aten call on dense tensors
        assert base.startswith(("_coalesced", "retain", "sparse", "resize_as_sparse",
                                "_sparse"))
        return
    assert base in METADATA_ONLY, f"no proof for METADATA_ONLY entry {base!r}"
    x = torch.arange(4.).reshape(2, 2).clone()   # a base tensor (detach_ refuses views)
    before = torch.empty(0, dtype=torch.uint8).set_(x.untyped_storage()).clone()
    METADATA_ONLY[base](x)
    after = torch.empty(0, dtype=torch.uint8).set_(x.untyped_storage())
    assert torch.equal(before, after[:before.numel()])


# ---- no read: the argument's values never reach the result ------------------------------
NO_READ = {
    "empty_like": None, "zeros_like": lambda x: torch.zeros_like(x),
    "ones_like": lambda x: torch.ones_like(x), "full_like": lambda x: torch.full_like(x, 2.),
    "rand_like": _seeded(lambda x: torch.rand_like(x)),
    "randn_like": _seeded(lambda x: torch.randn_like(x)),
    "randint_like": _seeded(lambda x: torch.randint_like(x, 5)),
    "new_empty": None, "new_empty_strided": None, "empty_strided": None,
    "_empty_affine_quantized": None, "resize_output": None,
    "new_zeros": lambda x: x.new_zeros(3), "new_ones": lambda x: x.new_ones(3),
    "new_full": lambda x: x.new_full((3,), 2.),
    "_shape_as_tensor": lambda x: aten._shape_as_tensor(x),
    "_unsafe_view": lambda x: aten._unsafe_view(x, (4,)).untyped_storage().data_ptr()
    - x.untyped_storage().data_ptr(),
    "is_same_size": lambda x: x.is_same_size(torch.ones(2, 2)),
    "is_set_to": lambda x: x.is_set_to(x), "result_type": lambda x: torch.result_type(x, 1),
    # the very tensor (same object: no data of it read into anything new)
    "wait_tensor": lambda x: torch.ops._c10d_functional.wait_tensor(x) is x,
}
QUERIES = {"size", "stride", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset",
           "dim", "numel", "_has_compatible_shallow_copy_type", "is_complex",
           "is_floating_point", "storage_offset", "is_nonzero_",
           "can_cast", "promote_types", "_version", "is_conj", "is_neg", "is_inference",
           "_is_zerotensor", "output_nr", "data_ptr"}


@pytest.mark.parametrize("base", sorted(S.NO_READ))
def test_no_read(base):
    if base in QUERIES:                        # metadata queries: they return no tensor
        schema = getattr(aten, base, None)
        assert schema is None or all("Tensor" not in str(r.type)
                                     for op in [getattr(schema, o) for o in schema.overloads()]
                                     for r in op._schema.returns)
        return
    assert base in NO_READ, f"no proof for NO_READ entry {base!r}"
    run = NO_READ[base]
    if run is None:   # uninitialized results: nothing of the argument's values reaches them
        assert base in S.UNINITIALIZED or base == "resize_output"
        return
    clean, dirty = run(torch.ones(2, 2)), run(poisoned(torch.ones(2, 2)))
    if isinstance(clean, torch.Tensor):
        assert same(clean, dirty)
    else:
        assert clean == dirty


# ---- unannotated writes and views --------------------------------------------------------
def test_unannotated_writes_change_bytes_when_switched_on():
    assert set(S.UNANNOTATED_WRITES) == {"native_batch_norm", "batch_norm_update_stats"}
    x = torch.randn(4, 3)
    for training in (True, False):
        mean, var = torch.zeros(3), torch.ones(3)
        aten.native_batch_norm(x, None, None, mean, var, training, 0.1, 1e-5)
        assert bool((mean != 0).any()) == training
    mean, var = torch.zeros(3), torch.ones(3)
    aten.batch_norm_update_stats(x, mean, var, 0.1)
    assert bool((mean != 0).any())


@pytest.mark.parametrize("base", sorted(S.UNANNOTATED_VIEWS))
def test_unannotated_views_share_memory(base):
    x = torch.arange(6.)
    out = {"_unsafe_view": lambda: [aten._unsafe_view(x, (2, 3))],
           "unsafe_split": lambda: x.unsafe_split(3),
           "unsafe_split_with_sizes": lambda: x.unsafe_split_with_sizes([2, 4]),
           "unsafe_chunk": lambda: x.unsafe_chunk(2),
           "wait_tensor": lambda: [torch.ops._c10d_functional.wait_tensor(x)]}[base]()
    st = x.untyped_storage()
    assert all(o.untyped_storage().data_ptr() == st.data_ptr() for o in out)


# ---- elementwise: element i of the output depends on element i of the input alone -------
ELEMENTWISE = {
    "copy_": lambda x: torch.zeros(4).copy_(x), "copy": lambda x: aten.copy(torch.zeros(4), x),
    "clone": lambda x: x.clone(), "_to_copy": lambda x: aten._to_copy(x),
    "masked_fill_": lambda x: x.clone().masked_fill_(torch.tensor([1, 0, 1, 0]).bool(), 9.),
    "masked_fill": lambda x: x.masked_fill(torch.tensor([1, 0, 1, 0]).bool(), 9.),
    "lift_fresh_copy": lambda x: aten.lift_fresh_copy(x),
    "alias_copy": lambda x: aten.alias_copy(x),
    # pointwise ops whose in-place/out= overloads (or whole family) torch leaves untagged;
    # a second argument built from x elementwise pairs element j with element j
    "where": lambda x: torch.where(x > 1.5, x, -x),
    "floor_divide": lambda x: torch.floor_divide(x, x + 1), "floor_divide_":
    lambda x: x.clone().floor_divide_(x + 1), "true_divide": lambda x: aten.true_divide(x, x + 1),
    "true_divide_": lambda x: x.clone().true_divide_(x + 1), "rsub": lambda x: aten.rsub(x, x * 3),
    "add": lambda x: aten.add.Scalar_out(x, 2, out=torch.empty(4)),
    "sub": lambda x: aten.sub.Scalar_out(x, 2, out=torch.empty(4)),
    "mul": lambda x: aten.mul.Scalar_out(x, 2, out=torch.empty(4)),
    "div": lambda x: aten.div.Scalar_out(x, 2, out=torch.empty(4)),
    "remainder": lambda x: aten.remainder.Scalar_Tensor_out(7, x + 1, out=torch.empty(4)),
    "xlogy_": lambda x: x.clone().xlogy_(x + 1), "copysign_": lambda x: x.clone().copysign_(-x),
    "heaviside_": lambda x: (x - 1).heaviside_(x),
    "gcd_": lambda x: (x.long() + 1).gcd_(x.long() * 2 + 2).float(),
    "lcm_": lambda x: (x.long() + 1).lcm_(x.long() * 2 + 2).float(),
    "eq_": lambda x: x.clone().eq_(x * 2), "ne_": lambda x: x.clone().ne_(x * 2),
    "lt_": lambda x: x.clone().lt_(x * 2), "le_": lambda x: x.clone().le_(x * 2),
    "gt_": lambda x: x.clone().gt_(x * 2), "ge_": lambda x: x.clone().ge_(x * 2),
    "bitwise_and": lambda x: aten.bitwise_and(x.long(), x.long() * 3).float(),
    "bitwise_or": lambda x: aten.bitwise_or(x.long(), x.long() * 3).float(),
    "bitwise_xor": lambda x: aten.bitwise_xor(x.long(), x.long() * 3).float(),
    "bitwise_left_shift": lambda x: aten.bitwise_left_shift(x.long(), x.long() % 3).float(),
    "bitwise_right_shift": lambda x: aten.bitwise_right_shift(x.long() * 8, x.long() % 3).float(),
    "relu": lambda x: aten.relu(x - 1.5), "gelu": lambda x: aten.gelu(x),
    "gelu_": lambda x: aten.gelu_(x.clone()), "elu": lambda x: aten.elu(x - 2),
    "celu": lambda x: aten.celu(x - 2), "hardtanh": lambda x: aten.hardtanh(x, 0.5, 2.5),
    "threshold": lambda x: aten.threshold(x, 1.5, -1.),
    "threshold_": lambda x: aten.threshold_(x.clone(), 1.5, -1.),
    "leaky_relu": lambda x: aten.leaky_relu(x - 2, 0.1), "softplus": lambda x: aten.softplus(x),
    "softshrink": lambda x: aten.softshrink(x, 1.), "hardshrink": lambda x: aten.hardshrink(x, 1.),
    "hardsigmoid": lambda x: aten.hardsigmoid(x - 2), "hardswish": lambda x: aten.hardswish(x - 2),
    "hardswish_": lambda x: aten.hardswish_(x - 2), "mish": lambda x: aten.mish(x),
    "mish_": lambda x: aten.mish_(x.clone()),
    "gelu_backward": lambda x: aten.gelu_backward(x, x),
    "threshold_backward": lambda x: aten.threshold_backward(x, x, 1.5),
    "elu_backward": lambda x: aten.elu_backward(x, 1., 1., 1., False, x - 2),
    "hardtanh_backward": lambda x: aten.hardtanh_backward(x, x, 0.5, 2.5),
    "leaky_relu_backward": lambda x: aten.leaky_relu_backward(x, x - 2, 0.1, False),
    "softplus_backward": lambda x: aten.softplus_backward(x, x, 1., 20.),
    "hardsigmoid_backward": lambda x: aten.hardsigmoid_backward(x, x - 2),
    "hardswish_backward": lambda x: aten.hardswish_backward(x, x - 2),
    "hardshrink_backward": lambda x: aten.hardshrink_backward(x, x, 1.),
    "softshrink_backward": lambda x: aten.softshrink_backward(x, x, 1.),
    "log_sigmoid_backward":
    lambda x: aten.log_sigmoid_backward(x, x, aten.log_sigmoid_forward(x)[1]),
    "log_sigmoid_forward": lambda x: sum(aten.log_sigmoid_forward(x - 2)),
    "tril": lambda x: torch.tril(x.view(2, 2)).reshape(-1),
    "triu": lambda x: torch.triu(x.view(2, 2), 1).reshape(-1) + x,
}


@pytest.mark.parametrize("base", sorted(S.ELEMENTWISE))
def test_elementwise(base):
    assert base in ELEMENTWISE, f"no proof for ELEMENTWISE entry {base!r}"
    run = ELEMENTWISE[base]
    x = torch.arange(4.)
    ref = run(x.clone())
    for j in range(4):
        y = x.clone()
        y[j] = 100.0
        got = run(y)
        others = [i for i in range(4) if i != j]
        assert torch.equal(got[others], ref[others])      # only element j can change


# ---- elementwise in one pair: out = beta * self + alpha * (a product) --------------------
def _varied_self(run, shape):
    """Changing element j of ``self`` changes element j of the result only (or nothing, where
    the op overwrites that element), and does change it somewhere."""
    torch.manual_seed(0)
    self_ = torch.randn(shape)
    ref = run(self_.clone())
    seen = 0
    for j in range(self_.numel()):
        changed = self_.clone()
        changed.view(-1)[j] += 100.0
        diff = (run(changed) != ref).reshape(-1).nonzero().reshape(-1).tolist()
        assert diff in ([j], []), (j, diff)
        seen += diff == [j]
    assert seen


ELEMENTWISE_ARGS = {
    "addmm": ((3, 4), lambda s: torch.addmm(s, A34[0], A34[1], beta=0.5)),
    "baddbmm": ((2, 3, 4), lambda s: torch.baddbmm(s, B234[0], B234[1], beta=0.5)),
    "addbmm": ((3, 4), lambda s: torch.addbmm(s, B234[0], B234[1], beta=0.5)),
    "addmv": ((3,), lambda s: torch.addmv(s, A34[0], A34[1][:, 0], beta=0.5)),
    "addr": ((3, 4), lambda s: torch.addr(s, A34[0][:, 0], A34[1][0], beta=0.5)),
    "_addmm_activation": ((3, 4), lambda s: aten._addmm_activation(s + 50, A34[0], A34[1])),
    "index_add": ((4, 3), lambda s: torch.index_add(s, 0, IDX, torch.ones(2, 3))),
    "index_copy": ((4, 3), lambda s: torch.index_copy(s, 0, IDX, torch.ones(2, 3))),
    "scatter": ((4, 3), lambda s: torch.scatter(s, 0, IDX2, torch.ones(1, 3))),
    "scatter_add": ((4, 3), lambda s: torch.scatter_add(s, 0, IDX2, torch.ones(1, 3))),
    "scatter_reduce": ((4, 3), lambda s: torch.scatter_reduce(s, 0, IDX2, torch.ones(1, 3),
                                                              "sum")),
    "index_reduce": ((4, 3), lambda s: torch.index_reduce(s, 0, IDX, torch.full((2, 3), 2.),
                                                          "prod")),
}
IDX, IDX2 = torch.tensor([0, 2]), torch.tensor([[0, 1, 2]])
A34 = (torch.randn(3, 5), torch.randn(5, 4))
B234 = (torch.randn(2, 3, 5), torch.randn(2, 5, 4))


@pytest.mark.parametrize("base", sorted(S.ELEMENTWISE_ARGS))
def test_elementwise_in_self_alone(base):
    assert base in ELEMENTWISE_ARGS, f"no proof for ELEMENTWISE_ARGS entry {base!r}"
    assert S.ELEMENTWISE_ARGS[base] == {"self"}
    shape, run = ELEMENTWISE_ARGS[base]
    _varied_self(run, shape)
    op = getattr(aten, base)
    assert any(S.spec_of(getattr(op, o)).elementwise_args == {"self"} for o in op.overloads())


def test_foreach_ops_are_elementwise_per_position():
    a = [torch.arange(3.), torch.arange(2.)]
    b = [torch.ones(3), torch.ones(2)]
    ref = torch._foreach_add(a, b)
    b2 = [torch.ones(3), torch.full((2,), 5.)]
    got = torch._foreach_add(a, b2)
    assert torch.equal(got[0], ref[0])                    # position 0 does not see position 1
    assert S.spec_of(aten._foreach_add_.List).foreach
    assert not S.spec_of(aten._foreach_norm.Scalar).foreach   # a reduction per position


# ---- random ops without a Generator argument, and data-dependent writes ------------------
@pytest.mark.parametrize("base", sorted(S.RANDOM))
def test_random_entries_draw_from_the_default_generator(base):
    assert S.RANDOM and base.rstrip("_")   # the table's entries
    packet = getattr(aten, base, None)
    if packet is None:
        return                               # a Python-level name (dropout): decomposed
    ops = [getattr(packet, o) for o in packet.overloads()]
    assert any(torch.Tag.nondeterministic_seeded in op.tags or
               "Generator" in str(op._schema) for op in ops) or base in {
        "dropout", "_fused_dropout", "rrelu_with_noise", "rrelu_with_noise_"}


def test_data_dependent_writes_write_only_the_indexed_elements():
    x = torch.zeros(6)
    x.index_put_((torch.tensor([1, 4]),), torch.tensor([1., 2.]))
    assert (x != 0).nonzero().reshape(-1).tolist() == [1, 4]    # not the whole view
    for base in S.DATA_DEPENDENT:
        assert getattr(aten, base, None) is not None, base
