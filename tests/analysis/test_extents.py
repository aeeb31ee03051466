"""The extent index against a plain list of intervals."""
from hypothesis import given, settings, strategies as st

from aliasflow.analysis.extents import ExtentIndex

interval = st.tuples(st.integers(-5, 60), st.integers(0, 20)).map(lambda t: (t[0], t[0] + t[1]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "remove", "query"]), interval), max_size=60))
def test_index_matches_brute_force(steps):
    index, live, next_id = ExtentIndex(), {}, 0
    for action, (low, high) in steps:
        if action == "add":
            index.add(next_id, low, high)
            live[next_id] = (low, high)
            next_id += 1
        elif action == "remove" and live:
            rid = sorted(live)[low % len(live)]
            index.remove(rid, *live.pop(rid))
        else:
            expect = {r for r, (lo, hi) in live.items() if lo <= high and low <= hi}
            assert set(index.query(low, high)) == expect
    for r, (lo, hi) in live.items():
        assert r in index.query(lo, hi)


@settings(max_examples=300, deadline=None)
@given(st.lists(interval, min_size=1, max_size=20), st.lists(st.tuples(st.integers(0, 19),
       st.integers(0, 30), st.integers(0, 30)), max_size=20), st.lists(interval, max_size=10))
def test_cut_matches_brute_force(adds, cuts, queries):
    index, live = ExtentIndex(), {}
    for rid, (low, high) in enumerate(adds):
        index.add(rid, low, high)
        live[rid] = (low, high)
    for rid, a, b in cuts:
        if rid not in live:
            continue
        low, high = live[rid]
        keep_low = low + min(a, high - low)
        keep_high = keep_low + min(b, high - keep_low)
        index.cut(rid, low, high, keep_low, keep_high)
        live[rid] = (keep_low, keep_high)
    for low, high in queries + list(live.values()):
        expect = {r for r, (lo, hi) in live.items() if lo <= high and low <= hi}
        assert set(index.query(low, high)) == expect
