"""The user's frame of an aten call: the first frame, walking from the dispatch towards the
bottom of the stack, whose code is not torch's, aliasflow's, an installed package's or
Python's own.

:func:`user_site` (the frame's ``(code, line)``, what every call records) and :func:`user_frame`
(the frame itself) are the compiled walks (``_native_src/frames.cpp``) when they are built (and
not ``AF_PURE=1``), else :func:`user_site_py` and :func:`user_frame_py`, the references they
must agree with (the tests compare them). Each code object is classified once (:func:`is_user_code`); the answers are kept in
:data:`USER_CODE` for the life of the process.
"""
from __future__ import annotations

import os
import sys
import sysconfig

import torch

from ...solver.native import load

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_AF_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
_STDLIB = tuple(p + os.sep for p in {sysconfig.get_paths()["stdlib"],
                                     sysconfig.get_paths()["platstdlib"]})

#: id(code object) -> (code object, is it the user's): keyed by address, as hashing a code
#: object hashes its constants and names on every lookup; the entry keeps the code object
#: alive, so its address is not reused.
USER_CODE: dict = {}

_getframe = sys._getframe


def internal_file(filename: str) -> bool:
    """Frames of torch, aliasflow, installed packages and Python itself are not the user's."""
    if filename.startswith((_TORCH_DIR, _AF_DIR, "<frozen")):
        return True
    return ("site-packages" + os.sep in filename or "dist-packages" + os.sep in filename
            or filename.startswith(_STDLIB))


def is_user_code(code) -> bool:
    """Is ``code`` (a code object) the user's?"""
    return not internal_file(code.co_filename)


def user_frame_py(skip, known, classify):
    """The first frame, from the caller's frame with ``skip`` frames passed over towards the
    bottom of the stack, whose code object ``classify(code)`` calls the user's (the answers
    kept in the dict ``known``, ``id(code) -> (code, bool)``); None if there is none."""
    if skip < 0:
        raise ValueError(f"user_frame: skip must be >= 0, got {skip}")
    try:
        f = _getframe(skip + 1)
    except ValueError:   # the stack is shallower than skip
        return None
    while f is not None:
        code = f.f_code
        entry = known.get(id(code))
        if entry is not None and type(entry) is tuple and len(entry) == 2 and \
                entry[0] is code:
            mine = entry[1]
        else:
            mine = bool(classify(code))
            known[id(code)] = (code, mine)
        if mine:
            return f
        f = f.f_back
    return None


def user_stacklevel() -> int:
    """The ``stacklevel`` with which ``warnings.warn``, called by this function's caller,
    names the user's frame (the caller's own when there is none)."""
    level, f = 1, _getframe(1)
    while f is not None:
        if is_user_code(f.f_code):
            return level
        f, level = f.f_back, level + 1
    return 1


def user_site_py(skip, known, classify):
    """``(code, line)`` of the frame :func:`user_frame_py` finds, or None."""
    if skip < 0:
        raise ValueError(f"user_site: skip must be >= 0, got {skip}")
    f = user_frame_py(skip + 1, known, classify)
    return None if f is None else (f.f_code, f.f_lineno)


_compiled = load(__package__ + "._frames")
user_frame = _compiled.user_frame if _compiled is not None else user_frame_py
user_site = _compiled.user_site if _compiled is not None else user_site_py
COMPILED = _compiled is not None
