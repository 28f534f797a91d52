"""The device-independent machinery of energy measurement: the meter interface, a meter that
reads a cumulative counter at start and stop, one that samples power in a background thread and
integrates it, and the null meter that says why nothing could be read. Which counter a device
has is :mod:`kernbench.measure.metrics.energy`'s business."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

__all__ = [
    "NOT_ADVANCED", "SAMPLE_INTERVAL_S", "CounterMeter", "EnergyMeter", "MeasureError",
    "NullMeter", "Reading", "SampledMeter", "describe_error", "plain_delta_j",
    "region_reading", "trapezoid_j",
]

SAMPLE_INTERVAL_S = 0.005
NOT_ADVANCED = "the energy counter did not advance over the region (shorter than its update period)"

Reading = list[float]
_STOP_BEFORE_START = "stop() called without start()"


class EnergyMeter(Protocol):
    """Reads the energy of the region between :meth:`start` and :meth:`stop`."""

    source: str

    def start(self) -> None: ...

    def stop(self) -> dict[str, Any]: ...


class MeasureError(Exception):
    """A reading failed; the message is the ``reason`` reported in place of a figure."""


def region_reading(energy_j: float | None, region_s: float, source: str | None, method: str | None,
            reason: str | None, samples: int = 0) -> dict[str, Any]:
    power = energy_j / region_s if energy_j is not None and region_s > 0 else None
    return {"region_energy_j": energy_j, "region_s": region_s, "power_w": power,
            "source": source, "method": method, "reason": reason, "samples": samples}


def describe_error(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# --------------------------------------------------------------------------- meters


class NullMeter:
    """No readable counter: ``stop()`` reports the region's duration, ``None`` energy, a reason."""

    def __init__(self, reason: str, source: str = "none") -> None:
        self.source = source
        self.reason = reason
        self._t0: float | None = None

    def start(self) -> None:
        self._t0 = time.perf_counter()

    def stop(self) -> dict[str, Any]:
        region_s = time.perf_counter() - self._t0 if self._t0 is not None else 0.0
        return region_reading(None, region_s, None, None, self.reason)


class CounterMeter:
    """Reads a cumulative counter at start and stop; ``delta_j`` turns two readings into joules.

    ``read`` returns the raw reading (one value per domain) and raises on failure; ``delta_j``
    raises :class:`MeasureError` where the difference is not a valid energy.
    """

    def __init__(self, source: str, read: Callable[[], Reading],
                 delta_j: Callable[[Reading, Reading], float]) -> None:
        self.source = source
        self._read = read
        self._delta_j = delta_j
        self._first: Reading | None = None
        self._t0: float | None = None
        self._start_error: str | None = None

    def start(self) -> None:
        self._first, self._start_error = None, None
        try:
            self._first = self._read()
        except Exception as exc:
            self._start_error = f"energy counter read failed at start: {describe_error(exc)}"
        self._t0 = time.perf_counter()

    def _energy_j(self, first: Reading) -> tuple[float | None, str | None]:
        try:
            return self._delta_j(first, self._read()), None
        except MeasureError as exc:
            return None, str(exc)
        except Exception as exc:
            return None, f"energy counter read failed at stop: {describe_error(exc)}"

    def stop(self) -> dict[str, Any]:
        t1 = time.perf_counter()
        if self._t0 is None:
            return region_reading(None, 0.0, self.source, "counter", _STOP_BEFORE_START)
        if self._first is None:
            return region_reading(None, t1 - self._t0, self.source, "counter", self._start_error)
        energy, reason = self._energy_j(self._first)
        return region_reading(energy, t1 - self._t0, self.source, "counter", reason)


def plain_delta_j(units_per_j: float) -> Callable[[Reading, Reading], float]:
    """Delta in joules of a monotonic counter counting ``units_per_j`` per J; no wraparound."""

    def delta(first: Reading, last: Reading) -> float:
        diff = sum(last) - sum(first)
        if diff < 0:
            raise MeasureError("the energy counter went backwards (driver reset?)")
        if diff == 0:
            raise MeasureError(NOT_ADVANCED)
        return diff / units_per_j

    return delta


def trapezoid_j(samples: Sequence[tuple[float, float]]) -> float:
    """Integral of power (W) over time (s) of ``(t, p)`` samples with the trapezoid rule."""
    return sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in itertools.pairwise(samples))


class SampledMeter:
    """Samples power (W) every ``interval_s`` in a thread between start and stop; integrates it."""

    def __init__(self, source: str, read_w: Callable[[], float],
                 interval_s: float = SAMPLE_INTERVAL_S) -> None:
        self.source = source
        self._read_w = read_w
        self._interval_s = interval_s
        self._samples: list[tuple[float, float]] = []
        self._errors: list[str] = []
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0: float | None = None

    def _sample(self) -> None:
        before = time.perf_counter()
        try:
            watts = self._read_w()
        except Exception as exc:
            self._errors.append(describe_error(exc))
            return
        self._samples.append(((before + time.perf_counter()) / 2, watts))

    def _loop(self) -> None:
        while not self._halt.wait(self._interval_s):
            self._sample()

    def start(self) -> None:
        self._samples, self._errors = [], []
        self._halt = threading.Event()
        self._t0 = time.perf_counter()
        self._sample()
        self._thread = threading.Thread(target=self._loop, name="kernbench-power", daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, Any]:
        t1 = time.perf_counter()
        if self._thread is None or self._t0 is None:
            return region_reading(None, 0.0, self.source, "sampled", _STOP_BEFORE_START)
        self._halt.set()
        self._thread.join()
        self._thread = None
        self._sample()
        samples = sorted(self._samples)
        region_s = t1 - self._t0
        if len(samples) < 2:
            why = f" ({self._errors[-1]})" if self._errors else ""
            reason = f"fewer than 2 power samples over the region{why}"
            return region_reading(None, region_s, self.source, "sampled", reason, len(samples))
        energy = trapezoid_j(samples)
        span = samples[-1][0] - samples[0][0]
        record = region_reading(energy, region_s, self.source, "sampled", None, len(samples))
        record["power_w"] = energy / span if span > 0 else samples[-1][1]
        return record
