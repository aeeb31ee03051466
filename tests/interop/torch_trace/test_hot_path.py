"""The compiled per-call path (``_native_src/hot.cpp``) records exactly what the pure-Python
reference (``Trace._call`` and what it calls) records: every call, access, storage generation,
template, result, finding and replay, on programs nobody here wrote (torch's own modules and
optimizers, transformers' models) and on the odd cases (first sight of storages, aliasing
storages, lists, kwargs, conj/neg bits, refused calls, unspecified outputs). Addresses differ
between two runs, so pointers are compared as offsets into their generation."""
import os
import warnings

import pytest

torch = pytest.importorskip("torch")

import aliasflow as af  # noqa: E402
from aliasflow.interop.torch_trace import tracer  # noqa: E402

PURE = os.environ.get("AF_PURE", "") not in ("", "0")
needs_compiled = pytest.mark.skipif(tracer._hot is None, reason="the compiled path is not in "
                                    "use (AF_PURE=1, or not built: test_built fails then)")


def test_built():
    """Fails when the compiled per-call path did not build (unless AF_PURE=1)."""
    if PURE:
        assert tracer._hot is None
        return
    from aliasflow.interop.torch_trace import _hot  # the import error, if any, is the message

    assert tracer._hot is _hot


def canonical(x):
    """A value of a template, a result or an extra fact, comparable across two runs."""
    if isinstance(x, tracer._Slot):
        return ("slot", x.k)
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(canonical(v) for v in x))
    if isinstance(x, dict):
        return ("dict", tuple(sorted((str(k), canonical(v)) for k, v in x.items())))
    if isinstance(x, (set, frozenset)):
        return ("set", tuple(sorted(canonical(v) for v in x)))
    if isinstance(x, torch.Tensor):
        return ("tensor", x.dtype, tuple(x.shape), x.tolist() if x.numel() < 64 else x.sum().item())
    if isinstance(x, torch.Generator):
        return ("generator",)
    if x is None or isinstance(x, (bool, int, float, str, complex, torch.dtype, torch.device)):
        return x
    return ("object", type(x).__name__, repr(x) if "0x" not in repr(x) else "")


def access(a):
    mode, pos, k, gen, ptr, shape, stride, dtype, born, bits = a
    return (mode, pos, k, None if gen is None else gen.id,
            None if gen is None else ptr - gen.address, tuple(shape), tuple(stride), dtype,
            born, bits)


def signature(t):
    """Everything a trace recorded, with addresses as offsets and autograd's counters
    relative to the trace's start (a node with no sequence, AccumulateGrad's, as it is)."""
    t0 = t.seq_at_start
    calls = []
    for c in t.calls:
        extra = dict(c.extra or {})
        extra.pop("locals", None)   # (compared below, by name)
        calls.append((c.index, str(c.func), c.where, c.stream,
                      None if c.seq is None else c.seq - t0,
                      c.node if c.node is None or c.node >= 1 << 62 else c.node - t0,
                      tuple(access(a) for a in c.accesses), canonical(c.template),
                      canonical(c.results), c.error, c.untracked, canonical(c.rng),
                      canonical(extra), sorted((c.extra or {}).get("locals", {}) or {})))
    storages = [(g.id, g.nbytes, g.creator, g.first_op, tuple(sorted(g.aliases)), g.group,
                 g.dirty, g.device, g.alive_at_end, g.final_crc, g.final_bytes,
                 # (what an op left unspecified differs between runs)
                 None if g.snapshot is None or g.creator is not None else bytes(g.snapshot))
                for g in t.storages]
    return calls, storages


def both(make_program, values=True):
    """The program ``make_program()`` returns (made before each trace) traced by the compiled
    path and by the reference: (trace, trace)."""
    got = []
    # each path traced once first: a first trace makes the overloads' specs and the
    # reference's one-off state, whose errors may leave cycles (the program's frame, its
    # tensors) alive to its end
    for compiled in (True, False, True, False):
        program = make_program()
        saved = tracer._hot
        if compiled is False:
            tracer._hot = None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with af.trace(values=values) as t:
                    program()
        finally:
            tracer._hot = saved
        got.append(t.torch)
    return got[2:]


def same_records(make_program, values=True):
    fast, reference = both(make_program, values)
    sf, sr = signature(fast), signature(reference)
    assert len(sf[0]) == len(sr[0]) and sf[0] == sr[0]
    assert sf[1] == sr[1]
    assert repr(fast.findings(all=True)) == repr(reference.findings(all=True))
    return fast, reference


