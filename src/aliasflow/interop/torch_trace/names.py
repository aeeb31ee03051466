"""Names of traced tensors as the user knows them.

In order of preference, for an argument of an op a finding is about:

1. the expression the user's line passes for it (``labels[:, 1:]`` in
   ``labels[:, :-1] = labels[:, 1:]``, ``w`` in ``torch.matmul(w, g, out=w)``), read from the
   line's syntax tree (:mod:`aliasflow.interop.findings.source`);
2. a local variable of the user's frame holding that very view (looked up while the op runs,
   for the ops the tracer re-runs on copies);
3. the qualified name of a module parameter or buffer (``transformer.h.0.attn.c_attn.weight``),
   a parameter's gradient (``fc.weight.grad``) or optimizer state (``fc.weight:exp_avg``),
   read, when a finding first needs one, from the modules and optimizers alive then;
4. otherwise the storage form ``s18[int64 (2, 15) stride (16, 1) offset 0]``.
"""
from __future__ import annotations

import ast
import gc

import torch

from ..findings.model import storage_form
from .schema import METADATA_ONLY
from ..findings.source import assignment, calls, operators

_storage_address = torch._C._storage_address
_NAMESPACES = {"torch", "torch.nn.functional", "F", "torch.Tensor", "torch.linalg",
               "torch.special", "torch.fft", "np", "numpy", "torch.ops.aten"}
# Python names whose aten op has another base name (first positional arguments correspond).
ALIASES = {"mm": ("matmul", "mm", "__matmul__", "__rmatmul__"), "bmm": ("matmul", "bmm"),
           "mv": ("matmul", "mv"), "dot": ("matmul", "dot"), "addmm": ("addmm", "linear"),
           "addmm_": ("addmm_",), "copy_": ("copy_",), "index_put_": ("index_put_",
                                                                      "index_put"),
           "cat": ("cat", "concatenate", "concat"), "sub_": ("sub_", "subtract_"),
           "mul_": ("mul_", "multiply_"), "div_": ("div_", "divide_", "true_divide_")}


class ModuleNames:
    """Qualified names of the parameters, buffers, gradients and optimizer state of the
    program's modules and optimizers, by storage and layout.

    Nothing runs while tracing: a global module hook, the way to see which modules a program
    calls, would send every module call of the traced program through PyTorch's slow path.
    The names are read when a finding first needs one, from the modules and optimizers alive
    then (found among the objects Python's cyclic collector tracks): each tree of modules
    from its root, so names are qualified from the outermost module (parameters, buffers and
    optimizer state live on; a gradient is named while it is the parameter's ``.grad``). A
    storage is matched by its StorageImpl, which the trace keeps from being reused."""

    def __init__(self):
        self._entries = None

    @property
    def entries(self) -> dict:
        """StorageImpl address -> [(data pointer, shape, strides, name)], read once."""
        if self._entries is None:
            self._entries = {}
            try:
                self._learn()
            except Exception:  # noqa: BLE001 - naming is best effort, never the program's
                pass
        return self._entries

    def _learn(self):
        modules, optimizers = _live_modules_and_optimizers()
        children = set()
        for m in modules:
            try:
                children.update(id(c) for c in m.children())
            except Exception:  # noqa: BLE001 - a module that cannot say: taken as a root
                pass
        for module in modules:
            if id(module) not in children:   # named from its root, with the path to it
                try:
                    self._learn_module(module)
                except Exception:  # noqa: BLE001 - naming is best effort, never the program's
                    pass
        for optimizer in optimizers:
            try:
                self._learn_optimizer(optimizer)
            except Exception:  # noqa: BLE001
                pass

    def _learn_module(self, module):
        for name, p in module.named_parameters():
            self._add(p, name)
            if p.grad is not None:
                self._add(p.grad, f"{name}.grad")
        for name, b in module.named_buffers():
            self._add(b, name)

    def _learn_optimizer(self, optimizer):
        for g, group in enumerate(optimizer.param_groups):
            for k, p in enumerate(group["params"]):
                name = self.name_of(p) or f"param_groups[{g}][{k}]"
                self._add(p, name)
                if p.grad is not None:
                    self._add(p.grad, f"{name}.grad")
                for key, v in optimizer.state.get(p, {}).items():
                    self._add(v, f"{name}:{key}")

    def _add(self, t, name: str):
        try:
            if not isinstance(t, torch.Tensor) or t.layout != torch.strided:
                return
            key = (t.data_ptr(), tuple(t.shape), tuple(t.stride()))
            got = self._entries.setdefault(_storage_address(t), [])
            if all(e[:3] != key for e in got):
                got.append(key + (name,))
        except Exception:  # noqa: BLE001
            pass

    def name_of(self, t) -> str | None:
        try:
            got = self.entries.get(_storage_address(t), ())
            key = (t.data_ptr(), tuple(t.shape), tuple(t.stride()))
        except Exception:  # noqa: BLE001
            return None
        return next((e[3] for e in got if e[:3] == key), None)

    def lookup(self, sid: int, ptr: int, shape, strides) -> str | None:
        """The name of a view: exact, a transpose of a named 2-D tensor (``w.T``), or a part
        of a named tensor (``w[...]``)."""
        got = self.entries.get(sid)
        if not got:
            return None
        shape, strides = tuple(shape), tuple(strides)
        for p, s, st, name in got:
            if p == ptr and s == shape and st == strides:
                return name
        for p, s, st, name in got:
            if p == ptr and len(s) == 2 and s[::-1] == shape and st[::-1] == strides:
                return f"{name}.T"
        return f"{got[0][3]}[...]"


