"""Rewrite a module's AST so that its NumPy writes report to the runtime (as pytest rewrites
``assert``), without changing what the code does.

Each watched operation becomes one call of the runtime (:mod:`.fastpath`, compiled), which
records the operation and performs it; being C, it adds no Python frame, and the call
carries the original node's positions, so exceptions, warnings and tracebacks point at the
user's line exactly as before. Python's evaluation order is kept:

- ``T[K] = V`` becomes ``setitem(V, T, K, site)`` (value first, as Python evaluates it);
  ``T.real = V`` (``imag``, ``flat``) becomes ``setattr(V, T, "real", site)``;
- ``T[K] op= V`` becomes ``aug_store(aug_load(T, K, site), V, op)``: ``T`` and ``K`` once,
  then ``T[K]`` read, ``V``, the in-place operator, the store; ``T.attr op= V`` likewise;
  ``x op= V`` (a name) becomes ``x = aug_name(x, V, op, site)``;
- ``F(args)`` whose name could be a NumPy write (``names.may_write``: an ``out`` argument,
  an in-place function or method) becomes ``call(F, site, args)``;
- tuple and chained targets (``a[0], a[1] = a[1], a[0]``) unpack into temporaries first and
  then assign in Python's order, so each store is seen; ``name = <a view>`` is noted for the
  stale-view check (``bind``).
"""
from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass, field

from .names import VIEW_ATTRIBUTES, VIEW_METHODS, WRITING_ATTRIBUTES, may_write

RUNTIME = "@aliasflow_numpy"   # not an identifier: user code can never name or shadow it

# in-place operator codes (fastpath.INPLACE's order)
_INPLACE = {ast.Add: 0, ast.Sub: 1, ast.Mult: 2, ast.Div: 3, ast.FloorDiv: 4, ast.Mod: 5,
            ast.Pow: 6, ast.LShift: 7, ast.RShift: 8, ast.BitOr: 9, ast.BitXor: 10,
            ast.BitAnd: 11, ast.MatMult: 12}

# decorators that compile the function from its bytecode (numba) or refuse unknown globals
_COMPILERS = ("jit", "njit", "vectorize", "guvectorize", "cfunc", "stencil", "generated_jit")


@dataclass
class Summary:
    """What one module's rewriting watched and left alone."""
    path: str
    watched: dict = field(default_factory=dict)     # construct -> count
    unwatched: dict = field(default_factory=dict)   # construct (why) -> [line, ...]
    imports: set = field(default_factory=set)       # top-level modules imported

    def note(self, table, key, line=None):
        if table is self.watched:
            table[key] = table.get(key, 0) + 1
        else:
            table.setdefault(key, []).append(line)


