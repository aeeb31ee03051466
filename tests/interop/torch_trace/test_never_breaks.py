"""The tracer never changes what the program does: failures inside it make ops untracked
(one warning per overload) and the ops run as untraced; the program's own exceptions reach it
unchanged; tensors without memory overlap nothing; unusual layouts are untracked and replay
refuses them cleanly."""
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")

import aliasflow as af  # noqa: E402
from aliasflow.interop.torch_trace import AliasflowTraceWarning, threads, tracer  # noqa: E402


def reference_path(monkeypatch):
    """Trace through Trace._call (the pure-Python reference): the tests that break one of its
    methods need every call to go through them, which the compiled path does not."""
    monkeypatch.setattr(tracer, "_hot", None)


def program():
    x = torch.arange(6.)
    y = x * 2
    x.add_(y)
    x.add_(1)
    return x, y.sum()


@pytest.mark.parametrize("where", ["_before", "_after", "_suspect", "_fresh", "spec_of"])
def test_a_failure_inside_the_tracer_leaves_the_program_alone(monkeypatch, where):
    reference_path(monkeypatch)
    expected = program()
    if where == "spec_of":   # the schema reader fails on add_ (specs are made once: forget them)
        original = tracer.spec_of
        monkeypatch.setattr(tracer, "_SPECS", {})

        def broken(func):
            if "add_" in str(func):
                raise ValueError("tracer bug")
            return original(func)
        monkeypatch.setattr(tracer, "spec_of", broken)
    else:
        original = getattr(tracer.Trace, where)

        def broken(self, *args, **kwargs):
            call = args[0] if where in ("_after", "_suspect", "_before") else None
            spec = getattr(call, "spec", None)
            if spec is not None and spec.base == "add_" or where == "_fresh" and \
                    args[0].base == "mul":   # the fresh result of y = x * 2
                raise ValueError("tracer bug")
            return original(self, *args, **kwargs)
        monkeypatch.setattr(tracer.Trace, where, broken)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with af.trace() as tr:
            got = program()
    assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])
    ours = [w for w in caught if issubclass(w.category, AliasflowTraceWarning)]
    hit = "mul" if where == "_fresh" else "add_"
    adds = [c for c in tr.calls if c.spec is None or c.spec.base == hit]
    if where == "_suspect":
        assert not ours and not any(c.untracked for c in tr.calls)   # no confirmation, no loss
    else:
        assert adds and all(c.untracked for c in adds)
        overloads = {c.spec.name if c.spec else str(c.func) for c in tr.calls if c.untracked}
        assert len(ours) == len(overloads) and "tracer bug" in str(ours[0].message)
        assert len(adds) > len(overloads) or where == "_fresh"   # once per overload
        with pytest.raises(af.AliasflowError, match="could not record"):
            tr.replay()


def test_a_failure_reading_an_argument_leaves_the_program_alone(monkeypatch):
    reference_path(monkeypatch)
    x = torch.arange(6.)   # made before the trace: first seen as an argument (_capture)

    def broken(self, *args, **kwargs):
        raise ValueError("tracer bug")
    monkeypatch.setattr(tracer.Trace, "_capture", broken)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with af.trace() as tr:
            y = x * 2
    assert torch.equal(y, torch.arange(6.) * 2)
    muls = [c for c in tr.calls if c.spec is not None and c.spec.base == "mul"]
    assert muls and all("tracer bug" in c.untracked for c in muls)
    assert any(issubclass(w.category, AliasflowTraceWarning) for w in caught)


def test_warnings_as_errors_do_not_reach_the_program(monkeypatch):
    reference_path(monkeypatch)
    monkeypatch.setattr(tracer.Trace, "_before",
                        lambda self, *a, **k: (_ for _ in ()).throw(ValueError("bug")))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with af.trace() as tr:
            y = torch.ones(3) + 1
    assert y.tolist() == [2.0, 2.0, 2.0] and tr.calls[-1].untracked


