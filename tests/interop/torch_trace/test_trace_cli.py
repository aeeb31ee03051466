"""``aliasflow trace`` on scripts, and the HTML page (in headless chromium when present)."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from repo import ROOT
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
EXAMPLE = ROOT / "examples" / "trace_silent_wrong.py"


def trace(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "aliasflow.cli", "trace", *map(str, args)],
                          capture_output=True, text=True, env=ENV, cwd=cwd, timeout=300)


EXPECTED = [  # (severity, kind, aten ops, count, line) for examples/trace_silent_wrong.py
    ("wrong", "in-op-overlap", ["aten.sub_.Tensor"], 3, 9),
    ("wrong", "in-op-overlap", ["aten.div_.Tensor"], 12, 12),
    ("wrong", "in-op-overlap", ["aten.add_.Tensor"], 9, 16),
    ("wrong", "in-op-overlap", ["aten.copy_.default"], 30, 19),
    ("wrong", "self-overlap-write", ["aten.add_.Tensor"], 6, 28),
    ("hazard", "in-op-overlap", ["aten.add.out"], 4, 23),
]


def test_script_json():
    out = trace("--json", EXAMPLE)
    assert out.returncode == 1, out.stderr   # its hazards are at the default --fail-on
    data = json.loads(out.stdout)          # the script's own prints went to stderr
    got = [(f["severity"], f["kind"], f["labels"], f["count"],
            int(f["lines"][0].rsplit(":", 1)[1])) for f in data["findings"]]
    assert got == EXPECTED
    assert [f["failed"] != [] for f in data["findings"]] == [False] * 5 + [True]
    assert all(f["lines"][0].startswith("examples/") for f in data["findings"])  # relative
    assert "refused:" in out.stderr
    again = trace("--json", EXAMPLE)
    assert again.stdout == out.stdout          # no addresses, no timings: identical runs


def test_script_text_and_argv(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("import sys, torch\nprint('argv', sys.argv[1:])\n"
                      "a = torch.ones(3, 4)\na -= a[:, :1]\n"
                      "if '--fail' in sys.argv:\n    raise SystemExit(3)\n"
                      "if '--boom' in sys.argv:\n    raise ValueError('boom')\n")
    out = trace(script, "--json", "x")       # after the script: the script's argv
    assert out.returncode == 1               # a wrong result
    assert "argv ['--json', 'x']" in out.stdout
    assert f"{script}:4: wrong in-op-overlap: aten.sub_.Tensor (#2): 3 element(s) of a, " \
        f"a[:, :1], 9 differ" in out.stdout
    assert "\n    a -= a[:, :1]\n" in out.stdout
    assert trace(script, "--fail").returncode == 3
    boom = trace(script, "--boom")
    assert boom.returncode == 1 and "ValueError: boom" in boom.stderr
    missing = trace(tmp_path / "nope.py")
    assert missing.returncode == 2 and "no such script" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_html_goes_where_the_user_meant_when_the_program_changes_directory(tmp_path):
    """A relative --html is the caller's working directory's, whatever the program does with
    its own; a folder that does not exist is refused before the program runs."""
    (tmp_path / "elsewhere").mkdir()
    script = tmp_path / "moves.py"
    script.write_text("import os, torch\nos.chdir('elsewhere')\nprint('ran')\n"
                      "a = torch.ones(4)\na.add_(1)\n")
    out = trace("--html", "report.html", script, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "report.html").is_file()
    assert not (tmp_path / "elsewhere" / "report.html").exists()
    bad = trace("--html", "no/such/dir/r.html", script, cwd=tmp_path)
    assert bad.returncode == 2 and "does not exist" in bad.stderr and "ran" not in bad.stdout


def _html(tmp_path):
    page = tmp_path / "report.html"
    out = trace("--html", page, "--json", EXAMPLE)
    assert out.returncode == 1, out.stderr
    return page, json.loads(out.stdout)


def test_html_is_self_contained(tmp_path):
    page, data = _html(tmp_path)
    html = page.read_text()
    assert not re.search(r"https?://", html)
    assert not re.search(r"""(src|href)\s*=|@import|url\(|<script""", html, re.I)
    assert html.count('class="finding"') == len(data["findings"]) == len(EXPECTED)
    assert "<svg" in html and html.count('class="grid"') == len(EXPECTED)
    assert html.index('id="sec-wrong"') < html.index('id="sec-hazard"')
    assert all(f["hint"] in html.replace("&#x27;", "'") for f in data["findings"])


NUMPY_PROGRAM = """import numpy as np
a = np.arange(16).reshape(4, 4)
a[1] = a[:, 3]
h = np.zeros(5)
h[np.array([0, 1, 1, 3])] += 1
r = np.arange(6.).reshape(3, 2)
r[0], r[1] = r[1], r[0]
"""


def _numpy_hits():
    """The elements of each finding of NUMPY_PROGRAM, worked out with NumPy index arrays
    (flat positions in the array), as ``{flat position: the index in the user's view}``."""
    grid = np.arange(16).reshape(4, 4)
    shared = sorted(set(grid[1].tolist()) & set(grid[:, 3].tolist()))   # a[1] meets a[:, 3]
    repeated = [i for i in range(5) if [0, 1, 1, 3].count(i) > 1]       # h[idx] repeats
    return [{e: f"a[1][{list(grid[1]).index(e)}]" for e in shared},
            {e: f"h[{e}]" for e in repeated},
            {e: f"r[0][{e}]" for e in np.arange(6).reshape(3, 2)[0].tolist()}]


def _chromium_dom(page, profile):
    return subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
         "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout


@pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium binary")
@pytest.mark.parametrize("program", ["torch", "numpy"])
def test_html_in_headless_chromium(tmp_path, program):
    if program == "torch":
        page, data = _html(tmp_path)
    else:
        script = tmp_path / "np_prog.py"
        script.write_text(NUMPY_PROGRAM)
        page = tmp_path / "report.html"
        out = trace("--html", page, "--json", script)
        assert out.returncode == 1, out.stderr
        data = json.loads(out.stdout)
        assert [(f["severity"], f["kind"]) for f in data["findings"]] == [
            ("wrong", "in-op-overlap"), ("hazard", "duplicate-index"), ("stale-view", "RAW")]
    profile = tmp_path / "profile"
    dom = _chromium_dom(page, profile)
    rows = re.findall(r'<div class="finding" id="finding-\d+" data-severity="([^"]+)" '
                      r'data-kind="([^"]+)" data-count="(\d+)" data-ops="([^"]+)"', dom)
    assert rows == [(f["severity"], f["kind"], str(f["count"]), " ".join(f["ops"]))
                    for f in data["findings"]]
    # every finding has its footprint grid, its elements marked and named in the user's view
    blocks = dom.split('<div class="finding"')[1:]
    assert len(blocks) == len(data["findings"])
    assert all('class="grid"' in b for b in blocks)
    if program == "numpy":
        for block, f, want in zip(blocks, data["findings"], _numpy_hits()):
            hits = re.findall(r'<td class="[^"]*\bhit\b[^"]*" title="element (\d+): ([^"]+)"',
                              block)
            assert {int(e): label for e, label in hits} == want
            assert f["count"] == len(want)
            assert ", ".join(want.values()) in block   # listed under the grid too
    shot = tmp_path / "shot.png"
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                    f"--user-data-dir={profile}", f"--screenshot={shot}",
                    "--window-size=1000,1600", page.as_uri()],
                   capture_output=True, timeout=120)
    assert shot.stat().st_size > 10_000   # it rendered something
