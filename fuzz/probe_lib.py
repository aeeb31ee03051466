"""What the cases of ``probe_surfaces.py`` share: the registries of named cases and seeded
mutation families, the verdict exceptions and helpers.

A case either returns (``ok``) or raises :class:`Wrong` / :class:`Modified`; any other
exception escaping a case is a ``traceback``. Helpers decide the usual shapes of a verdict:
:func:`refused` (must be refused cleanly, nothing changed) and :func:`either` (refused
cleanly with nothing changed, or accepted with the value an oracle gives).
"""
from __future__ import annotations

import numpy as np

import aliasflow as af


class Wrong(Exception):
    """Accepted where it must be refused, or a value an oracle disagrees with."""


class Modified(Exception):
    """Refused, but something changed before the refusal."""


CLEAN = (af.AliasflowError,)
DLPACK_CLEAN = (af.AliasflowError, BufferError)
_NAMED: dict = {}
_FAMILIES: dict = {}


def named(fn):
    _NAMED[fn.__name__] = fn
    return fn


def family(fn):
    _FAMILIES[fn.__name__] = fn
    return fn


def case_names(per_family: int, seed: int = 0) -> list[str]:
    names = [f"{n}" for n in _NAMED]
    for fam in _FAMILIES:
        names += [f"{fam}#{seed + k}" for k in range(per_family)]
    return names


def refused(fn, *, state=None, clean=CLEAN, what: str = ""):
    """``fn()`` must raise a clean error, with ``state()`` the same before and after."""
    before = state() if state is not None else None
    try:
        out = fn()
    except clean as exc:
        if state is not None and not _same(state(), before):
            raise Modified(f"{what}: refused ({str(exc)[:120]}) after a change") from None
        return exc
    raise Wrong(f"{what}: accepted, gave {_short(out)}")


def either(fn, check=None, *, state=None, clean=CLEAN, what: str = ""):
    """``fn()`` refused cleanly with nothing changed, or accepted and ``check(result)``
    (which raises :class:`Wrong`). Returns ``("refused", exc)`` or ``("accepted", value)``."""
    before = state() if state is not None else None
    try:
        out = fn()
    except clean as exc:
        if state is not None and not _same(state(), before):
            raise Modified(f"{what}: refused ({str(exc)[:120]}) after a change") from None
        return "refused", exc
    if check is not None:
        check(out)
    return "accepted", out


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and \
            a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def _short(x) -> str:
    try:
        text = repr(x)
    except Exception as exc:  # a repr that fails is a finding of its own elsewhere
        text = f"<{type(x).__name__}: repr failed: {exc}>"
    return text[:160]


def same_array(got, expect, what: str) -> None:
    got, expect = np.asarray(got), np.asarray(expect)
    if got.dtype != expect.dtype or got.shape != expect.shape or \
            got.tobytes() != expect.tobytes():
        raise Wrong(f"{what}: got {_short(got)} ({got.dtype}, {got.shape}), expected "
                    f"{_short(expect)} ({expect.dtype}, {expect.shape})")


