"""Streams in traces of real PyTorch programs (CPU): the stream vocabulary, CSAN's scenarios
through it, what CSAN cannot see (partial overlap, reinterpreting views, memory reuse), the
classic missing ``wait_stream``, and random programs against brute force (a transitive
closure of the synchronisation for happens-before, byte sets for overlap)."""
import itertools

import pytest
from hypothesis import given, settings, strategies as st

torch = pytest.importorskip("torch")

import aliasflow as af  # noqa: E402
from csan_scenarios import AF_ONLY_SCENARIOS, BLOCK, CSAN_SCENARIOS  # noqa: E402
from stream_oracle import SyncGraph  # noqa: E402
from torch_stream_driver import TorchDriver  # noqa: E402


def E(t):
    """Byte addresses of a tensor's elements, from the start of its storage."""
    k = t.element_size()
    return {(t.storage_offset() + sum(i * s for i, s in zip(idx, t.stride()))) * k + b
            for idx in itertools.product(*(range(n) for n in t.shape)) for b in range(k)}


def summary(races):
    return [(f.kinds, [op.label for op in f.ops], f.streams, f.count) for f in races]


# ---- the vocabulary ---------------------------------------------------------------------

def test_prefetch_without_wait_stream_races_and_with_it_does_not():
    x = torch.arange(8.0)
    for wait in (False, True):
        with af.trace() as t:
            side = t.stream("side")
            side.wait_stream(t.default_stream)
            with side:
                y = x * 2                        # the prefetch
            if wait:
                t.default_stream.wait_stream(side)
            z = y + 1                            # consumed on the default stream
        races = t.races()
        if wait:
            assert races == []
        else:
            (r,) = races
            assert r.kind == r.severity == "race" and r.conflict == "RAW"
            assert [op.label for op in r.ops] == ["aten.mul.Tensor", "aten.add.Tensor"]
            assert r.streams == ["side", "default"] and r.count == 8
            assert r.elements() == list(range(8)) and not r.reuse
            line = test_prefetch_without_wait_stream_races_and_with_it_does_not.__code__
            assert [ln.rsplit(":", 1)[1] for ln in r.lines] == \
                [str(line.co_firstlineno + 7), str(line.co_firstlineno + 10)]
            assert r.stacks[0][-1][2] == line.co_name and len(r.stacks) == 2
            assert r.names[0] == r.names[1]   # the user's names (the findings' naming)
            data = r.to_json(elements=True)
            assert data["kind"] == "race" and data["streams"] == ["side", "default"]
            assert data["elements"] == list(range(8)) and data["conflict"] == "RAW"
            assert data["stacks"][1][-1].endswith(f"in {line.co_name}")
        assert torch.equal(z, x * 2 + 1)    # the program ran as untraced


def test_side_write_races_default_read_of_a_slice():
    x = torch.zeros(10)
    with af.trace() as t:
        side = t.stream("side")
        side.wait_stream(t.default_stream)
        with side:
            x[:6].add_(1)
        total = x[4:].sum()                      # elements 4 and 5 race
    (r,) = t.races()
    assert r.conflict == "RAW" and r.count == len(E(x[:6]) & E(x[4:])) // 4 == 2
    assert r.elements() == [4, 5]
    assert total.item() == 2.0


def test_events_order_and_a_region_end_does_not():
    x = torch.zeros(6)
    with af.trace() as t:
        a, b = t.stream("a"), t.stream("b")
        with a:
            x.add_(1)
            done = a.record_event()
        with b:
            done.wait()                          # wait on the current stream (b)
            x.mul_(2)
        e = t.event()
        e.record(b)
        e.wait(t.default_stream)
        x.sub_(1)
        with a:                                  # a never waited for b: races b's mul_
            s = x.sum()
    got = summary(t.races())
    assert got == [(("RAW",), ["aten.mul_.Tensor", "aten.sum.default"], ["b", "a"], 6),
                   (("RAW",), ["aten.sub_.Tensor", "aten.sum.default"], ["default", "a"], 6)]
    del s


def test_host_waits_order_everything_issued_after():
    x = torch.zeros(4)
    for sync in ("stream", "event", "device", None):
        with af.trace() as t:
            side = t.stream("side")
            with side:
                x.add_(1)
                e = side.record_event()
            if sync == "stream":
                side.synchronize()
            elif sync == "event":
                e.synchronize()
            elif sync == "device":
                t.synchronize()
            x.mul_(2)
        assert (t.races() == []) == (sync is not None), sync


def test_wait_on_an_event_never_recorded_orders_nothing():
    x = torch.zeros(4)
    with af.trace() as t:
        side = t.stream("side")
        with side:
            x.add_(1)
        t.default_stream.wait_event(t.event())
        x.mul_(2)
    assert len(t.races()) == 1


