"""The import hook (in the manner of pytest's assertion rewriting): modules the trace owns are
compiled from a rewritten AST (:mod:`.rewrite`); every other module is imported as usual.

Owned: modules whose source file lies under one of the *roots* (the script's directory, a
``-m`` module's directory), except anything under a ``site-packages`` or ``dist-packages``
directory and aliasflow itself; and the packages named with ``--include``. Rewritten code is
compiled in memory: nothing is written anywhere (no ``__pycache__`` entry of the rewritten
code, which would then be loaded by a run without the tracer), and compiled code of the
original is never read for an owned module.

:func:`run_path` and :func:`run_module` are runpy's, with the main module's code rewritten:
a tracer hands them to the command line's script runner (``interop/script.py``), which sets
``sys.argv`` and ``sys.path`` as ``python`` would.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types

from . import runtime
from .rewrite import rewrite

_AF_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_NEVER = ("numpy", "torch", "aliasflow")
_INSTALLED = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


class _RewritingLoader(importlib.machinery.SourceFileLoader):
    """A source loader that compiles the rewritten AST and reads and writes no bytecode
    cache (the rest, resources and ``get_source`` included, is the standard loader's)."""

    def __init__(self, fullname, path, on_module):
        super().__init__(fullname, path)
        self.on_module = on_module

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        source = importlib.util.decode_source(self.get_data(path))
        code, summary = rewrite(source, path, runtime.register_site)
        self.on_module(summary)
        return code

    def set_data(self, path, data, *, _mode=0o666):   # never write a cache
        return None


class RewritingFinder(importlib.abc.MetaPathFinder):
    """Finds owned modules first (see the module docstring) and leaves the rest to the
    finders after it. ``on_module(summary)`` hears of each module rewritten;
    ``on_import[name]()`` is called once module ``name`` has been imported (how the PyTorch
    tracer starts when a program imports torch)."""

    def __init__(self, roots, packages=(), on_module=None, on_import=None):
        self.roots = [os.path.realpath(r) + os.sep for r in roots]
        self.packages = set(packages)
        self.on_module = on_module or (lambda summary: None)
        self.on_import = dict(on_import or {})
        self.owned: set = set()   # top-level names of the modules rewritten

    def owns(self, name: str, origin: str) -> bool:
        top = name.split(".")[0]
        if top in _NEVER:
            return False
        if top in self.packages:
            return True
        path = os.path.realpath(origin)
        if path.startswith(_AF_DIR + os.sep) or any(m in path for m in _INSTALLED):
            return False
        return any(path.startswith(r) for r in self.roots)

    def find_spec(self, name, path=None, target=None):
        if name in self.on_import:
            return self._announce(name, path, target)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return None
        if not self.owns(name, spec.origin):
            return None
        self.owned.add(name.split(".")[0])
        loader = _RewritingLoader(name, spec.origin, self.on_module)
        return importlib.util.spec_from_file_location(
            name, spec.origin, loader=loader,
            submodule_search_locations=spec.submodule_search_locations)

    def _announce(self, name, path, target):
        """The spec the other finders give, its loader wrapped to call back once the module
        is executed (the wrapper then takes itself out of the module and its spec)."""
        callback = self.on_import.pop(name)
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Announcing(spec.loader, spec, callback)
        return spec

    def install(self):
        sys.meta_path.insert(0, self)
        return self

    def remove(self):
        if self in sys.meta_path:
            sys.meta_path.remove(self)


class _Announcing:
    def __init__(self, loader, spec, callback):
        self._loader, self._spec, self._callback = loader, spec, callback

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._spec.loader = self._loader
        module.__loader__ = self._loader
        self._loader.exec_module(module)
        self._callback()

    def __getattr__(self, name):
        return getattr(self._loader, name)


def run_path(path, run_name="__main__", on_main=None):
    """``runpy.run_path`` for a script file, its code rewritten: run as module ``run_name``
    with ``sys.argv[0]`` the path, as runpy does (the caller sets the rest of ``sys.argv``
    and ``sys.path``). ``on_main(summary)`` gets the rewrite summary. Returns the module's
    globals."""
    path = os.fspath(path)   # as given, as runpy keeps it (tracebacks and lines show it so)
    with open(path, "rb") as f:
        source = importlib.util.decode_source(f.read())
    loader = importlib.machinery.SourceFileLoader(run_name, path)
    return _run(source, path, run_name, None, loader, None, path, on_main)


def run_module(mod_name, run_name="__main__", alter_sys=True, on_main=None):
    """``runpy.run_module``, the module's code rewritten (a package runs its ``__main__``);
    with ``alter_sys``, ``sys.argv[0]`` is the module's file meanwhile, as runpy makes it."""
    spec = importlib.util.find_spec(mod_name)
    if spec is None or spec.origin is None:
        raise ImportError(f"No module named {mod_name}", name=mod_name)
    if spec.submodule_search_locations is not None:   # a package: its __main__
        mod_name = mod_name + ".__main__"
        spec = importlib.util.find_spec(mod_name)
        if spec is None or spec.origin is None:
            raise ImportError(f"No module named {mod_name}", name=mod_name)
    source = spec.loader.get_source(mod_name)
    return _run(source, spec.origin, run_name, spec, spec.loader,
                mod_name.rpartition(".")[0], spec.origin if alter_sys else None, on_main)


def _run(source, path, run_name, spec, loader, package, argv0, on_main):
    code, summary = rewrite(source, path, runtime.register_site)
    if on_main is not None:
        on_main(summary)
    main = types.ModuleType(run_name)
    main.__dict__.update({"__file__": path, "__cached__": None, "__loader__": loader,
                          "__package__": package, "__spec__": spec,
                          "__builtins__": sys.modules["builtins"]})
    saved_argv0 = sys.argv[0] if sys.argv else None
    saved_main = sys.modules.get(run_name)
    if argv0 is not None and sys.argv:
        sys.argv[0] = argv0
    sys.modules[run_name] = main
    try:
        exec(code, main.__dict__)
    finally:
        if argv0 is not None and sys.argv:
            sys.argv[0] = saved_argv0
        if saved_main is not None:
            sys.modules[run_name] = saved_main
        else:
            sys.modules.pop(run_name, None)
    return main.__dict__
