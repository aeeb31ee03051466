"""Findings as users read them: names (expressions, locals, module parameters), user lines
(library frames skipped, paths relative to the working directory, backward ops at the forward
line that made them), grouping of repeats, hints, and the storage form beside the names."""
import os
import runpy
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

import aliasflow as af  # noqa: E402

LIBRARY = '''
import torch


class Mixer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        with torch.no_grad():
            torch.mm(self.w, self.w, out=self.w)     # a library's bug
        return x @ self.w
'''


def test_library_frames_are_skipped_and_parameters_named(tmp_path, monkeypatch):
    lib = tmp_path / "site-packages" / "fakelib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(LIBRARY)
    monkeypatch.syspath_prepend(str(tmp_path / "site-packages"))
    import fakelib
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), fakelib.Mixer())
    x = torch.randn(2, 4)
    with af.trace() as tr:
        y = net(x)          # the user's line: the library's frames are not the user's
    del y
    (f,) = tr.findings()
    line = test_library_frames_are_skipped_and_parameters_named.__code__.co_firstlineno + 9
    assert f.severity == "wrong" and f.lines[0].endswith(f"test_findings_names.py:{line}")
    assert f.names == ["1.w"]       # the parameter's qualified name in the model
    sys.modules.pop("fakelib", None)


def test_parameters_are_named_from_their_root_module_even_if_it_is_not_called(tmp_path,
                                                                              monkeypatch):
    """Names are read from the modules alive when the finding asks, not from module calls
    seen while tracing: a parameter squared in place by a library, with no module called
    in the trace, is named by its path from the outermost module."""
    lib = tmp_path / "site-packages" / "fakesq"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("import torch\n\n\ndef square(w):\n"
                                      "    torch.mm(w, w, out=w)\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site-packages"))
    import fakesq
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Sequential(
        torch.nn.ReLU(), torch.nn.Linear(4, 4, bias=False)))
    with af.trace() as tr, torch.no_grad():
        fakesq.square(net[1][1].weight)
    (f,) = tr.findings()
    assert f.severity == "wrong"
    assert f.names == ["1.1.weight"]   # from the root; not "weight", as its own module says
    from aliasflow.interop.torch_trace.tracer import Trace
    with Trace(names=False) as tr, torch.no_grad():
        fakesq.square(net[1][1].weight)
    (f,) = tr.findings()
    assert f.names[0].startswith("s")   # the storage form: no module names asked for
    sys.modules.pop("fakesq", None)


def test_backward_ops_are_placed_at_the_forward_line_that_made_them():
    x = torch.randn(3, 4)
    w = torch.randn(4, 2, requires_grad=True)
    with af.trace() as tr:
        y = x @ w                               # forward: MmBackward is made here
        loss = y.relu().sum()
        loss.backward()                         # the backward pass runs from here
    first = test_backward_ops_are_placed_at_the_forward_line_that_made_them.__code__\
        .co_firstlineno
    infos = [tr.info(k) for k in range(len(tr))]
    back = [i for i in infos if i.context is not None]
    assert back, "backward ops carry the backward() line as context"
    assert all(i.context.line == first + 6 for i in back)
    mm = [i for i in back if i.label == "aten.mm.default"]
    assert mm and all(i.where.line == first + 4 for i in mm)
    relu = [i for i in back if i.label == "aten.threshold_backward.default"]
    assert relu and all(i.where.line == first + 5 for i in relu)


