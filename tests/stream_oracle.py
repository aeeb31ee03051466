"""Brute-force oracles for stream semantics, independent of aliasflow's vector clocks.

:class:`SyncGraph` builds the happens-before relation the slow way: every action (op, record,
wait, host wait) is a node of a DAG, with an edge for every ordering CUDA promises, and
``before(a, b)`` is reachability (transitive closure by bitsets). :func:`brute_races` then
compares every pair of accesses byte by byte (NumPy sets of byte addresses)."""
from __future__ import annotations

import numpy as np

HOST = "host"


class SyncGraph:
    """Nodes in creation order; edges only from earlier nodes to later ones."""

    def __init__(self):
        self.preds: list[list[int]] = []
        self.last: dict = {}        # stream -> its latest node
        self.host = None            # the host's latest node
        self.events: dict = {}      # event -> its latest record node (None: never recorded)
        self.ops: list[int] = []    # op position -> node
        self.op_streams: list = []
        self.blocks: dict = {}      # block -> dict(stream, start, end, recorded, released)
        self.tick = 0
        self._reach = None

    def _node(self, *preds) -> int:
        self.preds.append([p for p in preds if p is not None])
        self._reach = None
        return len(self.preds) - 1

    def _on(self, stream, *extra) -> int:
        # a command issued on a stream follows the stream's previous command and whatever the
        # host did before issuing it
        n = self._node(self.last.get(stream), self.host, *extra)
        self.last[stream] = n
        if stream == HOST:   # the host's own commands (its ops, its waits) are the host
            self.host = n
        return n

    def issue(self, stream) -> int:
        n = self._on(stream)
        self.ops.append(n)
        self.op_streams.append(stream)
        return len(self.ops) - 1

    def record(self, event, stream):
        self.events[event] = self._on(stream)

    def wait(self, stream, event):
        self._on(stream, self.events.get(event))

    def wait_stream(self, stream, other):
        self._on(stream, self._on(other))

    def create_event(self, event):
        self.events[event] = None

    def delete_event(self, event):
        self.events.pop(event, None)

    def synchronize_stream(self, stream):
        self.host = self._node(self.host, self.last.get(stream))

    def synchronize_event(self, event):
        self.host = self._node(self.host, self.events.get(event))

    def synchronize(self):
        self.host = self._node(self.host, *self.last.values())

    def alloc(self, block, stream):
        self.tick += 1
        self.blocks[block] = dict(stream=stream, start=self.tick, end=None, recorded=set(),
                                  released=[])

    def record_stream(self, block, stream):
        self.blocks[block]["recorded"].add(stream)

    def free(self, block):
        b = self.blocks[block]
        if b["end"] is None:
            self.tick += 1
            b["end"] = self.tick
            # the allocator waits (on the host) for each recorded stream's work so far before
            # it hands the block out again: a node after each such stream's latest command
            b["released"] = [self._node(self.last.get(s)) for s in b["recorded"]]

    def reach(self) -> list[int]:
        if self._reach is None:
            reach = []
            for preds in self.preds:
                bits = 0
                for p in preds:
                    bits |= reach[p] | (1 << p)
                reach.append(bits)
            self._reach = reach
        return self._reach

    def before(self, i: int, j: int) -> bool:
        """Is op ``i`` before op ``j`` (a path in the DAG)?"""
        return bool((self.reach()[self.ops[j]] >> self.ops[i]) & 1)

    def reuse_ordered(self, i, block_i, j, block_j) -> bool:
        if block_i == block_j:
            return False
        a, b = self.blocks.get(block_i), self.blocks.get(block_j)
        if a is None or b is None or a["end"] is None or a["end"] > b["start"]:
            return False
        if a["stream"] != b["stream"]:
            return True
        node = self.ops[i]
        return any((self.reach()[r] >> node) & 1 or r == node for r in a["released"])


def byte_set(offset: int, shape, stride, itemsize: int) -> set:
    """Byte addresses a strided view touches (``offset`` and ``stride`` in bytes, each element
    ``itemsize`` bytes from its start)."""
    addr = np.full((), offset, dtype=np.int64)
    for n, s in zip(shape, stride):
        addr = np.add.outer(addr, np.arange(n, dtype=np.int64) * s)
    addr = np.add.outer(addr.reshape(-1), np.arange(itemsize, dtype=np.int64))
    return set(addr.reshape(-1).tolist())


def brute_races(accesses, graph: SyncGraph, lifetimes=None) -> set:
    """``accesses``: per op, a list of ``(mode "R"/"W", key, byte set)``; ``key`` names the
    view in the answer. ``lifetimes``: per op, per access, the block id (or None). Returns
    ``{(i, j, key_i, key_j, kinds)}`` for every unordered conflicting pair of accesses."""
    found: dict = {}
    for j, acc_j in enumerate(accesses):
        for i in range(j):
            if graph.before(i, j):
                continue
            for a, (mode_i, key_i, bytes_i) in enumerate(accesses[i]):
                for b, (mode_j, key_j, bytes_j) in enumerate(acc_j):
                    if mode_i == "R" and mode_j == "R" or not (bytes_i & bytes_j):
                        continue
                    if lifetimes is not None and graph.reuse_ordered(
                            i, lifetimes[i][a], j, lifetimes[j][b]):
                        continue
                    kind = "WAR" if mode_i == "R" else ("RAW" if mode_j == "R" else "WAW")
                    found.setdefault((i, j, key_i, key_j), set()).add(kind)
    order = ("RAW", "WAW", "WAR")
    return {(i, j, ki, kj, tuple(k for k in order if k in kinds))
            for (i, j, ki, kj), kinds in found.items()}
