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


@lru_cache(maxsize=256)
def _tree(path: str):
    lines = linecache.getlines(path)
    if not lines:
        return None
    try:
        return ast.parse("".join(lines)), "".join(lines)
    except (SyntaxError, ValueError):
        return None


def _statement(path: str, line: int):
    got = _tree(path)
    if got is None:
        return None, None
    tree, text = got
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                     ast.If, ast.For, ast.While, ast.With, ast.Try,
                                     ast.AsyncFor, ast.AsyncWith)):
                if best is None or node.lineno >= best.lineno:
                    best = node
    return best, text


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


def assignment(path: str, line: int) -> AssignText | None:
    """The assignment the statement at ``path:line`` makes, if it is one."""
    node, text = _statement(path, line)
    if isinstance(node, ast.AugAssign):
        return AssignText(ast.get_source_segment(text, node.target) or "",
                          ast.get_source_segment(text, node.value) or "",
                          _OPS.get(type(node.op), "?"), isinstance(node.target, ast.Subscript))
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        return AssignText(ast.get_source_segment(text, target) or "",
                          ast.get_source_segment(text, node.value) or "", None,
                          isinstance(target, ast.Subscript))
    return None


def calls(path: str, line: int) -> list[CallText]:
    """The calls the statement at ``path:line`` makes, outermost first."""
    node, text = _statement(path, line)
    if node is None:
        return []
    out = []
    for c in ast.walk(node):
        if not isinstance(c, ast.Call):
            continue
        f = c.func
        if isinstance(f, ast.Attribute):
            name = f.attr
            receiver = ast.get_source_segment(text, f.value)
        elif isinstance(f, ast.Name):
            name, receiver = f.id, None
        else:
            continue
        args = tuple(ast.get_source_segment(text, a) or "" for a in c.args)
        kwargs = {k.arg: ast.get_source_segment(text, k.value) or "" for k in c.keywords
                  if k.arg}
        out.append(CallText(name, receiver, args, kwargs))
    return out


def index_text(name: str, index) -> str:
    """``labels[0, 3]`` for name ``labels`` and index ``(0, 3)``."""
    if index is None:
        return name
    inner = ", ".join(str(i) for i in index)
    return f"{name}[{inner}]" if inner else name
