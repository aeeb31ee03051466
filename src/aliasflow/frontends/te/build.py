"""``te.build``: a te graph as a function over DLPack arrays, evaluated with NumPy.

>>> import numpy as np
>>> from aliasflow import te
>>> n = te.var("n")
>>> A = te.placeholder((n, 3), name="A")
>>> k = te.reduce_axis((0, 3), name="k")
>>> S = te.compute((n,), lambda i: te.sum(A[i, k] * 2, axis=k), name="S")
>>> f = te.build([S], [A, S])
>>> a, s = np.arange(6, dtype="float32").reshape(2, 3), np.zeros(2, "float32")
>>> f(a, s)
>>> s.tolist()
[6.0, 24.0]
"""
from __future__ import annotations

import numpy as np

from ...analysis.overlap import check_memory_overlap
from ...core.errors import AliasflowError
from ...core.exchange import from_dlpack, from_numpy
from ...core.view import TensorView
from .evaluate import Domain, gather, int_value, op_values
from .expr import Var, post_order_visit
from .tensor import ComputeOp, Operation, PlaceholderOp, PrimFunc, Schedule, Tensor


def as_view(obj, what: str, name: str) -> TensorView:
    """The one adapter from a caller's array to aliasflow memory, without a copy: an ndarray
    through ``af.from_numpy``, anything else exporting DLPack through ``af.from_dlpack``."""
    if isinstance(obj, np.ndarray):
        return from_numpy(obj, name)
    if not hasattr(obj, "__dlpack__"):
        raise AliasflowError(f"{what}: expected an array exporting DLPack (NumPy, PyTorch, ...), "
                             f"got {type(obj).__name__}")
    try:
        return from_dlpack(obj, name)
    except AliasflowError as exc:
        raise AliasflowError(f"{what}: cannot be used through DLPack without a copy: "
                             f"{exc}") from None


def _tensors(what, items) -> list[Tensor]:
    out = []
    for x in (items if isinstance(items, (list, tuple)) else [items]):
        if isinstance(x, Schedule):
            out.extend(o.output(k) for o in x.outputs for k in range(o.num_outputs))
        elif isinstance(x, Operation):
            out.extend(x.output(k) for k in range(x.num_outputs))
        elif isinstance(x, Tensor):
            out.append(x)
        else:
            raise AliasflowError(f"{what}: expected te tensors, operations or a schedule, "
                                 f"got {type(x).__name__}")
    return out


def topo_ops(tensors) -> list[Operation]:
    """Every op the tensors depend on, producers before consumers (depth first, inputs in
    ``input_tensors`` order)."""
    order, state = [], {}
    for root in tensors:
        stack = [(root.op, False)]
        while stack:
            op, done = stack.pop()
            if done:
                if state.get(id(op)) != 2:
                    state[id(op)] = 2
                    order.append(op)
                continue
            if id(op) in state:
                continue
            state[id(op)] = 1
            stack.append((op, True))
            for t in reversed(op.input_tensors):
                if id(t.op) not in state:
                    stack.append((t.op, False))
    return order


def bind_shapes(args: list[Tensor], shapes: list[tuple[int, ...]]) -> dict:
    """Symbolic vars bound from the arrays' shapes (a var standing alone as a dim), then every
    dim checked: ``binds`` maps ``id(var)`` to an int."""
    binds, names = {}, {}
    for t, shape in zip(args, shapes):
        for d, e in enumerate(t.shape):
            if isinstance(e, Var) and id(e) not in binds:
                binds[id(e)], names[id(e)] = shape[d], e.name
    for t, shape in zip(args, shapes):
        want = tuple(int_value(e, binds, f"shape of {t.name!r}") for e in t.shape)
        if want != tuple(shape):
            raise AliasflowError(f"argument {t.name!r}: shape {tuple(shape)} does not match "
                                 f"{want} (from {t.shape} with "
                                 f"{ {names[k]: v for k, v in binds.items()} })")
    return binds


