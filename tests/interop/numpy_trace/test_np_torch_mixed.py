"""Programs mixing NumPy and PyTorch over shared memory (``torch.from_numpy``): both traces
come out of one ``aliasflow trace`` run, and the program's output is its own."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from aliasflow.interop.numpy_trace import fastpath
from repo import ROOT

pytest.importorskip("torch")
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}

PROGRAM = """
    import numpy as np
    import torch
    a = np.arange(16.).reshape(4, 4)
    t = torch.from_numpy(a)
    t.mul_(2)                            # PyTorch writes NumPy's memory
    a[1] = a[:, 3]                       # NumPy's silently wrong overlap on it
    t -= t[:, :1]                        # PyTorch's in-op overlap
    b = torch.ones(3).numpy()            # NumPy over PyTorch's memory
    np.add(b[:-1], b[1:], out=b[1:])
    print(a.sum(), b.tolist())
    """


@pytest.mark.skipif(not fastpath.COMPILED, reason="pure runtime (AF_PURE=1): its frames show in tracebacks")
def test_both_traces_from_one_run(tmp_path):
    script = tmp_path / "mixed.py"
    script.write_text(textwrap.dedent(PROGRAM).lstrip())
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           timeout=300)
    run = subprocess.run([sys.executable, "-m", "aliasflow.cli", "trace", "--fail-on", "none",
                          str(script)],
                         capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=300)
    assert run.returncode == plain.returncode == 0
    assert run.stdout.startswith(plain.stdout)
    assert run.stderr == plain.stderr
    report = run.stdout[len(plain.stdout):]
    assert "aten calls" in report and "NumPy" in report
    data = json.loads(subprocess.run(
        [sys.executable, "-m", "aliasflow.cli", "trace", "--json", str(script)],
        capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=300).stdout)
    assert data["aten_calls"] > 0 and data["numpy"]["operations"] >= 2
    # one finding form for both tracers: PyTorch's ops are labelled by their aten overload
    torch_found = [f for f in data["findings"] if f["labels"][0].startswith("aten.")]
    numpy_found = [f for f in data["findings"] if f not in torch_found]
    assert [(f["severity"], f["kind"], f["lines"]) for f in numpy_found] == \
        [("wrong", "in-op-overlap", ["mixed.py:6"])]
    # t -= t[:, :1]: the re-run on copies differs (column 0 is zeroed before the others read it)
    assert [(f["severity"], f["kind"], f["lines"]) for f in torch_found] == \
        [("wrong", "in-op-overlap", ["mixed.py:7"])]