def test_regions_nest_and_restore():
    x = torch.zeros(4)
    with af.trace() as t:
        a, b = t.stream("a"), t.stream("b")
        with a:
            assert t.current_stream is a
            with b:
                x.add_(1)
                assert t.current_stream is b
            x.mul_(2)                            # back on a
        x.sub_(1)
        assert t.current_stream is t.default_stream
    assert [op.info.stream for op in t.ops if op.accesses] == ["b", "a", "default"]
    assert t.stream("a") is a


def test_bad_use_is_refused_with_the_bad_value():
    with af.trace() as t:
        for bad in ("", "default", "host", "cuda:1", 3, None):
            with pytest.raises(af.AliasflowError, match="stream name"):
                t.stream(bad)
        s = t.stream("s")
        with pytest.raises(af.AliasflowError, match="expected a Event"):
            s.wait_event(s)
        with pytest.raises(af.AliasflowError, match="expected a Stream"):
            s.wait_stream("default")
        with af.trace() as other:
            with pytest.raises(af.AliasflowError, match="another trace"):
                s.wait_stream(other.stream("s"))
        with pytest.raises(af.AliasflowError, match="not the innermost"):
            s.__exit__(None, None, None)


def test_no_streams_no_races_and_one_stream_is_ordered():
    x = torch.zeros(4)
    with af.trace() as t:
        x.add_(1)
        x[1:].mul_(2)
    assert t.races() == []
    with af.trace() as t:
        with t.stream("only"):
            x.add_(1)
            x[1:].mul_(2)
    assert t.races() == []


# ---- CSAN's scenarios through the vocabulary --------------------------------------------

NO_ALLOCATOR = [s for s in AF_ONLY_SCENARIOS if "reuse" not in s.__name__]


@pytest.mark.parametrize("scenario", CSAN_SCENARIOS + NO_ALLOCATOR, ids=lambda s: s.__name__)
def test_csan_scenarios_through_the_vocabulary(scenario):
    buf = torch.zeros(BLOCK * 64, dtype=torch.uint8)
    with af.trace(values=False) as t:
        driver = TorchDriver(t, buf)
        scenario(driver)
    driver.finish()


# ---- what CSAN cannot see, on real tensors ----------------------------------------------

def test_reinterpreting_view_races_by_bytes():
    x = torch.zeros(8)
    with af.trace() as t:
        side = t.stream("side")
        with side:
            x.add_(1)
        high = x.view(torch.uint8)[2::4].clone()   # byte 2 of every float32
    (r,) = t.races()
    assert r.conflict == "RAW" and r.count == 8 and r.elements() == list(range(8))
    assert r.views[1].dtype == torch.uint8
    assert len(E(x) & E(x.view(torch.uint8)[2::4])) == 8
    del high


def test_race_across_memory_reuse():
    """x's memory (a buffer we control, so the address is reused for sure) is read on a side
    stream, x is dropped, and y over the same memory is written on the default stream: the
    write may land before the read."""
    buf = bytearray(64)
    for record in (False, True):
        with af.trace() as t:
            x = torch.frombuffer(buf, dtype=torch.float32)
            x.fill_(1)
            side = t.stream("side")
            side.wait_stream(t.default_stream)
            with side:
                s = x[:8].sum()
            if record:
                t.default_stream.wait_stream(side)
            del x
            y = torch.frombuffer(buf, dtype=torch.int32)
            y.fill_(7)
        races = t.races()
        if record:
            assert races == []
        else:
            (r,) = races
            assert r.reuse and r.conflict == "WAR" and r.count == 8
            assert r.views[0].gen is not r.views[1].gen
            assert r.views[0].gen.address == r.views[1].gen.address
        del s


# ---- random programs against brute force -----------------------------------------------

STREAMS = ["default", "a", "b"]


def _views(x):
    b = x.view(torch.int16)
    return [x, x[:6], x[4:10], x[::3], x[1::2], x.view(4, 3)[:, 1], b[3:9], b[::4], b[5:]]


@st.composite
def programs(draw):
    steps = []
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["add_", "add_", "copy_", "sum", "record", "wait",
                                     "wait_stream", "sync_stream", "sync"]))
        s, o = draw(st.sampled_from(STREAMS)), draw(st.sampled_from(STREAMS))
        v, w = draw(st.integers(0, 8)), draw(st.integers(0, 8))
        e = draw(st.sampled_from(["e0", "e1"]))
        steps.append((kind, s, o, v, w, e))
    return steps


def _layout(t):
    k = t.element_size()
    return (t.storage_offset() * k, tuple(t.shape), tuple(s * k for s in t.stride()), k)


