"""Exit codes of every command, as real processes (the table in docs/cli.md): 0 clean,
1 findings at or above --fail-on, 2 usage or input errors, and for ``trace`` the traced
program's own status when it fails."""
import pytest
from typer.testing import CliRunner

from clirun import aliasflow, one_error_line
from repo import EXAMPLES

SIMPLE = EXAMPLES / "seed_simple.json"
COMPLEX = EXAMPLES / "seed_complex.json"      # 3 implicit dependencies (severity order)
STREAMS = ["-s", "fill_op_a=0", "-s", "transform_op_a=1", "-s", "transform2_op_a=1",
           "-s", "add_op_ab=0"]               # 4 races
ORDERED = ["-e", "fill_op_a:transform_op_a", "-e", "transform_op_a:add_op_ab"]


@pytest.mark.parametrize("args, code", [
    (["analyze", SIMPLE], 0),
    (["analyze", COMPLEX], 0),                       # order findings: below the default
    (["analyze", COMPLEX, "--fail-on", "order"], 1),
    (["analyze", SIMPLE, "--fail-on", "order"], 0),  # no implicit dependency at all
    (["analyze", COMPLEX, "--fail-on", "order", "--ignore", "order"], 0),
    (["analyze", COMPLEX, "--fail-on", "order", "--select", "WAW"], 1),
    (["analyze", COMPLEX, "--fail-on", "order", "--select", "WAR"], 0),
    (["races", COMPLEX, *STREAMS], 1),               # races fail by default
    (["races", COMPLEX, *STREAMS, "--fail-on", "none"], 0),
    (["races", COMPLEX, *STREAMS, "--ignore", "race"], 0),
    (["races", COMPLEX, *STREAMS, *ORDERED], 0),
    (["races", SIMPLE], 0),
    (["show", COMPLEX], 0),
    (["flow", COMPLEX, "add_op_ab"], 0),
    (["plan", COMPLEX], 0),
    (["run", EXAMPLES / "transpose_inplace.json"], 0),
    (["demo"], 0),
    (["--version"], 0),
    (["races", "--help"], 0),
], ids=lambda v: " ".join(map(str, v)).replace(str(EXAMPLES) + "/", "")
   if isinstance(v, list) else str(v))
def test_clean_and_findings(args, code):
    proc = aliasflow(*args)
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("args, words", [
    (["analyze", "no/such.json"], ["no/such.json"]),
    (["races", "no/such.json"], ["no/such.json"]),
    (["show", "no/such.json"], ["no/such.json"]),
    (["flow", "no/such.json", "x"], ["no/such.json"]),
    (["plan", "no/such.json"], ["no/such.json"]),
    (["run", "no/such.json"], ["no/such.json"]),
    (["run", COMPLEX], ["add_op_ab"]),                         # cannot run: refused
    (["flow", COMPLEX, "nope"], ["no op named 'nope'"]),
    (["analyze", COMPLEX, "--fail-on", "bogus"], ["--fail-on", "'bogus'"]),
    (["analyze", COMPLEX, "--select", "in-op-overlap,bogus"], ["--select", "'bogus'"]),
    (["races", COMPLEX, "--ignore", "nope"], ["--ignore", "'nope'"]),
    (["analyze", COMPLEX, "--json", "--format", "sarif"], ["--json", "--format sarif"]),
    (["analyze", COMPLEX, "--format", "xml"], ["--format", "xml"]),
    (["analyze", COMPLEX, "--no-such-option"], ["--no-such-option"]),
    (["analyze"], ["Missing argument", "FILE"]),
    (["nosuchcommand"], ["nosuchcommand"]),
    (["races", COMPLEX, "-e", "foo"], ["--edge must look like A:B, got 'foo'"]),
    (["demo", "--format", "json", "extra"], ["extra"]),
])
def test_usage_and_input_errors_exit_2_in_one_line(args, words):
    one_error_line(aliasflow(*args), *words)


def test_no_command_prints_help_and_exits_2():
    proc = aliasflow()
    assert proc.returncode == 2 and "Commands:" in proc.stdout and proc.stderr == ""


# ---- trace: the program's own status first, then findings -------------------------------

pytest.importorskip("torch")
HAZARD = "import torch\na = torch.arange(12.).reshape(3, 4)\na[:, :-1] = a[:, 1:]\n"
WRONG = "import torch\na = torch.arange(12.).reshape(3, 4)\na -= a[:, :1]\n"
CLEAN = "import torch\na = torch.arange(12.).reshape(3, 4)\na = a - a[:, :1]\n"


def script(tmp_path, body, name="prog.py"):
    path = tmp_path / name
    path.write_text(body)
    return path


def test_trace_exit_codes_as_processes(tmp_path):
    assert aliasflow("trace", script(tmp_path, CLEAN, "clean.py")).returncode == 0
    hazard = script(tmp_path, HAZARD)
    assert aliasflow("trace", hazard).returncode == 1
    # the program's own failure wins over findings, and passes its status through
    failing = script(tmp_path, HAZARD + "raise SystemExit(3)\n", "fails.py")
    proc = aliasflow("trace", "--format", "json", failing)
    assert proc.returncode == 3 and '"exit_status": 3' in proc.stdout


runner = CliRunner()


def trace_in_process(*args):
    from aliasflow.cli import app
    return runner.invoke(app, ["trace", *map(str, args)])


@pytest.mark.parametrize("tail, code", [
    ("", 1),                                          # a hazard, default --fail-on hazard
    ("raise SystemExit(0)\n", 1),                     # exit 0 is success: findings decide
    ("raise SystemExit(None)\n", 1),
    ("raise SystemExit(7)\n", 7),
    ("raise SystemExit(256 + 4)\n", 4),               # what the OS keeps of it, as Python
    ("raise SystemExit('bad input')\n", 1),           # a message: status 1, message printed
    ("raise ValueError('boom')\n", 1),                # an uncaught exception: 1
])
def test_trace_passes_the_programs_status_through(tmp_path, tail, code):
    result = trace_in_process(script(tmp_path, HAZARD + tail))
    assert result.exit_code == code, (result.stdout, result.stderr)
    if "bad input" in tail:
        assert "bad input" in result.stderr
    if "boom" in tail:
        assert "ValueError: boom" in result.stderr
        assert "runpy" not in result.stderr and "aliasflow" not in result.stderr


def test_trace_fail_on_and_selection(tmp_path):
    assert trace_in_process("--fail-on", "wrong",
                            script(tmp_path, WRONG, "wrong.py")).exit_code == 1
    path = script(tmp_path, HAZARD)
    assert trace_in_process("--fail-on", "none", path).exit_code == 0
    assert trace_in_process("--fail-on", "wrong", path).exit_code == 0
    assert trace_in_process("--fail-on", "order", path).exit_code == 1
    assert trace_in_process("--ignore", "in-op-overlap", path).exit_code == 0
    assert trace_in_process("--select", "order", path).exit_code == 0
    assert trace_in_process("--select", "hazard", path).exit_code == 1


def test_trace_of_a_missing_script_or_module_exits_2(tmp_path):
    one_error_line(aliasflow("trace", tmp_path / "nope.py"), "no such script", "nope.py")
    one_error_line(aliasflow("trace", "-m", "no_such_module_here", cwd=tmp_path),
                   "no module named 'no_such_module_here'")