def _subclasses(cls) -> set:
    out, todo = set(), [cls]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in out:
                out.add(sub)
                todo.append(sub)
    return out | {cls}


def _live_modules_and_optimizers():
    """The modules and optimizers alive now, in the collector's order (oldest first). Their
    types are looked up in a set of the classes defined now: much cheaper than
    ``isinstance`` over every object of a large program."""
    module_types = _subclasses(torch.nn.Module)
    optimizer_types = _subclasses(torch.optim.Optimizer)
    modules, optimizers = [], []
    for o in gc.get_objects():
        kind = type(o)
        if kind in module_types:
            modules.append(o)
        elif kind in optimizer_types:
            optimizers.append(o)
    return modules, optimizers


def _item_of(exprs: dict, label: str):
    """``output[2]`` for the slot ``tensors[2]`` of ``torch.stack(output)``: an item of a
    list argument the line passes by a plain name."""
    if not label.endswith("]"):
        return None
    arg, _, k = label[:-1].partition("[")
    whole = exprs.get(arg)
    return f"{whole}[{k}]" if whole is not None and whole.isidentifier() else None


def _split_list(text: str):
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, (ast.List, ast.Tuple)):
        return [ast.get_source_segment(text, e) for e in node.elts]
    return None


_PREFIXES = ("linalg_", "special_", "fft_", "nn_functional_", "_")


