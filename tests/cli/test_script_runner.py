"""Running a program as Python would, inside any tracer (no framework needed): argv,
sys.path, __main__, exit statuses, the tracer's own runner for code it must rewrite."""
import runpy
import sys

import pytest

from aliasflow.interop.script import TargetError, check_target, exit_status, run_target


class Recorder:
    """A tracer that only records being entered and left."""

    def __init__(self):
        self.events = []

    def __enter__(self):
        self.events.append("enter")
        return self

    def __exit__(self, *exc):
        self.events.append("exit")
        return False


def test_a_script_runs_as_main_with_its_argv_and_path(tmp_path, capsys):
    prog = tmp_path / "prog.py"
    prog.write_text("import sys\nprint(__name__, sys.argv, sys.path[0])\n")
    argv, path = list(sys.argv), list(sys.path)
    tracer = Recorder()
    assert run_target(str(prog), ["a", "--b"], tracer) == 0
    assert capsys.readouterr().out == f"__main__ {[str(prog), 'a', '--b']} {tmp_path}\n"
    assert tracer.events == ["enter", "exit"]
    assert sys.argv == argv and sys.path == path        # restored


def test_a_module_runs_as_python_m_runs_it(tmp_path, monkeypatch, capsys):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text("import sys\nprint(__name__, sys.argv[1:])\n"
                                             "raise SystemExit(5)\n")
    monkeypatch.chdir(tmp_path)
    check_target("pkg.mod", module=True)
    assert run_target("pkg.mod", ["x"], Recorder(), module=True) == 5
    assert capsys.readouterr().out == "__main__ ['x']\n"
    with pytest.raises(TargetError, match="no module named 'pkg.nope'"):
        check_target("pkg.nope", module=True)
    with pytest.raises(TargetError, match="no such script"):
        check_target(str(tmp_path / "nope.py"), module=False)
    with pytest.raises(TargetError, match="not a file"):
        check_target(str(tmp_path), module=False)


@pytest.mark.parametrize("code, status", [(None, 0), (0, 0), (3, 3), (-1, 255), (256, 0),
                                          (True, 1), ("message", 1)])
def test_exit_statuses_as_python_gives_them(code, status, capsys):
    assert exit_status(code) == status


def test_prints_can_go_to_stderr_and_failures_keep_their_traceback(tmp_path, capsys):
    prog = tmp_path / "prog.py"
    prog.write_text("print('out')\ndef f():\n    raise KeyError('k')\nf()\n")
    assert run_target(str(prog), [], Recorder(), stdout_to_stderr=True) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("out\nTraceback (most recent call last):\n")
    assert f'File "{prog}", line 4' in err.splitlines()[2] and "KeyError: 'k'" in err
    assert "runpy" not in err and "script.py" not in err


def test_a_tracer_may_run_the_code_itself(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text("x = 1\n")

    class Rewriting(Recorder):
        def run_path(self, path, run_name):
            self.events.append(("run_path", path, run_name))
            return runpy.run_path(path, run_name=run_name)
    tracer = Rewriting()
    assert run_target(str(prog), [], tracer) == 0
    assert tracer.events == ["enter", ("run_path", str(prog), "__main__"), "exit"]
