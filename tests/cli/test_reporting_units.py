"""The reporting layer's pieces: the findings adapter, places, GitHub escaping, SARIF paths,
op lines in program files (checked against a plain search of the file's text)."""
import json
import re
from types import SimpleNamespace

import pytest

from aliasflow.reporting import Item, Place, Policy, Report
from aliasflow.reporting.adapter import item_from_finding, severity_of
from aliasflow.reporting.items import place_of
from aliasflow.reporting.policy import UsageError, parse_fail_on, parse_names
from aliasflow.reporting.programs import op_lines
from aliasflow.reporting.report import github_annotation
from aliasflow.reporting.sarif import to_sarif
from repo import EXAMPLES

jsonschema = pytest.importorskip("jsonschema")


def finding(kind, **extra):
    op = SimpleNamespace(name="aten.x#1", aten="aten.x", index=1, failed=False, source="y")
    return SimpleNamespace(kind=kind, ops=[op], lines=["a.py:3"], count=2, views=[],
                           to_json=lambda: {"kind": kind}, **extra)


@pytest.mark.parametrize("kind, race, severity", [
    ("in-op-overlap", False, "hazard"), ("self-overlap-write", False, "hazard"),
    ("RAW", False, "order"), ("WAR", False, "order"), ("WAW", False, "order"),
    ("RAW", True, "race")])
def test_todays_findings_map_to_severities(kind, race, severity):
    assert severity_of(finding(kind), race) == severity
    item = item_from_finding(finding(kind), race)
    assert item.severity == severity and item.kind == (("race" if race else kind))
    assert item.place == Place("a.py", 3) and item.record["severity"] == severity


def test_issue_24_findings_bring_their_own_fields():
    f = finding("in-op-overlap", severity="wrong", names=["a", "a[:, :1]"], occurrences=3,
                hint="clone() the source", differs=2)
    item = item_from_finding(f)
    assert item.severity == "wrong" and item.names == ["a", "a[:, :1]"]
    assert item.hint == "clone() the source" and item.record["occurrences"] == 3
    assert "2 element(s) of a, a[:, :1], 2 differ, 3 times" in item.message


def test_places():
    assert place_of("dir/a.py:12") == Place("dir/a.py", 12)
    assert place_of("C:/x/a.py:7") == Place("C:/x/a.py", 7)
    assert place_of("?") is None and place_of("") is None
    assert place_of("<stdin>") == Place("<stdin>")


def test_names_and_thresholds():
    assert parse_names(["RAW,hazard", " order "], "--select") == {"raw", "hazard", "order"}
    with pytest.raises(UsageError, match="--ignore: unknown kind or severity 'bad'"):
        parse_names(["RAW,bad"], "--ignore")
    assert parse_fail_on("Hazard") == "hazard" and parse_fail_on("none") == "none"
    with pytest.raises(UsageError, match="'sometimes' is not a severity"):
        parse_fail_on("sometimes")
    p = Policy(fail_on="hazard")
    fails = [p.fails(Item(s, "k", "m")) for s in ("wrong", "race", "hazard", "stale-view",
                                                   "order")]
    assert fails == [True, True, True, False, False]
    assert not Policy(fail_on="none").fails(Item("wrong", "k", "m"))


def test_github_annotations_escape_what_would_end_a_field():
    item = Item("hazard", "in-op-overlap", "50% of a:b,c\nnext", places=[Place("d,1:x.py", 4)])
    line = github_annotation(item)
    assert line == ("::warning file=d%2C1%3Ax.py,line=4,title=aliasflow hazard in-op-overlap"
                    "::50%25 of a:b,c%0Anext")
    assert github_annotation(Item("order", "RAW", "m")) == \
        "::notice title=aliasflow order RAW::m"


def test_sarif_paths_inside_and_outside_the_root(tmp_path):
    schema = json.loads((EXAMPLES.parent / "tests" / "cli" / "sarif-schema-2.1.0.json")
                        .read_text())
    items = [Item("hazard", "in-op-overlap", "m", places=[Place(str(tmp_path / "a b.py"), 2)]),
             Item("order", "RAW", "m", places=[Place("/elsewhere/c.py", 5), None,
                                               Place("/elsewhere/d.py", 1)]),
             Item("race", "race", "m")]
    log = to_sarif(Report("trace", items, Policy()), root=tmp_path)
    jsonschema.Draft4Validator(schema).validate(log)
    results = log["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [   # most serious first
        ("race", "error"), ("in-op-overlap", "warning"), ("RAW", "note")]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in results[1:]]
    assert uris[0] == {"uri": "a%20b.py", "uriBaseId": "SRCROOT"}
    assert uris[1] == {"uri": "file:///elsewhere/c.py"}
    assert results[2]["relatedLocations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "file:///elsewhere/d.py"}
    assert "locations" not in results[0]


@pytest.mark.parametrize("name", ["seed_complex.json", "seed_simple.json",
                                  "transpose_inplace.json", "sliding_window.json",
                                  "shared_buffer.json"])
def test_op_lines_agree_with_a_search_of_the_text(name):
    path = EXAMPLES / name
    doc = json.loads(path.read_text())
    lines = op_lines(path)
    text = path.read_text().splitlines()
    assert list(lines) == [op["name"] for op in doc["ops"]]
    for op_name, line in lines.items():
        # the entry's line holds its name, and no earlier line past "ops" does
        pattern = re.compile(r'"name"\s*:\s*' + re.escape(json.dumps(op_name)))
        ops_at = next(k for k, t in enumerate(text) if '"ops"' in t)
        first = next(k for k in range(ops_at, len(text)) if pattern.search(text[k]))
        assert line == first + 1, (op_name, line, first + 1)


def test_op_lines_of_files_that_are_not_programs(tmp_path):
    for text in ("", "[1, 2]", '{"ops": 3}', '{"a": [1, {"ops": []}], "ops": [{"nam": 1}]}',
                 "{not json"):
        path = tmp_path / "x.json"
        path.write_text(text)
        assert op_lines(path) == {}
    assert op_lines(tmp_path / "missing.json") == {}
