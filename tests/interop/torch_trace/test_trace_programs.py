"""Tracing whole programs: training steps replayed byte for byte, memory reuse, storages
shared with NumPy, out= resizing, zero-size tensors, conj/neg views, stream races."""
import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import aliasflow as af  # noqa: E402


def E(t):
    return {t.storage_offset() + sum(i * s for i, s in zip(idx, t.stride()))
            for idx in itertools.product(*(range(n) for n in t.shape))}


def byte_set(t):
    base, k = t.untyped_storage().data_ptr(), t.element_size()
    return {base + e * k + b for e in E(t) for b in range(k)}


def _train(model, steps=2, **opt):
    torch.manual_seed(0)
    x = torch.randn(4, 5, 16) if isinstance(model, torch.nn.TransformerEncoderLayer) \
        else torch.randn(8, 16)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, **opt)
    with af.trace() as tr:
        for _ in range(steps):
            loss = model(x).square().mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return tr


@pytest.mark.parametrize("make", [
    lambda: torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)),
    lambda: torch.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.1,
                                             batch_first=True),
], ids=["mlp", "transformer"])
def test_training_step_replays_identically(make):
    torch.manual_seed(1)
    model = make()
    tr = _train(model)
    assert len(tr.ops) > 100
    names = {op.prim for op in tr.ops}
    assert {"aten.mm.default", "aten.addmm.default"} & names      # forward
    assert any("backward" in n or n == "aten.threshold_backward.default" for n in names) or \
        "aten.mm.default" in names                                   # backward
    assert any(n.startswith("aten._foreach") or n.startswith("aten.addcdiv") for n in names)
    graph = af.analyze(tr.ops)
    assert len(graph.dependencies) > 0
    report = tr.replay(workers=2)
    assert report.identical, str(report)
    assert report.compared_storages > 10
    assert all(tr.info(k).where is not None for k in range(len(tr)))
    assert tr.findings() == []


def test_replay_sees_writes_outside_the_dispatcher():
    q = torch.zeros(5)
    with af.trace() as tr:
        q += 1
        q.numpy()[2] = 7.0       # not an aten call
        r = q * 2
    del r
    report = tr.replay()
    assert not report.identical
    # q's storage and r's (alive when tracing ended): element 2 only, bytes 8..11 (as many
    # as differ between 2.0 and 7.0, and between 4.0 and 14.0)
    assert {m.what for m in report.mismatches} == {"storage"} and len(report.mismatches) == 2
    assert all(m.offsets and set(m.offsets) <= {8, 9, 10, 11} for m in report.mismatches)


def test_allocator_reuse_is_listed_apart():
    x = torch.randn(64)
    acc = torch.zeros(64)
    with af.trace() as tr:
        for _ in range(20):
            tmp = x * 2
            acc.add_(tmp[::2].sum())
            del tmp
    gens = [g for g in tr.storages if g.creator is not None]
    reused = [(a, b) for a, b in itertools.combinations(gens, 2)
              if a.address < b.end and b.address < a.end]
    if not reused:
        pytest.skip("the allocator did not reuse an address this time")
    assert all(not f.reuse for f in tr.findings(all=True))
    reuse = tr.reuse()
    assert reuse and all(f.reuse for f in reuse)
    for f in reuse:
        a, b = tr.storages[f.slots[0].storage], tr.storages[f.slots[-1].storage]
        assert a is not b and a.address < b.end and b.address < a.end
    assert tr.replay(workers=2).identical


def test_two_numpy_wrappers_of_one_buffer_alias():
    buf = np.zeros(8, dtype=np.float32)
    t1 = torch.from_numpy(buf)
    t2 = torch.from_numpy(buf[2:])
    assert t1.untyped_storage()._cdata != t2.untyped_storage()._cdata
    with af.trace() as tr:
        t1[:4].add_(1)
        s = t2.sum()
    del s
    n = len(byte_set(t1[:4]) & byte_set(t2)) // 4
    assert n == 2
    assert [(f.kind, f.count, f.reuse) for f in tr.findings(all=True)] == [("RAW", n, False)]
    assert tr.reuse() == []


def test_reinterpreting_view_counts_bytes():
    x = torch.zeros(4)
    with af.trace() as tr:
        x.view(torch.int8)[5:9].fill_(1)      # bytes 5..8: elements 1 and 2 of x
        s = x[2:].sum()
    del s
    (f,) = tr.findings(all=True)
    assert (f.kind, f.count) == ("RAW", 1)   # element 2 of x (byte 8), as the written int8
    assert f.slots[0].dtype == "int8" and f.elements() == [8]


