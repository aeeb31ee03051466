"""PyTorch's CUDA sanitizer test scenarios (``test/test_cuda_sanitizer.py``, class
``TestEventHandler``), ported to a small driver interface, plus the cases the sanitizer cannot
see. Each scenario runs against several drivers:

- :class:`CsanDriver`: PyTorch's own ``torch.cuda._sanitizer.EventHandler`` (pure Python,
  runs without a GPU), so the ported verdicts are checked against CSAN itself;
- :class:`PureDriver`: aliasflow's :class:`~aliasflow.analysis.streams.StreamClocks` and
  :func:`~aliasflow.analysis.stream_races.find_stream_races` over byte views;
- the PyTorch tracer's CPU stream vocabulary (``tests/interop/torch_trace``).

A tensor id ``i`` is the 64-byte block at byte ``64 * i`` of one buffer (CSAN knows it by that
address, its data pointer); a :class:`Bytes` is any strided byte view inside a block (CSAN knows
it by the address of its first element, as it knows a real tensor by ``data_ptr()``).
``h.launch`` returns how many races the launch has with earlier launches: CSAN's error count,
aliasflow's number of (earlier op, view pair) races. ``good``/``bad`` assert CSAN's verdicts;
``csan=`` gives the sanitizer's own verdict where aliasflow's differs (it sees more).
"""
from __future__ import annotations

from dataclasses import dataclass

BLOCK = 64
DEFAULT_STREAM = 0


def tensor_id(i: int) -> int:
    return i


def stream_id(i: int) -> int:
    return 1000 + i


def event_id(i: int) -> int:
    return 2000 + i


@dataclass(frozen=True)
class Bytes:
    """A strided view of block ``block``: ``offset`` and ``stride`` in bytes, elements of
    ``itemsize`` bytes (1, 2, 4 or 8)."""
    block: int
    offset: int
    shape: tuple
    stride: tuple
    itemsize: int = 1

    @property
    def address(self) -> int:   # what CSAN calls the tensor: its first element
        return BLOCK * self.block + self.offset


def as_bytes(t) -> Bytes:
    return t if isinstance(t, Bytes) else Bytes(t, 0, (BLOCK,), (1,))


class Driver:
    is_csan = False

    def good(self, stream, read_only=(), read_write=()):
        got = self.launch(stream, list(read_only), list(read_write))
        assert got == 0, f"{type(self).__name__}: expected no race, got {got}"

    def bad(self, n, stream, read_only=(), read_write=(), csan=None):
        got = self.launch(stream, list(read_only), list(read_write))
        want = csan if (self.is_csan and csan is not None) else n
        assert got == want, f"{type(self).__name__}: expected {want} race(s), got {got}"


class CsanDriver(Driver):
    """PyTorch's sanitizer state machine, fed the same events."""
    is_csan = True

    def __init__(self):
        import torch.cuda._sanitizer as csan
        self.h = csan.EventHandler()

    def launch(self, stream, read_only, read_write):
        ro = [as_bytes(t).address for t in read_only]
        rw = [as_bytes(t).address for t in read_write]
        return len(self.h._handle_kernel_launch(stream, ro, rw, set(), "",
                                                {k: [""] for k in ro + rw}))

    def record(self, event, stream): self.h._handle_event_record(event, stream)
    def wait(self, event, stream): self.h._handle_event_wait(event, stream)
    def create_event(self, event): self.h._handle_event_creation(event)
    def delete_event(self, event): self.h._handle_event_deletion(event)
    def create_stream(self, stream): self.h._handle_stream_creation(stream)
    def synchronize(self): self.h._handle_device_synchronization()
    def synchronize_stream(self, stream): self.h._handle_stream_synchronization(stream)
    def synchronize_event(self, event): self.h._handle_event_synchronization(event)

    def wait_stream(self, stream, other):   # what torch.cuda.Stream.wait_stream does
        e = event_id(999)
        self.h._handle_event_creation(e)
        self.h._handle_event_record(e, other)
        self.h._handle_event_wait(e, stream)
        self.h._handle_event_deletion(e)

    def alloc(self, block, stream=DEFAULT_STREAM): self.h._handle_memory_allocation(BLOCK * block)
    def free(self, block): self.h._handle_memory_deallocation(BLOCK * block)
    def record_stream(self, block, stream): pass   # CSAN ignores record_stream


