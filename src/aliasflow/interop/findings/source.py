"""Source lines as the user knows them: paths relative to the working directory, which frames
are the user's, and the expressions a line passes to the call it makes.

Parsing is by :mod:`ast` on the file's text (through :mod:`linecache`), cached per file, and
happens only for the ops a finding names. Nothing is imported or evaluated.
"""
from __future__ import annotations

import ast
import linecache
import os
import sysconfig
from dataclasses import dataclass
from functools import lru_cache

_AF_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
_STDLIB = tuple({p + os.sep for p in (sysconfig.get_paths()["stdlib"],
                                      sysconfig.get_paths()["platstdlib"])})


def library_file(filename: str, extra=()) -> bool:
    """Is ``filename`` code the user did not write: aliasflow, installed packages, Python's
    own library, frozen modules (plus any of the ``extra`` prefixes)?"""
    if filename.startswith((_AF_DIR, "<frozen") + tuple(extra)):
        return True
    return ("site-packages" + os.sep in filename or "dist-packages" + os.sep in filename
            or filename.startswith(_STDLIB))


def relative(path: str, cwd: str | None = None) -> str:
    """``path`` relative to the working directory when it lies under it."""
    if not path or path.startswith("<"):
        return path
    cwd = cwd or os.getcwd()
    try:
        rel = os.path.relpath(path, cwd)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def line_text(path: str, line: int) -> str:
    return linecache.getline(path, line).strip()


_SKIPPED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.While,
            ast.With, ast.Try, ast.AsyncFor, ast.AsyncWith)


class _Parsed:
    """One file parsed once: each line's innermost simple statement (the last one starting
    at or before it that spans it) and the text of any node, cut from line offsets. A line
    where two simple statements start (``a(); b()``) has none: a line number cannot say which
    of them an op ran from."""

    def __init__(self, lines: list[str], tree: ast.Module):
        self.lines = lines   # linecache's: split at newlines only, as the parser counts them
        self.statement: dict[int, ast.stmt | None] = {}
        starts: dict[int, int] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.stmt) and not isinstance(node, _SKIPPED):
                starts[node.lineno] = starts.get(node.lineno, 0) + 1
                for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                    best = self.statement.get(line)
                    if best is None or node.lineno >= best.lineno:
                        self.statement[line] = node
        for line, node in list(self.statement.items()):
            if starts.get(node.lineno, 0) > 1:
                self.statement[line] = None

    def segment(self, node) -> str:
        """The source text of ``node`` (what :func:`ast.get_source_segment` gives)."""
        try:
            first, last = node.lineno - 1, node.end_lineno - 1
            start, end = node.col_offset, node.end_col_offset
        except (AttributeError, TypeError):
            return ""
        if last >= len(self.lines) or end is None:
            return ""
        if first == last:
            return self.lines[first].encode()[start:end].decode(errors="replace")
        head = self.lines[first].encode()[start:].decode(errors="replace")
        tail = self.lines[last].encode()[:end].decode(errors="replace")
        return head + "".join(self.lines[first + 1:last]) + tail


@lru_cache(maxsize=256)
def _parsed(path: str) -> _Parsed | None:
    lines = linecache.getlines(path)
    if not lines:
        return None
    text = "".join(lines)
    try:
        return _Parsed(lines, ast.parse(text))
    except (SyntaxError, ValueError):
        return None


def _statement(path: str, line: int):
    parsed = _parsed(path)
    if parsed is None:
        return None, None
    return parsed.statement.get(line), parsed


@dataclass(frozen=True)
class CallText:
    """A call on a line: ``function`` (the called name: ``"add_"`` for ``x.add_(y)``,
    ``"mm"`` for ``torch.mm(a, b)``), ``receiver`` (``"x"``, or None), ``args`` and
    ``kwargs`` as source text."""
    function: str
    receiver: str | None
    args: tuple
    kwargs: dict


@dataclass(frozen=True)
class AssignText:
    """An assignment on a line: ``target`` and ``value`` as source text, ``op`` the
    augmented operator (``"+"`` for ``+=``) or None, ``subscript``: the target is
    ``x[...]``."""
    target: str
    value: str
    op: str | None
    subscript: bool


_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
        ast.Mod: "%", ast.Pow: "**", ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|",
        ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}
#: the symbol of each binary operator node type (``ast.Add`` -> ``"+"``)
OPERATOR_SYMBOLS = _OPS


@lru_cache(maxsize=4096)
def assignment(path: str, line: int) -> AssignText | None:
    """The assignment the statement at ``path:line`` makes, if it is one."""
    node, parsed = _statement(path, line)
    if isinstance(node, ast.AugAssign):
        return AssignText(parsed.segment(node.target), parsed.segment(node.value),
                          _OPS.get(type(node.op), "?"), isinstance(node.target, ast.Subscript))
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        return AssignText(parsed.segment(target), parsed.segment(node.value), None,
                          isinstance(target, ast.Subscript))
    return None


@lru_cache(maxsize=4096)
def calls(path: str, line: int) -> tuple[CallText, ...]:
    """The calls the statement at ``path:line`` makes, outermost first."""
    node, parsed = _statement(path, line)
    if node is None:
        return ()
    out = []
    for c in ast.walk(node):
        if not isinstance(c, ast.Call):
            continue
        f = c.func
        if isinstance(f, ast.Attribute):
            name = f.attr
            receiver = parsed.segment(f.value) or None
        elif isinstance(f, ast.Name):
            name, receiver = f.id, None
        else:
            continue
        args = tuple(parsed.segment(a) for a in c.args)
        kwargs = {k.arg: parsed.segment(k.value) for k in c.keywords if k.arg}
        out.append(CallText(name, receiver, args, kwargs))
    return tuple(out)


@dataclass(frozen=True)
class OperatorText:
    """A binary operator on a line (``a * c``): ``op`` (``"*"``), ``left`` and ``right``
    as source text, and whether each is a literal number (``2 * x``: Python then runs
    ``x.__rmul__(2)``, so the left operand is not the first argument)."""
    op: str
    left: str
    right: str
    literal: bool


@lru_cache(maxsize=4096)
def operators(path: str, line: int) -> tuple[OperatorText, ...]:
    """The binary operators the statement at ``path:line`` applies, outermost first."""
    node, parsed = _statement(path, line)
    if node is None:
        return ()
    out = []
    for b in ast.walk(node):
        if isinstance(b, ast.BinOp) and type(b.op) in _OPS:
            literal = any(isinstance(x, ast.Constant) or isinstance(x, ast.UnaryOp) and
                          isinstance(x.operand, ast.Constant) for x in (b.left, b.right))
            out.append(OperatorText(_OPS[type(b.op)], parsed.segment(b.left),
                                    parsed.segment(b.right), literal))
    return tuple(out)


def index_text(name: str, index) -> str:
    """``labels[0, 3]`` for name ``labels`` and index ``(0, 3)``."""
    if index is None:
        return name
    inner = ", ".join(str(i) for i in index)
    return f"{name}[{inner}]" if inner else name
