"""``[tool.aliasflow]`` in pyproject.toml (found from the working directory upward, checked
key by key) and inline ``# aliasflow: ignore[...]`` comments."""
import json

import pytest
from typer.testing import CliRunner

from aliasflow.cli import app
from aliasflow.reporting import Item, Place, Policy
from aliasflow.reporting.config import load_config
from aliasflow.reporting.policy import UsageError, suppressing_comment
from clirun import aliasflow, one_error_line
from repo import EXAMPLES

COMPLEX = EXAMPLES / "seed_complex.json"   # 3 implicit dependencies: RAW, WAW, RAW (order)
runner = CliRunner()


def analyze(*args):
    return runner.invoke(app, ["analyze", str(COMPLEX), *map(str, args)])


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder with a pyproject.toml, the working directory two folders below."""
    inner = tmp_path / "src" / "pkg"
    inner.mkdir(parents=True)
    monkeypatch.chdir(inner)

    def write(table: str, where=tmp_path):
        (where / "pyproject.toml").write_text(f"[project]\nname = 'x'\n\n{table}\n")
        return where / "pyproject.toml"
    return write


def test_the_nearest_table_upward_applies(project, tmp_path):
    assert analyze().exit_code == 0
    project('[tool.aliasflow]\nfail-on = "order"\nformat = "json"\nselect = ["WAW"]\n')
    result = analyze()
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert [f["kind"] for f in doc["findings"]] == ["WAW"]
    # options on the command line win
    assert analyze("--fail-on", "none").exit_code == 0
    assert json.loads(analyze("--select", "RAW").stdout)["summary"]["findings"] == 2
    assert analyze("--format", "text").stdout.startswith("Dependencies")
    # a pyproject.toml without the table on the way up is passed over
    project("[tool.other]\nx = 1\n", tmp_path / "src")
    assert load_config().fail_on == "order"
    # the nearest table wins
    project('[tool.aliasflow]\nignore = ["order"]\n', tmp_path / "src")
    config = load_config()
    assert config.fail_on is None and config.ignore == {"order"}
    assert config.path == tmp_path / "src" / "pyproject.toml"


@pytest.mark.parametrize("table, words", [
    ('fail_on = "order"', ["unknown key 'fail_on'", "fail-on"]),
    ('fail-on = "bogus"', ["fail-on", "'bogus'"]),
    ('fail-on = 3', ["fail-on", "3"]),
    ('select = "RAW"', ["select must be a list of strings", "'RAW'"]),
    ('ignore = ["order", "nope"]', ["ignore", "'nope'"]),
    ('format = "xml"', ["format must be one of", "'xml'"]),
])
def test_bad_settings_are_refused_in_one_line_naming_the_key(project, table, words):
    path = project(f"[tool.aliasflow]\n{table}\n")
    with pytest.raises(UsageError) as err:
        load_config()
    for w in [str(path), "[tool.aliasflow]"] + words:
        assert w in str(err.value), (w, str(err.value))
    result = analyze()
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: ") and words[0] in result.stderr


def test_bad_settings_as_a_process(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.aliasflow]\nfail_on = 'order'\n")
    one_error_line(aliasflow("analyze", COMPLEX, cwd=tmp_path), "unknown key 'fail_on'",
                   str(tmp_path / "pyproject.toml"))
    (tmp_path / "pyproject.toml").write_text("[tool.aliasflow\nfail-on = 'order'\n")
    one_error_line(aliasflow("analyze", COMPLEX, cwd=tmp_path), "invalid TOML")


# ---- inline comments ---------------------------------------------------------------------

def item(path, line, severity="hazard", kind="in-op-overlap", related=None):
    places = [Place(str(path), line)] + ([Place(str(path), related)] if related else [])
    return Item(severity=severity, kind=kind, message="m", places=places)


@pytest.mark.parametrize("comment, suppressed", [
    ("# aliasflow: ignore", True),
    ("# aliasflow: ignore[in-op-overlap]", True),
    ("# aliasflow: ignore[hazard]", True),
    ("# aliasflow: ignore[RAW, in-op-overlap]", True),
    ("#aliasflow:ignore[IN-OP-OVERLAP]", True),
    ("# noqa  # aliasflow: ignore[hazard]", True),
    ("# aliasflow: ignore[order]", False),
    ("# aliasflow: ignore[self-overlap-write]", False),
    ("# aliasflow: ignored", False),
    ("# aliasflow ignore", False),
    ("", False),
])
def test_comments(tmp_path, comment, suppressed):
    src = tmp_path / "prog.py"
    src.write_text(f"x = 1\na -= a[:, :1]  {comment}\n")
    assert (suppressing_comment(item(src, 2)) is not None) == suppressed
    assert suppressing_comment(item(src, 1)) is None      # another line's comment


def test_a_comment_on_a_related_line_counts_and_policy_lists_it(tmp_path):
    src = tmp_path / "prog.py"
    src.write_text("w = 1\nr = 2  # aliasflow: ignore[RAW]\n")
    raw = item(src, 1, "order", "RAW", related=2)
    war = item(src, 1, "order", "WAR", related=2)
    reported, suppressed = Policy(fail_on="order").apply([raw, war])
    assert reported == [war] and suppressed == [raw]
    assert raw.suppressed_by == f"{src}:2"
    assert raw.to_json()["suppressed_by"] == f"{src}:2"