def _returned_self(text: str) -> str:
    """The tensor a chain of in-place calls returns: ``A`` for ``A.sub_(m).mul_(2)`` (an
    in-place method returns its receiver, same view); anything else as it is. In-place
    methods that change the view itself (``t_``, ``unsqueeze_``) are not looked through."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return text
    inner = node
    while isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and \
            inner.func.attr.endswith("_") and not inner.func.attr.startswith("_") and \
            inner.func.attr not in METADATA_ONLY:
        inner = inner.func.value
    return text if inner is node else ast.get_source_segment(text, inner) or text


def _matches(base: str, function: str) -> bool:
    names = {base, base.rstrip("_")}
    names |= {n[len(p):] for n in list(names) for p in _PREFIXES if n.startswith(p)}
    # ``torch.linalg.cholesky``/``inv`` run as ``linalg_cholesky_ex``/``linalg_inv_ex``
    names |= {n[:-len("_ex")] for n in list(names) if n.endswith("_ex")}
    if function in names or function + "_" in names:
        return True
    return function in ALIASES.get(base, ())


def expressions(spec, path: str, line: int) -> dict[str, str]:
    """Slot label -> the source expression the user's line passes for it."""
    out: dict[str, str] = {}
    if spec is None or not path:   # a cell ("<ipython-input-1-...>") is in linecache too
        return out
    base = spec.base
    positional = [a for a in spec.args if not a.kwarg_only]
    assign = assignment(path, line)
    if assign is not None:
        if assign.subscript and base in ("index_put_", "_index_put_impl_"):
            out["self"] = assign.target.split("[", 1)[0]
            out["values"] = assign.value if assign.op is None else \
                f"{assign.target} {assign.op} {assign.value}"
        elif assign.op is not None and base.endswith("_"):
            out["self"] = assign.target
            reads = [a.name for a in spec.args if a.mode == "R" and a.holds != "other"]
            if len(reads) == 1:
                out[reads[0]] = assign.value
        elif assign.subscript and base in ("copy_", "fill_", "masked_fill_", "zero_"):
            out["self"] = assign.target
            for arg in ("src", "value"):
                out[arg] = assign.value
    found = calls(path, line)
    matching = [c.function for c in found if _matches(base, c.function)]
    if len(matching) != len(set(matching)):
        found = ()   # two calls of one function on the line: which one ran is not known here
    for n, c in enumerate(found):
        if not _matches(base, c.function):
            continue
        if n == 0 and assign is not None and assign.op is None and not assign.subscript:
            out.setdefault("result", assign.target)
        args = list(c.args)
        if c.receiver is not None and c.receiver not in _NAMESPACES and \
                not c.receiver.startswith("torch."):
            args.insert(0, _returned_self(c.receiver))
        for a, text in zip(positional, args):
            out.setdefault(a.name, text)
            if a.holds == "list":
                for k, item in enumerate(_split_list(text) or ()):
                    out.setdefault(f"{a.name}[{k}]", item)
        for key, text in c.kwargs.items():
            out.setdefault(key, text)
            for k, item in enumerate(_split_list(text) or ()):
                out.setdefault(f"{key}[{k}]", item)
        _out_arguments(spec, c.kwargs.get("out"), out)
        break
    return out


def _out_arguments(spec, text, out: dict):
    """Python's ``out=`` names the op's out arguments by another name (``values``,
    ``indices``; ``L``, ``info``): one expression for the first, a tuple for them in order."""
    if text is None:
        return
    outs = [a.name for a in spec.args if a.is_out and a.holds != "other"]
    if not outs or outs == ["out"]:
        return
    items = _split_list(text)
    if items is None or text.lstrip().startswith("["):
        items = [text]
    for name, item in zip(outs, items):
        out.setdefault(name, item)


def frame_locals(frame, tensors) -> dict[int, str]:
    """For tensors passed to a suspected op: position -> a local variable of the user's frame
    holding that very view (same memory, shape and strides), else one holding the same
    elements in another shape (``torch.kron(a, b, out=out)`` runs as ``mul`` on reshaped
    views of ``out`` and ``b``)."""
    out = {}
    try:
        names = frame.f_locals
    except Exception:  # noqa: BLE001
        return out
    keys: dict = {}
    for k, t in tensors.items():
        try:
            keys.setdefault((t.data_ptr(), tuple(t.shape), tuple(t.stride()), t.dtype),
                            []).append(k)
        except Exception:  # noqa: BLE001
            continue
    variables = [(var, value) for var, value in list(names.items())
                 if isinstance(value, torch.Tensor) and not var.startswith("_")]
    for var, value in variables:
        try:
            key = (value.data_ptr(), tuple(value.shape), tuple(value.stride()), value.dtype)
        except Exception:  # noqa: BLE001
            continue
        for k in keys.get(key, ()):
            out.setdefault(k, var)
    for k, t in tensors.items():
        if k in out:
            continue
        for var, value in variables:
            try:
                if _same_elements(t, value):
                    out[k] = var
                    break
            except Exception:  # noqa: BLE001
                continue
    return out


_SAME_LIMIT = 1 << 16


