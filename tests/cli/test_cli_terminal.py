"""Terminal manners and launching: COLUMNS and 80-column output, folded grids, help text
without markup or emoji, one-line usage errors (details under --verbose), ``python -m
aliasflow``, ``--version`` from one source, shell completion, and the one line a user without
PyTorch gets from ``aliasflow trace``."""
import json
import re
import subprocess
import sys

import pytest

import aliasflow
from clirun import aliasflow as cli, env, one_error_line
from repo import EXAMPLES, ROOT

WIDE = {"format": "aliasflow-program", "version": 1,   # 24 columns: too wide for 80
        "tensors": [{"name": "W", "shape": [3, 24]}],
        "views": [{"name": "even", "of": "W", "index": ":, ::2"},
                  {"name": "row1", "of": "W", "index": "1"},
                  {"name": "tail", "of": "W", "index": ":, 20:"}],
        "ops": [{"name": "f", "kind": "fill", "outputs": ["even"]},
                {"name": "r", "kind": "reduce", "inputs": ["row1"]}]}
BOX = set("│┃┌┐└┘├┤┬┴┼━─╇┡┩┏┓┗┛┳┻╋")


def drawn(text):
    """The lines of tables and grids (those with box-drawing characters)."""
    return [line for line in text.splitlines() if BOX & set(line)]


def test_a_wide_grid_folds_at_80_columns_and_keeps_every_element(tmp_path):
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(WIDE))
    narrow = cli("show", path, COLUMNS="80")
    assert narrow.returncode == 0, narrow.stderr
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 80
    assert "columns 0-" in narrow.stdout and "of 24 (folded" in narrow.stdout
    cells = re.findall(r"[│┃]\s*(\d+)", narrow.stdout)
    grid = [int(c) for c in cells[:72]]
    assert sorted(grid) == list(range(72))     # every element drawn once, none cut
    wide = cli("show", path, COLUMNS="250")
    assert "folded" not in wide.stdout
    assert max(len(line) for line in drawn(wide.stdout)) > 80


@pytest.mark.parametrize("args", [["demo"], ["analyze", EXAMPLES / "seed_complex.json"],
                                  ["show", EXAMPLES / "seed_complex.json"],
                                  ["races", EXAMPLES / "seed_complex.json", "-s",
                                   "fill_op_a=0", "-s", "add_op_ab=1"]])
def test_tables_fit_in_80_columns(args):
    proc = cli(*args, COLUMNS="80")
    assert proc.returncode in (0, 1), proc.stderr
    assert drawn(proc.stdout) and max(len(line) for line in drawn(proc.stdout)) <= 80
    assert "\x1b[" not in proc.stdout          # no colour codes into a pipe


def test_a_pipe_without_columns_gets_80_not_120():
    proc = cli("demo", COLUMNS=None)
    assert max(len(line) for line in drawn(proc.stdout)) <= 80


@pytest.mark.parametrize("command", ["", "demo", "analyze", "run", "plan", "flow", "races",
                                     "show", "mge", "trace"])
def test_help_is_plain_text_for_80_columns(command):
    proc = cli(*command.split(), "--help", COLUMNS="80")
    assert proc.returncode == 0 and proc.stderr == ""
    text = proc.stdout
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "``" not in text and "\x1b[" not in text and ":class:" not in text
    assert text.isascii(), [c for c in text if not c.isascii()]   # no emoji, no boxes
    if command == "races":
        assert "A:B" in text                    # printed as written (it once became an emoji)


def test_usage_errors_are_one_line_and_verbose_adds_the_usage():
    one_error_line(cli("analyze", "--bogus", EXAMPLES / "seed_simple.json"), "--bogus")
    verbose = cli("analyze", "--verbose", "--bogus", EXAMPLES / "seed_simple.json")
    assert verbose.returncode == 2
    assert verbose.stderr.startswith("Usage: ") and "error: No such option: --bogus" in \
        verbose.stderr


def test_markup_and_emoji_codes_in_names_print_as_written(tmp_path):
    doc = {"format": "aliasflow-program", "version": 1,
           "tensors": [{"name": ":smile:[b]A:B:[/b]", "shape": [4]}],
           "ops": [{"name": ":thumbs_up:", "kind": "fill", "outputs": [":smile:[b]A:B:[/b]"]},
                   {"name": "r", "kind": "reduce", "inputs": [":smile:[b]A:B:[/b]"]}]}
    path = tmp_path / "names.json"
    path.write_text(json.dumps(doc))
    for args in (["show", path], ["analyze", path], ["flow", path, "r"]):
        proc = cli(*args)
        assert proc.returncode == 0, proc.stderr
        assert ":smile:[b]A:B:[/b]" in proc.stdout, proc.stdout
        assert not [c for c in proc.stdout if ord(c) > 0x2FFF], proc.stdout  # no emoji


