"""The import hook (in the manner of pytest's assertion rewriting): modules the trace owns are
compiled from a rewritten AST (:mod:`.rewrite`); every other module is imported as usual.

Owned: modules whose source file lies under one of the *roots* (the script's directory, a
``-m`` module's directory), except anything under a ``site-packages`` or ``dist-packages``
directory and aliasflow itself; and the packages named with ``--include``. Rewritten code is
compiled in memory: nothing is written anywhere (no ``__pycache__`` entry of the rewritten
code, which would then be loaded by a run without the tracer), and compiled code of the
original is never read for an owned module.

:func:`run_main` runs a script or a module as ``__main__`` the way ``python script.py`` and
``python -m module`` do (``sys.argv``, ``sys.path[0]``, ``__file__``, ``__spec__``).
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
        self.not_owned: set = set()   # top-level names imported from elsewhere

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
            if spec is not None and "." not in name:
                self.not_owned.add(name)
            return None
        if not self.owns(name, spec.origin):
            if "." not in name:
                self.not_owned.add(name)
            return None
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


def run_main(script=None, module=None, argv=(), on_main=None):
    """Run ``script`` (a path) or ``module`` (a dotted name) as ``__main__``, rewritten, as
    ``python script.py argv...`` / ``python -m module argv...`` would. ``on_main(summary)``
    gets the main module's rewrite summary. Exceptions propagate; ``sys.argv``,
    ``sys.path[0]`` and ``sys.modules['__main__']`` are restored afterwards."""
    if script is not None:
        path = os.path.abspath(script)
        with open(path, "rb") as f:
            source = importlib.util.decode_source(f.read())
        spec, name0 = None, path
        sys_path0 = os.path.dirname(os.path.realpath(path))
        loader = importlib.machinery.SourceFileLoader("__main__", path)
        package = None
    else:
        spec = importlib.util.find_spec(module)
        if spec is None or spec.origin is None:
            raise ImportError(f"No module named {module}")
        if spec.submodule_search_locations is not None:   # a package: its __main__
            module = module + ".__main__"
            spec = importlib.util.find_spec(module)
        path = spec.origin
        source = spec.loader.get_source(module)
        name0, sys_path0 = path, os.getcwd()
        loader = spec.loader
        package = module.rpartition(".")[0]
    code, summary = rewrite(source, path, runtime.register_site)
    if on_main is not None:
        on_main(summary)
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": path, "__cached__": None, "__loader__": loader,
                          "__package__": package, "__spec__": spec,
                          "__builtins__": sys.modules["builtins"]})
    saved = (sys.argv, sys.path[0] if sys.path else None, sys.modules.get("__main__"))
    sys.argv = [name0] + list(argv)
    if sys.path:
        sys.path[0] = sys_path0
    else:
        sys.path.append(sys_path0)
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        sys.argv = saved[0]
        if saved[1] is not None:
            sys.path[0] = saved[1]
        if saved[2] is not None:
            sys.modules["__main__"] = saved[2]