class BuiltFunction:
    """``f(*arrays)``: arrays in ``args`` order; outputs are written in place."""

    def __init__(self, outputs, args, name):
        self.name = name
        self.args = _tensors("build args", args)
        seen = set()
        for t in self.args:
            if t in seen:
                raise AliasflowError(f"build: tensor {t.name!r} appears twice in args")
            seen.add(t)
        roots = [t for t in self.args if isinstance(t.op, ComputeOp)] + \
            _tensors("build outputs", outputs)
        self.ops = topo_ops(roots)
        for op in self.ops:
            if isinstance(op, PlaceholderOp) and op.output(0) not in seen:
                raise AliasflowError(f"build: placeholder {op.name!r} is needed but is not "
                                     f"among args {[t.name for t in self.args]}")
        self._check_free_vars()

    def _check_free_vars(self):
        shape_vars = {id(e) for t in self.args for e in t.shape if isinstance(e, Var)}
        for op in self.ops:
            loops = {id(iv.var) for iv in getattr(op, "axis", ())} | \
                {id(iv.var) for iv in getattr(op, "reduce_axis", ())}
            for e in getattr(op, "body", ()):
                def check(n, op=op, loops=loops):
                    if isinstance(n, Var) and id(n) not in loops and id(n) not in shape_vars:
                        raise AliasflowError(f"build: op {op.name!r} uses var {n.name!r}, which "
                                             f"no argument's shape binds")
                post_order_visit(e, check)

    def __call__(self, *arrays):
        if len(arrays) != len(self.args):
            raise AliasflowError(f"{self.name}: takes {len(self.args)} arrays "
                                 f"({', '.join(t.name for t in self.args)}), got {len(arrays)}")
        views = [as_view(a, f"{self.name}: argument {t.name!r}", t.name)
                 for a, t in zip(arrays, self.args)]
        arrs = [v.numpy() for v in views]
        for a, t in zip(arrs, self.args):
            if a.ndim != t.ndim or a.dtype != np.dtype(t.dtype):
                raise AliasflowError(f"{self.name}: argument {t.name!r} needs a {t.ndim}-d "
                                     f"{t.dtype} array, got {a.ndim}-d {a.dtype}")
        binds = bind_shapes(self.args, [a.shape for a in arrs])
        given = {t: a for t, a in zip(self.args, arrs)}
        outs = [k for k, t in enumerate(self.args) if isinstance(t.op, ComputeOp)]
        for k in outs:
            if not arrs[k].flags.writeable:
                raise AliasflowError(f"{self.name}: output {self.args[k].name!r} is read-only")
            for j, other in enumerate(views):
                # an output sharing memory with another argument would make the result depend
                # on the order elements are computed in; aliasflow's exact check, refused
                if j != k and check_memory_overlap(views[k], other):
                    raise AliasflowError(f"{self.name}: output {self.args[k].name!r} shares "
                                         f"memory with argument {self.args[j].name!r}")
        env = {k: np.asarray(v) for k, v in binds.items()}
        values = dict(given)
        for op in self.ops:
            if not isinstance(op, ComputeOp):
                continue
            domain = Domain(op, binds)

            def load(node, idx, mask):
                return gather(node.producer.name, values[node.producer], idx, mask)
            results = op_values(op, domain, load, env)
            for t, v in zip(op._outputs, results):
                if t in given:
                    given[t][...] = v
                else:
                    values[t] = np.ascontiguousarray(v)


def build(outputs, args=None, target=None, target_host=None, name: str = "default_function"):
    """Compile (here: prepare) ``outputs`` into a function of ``args`` — the placeholders and
    outputs in call order, as in TVM's ``tvm.build(s, [X, Y, Z])``. ``outputs`` may be tensors,
    ops, a :func:`create_schedule` result, or a :func:`create_prim_func` result (which brings
    its args); ``target`` and ``target_host`` are accepted for
    TVM's signature and ignored (NumPy on the CPU runs it). The function accepts NumPy arrays
    and any DLPack exporter (PyTorch tensors, ...) without copying them, binds symbolic sizes
    from their shapes and writes the outputs in place; compute tensors not in ``args`` are
    temporaries."""
    if isinstance(outputs, PrimFunc):
        outputs, args = [t for t in outputs.args if isinstance(t.op, ComputeOp)], outputs.args
    if args is None:
        raise AliasflowError("build: args (the placeholders and outputs in call order) are "
                             "required")
    return BuiltFunction(outputs, args, name)


def compile(func, target=None, name: str = "default_function"):  # noqa: A001
    """TVM 0.27's ``tvm.compile(te.create_prim_func(args), target="llvm")``."""
    if not isinstance(func, PrimFunc):
        raise AliasflowError(f"compile: expected te.create_prim_func(args), got "
                             f"{type(func).__name__}")
    return build(func, name=name)
