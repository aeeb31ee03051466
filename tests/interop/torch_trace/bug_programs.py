"""Running a real-bug program as its author would: written to a file and run as
``__main__`` under ``af.trace()`` (shared by the real-bug tests)."""
import runpy
import textwrap

import torch

import aliasflow as af


def run_case(tmp_path, code, name="prog.py"):
    """Write ``code`` (dedented) to ``tmp_path / name``, run it traced; ``(trace, path)``."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(code).lstrip("\n"))
    grad = torch.is_grad_enabled()
    try:
        with af.trace() as tr:
            runpy.run_path(str(path), run_name="__main__")
    finally:
        torch.set_grad_enabled(grad)   # a program may switch it off for the whole process
    return tr, path
