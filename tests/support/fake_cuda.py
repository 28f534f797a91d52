"""A FIFO stream simulator standing in for ``torch`` (CUDA) in tests, with fixed costs.

One host clock and one device queue, both in nanoseconds:

* a kernel launch costs the host ``launch_ns``; the kernel is queued when the launch returns
  and runs for its device time once the device has finished everything queued before it;
* ``torch.cuda.synchronize()`` (and ``Event.synchronize``) waits until the queue is empty, then
  costs the host ``sync_ns``;
* an event is stamped when the device reaches it (after the work queued before it, never
  before the host recorded it); ``elapsed_time`` of an event the host has not waited for
  raises, as CUDA's does ("device not ready");
* work and events go to the default stream unless a stream is named (or made current, as
  CuPy's ``with stream:``); another stream's work is not ordered with the default stream's,
  so an event on the default stream does not wait for it (CuPy's non-blocking streams);
* a graph captured under ``torch.cuda.graph`` holds its kernels' device times; a replay costs
  the host one launch and queues them back to back; a synchronise during capture raises, as
  CUDA's does;
* ``torch.profiler`` records the device time of each kernel run inside a ``record_function``
  range;
* ``torch.empty(..., device="cuda")`` counts allocated bytes (peak and reset), and a buffer's
  ``zero_()`` is a kernel lasting ``flush_ns``; the first kernel after it takes ``cold_ns``
  longer (a cold L2; 0 unless a test asks).

So the timing modes can be asserted exactly: with kernel 3 us, launch 5 us and sync 8 us,
a per-call synchronise shows 16 us, back-to-back launches 5 us, and the device time 3 us; a
kernel's ``reset`` of 4 us of device work (one more launch) changes none of these figures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any


class NotReady(RuntimeError):
    """CUDA's cudaErrorNotReady: an event read before the host waited for it."""


@dataclass
class FakeGraph:
    """``torch.cuda.CUDAGraph``: the device times of the kernels captured into it."""

    device: FakeDevice
    kernels: list[float] = field(default_factory=list)

    def replay(self, stream: object = None) -> None:
        self.device.launch(sum(self.kernels), graph=True, stream=stream)


class FakeEvent:
    """``torch.cuda.Event``: stamped on the simulated device clock."""

    def __init__(self, device: FakeDevice, enable_timing: bool = False) -> None:
        self.device = device
        self.enable_timing = enable_timing
        self.stamp_ns: float | None = None
        self.stream: object = None
        """The stream the event was recorded on (None: the default stream)."""

    def record(self, stream: object = None) -> None:
        if self.device.capturing is not None:
            raise RuntimeError("a timing event cannot be recorded during graph capture")
        self.stream = stream if stream is not None else self.device.current_stream
        self.stamp_ns = self.device.stamp(self.stream)

    def synchronize(self) -> None:
        assert self.stamp_ns is not None, "synchronize on an event never recorded"
        self.device.host_ns = max(self.device.host_ns, self.stamp_ns) + self.device.sync_ns

    def elapsed_time(self, end: FakeEvent) -> float:
        assert self.enable_timing and end.enable_timing, "events must be created for timing"
        if self.stamp_ns is None or end.stamp_ns is None:
            raise RuntimeError("both events must be recorded")
        if end.stamp_ns > self.device.host_ns:
            raise NotReady("device not ready: the end event was not waited for")
        return (end.stamp_ns - self.stamp_ns) / 1e6  # milliseconds, as torch's


class FakeBuffer:
    """A device tensor: its bytes count as allocated until it is released."""

    def __init__(self, device: FakeDevice, nbytes: int) -> None:
        self.device = device
        self.nbytes = nbytes
        device.allocate(nbytes)

    def numel(self) -> int:
        return self.nbytes

    def element_size(self) -> int:
        return 1

    def zero_(self) -> FakeBuffer:
        self.device.launch(self.device.flush_ns, name="flush")
        return self


@dataclass
class ProfiledRange:
    """A ``record_function`` range as the profiler reports it (device time in us)."""

    name: str
    device_ns: float = 0.0

    @property
    def device_time_total(self) -> float:
        return self.device_ns / 1e3


