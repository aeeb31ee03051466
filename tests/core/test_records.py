"""Op records and the registry: records analyse like the ops they describe."""
import pytest
from hypothesis import given, settings

import aliasflow as af
from aliasflow.io._format import KIND_PARAMS

from strategies import brute_conflicts, programs


def edges(graph):
    return sorted((d.src, d.dst, d.kind, d.src_view, d.dst_view) for d in graph.dependencies)


@settings(max_examples=100, deadline=None)
@given(programs(max_ops=8))
def test_records_analyse_like_their_ops(ops):
    records = [op.record() for op in ops]
    assert edges(af.analyze(records)) == edges(af.analyze(ops))
    assert edges(af.analyze(records, complete=True)) == edges(af.analyze(ops, complete=True))
    assert af.analyze_dependencies(records) == af.analyze_dependencies(ops)


def test_read_write_operands_conflict_both_ways():
    A = af.Tensor("A", (6,))
    inc = af.OpRecord("inc", "add_", (af.Access(0, "RW", A[1:4]),))
    rd = af.OpRecord("rd", "sum", (af.Access(0, "R", A[3:]),), n_values=1)
    wr = af.FillOperation("wr", 0).set_outputs(A[2:3])
    brute = {(s, d, k) for s, d, k, _, _ in brute_conflicts([inc, rd, wr])}
    got = {(d.src, d.dst, d.kind) for d in af.analyze([inc, rd, wr], complete=True).dependencies}
    assert got == brute == {("inc", "rd", "RAW"), ("inc", "wr", "WAR"), ("inc", "wr", "WAW")}
    assert rd.value(0) == af.Value("rd", 0)
    with pytest.raises(af.AliasflowError, match="returns 1 value"):
        rd.value(1)


def test_records_are_checked():
    A = af.Tensor("A", (2,))
    with pytest.raises(af.AliasflowError, match="mode one of"):
        af.OpRecord("x", "p", (af.Access(0, "X", A.view()),))
    with pytest.raises(af.AliasflowError, match="prim"):
        af.OpRecord("x", "")


def test_the_file_format_reads_the_registry():
    assert KIND_PARAMS == {name: p.params for name, p in af.PRIMITIVES.items()}
    op = af.PRIMITIVES["reduce"].make("r", axis=0)
    assert isinstance(op, af.ReduceOperation) and op.record().prim == "reduce"
    assert op.record().params == {"fn": "sum", "axis": 0}


@pytest.mark.parametrize("promote", [False, True])
def test_paused_gc_restores_the_collector_and_cycles_are_still_collected(promote):
    """The collector is off inside, back as it was after; a cycle made inside (and, with
    ``promote``, moved to the oldest generation) is still freed by a full collection."""
    import gc
    import weakref
    from aliasflow.core.gcpause import paused_gc

    class Node:
        pass
    assert gc.isenabled()
    with paused_gc(promote=promote):
        assert not gc.isenabled()
        a, b = Node(), Node()
        a.other, b.other = b, a
        alive = weakref.ref(a)
        del a, b
    assert gc.isenabled() and alive() is not None   # a cycle: only the collector frees it
    gc.collect()
    assert alive() is None
    gc.disable()
    try:
        with paused_gc(promote=promote):
            pass
        assert not gc.isenabled()                  # left off when it was off
    finally:
        gc.enable()


def test_paused_gc_leaves_a_programs_own_frozen_objects_frozen():
    """A program that froze objects itself (before forking, say) finds them still frozen
    after a promoting pause: gc.unfreeze() would have thawed them."""
    import gc
    from aliasflow.core.gcpause import paused_gc

    keep = [[] for _ in range(100)]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen >= 100
        with paused_gc(promote=True):
            more = [[] for _ in range(100)]
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
    del keep, more
