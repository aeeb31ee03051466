"""CUDA recording without a GPU: PyTorch's GPU trace callbacks (``torch.cuda._gpu_trace``)
fired with synthetic stream, event and memory ids, as PyTorch's own sanitizer tests drive
its handler, and ops made "CUDA" by a stand-in for the recorder's device and current-stream
lookups (every tensor counts as device memory but those we mark as host memory). CSAN's
scenarios run through this path too."""
import pytest

torch = pytest.importorskip("torch")

import torch.cuda._gpu_trace as gpu_trace  # noqa: E402

import aliasflow as af  # noqa: E402
from aliasflow.interop.torch_trace import streams as trace_streams  # noqa: E402
from csan_scenarios import AF_ONLY_SCENARIOS, BLOCK, CSAN_SCENARIOS, event_id  # noqa: E402
from torch_stream_driver import TorchDriver  # noqa: E402


class FakeCuda:
    """Which storages count as host memory, and the current stream's handle."""

    def __init__(self):
        self.host_memory: set[int] = set()
        self.current = 0

    def host(self, t):
        self.host_memory.add(t.untyped_storage().data_ptr())
        return t


@pytest.fixture
def cuda(monkeypatch):
    fake = FakeCuda()

    class Recorder(trace_streams.CudaRecorder):
        def device_of(self, args, kwargs):
            for x in list(args) + list(kwargs.values()):
                for y in (x if isinstance(x, (list, tuple)) else [x]):
                    if isinstance(y, torch.Tensor) and \
                            y.untyped_storage().data_ptr() not in fake.host_memory:
                        return "cuda:0"
            return None

        def current_stream(self, device):
            return fake.current

    monkeypatch.setattr(trace_streams, "CudaRecorder", Recorder)
    monkeypatch.setattr(trace_streams, "_cuda_available", lambda: True)
    return fake


def fire(registry, *args):
    getattr(gpu_trace, registry).fire_callbacks(*args)


SIDE = 0x5000


def test_ops_take_the_current_stream_and_callbacks_order_them(cuda):
    x = (torch.zeros(8))
    for sync in (None, "event", "stream", "device", "deleted event"):
        with af.trace() as t:
            cuda.current = SIDE
            x.add_(1)                                    # on the side stream
            fire("EventCreationCallbacks", 77)
            fire("EventRecordCallbacks", 77, SIDE)
            if sync == "event":
                fire("EventWaitCallbacks", 77, 0)        # default stream waits
            elif sync == "stream":
                fire("StreamSynchronizationCallbacks", SIDE)
            elif sync == "device":
                fire("DeviceSynchronizationCallbacks")
            elif sync == "deleted event":
                fire("EventDeletionCallbacks", 77)
                fire("EventCreationCallbacks", 77)       # a new event under the same id
                fire("EventWaitCallbacks", 77, 0)
            cuda.current = 0
            x[2:].mul_(2)                                # on the default stream
        assert [op.info.stream for op in t.ops if op.accesses] == ["cuda:0x5000", "cuda:default"]
        races = t.races()
        if sync in (None, "deleted event"):
            (r,) = races
            assert r.streams == ["cuda:0x5000", "cuda:default"] and r.count == 6
            assert r.elements() == list(range(2, 8))
        else:
            assert races == [], sync


def test_cpu_ops_run_on_the_host(cuda):
    x = torch.zeros(4)
    for blocking in (True, False):
        with af.trace() as t:
            cuda.current = SIDE
            x.add_(1)
            h = cuda.host(x.to(torch.float64))  # device to host, issued on the side stream
            if blocking:   # a blocking copy synchronises the stream (PyTorch fires this)
                fire("StreamSynchronizationCallbacks", SIDE)
            h.mul_(2)                           # host memory only: the host runs it
        assert [op.info.stream for op in t.ops if op.accesses] == \
            ["cuda:0x5000", "cuda:0x5000", "host"]
        if blocking:
            assert t.races() == []
        else:
            (r,) = t.races()
            assert r.streams == ["cuda:0x5000", "host"] and r.kinds == ("RAW", "WAW")


def test_callbacks_after_the_trace_are_not_recorded(cuda):
    with af.trace() as t:
        fire("DeviceSynchronizationCallbacks")
    fire("DeviceSynchronizationCallbacks")
    assert [e[1] for e in t._streams.entries] == ["sync"]
    assert trace_streams._ACTIVE == []


def test_race_across_freed_and_reused_device_memory(cuda):
    buf = bytearray(64)
    for record_stream in (False, True):
        with af.trace() as t:
            x = (torch.frombuffer(buf, dtype=torch.float32))
            cuda.current = 0
            x.fill_(1)
            fire("EventCreationCallbacks", 5)
            fire("EventRecordCallbacks", 5, 0)
            fire("EventWaitCallbacks", 5, SIDE)
            cuda.current = SIDE
            s = x.sum()                              # side reads x
            if record_stream:   # what x.record_stream(side) logs (no CPU kernel to call)
                t._streams.add("record_stream", x.data_ptr(), "cuda:0x5000")
            ptr = x.data_ptr()
            del x
            fire("MemoryDeallocationCallbacks", ptr)
            cuda.current = 0
            y = (torch.frombuffer(buf, dtype=torch.float32))
            y.fill_(2)                               # the block again, on the default stream
        races = t.races()
        if record_stream:
            assert races == []
        else:
            (r,) = races
            assert r.reuse and r.conflict == "WAR" and r.streams == ["cuda:0x5000",
                                                                     "cuda:default"]
        del s


class CudaCallbackDriver(TorchDriver):
    """CSAN's scenarios with CUDA's own machinery: streams are handles made current, events
    and synchronisations are GPU trace callbacks with CSAN's synthetic ids."""

    def __init__(self, t, buf, fake):
        super().__init__(t, buf)
        self.fake = fake

    def on(self, stream):
        self.fake.current = stream
        return _Nothing()

    def record(self, event, stream): fire("EventRecordCallbacks", event, stream)
    def wait(self, event, stream): fire("EventWaitCallbacks", event, stream)
    def create_event(self, event): fire("EventCreationCallbacks", event)
    def delete_event(self, event): fire("EventDeletionCallbacks", event)
    def create_stream(self, stream): fire("StreamCreationCallbacks", stream)
    def synchronize(self): fire("DeviceSynchronizationCallbacks")
    def synchronize_stream(self, stream): fire("StreamSynchronizationCallbacks", stream)
    def synchronize_event(self, event): fire("EventSynchronizationCallbacks", event)

    def wait_stream(self, stream, other):   # what torch.cuda.Stream.wait_stream fires
        e = event_id(999)
        fire("EventCreationCallbacks", e)
        fire("EventRecordCallbacks", e, other)
        fire("EventWaitCallbacks", e, stream)
        fire("EventDeletionCallbacks", e)


class _Nothing:
    def __enter__(self): return self
    def __exit__(self, *exc): return False


NO_ALLOCATOR = [s for s in AF_ONLY_SCENARIOS if "reuse" not in s.__name__]


@pytest.mark.parametrize("scenario", CSAN_SCENARIOS + NO_ALLOCATOR, ids=lambda s: s.__name__)
def test_csan_scenarios_through_gpu_trace_callbacks(cuda, scenario):
    buf = (torch.zeros(BLOCK * 64, dtype=torch.uint8))
    with af.trace(values=False) as t:
        driver = CudaCallbackDriver(t, buf, cuda)
        scenario(driver)
    driver.finish()