def test_out_resizing_is_a_fresh_buffer():
    x = torch.arange(5.)
    with af.trace() as tr:
        c = torch.empty(0)
        torch.add(x, x, out=c)                # resized: new memory made by the op
        small = torch.zeros(2)
        torch.mul(x, 3, out=small)            # grown too
        s = c.t().sum() + small[1:].sum()
    assert tr.findings(all=True) == []
    add = next(k for k, op in enumerate(tr.ops) if op.prim == "aten.add.out")
    (w,) = [s for s in tr.info(add).slots if s.mode == "W"]
    assert tr.storages[w.storage].creator == add and w.shape == (5,) and w.fresh
    report = tr.replay(workers=2)
    assert report.identical, str(report)
    assert float(s) == float((2 * x).sum() + (3 * x)[1:].sum())


def test_zero_size_tensors():
    e = torch.zeros(0, 3)
    with af.trace() as tr:
        e.add_(1)
        e[:, 1:] += e[:, :-1]
        z = torch.empty(3, 0).t().sum(0)
    assert tr.findings() == []
    assert tr.replay().identical
    assert z.shape == (3,)


def test_conj_and_neg_views():
    torch.manual_seed(0)
    z = torch.randn(4, dtype=torch.complex64)
    with af.trace() as tr:
        z.add_(z.conj())                     # torch resolves the conj view into a clone
        z[1:].add_(z.conj()[:-1])            # ... so no in-op overlap, but hidden flows
        w = z.conj().imag * 2                # a neg view (float32, stride 2) read
    got = [(f.kind, [op.label for op in f.ops], f.count) for f in tr.findings(all=True)
           if f.severity == "order"]
    add, clone = "aten.add_.Tensor", "aten.clone.default"
    assert got == [   # in program order of the pairs
        ("RAW", [add, clone], len(E(z) & E(z[:3]))),          # z written, z.conj()[:-1] read
        ("RAW", [add, add], len(E(z) & E(z[1:]))),            # z written, z[1:] read
        ("WAW", [add, add], len(E(z) & E(z[1:]))),
        ("RAW", [add, clone], 1),       # imag of element 0: last written by the first add_
        ("WAR", [clone, add], len(E(z[:3]) & E(z[1:]))),
        ("RAW", [add, clone], 3),       # imag of elements 1..3: by the second add_
    ]
    refs = tr._build().refs
    assert any(r.neg or r.conj for rs in refs for r in rs)
    report = tr.replay(workers=2)
    assert report.identical, str(report)
    assert w.shape == (4,)


def test_stream_regions_and_races():
    """Stream regions are CUDA streams: nothing orders them with the default stream but
    events, wait_stream and host waits (a region's end is not a join)."""
    x = torch.zeros(8)
    with af.trace() as tr:
        with tr.stream("a"):
            x[:4].add_(1)
        with tr.stream("b"):
            s = x[2:6].sum()
        x.mul_(2)                            # default stream: waited for nothing
        with tr.stream("c"):
            x[6:].add_(1)
    del s
    add, total, mul = "aten.add_.Tensor", "aten.sum.default", "aten.mul_.Tensor"
    got = [(f.kind, f.kinds, [op.label for op in f.ops], f.streams, f.count)
           for f in tr.races()]
    assert got == [
        ("race", ("RAW",), [add, total], ["a", "b"], len(E(x[:4]) & E(x[2:6]))),
        ("race", ("RAW", "WAW", "WAR"), [add, mul], ["a", "default"], len(E(x[:4]))),
        ("race", ("WAR",), [total, mul], ["b", "default"], len(E(x[2:6]))),
        ("race", ("RAW", "WAW", "WAR"), [mul, add], ["default", "c"], len(E(x[6:]))),
    ]
    with pytest.raises(af.AliasflowError):
        with tr.stream("default"):
            pass


