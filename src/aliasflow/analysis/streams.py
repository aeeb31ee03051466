"""Happens-before between ops issued to streams, as CUDA orders them: a small state machine.

Feed it what a program does, in the order the host does it: :meth:`StreamClocks.issue` for
every op (on the stream it was issued to), and the synchronisation in between (events recorded
and waited, ``wait_stream``, host waits, allocations and frees). Then
:meth:`StreamClocks.happens_before` answers for any two ops. Streams, events and memory blocks
are any hashable ids (synthetic in tests, CUDA handles or names in a trace); nothing here
imports torch. PyTorch's CUDA sanitizer (``torch/cuda/_sanitizer.py``) keeps the same state.

The rules:

- Ops issued to one stream run in issue order.
- An event holds what its stream had been issued when it was recorded (a later record
  replaces it; a new or re-created event holds nothing). A stream that waits for it orders
  its later ops after that; waiting for an event never recorded orders nothing.
  ``wait_stream(s, o)`` is a record on ``o`` and a wait by ``s``.
- The host's waits (a stream's, an event's, the whole device's) order everything the host
  issues afterwards, on any stream, after what it waited for. Ops issued to :data:`HOST` run
  on the host itself: in order with the host, and before everything issued after them.
- Nothing else orders: no implicit join with any stream (PyTorch's streams are created
  non-blocking, so not even with the default stream).

Each op gets a vector clock: for every stream, how many of its ops the op is ordered after.
Op ``i`` on stream ``s`` happens before op ``j`` exactly when ``j``'s clock counts at least
``i``'s position on ``s``. Clocks change only at synchronisation, so ops between two
synchronisations of a stream share one tuple.

Memory blocks (optional, for races across memory reuse) follow PyTorch's caching allocator:
a block is allocated on a stream and, once freed, handed out again only to work on that same
stream, so two lifetimes of an address allocated on different streams never race through
the reuse (the allocator synchronises the device before moving memory between streams); and
``record_stream(block, s)`` makes the allocator hold a freed block until the work issued on
``s`` before the free has finished, which orders that work before every use of the memory's
next lifetime.
"""
from __future__ import annotations

from collections.abc import Hashable

from ..core.errors import AliasflowError

HOST = "host"
"""The stream id of ops that run on the host itself (in order with the host's waits)."""


def _hashable(x, what: str):
    try:
        hash(x)
    except TypeError:
        raise AliasflowError(f"{what} id must be hashable, got {x!r}") from None
    return x


class _Lifetime:
    __slots__ = ("stream", "start", "end", "recorded", "released")

    def __init__(self, stream: int, start: int):
        self.stream = stream      # index of the stream it was allocated on
        self.start = start        # allocator tick when it was allocated
        self.end = None           # allocator tick when it was freed (None: alive)
        self.recorded = set()     # stream indices given by record_stream
        self.released = None      # clock the allocator waits for before reusing it


