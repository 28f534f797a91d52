"""GPU timing modes: what one GPU figure means, and the loops that measure it (one case runs
them through :mod:`kernbench.measure.gpu_session`).

A GPU case is timed in one of these modes (``--gpu-timing``, default ``cold``):

* ``cold``: the L2 cache is flushed before every call (a buffer of at least twice the L2,
  written on the device), an event pair brackets each call, and the host synchronises once per
  block of up to :data:`COLD_BLOCK_CALLS` calls, never per call. The flush keeps the device
  queue ahead of the host, so each pair holds the kernel alone: neither launch nor sync latency.
* ``hot``: one event pair around N back-to-back calls, divided by N. One call is queued
  before the first event, so the pair sees the steady rate of the stream, with no fill or drain
  at either end: ``max(launch, kernel)`` per call.
* ``graph``: N calls captured once into a CUDA graph and replayed (one replay queued ahead, as
  in ``hot``), divided by N. ``graph_cold`` captures the flush before each call too, and
  subtracts a graph of the flushes alone. A capture that fails (a host sync inside the kernel,
  dynamic shapes) is reported with its reason and the figure falls back to ``hot``.
* ``kernel``: the device time of the call's kernels from the profiler (CUPTI), summed per
  call, the L2 flushed before each call outside the profiled range; where no profiler can
  read it there is no figure (null), with the reason: it never falls back to another mode.
* ``sync``: kernbench's former behaviour, kept for comparison: a host synchronise after every
  call inside an event pair around N calls, the L2 flushed before each sample. It shows
  launch + kernel + sync latency.
* ``all``: every mode in one record, plus ``launch_overhead_us``: ``sync`` minus the kernels'
  device time taken as ``kernel`` takes it but with ``sync``'s flush policy (once per sample:
  :func:`time_kernel_sync_flush`), so both sides see the same L2 state.

A kernel with a ``reset`` (untimed, before every call: it restores an input the kernel works
on in place) has it run where the flush runs, outside what is timed, and before the flush, so
the reset's own writes are not left in the L2: in ``cold`` it is queued before each call's
start mark (the host still never waits per call); in ``kernel`` it runs outside each call's
profiled range; in ``sync`` it is waited for before each call's start mark, and each call then
has its own pair (an unwaited reset would hold the start mark back and hide the launch). ``hot``,
``graph`` and ``graph_cold`` time N calls back to back in one pair or replay, with no untimed
place between them: for such a kernel they have no figure (null), with the reason, and never
fall back to another mode.

The loops know a :class:`GpuClock` (CUDA events for PyTorch and CuPy, the host clock after
``block_until_ready`` for JAX) and a :class:`BlockGuard` (NVML clocks and throttle reasons);
tests hand in a FIFO stream simulator, so every mode's arithmetic is asserted exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from kernbench.results.vocabulary import KERNEL_SYNC_FLUSH

COLD_BLOCK_CALLS = 256
"""Most calls between two host synchronisations in ``cold`` (their events wait meanwhile)."""
MAX_GRAPH_CALLS = 1000
"""Most calls captured into one graph (a graph's memory grows with its nodes)."""
MAX_ATTEMPTS_FACTOR = 2
"""Blocks discarded for throttling are retaken, up to this many times the blocks wanted."""


class CaptureFailed(Exception):
    """A graph could not be captured; the message says why."""


class ProfilerUnavailable(Exception):
    """No device time could be read from a profiler; the message says why."""


class GpuClock(Protocol):
    """Marks on the device's timeline (CUDA events), or the host's after a wait (JAX)."""

    name: str

    def mark(self) -> object:
        """A point after all work queued so far (host clock: nothing may be pending)."""
        ...

    def mark_after(self, result: object) -> object:
        """A point after the work behind `result` (and everything queued before it); a host
        clock waits for `result` first."""
        ...

    def wait(self, result: object) -> None:
        """Wait on the host for the work behind `result` (a device synchronise, or
        ``block_until_ready``)."""
        ...

    def synchronize(self) -> None:
        """Wait for all work queued through this clock; marks may be read after it."""
        ...

    def elapsed_ns(self, start: object, end: object) -> float:
        """Nanoseconds between two marks (after :meth:`synchronize`)."""
        ...

    def capture(self, body: Callable[[], object]) -> Callable[[], object]:
        """Capture `body` once into a graph; returns its replay. Raises CaptureFailed."""
        ...

    def kernel_times_ns(self, call: Callable[[], object], before: Callable[[], object] | None,
                        count: int) -> list[float]:
        """Device time of each of `count` calls' kernels (`before` runs unprofiled ahead of
        each). Raises ProfilerUnavailable."""
        ...


class BlockGuard(Protocol):
    """Checks the device's state around one block of calls (NVML clocks, throttling)."""

    def begin(self) -> None: ...

    def end(self) -> str | None:
        """Why the block just taken must be discarded, or None to keep it."""
        ...


class KeepEveryBlock:
    """The guard where no device state can be read: every block is kept."""

    def begin(self) -> None:
        return None

    def end(self) -> str | None:
        return None


@dataclass(frozen=True)
class Flush:
    """The L2 flush: `run` writes a buffer of `bytes` on the device (it does not wait)."""

    bytes: int
    run: Callable[[], object]


@dataclass(frozen=True)
class ModeResult:
    """One mode's figures: per-call times in ns, one per sample (or per call in ``cold`` and
    ``kernel``); `samples_ns` are what the record's samples hold (``cold``: each block's mean)."""

    mode: str
    figures_ns: tuple[float, ...]
    samples_ns: tuple[float, ...]
    calls_per_sample: int
    flush_per: str
    """"call", "sample" or "none"."""
    requested: str | None = None
    """The mode asked for, when these figures fell back to another (`reason` says why)."""
    reason: str | None = None
    discarded: tuple[str, ...] = ()
    """Why each discarded block was discarded (throttling, low clocks)."""

    @property
    def calls(self) -> int:
        return len(self.samples_ns) * self.calls_per_sample


@dataclass
class Session:
    """What every mode's loop shares for one case."""

    call: Callable[[], object]
    clock: GpuClock
    flush: Flush | None
    samples: int
    loops: int
    """Calls per hot/graph/sync sample and per cold block."""
    guard: BlockGuard = field(default_factory=KeepEveryBlock)
    fall_back: bool = True
    """A mode that cannot be measured is measured in its fallback mode (the record's samples
    need a figure); False where every mode is measured anyway (``all``): it is then null."""
    reset: Callable[[], object] | None = None
    """The kernel's untimed per-call reset (it does not wait), or None."""

    def guarded(self, take: Callable[[], list[float]]) -> tuple[list[list[float]], list[str]]:
        """`samples` blocks that the guard kept, and why the others were discarded."""
        kept: list[list[float]] = []
        discarded: list[str] = []
        for _ in range(self.samples * MAX_ATTEMPTS_FACTOR):
            if len(kept) == self.samples:
                break
            self.guard.begin()
            figures = take()
            why = self.guard.end()
            if why is None:
                kept.append(figures)
            else:
                discarded.append(why)
        return kept, discarded

    def flush_per(self, per: str) -> str:
        return per if self.flush is not None else "none"


def untimed_before(session: Session, flush: bool = True) -> object:
    """What runs before a call, outside its marks: the kernel's reset, then (where `flush`)
    the L2 flush, so the call meets the L2 the mode promises, not the reset's writes. Queued,
    never waited for; returns the last one's result (a host clock's mark waits on it)."""
    result = session.reset() if session.reset is not None else None
    if flush and session.flush is not None:
        result = session.flush.run()
    return result


def _back_to_back(session: Session, mode: str, held_in: str) -> ModeResult | None:
    """No figure for a mode of N calls back to back where the kernel has a reset; else None."""
    if session.reset is None:
        return None
    return no_figure(mode, f"a kernel with a `reset` cannot be timed in {mode} mode: {held_in} "
                           "holds N calls back to back, with no untimed place for the reset "
                           "between them")


def _paired(session: Session, run: Callable[[], object], calls: int) -> float:
    """Per-call time of `run` (`calls` calls) with one `run` queued ahead of the first mark."""
    clock = session.clock
    ahead = run()
    start = clock.mark_after(ahead)
    result = run()
    end = clock.mark_after(result)
    clock.synchronize()
    return clock.elapsed_ns(start, end) / calls


def _repeat(call: Callable[[], object], count: int) -> Callable[[], object]:
    def calls() -> object:
        result = None
        for _ in range(count):
            result = call()
        return result
    return calls


def _result(session: Session, mode: str, blocks: list[list[float]], discarded: list[str],
            per_sample: int, flush: str, cold_blocks: bool = False) -> ModeResult:
    figures = tuple(f for block in blocks for f in block)
    samples = tuple(sum(b) / len(b) for b in blocks) if cold_blocks else figures
    return ModeResult(mode, figures, samples, per_sample, session.flush_per(flush),
                      discarded=tuple(discarded))


def time_cold(session: Session) -> ModeResult:
    clock, call = session.clock, session.call
    block_calls = min(session.loops, COLD_BLOCK_CALLS)

    def block() -> list[float]:
        marks = []
        for _ in range(block_calls):
            start = clock.mark_after(untimed_before(session))
            marks.append((start, clock.mark_after(call())))
        clock.synchronize()
        return [clock.elapsed_ns(start, end) for start, end in marks]

    blocks, discarded = session.guarded(block)
    return _result(session, "cold", blocks, discarded, block_calls, "call", cold_blocks=True)


def time_hot(session: Session) -> ModeResult:
    refused = _back_to_back(session, "hot", "one event pair")
    if refused is not None:
        return refused
    loops, calls = session.loops, _repeat(session.call, session.loops)
    blocks, discarded = session.guarded(lambda: [_paired(session, calls, loops)])
    return _result(session, "hot", blocks, discarded, loops, "none")


def time_sync(session: Session) -> ModeResult:
    clock, call, flush, loops = session.clock, session.call, session.flush, session.loops

    def sample() -> list[float]:
        clock.wait(flush.run() if flush is not None else None)
        start = clock.mark()
        for _ in range(loops):
            clock.wait(call())
        end = clock.mark()
        clock.synchronize()
        return [clock.elapsed_ns(start, end) / loops]

    def reset_sample() -> list[float]:  # the reset and the flush waited for, then one call
        marks = []
        for index in range(loops):
            clock.wait(untimed_before(session, flush=index == 0))
            start = clock.mark()
            clock.wait(call())
            marks.append((start, clock.mark()))
        clock.synchronize()
        return [sum(clock.elapsed_ns(start, end) for start, end in marks) / loops]

    blocks, discarded = session.guarded(sample if session.reset is None else reset_sample)
    return _result(session, "sync", blocks, discarded, loops, "sample")


def _graph_loops(session: Session) -> int:
    return max(1, min(session.loops, MAX_GRAPH_CALLS))


def time_graph(session: Session) -> ModeResult:
    refused = _back_to_back(session, "graph", "one graph replay")
    if refused is not None:
        return refused
    loops = _graph_loops(session)
    try:
        replay = session.clock.capture(_repeat(session.call, loops))
    except CaptureFailed as exc:
        return _fell_back(session, time_hot, "graph", f"graph capture failed: {exc}")
    blocks, discarded = session.guarded(lambda: [_paired(session, replay, loops)])
    return _result(session, "graph", blocks, discarded, loops, "none")


def time_graph_cold(session: Session) -> ModeResult | None:
    """The flush captured before each call; minus a graph of the flushes alone. None without
    a flush."""
    flush, call, loops = session.flush, session.call, _graph_loops(session)
    if flush is None:
        return None
    refused = _back_to_back(session, "graph_cold", "one graph replay")
    if refused is not None:
        return refused

    def flushed_call() -> object:
        flush.run()
        return call()
    try:
        with_calls = session.clock.capture(_repeat(flushed_call, loops))
        flushes_only = session.clock.capture(_repeat(flush.run, loops))
    except CaptureFailed as exc:
        return _fell_back(session, time_cold, "graph_cold", f"graph capture failed: {exc}")

    def sample() -> list[float]:
        return [_paired(session, with_calls, loops) - _paired(session, flushes_only, loops)]
    blocks, discarded = session.guarded(sample)
    return _result(session, "graph_cold", blocks, discarded, loops, "call")


def time_kernel(session: Session) -> ModeResult:
    count = min(session.loops, COLD_BLOCK_CALLS)

    def block() -> list[float]:
        return session.clock.kernel_times_ns(session.call, lambda: untimed_before(session),
                                             count)
    try:
        blocks, discarded = session.guarded(block)
    except ProfilerUnavailable as exc:
        return no_figure("kernel", str(exc))
    return _result(session, "kernel", blocks, discarded, count, "call", cold_blocks=True)


def time_kernel_sync_flush(session: Session) -> ModeResult:
    """The kernels' device time as ``kernel`` takes it, but with ``sync``'s flush policy: the
    L2 flushed once before each sample of `loops` calls, not before every call. ``sync`` minus
    this figure holds the launch and sync latency alone, both sides on the same L2 state (a
    reset runs before each call, and the flush after the first one's, as in ``sync``)."""
    loops = session.loops

    def sample() -> list[float]:
        calls = iter(range(loops))
        before = None if session.reset is None else \
            (lambda: untimed_before(session, flush=next(calls) == 0))
        if before is None:
            session.clock.wait(untimed_before(session))
        return [sum(session.clock.kernel_times_ns(session.call, before, loops)) / loops]
    try:
        blocks, discarded = session.guarded(sample)
    except ProfilerUnavailable as exc:
        return no_figure(KERNEL_SYNC_FLUSH, str(exc))
    return _result(session, KERNEL_SYNC_FLUSH, blocks, discarded, loops, "sample")


def no_figure(mode: str, reason: str) -> ModeResult:
    """A mode that could not be measured: no figure (null), and why."""
    return ModeResult(mode, (), (), 0, "none", reason=f"{reason}; no figure")


def _fell_back(session: Session, fallback: Callable[[Session], ModeResult], requested: str,
               reason: str) -> ModeResult:
    """The fallback mode's figures, saying so; or no figure (null) and the reason where the
    fallback mode is measured on its own anyway."""
    if not session.fall_back:
        return no_figure(requested, reason)
    measured = fallback(session)
    return ModeResult(measured.mode, measured.figures_ns, measured.samples_ns,
                      measured.calls_per_sample, measured.flush_per, requested,
                      f"{reason}; measured in {measured.mode} mode instead",
                      measured.discarded)


RUNNERS: dict[str, Callable[[Session], ModeResult]] = {
    "cold": time_cold, "hot": time_hot, "graph": time_graph, "kernel": time_kernel,
    "sync": time_sync}
