"""``aliasflow trace`` on NumPy scripts, in a subprocess: the script's own stdout, stderr and
exit status are those of ``python script.py`` (the report follows on stdout; with findings
at or above ``--fail-on`` a clean program's status is 1, the command line's rule)."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from aliasflow.interop.numpy_trace import fastpath
from repo import ROOT

ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def plain(script, *args, cwd):
    return subprocess.run([sys.executable, str(script), *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def traced(script, *args, cwd, options=()):
    return subprocess.run([sys.executable, "-m", "aliasflow.cli", "trace", *options,
                           str(script), *args], capture_output=True, text=True, env=ENV,
                          cwd=cwd, timeout=300)


def write(path, source):
    path.write_text(textwrap.dedent(source).lstrip())
    return path


SCRIPT = """
    import sys, warnings
    import numpy as np
    import helper
    print("argv", sys.argv[1:], "path0 is here:", sys.path[0] == __import__("os").path.dirname(__file__))
    a = np.arange(16).reshape(4, 4)
    a[1] = a[:, 3]
    print(a[1].tolist(), helper.shift(np.arange(5)).tolist())
    with np.errstate(divide="warn"):
        np.divide(np.ones(3), np.zeros(3), out=np.empty(3))
    warnings.warn("from the script")
    try:
        a[10] = 1
    except IndexError as exc:
        import traceback
        traceback.print_exc()
    if "--exit" in sys.argv:
        sys.exit(3)
    if "--boom" in sys.argv:
        a[:, 7] += 1
    """
HELPER = """
    import numpy as np
    def shift(v):
        v[1:] = v[:-1]
        return v
    """


@pytest.fixture
def program(tmp_path):
    write(tmp_path / "helper.py", HELPER)
    return write(tmp_path / "prog.py", SCRIPT)


@pytest.mark.skipif(not fastpath.COMPILED, reason="pure runtime (AF_PURE=1): its frames show in tracebacks")
@pytest.mark.parametrize("args", [(), ("--exit",), ("--boom",)])
def test_same_output_exceptions_and_exit_code(program, args, tmp_path):
    want = plain(program, *args, cwd=tmp_path)
    got = traced(program, *args, cwd=tmp_path, options=("--fail-on", "none"))
    assert got.returncode == want.returncode
    assert got.stderr == want.stderr           # tracebacks, warnings: line for line
    assert got.stdout.startswith(want.stdout)
    report = got.stdout[len(want.stdout):]
    assert "prog.py:6: wrong in-op-overlap: setitem (#0): 1 element(s) of a[1], a[:, 3], " \
        "1 differ" in report
    assert "watched: prog.py, helper.py" in report
    # the wrong result fails a clean run; the program's own failure status wins
    assert traced(program, *args, cwd=tmp_path).returncode == (want.returncode or 1)


def test_json_findings(program, tmp_path):
    runs = [traced(program, cwd=tmp_path, options=("--json",)) for _ in range(2)]
    assert runs[0].stdout == runs[1].stdout    # no timings, nothing run-dependent
    data = json.loads(runs[0].stdout)
    [finding] = [f for f in data["findings"] if f.get("severity") == "wrong"]
    assert finding["kind"] == "in-op-overlap" and finding["lines"] == ["prog.py:6"]
    assert finding["names"] == ["a[1]", "a[:, 3]"]
    assert finding["differs"] == 1 and finding["count"] == 1 and finding["occurrences"] == 1
    assert finding["example"] == {"index": [1], "at": "a[1][1]", "got": 15, "expected": 7}
    assert finding["hint"]
    assert data["summary"]["by_severity"] == {"wrong": 1}
    numpy_part = data["numpy"]
    assert numpy_part["schema_version"] == 1
    assert numpy_part["watched"]["modules"] == ["prog.py", "helper.py"]
    assert numpy_part["failed"][0]["error"].startswith("IndexError")


def test_script_without_arrays_gets_one_line(tmp_path):
    script = write(tmp_path / "plain.py", """
        total = 0
        for i in range(10):
            total += i
        print(total)
        """)
    got = traced(script, cwd=tmp_path)
    assert got.returncode == 0
    assert got.stdout.splitlines() == ["45", "aliasflow: the program used neither NumPy nor "
                                             "PyTorch: nothing to trace"]


def test_installed_packages_are_watched_only_when_included(tmp_path):
    site = tmp_path / "venv" / "lib" / "site-packages" / "shiftlib"
    site.mkdir(parents=True)
    write(site / "__init__.py", """
        import numpy as np
        def concat_rotate(v):
            np.concatenate([v[2:], v[:2]], out=v)
            return v
        """)
    script = write(tmp_path / "use.py", """
        import sys
        sys.path.insert(0, sys.argv[1])
        import numpy as np, shiftlib
        print(shiftlib.concat_rotate(np.arange(4)).tolist())
        """)
    libs = str(tmp_path / "venv" / "lib" / "site-packages")
    alone = traced(script, libs, cwd=tmp_path, options=("--json",))
    data = json.loads(alone.stdout)
    # the library's concatenate is a NumPy function called through the module: wrapped
    assert [f["severity"] for f in data["findings"]] == ["wrong"]
    assert "shiftlib" in data["numpy"]["watched"]["not_rewritten"]
    included = traced(script, libs, cwd=tmp_path, options=("--json", "--include", "shiftlib"))
    data = json.loads(included.stdout)
    assert any(m.endswith("shiftlib/__init__.py") for m in data["numpy"]["watched"]["modules"])
    assert [f["lines"] for f in data["findings"]] == [
        [os.path.relpath(site / "__init__.py", tmp_path) + ":3"]]


def test_nothing_is_written_next_to_the_script(program, tmp_path):
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert traced(program, cwd=tmp_path, options=("--fail-on", "none")).returncode == 0
    assert sorted(p.name for p in tmp_path.rglob("*")) == before   # no __pycache__
