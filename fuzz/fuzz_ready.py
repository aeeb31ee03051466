"""Fuzz the parallel runner's compiled ready queue (``aliasflow.execution._ready``) at its
Python boundary, differentially against the pure-Python reference ``PyReadyQueue``.

Each round is one of:

* garbage: arbitrary objects (ints of any size, bools, int subclasses, floats, NaN, lists,
  tuples with bad items, int32/float/strided/big-endian/2-d arrays, bytes of any length and
  value, None, strings) passed to the constructor and to every method with any argument
  count: the only acceptable outcomes are the documented answers or a TypeError/ValueError,
  and the compiled and pure queues must agree on which (refuse or accept);
* differential: a random DAG (up to 60 ops, random light flags), driven from one thread
  through a random interleaving of next/done/fail/stop/wait/status: every answer of the
  compiled queue equals the reference's;
* threads: the same graph run by 2-4 real threads on the compiled queue, with random
  failures and stops: every op is handed out at most once, only after all its predecessors
  finished, never at or past the first failure handed back, never two light ops at a time;
  the run ends (bounded) with the counts adding up.

(The module takes integers only: run()'s checks group records in Python, see
``tests/execution/test_run_checks.py``.)

    python fuzz/fuzz_ready.py --random 120        # 120 s of random rounds

Under AddressSanitizer and UBSan, exactly as for fuzz_native.py (see fuzz/README.md).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))

import numpy as np  # noqa: E402

import aliasflow as af  # noqa: E402
from aliasflow.execution import _ready, ready  # noqa: E402

Native, Pure = _ready.ReadyQueue, ready.PyReadyQueue


class MyInt(int):
    pass


def garbage(rnd: random.Random):
    pick = rnd.randrange(22)
    if pick == 0:
        return rnd.choice([0, 1, -1, 2**31, 2**63 - 1, 2**63, -2**63, -2**63 - 1, 2**200])
    if pick == 1:
        return rnd.choice([True, False, MyInt(0), MyInt(1)])
    if pick == 2:
        return rnd.choice([0.0, -0.0, 1.5, float("nan"), float("inf"), -1e300, 5e-324])
    if pick == 3:
        return None
    if pick == 4:
        return rnd.choice(["", "0", "abc", b"", b"\x00", b"\x01\x00", b"\x02", bytearray(2)])
    if pick == 5:
        return [rnd.randrange(-3, 5) for _ in range(rnd.randrange(4))]
    if pick == 6:
        return tuple(garbage(rnd) for _ in range(rnd.randrange(4)))
    if pick == 7:
        dtype = rnd.choice([np.int64, np.int32, np.uint64, np.float64, ">i8", np.int8])
        return np.arange(rnd.randrange(6), dtype=dtype)
    if pick == 8:
        return np.zeros((2, 2), np.int64)
    if pick == 9:
        return np.arange(8, dtype=np.int64)[::rnd.choice([2, -1])]
    if pick == 10:
        return memoryview(b"\x00" * 16)
    if pick == 11:
        return memoryview(np.arange(2, dtype=np.int64)).toreadonly()
    if pick == 12:
        return bytes(rnd.randrange(3) for _ in range(rnd.randrange(6)))
    n = rnd.randrange(6)
    return tuple(rnd.randrange(-2, 8) for _ in range(n + 1))


def outcome(fn, *args):
    """('ok', value) or ('refused', exception type); anything else propagates."""
    try:
        return "ok", fn(*args)
    except (TypeError, ValueError) as exc:
        return "refused", type(exc)


def round_garbage(rnd: random.Random) -> None:
    args = tuple(garbage(rnd) for _ in range(rnd.randrange(5)))
    got = [outcome(cls, *args) for cls in (Native, Pure)]
    assert got[0][0] == got[1][0], (args, got)
    if got[0][0] != "ok":
        return
    queues = [got[0][1], got[1][1]]
    for _ in range(rnd.randrange(12)):
        method = rnd.choice(["next", "done", "fail", "stop", "wait", "finished_ops", "status"])
        margs = tuple(garbage(rnd) if rnd.random() < 0.7 else rnd.choice([0, 1, 0.0, -1])
                      for _ in range(rnd.randrange(3)))
        if method in ("next", "wait"):  # never a long wait
            margs = tuple(0.0 if type(a) in (int, float) and a > 0.001 and a == a else a
                          for a in margs)
        res = [outcome(getattr(q, method), *margs) for q in queues]
        assert res[0][0] == res[1][0], (method, margs, res)
        if res[0][0] == "ok":
            assert res[0][1] == res[1][1], (method, margs, res)


def random_dag(rnd: random.Random, max_n: int = 60):
    n = rnd.randrange(max_n + 1)
    density = rnd.random() * 0.3
    succ = [sorted({t for t in range(k + 1, n) if rnd.random() < density})
            for k in range(n)]
    offsets = [0]
    for s in succ:
        offsets.append(offsets[-1] + len(s))
    targets = [t for s in succ for t in s]
    light = bytes(rnd.randrange(2) if rnd.random() < 0.8 else 0 for _ in range(n))
    as_array = rnd.random() < 0.5
    pack = (lambda xs: np.array(xs, np.int64)) if as_array else tuple
    return n, pack(offsets), pack(targets), light, succ


def round_differential(rnd: random.Random) -> None:
    n, offsets, targets, light, _ = random_dag(rnd)
    queues = [Native(offsets, targets, light), Pure(offsets, targets, light)]
    running: list[int] = []
    for _ in range(3 * n + 5):
        r = rnd.random()
        if running and r < 0.45:
            k = running.pop(rnd.randrange(len(running)))
            ok = rnd.random() < 0.93
            for q in queues:
                (q.done if ok else q.fail)(k)
        elif r < 0.47:
            for q in queues:
                q.stop()
        else:
            got = [q.next(0.0) for q in queues]
            assert got[0] == got[1], got
            if got[0] >= 0:
                running.append(got[0])
        seen = rnd.choice([-1, 0, n])
        assert queues[0].wait(seen, 0.0) == queues[1].wait(seen, 0.0)
        assert queues[0].status() == queues[1].status()
    assert queues[0].finished_ops() == queues[1].finished_ops()


def round_threads(rnd: random.Random) -> None:
    n, offsets, targets, light, succ = random_dag(rnd, 200)
    preds = [set() for _ in range(n)]
    for k, s in enumerate(succ):
        for t in s:
            preds[t].add(k)
    q = Native(offsets, targets, light)
    lock = threading.Lock()
    state = ["waiting"] * n
    first_fail = [n]
    light_running = [0]
    problems: list[str] = []
    fail_p = rnd.choice([0.0, 0.0, 0.02, 0.2])
    stop_at = rnd.choice([None, None, n // 2])
    seed = rnd.randrange(2**32)

    def worker(w):
        wr = random.Random(seed + w)
        while True:
            failed_before = first_fail[0]  # set only once q.fail has returned
            k = q.next(0.01)
            if k == -2:
                continue
            if k == -1:
                return
            with lock:
                if state[k] != "waiting":
                    problems.append(f"op {k} handed out twice")
                if any(state[p] != "done" for p in preds[k]):
                    problems.append(f"op {k} handed out before its predecessors finished")
                if k >= failed_before:
                    problems.append(f"op {k} handed out after op {failed_before} failed")
                if light[k]:
                    light_running[0] += 1
                    if light_running[0] > 1:
                        problems.append("two light ops at a time")
                state[k] = "running"
            if wr.random() < 0.3:
                time.sleep(0)  # let another thread in
            fail = wr.random() < fail_p
            with lock:
                state[k] = "failed" if fail else "done"
                if light[k]:
                    light_running[0] -= 1
                finished = sum(s == "done" for s in state)
            # the bookkeeping above happens before the queue learns, as in the runner
            (q.fail if fail else q.done)(k)
            if fail:
                with lock:
                    first_fail[0] = min(first_fail[0], k)
            if stop_at is not None and finished >= stop_at:
                q.stop()

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(rnd.randrange(2, 5))]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while True:
        finished, over = q.wait(-1, 0.05)
        if over or time.monotonic() > deadline:
            break
    for t in threads:
        t.join(60)
        assert not t.is_alive(), "a worker did not finish"
    assert not problems, problems[:3]
    status = q.status()
    assert status["running"] == 0 and status["over"], status
    assert status["finished"] == sum(s == "done" for s in state)
    assert q.finished_ops() == [k for k in range(n) if state[k] == "done"]
    if first_fail[0] == n and stop_at is None:
        assert status["finished"] == n, status


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--random", type=float, default=60, help="seconds of random rounds")
    p.add_argument("--seed", type=int, default=None)
    args = p.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    rnd = random.Random(seed)
    end = time.monotonic() + args.random
    counts = {"garbage": 0, "differential": 0, "threads": 0}
    while time.monotonic() < end:
        kind = rnd.choices(list(counts), weights=[6, 3, 1])[0]
        {"garbage": round_garbage, "differential": round_differential,
         "threads": round_threads}[kind](rnd)
        counts[kind] += 1
    print(f"fuzz_ready: seed {seed}, rounds {counts}: no crash, no disagreement")
    return 0


if __name__ == "__main__":
    sys.exit(main())