class PureDriver(Driver):
    """aliasflow's clocks and race search over views of one byte buffer."""

    def __init__(self):
        import aliasflow as af
        from aliasflow.analysis.streams import StreamClocks
        self.af = af
        self.clocks = StreamClocks()
        self.mem = af.Tensor("mem", (BLOCK * 64,), "uint8")
        self.ops = []
        self.life: dict = {}       # block -> current lifetime id
        self.view_life: dict = {}  # id(view) -> lifetime id
        self.gen = 0

    def _view(self, t):
        b = as_bytes(t)
        dtype = {1: "uint8", 2: "int16", 4: "int32", 8: "int64"}[b.itemsize]
        v = self.af.TensorView(f"b{b.block}+{b.offset}{b.shape}{b.stride}x{b.itemsize}",
                               self.mem, BLOCK * b.block + b.offset, b.shape, b.stride, dtype)
        self.view_life[id(v)] = self.life.get(b.block)
        return v

    def launch(self, stream, read_only, read_write):
        from aliasflow.analysis.stream_races import find_stream_races
        af = self.af
        accesses = [af.Access(k, "R", self._view(t)) for k, t in enumerate(read_only)]
        accesses += [af.Access(len(accesses) + k, "RW", self._view(t))
                     for k, t in enumerate(read_write)]
        self.ops.append(af.OpRecord(f"k{len(self.ops)}", "kernel", tuple(accesses)))
        self.clocks.issue(stream)
        races = find_stream_races(self.ops, self.clocks,
                                  lifetime=lambda v: self.view_life.get(id(v)))
        return sum(1 for r in races if r.second == len(self.ops) - 1)

    def record(self, event, stream): self.clocks.record(event, stream)
    def wait(self, event, stream): self.clocks.wait(stream, event)
    def create_event(self, event): self.clocks.create_event(event)
    def delete_event(self, event): self.clocks.delete_event(event)
    def create_stream(self, stream): self.clocks.create_stream(stream)
    def synchronize(self): self.clocks.synchronize()
    def synchronize_stream(self, stream): self.clocks.synchronize_stream(stream)
    def synchronize_event(self, event): self.clocks.synchronize_event(event)
    def wait_stream(self, stream, other): self.clocks.wait_stream(stream, other)

    def alloc(self, block, stream=DEFAULT_STREAM):
        self.gen += 1
        self.life[block] = (block, self.gen)
        self.clocks.alloc(self.life[block], stream)

    def free(self, block): self.clocks.free(self.life[block])
    def record_stream(self, block, stream): self.clocks.record_stream(self.life[block], stream)


# ---- TestEventHandler, scenario by scenario (CSAN's verdicts) -----------------------------

def empty_kernel_launch(h):
    h.good(stream_id(0))


def simple_passing(h):
    h.good(stream_id(1), read_only=[tensor_id(1)])
    h.good(stream_id(2), read_only=[tensor_id(1)])


def simple_error(h):
    h.good(stream_id(1), read_only=[tensor_id(1)])
    h.bad(1, stream_id(2), read_write=[tensor_id(1)])


def simple_sync(h):
    h.good(stream_id(1), read_only=[tensor_id(1)])
    h.record(event_id(0), stream_id(1))
    h.wait(event_id(0), stream_id(2))
    h.good(stream_id(2), read_write=[tensor_id(1)])


def reads_check_last_write(h):
    h.good(stream_id(1), read_write=[tensor_id(1)])
    h.record(event_id(0), stream_id(1))
    h.wait(event_id(0), stream_id(2))
    h.good(stream_id(2), read_only=[tensor_id(1)])
    h.bad(1, stream_id(3), read_only=[tensor_id(1)])


def branch_sync(h):
    h.good(stream_id(1), read_write=[tensor_id(1)])
    h.record(event_id(0), stream_id(1))
    h.wait(event_id(0), stream_id(2))
    h.wait(event_id(0), stream_id(3))
    h.good(stream_id(2), read_only=[tensor_id(1)])
    h.good(stream_id(3), read_only=[tensor_id(1)])
    h.bad(1, stream_id(2), read_write=[tensor_id(1)])


