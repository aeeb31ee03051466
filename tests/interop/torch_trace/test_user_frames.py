"""The tracer's search for the user's frame: the compiled walk (``_frames``) and the
pure-Python reference against an oracle that walks ``sys._getframe`` with no cache, on
random stacks of nested calls."""
import sys

import pytest
from hypothesis import given, settings, strategies as st

from aliasflow.interop.torch_trace import frames

WALKS = {"reference": (frames.user_frame_py, frames.user_site_py)}
if frames.COMPILED:
    WALKS["compiled"] = (frames._compiled.user_frame, frames._compiled.user_site)


def _level(n):
    """A code object per depth: level k's function is a different function from level j's."""
    src = f"def level_{n}(go, k):\n    return go(k)\n"
    space: dict = {}
    exec(compile(src, f"<level {n}>", "exec"), space)
    return space[f"level_{n}"]


LEVELS = [_level(n) for n in range(12)]


def _oracle(skip, user_names):
    """The first frame at or past ``sys._getframe(skip + 1)`` (the caller's caller: skip
    counted from the caller of the walk) whose function is named in ``user_names``."""
    f = sys._getframe(skip + 1)
    while f is not None:
        if f.f_code.co_name in user_names:
            return f
        f = f.f_back
    return None


def _on_stack(depth, probe):
    """Run ``probe()`` under ``depth`` nested level functions (level_0 outermost)."""
    def go(k):
        return LEVELS[k](go, k + 1) if k < depth else probe()
    return go(0)


@pytest.mark.parametrize("walk", WALKS)
@settings(max_examples=150, deadline=None)
@given(depth=st.integers(0, 11), skip=st.integers(0, 14),
       users=st.sets(st.integers(0, 11), max_size=4), prefill=st.booleans())
def test_walks_agree_with_the_oracle(walk, depth, skip, users, prefill):
    user_frame, user_site = WALKS[walk]
    names = {f"level_{u}" for u in users}
    known: dict = {}
    if prefill:   # a stale entry under a code's address (another code object) is ignored
        for fn in LEVELS:
            known[id(fn.__code__)] = (compile("0", "<other>", "eval"), True)
    calls = []

    def classify(code):
        calls.append(code)
        return code.co_name in names

    def probe():
        expected = _oracle(skip, names) if skip < len(_stack()) else None
        got = user_frame(skip, known, classify)
        site = user_site(skip, known, classify)
        return expected, got, site

    expected, got, site = _on_stack(depth, probe)
    assert got is expected
    assert site == (None if expected is None else (expected.f_code, expected.f_lineno))
    # every code object is classified once; the cache holds it, with its own answer
    assert len(calls) == len(set(map(id, calls)))
    for code in calls:
        assert known[id(code)] == (code, code.co_name in names)


def _stack():
    out, f = [], sys._getframe(1)
    while f is not None:
        out.append(f)
        f = f.f_back
    return out


@pytest.mark.parametrize("walk", WALKS)
def test_classifier_errors_reach_the_caller(walk):
    user_frame, user_site = WALKS[walk]

    def classify(code):
        raise RuntimeError("no")
    for fn in (user_frame, user_site):
        with pytest.raises(RuntimeError, match="no"):
            fn(0, {}, classify)


@pytest.mark.parametrize("walk", WALKS)
def test_bad_arguments_are_refused(walk):
    user_frame, user_site = WALKS[walk]
    for fn in (user_frame, user_site):
        with pytest.raises(ValueError, match="skip must be >= 0, got -1"):
            fn(-1, {}, bool)


def test_tracer_uses_the_compiled_walk_when_built():
    from aliasflow.solver.native import pure_requested
    assert frames.COMPILED or pure_requested()
