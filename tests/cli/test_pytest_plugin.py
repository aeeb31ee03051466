"""The pytest plugin through ``pytester``: ``pytest --aliasflow`` fails a test with a hidden
overlap and passes a clean one; it is inert without the flag; thresholds, selection,
comments, ``[tool.aliasflow]``, the ``aliasflow_off`` marker and the ``aliasflow_trace``
fixture."""
import pytest

pytest.importorskip("torch")
pytest_plugins = ["pytester"]

# installed (pip install -e .), the entry point loads the plugin; from a bare checkout, -p
# does; both at once load it once (the entry point is named as the module)
LOAD = ["-p", "aliasflow.pytest_plugin"]

SUITE = '''
import torch

def test_clean():
    a = torch.arange(12.).reshape(3, 4)
    b = a - a[:, :1]            # into a new tensor: nothing aliases
    b += 1
    assert b.sum() == 30

def test_hidden_overlap():
    a = torch.arange(12.).reshape(3, 4)
    a -= a[:, :1]               # column 0 becomes 0 first: later columns subtract 0
'''


@pytest.fixture(scope="module", autouse=True)
def warm():
    """Trace once here first: pytester's in-process runs drop the modules a run imported,
    and torch refuses to import some of its own (operator libraries) twice."""
    import torch
    import aliasflow as af
    from aliasflow.reporting.traces import trace_report
    with af.trace() as t:
        a = torch.arange(12.).reshape(3, 4)
        a -= a[:, :1]
    trace_report(t)


def run(pytester, *args):
    return pytester.runpytest_inprocess(*LOAD, "-p", "no:cacheprovider", *args)


def test_a_hidden_overlap_fails_and_a_clean_test_passes(pytester):
    pytester.makepyfile(test_suite=SUITE)
    result = run(pytester, "--aliasflow")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*test_hidden_overlap*",
        "aliasflow: 1 finding(s) at or above --aliasflow-fail-on hazard",
        "test_suite.py:11: wrong in-op-overlap: aten.sub_.Tensor*",
        "    a -= a?:, :1?*",
        "*aliasflow: traced 2 test(s), 1 failed on findings*",
        "FAILED test_suite.py::test_hidden_overlap*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_inert_without_the_flag(pytester):
    pytester.makepyfile(test_inert=SUITE)
    result = run(pytester)
    result.assert_outcomes(passed=2)
    # nothing of the plugin's own output (its lines say "aliasflow:"); pytest's
    # header and warnings may name the plugin's module, which is installed either way
    assert not any("aliasflow:" in line for line in result.outlines), \
        result.outlines


@pytest.mark.parametrize("args", [["--aliasflow-fail-on", "none"],
                                  ["--aliasflow-select", "stale-view"],
                                  ["--aliasflow-ignore", "in-op-overlap"],
                                  ["--aliasflow-select", "order,race"]])
def test_threshold_and_selection(pytester, args):
    pytester.makepyfile(test_options=SUITE)
    run(pytester, "--aliasflow", *args).assert_outcomes(passed=2)


def test_config_comment_and_marker(pytester):
    pytester.makepyfile(test_config=SUITE)
    pytester.makefile(".toml", pyproject='[tool.aliasflow]\nfail-on = "none"\n')
    run(pytester, "--aliasflow").assert_outcomes(passed=2)
    pytester.makefile(".toml", pyproject='[tool.aliasflow]\nfail-on = "order"\n')
    run(pytester, "--aliasflow").assert_outcomes(passed=1, failed=1)
    pytester.makepyfile(test_config=SUITE.replace(
        "a -= a[:, :1]  ", "a -= a[:, :1]  # aliasflow: ignore[in-op-overlap]"))
    run(pytester, "--aliasflow").assert_outcomes(passed=2)
    pytester.makepyfile(test_config="import pytest\n" + SUITE.replace(
        "def test_hidden", "@pytest.mark.aliasflow_off\ndef test_hidden"))
    run(pytester, "--aliasflow", "--strict-markers").assert_outcomes(passed=2)


def test_bad_options_are_usage_errors(pytester):
    pytester.makepyfile(test_bad=SUITE)
    result = run(pytester, "--aliasflow", "--aliasflow-fail-on", "bogus")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "aliasflow: --aliasflow-fail-on: 'bogus' is not a severity" in result.stderr.str()


def test_a_failing_test_shows_its_findings_too(pytester):
    pytester.makepyfile(test_fails=SUITE.replace("column 0 becomes", "x") + "    assert False\n")
    result = run(pytester, "--aliasflow")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*aliasflow findings*", "*wrong in-op-overlap*"])


FIXTURE = '''
import torch

def test_asserts_its_own_findings(aliasflow_trace):
    a = torch.arange(12.).reshape(3, 4)
    a -= a[:, :1]
    found = aliasflow_trace.findings()
    assert [(f.kind, f.count) for f in found] == [("in-op-overlap", 3)]

def test_clean_with_the_fixture(aliasflow_trace):
    a = torch.arange(12.).reshape(3, 4)
    a = a - a[:, :1]
    assert aliasflow_trace.findings() == []
'''


@pytest.mark.parametrize("flag", [[], ["--aliasflow"]])
def test_the_fixture_leaves_the_verdict_to_the_test(pytester, flag):
    pytester.makepyfile(test_fixture=FIXTURE)
    run(pytester, *flag).assert_outcomes(passed=2)


def test_the_entry_point_and_p_together_load_it_once(pytester):
    """As in an installed checkout: the pyproject's entry point, and -p on top of it."""
    import tomllib
    from repo import ROOT
    entry = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    dist = pytester.mkdir("site") / "aliasflow_entry-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: aliasflow-entry\nVersion: 0\n")
    (dist / "entry_points.txt").write_text(
        "[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in entry["pytest11"].items()))
    pytester.syspathinsert(dist.parent)
    pytester.makepyfile(test_entry=SUITE)
    run(pytester, "--aliasflow").assert_outcomes(passed=1, failed=1)          # -p and entry
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--aliasflow")
    result.assert_outcomes(passed=1, failed=1)                                # entry alone