def chain_sync(h):
    iterations = 10
    h.good(stream_id(0), read_only=[tensor_id(1)])
    for i in range(iterations):
        h.record(event_id(i), stream_id(i))
        h.wait(event_id(i), stream_id(i + 1))
    h.good(stream_id(iterations), read_write=[tensor_id(1)])


def expired_record(h):
    h.good(stream_id(1), read_only=[tensor_id(1)])
    h.record(event_id(0), stream_id(1))
    h.good(stream_id(1), read_only=[tensor_id(1)])
    h.wait(event_id(0), stream_id(2))
    h.bad(1, stream_id(2), read_write=[tensor_id(1)])


def deleted_record(should_delete, should_create):
    def scenario(h):
        h.good(stream_id(1), read_only=[tensor_id(1)])
        h.record(event_id(0), stream_id(1))
        if should_delete:
            h.delete_event(event_id(0))
        if should_create:
            h.create_event(event_id(0))
        h.wait(event_id(0), stream_id(2))
        h.bad(1, stream_id(2), read_write=[tensor_id(1)])
    scenario.__name__ = f"deleted_record_delete{int(should_delete)}_create{int(should_create)}"
    return scenario


def all_reads_checked_failing(h):
    iterations = 10
    for i in range(1, iterations):
        h.good(stream_id(i), read_only=[tensor_id(1)])
        h.record(event_id(i), stream_id(i))
    for i in range(1, iterations):
        h.wait(event_id(i), stream_id(0))
    h.good(stream_id(iterations), read_only=[tensor_id(1)])
    h.record(event_id(iterations), stream_id(iterations - 1))   # as the original (loop's i)
    h.bad(1, stream_id(0), read_write=[tensor_id(1)])   # not synchronised with the last read


def all_reads_checked_failing_older(h):
    """The same test as PyTorch first wrote it: ten reads, waits for the first nine."""
    iterations = 10
    for i in range(1, iterations + 1):
        h.good(stream_id(i), read_only=[tensor_id(1)])
        h.record(event_id(i), stream_id(i))
    for i in range(1, iterations):
        h.wait(event_id(i), stream_id(0))
    h.bad(1, stream_id(0), read_write=[tensor_id(1)])


def all_reads_checked_passing(h):
    iterations = 10
    for i in range(1, iterations):
        h.good(stream_id(i), read_only=[tensor_id(1)])
        h.record(event_id(i), stream_id(i))
    for i in range(1, iterations):
        h.wait(event_id(i), stream_id(0))
    h.good(stream_id(0), read_write=[tensor_id(1)])


def multiple_errors(h):
    iterations = 10
    h.good(stream_id(0), read_write=[tensor_id(i) for i in range(iterations)])
    h.bad(iterations, stream_id(1), read_write=[tensor_id(i) for i in range(iterations)])


def correct_state_merging(h):
    h.good(stream_id(1), read_write=[tensor_id(1)])
    h.good(stream_id(2), read_write=[tensor_id(2)])
    h.record(event_id(1), stream_id(1))
    h.record(event_id(2), stream_id(2))
    h.good(stream_id(1), read_write=[tensor_id(1)])
    h.good(stream_id(2), read_write=[tensor_id(2)])
    h.wait(event_id(1), stream_id(2))
    h.wait(event_id(2), stream_id(1))
    h.record(event_id(3), stream_id(2))
    h.wait(event_id(3), stream_id(1))
    h.good(stream_id(1), read_write=[tensor_id(1), tensor_id(2)])


def record_override(h):
    h.good(stream_id(1), read_only=[tensor_id(1)])
    h.good(stream_id(2), read_only=[tensor_id(2)])
    h.record(event_id(1), stream_id(1))
    h.record(event_id(1), stream_id(2))
    h.wait(event_id(1), stream_id(3))
    h.bad(1, stream_id(3), read_write=[tensor_id(1)])


