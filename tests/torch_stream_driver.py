"""The CSAN scenarios' driver for traces: launches are aten ops on byte views of one buffer,
streams and events are the trace's CPU vocabulary (``CudaCallbackDriver`` in the CUDA
recording tests replaces them by GPU trace callbacks)."""
import torch

from csan_scenarios import BLOCK, DEFAULT_STREAM, Driver, as_bytes


class TorchDriver(Driver):
    """Each launch is one aten op on byte views of one buffer: reads by ``torch.cat`` (its
    output kept alive), read-writes by ``torch._foreach_add_``. Verdicts are checked when
    the trace ends (``finish``)."""

    def __init__(self, t, buf):
        self.t = t
        self.buf = buf   # made before the trace (made inside, its zeroing would race)
        self.keep, self.events, self.expected = [], {}, []

    def stream(self, sid):
        return self.t.default_stream if sid == DEFAULT_STREAM else self.t.stream(f"s{sid}")

    def view(self, spec):
        b = as_bytes(spec)
        dtype = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[b.itemsize]
        k = b.itemsize
        return torch.as_strided(self.buf.view(dtype), b.shape, [s // k for s in b.stride],
                                (BLOCK * b.block + b.offset) // k)

    def on(self, stream):
        return self.stream(stream)

    def launch(self, stream, read_only, read_write):
        assert not (read_only and read_write)
        before = len(self.t.raw)
        with self.on(stream):
            if read_only:
                self.keep.append(torch.cat([self.view(v).reshape(-1) for v in read_only]))
            elif read_write:
                torch._foreach_add_([self.view(v) for v in read_write], 1)
        return (before, len(self.t.raw))

    def good(self, stream, read_only=(), read_write=()):
        self.expected.append((self.launch(stream, list(read_only), list(read_write)), 0))

    def bad(self, n, stream, read_only=(), read_write=(), csan=None):
        self.expected.append((self.launch(stream, list(read_only), list(read_write)), n))

    def finish(self):
        races = self.t.races()
        for (lo, hi), want in self.expected:
            got = sum(1 for r in races if lo <= r.ops[1].index < hi)
            assert got == want, f"launch of ops {lo}..{hi}: {got} race(s), expected {want}"

    def event(self, eid):
        if eid not in self.events:   # CSAN makes an event it has not seen (an empty one)
            self.events[eid] = self.t.event()
        return self.events[eid]

    def record(self, event, stream): self.event(event).record(self.stream(stream))
    def wait(self, event, stream): self.stream(stream).wait_event(self.event(event))
    def create_event(self, event): self.events[event] = self.t.event()
    def delete_event(self, event): self.events.pop(event, None)
    def create_stream(self, stream): self.stream(stream)
    def synchronize(self): self.t.synchronize()
    def synchronize_stream(self, stream): self.stream(stream).synchronize()
    def synchronize_event(self, event): self.event(event).synchronize()
    def wait_stream(self, stream, other): self.stream(stream).wait_stream(self.stream(other))