def test_python_m_aliasflow_and_version():
    proc = cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith(f"aliasflow {aliasflow.__version__} (")
    assert "compiled core:" in proc.stdout
    assert cli("--version", module="aliasflow.cli").stdout == proc.stdout
    assert "Commands:" in cli("--help").stdout


def test_the_version_has_one_source():
    import tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "aliasflow._version.__version__"}
    from aliasflow._version import __version__
    assert aliasflow.__version__ is __version__
    hits = [p for p in (ROOT / "src").rglob("*.py")
            if re.search(r"^__version__\s*=", p.read_text(), re.M)]
    assert [p.name for p in hits] == ["_version.py"]


def test_packaging_metadata():
    import tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and (ROOT / "LICENSE").read_text().startswith("MIT")
    assert any(c.startswith("Programming Language :: Python :: 3")
               for c in project["classifiers"])
    assert project["optional-dependencies"]["torch"] == ["torch==2.13.0"]
    assert project["scripts"]["aliasflow"] == "aliasflow.cli:main"
    assert project["entry-points"]["pytest11"] == {
        "aliasflow.pytest_plugin": "aliasflow.pytest_plugin"}
    assert (ROOT / "src" / "aliasflow" / "py.typed").is_file()


def test_shell_completion_is_on():
    assert "--install-completion" in cli("--help").stdout
    proc = subprocess.run(
        [sys.executable, "-c", "from aliasflow.cli import app; app(prog_name='aliasflow')"],
        env=env(_ALIASFLOW_COMPLETE="complete_bash", COMP_WORDS="aliasflow an",
                COMP_CWORD="1"), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.split() == ["analyze"]


BLOCKER = '''import sys
class NoTorch:
    """Makes torch unimportable, as on a machine without it."""
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NoTorch())
'''


def test_without_torch_trace_traces_numpy(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    prog = tmp_path / "prog.py"
    prog.write_text("print('hello')\n")
    path = f"{tmp_path}:{ROOT / 'src'}"
    out = cli("trace", prog, PYTHONPATH=path)
    assert out.returncode == 0 and out.stderr == ""
    assert out.stdout.splitlines() == ["hello", "aliasflow: the program used neither NumPy "
                                                "nor PyTorch: nothing to trace"]
    numpy_prog = tmp_path / "np_prog.py"
    numpy_prog.write_text("import numpy as np\na = np.arange(4)\n"
                          "np.concatenate([a[2:], a[:2]], out=a)\n")
    out = cli("trace", numpy_prog, PYTHONPATH=path)
    assert out.returncode == 1 and "np_prog.py:3: wrong in-op-overlap" in out.stdout
    # everything else works without torch
    assert cli("demo", PYTHONPATH=path).returncode == 0
    assert cli("--version", PYTHONPATH=path).returncode == 0
    # and a missing script is still named first
    one_error_line(cli("trace", tmp_path / "nope.py", PYTHONPATH=path), "no such script")


def _in_a_terminal(args, cwd, columns=80, timeout=300):
    """``python -m aliasflow ARGS`` with its stdout on a pseudo-terminal of ``columns``
    columns; everything it wrote there."""
    import os
    import pty
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "aliasflow", *map(str, args)], cwd=cwd,
                                env=env(COLUMNS=str(columns), TERM="dumb"), stdout=slave,
                                stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # the other side closed
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=timeout)
    finally:
        os.close(master)
    return b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def test_in_an_80_column_terminal_prose_wraps_and_finding_lines_stay_whole(tmp_path):
    """In a terminal the hint's prose (and the NumPy tracer's notes) wrap at its width,
    indented; the ``path:line: severity kind: ...`` line stays whole (tools read it); a
    PyTorch program that made no NumPy operation hears nothing of the NumPy tracer."""
    pytest.importorskip("torch")
    (tmp_path / "t_bug.py").write_text(
        "import torch\na = torch.arange(12.).reshape(3, 4)\na -= a[:, :1]\n")
    out = _in_a_terminal(["trace", "t_bug.py"], tmp_path)
    lines = out.splitlines()
    first = next(line for line in lines if line.startswith("t_bug.py:3: wrong in-op-overlap"))
    assert len(first) > 80                                   # whole, not wrapped
    hint = lines.index(next(line for line in lines if line.startswith("    hint: ")))
    assert len(lines[hint]) <= 80 and lines[hint + 1].startswith(" " * 10)
    assert not any(line.startswith(("NumPy ", "watched:", "not watched:")) for line in lines)
    piped = cli("trace", "t_bug.py", cwd=tmp_path, COLUMNS="80")   # a pipe: hint on one line
    assert any(line.startswith("    hint: ") and len(line) > 80
               for line in piped.stdout.splitlines())