def multiple_wait(h):
    h.good(stream_id(1), read_write=[tensor_id(1)])
    h.record(event_id(1), stream_id(1))
    h.wait(event_id(1), stream_id(2))
    h.wait(event_id(1), stream_id(3))
    h.good(stream_id(2), read_only=[tensor_id(1)])
    h.good(stream_id(3), read_only=[tensor_id(1)])


def device_synchronize(h):
    iterations = 10
    for i in range(1, iterations):
        h.good(stream_id(i), read_write=[tensor_id(i)])
    h.synchronize()
    h.good(stream_id(0), read_write=[tensor_id(i) for i in range(1, iterations)])


def device_synchronization_expired(h):
    h.good(stream_id(1), read_write=[tensor_id(1)])
    h.synchronize()
    h.good(stream_id(1), read_write=[tensor_id(1)])
    h.bad(1, stream_id(2), read_write=[tensor_id(1)])


def new_stream_is_synchronized(h):
    h.good(stream_id(1), read_write=[tensor_id(1)])
    h.synchronize()
    h.create_stream(stream_id(2))
    h.good(stream_id(2), read_write=[tensor_id(1)])


def stream_synchronize(h):
    h.good(stream_id(0), read_write=[tensor_id(1)])
    h.good(stream_id(1), read_write=[tensor_id(2)])
    h.synchronize_stream(stream_id(0))
    h.good(stream_id(2), read_only=[tensor_id(1)])
    h.good(stream_id(3), read_only=[tensor_id(1)])
    h.bad(1, stream_id(4), read_only=[tensor_id(2)])


def event_synchronize(h):
    h.good(stream_id(1), read_write=[tensor_id(1)])
    h.record(event_id(1), stream_id(1))
    h.good(stream_id(1), read_write=[tensor_id(2)])
    h.synchronize_event(event_id(1))
    h.good(stream_id(2), read_write=[tensor_id(1)])
    h.bad(1, stream_id(2), read_write=[tensor_id(2)])


CSAN_SCENARIOS = [
    empty_kernel_launch, simple_passing, simple_error, simple_sync, reads_check_last_write,
    branch_sync, chain_sync, expired_record, deleted_record(True, True),
    deleted_record(True, False), deleted_record(False, True), all_reads_checked_failing,
    all_reads_checked_failing_older, all_reads_checked_passing, multiple_errors,
    correct_state_merging, record_override, multiple_wait, device_synchronize,
    device_synchronization_expired, new_stream_is_synchronized, stream_synchronize,
    event_synchronize,
]


# ---- what CSAN cannot see -----------------------------------------------------------------

def partial_overlap_later_first_element(h):
    """A write of x[0:32] races a read of x[16:48]: the first elements differ, so CSAN, which
    knows tensors by their first element, sees two unrelated tensors."""
    h.good(stream_id(1), read_write=[Bytes(1, 0, (32,), (1,))])
    h.bad(1, stream_id(2), read_only=[Bytes(1, 16, (32,), (1,))], csan=0)


def strided_interleaved_no_overlap(h):
    """Even and odd bytes never meet: no race for either tool."""
    h.good(stream_id(1), read_write=[Bytes(1, 0, (32,), (2,))])
    h.good(stream_id(2), read_write=[Bytes(1, 1, (32,), (2,))])


def same_first_element_disjoint_bytes_meet(h):
    """A column and a row of a 8x8 byte matrix share their first element: a race for both."""
    h.good(stream_id(1), read_write=[Bytes(1, 0, (8,), (8,))])
    h.bad(1, stream_id(2), read_only=[Bytes(1, 0, (8,), (1,))])


def column_write_row_read_elsewhere(h):
    """Column 3 written, row 2 read: they meet at one byte (row 2, column 3); the first
    elements differ, so CSAN misses it."""
    h.good(stream_id(1), read_write=[Bytes(1, 3, (8,), (8,))])
    h.bad(1, stream_id(2), read_only=[Bytes(1, 16, (8,), (1,))], csan=0)


def reinterpreting_view(h):
    """A write of int32 elements races a read of the high bytes of each element through a
    byte view that starts at byte 2 (CSAN: another data pointer)."""
    h.good(stream_id(1), read_write=[Bytes(1, 0, (16,), (4,), 4)])
    h.bad(1, stream_id(2), read_only=[Bytes(1, 2, (16, 2), (4, 1))], csan=0)