class _Rewriter(ast.NodeTransformer):
    def __init__(self, source: str, path: str, register_site):
        self.source = source
        self.path = path
        self.register = register_site
        self.summary = Summary(path)
        self.scopes = ["module"]
        self.changes = 0
        self.temps = itertools.count()

    # ---- helpers --------------------------------------------------------------------------
    def rt(self, attr, node):
        return _at(ast.Attribute(ast.Name(RUNTIME, ast.Load()), attr, ast.Load()), node)

    def rt_call(self, attr, args, node, keywords=()):
        return _at(ast.Call(self.rt(attr, node), list(args), list(keywords)), node)

    def text(self, node) -> str:
        return ast.get_source_segment(self.source, node) or ""

    def site(self, node, kind, names=()) -> ast.Constant:
        index = self.register(self.path, node.lineno, node.col_offset,
                              getattr(node, "end_lineno", node.lineno),
                              getattr(node, "end_col_offset", node.col_offset), kind,
                              self.text(node), tuple(names))
        self.summary.note(self.summary.watched, kind)
        self.changes += 1
        return _at(ast.Constant(index), node)

    def key(self, node):
        """A subscript's slice as a value expression (``1:3`` -> ``slice(1, 3, None)``)."""
        if isinstance(node, ast.Slice):
            parts = [self.visit(p) if p is not None else _at(ast.Constant(None), node)
                     for p in (node.lower, node.upper, node.step)]
            return self.rt_call("slice", parts, node)
        if isinstance(node, ast.Tuple) and any(isinstance(e, ast.Slice) for e in node.elts):
            return _at(ast.Tuple([self.key(e) for e in node.elts], ast.Load()), node)
        return self.visit(node)

    # ---- scopes ---------------------------------------------------------------------------
    def visit_FunctionDef(self, node):
        for dec in node.decorator_list:
            if _compiled(dec):
                self.summary.note(self.summary.unwatched, "function compiled by a decorator",
                                  node.lineno)
                return node
        self.scopes.append("function")
        self.generic_visit(node)
        self.scopes.pop()
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self.scopes.append("class")
        self.generic_visit(node)
        self.scopes.pop()
        return node

    def visit_Import(self, node):
        for alias in node.names:
            self.summary.imports.add(alias.name.split(".")[0])
        return node

    def visit_ImportFrom(self, node):
        if node.module and not node.level:
            self.summary.imports.add(node.module.split(".")[0])
        return node

    def visit_Assign(self, node):
        node.value = self.visit(node.value)
        if len(node.targets) == 1:
            target = node.targets[0]
            store = self.single_store(target, node.value, node)
            if store is not None:
                return store
            if isinstance(target, ast.Name):
                if _makes_view(node.value):
                    node.value = self.rt_call("bind", [node.value], node.value)
                return node
        if not any(_writes(t) for t in node.targets):
            node.targets = [self.visit(t) for t in node.targets]
            return node
        if self.scopes[-1] == "class":
            self.summary.note(self.summary.unwatched, "tuple or chained assignment in a class "
                              "body", node.lineno)
            return node
        # value once into a temporary, then each target in Python's order
        tmp = self.temp()
        body = [_at(ast.Assign([_at(ast.Name(tmp, ast.Store()), node)], node.value), node)]
        for target in node.targets:
            body.extend(self.assign_from(target, tmp, node, node.value))
        body.append(_at(ast.Delete([_at(ast.Name(tmp, ast.Del()), node)]), node))
        self.changes += 1
        return body

    def temp(self) -> str:
        return f"@aliasflow_t{next(self.temps)}"

    def assign_from(self, target, tmp, node, source=None):
        """Statements assigning the value in ``tmp`` to ``target`` as Python would
        (``source``: the expression the value came from, for naming it)."""
        load = _at(ast.Name(tmp, ast.Load()), node)
        if isinstance(target, (ast.Tuple, ast.List)) and any(_writes(e) for e in target.elts):
            names = [self.temp() for _ in target.elts]
            elts = []
            for e, n in zip(target.elts, names):
                name = _at(ast.Name(n, ast.Store()), node)
                elts.append(_at(ast.Starred(name, ast.Store()), e)
                            if isinstance(e, ast.Starred) else name)
            body = [_at(ast.Assign([_at(ast.Tuple(elts, ast.Store()), node)], load), node)]
            # the unpacked values existed before any of the stores below (a stale view is
            # one of them read after an earlier store changed it)
            body.append(_at(ast.Expr(self.rt_call(
                "born", [_at(ast.Name(n, ast.Load()), node) for n in names], node)), node))
            parts = source.elts if isinstance(source, (ast.Tuple, ast.List)) and len(
                source.elts) == len(target.elts) else [None] * len(target.elts)
            for e, n, part in zip(target.elts, names, parts):
                inner = e.value if isinstance(e, ast.Starred) else e
                body.extend(self.assign_from(inner, n, node, part))
            body.append(_at(ast.Delete([_at(ast.Name(n, ast.Del()), node) for n in names]),
                            node))
            return body
        store = self.single_store(target, load, node, source)
        if store is not None:
            return [store]
        return [_at(ast.Assign([self.visit(target)], load), node)]

    def single_store(self, target, value, node, source=None):
        """``target = value`` as a runtime call, or None for other targets."""
        value_text = self.text(source if source is not None else value)
        if isinstance(target, ast.Subscript):
            site = self.site(node, "setitem", (("target", self.text(target)),
                                                ("value", value_text),
                                                ("index", self.text(target.slice)),
                                                ("container", self.text(target.value))))
            args = [value, self.visit(target.value), self.key(target.slice), site]
            return _at(ast.Expr(self.rt_call("setitem", args, target)), node)
        if isinstance(target, ast.Attribute) and target.attr in WRITING_ATTRIBUTES:
            site = self.site(node, "set-" + target.attr, (("target", self.text(target)),
                                                           ("value", value_text)))
            args = [value, self.visit(target.value), _at(ast.Constant(target.attr), target),
                    site]
            return _at(ast.Expr(self.rt_call("setattr", args, target)), node)
        return None

    def visit_AugAssign(self, node):
        target = node.target
        op = _at(ast.Constant(_INPLACE[type(node.op)]), node)
        if isinstance(target, ast.Name):
            value = self.visit(node.value)
            site = self.site(node, "aug-name", (("target", target.id),
                                                 ("value", self.text(node.value))))
            load = _at(ast.Name(target.id, ast.Load()), target)
            result = self.rt_call("aug_name", [load, value, op, site], node)
            return _at(ast.Assign([_at(ast.Name(target.id, ast.Store()), target)], result),
                       node)
        if isinstance(target, ast.Subscript):
            container = self.visit(target.value)
            key = self.key(target.slice)
            site = self.site(node, "aug-setitem", (("target", self.text(target)),
                                                    ("value", self.text(node.value)),
                                                    ("index", self.text(target.slice)),
                                                    ("container", self.text(target.value))))
            handle = self.rt_call("aug_load", [container, key, site], target)
            value = self.visit(node.value)
            return _at(ast.Expr(self.rt_call("aug_store", [handle, value, op], node)), node)
        if isinstance(target, ast.Attribute) and target.attr in WRITING_ATTRIBUTES:
            container = self.visit(target.value)
            site = self.site(node, "aug-" + target.attr, (("target", self.text(target)),
                                                          ("value", self.text(node.value))))
            handle = self.rt_call("aug_load_attr", [container, _at(ast.Constant(target.attr),
                                                                   target), site], target)
            value = self.visit(node.value)
            return _at(ast.Expr(self.rt_call("aug_store", [handle, value, op], node)), node)
        node.value = self.visit(node.value)
        return node

    def visit_AnnAssign(self, node):
        if node.value is not None and _writes(node.target):
            self.summary.note(self.summary.unwatched, "annotated assignment to a subscript",
                              node.lineno)
        return self.generic_visit(node)

    def visit_For(self, node):
        if _writes(node.target):
            self.summary.note(self.summary.unwatched, "for-loop target that is a subscript",
                              node.lineno)
        return self.generic_visit(node)

    visit_AsyncFor = visit_For

    def visit_withitem(self, node):
        if node.optional_vars is not None and _writes(node.optional_vars):
            self.summary.note(self.summary.unwatched, "with-statement target that is a "
                              "subscript", getattr(node.context_expr, "lineno", None))
        return self.generic_visit(node)

    # ---- calls ---------------------------------------------------------------------------
    def call_names(self, node):
        """``(label, text)`` of the callee and every operand (and the elements of list or
        tuple displays), labels as :mod:`.calls` gives them."""
        names = [("func", self.text(node.func))]
        if isinstance(node.func, ast.Attribute):
            names.append((("self",), self.text(node.func.value)))
        parts = [((0, i), a) for i, a in enumerate(node.args)] + \
            [((1, k.arg), k.value) for k in node.keywords]
        for label, value in parts:
            names.append((label, self.text(value)))
            if isinstance(value, (ast.List, ast.Tuple)):
                names.extend((label + (j,), self.text(e)) for j, e in enumerate(value.elts))
        return tuple(names)

    def visit_Call(self, node):
        self.generic_visit(node)
        name = node.func.attr if isinstance(node.func, ast.Attribute) else \
            node.func.id if isinstance(node.func, ast.Name) else None
        keywords = [k.arg for k in node.keywords]
        starred = any(isinstance(a, ast.Starred) for a in node.args)
        positional = sum(not isinstance(a, ast.Starred) for a in node.args)
        if None in keywords:   # **kwargs: the runtime would raise its own TypeErrors
            if may_write(name, 1 << 30, True, set(keywords) - {None}):
                self.summary.note(self.summary.unwatched, "call with **kwargs", node.lineno)
            return node
        if not may_write(name, positional, starred, set(keywords)):
            return node
        site = self.site(node, "call", self.call_names(node))
        return self.rt_call("call", [node.func, site] + node.args, node, node.keywords)


