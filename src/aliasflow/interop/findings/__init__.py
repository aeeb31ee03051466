"""Findings shared by the tracers: what users act on.

A sequential program runs its ops in order, so a flow between two ops is not a bug by itself.
What changes a result is an op whose own reads and writes overlap (the kernel's order decides),
a write through a self-overlapping view or repeated indices, and a read through a view made
before its bytes were written through another view. Each finding is exactly one of:

- ``wrong``: confirmed by re-running that one op on copies of its arguments (copy semantics)
  and comparing; carries ``differs`` and an ``example`` (index, got, expected);
- ``hazard``: the result depends on the kernel's order, but this run agreed with copy
  semantics (or the framework refused the op);
- ``stale-view``: a read through a view made before another view wrote some of its bytes;
- ``order``: every other implicit flow between ops through different views (only on request).

A tracer produces ``af.OpRecord`` s (byte views at real addresses) and one :class:`OpInfo`
per record, then calls :func:`classify`. See :mod:`.model` for the fields.
"""
from .classify import classify, group
from .model import (HINTS, KINDS, RANK, SEVERITIES, Finding, Frame, OpInfo, Outcome, Slot,
                    slot_name, storage_form)
from .order import flows, same_data
from .render import SCHEMA_VERSION, finding_json, finding_text, text
from .source import assignment, calls, library_file, line_text, relative

__all__ = ["classify", "group", "flows", "same_data", "Finding", "Frame", "OpInfo", "Outcome",
           "Slot", "SEVERITIES", "KINDS", "RANK", "HINTS", "slot_name", "storage_form",
           "SCHEMA_VERSION", "finding_json", "finding_text", "text", "assignment", "calls",
           "library_file", "line_text", "relative"]
