"""The command line, driven through typer's runner and, once, as a real process."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from aliasflow.cli import app

from repo import EXAMPLES
runner = CliRunner()


def invoke(*args):
    # wide, so that table cells are not wrapped (80-column output: test_cli_terminal.py)
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False,
                         env={"COLUMNS": "200"})


def test_demo_shows_the_seed_answers():
    result = invoke("demo")
    assert result.exit_code == 0, result.output
    out = result.output
    for text in ["Seed simple example", "Seed complex example", "0 1 4 5", "8 9 12 13",
                 "0 1 2 4 5 6 8 9 10", "5 6 9 10", "10 11 14 15",
                 "[fill_op_a]  [transform_op_a]  [transform2_op_a, add_op_ab]",
                 "viewA3 / viewA1", "they may not",
                 "'transform2_op_a': ['fill_op_a', 'transform_op_a']", "add_op_ab"]:
        assert text in out, text
    assert out.count("implicit") >= 4 and out.count("explicit") >= 2


def test_demo_as_a_process():
    done = subprocess.run([sys.executable, "-m", "aliasflow.cli", "demo"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Parallel levels" in done.stdout


def test_analyze_table_json_and_dot(tmp_path):
    dot = tmp_path / "g.dot"
    result = invoke("analyze", EXAMPLES / "seed_complex.json", "--dot", dot)
    assert result.exit_code == 0, result.output
    # fill_op_a -> transform2_op_a is no ordering edge: the one cell of viewA1 that
    # transform2_op_a reads (10) was overwritten by transform_op_a first (that conflict is
    # listed with --complete below)
    assert "4 ops, 5 edges (RAW 4, WAR 0, WAW 1), 3 levels" in result.output
    assert "digraph" in dot.read_text()
    result = invoke("analyze", EXAMPLES / "seed_complex.json", "--json", "--complete",
                    "--elements")
    data = json.loads(result.output)
    assert {(d["src"], d["dst"], d["kind"], d["implicit"], tuple(d["elements"]))
            for d in data["dependencies"]} == {
        ("fill_op_a", "transform_op_a", "RAW", True, (5, 6, 9, 10)),
        ("fill_op_a", "transform_op_a", "WAW", True, (10,)),
        ("fill_op_a", "transform2_op_a", "RAW", True, (10,)),
        ("transform_op_a", "transform2_op_a", "RAW", False, (10, 11, 14, 15)),
        ("fill_op_a", "add_op_ab", "RAW", False, (0, 1, 2, 4, 5, 6, 8, 9, 10)),
        ("transform_op_a", "add_op_ab", "RAW", True, (10,))}
    assert data["levels"] == [["fill_op_a"], ["transform_op_a"], ["transform2_op_a", "add_op_ab"]]


def test_run_and_save(tmp_path):
    out = tmp_path / "out.npz"
    result = invoke("run", EXAMPLES / "transpose_inplace.json", "--workers", 2, "--save", out)
    assert result.exit_code == 0, result.output
    saved = np.load(out)
    # the example's own description: column 0 negated in place, then row 1 summed
    np.testing.assert_array_equal(saved["tensor:A"],
                                  [[0, 1, 2], [-3, 4, 5], [-6, 7, 8]])
    assert saved["tensor:row1_sum"] == 6


def test_flow_and_show():
    result = invoke("flow", EXAMPLES / "seed_complex.json", "add_op_ab")
    assert result.exit_code == 0, result.output
    assert "transform_op_a" in result.output and "(initial contents)" in result.output
    result = invoke("show", EXAMPLES / "seed_complex.json")
    assert result.exit_code == 0 and "viewA3" in result.output


@pytest.mark.parametrize("args, message", [
    (["run", "{complex}"], "add_op_ab"),
    (["analyze", "no/such/file.json"], "no/such/file.json"),
    (["analyze", "{bad}"], "bad.json"),
    (["flow", "{complex}", "nope"], "no op named 'nope'"),
])
def test_errors_are_one_line_without_traceback(tmp_path, args, message):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    args = [a.format(complex=EXAMPLES / "seed_complex.json", bad=bad) for a in args]
    result = runner.invoke(app, args)
    assert result.exit_code == 2  # input error
    assert message in result.output
    assert "Traceback" not in result.output


def test_bad_arguments_exit_nonzero():
    assert runner.invoke(app, ["run", str(EXAMPLES / "seed_simple.json"),
                               "--workers", "0"]).exit_code == 2
    assert runner.invoke(app, ["nosuchcommand"]).exit_code == 2


def test_races_reports_unordered_conflicts_and_exit_codes():
    complex_ = EXAMPLES / "seed_complex.json"
    streams = ["-s", "fill_op_a=0", "-s", "transform_op_a=1", "-s", "transform2_op_a=1",
               "-s", "add_op_ab=0"]
    result = invoke("races", complex_, *streams)
    assert result.exit_code == 1 and "4 races" in result.output
    assert "viewA3 / viewA1" in result.output
    result = invoke("races", complex_, *streams, "-e", "fill_op_a:transform_op_a",
                    "-e", "transform_op_a:add_op_ab")
    assert result.exit_code == 0 and "no races" in result.output
    bad = runner.invoke(app, ["races", str(complex_), "-e", "foo"])
    assert bad.exit_code == 2 and "--edge must look like A:B, got 'foo'" in bad.output
    bad = runner.invoke(app, ["races", str(complex_), "-s", "nope=1"])
    assert bad.exit_code == 2 and "no op named 'nope'" in bad.output


def test_analyze_and_show_say_which_tensors_share_memory():
    result = invoke("analyze", EXAMPLES / "shared_buffer.json", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["shared_memory"] == [{"tensors": [["grid", 0, 64], ["flat", 8, 48]],
                                     "meets": [["grid[:, 1]", "flat[-6:]"],
                                               ["grid[:, 1]", "flat[:4]"]]}]
    table = invoke("analyze", EXAMPLES / "shared_buffer.json")
    assert "Tensors sharing memory" in table.output and "grid[:, 1] / flat[-6:]" in table.output
    shown = invoke("show", EXAMPLES / "shared_buffer.json")
    assert "grid (+0, 64), flat (+8, 48)" in shown.output
