"""Notebooks: a trace and its findings as an HTML table (``_repr_html_``, through IPython's
own display formatter, as Jupyter calls it), and the ``%%aliasflow`` cell magic in an IPython
shell."""
import re
from html.parser import HTMLParser

import pytest
from ipython_shell import shell  # noqa: E402,F401 - the fixture

pytest.importorskip("torch")
pytest.importorskip("IPython")

CELL = """import torch
a = torch.arange(12.).reshape(3, 4)
a -= a[:, :1]  # <b>not bold</b>
c = torch.arange(25.).reshape(5, 5)[1:4, 1:4]
c += c.t()  # aliasflow: ignore
"""


class Rows(HTMLParser):
    """The table's rows, as lists of cell texts (an independent reading of the HTML)."""

    def __init__(self, html):
        super().__init__()
        self.rows, self.row, self.cell, self.tags = [], None, None, []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.row.append(self.cell)
            self.cell = None
        elif tag == "tr":
            self.rows.append(self.row)

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def html_of(shell, obj):
    data, _ = shell.display_formatter.format(obj)
    return data["text/html"]


def test_cell_magic_traces_the_cell_and_keeps_the_trace(shell):
    result = shell.run_cell("%%aliasflow -o t\n" + CELL)
    assert result.success, result.error_in_exec
    t = shell.user_ns["t"]
    assert shell.user_ns["a"][0, 1].item() == 1.0       # the cell ran, in the user namespace
    found = t.findings()
    assert [f.kind for f in found] == ["in-op-overlap", "in-op-overlap"]
    assert re.search(r":3$", found[0].lines[0])         # the cell's own line
    rows = Rows(html_of(shell, t)).rows
    assert rows[0] == ["severity", "kind", "where", "what", "hint"]
    body = rows[1:]
    assert len(body) == 2 and body[0][:2] == ["wrong", "in-op-overlap"]
    assert "a -= a[:, :1]  # <b>not bold</b>" in body[0][2]   # escaped, shown as text


def test_the_magic_returns_the_report_without_suppressed_findings(shell):
    from aliasflow.notebook import aliasflow_cell
    view = aliasflow_cell(shell, "", CELL)
    rows = Rows(html_of(shell, view)).rows[1:]
    assert [r[:2] for r in rows] == [["wrong", "in-op-overlap"]]   # line 5 is suppressed
    assert "1 suppressed by comments" in html_of(shell, view)
    assert "wrong in-op-overlap" in repr(view)
    clean = aliasflow_cell(shell, "--select order", CELL)
    assert Rows(html_of(shell, clean)).rows[1:] == [["no findings"]]


def test_a_finding_displays_as_a_table_too(shell):
    t = shell.user_ns["t"]
    rows = Rows(html_of(shell, t.findings()[0])).rows
    assert len(rows) == 2 and rows[1][0] == "wrong"


def test_fail_on_stops_the_cell_and_bad_options_are_one_line(shell, capsys):
    result = shell.run_cell("%%aliasflow --fail-on hazard\n" + CELL)
    from aliasflow.notebook import FindingsError
    assert isinstance(result.error_in_exec, FindingsError)
    result = shell.run_cell("%%aliasflow --bogus\nx = 1\n")
    assert not result.success and "x" not in shell.user_ns
    assert "unknown arguments '--bogus'" in str(result.error_in_exec)
    result = shell.run_cell("%%aliasflow --fail-on often\nx = 1\n")
    assert "'often' is not a severity" in str(result.error_in_exec)
