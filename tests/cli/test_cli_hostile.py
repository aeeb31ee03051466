"""The CLI against hostile input, run as real subprocesses: exit code, one line on stderr
(one per problem for a program file with several), never a traceback, never a hang."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import aliasflow as af

SRC = str(Path(af.__file__).resolve().parents[1])
TIMEOUT = 120


def cli(*args, timeout=TIMEOUT):
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
               COLUMNS="200")
    proc = subprocess.run([sys.executable, "-m", "aliasflow.cli", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=timeout,
                          errors="backslashreplace")
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr
    return proc


def refused(proc, *words):
    """Exit code 2 (input error) and exactly one line on stderr containing ``words``."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error:"), lines
    for w in words:
        assert w in lines[0], (w, lines[0])


def write(tmp_path, doc, name="p.json"):
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8",
                    errors="surrogatepass")
    return path


def program(tensors, views=(), ops=()):
    return {"format": "aliasflow-program", "version": 1, "tensors": list(tensors),
            "views": list(views), "ops": list(ops)}


MARKUP = program([{"name": "[/x]", "shape": [2, 2]}],
                 [{"name": "[bold]v[/]", "tensor": "[/x]", "shape": [2], "stride": [1]}],
                 [{"name": "[/]", "kind": "fill", "outputs": ["[bold]v[/]"]},
                  {"name": "r[/b]", "kind": "reduce", "inputs": ["[/x]"]}])


@pytest.mark.parametrize("command", [["show"], ["analyze"], ["flow", "FILE", "r[/b]"],
                                     ["races"]])
def test_rich_markup_in_names_is_printed_as_text(tmp_path, command):
    path = write(tmp_path, MARKUP)
    args = [path if a == "FILE" else a for a in command]
    if "FILE" not in command:
        args.insert(1, path)
    proc = cli(*args)
    assert proc.returncode == (1 if command == ["races"] else 0)  # races: one race found
    assert proc.stderr == ""
    assert "[/x]" in proc.stdout and ("[bold]v[/]" in proc.stdout or "[/]" in proc.stdout)


def test_markup_in_an_error_message_is_printed_as_text(tmp_path):
    doc = program([{"name": "[/x]", "shape": [2]}],
                  ops=[{"name": "[/y]", "kind": "transform", "inputs": ["[/x]"],
                        "outputs": ["nope[/z]"]}])
    refused(cli("show", write(tmp_path, doc)), "nope[/z]")


def test_lone_surrogates_are_refused_in_one_line(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(program([{"name": "A\ud800", "shape": [2]}])))  # ascii escapes
    refused(cli("show", path), "lone surrogate")


def test_save_into_a_directory_fails_in_one_line_before_running(tmp_path):
    path = write(tmp_path, program([{"name": "A", "shape": [2]}],
                                   ops=[{"name": "f", "kind": "fill", "outputs": ["A"]}]))
    refused(cli("run", path, "--save", tmp_path), "is a directory")
    refused(cli("run", path, "--save", tmp_path / "missing" / "x.npz"), "does not exist")
    out = tmp_path / "out"
    proc = cli("run", path, "--save", out)
    assert proc.returncode == 0 and (tmp_path / "out.npz").is_file()


def test_absurd_worker_counts_finish(tmp_path):
    path = write(tmp_path, program([{"name": "A", "shape": [4]}],
                                   ops=[{"name": f"f{k}", "kind": "fill", "outputs": ["A"]}
                                        for k in range(3)]))
    for workers in ("99999999999999999999", "100000"):
        proc = cli("run", path, "--workers", workers, timeout=60)
        assert proc.returncode == 0, proc.stderr
    proc = cli("run", path, "--workers", "0")
    assert proc.returncode == 2  # a usage error, in one line
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error:"), proc.stderr


@pytest.mark.parametrize("tensor, words", [
    ({"name": "A", "shape": [10**15]}, ["A", "bytes"]),
    ({"name": "A", "shape": [2**63]}, ["does not fit in 64 bits"]),
    ({"name": "A", "shape": [0, 2**62]}, ["bytes"]),
    ({"name": "A", "shape": [1] * 65}, ["64 dims"]),
    ({"name": "A", "shape": [2], "dtype": "int8", "init": {"data": [300, 1]}}, ["300", "int8"]),
    ({"name": "A", "shape": [70000], "dtype": "float16", "init": "arange"}, ["float16"]),
    ({"name": "A", "shape": [1], "dtype": "uint64", "init": {"fill": 2**64}},
     ["18446744073709551616"]),
])
def test_bad_tensors_are_refused_in_one_line(tmp_path, tensor, words):
    refused(cli("show", write(tmp_path, program([tensor]))), *words)


def test_a_5000_digit_integer_is_refused_in_one_line(tmp_path):
    text = json.dumps(program([{"name": "A", "shape": [4]}])).replace("[4]", "[" + "7" * 5000 + "]")
    refused(cli("analyze", write(tmp_path, text)), "5000 digits")