class FakeDevice:
    """The simulator's state: the host clock, the device queue, capture, profiler, memory."""

    def __init__(self, launch_ns: float, sync_ns: float, flush_ns: float = 20_000.0,
                 l2_bytes: int = 50 * 2**20, cold_ns: float = 0.0) -> None:
        self.launch_ns, self.sync_ns, self.flush_ns = launch_ns, sync_ns, flush_ns
        self.l2_bytes = l2_bytes
        self.cold_ns = cold_ns
        """What the first kernel after a flush takes longer (its data is no longer in L2)."""
        self.l2_cold = False
        self.host_ns = 0.0
        self.free_ns = 0.0
        """When the device finishes all the work queued so far."""
        self.capturing: FakeGraph | None = None
        self.ranges: list[ProfiledRange] | None = None
        self.open_range: ProfiledRange | None = None
        self.allocated = self.peak = 0
        self.log: list[str] = []
        self.current_stream: object = None
        """Where launches and events go when no stream is named (None: the default stream)."""
        self.streams: dict[int, float] = {}
        """When each other stream finishes its work: streams are not ordered with each other
        (non-blocking streams, as CuPy's ``Stream(non_blocking=True)``)."""

    def launch(self, device_ns: float, name: str = "kernel", graph: bool = False,
               stream: object = None) -> None:
        if self.capturing is not None and not graph:
            self.capturing.kernels.append(device_ns)
            return
        self.host_ns += self.launch_ns
        if name == "flush":
            self.l2_cold = True
        elif self.l2_cold and not graph:
            device_ns, self.l2_cold = device_ns + self.cold_ns, False
        self._queue(stream if stream is not None else self.current_stream, device_ns)
        self.log.append("replay" if graph else name)
        if self.open_range is not None:
            self.open_range.device_ns += device_ns

    def _queue(self, stream: object, device_ns: float) -> float:
        """Queue `device_ns` of work on `stream` after its earlier work; when it ends."""
        if stream is None:
            self.free_ns = max(self.free_ns, self.host_ns) + device_ns
            return self.free_ns
        end = max(self.streams.get(id(stream), 0.0), self.host_ns) + device_ns
        self.streams[id(stream)] = end
        return end

    def stamp(self, stream: object = None) -> float:
        """When the device reaches a point queued now on `stream`."""
        return self._queue(stream, 0.0)

    def synchronize(self) -> None:
        if self.capturing is not None:
            raise RuntimeError("operation not permitted when stream is capturing")
        self.host_ns = max(self.host_ns, self.free_ns, *self.streams.values()) + self.sync_ns
        self.log.append("sync")

    def allocate(self, nbytes: int) -> None:
        self.allocated += nbytes
        self.peak = max(self.peak, self.allocated)

    def kernel(self, device_ns: float, name: str = "kernel") -> Callable[[], object]:
        """A kernel call: one launch of `device_ns` of device work, logged as `name` (a
        kernel's ``reset`` is one too, logged as "reset")."""
        def call() -> object:
            self.launch(device_ns, name=name)
            return None
        return call

    def calls(self) -> int:
        """Kernels launched outside capture (flushes and replays included)."""
        return len([e for e in self.log if e != "sync"])


def fake_profiler(device: FakeDevice) -> SimpleNamespace:
    """``torch.profiler``: ranges opened with ``record_function`` collect device time."""

    class Profile:
        def __init__(self, activities: Any = None, **_: Any) -> None:
            self.activities = activities
            self._ranges: list[ProfiledRange] = []

        def __enter__(self) -> Profile:
            device.ranges = self._ranges
            return self

        def __exit__(self, *exc: object) -> None:
            device.ranges = None

        def events(self) -> list[ProfiledRange]:
            return list(self._ranges)

    @contextmanager
    def record_function(name: str) -> Iterator[None]:
        opened = ProfiledRange(name)
        if device.ranges is not None:
            device.ranges.append(opened)
        device.open_range = opened if device.ranges is not None else None
        try:
            yield
        finally:
            device.open_range = None

    return SimpleNamespace(profile=Profile, record_function=record_function,
                           ProfilerActivity=SimpleNamespace(CPU="CPU", CUDA="CUDA"))


