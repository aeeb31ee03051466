"""The import hook rewrites the modules it owns (the script's directory, ``--include``
packages) and leaves every other module exactly as Python imports it; ``run_main`` runs a
script or ``-m`` module as ``python`` does."""
import importlib.machinery
import json
import sys
import textwrap

import pytest

from aliasflow.interop.numpy_trace.cli import run_traced
from aliasflow.interop.numpy_trace.hook import RewritingFinder, _RewritingLoader


def write(path, source):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source).lstrip())
    return path


@pytest.fixture(autouse=True)
def forget_new_modules():
    """The modules these programs import are gone afterwards (other tests use the names)."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


@pytest.fixture
def project(tmp_path):
    write(tmp_path / "app" / "mine.py", """
        import numpy as np
        def f(a):
            a[1:] = a[:-1]
            return a
        """)
    write(tmp_path / "app" / "hookpkg" / "__init__.py", "from .inner import g\n")
    write(tmp_path / "app" / "hookpkg" / "inner.py", "def g(a):\n    a[0] = 5\n    return a\n")
    write(tmp_path / "app" / "hookpkg" / "data.txt", "resource\n")
    write(tmp_path / "lib" / "site-packages" / "theirs.py", """
        def h(a):
            a[0] = 1
            return a
        """)
    write(tmp_path / "elsewhere" / "other.py", "def k(a):\n    a[0] = 2\n    return a\n")
    return tmp_path


def _names(module):
    names = set()
    for const in [module.__dict__[k].__code__ for k in module.__dict__
                  if callable(module.__dict__[k]) and hasattr(module.__dict__[k], "__code__")]:
        names |= set(const.co_names)
    return names


def test_owned_modules_rewritten_others_untouched(project):
    script = write(project / "app" / "main.py", """
        import sys, json, importlib.resources
        sys.path[1:1] = [sys.argv[1], sys.argv[2]]
        import numpy as np
        import mine, hookpkg, theirs, other
        print(mine.f(np.arange(4)).tolist(), hookpkg.g(np.arange(3)).tolist(),
              theirs.h(np.arange(2)).tolist(), other.k(np.arange(2)).tolist(),
              importlib.resources.files("hookpkg").joinpath("data.txt").read_text().strip())
        """)
    code, trace, _ = run_traced(script=str(script), argv=[
        str(project / "lib" / "site-packages"), str(project / "elsewhere")])
    assert code == 0
    rewritten = {m.rsplit("/", 1)[-1] for m in (s.path for s in trace.modules)}
    assert rewritten == {"main.py", "mine.py", "__init__.py", "inner.py"}
    assert isinstance(sys.modules["mine"].__loader__, _RewritingLoader)
    assert "@aliasflow_numpy" in _names(sys.modules["mine"])
    for name in ("theirs", "other", "json"):
        module = sys.modules[name]
        assert type(module.__loader__) is importlib.machinery.SourceFileLoader
        assert "@aliasflow_numpy" not in _names(module)
    assert trace.not_rewritten >= {"theirs", "other"}
    # the finder is gone after the run
    assert not any(isinstance(f, RewritingFinder) for f in sys.meta_path)


def test_include_names_a_package_to_rewrite(project):
    script = write(project / "app" / "use.py", """
        import sys
        sys.path.insert(1, sys.argv[1])
        import numpy as np, theirs
        theirs.h(np.arange(2))
        """)
    code, trace, _ = run_traced(script=str(script), argv=[str(project / "lib" /
                                                             "site-packages")],
                                include=("theirs",))
    assert code == 0
    assert any(s.path.endswith("theirs.py") for s in trace.modules)
    assert [n[1] for n in trace.recorder.ops] == ["setitem"]


def test_main_module_is_like_pythons(tmp_path):
    script = write(tmp_path / "who.py", """
        import sys, os
        print(json.dumps([__name__, __file__, sys.argv, sys.path[0], __package__,
                          __spec__ is None, type(__loader__).__name__]))
        """.replace("import sys, os", "import sys, os, json"))
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert run_traced(script=str(script), argv=["x", "--y"])[0] == 0
    name, file, argv, path0, package, no_spec, loader = json.loads(out.getvalue())
    assert (name, file, argv, path0, package, no_spec, loader) == (
        "__main__", str(script), [str(script), "x", "--y"], str(tmp_path), None, True,
        "SourceFileLoader")


def test_dash_m_module(tmp_path, monkeypatch):
    write(tmp_path / "runme" / "__init__.py", "")
    write(tmp_path / "runme" / "__main__.py", """
        import numpy as np
        a = np.arange(16).reshape(4, 4)
        a[1] = a[:, 3]
        print(__name__, __spec__.name)
        """)
    monkeypatch.syspath_prepend(str(tmp_path))
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code, trace, _ = run_traced(module="runme")
    assert code == 0 and out.getvalue().split() == ["__main__", "runme.__main__"]
    [finding] = trace.findings()
    assert finding.severity == "wrong" and finding.lines[0].endswith("__main__.py:3")
