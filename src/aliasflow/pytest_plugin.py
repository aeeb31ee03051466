"""pytest plugin (entry point ``pytest11``): ``pytest --aliasflow`` traces each test with
the PyTorch tracer and fails a test whose trace has findings at or above the threshold,
with the findings in its report. Without ``--aliasflow`` it only provides the
``aliasflow_trace`` fixture: a trace running around the test, for tests that assert on
findings themselves (the plugin then leaves the verdict to the test).

Options: ``--aliasflow-fail-on SEVERITY`` (default: ``[tool.aliasflow] fail-on``, else
hazard), ``--aliasflow-select`` and ``--aliasflow-ignore`` (kind or severity names), and
``# aliasflow: ignore[...]`` comments on the reported lines. A test marked
``@pytest.mark.aliasflow_off`` is not traced.
"""
from __future__ import annotations

import pytest

_TRACE = pytest.StashKey()     # the trace of a test's call
_REPORT = pytest.StashKey()    # its report


def pytest_addoption(parser):
    group = parser.getgroup("aliasflow", "aliasflow: hidden data flow through aliasing views")
    group.addoption("--aliasflow", action="store_true", default=False,
                    help="Trace each test (PyTorch) and fail it on findings at or above "
                         "--aliasflow-fail-on.")
    group.addoption("--aliasflow-fail-on", metavar="SEVERITY", default=None,
                    help="wrong, race, hazard, stale-view, order or none (default: "
                         "[tool.aliasflow] fail-on, else hazard).")
    group.addoption("--aliasflow-select", metavar="NAMES", action="append", default=[],
                    help="Report only these kinds or severities.")
    group.addoption("--aliasflow-ignore", metavar="NAMES", action="append", default=[],
                    help="Never report these kinds or severities.")


def pytest_configure(config):
    config.addinivalue_line("markers", "aliasflow_off: pytest --aliasflow does not trace "
                                       "this test")
    if not config.getoption("aliasflow"):
        return
    from .interop.tracers import TracerUnavailable, torch_tracer
    from .reporting import Policy, UsageError
    from .reporting.config import load_config
    from .reporting.policy import parse_fail_on, parse_names
    try:
        trace = torch_tracer()
        settings = load_config(config.rootpath)
        fail_on = config.getoption("aliasflow_fail_on")
        select = config.getoption("aliasflow_select")
        ignore = config.getoption("aliasflow_ignore")
        policy = Policy(
            select=parse_names(select, "--aliasflow-select") if select else settings.select,
            ignore=(parse_names(ignore, "--aliasflow-ignore") if ignore else settings.ignore)
            or frozenset(),
            fail_on=parse_fail_on(fail_on, "--aliasflow-fail-on") if fail_on is not None
            else settings.fail_on or "hazard")
    except (TracerUnavailable, UsageError) as exc:
        raise pytest.UsageError(f"aliasflow: {exc}") from None
    config.pluginmanager.register(_Tracing(trace, policy), "aliasflow-tracing")


@pytest.fixture
def aliasflow_trace(request):
    """A trace (PyTorch) running around the test: ``aliasflow_trace.findings()`` lists what
    the test ran so far. With ``--aliasflow`` the plugin does not judge such a test."""
    from .interop.tracers import TracerUnavailable, torch_tracer
    try:
        trace = torch_tracer()
    except TracerUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    with trace() as t:
        yield t


class _Tracing:
    """Active with ``--aliasflow``: the hooks that trace each test's call and judge it."""

    def __init__(self, trace, policy):
        self.trace = trace
        self.policy = policy
        self.traced = 0
        self.failed: list[str] = []

    def _wanted(self, item) -> bool:
        return ("aliasflow_trace" not in getattr(item, "fixturenames", ())
                and item.get_closest_marker("aliasflow_off") is None)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        if not self._wanted(item):
            yield
            return
        t = self.trace()
        t.__enter__()
        try:
            yield
        finally:
            t.__exit__(None, None, None)
            item.stash[_TRACE] = t
            self.traced += 1

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        if call.when != "call" or _TRACE not in item.stash:
            return
        from .reporting.traces import trace_report
        t = item.stash[_TRACE]
        del item.stash[_TRACE]   # the trace's records go with the test
        report = trace_report(t, self.policy, command="pytest")
        item.stash[_REPORT] = report
        if not report.reported and not report.suppressed:
            return
        rep = outcome.get_result()
        text = "\n".join(report.text_lines() + [report.summary("--aliasflow-fail-on")])
        if report.failing and rep.passed:
            rep.outcome = "failed"
            rep.longrepr = (f"aliasflow: {len(report.failing)} finding(s) at or above "
                            f"--aliasflow-fail-on {self.policy.fail_on}\n{text}")
            self.failed.append(item.nodeid)
        else:   # shown with the test's other output (for a test that failed by itself)
            rep.sections.append(("aliasflow findings", text))

    def pytest_terminal_summary(self, terminalreporter):
        line = f"aliasflow: traced {self.traced} test(s)"
        if self.failed:
            line += f", {len(self.failed)} failed on findings"
        terminalreporter.write_line(line)