def test_a_failure_at_the_end_of_the_trace_is_a_warning(monkeypatch):
    monkeypatch.setattr(tracer.Trace, "_finish",
                        lambda self: (_ for _ in ()).throw(RuntimeError("bug")))
    with pytest.warns(AliasflowTraceWarning):
        with af.trace():
            torch.ones(2).add_(1)


def test_the_programs_exceptions_are_its_own():
    x = torch.ones(3)
    with af.trace() as tr:
        with pytest.raises(RuntimeError, match="size of tensor a") as info:
            x.add_(torch.ones(4))
    untraced = None
    try:
        torch.ones(3).add_(torch.ones(4))
    except RuntimeError as exc:
        untraced = exc
    assert type(info.value) is type(untraced) and str(info.value) == str(untraced)
    assert tr.calls[-1].error and not tr.calls[-1].untracked


def test_the_op_runs_once_when_the_tracer_fails_after_it(monkeypatch):
    reference_path(monkeypatch)
    monkeypatch.setattr(tracer.Trace, "_after",
                        lambda self, *a, **k: (_ for _ in ()).throw(ValueError("bug")))
    x = torch.zeros(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with af.trace():
            x.add_(1)
    assert x.tolist() == [1.0, 1.0, 1.0]


def test_meta_tensors_have_no_memory_and_overlap_nothing():
    with af.trace() as tr:
        a = torch.empty(4, 4, device="meta")
        b = torch.empty(4, 4, device="meta")
        a.add_(b)
        a[1:].add_(a[:-1])
        c = a @ b.t()
    assert c.device.type == "meta"
    assert tr.findings(all=True) == []
    slots = [s for k in range(len(tr)) for s in tr.info(k).slots]
    assert slots and all(s.view is None for s in slots)


def test_fake_and_functional_tensors_run():
    from torch._subclasses.fake_tensor import FakeTensorMode
    x = torch.arange(6.)
    with af.trace() as tr:
        with FakeTensorMode() as mode:
            f = mode.from_tensor(torch.ones(3))
            g = (f * 2).sum()
        h = torch.func.functionalize(lambda t: t.add_(1).mul(2))(x.clone())
    assert g.shape == () and h.tolist() == [2., 4., 6., 8., 10., 12.]
    assert tr.findings() == []


def test_sparse_quantized_and_nested_are_untracked_and_replay_refuses():
    warnings.simplefilter("ignore")
    i = torch.tensor([[0, 1], [1, 0]])
    with af.trace() as tr:
        sp = torch.sparse_coo_tensor(i, torch.tensor([1.0, 2.0]), (2, 2))
        y = (sp + sp).to_dense()
        q = torch.quantize_per_tensor(torch.arange(4.), 0.5, 0, torch.quint8)
        r = torch.dequantize(q) + 1
        nt = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
        z = nt * 2
    assert y.tolist() == [[0.0, 2.0], [4.0, 0.0]] and r.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert z.is_nested
    reasons = " ".join(c.untracked for c in tr.calls if c.untracked)
    assert "sparse" in reasons and "quantized" in reasons and "nested" in reasons
    with pytest.raises(af.AliasflowError, match="could not record"):
        tr.replay()


def test_quantized_replay_refuses_without_crashing_the_interpreter():
    code = ("import torch, aliasflow as af, warnings\nwarnings.simplefilter('ignore')\n"
            "with af.trace() as t:\n"
            "    q = torch.quantize_per_tensor(torch.arange(4.), 0.5, 0, torch.quint8)\n"
            "    r = q.dequantize() * 2\n"
            "try:\n    t.replay()\nexcept af.AliasflowError as e:\n    print('refused')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "refused", out.stderr


def test_cli_keeps_the_scripts_output_and_exit_code(tmp_path):
    import os
    from repo import ROOT
    script = tmp_path / "s.py"
    script.write_text("import torch, sys\nx = torch.arange(4.)\nprint(x.split(2)[1].tolist())\n"
                      "sys.exit(int(sys.argv[1]))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    for code in (0, 5):
        plain = subprocess.run([sys.executable, str(script), str(code)], capture_output=True,
                               text=True, env=env, timeout=300)
        traced = subprocess.run([sys.executable, "-m", "aliasflow.cli", "trace", str(script),
                                 str(code)], capture_output=True, text=True, env=env,
                                timeout=300)
        assert traced.returncode == plain.returncode == code
        assert traced.stdout.startswith(plain.stdout)


def test_calls_on_other_threads_do_not_vanish_without_a_word():
    import threading
    out = []
    with pytest.warns(AliasflowTraceWarning, match="1 thread"):
        with af.trace() as tr:
            worker = threading.Thread(target=lambda: out.append(torch.ones(3) * 2))
            worker.start()
            worker.join()
            y = torch.ones(2) + 1
    assert out[0].tolist() == [2.0, 2.0, 2.0] and y.tolist() == [2.0, 2.0]
    assert tr.threads_started == 1 and tr.to_json()["threads_started"] == 1
    assert tr.calls_on_other_threads == 2 == tr.to_json()["calls_on_other_threads"]  # ones, mul
    assert threading.Thread.start is threads.THREAD_START     # restored


def test_threads_without_aten_calls_are_not_a_warning():
    """A DataLoader with worker processes starts queue feeder threads that only pickle: the
    trace loses nothing there, so it says nothing (the batches arrive in shared memory the
    trace reads when the program uses them)."""
    import threading
    import warnings
    ds = torch.utils.data.TensorDataset(torch.arange(16.).reshape(8, 2))
    loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AliasflowTraceWarning)
        with af.trace() as tr:
            sums = [batch.sum() for (batch,) in loader]
            quiet = threading.Thread(target=lambda: sum(range(10)))
            quiet.start()
            quiet.join()
    assert [s.item() for s in sums] == [28.0, 92.0]
    assert tr.threads_started >= 3 and tr.calls_on_other_threads == 0
    assert not [w for w in caught if issubclass(w.category, AliasflowTraceWarning)]
    assert tr.findings() == [] and tr.replay().identical


class _WhatWorkersSee(torch.utils.data.Dataset):
    """Each item: is an aliasflow dispatch mode active where it is made, is the GC on, is
    the NumPy tracer recording."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        import gc
        from torch.utils._python_dispatch import _get_current_dispatch_mode
        mode = _get_current_dispatch_mode()
        traced = mode is not None and type(mode).__module__.startswith("aliasflow")
        from aliasflow.interop.numpy_trace import runtime
        return torch.tensor([float(traced), float(gc.isenabled()),
                             float(runtime._recorder is not None)])


def test_a_forked_worker_is_not_traced():
    """DataLoader's worker processes are forked from the tracing thread: the trace stops in
    them (no recording for nobody, the GC on again; the NumPy side too), and goes on in the
    parent."""
    import gc
    loader = torch.utils.data.DataLoader(_WhatWorkersSee(), batch_size=2, num_workers=2,
                                         multiprocessing_context="fork")
    with af.trace() as tr:
        seen = torch.cat([batch for batch in loader])
        after = torch.ones(2) * 3
    assert seen.tolist() == [[0.0, 1.0, 0.0]] * 4
    assert gc.isenabled() and after.tolist() == [3.0, 3.0]
    assert any(str(c.func) == "aten.mul.Tensor" for c in tr.calls)


def compiled_program(base):
    """Each step reaches one of the Python pieces the compiled path calls."""
    torch.manual_seed(0)
    y = base * 2                                  # a fresh result (StorageGen)
    y.add_(y)                                     # a read like the write (_same_layout)
    base.add_(1)                                  # a storage first seen (StorageGen, _capture)
    shared = torch.from_numpy(base.numpy()[2:5])  # memory a live storage has (_expired)
    shared.mul_(2)
    m = torch.ones(3, 3)
    m.addmm_(m, m)                                # in-place fed itself (_suspect)
    hist, edges = torch.histogramdd(torch.rand(10, 2), bins=3)   # a list in a tuple (_results)
    z = torch.ones(2, dtype=torch.complex64)
    z.mul_(2)                                     # an odd dtype (_capture)
    return [y, base, m, hist, *edges, z]


BROKEN_PIECES = ["_storage_address", "StorageGen", "_same_layout", "_expired", "Trace._capture",
                 "Trace._suspect", "Trace._results", "Trace._after"]


@pytest.mark.skipif(tracer._hot is None, reason="the compiled path is not built")
@pytest.mark.parametrize("piece", BROKEN_PIECES)
def test_a_failure_in_a_piece_the_compiled_path_calls_leaves_the_program_alone(monkeypatch,
                                                                                piece):
    expected = compiled_program(torch.arange(8.))
    owner, name = (tracer.Trace, piece[6:]) if piece.startswith("Trace.") else (tracer, piece)
    original = getattr(owner, name)
    hits = []

    def broken(*args, **kwargs):
        hits.append(name)
        raise ValueError("tracer bug")
    if name == "StorageGen":   # (the compiled path takes a type)
        class BrokenGen(original):
            __slots__ = ()

            def __init__(self, *args, **kwargs):
                broken()
        monkeypatch.setattr(owner, name, BrokenGen)
    else:
        monkeypatch.setattr(owner, name, broken if owner is tracer else
                            lambda self, *a, **k: broken())
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        with af.trace() as tr:
            got = compiled_program(torch.arange(8.))
    assert hits, f"the program never reached {piece}"
    assert len(got) == len(expected) and all(torch.equal(a, b) for a, b in zip(got, expected))
    assert original is not None and len(tr.torch.calls) > 10


@pytest.mark.skipif(tracer._hot is None, reason="the compiled path is not built")
@pytest.mark.parametrize("garbage", [["not", "a", "tuple"], (1, 2), None])
def test_the_compiled_path_checks_what_capture_appends(monkeypatch, garbage):
    """Trace._capture (Python) appends access tuples the compiled path then reads: anything
    else is refused there with an error, never read blindly (which could crash the
    interpreter), and the program goes on as untraced."""
    def bad_capture(self, t, mode, pos, k, index, out, creating=False):
        out.append(garbage)
    monkeypatch.setattr(tracer.Trace, "_capture", bad_capture)
    expected = compiled_program(torch.arange(8.))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        with af.trace() as tr:
            got = compiled_program(torch.arange(8.))
    assert len(got) == len(expected) and all(torch.equal(a, b) for a, b in zip(got, expected))
    assert any(c.untracked for c in tr.torch.calls)


@pytest.mark.parametrize("path", ["compiled", "reference"])
def test_fake_tensors_are_never_asked_for_a_data_pointer(monkeypatch, path):
    """Asking a fake tensor (or its storage) for its data pointer makes PyTorch warn that it
    will be an error: the tracer asks only tensors whose memory is real."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    if path == "reference":
        reference_path(monkeypatch)
    with FakeTensorMode():
        a = torch.empty(4, 4)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with af.trace() as tr:
                b = a + 1
                b.add_(a)
                c = b @ a
    assert c.shape == (4, 4)
    assert not [w for w in caught if "data pointer" in str(w.message)]
    assert all(acc[3] is None for call in tr.torch.calls for acc in call.accesses)


_LIB = torch.library.Library("aliasflow_test", "DEF")   # noqa: TOR901 - a test op
_LIB.define("same(Tensor x) -> Tensor")   # says its result is new ...
_LIB.impl("same", lambda x: x, "CompositeExplicitAutograd")   # ... and returns x itself


@pytest.mark.parametrize("path", ["compiled", "reference"])
def test_a_result_in_an_arguments_memory_is_not_a_new_write(monkeypatch, path):
    """An op whose schema says its result is new but which returns an argument's own memory
    (an alias the schema does not annotate, as c10d's wait_tensor): no new storage at a live
    address, no write, no finding."""
    if path == "reference":
        reference_path(monkeypatch)
    x = torch.arange(6.)
    with af.trace() as tr:
        y = torch.ops.aliasflow_test.same(x)
        y.add_(1)
    assert y is x and x.tolist() == [1., 2., 3., 4., 5., 6.]
    same = [c for c in tr.torch.calls if "same" in str(c.func)]
    assert same and same[0].results is None and len(same[0].accesses) == 1
    assert tr.findings(all=True) == []
