"""`aliasflow mge` as a real process: exit 0, the observed table agrees with the seed in
MegEngine mode, the exercises print the seed's answers, and alias mode differs where it must."""
import os
import subprocess
import sys

import pytest
from repo import EXAMPLES


@pytest.fixture(scope="module")
def output():
    # wide, so that the table's cells are not wrapped (pipes get COLUMNS or 80)
    done = subprocess.run([sys.executable, "-m", "aliasflow.cli", "mge"], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, COLUMNS="200"))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout


def section(out, title):
    start = out.index(title)
    rest = out[start + len(title):]
    ends = [rest.find(t) for t in ("Seed 001 table", "Seed 001 exercises") if t in rest]
    return rest[:min(ends)] if ends else rest


def test_table_in_megengine_mode_agrees_row_by_row(output):
    table = section(output, "Seed 001 table, semantics=megengine")
    assert table.count("agrees") == 8 and "differs" not in table
    for text in ["a += 1", "a = a + 1", "b = a[0]", "b = a.reshape(4)", "b = F.transpose(a)",
                 "a[0] = 1", "b = a", "reused, ref +1", "old ref -1", "copied from old",
                 "released"]:
        assert text in table, text


def test_table_in_alias_mode_differs_on_the_writes(output):
    table = section(output, "Seed 001 table, semantics=alias")
    assert table.count("differs") == 2 and table.count("agrees") == 6
    assert "written in" in table


def test_exercises_print_the_answers(output):
    meg = section(output, "Seed 001 exercises, semantics=megengine")
    printed = [line for line in meg.splitlines() if "Tensor([" in line]
    assert [p.split("Tensor(")[1][:5] for p in printed] == ["[2 3]", "[1 2]", "[1 2]", "[2 2]"]
    alias = section(output, "Seed 001 exercises, semantics=alias")
    printed = [line for line in alias.splitlines() if "Tensor([" in line]
    assert [p.split("Tensor(")[1][:5] for p in printed] == ["[2 3]", "[1 2]", "[2 2]", "[2 2]"]
    assert "iadd" in alias and "implicit" in alias


def run_example(name):
    from pathlib import Path
    path = EXAMPLES / name
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_mge_example():
    out = run_example("mge_exercise.py")
    assert "megengine: b shared a's storage: True (refcount 2); after b += 1 still shared: " \
           "False" in out
    assert "print(a) -> Tensor([1 2], dtype=int32, device=xpux:0)" in out
    assert "print(a) -> Tensor([2 2], dtype=int32, device=xpux:0)" in out
    meg, alias = out.split("alias:")
    assert "iadd_" in alias and any("-> numpy" in line and "RAW implicit" in line and "iadd" in
                                    line for line in alias.splitlines())
    assert not any(line.strip().startswith("iadd") for line in meg.splitlines())


def test_tf_example():
    out = run_example("tf_memory_walk.py")
    assert "data pointer equals the buffer's: True" in out
    assert "after the swap: write_x_row -> read_tensor RAW implicit" in out