@settings(max_examples=120, deadline=None)
@given(programs())
def test_random_programs_equal_brute_force(steps):
    x = torch.arange(12.0)
    views = _views(x)
    graph, accesses, keep = SyncGraph(), [], []
    with af.trace(values=False) as t:
        events = {}
        stream = {s: (t.default_stream if s == "default" else t.stream(s)) for s in STREAMS}
        for kind, s, o, v, w, e in steps:
            if kind in ("add_", "copy_", "sum"):
                dst, src = views[v], views[w]
                with stream[s]:
                    if kind == "add_":
                        dst.add_(1)
                        acc = [("R", dst), ("W", dst)]
                    elif kind == "copy_" and dst.dtype == src.dtype and \
                            dst.shape == src.shape and not E(dst) & E(src):
                        dst.copy_(src)
                        acc = [("R", src), ("W", dst)]
                    else:
                        keep.append(src.sum())
                        acc = [("R", src)]
                graph.issue(s)
                accesses.append(acc)
            elif kind == "record":
                events.setdefault(e, t.event()).record(stream[s])
                graph.record(e, s)
            elif kind == "wait":
                stream[s].wait_event(events.setdefault(e, t.event()))
                graph.wait(s, e)
            elif kind == "wait_stream":
                stream[s].wait_stream(stream[o])
                graph.wait_stream(s, o)
            elif kind == "sync_stream":
                stream[s].synchronize()
                graph.synchronize_stream(s)
            else:
                t.synchronize()
                graph.synchronize()
    want = {}
    for j in range(len(accesses)):
        for i in range(j):
            if graph.before(i, j):
                continue
            for mi, a in accesses[i]:
                for mj, b in accesses[j]:
                    shared = E(a) & E(b)
                    if (mi == "W" or mj == "W") and shared:
                        kind = "WAR" if mi == "R" else ("RAW" if mj == "R" else "WAW")
                        k = a.element_size()
                        start = a.storage_offset() * k
                        count = len({(byte - start) // k for byte in shared})
                        key = (i, j, _layout(a), _layout(b))
                        want.setdefault(key, [set(), count])[0].add(kind)
    step = {op.info.index: k for k, op in enumerate(op for op in t.ops if op.accesses)}
    assert len(step) == len(accesses)
    got = {}
    for r in t.races():
        a, b = r.views
        key = (step[r.ops[0].index], step[r.ops[1].index],
               (a.offset * a.itemsize, tuple(a.sizes), tuple(s * a.itemsize for s in a.strides),
                a.itemsize),
               (b.offset * b.itemsize, tuple(b.sizes), tuple(s * b.itemsize for s in b.strides),
                b.itemsize))
        assert key not in got
        got[key] = [set(r.kinds), r.count]
    assert got == want


def test_the_docs_example_says_what_the_docs_say():
    from pathlib import Path
    import contextlib
    import io
    import re
    doc = Path(__file__).resolve().parents[3] / "docs" / "streams.md"
    code = re.search(r"```python\n(.*?)```", doc.read_text(), re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(doc), "exec"), {})
    (line,) = out.getvalue().splitlines()
    lines = code.splitlines()
    from aliasflow.interop.findings import relative   # lines are relative to the cwd
    at = [f"{relative(str(doc))}:{k + 1}" for k, ln in enumerate(lines)
          if ln.strip().startswith(("y = x", "z = y"))]
    assert line.startswith(f"RAW ['side', 'default'] {at}")
    assert line.endswith("8 [0, 1, 2, 3, 4, 5, 6, 7]")
    fixed = code.replace("    z = y + 1", "    t.default_stream.wait_stream(side)\n    z = y + 1")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(fixed, str(doc), "exec"), {})
    assert out.getvalue() == ""


def test_the_gpu_script_skips_cleanly_without_cuda():
    import subprocess
    import sys
    from pathlib import Path
    if torch.cuda.is_available():
        pytest.skip("CUDA is here: the script runs for real (examples/gpu_streams_check.py)")
    script = Path(__file__).resolve().parents[3] / "examples" / "gpu_streams_check.py"
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and "CUDA is not available" in proc.stdout, proc.stderr


def test_streams_make_no_reference_cycle():
    """The streams' log holds its streams weakly (a stream holds its log), so it and the op
    list it refers to go as soon as nothing holds them, without the cyclic collector."""
    import gc
    import weakref
    x = torch.zeros(1000)
    gc.disable()
    try:
        with af.trace() as t:
            side = t.stream("side")
            with side:
                x.add_(1)
            side.record_event().wait(t.default_stream)
            x.mul_(2)
        assert t.races() == [] and t.current_stream is t.default_stream
        log = weakref.ref(t._streams)
        del side
        t._streams = None
        assert log() is None
    finally:
        gc.enable()


def test_races_follow_synchronisation_added_later():
    x = torch.zeros(4)
    with af.trace() as t:
        with t.stream("side"):
            x.add_(1)
        t.synchronize()
    assert t.races() == []
    with af.trace() as t:
        with t.stream("side"):
            x.add_(1)
        assert t.races() == []          # one op: nothing to race with yet
        x.mul_(2)
        assert len(t.races()) == 1
        t.synchronize()                 # orders nothing issued before it
        assert len(t.races()) == 1
        x.sub_(1)
    assert len(t.races()) == 1
