"""The dependency graph and what a scheduler asks of it: levels, order, critical path, DOT."""
from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Callable, Mapping

import numpy as np

from ..core.errors import AliasflowError


def _cost(name: str, value) -> float:
    """An op's cost as a float: a real number that is not NaN, else AliasflowError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise AliasflowError(f"cost of op {name!r} must be a number, got {value!r:.60}")
    try:
        weight = float(value)
    except (OverflowError, ValueError):
        raise AliasflowError(f"cost of op {name!r} is too large for a float") from None
    if math.isnan(weight):
        raise AliasflowError(f"cost of op {name!r} is NaN")
    return weight


class DependencyGraph:
    """Op records (named, in program order) and the dependencies between them.

    Every dependency goes from an earlier op to a later one, so program order is always a
    valid topological order. The graph keeps the records it was analysed from: records are
    immutable, so a runner given this graph for the same records needs no other check, and
    one given other records (a builder changed since) refuses it. A record's ``after``
    names are ordering edges too (:attr:`after`), besides the data dependencies.
    """

    def __init__(self, ops: list, dependencies: list):
        ops = list(ops)
        # Given records (not names), the graph remembers them, so a runner can refuse a
        # graph analysed from other records.
        self.records = None
        if ops and not isinstance(ops[0], str):
            self.records = tuple(ops)
            ops = [op.name for op in ops]
        self.ops = ops
        self._deps = list(dependencies)
        self._edges = None
        self._position_map = self._preds_list = self._succs_list = self._csr = None
        self._after = None

    @classmethod
    def from_edges(cls, records: list, edges, make) -> "DependencyGraph":
        """A graph over ``records`` from the compiled walk's edge arrays
        (:class:`~aliasflow.analysis.compiled.Edges`); ``make`` builds one dependency record,
        and runs only when :attr:`dependencies` is first read."""
        self = cls.__new__(cls)
        self.records = tuple(records)
        self.ops = [rec.name for rec in records]
        self._deps = None
        self._edges = (edges, make)
        self._position_map = self._preds_list = self._succs_list = self._csr = None
        self._after = None
        return self

    @property
    def after(self) -> list[tuple[str, str]]:
        """The records' explicit ordering edges ``(earlier, later)`` (their ``after``
        names), which are not data dependencies; every one names an earlier op of the
        graph (one that does not is refused when the graph is made or used)."""
        return [(self.ops[s], self.ops[t]) for s, t in zip(*self._after_pairs())]

    def _after_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        if self._after is None:
            src, dst = [], []
            if self.records is not None:
                position = self._position
                for t, rec in enumerate(self.records):
                    for name in rec.after:
                        s = position.get(name)
                        if s is None or s >= t:
                            where = "is not an op of this program" if s is None else \
                                "is not earlier in program order"
                            raise AliasflowError(f"op {rec.name!r}: after {name!r}, which "
                                                 f"{where}")
                        src.append(s)
                        dst.append(t)
            self._after = (np.array(src, np.int64), np.array(dst, np.int64))
        return self._after

    @property
    def dependencies(self) -> list:
        """The dependency records, in order of their later op (then earlier op)."""
        if self._deps is None:
            edges, make = self._edges
            self._deps = edges.dependencies(self.ops, make)
        return self._deps

    @property
    def _position(self) -> dict:
        if self._position_map is None:
            self._position_map = {name: k for k, name in enumerate(self.ops)}
        return self._position_map

    def _pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct ``(src, dst)`` op positions of the edges, sorted by dst then src."""
        n = len(self.ops)
        if self._edges is not None:  # the walk's arrays, records made or not
            src, dst = self._edges[0].ops()
        else:
            position = self._position
            src = np.fromiter((position[d.src] for d in self._deps), np.int64, len(self._deps))
            dst = np.fromiter((position[d.dst] for d in self._deps), np.int64, len(self._deps))
        a_src, a_dst = self._after_pairs()
        if len(a_src):
            src, dst = np.concatenate([src, a_src]), np.concatenate([dst, a_dst])
        key = np.unique(dst * max(n, 1) + src)
        return key % max(n, 1), key // max(n, 1)

    def predecessor_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Predecessors as CSR arrays ``(indptr, indices)``: op ``k``'s distinct
        predecessors are ``indices[indptr[k]:indptr[k + 1]]``, ascending."""
        if self._csr is None:
            src, dst = self._pairs()
            indptr = np.searchsorted(dst, np.arange(len(self.ops) + 1))
            self._csr = (indptr, src)
        return self._csr

    def _adjacency(self) -> None:
        # Ops without edges share one empty tuple: a million ops need no million empty sets.
        indptr, src = self.predecessor_arrays()
        preds: list = [()] * len(self.ops)
        succs: dict[int, set[int]] = {}
        bounds = indptr.tolist()
        srcs = src.tolist()
        for t in np.flatnonzero(np.diff(indptr)).tolist():
            ps = srcs[bounds[t]:bounds[t + 1]]
            preds[t] = set(ps)
            for s in ps:
                succs.setdefault(s, set()).add(t)
        self._preds_list = preds
        self._succs_list = [succs.get(k, ()) for k in range(len(self.ops))]

    @property
    def _preds(self) -> list:
        if self._preds_list is None:
            self._adjacency()
        return self._preds_list

    @property
    def _succs(self) -> list:
        if self._succs_list is None:
            self._adjacency()
        return self._succs_list

    def check_matches(self, records) -> None:
        """Refuse (:class:`AliasflowError`) when ``records`` are not those this graph was
        analysed from: other names or length, or records with other accesses under the same
        names (a builder given other views since). Parameters play no part: the graph is
        about memory."""
        names = [rec.name for rec in records]
        if names != self.ops:
            if len(names) != len(self.ops):
                raise AliasflowError(f"the graph was analysed from {len(self.ops)} ops, not "
                                     f"these {len(names)}")
            k = next(k for k, (a, b) in enumerate(zip(names, self.ops)) if a != b)
            raise AliasflowError(f"the graph was analysed from a different op list: op {k} "
                                 f"is {self.ops[k]!r} there and {names[k]!r} here")
        if self.records is None:
            return
        for rec, old in zip(records, self.records):
            if rec is not old and rec != old:  # the same accesses: the same dependencies
                raise AliasflowError(f"op {rec.name!r} has other views than when the graph "
                                     f"was analysed (it touches other memory); analyse again")

    def _index(self, op) -> int:
        name = getattr(op, "name", op)
        try:
            return self._position[name]
        except (KeyError, TypeError):  # TypeError: not even hashable
            raise AliasflowError(f"no op named {name!r} in this graph") from None

    def _names(self, indices) -> list[str]:
        return [self.ops[k] for k in sorted(indices)]

    def predecessor_indices(self, k: int):
        """Positions (in program order) of the ops with an edge into op number ``k``."""
        return self._preds[k]

    def predecessors(self, op) -> list[str]:
        """Ops with an edge into ``op`` (name or Operation), in program order."""
        return self._names(self._preds[self._index(op)])

    def successors(self, op) -> list[str]:
        return self._names(self._succs[self._index(op)])

    @property
    def edges(self) -> list[tuple[str, str]]:
        """Distinct ``(src, dst)`` op pairs."""
        return [(self.ops[s], self.ops[t]) for t in range(len(self.ops))
                for s in sorted(self._preds[t])]

    def _depths(self) -> list[int]:
        depth = [0] * len(self.ops)
        for t, preds in enumerate(self._preds):
            if preds:
                depth[t] = 1 + max(depth[s] for s in preds)
        return depth

    def levels(self) -> list[list[str]]:
        """Ops grouped by longest distance from a source: each level can run in parallel."""
        out: list[list[str]] = []
        for k, d in enumerate(self._depths()):
            if d == len(out):
                out.append([])
            out[d].append(self.ops[k])
        return out

    def topological_order(self) -> list[str]:
        """A valid execution order: level by level, program order within a level."""
        return [name for level in self.levels() for name in level]

    def critical_path(self, cost: Callable[[str], float] | Mapping[str, float] | None = None
                      ) -> tuple[float, list[str]]:
        """Longest path by total op cost (1 per op by default): ``(length, op names)``."""
        if cost is None:
            weight = [1.0] * len(self.ops)
        elif isinstance(cost, Mapping):
            weight = [_cost(name, cost.get(name, 1.0)) for name in self.ops]
        elif callable(cost):
            weight = [_cost(name, cost(name)) for name in self.ops]
        else:
            raise AliasflowError(f"cost must be a mapping or a callable from op name to "
                                 f"number, got {type(cost).__name__}")
        if not self.ops:
            return 0.0, []
        best = [0.0] * len(self.ops)
        via = [-1] * len(self.ops)
        for t, preds in enumerate(self._preds):
            if preds:
                s = max(preds, key=lambda p: (best[p], -p))
                best[t], via[t] = best[s] + weight[t], s
            else:
                best[t] = weight[t]
        end = max(range(len(self.ops)), key=lambda k: (best[k], -k))
        length, path = best[end], []
        while end != -1:
            path.append(self.ops[end])
            end = via[end]
        return length, path[::-1]

    def kinds(self) -> dict[str, int]:
        """Number of records by kind."""
        if self._deps is None:
            counts = np.bincount(self._edges[0].kinds(), minlength=3).tolist()
            return dict(zip(("RAW", "WAR", "WAW"), counts))
        counts = Counter(d.kind for d in self.dependencies)
        return {k: counts.get(k, 0) for k in ("RAW", "WAR", "WAW")}

    def to_dot(self, name: str = "aliasflow") -> str:
        """Graphviz DOT source: RAW solid, WAR and WAW dashed, implicit edges red and labelled;
        ``after`` ordering edges dotted."""
        import graphviz

        # graphviz gives backslashes a meaning (\n, \l): names are escaped so any name,
        # a trailing backslash included, reads back as itself
        esc = graphviz.escape
        dot = graphviz.Digraph(esc(name), graph_attr={"rankdir": "LR"},
                               node_attr={"shape": "box", "fontname": "monospace"})
        for op in self.ops:
            dot.node(esc(op))
        for d in self.dependencies:
            label = graphviz.nohtml(
                esc(d.kind + (" implicit" if d.implicit else "")) + "\\n"
                + esc(f"{d.src_view} -> {d.dst_view}"))
            dot.edge(esc(d.src), esc(d.dst), label=label,
                     style="solid" if d.kind == "RAW" else "dashed",
                     color="red" if d.implicit else "black")
        for src, dst in self.after:  # ordering edges that are not data
            dot.edge(esc(src), esc(dst), label="after", style="dotted", color="gray40")
        return dot.source

    def to_json(self, elements: bool = False) -> dict:
        deps = []
        for d in self.dependencies:
            rec = {"src": d.src, "dst": d.dst, "kind": d.kind, "implicit": d.implicit,
                   "src_view": d.src_view, "dst_view": d.dst_view, "tensor": d.tensor}
            if elements:
                rec["elements"] = d.elements
            deps.append(rec)
        length, path = self.critical_path()
        out = {"ops": self.ops, "dependencies": deps, "levels": self.levels(),
               "critical_path": {"length": length, "ops": path}}
        after = self.after
        if after:
            out["after"] = [list(pair) for pair in after]
        return out

    def __len__(self) -> int:
        return len(self._edges[0]) if self._deps is None else len(self._deps)

    def __repr__(self) -> str:
        return f"DependencyGraph({len(self.ops)} ops, {len(self)} dependencies)"
