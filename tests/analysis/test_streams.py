"""Stream clocks and stream races against brute force: random schedules of ops, events,
waits and host synchronisations (and allocations, frees and record_stream) checked against a
happens-before built as a DAG and closed transitively (``stream_oracle.SyncGraph``), and
races against every pair of accesses compared byte by byte."""
import pytest
from hypothesis import given, settings, strategies as st

import aliasflow as af
from aliasflow.analysis.stream_races import find_stream_races
from aliasflow.analysis.streams import HOST, StreamClocks

from stream_oracle import SyncGraph, brute_races, byte_set

STREAMS = ["default", "s1", "s2", "s3", HOST]
EVENTS = ["e0", "e1", "e2"]
SYNC = ["record", "wait", "wait_stream", "sync_stream", "sync_event", "sync", "create_event",
        "delete_event"]


def apply(action, *machines):
    kind, args = action[0], action[1:]
    for m in machines:
        {"record": lambda e, s: m.record(e, s), "wait": lambda s, e: m.wait(s, e),
         "wait_stream": lambda s, o: m.wait_stream(s, o),
         "sync_stream": lambda s: m.synchronize_stream(s),
         "sync_event": lambda e: m.synchronize_event(e), "sync": lambda: m.synchronize(),
         "create_event": lambda e: m.create_event(e),
         "delete_event": lambda e: m.delete_event(e)}[kind](*args)


@st.composite
def sync_action(draw):
    kind = draw(st.sampled_from(SYNC))
    s, o = draw(st.sampled_from(STREAMS)), draw(st.sampled_from(STREAMS))
    e = draw(st.sampled_from(EVENTS))
    return {"record": (kind, e, s), "wait": (kind, s, e), "wait_stream": (kind, s, o),
            "sync_stream": (kind, s), "sync_event": (kind, e), "sync": (kind,),
            "create_event": (kind, e), "delete_event": (kind, e)}[kind]


@st.composite
def schedules(draw, max_steps=40):
    """A list of actions: ("op", stream) or a synchronisation."""
    steps = []
    for _ in range(draw(st.integers(1, max_steps))):
        if draw(st.integers(0, 2)):
            steps.append(("op", draw(st.sampled_from(STREAMS))))
        else:
            steps.append(draw(sync_action()))
    return steps


def run(schedule):
    clocks, graph = StreamClocks(), SyncGraph()
    for action in schedule:
        if action[0] == "op":
            clocks.issue(action[1])
            graph.issue(action[1])
        else:
            apply(action, clocks, graph)
    return clocks, graph


@settings(max_examples=300, deadline=None)
@given(schedules())
def test_happens_before_equals_transitive_closure(schedule):
    clocks, graph = run(schedule)
    n = len(clocks)
    for j in range(n):
        for i in range(n):
            assert clocks.happens_before(i, j) == (i < j and graph.before(i, j)), (i, j)
    assert clocks.horizon() == [max([j for j in range(i + 1, n) if not graph.before(i, j)],
                                    default=i) for i in range(n)]


# ---- programs: ops with accesses through views of two tensors ----------------------------

A = af.Tensor("A", (16,), "int32")    # 64 bytes
B = af.Tensor("B", (24,), "uint8")
DTYPES = {"int32": 4, "int16": 2, "uint8": 1}


@st.composite
def views(draw, counter):
    t = draw(st.sampled_from([A, A, B]))
    unit = t.dtype.itemsize
    dtype = draw(st.sampled_from(list(DTYPES))) if t is A else "uint8"
    size = DTYPES[dtype]
    nbytes = t.size * unit
    ndim = draw(st.integers(1, 2))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    stride = tuple(draw(st.integers(-3, 5)) for _ in range(ndim))
    low = sum(s * (n - 1) for s, n in zip(stride, shape) if s < 0)
    high = sum(s * (n - 1) for s, n in zip(stride, shape) if s > 0)
    room = t.size - (high - low) - (1 if size <= unit else 2)
    if room < 0:
        shape, stride, low, high, room = (1,) * ndim, (1,) * ndim, 0, 0, t.size - 2
    offset = draw(st.integers(0, room)) - low
    name = f"v{next(counter)}"
    v = af.TensorView(name, t, offset, shape, stride, dtype)
    base = 0 if t is A else 1000
    assert (offset + high) * unit + size <= nbytes
    return v, {base + b for b in byte_set(offset * unit, shape,
                                          tuple(s * unit for s in stride), size)}


