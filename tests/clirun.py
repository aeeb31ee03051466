"""Running the ``aliasflow`` command line as a real process, for tests in any directory."""
import os
import subprocess
import sys

from repo import ROOT

SRC = str(ROOT / "src")


def env(**extra) -> dict:
    """The environment of a command: this checkout's sources first, no colour, 200 columns
    unless ``COLUMNS`` is given (``None`` removes a variable)."""
    out = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
               COLUMNS="200", NO_COLOR="1")
    for key, value in extra.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def aliasflow(*args, cwd=None, timeout=300, module="aliasflow", **extra_env):
    """``python -m aliasflow ARGS`` in ``cwd``; the completed process (text output)."""
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=cwd,
                          env=env(**extra_env), capture_output=True, text=True,
                          timeout=timeout, errors="backslashreplace")


def one_error_line(proc, *words, code=2):
    """The process failed with ``code`` and said why in one ``error:`` line on stderr."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]
