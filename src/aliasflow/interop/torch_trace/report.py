"""A trace's findings (through the shared classifier), reuse, races, as JSON and as text."""
from __future__ import annotations

import time

from ...core.gcpause import paused_gc
from ..findings import SCHEMA_VERSION, SEVERITIES, classify, finding_json, flows, text
from ..findings.model import Finding
from .names import Namer


def _state(trace):
    """``(built, namer)``, made once per trace length."""
    built = trace._build()
    got = getattr(trace, "_namer", None)
    if got is None or got.built is not built:
        got = trace._namer = Namer(trace, built)
    return built, got


def _reuse_of(trace):
    storages = trace.storages

    def reuse_of(a, b) -> bool:
        if a.storage is None or b.storage is None or a.storage == b.storage:
            return False
        older, newer = sorted((storages[a.storage], storages[b.storage]), key=lambda g: g.id)
        return newer.reuses(older)
    return reuse_of


def findings(trace, all: bool = False) -> list[Finding]:  # noqa: A002
    """Findings, most serious first, grouped (computed once per trace length)."""
    key = (len(trace.calls), bool(all))
    cached = getattr(trace, "_found", None)
    if cached is not None and cached[0] == key:
        return cached[1]
    built, namer = _state(trace)
    with paused_gc(promote=True):
        found = classify(built.infos, all=all,
                         order=lambda: flows(built.ops, built.infos, _reuse_of(trace))[0],
                         names=namer.finding_names)
    trace._found = (key, found)
    return found


def reuse(trace) -> list[Finding]:
    """Conflicts between two lifetimes of one address, in program order."""
    built, namer = _state(trace)
    with paused_gc(promote=True):
        out = flows(built.ops, built.infos, _reuse_of(trace), want_reuse=True)[1]
    for f in out:
        f.names = namer.finding_names(f)
    out.sort(key=lambda f: (f.ops[0].index, f.ops[-1].index))
    return out


def to_json(trace, all: bool = False, elements: bool = False,  # noqa: A002
            timings: bool = False) -> dict:
    """Findings (most serious first), reuse, races, failed and untracked ops, as plain data:
    the same fields as :meth:`Trace.findings` gives, with ``schema_version``."""
    t0 = time.perf_counter()
    found = findings(trace, all)
    t1 = time.perf_counter()
    built, _ = _state(trace)
    reused = reuse(trace) if all else None
    data = {
        "schema_version": SCHEMA_VERSION,
        "tool": "aliasflow trace",
        "aten_calls": len(trace.calls),
        "storages": len(trace.storages),
        "counts": {s: sum(1 for f in found if f.severity == s) for s in SEVERITIES},
        "findings": [finding_json(f, f.names, elements) for f in found],
        "races": [f.to_json(elements) for f in trace.races()],
        "failed": [{"op": i.name, "line": i.line, "error": i.error}
                   for i in built.infos if i.failed],
        "untracked": [{"op": i.name, "line": i.line, "why": i.untracked}
                      for i in built.infos if i.untracked],
        "threads_started": trace.threads_started,
        "calls_on_other_threads": trace.calls_on_other_threads,
    }
    if reused is not None:
        data["reuse"] = [finding_json(f, f.names, elements) for f in reused]
    if timings:
        data["timings"] = {"findings_s": t1 - t0}
    return data


def to_text(trace, all: bool = False) -> str:  # noqa: A002
    """Findings by severity, most serious first, each at its user line, with its hint."""
    found = findings(trace, all)
    built, _ = _state(trace)
    counts = ", ".join(f"{sum(1 for f in found if f.severity == s)} {s}"
                       for s in SEVERITIES if all or s != "order")
    head = (f"{len(trace.calls)} aten calls, {len(trace.storages)} storages: {counts}"
            + ("" if all else " (order facts: --all)"))
    out = [text(found, lambda f: f.names, head)]
    for info in built.infos:
        if info.failed and not any(info is op for f in found for op in f.ops):
            out.append(f"\nrefused: {info.label} at {info.line}: {info.error}")
        if info.untracked:
            out.append(f"\nnot recorded: {info.label} at {info.line}: {info.untracked}")
    return "\n".join(out)


def html_model(trace, all: bool = False) -> dict:  # noqa: A002
    """The page model of the HTML report (:mod:`aliasflow.viz.report` renders it)."""
    from ..findings.page import model
    built, _ = _state(trace)
    return model(to_json(trace, all=all), findings(trace, all), built.infos, built.ops,
                 "aliasflow trace report")


def write_html(trace, path, all: bool = False) -> None:  # noqa: A002
    from ...viz.report import write_html as write
    write(html_model(trace, all), path)