def seeded(make, keep):
    """The program: a model made and stepped, kept alive past the trace in ``keep`` (what is
    alive at the end must not hang on when the collector runs)."""
    def program():
        torch.manual_seed(0)
        step = make()
        keep.append(step)
        step()
    return program


def mlp():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(inplace=True),
                                torch.nn.LayerNorm(16), torch.nn.Linear(16, 4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x, y = torch.randn(5, 8), torch.randn(5, 4)

    def step():
        for _ in range(2):
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
    return step


def transformer():
    layer = torch.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.1,
                                             batch_first=True)
    opt = torch.optim.SGD(layer.parameters(), lr=1e-2, momentum=0.9, foreach=True)
    x = torch.randn(2, 5, 16)

    def step():
        loss = layer(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def conv():
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                              torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                              torch.nn.Linear(36, 2))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    x = torch.randn(2, 3, 8, 8)

    def step():
        loss = net(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


@needs_compiled
@pytest.mark.parametrize("make", [mlp, transformer, conv], ids=lambda f: f.__name__)
@pytest.mark.parametrize("values", [True, False], ids=["values", "no-values"])
def test_training_steps_record_the_same(make, values):
    keep = []
    fast, _ = same_records(lambda: seeded(make, keep), values)
    assert len(fast.calls) > 50


def odd_cases():
    base = torch.arange(24.)           # made before the trace: first seen as an argument
    shared = torch.from_numpy(base.numpy()[4:16])   # another storage over the same bytes
    old = base[:3]                     # a view made before the trace, read after writes
    big = torch.zeros(tracer.FINAL_COPY_LIMIT // 4 + 1)   # its end as a CRC-32, not bytes
    nothing = torch.empty(0)           # a storage of no bytes

    def program():
        torch.manual_seed(0)
        x = base.view(4, 6)
        try:
            x[1:, :].add_(x[:-1, :])          # refused by torch (partial overlap)
        except RuntimeError:
            pass
        y = x * 2
        a, b = y.split(3, dim=1)             # a list result of views
        y.add_(1)
        torch.cat([a, b, x], dim=1)           # a list argument
        z = torch.empty(3, 3)                 # unspecified bytes
        z.copy_(torch.ones(3, 3))
        torch.addmm(torch.zeros(2, 2), torch.ones(2, 3), torch.ones(3, 2), beta=0.5)
        shared.mul_(3)                        # aliases base's bytes
        base[:4].neg_()
        c = torch.randn(3, dtype=torch.complex64)
        c.conj().add_(1)                      # bits of a conj view
        base[:6].view(2, 3).t().mul_(2)
        m = torch.ones(2, 2)
        torch.mm(m, m, out=m)                 # out= aliasing (the reference's path)
        m.addmm_(m, m)                        # in-place fed self: suspected, confirmed
        w = torch.ones(6)
        w[::2].mul_(w[1::2])                  # one storage, disjoint elements
        try:
            torch.ones(3).add_(torch.ones(4))   # refused by torch (sizes)
        except RuntimeError:
            pass
        torch.max(torch.arange(6.).view(2, 3), dim=1)   # a named tuple result
        torch.where(torch.tensor([True, False]), torch.ones(2), torch.zeros(2))
        old.sum()                             # a stale view (born before the trace)
        y.sum()
        seq = torch.tensor([5., 1., 3.])
        torch.searchsorted(seq, torch.tensor([2., 4.]), sorter=torch.tensor([1, 2, 0]))  # kwarg
        x[torch.tensor([0, 2])].sum()         # List[Optional[Tensor]] indices
        x[:, torch.tensor([1])].sum()         # ... with a None in the list
        p, q, r = torch.ones(3), torch.ones(3), torch.ones(3)
        torch._foreach_add_([p, q], [p, r])   # a read equal to its own write: exempt
        torch._foreach_mul_([p, q], [q, p])   # crossed: suspected
        torch._foreach_add([p, q], 1.0)       # a list of fresh results
        torch.stack([p, q]).unbind(0)         # a list of views
        c = torch.ones(2, 2)
        torch.addmm(c, torch.ones(2, 3), torch.ones(3, 2), out=c)   # self paired with out
        torch.addmm(c, c, c)                  # (the same overload family, no write)
        torch.index_add(p, 0, torch.tensor([0, 0, 1]), q, out=p)
        big.add_(1)
        nothing.add_(1)
    return program


@needs_compiled
def test_odd_cases_record_the_same():
    fast, _ = same_records(odd_cases)
    assert any(g.aliases for g in fast.storages)          # from_numpy over base's bytes
    assert any(c.extra and "outcomes" in c.extra for c in fast.calls)   # a confirmed overlap
    assert any(c.error for c in fast.calls)               # refused calls
    assert any(a[8] == -1 for c in fast.calls for a in c.accesses)   # born before the trace
    ends = [(g.nbytes, g.alive_at_end, g.final_bytes) for g in fast.storages]
    assert (tracer.FINAL_COPY_LIMIT + 4, True, None) in ends   # (its CRC-32 compared above)
    assert (0, True, b"") in ends and any(not alive for _, alive, _ in ends)


@needs_compiled
def test_the_compiled_path_is_the_one_used():
    seen = []
    original = tracer._CompiledMode.__torch_dispatch__

    def spy(self, func, types, args=(), kwargs=None):
        seen.append(func)
        return original(self, func, types, args, kwargs)
    tracer._CompiledMode.__torch_dispatch__ = spy
    try:
        with af.trace():
            torch.ones(3).add_(1)
    finally:
        del tracer._CompiledMode.__torch_dispatch__   # HotPath's again
    assert len(seen) == 2 and tracer._CompiledMode.__torch_dispatch__ is original


@needs_compiled
def test_bad_arguments_are_refused_at_the_boundary():
    HotPath = tracer._hot.HotPath
    with pytest.raises(TypeError, match="HotPath takes 32 arguments, got 0"):
        HotPath()
    with pytest.raises(TypeError, match="calls must be a list, got NoneType"):
        HotPath(*[None] * 32)
    with pytest.raises(TypeError, match="positional arguments only"):
        HotPath(values=True)
    mode = tracer._CompiledMode(tracer.Trace())
    with pytest.raises(TypeError, match="takes 2 to 4 arguments, got 5"):
        mode.__torch_dispatch__(1, 2, 3, 4, 5)
    with pytest.raises(TypeError, match="takes 3 arguments, got 1"):
        mode.finish([])
    with pytest.raises(TypeError, match="gens must be a list, got tuple"):
        mode.finish((), tracer._revive, 1)
    with pytest.raises(ValueError, match="limit must be an int >= 0, got -1"):
        mode.finish([], tracer._revive, -1)
    with pytest.raises(ValueError, match="limit must be an int >= 0, got 'x'"):
        mode.finish([], tracer._revive, "x")


@needs_compiled
def test_the_mode_dispatches_without_a_python_frame():
    """The mode's __torch_dispatch__ is HotPath's compiled one (no Python frame per call, no
    TorchDynamo wrapping, which TorchDispatchMode gives one defined in the subclass)."""
    assert "__torch_dispatch__" not in tracer._CompiledMode.__dict__
    mode = tracer._CompiledMode(tracer.Trace())
    assert type(mode.__torch_dispatch__).__name__ == "builtin_function_or_method"
    assert mode.__torch_dispatch__.__self__ is mode   # what PyTorch checks of a mode
    with pytest.raises(TypeError, match="takes 2 to 4 arguments, got 1"):
        mode.__torch_dispatch__(torch.ops.aten.add.Tensor)


def test_a_warning_names_the_users_line():
    """An untraced call's warning points at the line of the user's program that made it,
    whichever frames (the mode's, the reference's) lie between."""
    sp = torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]]), torch.tensor([1.0, 2.0]),
                                 (2, 2))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with af.trace():
            line = __import__("inspect").currentframe().f_lineno + 1
            sp.to_dense()
    ours = [w for w in seen if issubclass(w.category, tracer.AliasflowTraceWarning)]
    assert ours and ours[0].filename == __file__ and ours[0].lineno == line


@needs_compiled
def test_frame_evaluation_is_off_while_the_tracer_runs():
    """With a TorchDynamo-style frame callback set (what torch.compile sets while compiled code
    runs), the tracer's own Python (here Trace._call, for resize_, which has no fast form)
    never reaches the callback: the compiled __torch_dispatch__ turns frame evaluation off
    around each call, as TorchDispatchMode's wrapping does, and puts the callback back."""
    set_eval_frame = tracer._SET_EVAL_FRAME
    types = pytest.importorskip("torch._dynamo.types")
    if set_eval_frame is None or not hasattr(types, "ConvertFrameReturn"):
        pytest.skip("this torch has no TorchDynamo frame callback to set")
    seen = []

    def callback(frame, *rest):
        seen.append(frame.f_code.co_filename)
        return types.ConvertFrameReturn()   # run the frame as it is
    x = torch.ones(4)
    with af.trace() as t:
        prior = set_eval_frame(callback)
        try:
            x.resize_(8)
            x.add(1)
        finally:
            back = set_eval_frame(prior)
    assert back is callback and len(t) == 2
    assert not [f for f in seen if "aliasflow" in f], seen