def _offsets(t: torch.Tensor) -> torch.Tensor:
    offsets = torch.zeros((), dtype=torch.int64)
    for n, s in zip(t.shape, t.stride()):
        offsets = offsets.unsqueeze(-1) + torch.arange(n, dtype=torch.int64) * s
    return offsets.reshape(-1).sort().values


def _same_elements(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Do two views of one storage reach exactly the same elements, each once?"""
    if a.dtype != b.dtype or a.data_ptr() != b.data_ptr() or a.numel() != b.numel() or \
            not 0 < a.numel() <= _SAME_LIMIT or \
            a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return False
    oa, ob = _offsets(a), _offsets(b)
    return bool(torch.equal(oa, ob)) and bool((oa[1:] != oa[:-1]).all())


# aten ops a Python binary operator on two tensors runs as, by operator
_OPERATOR_OPS = {"+": ("add",), "-": ("sub",), "*": ("mul",), "/": ("div",),
                 "@": ("mm", "bmm", "matmul", "mv", "dot"), "**": ("pow",),
                 "%": ("remainder",), "//": ("floor_divide",)}


def _operands(spec, slots, where, exprs: dict) -> dict:
    """Names of an op's two operands from the one binary operator on the user's line that
    runs as it (``loss = a * c``: ``self`` is ``a``, ``other`` is ``c``). Only when both
    operands are tensors with dimensions: a Python number becomes a 0-dim tensor and may have
    been the left operand (``lr * grad`` runs as ``grad.__rmul__(lr)``), and a literal
    number anywhere in the operator makes its order unknown."""
    first, second = (a for a in spec.args[:2]) if len(spec.args) >= 2 else (None, None)
    if first is None or first.name in exprs or second.name in exprs:
        return exprs
    ops = [o for o in operators(where[0].co_filename, where[1])
           if spec.base in _OPERATOR_OPS.get(o.op, ())]
    if len(ops) != 1 or ops[0].literal:
        return exprs
    mine = {s.label: s for s in slots}
    a, b = mine.get(first.name), mine.get(second.name)
    if a is None or b is None or not a.shape or not b.shape:
        return exprs
    out = dict(exprs)
    out[first.name], out[second.name] = ops[0].left, ops[0].right
    return out


class Namer:
    """Names the slots of a built trace, lazily, caching per op."""

    def __init__(self, trace, built):
        self.trace = trace
        self.built = built
        self.cache: dict = {}

    def op_names(self, i: int) -> list[str]:
        got = self.cache.get(i)
        if got is not None:
            return got
        call = self.trace.calls[i]
        info = self.built.infos[i]
        refs = self.built.refs[i]
        exprs = {}
        if call.where is not None:
            code, line = call.where
            try:
                exprs = expressions(call.spec, code.co_filename, line)
            except Exception:  # noqa: BLE001
                exprs = {}
        local = (call.extra or {}).get("locals", {})
        modules = self.trace.names
        out = []
        if call.where is not None and call.spec is not None:
            exprs = _operands(call.spec, info.slots, call.where, exprs)
        for k, s in enumerate(info.slots):
            name = exprs.get(s.label) or local.get(k) or _item_of(exprs, s.label)
            if name is None and modules is not None and refs[k].gen is not None:
                name = modules.lookup(refs[k].gen.weak, s.start, s.shape, s.strides)
            out.append(name or storage_form(s))
        self.cache[i] = out
        return out

    def slot_name(self, info, slot) -> str:
        names = self.op_names(info.index)
        for k, s in enumerate(info.slots):
            if s is slot:
                return names[k]
        return storage_form(slot)

    def finding_names(self, f) -> list[str]:
        out = []
        saved = getattr(f, "saved", None)
        for s in f.slots:
            if saved is not None and s is f.slots[0]:   # named as its forward op saw it
                n = self.slot_name(self.built.infos[f.ops[-1].forward], saved)
                # unnamed there (an operator's operand): the write's name says which tensor
                if n not in out and n != storage_form(saved):
                    out.append(n)
                continue
            info = next((op for op in f.ops if any(x is s for x in op.slots)), f.ops[0])
            n = self.slot_name(info, s)
            if n not in out:
                out.append(n)
        return out
