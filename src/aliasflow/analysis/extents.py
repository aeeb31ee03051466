"""An index of live records by extent: which records' ``[low, high]`` ranges meet a query.

The index is a segment map: sorted breakpoints split the storage into segments, each holding
the records whose extents cover it. A query costs a bisection plus the segments it spans,
so analysis cost follows the number of live records near an access, not the program length.
"""
from __future__ import annotations

from bisect import bisect_right


_EMPTY: frozenset = frozenset()


class ExtentIndex:
    """Records keyed by inclusive extents ``[low, high]``.

    Examples
    --------
    >>> idx = ExtentIndex()
    >>> idx.add("a", 0, 9); idx.add("b", 5, 20)
    >>> sorted(idx.query(8, 12))
    ['a', 'b']
    >>> idx.remove("a", 0, 9); sorted(idx.query(0, 4))
    []
    """

    __slots__ = ("bounds", "segments", "live")

    def __init__(self):
        # segments[i] holds records covering [bounds[i], bounds[i+1]); the last one is empty
        self.bounds: list[int] = []
        self.segments: list[set] = []
        self.live = 0

    def add(self, record, low: int, high: int) -> None:
        bounds, segments = self.bounds, self.segments
        # make low and high + 1 breakpoints; a new one copies the segment it splits
        i = bisect_right(bounds, low) - 1
        if i < 0 or bounds[i] != low:
            bounds.insert(i + 1, low)
            segments.insert(i + 1, set(segments[i]) if i >= 0 else set())
            i += 1
        end = high + 1
        k = bisect_right(bounds, end, i) - 1
        if bounds[k] != end:
            bounds.insert(k + 1, end)
            segments.insert(k + 1, set(segments[k]))
            k += 1
        for m in range(i, k):
            segments[m].add(record)
        self.live += 1
        if len(bounds) > 8 * self.live + 64:
            self._compact()

    def _breakpoint(self, at: int) -> int:
        """Make ``at`` a breakpoint (a new one copies the segment it splits); its position."""
        bounds = self.bounds
        i = bisect_right(bounds, at) - 1
        if i >= 0 and bounds[i] == at:
            return i
        bounds.insert(i + 1, at)
        self.segments.insert(i + 1, set(self.segments[i]) if i >= 0 else set())
        return i + 1

    def cut(self, record, low: int, high: int, keep_low: int, keep_high: int) -> None:
        """Shrink a record's extent from ``[low, high]`` to ``[keep_low, keep_high]`` inside it."""
        a = self._breakpoint(keep_low)
        b = self._breakpoint(keep_high + 1)
        bounds, segments = self.bounds, self.segments
        for m in range(max(bisect_right(bounds, low) - 1, 0), a):
            segments[m].discard(record)
        n = len(bounds)
        while b < n and bounds[b] <= high:
            segments[b].discard(record)
            b += 1

    def remove(self, record, low: int, high: int) -> None:
        bounds, segments = self.bounds, self.segments
        i = max(bisect_right(bounds, low) - 1, 0)
        n = len(bounds)
        while i < n and bounds[i] <= high:
            segments[i].discard(record)
            i += 1
        self.live -= 1

    def query(self, low: int, high: int) -> set:
        """Records whose extents meet ``[low, high]``."""
        bounds, segments = self.bounds, self.segments
        i = bisect_right(bounds, low) - 1
        if i < 0:  # the query starts before every record
            if not bounds or high < bounds[0]:
                return _EMPTY
            i = 0
        n = len(bounds)
        if i + 1 >= n or bounds[i + 1] > high:  # one segment: the common case
            return segments[i]
        found = set(segments[i])
        i += 1
        while i < n and bounds[i] <= high:
            found |= segments[i]
            i += 1
        return found

    def _compact(self) -> None:
        """Merge neighbouring segments holding the same records (after many removals)."""
        bounds, segments = [], []
        for b, s in zip(self.bounds, self.segments):
            if segments and segments[-1] == s:
                continue
            bounds.append(b)
            segments.append(s)
        self.bounds, self.segments = bounds, segments