def reinterpreting_view_between_elements(h):
    """int16 halves 1 and 3 of each 8-byte word vs int32 word halves 0: disjoint bytes."""
    h.good(stream_id(1), read_write=[Bytes(1, 0, (8,), (8,), 4)])
    h.good(stream_id(2), read_write=[Bytes(1, 4, (8,), (8,), 2)])


def reuse_after_free(h):
    """x allocated on the default stream, read on a side stream without record_stream, freed;
    its block handed to y on the default stream, which writes it while the read may still be
    pending. CSAN forgets x at the free."""
    h.alloc(1, DEFAULT_STREAM)
    h.good(DEFAULT_STREAM, read_write=[tensor_id(1)])
    h.wait_stream(stream_id(1), DEFAULT_STREAM)
    h.good(stream_id(1), read_only=[tensor_id(1)])
    h.free(1)
    h.alloc(1, DEFAULT_STREAM)
    h.bad(1, DEFAULT_STREAM, read_write=[tensor_id(1)], csan=0)


def reuse_after_free_with_record_stream(h):
    """The same with ``x.record_stream(side)``: the allocator holds the block until the
    side stream's read is done. No race for either tool."""
    h.alloc(1, DEFAULT_STREAM)
    h.good(DEFAULT_STREAM, read_write=[tensor_id(1)])
    h.wait_stream(stream_id(1), DEFAULT_STREAM)
    h.good(stream_id(1), read_only=[tensor_id(1)])
    h.record_stream(1, stream_id(1))
    h.free(1)
    h.alloc(1, DEFAULT_STREAM)
    h.good(DEFAULT_STREAM, read_write=[tensor_id(1)])


def reuse_after_free_synchronized(h):
    """The same with the default stream waiting for the side stream before the free."""
    h.alloc(1, DEFAULT_STREAM)
    h.good(DEFAULT_STREAM, read_write=[tensor_id(1)])
    h.wait_stream(stream_id(1), DEFAULT_STREAM)
    h.good(stream_id(1), read_only=[tensor_id(1)])
    h.wait_stream(DEFAULT_STREAM, stream_id(1))
    h.free(1)
    h.alloc(1, DEFAULT_STREAM)
    h.good(DEFAULT_STREAM, read_write=[tensor_id(1)])


def race_after_race_on_an_older_write(h):
    """Two unsynchronised writes (a race both tools see), then a read that waited for the
    second writer only: it still races the first write. CSAN checks a read against the last
    write alone and stays silent."""
    h.good(stream_id(1), read_write=[tensor_id(1)])
    h.bad(1, stream_id(2), read_write=[tensor_id(1)])
    h.record(event_id(1), stream_id(2))
    h.wait(event_id(1), stream_id(3))
    h.bad(1, stream_id(3), read_only=[tensor_id(1)], csan=0)


def wait_for_unrecorded_event(h):
    """Waiting for an event never recorded orders nothing (CUDA: a no-op)."""
    h.good(stream_id(1), read_write=[tensor_id(1)])
    h.create_event(event_id(5))
    h.wait(event_id(5), stream_id(2))
    h.bad(1, stream_id(2), read_only=[tensor_id(1)])


def wait_stream_orders(h):
    h.good(stream_id(1), read_write=[tensor_id(1)])
    h.wait_stream(stream_id(2), stream_id(1))
    h.good(stream_id(2), read_only=[tensor_id(1)])
    h.good(stream_id(1), read_only=[tensor_id(1)])
    h.bad(1, stream_id(1), read_write=[tensor_id(1)])   # the read on stream 2 is not waited


AF_ONLY_SCENARIOS = [
    partial_overlap_later_first_element, strided_interleaved_no_overlap,
    same_first_element_disjoint_bytes_meet, column_write_row_read_elsewhere,
    reinterpreting_view, reinterpreting_view_between_elements, reuse_after_free,
    reuse_after_free_with_record_stream, reuse_after_free_synchronized,
    race_after_race_on_an_older_write, wait_for_unrecorded_event, wait_stream_orders,
]
