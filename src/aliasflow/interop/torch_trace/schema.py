"""Access modes of an aten op's tensor arguments, from its schema plus a table of exceptions.

The schema says which arguments an op may mutate (``Tensor(a!)``) and which it returns as
aliases (``Tensor(a)``); it does not say whether a mutated argument is also read, whether the
mutation is of data or only of metadata, or whether an argument's data is read at all. The
tables below say that for the ops whose schema alone would mislead.

Modes: ``"R"`` data read, ``"W"`` data written (not read), ``"RW"`` read and written, ``None``
no data access (a view, a shape query, a metadata-only mutation).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

# In-place ops that overwrite their mutated argument without reading it.
WRITE_ONLY = frozenset({
    "copy_", "fill_", "zero_", "normal_", "uniform_", "random_", "bernoulli_", "exponential_",
    "geometric_", "cauchy_", "log_normal_", "fill_diagonal_", "_copy_from",
    "_copy_from_and_resize",
})
# Mutations of metadata only (shape, strides, storage pointer): no data is read or written.
METADATA_ONLY = frozenset({
    "t_", "transpose_", "swapdims_", "swapaxes_", "squeeze_", "unsqueeze_", "as_strided_",
    "set_", "resize_", "resize_as_", "_resize_output_", "detach_", "requires_grad_",
    "_coalesced_", "retain_grad", "_set_conj", "_set_neg", "unsafe_split",
})
# Ops whose tensor arguments' data is never read: factories that only take shape/dtype from
# them, and queries of metadata.
NO_READ = frozenset({
    "empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
    "randint_like", "new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full",
    "size", "stride", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "dim",
    "numel", "is_same_size", "_has_compatible_shallow_copy_type", "is_complex",
    "is_floating_point", "_nested_tensor_size", "storage_offset", "is_nonzero_", "result_type",
    "can_cast", "promote_types", "_shape_as_tensor", "is_set_to", "_version", "is_conj",
    "is_neg", "is_inference", "_is_zerotensor", "output_nr", "data_ptr",
    # views whose schema carries no alias annotation
    "_unsafe_view",
})
# Ops whose fresh outputs start with unspecified contents (replay copies the traced bytes);
# a resize that moves a tensor onto new memory leaves the grown part unspecified.
UNINITIALIZED = frozenset({"empty", "empty_like", "empty_strided", "new_empty",
                           "new_empty_strided", "_empty_affine_quantized", "resize_",
                           "resize_as_", "_resize_output_"})
# Ops that draw from the default generator without taking a Generator argument in every
# overload (``randn.default``): the trace keeps the generator state for them too.
RANDOM = frozenset({
    "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
    "normal", "normal_", "uniform_", "bernoulli", "bernoulli_", "multinomial", "dropout",
    "native_dropout", "random_", "exponential_", "geometric_", "cauchy_", "log_normal_",
    "poisson", "_standard_gamma", "_sample_dirichlet", "binomial", "rrelu_with_noise",
    "_fused_dropout",
})
# Writes to data-dependent elements: the trace works out which elements when it can.
DATA_DEPENDENT = frozenset({
    "index_put_", "_index_put_impl_", "masked_fill_", "masked_scatter_", "scatter_",
    "scatter_add_", "scatter_reduce_", "index_copy_", "index_fill_", "index_add_",
    "index_reduce_", "put_",
})

TENSOR, TENSOR_LIST, OTHER = "tensor", "list", "other"


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
    tensor_args: tuple[ArgSpec, ...]
    random: bool         # draws random numbers: replay must restore the generator state
    takes_generator: bool
    uninitialized: bool
    data_dependent: bool
    view_only: bool      # touches no data and returns only aliases of its arguments


def _holds(type_) -> str:
    text = str(type_)
    if text in ("Tensor", "Tensor?"):
        return TENSOR
    if text.startswith(("Tensor[]", "Tensor?[]", "List[Tensor]", "List[Optional[Tensor]]")):
        return TENSOR_LIST
    return OTHER


@lru_cache(maxsize=None)
def op_spec(func) -> OpSpec:
    """The :class:`OpSpec` of an ``OpOverload`` (cached per overload)."""
    schema = func._schema
    base = schema.name.split("::")[-1]
    overload = schema.overload_name or "default"
    name = f"aten.{base}.{overload}" if schema.name.startswith("aten::") else str(func)
    returns_alias = {r.alias_info.before_set and next(iter(r.alias_info.before_set))
                     for r in schema.returns if r.alias_info is not None}
    args = []
    for k, a in enumerate(schema.arguments):
        holds = _holds(a.type)
        info = a.alias_info
        is_write = bool(info is not None and info.is_write)
        is_out = bool(is_write and a.kwarg_only)
        if holds == OTHER:
            mode = None
        elif is_write:
            if base in METADATA_ONLY:
                mode = None
            elif is_out or base in WRITE_ONLY:
                mode = "W"
            else:
                mode = "RW"
        elif base in NO_READ or base in METADATA_ONLY:
            mode = None
        elif info is not None and info.before_set & returns_alias:
            mode = None  # a view op: the output aliases this argument, no data is touched
        else:
            mode = "R"
        args.append(ArgSpec(k, a.name, holds, mode, bool(a.kwarg_only), is_out))
    takes_generator = any("Generator" in str(a.type) for a in schema.arguments)
    random = takes_generator or base in RANDOM
    tensor_args = tuple(a for a in args if a.holds != OTHER)
    view_only = (bool(schema.returns) and bool(tensor_args)
                 and all(a.mode is None for a in tensor_args)
                 and all(r.alias_info is not None and not r.alias_info.is_write
                         for r in schema.returns)
                 and not random and base not in DATA_DEPENDENT)
    return OpSpec(name, base, overload, tuple(args), tensor_args, random, takes_generator,
                  base in UNINITIALIZED, base in DATA_DEPENDENT, view_only)