def test_many_big_tensors_hit_the_total_cap_before_allocating(tmp_path):
    tensors = [{"name": f"T{k}", "shape": [2**28], "dtype": "float32"} for k in range(16)]
    proc = cli("show", write(tmp_path, program(tensors)), timeout=60)
    assert proc.returncode == 2 and "max_total_bytes" in proc.stderr


def test_views_with_200000_dims_are_refused_quickly(tmp_path):
    views = [{"name": f"v{k}", "tensor": "A", "shape": [1] * 200000, "stride": [0] * 200000}
             for k in range(3)]
    proc = cli("show", write(tmp_path, program([{"name": "A", "shape": [4]}], views)),
               timeout=60)
    assert proc.returncode == 2 and "at most 64 dims" in proc.stderr
    index = [{"name": "w", "of": "A", "index": ", ".join(["None"] * 100000)}]
    refused(cli("show", write(tmp_path, program([{"name": "A", "shape": [4]}], index),
                              "i.json"), timeout=60), "dims")


@pytest.mark.parametrize("args, words", [
    (["show", "/nonexistent/x.json"], ["No such file"]),
    (["show", "DIR"], ["directory"]),
    (["show", "BADJSON"], ["not valid JSON"]),
    (["flow", "OK", "nope"], ["no op named"]),
    (["races", "OK", "-s", "nope=1"], ["nope"]),
    (["races", "OK", "-e", "x"], ["--edge"]),
])
def test_common_mistakes_are_one_line(tmp_path, args, words):
    ok = write(tmp_path, program([{"name": "A", "shape": [2]}],
                                 ops=[{"name": "f", "kind": "fill", "outputs": ["A"]}]))
    bad = write(tmp_path, "{nope", "bad.json")
    table = {"DIR": tmp_path, "BADJSON": bad, "OK": ok}
    refused(cli(*[table.get(a, a) for a in args]), *words)


def test_a_program_that_cannot_run_is_refused_before_running(tmp_path):
    doc = program([{"name": "A", "shape": [4]}],
                  [{"name": "w", "of": "A", "broadcast_to": [2, 4]}],
                  [{"name": "f", "kind": "fill", "fill_value": 3, "outputs": ["A"]},
                   {"name": "t", "kind": "transform", "inputs": ["A"], "outputs": ["w"]}])
    refused(cli("run", write(tmp_path, doc)), "'t'", "ambiguous")


def test_dot_with_backslash_names(tmp_path):
    doc = program([{"name": "A", "shape": [4]}],
                  [{"name": "v\\", "tensor": "A", "shape": [2]}],
                  [{"name": "w\\", "kind": "fill", "outputs": ["v\\"]},
                   {"name": "r\"", "kind": "reduce", "inputs": ["A"]}])
    dot = tmp_path / "g.dot"
    proc = cli("analyze", write(tmp_path, doc), "--dot", dot)
    assert proc.returncode == 0
    text = dot.read_text()
    assert '"w\\\\"' in text and '"r\\""' in text


def test_races_on_a_thousand_ops_finish_and_cut_the_table(tmp_path):
    views, ops = [], []
    for k in range(1000):
        views.append({"name": f"v{k}", "tensor": "A", "offset": (k * 37) % 3900,
                      "shape": [20], "stride": [1 + k % 5]})
        ops.append({"name": f"o{k}", "kind": "fill", "outputs": [f"v{k}"]} if k % 2 else
                   {"name": f"o{k}", "kind": "transform", "inputs": [f"v{k}"]})
    proc = cli("races", write(tmp_path, program([{"name": "A", "shape": [4000]}], views, ops)),
               timeout=TIMEOUT)
    assert proc.returncode == 1 and "races (the first 200 shown)" in proc.stdout


def test_max_work_reports_undecided_pairs(tmp_path):
    import numpy as np
    rng = np.random.default_rng(3)
    shape = [20] * 10
    views = [{"name": f"v{k}", "tensor": "A", "offset": 12345 * k, "shape": shape,
              "stride": [int(x) for x in rng.integers(1, 10**4, 10)]} for k in range(2)]
    size = 12345 + sum(19 * s for s in views[1]["stride"]) + 1
    size = max(size, sum(19 * s for s in views[0]["stride"]) + 1)
    doc = program([{"name": "A", "shape": [size], "dtype": "uint8"}], views,
                  [{"name": "w", "kind": "fill", "outputs": ["v0"]},
                   {"name": "r", "kind": "reduce", "inputs": ["v1"]}])
    proc = cli("analyze", write(tmp_path, doc), "--max-work", "1000", "--json", timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    if proc.stderr:
        assert proc.stderr.startswith("warning:") and "treated as overlapping" in proc.stderr
        assert [(d["src"], d["dst"]) for d in out["dependencies"]] == [("w", "r")]