@st.composite
def programs(draw, max_steps=14):
    import itertools
    counter = itertools.count()
    schedule, ops, accesses = [], [], []
    for _ in range(draw(st.integers(1, max_steps))):
        if draw(st.integers(0, 3)):
            acc, brute = [], []
            for slot in range(draw(st.integers(1, 3))):
                v, bytes_ = draw(views(counter))
                mode = draw(st.sampled_from(["R", "W", "RW"]))
                acc.append(af.Access(slot, mode, v))
                brute += [(m, v.name, bytes_) for m in mode]
            ops.append(af.OpRecord(f"op{len(ops)}", "kernel", tuple(acc)))
            accesses.append(brute)
            schedule.append(("op", draw(st.sampled_from(STREAMS))))
        else:
            schedule.append(draw(sync_action()))
    return schedule, ops, accesses


def found(ops, clocks, lifetime=None):
    return {(r.first, r.second, r.first_view.name, r.second_view.name, r.kinds)
            for r in find_stream_races(ops, clocks, lifetime=lifetime)}


@settings(max_examples=300, deadline=None)
@given(programs())
def test_races_equal_brute_force(program):
    schedule, ops, accesses = program
    clocks, graph = run(schedule)
    assert found(ops, clocks) == brute_races(accesses, graph)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_shadowing_loses_no_pair(data):
    """Long runs of repeated accesses to a few views (what shadowing prunes), few syncs."""
    views_ = [A[0:8], A[4:12], A[::2], A[8:], B[:], B[3:9]]
    names = {id(v): f"w{k}" for k, v in enumerate(views_)}
    schedule, ops, accesses = [], [], []
    for n in range(data.draw(st.integers(1, 40))):
        if data.draw(st.integers(0, 5)):
            k = data.draw(st.integers(0, len(views_) - 1))
            v = views_[k]
            mode = data.draw(st.sampled_from(["R", "W", "RW"]))
            base = 0 if v.tensor is A else 1000
            bytes_ = {base + b for b in byte_set(v.byte_offset, v.shape, v.byte_strides,
                                                 v.dtype.itemsize)}
            ops.append(af.OpRecord(f"op{len(ops)}", "kernel", (af.Access(0, mode, v),)))
            accesses.append([(m, names[id(v)], bytes_) for m in mode])
            schedule.append(("op", data.draw(st.sampled_from(STREAMS[:3]))))
        else:
            schedule.append(data.draw(sync_action()))
    clocks, graph = run(schedule)
    got = {(i, j, names[id(a)], names[id(b)], k) for i, j, a, b, k in
           find_stream_races(ops, clocks)}
    assert got == brute_races(accesses, graph)


# ---- lifetimes: allocations, frees, record_stream --------------------------------------

SLOTS = [(0, 16), (8, 24), (16, 32), (32, 64)]   # byte ranges; some overlap (aliasing)
MEM = af.Tensor("mem", (64,), "uint8")


@settings(max_examples=250, deadline=None)
@given(st.data())
def test_races_across_memory_reuse_equal_brute_force(data):
    clocks, graph = StreamClocks(), SyncGraph()
    live: dict = {}        # slot -> lifetime id
    gen = 0
    ops, accesses, lifetimes, view_life = [], [], [], {}
    for _ in range(data.draw(st.integers(1, 30))):
        what = data.draw(st.sampled_from(["op", "op", "op", "alloc", "free", "record_stream",
                                          "sync"]))
        stream = data.draw(st.sampled_from(STREAMS[:4]))
        if what == "alloc":
            slot = data.draw(st.integers(0, len(SLOTS) - 1))
            if slot in live:
                continue
            gen += 1
            live[slot] = (slot, gen)
            for m in (clocks, graph):
                m.alloc(live[slot], stream)
        elif what == "free" and live:
            block = live.pop(data.draw(st.sampled_from(sorted(live))))
            for m in (clocks, graph):
                m.free(block)
        elif what == "record_stream" and live:
            slot = data.draw(st.sampled_from(sorted(live)))
            for m in (clocks, graph):
                m.record_stream(live[slot], stream)
        elif what == "sync":
            apply(data.draw(sync_action()), clocks, graph)
        elif what == "op" and live:
            slot = data.draw(st.sampled_from(sorted(live)))
            lo, hi = SLOTS[slot]
            a = data.draw(st.integers(lo, hi - 1))
            b = data.draw(st.integers(a + 1, hi))
            v = af.TensorView(f"v{len(ops)}", MEM, a, (b - a,))
            mode = data.draw(st.sampled_from(["R", "W", "RW"]))
            view_life[id(v)] = live[slot]
            ops.append(af.OpRecord(f"op{len(ops)}", "kernel", (af.Access(0, mode, v),)))
            accesses.append([(m, v.name, set(range(a, b))) for m in mode])
            lifetimes.append([live[slot]] * len(mode))
            clocks.issue(stream)
            graph.issue(stream)
    got = found(ops, clocks, lifetime=lambda v: view_life.get(id(v)))
    assert got == brute_races(accesses, graph, lifetimes)


