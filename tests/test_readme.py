"""The README's Python example runs and says what the README says it does."""
import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_python_example_runs():
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines[0] == "fill col RAW implicit [2, 6, 10]"
    assert lines[1] == "[['fill'], ['col']]"
    assert lines[2] == lines[3]  # the value returned, and shown by the op
    assert lines[2].startswith("[2.7182")


def test_readme_primitive_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    code = next(b for b in blocks if "af.Primitive(" in b)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile("import aliasflow as af\n" + code, "README.md", "exec"), {})
    finally:
        import aliasflow as af
        af.PRIMITIVES.pop("axpy", None)
    assert out.getvalue().splitlines() == ["[0.0, 1.0, 4.0, 7.0, 10.0, 13.0, 6.0, 7.0]"]


def test_readme_memory_example_runs():
    pytest = __import__("pytest")
    pytest.importorskip("torch")
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    code = next(b for b in blocks if "af.from_numpy" in b)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue().splitlines() == ["[9, 13]", "True",
                                           "[0.0, 1.0, -1.0, 3.0, 4.0, 5.0]"]