def test_findings_json_fields():
    a = torch.ones(3, 4)
    with af.trace() as tr:
        a -= a[:, :1]
    data = tr.to_json(elements=True)
    assert data["schema_version"] == 1 and "timings" not in data
    (f,) = data["findings"]
    assert f["severity"] == "wrong" and f["kind"] == "in-op-overlap" and f["count"] == 3
    assert f["elements"] == [0, 4, 8] and f["differs"] == 0 + 6 * 0 + f["differs"] > 0
    assert f["labels"] == ["aten.sub_.Tensor"] and f["indices"] == [1]
    assert f["names"] == ["a", "a[:, :1]"] and f["occurrences"] == 1 and f["hint"]
    assert f["example"]["at"].startswith("a[") and f["example"]["got"] != \
        f["example"]["expected"]
    assert f["lines"][0].endswith(f"test_trace_programs.py:"
                                  f"{test_findings_json_fields.__code__.co_firstlineno + 3}")
    assert set(f) >= {"severity", "kind", "ops", "lines", "names", "count", "occurrences",
                      "hint", "differs", "example"}


def test_unusual_tensors_do_not_break_the_program():
    i = torch.tensor([[0, 1], [1, 0]])
    sp = torch.sparse_coo_tensor(i, torch.tensor([1.0, 2.0]), (2, 2))
    d = torch.ones(2, 2)
    with af.trace() as tr:
        y = (sp + sp).to_dense() + d
        d.add_(1)
    assert torch.equal(y, torch.tensor([[1.0, 3.0], [5.0, 1.0]]))
    assert any(c.untracked for c in tr.calls)
    assert tr.findings() == []
    assert tr.to_json()["untracked"]
    with pytest.raises(af.AliasflowError, match="could not record"):
        tr.replay()


def test_random_ops_and_resize_replay():
    torch.manual_seed(3)
    z = torch.zeros(6)
    g = torch.Generator().manual_seed(5)
    with af.trace() as tr:
        q = torch.randn(3, 3)                      # aten.randn.default: no generator argument
        r = torch.rand(4, generator=g)             # an explicit generator
        d = torch.nn.functional.dropout(q, 0.5)    # bernoulli_ with the default generator
        z.resize_(12)                              # moved onto new memory
        z.fill_(1)
        m = torch.matmul(q, d)
    del r, m
    report = tr.replay(workers=2)
    assert report.identical, str(report)


_CALLS = [0]


@torch.library.custom_op("aliasflow_test::noisy", mutates_args=())
def _noisy(x: torch.Tensor) -> torch.Tensor:
    """An op whose output differs from one run to the next (as one leaving memory unwritten
    does): each call adds how many times it was called."""
    _CALLS[0] += 1
    return x + _CALLS[0]


def test_replay_reports_a_nondeterministic_op_as_such():
    x = torch.zeros(4)
    with af.trace() as tr:
        y = _noisy(x)
        z = y * 2                 # depends on it
        w = x + 1                 # does not
    report = tr.replay()
    assert report.identical, str(report)            # no mismatch: explained
    assert report.nondeterministic == [next(op.name for op in tr.ops
                                            if op.prim.startswith("aliasflow_test"))]
    assert report.explained and "nondeterministic" in str(report)
    del z, w


def test_an_op_whose_bits_depend_on_its_thread_count_is_nondeterministic():
    """MKL's FFT computes with as many threads as it gets, and its bits depend on how many:
    a replay whose ops get fewer threads than the traced run (here one, as a busy parallel
    replay may give them) differs there, and the differences are explained, not mismatches."""
    torch.manual_seed(0)
    h = torch.randn(2, 8, 16)
    threads = torch.get_num_threads()

    def spectral():
        return torch.fft.irfft(torch.fft.rfft(h), n=16)
    try:
        torch.set_num_threads(1)
        one = spectral()
        torch.set_num_threads(2)   # traced on two threads
        if torch.equal(one, spectral()):
            pytest.skip("this PyTorch's FFT gives the same bits on one thread as on two")
        with af.trace() as tr:
            out = spectral() + 1
        torch.set_num_threads(1)   # the replay's ops get one (as a busy parallel replay may)
        report = tr.replay()
    finally:
        torch.set_num_threads(threads)
    assert report.identical, str(report)
    assert report.nondeterministic and report.explained
    del out


def test_replay_hands_ops_storages_they_can_resize():
    """QAT's fused per-channel observer resizes its scale and zero point (one element at
    first) to one per channel in the op: replay's copies of the program's memory must be
    resizable as the program's were (a storage over a Python buffer is not)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch.ao.quantization's deprecation notices
        observer = torch.ao.quantization.default_fused_per_channel_wt_fake_quant()
    x = torch.randn(6, 8)
    with af.trace() as tr:
        for _ in range(2):
            y = observer(x)
    report = tr.replay(workers=2)
    assert report.identical and report.compared_storages >= 5, str(report)
    assert y.shape == x.shape