# ---- contract details -------------------------------------------------------------------

def test_host_ops_and_host_waits():
    c = StreamClocks()
    w = c.issue("side")              # 0: side writes
    h = c.issue(HOST)                # 1: the host does something: not after the side op
    assert not c.happens_before(w, h)
    c.synchronize_stream("side")
    h2 = c.issue(HOST)               # 2: after the host waited
    later = c.issue("other")         # 3: any stream, issued after the host op and the wait
    assert c.happens_before(w, h2) and c.happens_before(h, later) and c.happens_before(w, later)
    assert c.ordered(later, w) and not c.ordered(w, h)


def test_event_recorded_again_and_recreated():
    c = StreamClocks()
    a = c.issue("s1")
    c.record("e", "s1")
    b = c.issue("s1")
    c.record("e", "s1")              # a later record replaces the first
    c.wait("s2", "e")
    assert c.happens_before(b, c.issue("s2"))
    c.create_event("e")              # re-created: holds nothing
    c.wait("s3", "e")
    assert not c.happens_before(a, c.issue("s3"))


def test_bad_input_is_refused_clearly():
    c = StreamClocks()
    with pytest.raises(af.AliasflowError, match="hashable"):
        c.issue(["not", "hashable"])
    with pytest.raises(af.AliasflowError, match="no allocated block 'x'"):
        c.free("x")
    with pytest.raises(af.AliasflowError, match="no allocated block 'x'"):
        c.record_stream("x", "s")
    op = af.OpRecord("w", "kernel", (af.Access(0, "W", A[0:4]),))
    with pytest.raises(af.AliasflowError, match="0 issued ops, the program 1"):
        find_stream_races([op], c.__class__())


def test_shadowing_stays_inside_one_lifetime():
    """A write to a newer lifetime of an address covers an older lifetime's write on the same
    stream, but the allocator may order a third lifetime after the newer one and not after
    the older: the older pair must still be found."""
    clocks, graph = StreamClocks(), SyncGraph()
    ops, accesses, lifetimes, life = [], [], [], {}

    def op(stream, block):
        v = af.TensorView(f"v{len(ops)}", MEM, 0, (16,))
        life[id(v)] = block
        ops.append(af.OpRecord(f"op{len(ops)}", "kernel", (af.Access(0, "W", v),)))
        accesses.append([("W", v.name, set(range(16)))])
        lifetimes.append([block])
        for m in (clocks, graph):
            m.issue(stream)

    def both(method, *args):
        for m in (clocks, graph):
            getattr(m, method)(*args)
    both("alloc", "a", "s1")
    op("s1", "a")
    both("free", "a")
    both("alloc", "b", "s2")
    op("s1", "b")            # covers op0's write, same stream: op0 happens before it
    both("free", "b")
    both("alloc", "c", "s1")
    op("s3", "c")            # b -> c: allocated on different streams, ordered; a -> c: not
    want = brute_races(accesses, graph, lifetimes)
    assert want == {(0, 2, "v0", "v2", ("WAW",))}
    assert found(ops, clocks, lifetime=lambda v: life.get(id(v))) == want


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(programs(max_steps=40))
def test_races_equal_brute_force_long_programs(program):
    """The same check as test_races_equal_brute_force on longer programs, many more of them."""
    schedule, ops, accesses = program
    clocks, graph = run(schedule)
    assert found(ops, clocks) == brute_races(accesses, graph)
    n = len(clocks)
    assert clocks.horizon() == [max([j for j in range(i + 1, n) if not graph.before(i, j)],
                                    default=i) for i in range(n)]