class StreamClocks:
    """Vector clocks of ops issued to streams (see the module's docstring for the rules).

    Examples
    --------
    >>> c = StreamClocks()
    >>> w = c.issue("side"); c.record("e", "side"); r = c.issue("default")
    >>> c.happens_before(w, r)
    False
    >>> c.wait("default", "e"); r2 = c.issue("default")
    >>> c.happens_before(w, r2), c.streams[c.stream_of(r2)]
    (True, 'default')
    """

    def __init__(self):
        self.streams: list[Hashable] = []        # stream index -> id
        self._index: dict = {}
        self._known: list[list[int]] = []       # per stream: ops of each stream it is after
        self._base: list[tuple | None] = []     # per stream: the tuple its ops share
        self._host_seen: list[int] = []         # per stream: host version last joined
        self._seq: list[int] = []               # per stream: ops issued on it
        self._host: list[int] = []              # what the host waited for (and its own ops)
        self._host_version = 0
        self._events: dict = {}                 # event id -> recorded clock or None
        self.op_stream: list[int] = []          # per op: stream index
        self.op_seq: list[int] = []             # per op: its position on its stream, from 1
        self.op_clock: list[tuple] = []         # per op: ops of each stream it is after
        self._blocks: dict = {}                 # block id -> _Lifetime
        self._tick = 0                          # counts allocations and frees

    # ---- streams and ops ----------------------------------------------------------------
    def stream_index(self, stream: Hashable) -> int:
        """The index of ``stream`` (made on first use)."""
        try:
            k = self._index.get(stream)
        except TypeError:
            raise AliasflowError(f"a stream id must be hashable, got {stream!r}") from None
        if k is None:
            k = self._index[stream] = len(self.streams)
            self.streams.append(stream)
            self._known.append([])
            self._base.append(None)
            self._host_seen.append(-1)
            self._seq.append(0)
        return k

    def create_stream(self, stream: Hashable) -> None:
        """Name a stream before its first op (optional: streams exist on first use)."""
        self.stream_index(stream)

    def issue(self, stream: Hashable) -> int:
        """Issue one op on ``stream``; returns its position (0, 1, ...)."""
        k = self.stream_index(stream)
        if self._host_seen[k] != self._host_version:   # what the host waited for
            self._join(k, self._host)
            self._host_seen[k] = self._host_version
        seq = self._seq[k] = self._seq[k] + 1
        base = self._base[k]
        if base is None:
            base = self._base[k] = tuple(self._known[k])
        self.op_stream.append(k)
        self.op_seq.append(seq)
        self.op_clock.append(base)
        if stream == HOST:   # everything issued later follows a host op
            self._set(self._host, k, seq)
            self._host_version += 1
        return len(self.op_stream) - 1

    def __len__(self) -> int:
        return len(self.op_stream)

    def stream_of(self, op: int) -> int:
        return self.op_stream[op]

    def happens_before(self, i: int, j: int) -> bool:
        """Is op ``i`` ordered before op ``j``? (Ops are ordered only after ops issued
        before them, so for ``i >= j`` the answer is False.)"""
        if i >= j:
            return False
        si = self.op_stream[i]
        if si == self.op_stream[j]:
            return True
        clock = self.op_clock[j]
        return si < len(clock) and clock[si] >= self.op_seq[i]

    def horizon(self, streams=None) -> list[int]:
        """Per op ``i``: the position of the last op issued after it that does not follow it
        (``i`` itself if every later op follows it); only ops on ``streams`` (stream indices)
        count, if given. Nothing after the horizon can race with ``i``."""
        out = list(range(len(self.op_stream)))
        for t, last in enumerate(self.last_unordered()):
            if streams is None or t in streams:
                for i, k in enumerate(last):
                    if k > out[i]:
                        out[i] = k
        return out

    def last_unordered(self) -> list[list[int]]:
        """Per stream ``t``, per op ``i``: the position of the last op on ``t`` issued after
        ``i`` that does not follow it (-1 if none). Ops along a stream see ever more of every
        other stream, so one sweep per pair of streams finds them all."""
        n = len(self.op_stream)
        on: list[list[int]] = [[] for _ in self.streams]
        for j, s in enumerate(self.op_stream):
            on[s].append(j)
        out = [[-1] * n for _ in self.streams]
        seqs, clocks = self.op_seq, self.op_clock
        for t, theirs in enumerate(on):
            last = out[t]
            for s, mine in enumerate(on):
                if t == s or not theirs or not mine:
                    continue
                k, m = 0, len(theirs)
                for i in mine:
                    seq = seqs[i]
                    while k < m:
                        clock = clocks[theirs[k]]
                        if s < len(clock) and clock[s] >= seq:
                            break
                        k += 1
                    if k and theirs[k - 1] > i:
                        last[i] = theirs[k - 1]
        return out

    def ordered(self, i: int, j: int) -> bool:
        """Is one of ops ``i`` and ``j`` ordered before the other?"""
        return self.happens_before(i, j) if i < j else self.happens_before(j, i)

    # ---- clocks -------------------------------------------------------------------------
    @staticmethod
    def _set(clock: list, k: int, value: int) -> None:
        if len(clock) <= k:
            clock.extend([0] * (k + 1 - len(clock)))
        if clock[k] < value:
            clock[k] = value

    def _join(self, k: int, other) -> None:
        known = self._known[k]
        if len(known) < len(other):
            known.extend([0] * (len(other) - len(known)))
        changed = False
        for s, n in enumerate(other):
            if n > known[s] and s != k:
                known[s] = n
                changed = True
        if changed:
            self._base[k] = None

    def _now(self, k: int) -> list[int]:
        """Stream ``k``'s clock as of now: what it is after, and its own ops so far."""
        clock = list(self._host if self.streams[k] == HOST else self._known[k])
        self._set(clock, k, self._seq[k])
        # (what the host waited for since k's last op is left out: every op issued from
        # now on, on any stream, follows it anyway)
        return clock

    # ---- events -------------------------------------------------------------------------
    def create_event(self, event: Hashable) -> None:
        """A new event (or one re-created under a reused id): it holds nothing."""
        self._events[_hashable(event, "an event")] = None

    def delete_event(self, event: Hashable) -> None:
        self._events.pop(_hashable(event, "an event"), None)

    def record(self, event: Hashable, stream: Hashable) -> None:
        """``event`` now stands for everything issued to ``stream`` so far."""
        self._events[_hashable(event, "an event")] = tuple(self._now(self.stream_index(stream)))

    def wait(self, stream: Hashable, event: Hashable) -> None:
        """Ops issued to ``stream`` from now on follow what ``event`` stood for when it was
        last recorded (nothing, if it never was). For :data:`HOST`, a host wait."""
        recorded = self._events.get(_hashable(event, "an event"))
        if recorded is not None:
            self._wait_for(stream, recorded)

    def wait_stream(self, stream: Hashable, other: Hashable) -> None:
        """Ops issued to ``stream`` from now on follow everything issued to ``other`` so far."""
        self._wait_for(stream, self._now(self.stream_index(other)))

    def _wait_for(self, stream, clock) -> None:
        if stream == HOST:   # the host's clock is the host stream's
            self.stream_index(stream)
            self._host_join(clock)
        else:
            self._join(self.stream_index(stream), clock)

    # ---- the host -----------------------------------------------------------------------
    def _host_join(self, clock) -> None:
        before = list(self._host)
        for s, n in enumerate(clock):
            self._set(self._host, s, n)
        if self._host != before:
            self._host_version += 1

    def synchronize_stream(self, stream: Hashable) -> None:
        """The host waits for everything issued to ``stream`` so far."""
        self._host_join(self._now(self.stream_index(stream)))

    def synchronize_event(self, event: Hashable) -> None:
        """The host waits for ``event`` (nothing, if it was never recorded)."""
        recorded = self._events.get(_hashable(event, "an event"))
        if recorded is not None:
            self._host_join(recorded)

    def synchronize(self) -> None:
        """The host waits for every stream (a device synchronisation)."""
        for k in range(len(self.streams)):
            self._host_join(self._now(k))

    # ---- memory blocks ------------------------------------------------------------------
    def alloc(self, block: Hashable, stream: Hashable) -> None:
        """A lifetime of memory begins, allocated on ``stream`` (before the next op)."""
        self._tick += 1
        life = _Lifetime(self.stream_index(stream), self._tick)
        self._blocks[_hashable(block, "a block")] = life

    def record_stream(self, block: Hashable, stream: Hashable) -> None:
        """The block is in use on ``stream`` too (``Tensor.record_stream``)."""
        life = self._blocks.get(_hashable(block, "a block"))
        if life is None:
            raise AliasflowError(f"record_stream: no allocated block {block!r}")
        life.recorded.add(self.stream_index(stream))

    def free(self, block: Hashable) -> None:
        """The lifetime ends (the host frees it, before the next op)."""
        life = self._blocks.get(_hashable(block, "a block"))
        if life is None:
            raise AliasflowError(f"free: no allocated block {block!r}")
        if life.end is not None:
            return
        self._tick += 1
        life.end = self._tick
        released: list[int] = []
        for k in life.recorded:
            for s, n in enumerate(self._now(k)):
                self._set(released, s, n)
        life.released = tuple(released) if released else None

    def reuse_ordered(self, i: int, block_i: Hashable, j: int, block_j: Hashable) -> bool:
        """Does the caching allocator order op ``i``'s use of ``block_i`` before op ``j``'s
        use of ``block_j`` (``i < j``; two lifetimes of one address)? Only when ``block_i``
        was freed before ``block_j`` was allocated, and then when they were allocated on
        different streams or ``i`` ran on a stream given to ``record_stream`` before it."""
        if block_i == block_j:
            return False
        a, b = self._blocks.get(block_i), self._blocks.get(block_j)
        if a is None or b is None or a.end is None or a.end > b.start:
            return False
        if a.stream != b.stream:
            return True
        released = a.released
        s = self.op_stream[i]
        return released is not None and s < len(released) and released[s] >= self.op_seq[i]

    def block_stream(self, block: Hashable):
        """The id of the stream ``block`` was allocated on (None if unknown)."""
        life = self._blocks.get(block)
        return None if life is None else self.streams[life.stream]
