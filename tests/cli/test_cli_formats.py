"""Every format of every reporting command, as real processes: JSON valid against
docs/report.schema.json and byte-identical across runs, SARIF valid against the published
SARIF 2.1.0 schema, GitHub workflow annotations in the documented syntax.

``sarif-schema-2.1.0.json`` beside this file is the OASIS SARIF 2.1.0 schema (errata 01),
byte for byte as published in the standard's repository (oasis-tcs/sarif-spec,
``sarif-2.1/schema/sarif-schema-2.1.0.json`` at commit e0583813964ec43cea53b6b531b402866095ed1f;
its ``id``: https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json),
kept here so the test needs no network.
"""
import hashlib
import json
import re
from pathlib import Path

import pytest

from clirun import aliasflow
from repo import EXAMPLES, ROOT

jsonschema = pytest.importorskip("jsonschema")
HERE = Path(__file__).parent
SARIF_SCHEMA = json.loads((HERE / "sarif-schema-2.1.0.json").read_text())
REPORT_SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())
COMPLEX = EXAMPLES / "seed_complex.json"
STREAMS = ["-s", "fill_op_a=0", "-s", "transform_op_a=1", "-s", "transform2_op_a=1",
           "-s", "add_op_ab=0"]
COMMANDS = {   # command -> (arguments, exit code, findings in the JSON)
    "analyze": (["analyze", COMPLEX, "--fail-on", "order"], 1, 3),
    "races": (["races", COMPLEX, *STREAMS], 1, 4),
    "show": (["show", COMPLEX], 0, None),
    "flow": (["flow", COMPLEX, "add_op_ab"], 0, None),
    "plan": (["plan", COMPLEX], 0, None),
    "run": (["run", EXAMPLES / "transpose_inplace.json"], 0, None),
    "demo": (["demo"], 0, None),
}
# GitHub's workflow command syntax: ::LEVEL key=value,key=value::message (escaped: % \r \n
# in the message, and also : , in values)
ANNOTATION = re.compile(r"^::(error|warning|notice)(?: ((?:file|line|title)=[^,:\r\n]*"
                        r"(?:,(?:file|line|title)=[^,:\r\n]*)*))?::[^\r\n]*$")


def test_the_vendored_sarif_schema_is_the_published_one():
    digest = hashlib.sha256((HERE / "sarif-schema-2.1.0.json").read_bytes()).hexdigest()
    assert digest == "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"
    assert SARIF_SCHEMA["id"].endswith("/sarif-2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
                                       .replace("sarif-2.1.0", "v2.1.0"))


def validate_sarif(log):
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)


def validate_report(doc):
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(doc)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_json(command):
    args, code, findings = COMMANDS[command]
    proc = aliasflow(*args, "--format", "json")
    assert proc.returncode == code, proc.stderr
    doc = json.loads(proc.stdout)
    validate_report(doc)
    assert doc["schema_version"] == 1 and doc["command"] == command
    assert "timings" not in doc and "seconds" not in proc.stdout
    if findings is not None:
        assert len(doc["findings"]) == findings == doc["summary"]["findings"]
    if command in ("analyze", "run"):
        alias = aliasflow(*args, "--json")           # --json is the same output
        assert alias.stdout == proc.stdout and alias.returncode == code
        timed = json.loads(aliasflow(*args, "--json", "--timings").stdout)
        validate_report(timed)
        assert set(timed) - set(doc) == {"timings"}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_sarif(command):
    args, code, findings = COMMANDS[command]
    proc = aliasflow(*args, "--format", "sarif")
    assert proc.returncode == code, proc.stderr
    log = json.loads(proc.stdout)
    validate_sarif(log)
    results = log["runs"][0]["results"]
    assert len(results) == (findings or 0)
    for r in results:
        loc = r["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"].endswith("seed_complex.json")
        assert loc["region"]["startLine"] in (18, 19, 20, 21)   # the ops' lines in the file
        rules = log["runs"][0]["tool"]["driver"]["rules"]
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_github(command):
    args, code, findings = COMMANDS[command]
    proc = aliasflow(*args, "--format", "github")
    assert proc.returncode == code, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == (findings or 0)
    for line in lines:
        assert ANNOTATION.match(line), line
        assert "file=" in line and re.search(r",line=\d+,", line)


def test_races_annotations_are_errors_at_the_later_op():
    proc = aliasflow(*COMMANDS["races"][0], "--format", "github")
    first = proc.stdout.splitlines()[0]
    assert first.startswith("::error file=") and "seed_complex.json,line=" in first
    assert "title=aliasflow race race::" in first


# ---- trace ------------------------------------------------------------------------------

torch = pytest.importorskip("torch")
PROGRAM = '''import torch
print("the program's own output")
a = torch.arange(12.).reshape(3, 4)
a -= a[:, :1]
c = torch.arange(25.).reshape(5, 5)[1:4, 1:4]
c += c.t()  # aliasflow: ignore[in-op-overlap]
for step in range(10):          # temporaries: the allocator reuses their memory
    t = torch.ones(100)[::2] * step
    u = t[1:] + 1
    d = {str(k): k for k in range(step * 7)}
    del t, u
u = torch.zeros(10)
u.unfold(0, 4, 2).add_(1)
'''


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "prog.py"
    path.write_text(PROGRAM)
    return path


def test_trace_json_is_the_same_in_two_runs(program):
    # different hash seeds change Python's own allocations, hence addresses and reuse
    runs = [aliasflow("trace", "--format", "json", program.name, cwd=program.parent,
                      PYTHONHASHSEED=str(seed)) for seed in (1, 2)]
    for proc in runs:
        assert proc.returncode == 1, proc.stderr
        assert "the program's own output" in proc.stderr     # stdout is the JSON alone
    assert runs[0].stdout == runs[1].stdout
    doc = json.loads(runs[0].stdout)
    validate_report(doc)
    assert [(f["severity"], f["kind"], f["lines"][0]) for f in doc["findings"]] == [
        ("wrong", "in-op-overlap", "prog.py:4"), ("wrong", "self-overlap-write", "prog.py:13")]
    assert [(f["kind"], f["suppressed_by"]) for f in doc["suppressed"]] == [
        ("in-op-overlap", "prog.py:6")]
    assert doc["exit_status"] == 0 and doc["summary"]["failing"] == 2
    assert "0x" not in runs[0].stdout   # no addresses


def test_trace_sarif_and_github(program):
    proc = aliasflow("trace", "--format", "sarif", program.name, cwd=program.parent)
    assert proc.returncode == 1
    log = json.loads(proc.stdout)
    validate_sarif(log)
    results = log["runs"][0]["results"]
    assert [(r["ruleId"], r["level"], r["locations"][0]["physicalLocation"]["region"]
             ["startLine"], "suppressions" in r) for r in results] == [
        ("in-op-overlap", "error", 4, False), ("self-overlap-write", "error", 13, False),
        ("in-op-overlap", "error", 6, True)]
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "prog.py", "uriBaseId": "SRCROOT"}
    proc = aliasflow("trace", "--format", "github", program.name, cwd=program.parent)
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and all(ANNOTATION.match(line) for line in lines)
    assert lines[0].startswith("::error file=prog.py,line=4,title=aliasflow wrong "
                               "in-op-overlap::aten.sub_.Tensor")
