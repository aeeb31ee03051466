"""Access modes of an aten op's tensor arguments, from its schema plus a table of exceptions.

The schema (as torch 2.13 prints it: ``Optional[Tensor]``, ``List[Tensor]``,
``List[Optional[Tensor]]``, ``Tensor(a!)[]``, ``Tensor(a -> *) self ... -> Tensor(a)[]``) says
which arguments an op may mutate and which it returns as aliases; it does not say whether a
mutated argument is also read, whether the mutation is of data or only of metadata, or whether
an argument's data is read at all. The tables below say that for the ops whose schema alone
would mislead; ``tests/interop/torch_trace/test_schema_table.py`` holds, for each entry, the
program that proves what it claims (and the op_db sweep, that nothing else is needed).

Modes: ``"R"`` data read, ``"W"`` data written (not read), ``"RW"`` read and written, ``None``
no data access (a view, a shape query, a metadata-only mutation).

Types are read from the schema's type objects (``TensorType``, ``OptionalType``, ``ListType``),
never from their printed spelling.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

# In-place ops that overwrite their mutated argument without reading it.
WRITE_ONLY = frozenset({
    "copy_", "fill_", "zero_", "normal_", "uniform_", "random_", "bernoulli_", "exponential_",
    "geometric_", "cauchy_", "log_normal_",
})
# Mutations of metadata only (shape, strides, storage pointer): no data is read or written.
METADATA_ONLY = frozenset({
    "t_", "transpose_", "swapdims_", "swapaxes_", "squeeze_", "unsqueeze_", "as_strided_",
    "set_", "resize_", "resize_as_", "detach_", "requires_grad_",
    "_coalesced_", "retain_grad", "_set_conj", "_set_neg", "unsafe_split",
    "unsafe_split_with_sizes", "unsafe_chunk", "resize_as_sparse_", "sparse_resize_",
    "sparse_resize_and_clear_", "_sparse_coo_tensor_with_dims_and_tensors",
})
# Ops that change which memory an argument holds (its storage may be reallocated).
RESIZING = frozenset({"set_", "resize_", "resize_as_", "resize_as_sparse_"})
# Ops whose tensor arguments' data is never read: factories that only take shape/dtype from
# them, and queries of metadata.
NO_READ = frozenset({
    "empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
    "randint_like", "new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full",
    "size", "stride", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "dim",
    "numel", "is_same_size", "_has_compatible_shallow_copy_type", "is_complex",
    "is_floating_point", "storage_offset", "is_nonzero_", "result_type",
    "can_cast", "promote_types", "_shape_as_tensor", "is_set_to", "_version", "is_conj",
    "is_neg", "is_inference", "_is_zerotensor", "output_nr", "data_ptr",
    "empty_strided", "_empty_affine_quantized", "resize_output",
    # views whose schema carries no alias annotation
    "_unsafe_view", "wait_tensor",
})
# Arguments an op writes in place although its schema does not annotate them: op -> (the
# boolean argument that turns the write on, or None for always; the written arguments).
UNANNOTATED_WRITES = {
    "native_batch_norm": ("training", ("running_mean", "running_var")),
    "batch_norm_update_stats": (None, ("running_mean", "running_var")),
}
# Returns that alias an argument although the schema does not say so (``wait_tensor``, of
# torch.distributed's functional collectives, returns the very tensor it waited for).
UNANNOTATED_VIEWS = frozenset({"_unsafe_view", "unsafe_split", "unsafe_split_with_sizes",
                               "unsafe_chunk", "wait_tensor"})
# Ops whose fresh outputs start with unspecified contents (replay copies the traced bytes);
# a resize that moves a tensor onto new memory leaves the grown part unspecified.
UNINITIALIZED = frozenset({"empty", "empty_like", "empty_strided", "new_empty",
                           "new_empty_strided", "_empty_affine_quantized", "resize_",
                           "resize_as_", "empty_permuted"})
# Ops that draw from the default generator without a Generator argument or the
# ``nondeterministic_seeded`` tag in every overload.
RANDOM = frozenset({
    "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
    "normal", "normal_", "uniform_", "bernoulli", "bernoulli_", "multinomial", "dropout",
    "native_dropout", "random_", "exponential_", "geometric_", "cauchy_", "log_normal_",
    "poisson", "_standard_gamma", "_sample_dirichlet", "binomial", "rrelu_with_noise",
    "rrelu_with_noise_", "_fused_dropout",
})
# Writes to data-dependent elements: the trace works out which elements when it can. The
# out-of-place forms write their fresh result the same way (plus a copy of ``self``).
DATA_DEPENDENT = frozenset({
    "index_put_", "_index_put_impl_", "masked_fill_", "masked_scatter_", "scatter_",
    "scatter_add_", "scatter_reduce_", "index_copy_", "index_fill_", "index_add_",
    "index_reduce_", "put_",
    "index_put", "_index_put_impl", "scatter", "index_copy", "put", "masked_scatter",
})
# Elementwise in every pair of (written, read) arguments at one position, but not tagged
# ``pointwise`` (in any overload): output element i depends on input element i alone. torch
# tags the functional overload of many pointwise ops but not their in-place or ``out=``
# forms (``where.self_out``, ``gt_.Tensor``, ``gelu.out``, ``add.Scalar_out``), nor the
# activations' backward kernels and a few whole families (``floor_divide``, ``hardswish``).
# Whole families are listed, not guessed from the tag: ``max.other`` is pointwise, ``max.dim``
# a reduction.
ELEMENTWISE = frozenset({
    "copy_", "copy", "clone", "_to_copy", "masked_fill_", "masked_fill", "lift_fresh_copy",
    "alias_copy",
    "where", "floor_divide", "floor_divide_", "true_divide", "true_divide_", "rsub",
    "add", "sub", "mul", "div", "remainder", "xlogy_", "copysign_", "heaviside_",
    "gcd_", "lcm_", "eq_", "ne_", "lt_", "le_", "gt_", "ge_",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
    "relu", "gelu", "gelu_", "elu", "celu", "hardtanh", "threshold", "threshold_",
    "leaky_relu", "softplus", "softshrink", "hardshrink", "hardsigmoid", "hardswish",
    "hardswish_", "mish", "mish_",
    "gelu_backward", "threshold_backward", "elu_backward", "hardtanh_backward",
    "leaky_relu_backward", "softplus_backward", "hardsigmoid_backward", "hardswish_backward",
    "hardshrink_backward", "softshrink_backward", "log_sigmoid_backward",
    "log_sigmoid_forward",
    # not pointwise (the value depends on the position), but element i still reads element i
    # alone: torch.tril(x, out=x) is x.tril_()
    "tril", "triu",
})
# Ops elementwise in some (written, read) pairs only: ``out = beta * self + alpha * (a
# product)`` reads element i of ``self`` for element i of the result alone (BLAS scales C in
# place), so ``torch.addmm(c, a, b, out=c)`` is ``c.addmm_(a, b)``; the product's factors are
# read whole. The out= forms of the index/scatter ops start from a copy of ``self`` and
# write some elements: ``torch.index_add(x, 0, i, s, out=x)`` is ``x.index_add_(0, i, s)``.
# op -> the read arguments that pair elementwise with the written one.
ELEMENTWISE_ARGS = {base: frozenset({"self"}) for base in (
    "addmm", "baddbmm", "addbmm", "addmv", "addr", "_addmm_activation",
    "index_add", "index_copy", "scatter", "scatter_add", "scatter_reduce", "index_reduce")}
# List ops that are elementwise per list position (element k of each list pairs with element
# k of the others); ``_foreach_`` ops not listed as reductions are too.
FOREACH_PREFIXES = ("_foreach_", "_fused_adam", "_fused_adamw", "_fused_sgd", "_fused_adagrad",
                    "_fused_rmsprop")
FOREACH_NOT_ELEMENTWISE = frozenset({"_foreach_norm", "_foreach_max", "_foreach_copy_"})

# torch.distributed's collectives (the ``c10d`` namespace DistributedDataParallel calls):
# their schemas carry no alias annotation, although they write tensors in place and return
# the very tensors (or lists) they were given. Schema name -> mode of each tensor argument;
# no return of theirs is fresh. Arguments that hold lists of lists (``Tensor[][]``, in
# allgather_, gather_, scatter_, reduce_scatter_, allgather_coalesced_) are not recorded:
# those ops are untracked (see ``spec_of``).
COLLECTIVES = {
    "c10d::allreduce_": {"tensors": "RW", "sparse_indices": "R"},
    "c10d::allreduce_coalesced_": {"tensors": "RW"},
    "c10d::broadcast_": {"tensors": "RW"},    # the root's is read, every other one written
    "c10d::reduce_": {"tensors": "RW"},
    "c10d::_allgather_base_": {"output_tensor": "W", "input_tensor": "R"},
    "c10d::_reduce_scatter_base_": {"output_tensor": "W", "input_tensor": "R"},
    "c10d::allgather_into_tensor_coalesced_": {"outputs": "W", "inputs": "R"},
    "c10d::reduce_scatter_tensor_coalesced_": {"outputs": "W", "inputs": "R"},
    "c10d::alltoall_": {"output_tensors": "W", "input_tensors": "R"},
    "c10d::alltoall_base_": {"output": "W", "input": "R"},
    "c10d::send": {"tensors": "R"},
    "c10d::recv_": {"tensors": "W"},
    "c10d::recv_any_source_": {"tensors": "W"},
    "c10d::barrier": {"tensor": None},
    "c10d::monitored_barrier_": {"tensor": None},
    "c10d::check_for_nan": {"tensor": "R"},
}

TENSOR, TENSOR_LIST, OTHER = "tensor", "list", "other"
_TensorType, _OptionalType, _ListType = torch._C.TensorType, torch._C.OptionalType, \
    torch._C.ListType


@dataclass(frozen=True)
class ArgSpec:
    """One argument of an op: where it is, what it holds, and how the op touches its data."""
    position: int
    name: str
    holds: str           # TENSOR, TENSOR_LIST or OTHER
    mode: str | None     # "R", "W", "RW" or None
    kwarg_only: bool
    is_out: bool         # an ``out=`` argument (the op may resize it)


@dataclass(frozen=True)
class OpSpec:
    """What the tracer needs to know about one aten overload."""
    name: str            # "aten.add_.Tensor"
    base: str            # "add_"
    overload: str        # "Tensor"
    args: tuple[ArgSpec, ...]
    accessed: tuple[ArgSpec, ...]   # the tensor arguments whose data the op touches
    returns: tuple[str, ...]        # per return: TENSOR, TENSOR_LIST or OTHER
    fresh: tuple[bool, ...]         # per return: a new tensor (not an alias of an argument)
    random: bool         # draws random numbers: replay must restore the generator state
    takes_generator: bool
    uninitialized: bool
    data_dependent: bool
    view_only: bool      # touches no data and returns only aliases of its arguments
    elementwise: bool    # output element i depends on input element i alone (pointwise)
    foreach: bool        # elementwise per list position
    resizing: bool       # may move an argument onto new memory
    writes: bool         # writes some argument's data in place
    switch: int | None = None   # position of the flag that turns unannotated writes on
    tensors: tuple = ()  # (position, name, holds a list, mode) per tensor-holding argument
    elementwise_args: frozenset = frozenset()   # read arguments elementwise with the written
    collective: bool = False    # one of COLLECTIVES (its writes publish a buffer's contents)

    @property
    def any_fresh(self) -> bool:
        return any(self.fresh)


def holds(type_) -> str:
    """TENSOR for ``Tensor``/``Optional[Tensor]``, TENSOR_LIST for lists of them, else OTHER."""
    if isinstance(type_, _OptionalType):
        type_ = type_.getElementType()
    if isinstance(type_, _TensorType):
        return TENSOR
    if isinstance(type_, _ListType):
        inner = type_.getElementType()
        if isinstance(inner, _OptionalType):
            inner = inner.getElementType()
        if isinstance(inner, _TensorType):
            return TENSOR_LIST
    return OTHER


def _nested_tensor_list(type_) -> bool:
    """``Tensor[][]``: a list of lists of tensors (the tracer records one level of list)."""
    return isinstance(type_, _ListType) and holds(type_.getElementType()) == TENSOR_LIST


def _is_write(a) -> bool:
    info = a.alias_info
    return bool(info is not None and info.is_write)


def spec_of(func) -> OpSpec:
    """The :class:`OpSpec` of an ``OpOverload`` (the tracer caches it per overload)."""
    schema = func._schema
    base = schema.name.split("::")[-1]
    overload = schema.overload_name or "default"
    name = f"aten.{base}.{overload}" if schema.name.startswith("aten::") else str(func)
    nested = [a.name for a in schema.arguments if _nested_tensor_list(a.type)]
    if nested:
        raise ValueError(f"its argument {nested[0]} is a list of lists of tensors, which "
                         f"the tracer does not record")
    collective = COLLECTIVES.get(schema.name)
    returns = tuple(holds(r.type) for r in schema.returns)
    # a return with a non-writing alias annotation (``Tensor(a)``, ``Tensor(a)[]``) is a view
    view_return = any(r.alias_info is not None and not r.alias_info.is_write
                      for r in schema.returns)
    fresh = tuple(h != OTHER and r.alias_info is None and base not in UNANNOTATED_VIEWS
                  and collective is None for h, r in zip(returns, schema.returns))
    args = []
    switch_name, unannotated = UNANNOTATED_WRITES.get(base, (None, ()))
    for k, a in enumerate(schema.arguments):
        kind = holds(a.type)
        info = a.alias_info
        is_write = _is_write(a) or a.name in unannotated
        is_out = bool(is_write and a.kwarg_only)
        if kind == OTHER:
            mode = None
        elif collective is not None:
            mode = collective.get(a.name, "R")
        elif is_write:
            if base in METADATA_ONLY:
                mode = None
            elif is_out or base in WRITE_ONLY:
                mode = "W"
            else:
                mode = "RW"
        elif base in NO_READ or base in METADATA_ONLY:
            mode = None
        elif info is not None and view_return:
            mode = None  # a view op: the output aliases this argument, no data is touched
        else:
            mode = "R"
        args.append(ArgSpec(k, a.name, kind, mode, bool(a.kwarg_only), is_out))
    tags = getattr(func, "tags", ())
    takes_generator = any("Generator" in str(a.type) for a in schema.arguments)
    random = takes_generator or base in RANDOM or torch.Tag.nondeterministic_seeded in tags
    accessed = tuple(a for a in args if a.mode is not None)
    foreach = base.startswith(FOREACH_PREFIXES) and base.rstrip("_") not in {
        b.rstrip("_") for b in FOREACH_NOT_ELEMENTWISE}
    elementwise = torch.Tag.pointwise in tags or base in ELEMENTWISE
    view_only = (bool(schema.returns) and not accessed and view_return
                 and not any(fresh) and not random and base not in DATA_DEPENDENT)
    switch = next((a.position for a in args if a.name == switch_name), None)
    tensors = tuple((a.position, a.name, a.holds == TENSOR_LIST, a.mode) for a in args
                    if a.holds != OTHER)
    return OpSpec(name, base, overload, tuple(args), accessed, returns, fresh, random,
                  takes_generator, base in UNINITIALIZED, base in DATA_DEPENDENT, view_only,
                  elementwise, foreach, base in RESIZING or any(a.is_out for a in args),
                  any(a.mode in ("W", "RW") for a in args), switch, tensors,
                  ELEMENTWISE_ARGS.get(base, frozenset()), collective is not None)


def all_aten_overloads():
    """Every overload registered in ``torch.ops.aten`` (as ``OpOverload`` objects)."""
    out = []
    for qualified in sorted(torch._C._dispatch_get_all_op_names()):
        if not qualified.startswith("aten::"):
            continue
        base, _, overload = qualified[len("aten::"):].partition(".")
        try:
            packet = getattr(torch.ops.aten, base)
            out.append(getattr(packet, overload or "default"))
        except (AttributeError, RuntimeError):
            continue   # registered without a schema torch.ops can load
    return out