def _writes(target) -> bool:
    """Does assigning to ``target`` store into a subscript or a writing attribute?"""
    if isinstance(target, ast.Subscript):
        return True
    if isinstance(target, ast.Attribute):
        return target.attr in WRITING_ATTRIBUTES
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_writes(e) for e in target.elts)
    if isinstance(target, ast.Starred):
        return _writes(target.value)
    return False


def _makes_view(value) -> bool:
    if isinstance(value, ast.Subscript):
        return True
    if isinstance(value, ast.Attribute):
        return value.attr in VIEW_ATTRIBUTES
    if isinstance(value, ast.Call):
        f = value.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) \
            else None
        return name in VIEW_METHODS
    return False


def _compiled(dec) -> bool:
    while isinstance(dec, ast.Call):
        dec = dec.func
    name = dec.attr if isinstance(dec, ast.Attribute) else dec.id if isinstance(
        dec, ast.Name) else ""
    return name in _COMPILERS


def _at(new, template):
    """Give ``new`` and its descendants without positions the full span of ``template``."""
    for n in ast.walk(new):
        if "lineno" in n._attributes and getattr(n, "lineno", None) is None:
            n.lineno = template.lineno
            n.col_offset = template.col_offset
            n.end_lineno = getattr(template, "end_lineno", template.lineno)
            n.end_col_offset = getattr(template, "end_col_offset", template.col_offset)
    return new


def rewrite(source: str, path: str, register_site):
    """``(code object, Summary)`` for ``source``; line numbers and columns are the original
    ones. ``register_site(path, line, col, end_line, end_col, kind, text, names) -> int``
    numbers each watched place."""
    tree, summary = rewrite_tree(ast.parse(source, filename=path), source, path,
                                 register_site)
    return compile(tree, path, "exec", dont_inherit=True), summary


def rewrite_tree(tree: ast.Module, source: str, path: str, register_site):
    """``(tree, Summary)``: the module ``tree`` parsed from ``source`` (whose text names the
    operands), rewritten in place, for a caller that compiles it itself (IPython's AST
    transformers: a notebook cell is never imported)."""
    rewriter = _Rewriter(source, path, register_site)
    return rewriter.visit(tree), rewriter.summary