class Doubler(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        v = torch.zeros(4, 4)[1:, 1:]
        v += g
        v += v.t()                              # user-written backward code: its own line
        return v.clone()


def test_user_written_backward_keeps_its_own_line():
    x = torch.randn(3, 3, requires_grad=True)
    with af.trace() as tr:
        Doubler.apply(x).sum().backward()
    (f,) = tr.findings()
    assert f.severity == "wrong" and f.kind == "in-op-overlap"
    assert f.lines[0].endswith(f":{Doubler.backward.__code__.co_firstlineno + 4}")
    assert f.names == ["v", "v.t()"]


def test_repeats_are_grouped_with_occurrences():
    with af.trace() as tr:
        for step in range(5):
            a = torch.arange(12.).reshape(3, 4) + step
            a -= a[:, :1]
    (f,) = tr.findings()
    assert f.occurrences == 5 and f.ops[0].index < min(ops[0].index for ops in f.repeats)
    assert len(f.repeats) == 4


def test_paths_relative_to_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        import torch
        a = torch.ones(3, 4)
        a -= a[:, :1]
        """).lstrip())
    monkeypatch.chdir(tmp_path)
    with af.trace() as tr:
        runpy.run_path("prog.py")
    (f,) = tr.findings()
    assert f.lines == ["prog.py:3"] and f.ops[0].source == "a -= a[:, :1]"
    data = tr.to_json()
    assert data["findings"][0]["lines"] == ["prog.py:3"]
    assert os.getcwd() == str(tmp_path)


def test_elements_in_the_users_view_and_the_storage_form():
    from aliasflow.interop.findings import storage_form
    labels = torch.arange(30).reshape(2, 15)
    with af.trace() as tr:
        labels[:, 1:] = labels[:, :-1]       # a shift the other way: wrong, not a hazard
    (f,) = tr.findings()
    assert f.severity == "wrong"
    index, got, expected = f.example
    assert len(index) == 2                   # an index of the user's view labels[:, 1:]
    assert got == labels[:, 1:][index].item() and expected != got
    assert f.names == ["labels[:, 1:]", "labels[:, :-1]"]
    form = storage_form(f.slots[0])
    assert form.startswith("s") and "int64 (2, 14) stride (15, 1) offset 1" in form
    text = tr.to_json()["findings"][0]["example"]["at"]
    assert text == f"labels[:, 1:][{index[0]}, {index[1]}]"


def test_every_class_has_a_hint():
    from aliasflow.interop.findings import HINTS, KINDS, SEVERITIES
    for severity, kind in [("wrong", k) for k in KINDS[:3]] + [("hazard", k) for k in
                                                                 KINDS[:3]] + \
            [("stale-view", "RAW")] + [("order", k) for k in KINDS[3:]]:
        assert HINTS[(severity, kind)], (severity, kind)
    assert SEVERITIES == ("wrong", "hazard", "stale-view", "order")


def _run(tmp_path, code):
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(code).lstrip("\n"))
    with af.trace() as tr:
        runpy.run_path(str(path), run_name="__main__")
    return tr


def test_two_statements_on_one_line_are_not_named_from_each_other(tmp_path):
    """``a(); b()``: a line number cannot say which statement an op ran from, so neither
    call's text names the other's tensors (the frame's variables do); both are reported."""
    tr = _run(tmp_path, """
        import torch
        a = torch.randn(4, 4)
        b = torch.randn(4, 4)
        torch.mm(a, a, out=a); torch.mm(b, b, out=b)
        """)
    assert sorted(f.names[0] for f in tr.findings()) == ["a", "b"]
    assert all(f.occurrences == 1 for f in tr.findings())


def test_a_chain_of_in_place_calls_names_the_receiver_it_returns(tmp_path):
    """``A.sub_(m).div_(m)``: ``div_`` writes ``A`` (``sub_`` returns its receiver), so both
    ops' finding is one, about ``A``; a view-changing in-place call is not looked through."""
    tr = _run(tmp_path, """
        import torch
        A = torch.randn(3, 3)
        A.sub_(A[:, 0:1]).div_(A[:, 0:1])
        """)
    (f,) = tr.findings()
    assert f.names == ["A", "A[:, 0:1]"] and f.occurrences == 2
    from aliasflow.interop.torch_trace.names import _returned_self
    assert _returned_self("x.as_strided((3, 2), (1, 1)).mul_(2)") == \
        "x.as_strided((3, 2), (1, 1))"
    assert _returned_self("w.t_()") == "w.t_()" and _returned_self("a[0]") == "a[0]"