def fake_torch(device: FakeDevice, name: str = "Fake GPU 9000", profiler: bool = True,
               hip: str | None = None, arch: str | None = None) -> SimpleNamespace:
    """The part of ``torch`` the CUDA backend and the timing modes use, on `device`."""

    @contextmanager
    def graph(g: FakeGraph, **_: Any) -> Iterator[None]:
        device.synchronize()
        device.capturing = g
        try:
            yield
        finally:
            device.capturing = None

    @contextmanager
    def stream(s: object) -> Iterator[None]:
        yield

    def properties(index: int) -> SimpleNamespace:
        assert index == 0
        props = SimpleNamespace(name=name, total_memory=80 * 2**30,
                                L2_cache_size=device.l2_bytes, multi_processor_count=132,
                                pci_bus_id=0x41, pci_domain_id=0, pci_device_id=0)
        if arch is not None:  # ROCm builds: gcnArchName, e.g. "gfx942:sramecc+:xnack-"
            props.gcnArchName = arch
        return props

    def reset_peak() -> None:
        device.peak = device.allocated

    cuda = SimpleNamespace(
        Event=lambda enable_timing=False: FakeEvent(device, enable_timing),
        synchronize=device.synchronize, CUDAGraph=lambda: FakeGraph(device), graph=graph,
        Stream=lambda: object(), stream=stream, is_available=lambda: True,
        current_device=lambda: 0, get_device_properties=properties,
        reset_peak_memory_stats=reset_peak, max_memory_allocated=lambda: device.peak,
        max_memory_reserved=lambda: device.peak, memory_allocated=lambda: device.allocated)
    torch = SimpleNamespace(
        cuda=cuda, uint8="uint8", __version__="9.9.9",
        version=SimpleNamespace(hip=hip, cuda=None if hip else "12.4"),
        get_num_threads=lambda: 8,
        empty=lambda n, dtype=None, device=None: FakeBuffer(_device(device), int(n)))
    if profiler:
        torch.profiler = fake_profiler(device)

    def _device(where: object) -> FakeDevice:
        assert where == "cuda", f"the simulator only allocates on cuda, not {where!r}"
        return device
    return torch


class FakeArray:
    """A JAX array on the simulator: ``block_until_ready`` waits for the device queue."""

    def __init__(self, device: FakeDevice) -> None:
        self.device = device

    def block_until_ready(self) -> FakeArray:
        self.device.synchronize()
        return self


def jax_kernel(device: FakeDevice, device_ns: float) -> Callable[[], object]:
    """A jitted JAX call on the simulator: one launch; returns an array to wait for."""
    def call() -> object:
        device.launch(device_ns)
        return FakeArray(device)
    return call


def fake_cupy(device: FakeDevice, arch: bytes | None = None) -> SimpleNamespace:
    """The part of ``cupy`` the CuPy clock uses, on `device` (stream capture included)."""

    class Stream:
        """A non-blocking stream: its work is not ordered with the default stream's."""

        def __init__(self, non_blocking: bool = False) -> None:
            self.graph: FakeGraph | None = None
            self.outer: list[object] = []

        def __enter__(self) -> Stream:
            self.outer.append(device.current_stream)
            device.current_stream = self
            return self

        def __exit__(self, *exc: object) -> None:
            device.current_stream = self.outer.pop()

        def synchronize(self) -> None:
            device.synchronize()

        def begin_capture(self) -> None:
            self.graph = FakeGraph(device)
            device.capturing = self.graph

        def end_capture(self) -> SimpleNamespace:
            device.capturing = None
            graph = self.graph
            assert graph is not None
            return SimpleNamespace(launch=lambda stream=None: graph.replay(stream))

    events: list[FakeEvent] = []

    def event() -> FakeEvent:
        events.append(FakeEvent(device, enable_timing=True))
        return events[-1]

    cuda = SimpleNamespace(
        Event=event,
        get_elapsed_time=lambda start, end: start.elapsed_time(end),
        Device=lambda: SimpleNamespace(synchronize=device.synchronize, id=0,
                                       pci_bus_id="0000:41:00.0"),
        Stream=Stream,
        runtime=SimpleNamespace(getDeviceProperties=lambda i: {
            "l2CacheSize": device.l2_bytes, **({"gcnArchName": arch} if arch else {})}))

    def empty(n: int, dtype: object = None) -> SimpleNamespace:
        buffer = FakeBuffer(device, int(n))
        return SimpleNamespace(fill=lambda value: buffer.zero_(), nbytes=buffer.nbytes)
    return SimpleNamespace(cuda=cuda, uint8="uint8", empty=empty, events=events)
