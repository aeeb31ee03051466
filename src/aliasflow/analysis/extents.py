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
        for segment in segments[i:k]:
            segment.add(record)
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
        for segment in segments[max(bisect_right(bounds, low) - 1, 0):a]:
            segment.discard(record)
        for segment in segments[b:bisect_right(bounds, high, b)]:
            segment.discard(record)

    def remove(self, record, low: int, high: int) -> None:
        bounds = self.bounds
        i = bisect_right(bounds, low) - 1
        for segment in self.segments[i if i > 0 else 0:bisect_right(bounds, high, i + 1)]:
            segment.discard(record)
        self.live -= 1

    def query(self, low: int, high: int):
        """Records whose extents meet ``[low, high]`` (a set not to be modified)."""
        bounds = self.bounds
        i = bisect_right(bounds, low) - 1
        if i < 0:  # the query starts before every record
            if not bounds or high < bounds[0]:
                return _EMPTY
            i = 0
        k = bisect_right(bounds, high, i + 1)
        if k - i == 1:  # one segment: the common case, no copy
            return self.segments[i]
        return _EMPTY.union(*self.segments[i:k])

    def _compact(self) -> None:
        """Merge neighbouring segments holding the same records (after many removals)."""
        bounds, segments = [], []
        for b, s in zip(self.bounds, self.segments):
            if segments and segments[-1] == s:
                continue
            bounds.append(b)
            segments.append(s)
        self.bounds, self.segments = bounds, segments
