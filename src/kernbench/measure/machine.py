"""How busy the machine was: around a whole run, and while one case's samples were taken.

A verdict must not blame a kernel for a busy machine, so every run records what the machine was
doing (`run_state`, before and after the suite) and every case records what else ran while its
samples were taken (:class:`ActivityProbe`, inside the worker):

* the load average (``os.getloadavg``);
* from ``/proc/stat`` (Linux; None elsewhere): the CPU time every process on the machine used,
  less this worker's own, per second of wall time ("other processes kept 1.2 cores busy"),
  and the share of CPU time the hypervisor stole;
* a calibration: a fixed kernel timed the same way on every run, a hash on every core at once.
  Two runs whose calibrations differ ran on a machine that changed between them (a noisy
  neighbour, a hog on some cores, a different clock). A single-thread Python loop was tried as
  a second calibration and dropped: on the VMs this was built on it alternates between two
  speeds 1.6x apart on a quiet machine, so it would call every comparison inconclusive.

Reading these costs a few hundred microseconds (the activity) and 15-300 ms (a calibration);
:mod:`kernbench.analysis.machine_caveats` turns them into "inconclusive" verdicts.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PROC_STAT = "/proc/stat"
CALIBRATION_REPEATS = 3
"""The calibration is the fastest repeat once the fastest 3 agree within CALIBRATION_AGREEMENT:
on an idle machine here the first 3 do (60 calibrations had the fastest of 3 within 1.065x of
its median), so it costs 3 repeats (~15 ms)."""
CALIBRATION_AGREEMENT = 1.05
CALIBRATION_BUDGET_S = 0.3
"""Repeats go on until the fastest 3 agree or this long has passed. A VM here gives a process
that has just started, or woken after a pause, less than its two cores for 0.1-0.3 s (the
two threads got 1.1 cores between them, no other process ran and no steal was reported): 3
back-to-back repeats then read 1.3-2x slow, and a run looked as if the machine had changed
during it. A hog that holds a core slows every repeat alike, so they agree at once."""
HASH_BYTES = 1 << 20
HASH_ROUNDS = 8
"""Each core's thread hashes HASH_BYTES this many times (hashlib releases the GIL)."""
SPEED_PROBE_LOOPS = 10_000
"""Fixed: stored runs' probes are compared with new ones, so the loop never changes length."""
SPEED_PROBE_REPEATS = 3
"""The fastest of 3 filters an interrupt; each worker probes before its warm-up and after its
samples, so every repeat costs ~0.2 ms per process."""


@dataclass(frozen=True)
class CpuTimes:
    """Machine-wide CPU seconds since boot (all CPUs summed), from /proc/stat's `cpu` line."""

    busy_s: float
    steal_s: float
    total_s: float


def read_cpu_times(path: str = PROC_STAT) -> CpuTimes | None:
    """The machine's CPU seconds, or None where the OS has no /proc/stat (macOS, Windows)."""
    try:
        with open(path, encoding="ascii") as stream:
            first = stream.readline().split()
    except OSError:
        return None
    if not first or first[0] != "cpu" or len(first) < 5:
        return None
    ticks = [int(x) for x in first[1:9]] + [0] * (8 - len(first[1:9]))
    user, nice, system, _idle, _iowait, irq, softirq, steal = ticks
    hertz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    return CpuTimes(busy_s=(user + nice + system + irq + softirq) / hertz,
                    steal_s=steal / hertz, total_s=sum(ticks) / hertz)


def activity(before: CpuTimes, after: CpuTimes, own_cpu_s: float,
             wall_s: float) -> dict[str, float] | None:
    """What the rest of the machine did between two readings: `other_cpu_cores`, the cores
    other processes kept busy on average (busy time less `own_cpu_s`, per wall second), and
    `steal_share`, the share of all CPU time the hypervisor took; with the window's raw
    seconds, so that windows can be summed (:func:`summed_activity`). None for a window of no
    wall time.

    /proc/stat counts in ticks (10 ms), while a case's window can be a few tens of
    milliseconds: one window's `other_cpu_cores` can be off by a tick over its wall time
    (0.2-0.4 cores) on an idle machine, and a window of a few milliseconds often sees no tick
    at all (it reads 0 cores busy). Summed over a case's processes, the ticks average out, so
    a window without a tick is kept as the zero it read: leaving it out would leave out the
    windows that happened to read low.
    """
    total = after.total_s - before.total_s
    if wall_s <= 0 or total < 0:
        return None
    return _reading({"window_s": wall_s,
                     "other_cpu_s": (after.busy_s - before.busy_s) - own_cpu_s,
                     "steal_cpu_s": after.steal_s - before.steal_s, "all_cpu_s": total})


WINDOW_KEYS = ("window_s", "other_cpu_s", "steal_cpu_s", "all_cpu_s")


def _reading(window: dict[str, float]) -> dict[str, float]:
    """A window's rates (`other_cpu_cores`, `steal_share`) and its raw seconds."""
    return {"other_cpu_cores": round(max(0.0, window["other_cpu_s"]) / window["window_s"], 3),
            "steal_share": (round(max(0.0, window["steal_cpu_s"]) / window["all_cpu_s"], 4)
                            if window["all_cpu_s"] > 0 else 0.0),
            **{k: round(v, 6) for k, v in window.items()}}


def summed_activity(states: list[dict[str, Any]]) -> dict[str, float] | None:
    """The activity over several processes' windows together (their seconds summed), or None
    where a window lacks its raw seconds (a record stored before they were kept)."""
    if not states or not all(all(key in s for key in WINDOW_KEYS) for s in states):
        return None
    window = {key: sum(float(s[key]) for s in states) for key in WINDOW_KEYS}
    if window["window_s"] <= 0 or window["all_cpu_s"] <= 0:
        return None
    return _reading(window)


def speed_probe_us(repeats: int = SPEED_PROBE_REPEATS) -> float:
    """This process's speed on a fixed single-thread Python loop: the fastest of `repeats`, in
    microseconds (about 0.3 ms each here).

    On a shared VM a whole process, or the whole machine for a while, can run Python 1.5x
    slower without any other process showing in /proc/stat (a busy SMT sibling, another
    tenant): the all-cores calibration does not see it, this loop does."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(SPEED_PROBE_LOOPS):
            pass
        best = min(best, time.perf_counter() - started)
    return round(best * 1e6, 2)


class ActivityProbe:
    """Brackets a stretch of this process's work (a case's samples): what else ran meanwhile,
    and how fast this process ran a fixed loop just before and just after (the one after is
    the process's speed).

    Its own CPU time is ``time.process_time`` (every thread of this process), so a kernel that
    keeps all cores busy itself does not count as a busy machine."""

    def __init__(self) -> None:
        self._speed_us = speed_probe_us()
        self._cpu = read_cpu_times()
        self._own = time.process_time()
        self._wall = time.perf_counter()

    def stop(self) -> dict[str, Any]:
        """{other_cpu_cores, steal_share (and the window's raw seconds), loadavg_1m, cpus,
        speed_probe_us, speed_probe_before_us}; without /proc/stat only the last four (the
        speed probes need no /proc/stat, and a comparison needs every process's probe to
        leave out the slow ones).

        `speed_probe_us` is the probe right after the samples. This VM's slow spells last
        tens of milliseconds, and the probe before the warm-up is that far from the samples:
        of 676 processes whose kernel ran 1.25x slower than the case's typical process, 377
        showed it in the faster of the two probes, 499 in the one after, 455 in the one
        before, which also flagged 323 processes whose samples were not slow, against 184 for
        the one after (`benchmarks/bench_stored_aa.py`, 70 repetitions)."""
        after = read_cpu_times()
        found = None if self._cpu is None or after is None else activity(
            self._cpu, after, time.process_time() - self._own, time.perf_counter() - self._wall)
        return {**(found or {}), "loadavg_1m": _loadavg()[0], "cpus": os.cpu_count(),
                "speed_probe_us": speed_probe_us(), "speed_probe_before_us": self._speed_us}


def _loadavg() -> list[float | None]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return [None, None, None]


def _all_cores_hash_ms(cores: int) -> float:
    import hashlib  # the run's calibration, in the parent: workers never need it

    data = bytes(HASH_BYTES)

    def work() -> None:
        for _ in range(HASH_ROUNDS):
            hashlib.sha256(data).digest()

    threads = [threading.Thread(target=work) for _ in range(cores)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return (time.perf_counter() - started) * 1e3


def calibrate(repeats: int = CALIBRATION_REPEATS, budget_s: float = CALIBRATION_BUDGET_S,
              kernel: Callable[[int], float] | None = None,
              clock: Callable[[], float] = time.perf_counter) -> dict[str, float]:
    """The calibration kernel's fastest repeat: `all_cores_hash_ms`, a thread per core hashing
    8 MiB each (`kernel`, for tests). The fastest is what the machine can do: a hog that holds
    a core slows every repeat, a stray interrupt only some. Repeats go on until the fastest
    `repeats` agree within CALIBRATION_AGREEMENT, or `budget_s` has passed and there are at
    least `repeats`. A start slow but steady agrees at once, as a hog does: what this waits
    out is the jittery start measured here (9.8, 8.1, then 4.9 ms)."""
    kernel = kernel or _all_cores_hash_ms
    cores = os.cpu_count() or 1
    started, times = clock(), list[float]()
    while True:
        times.append(kernel(cores))
        fastest = sorted(times)[:repeats]
        agree = len(fastest) == repeats and fastest[-1] <= fastest[0] * CALIBRATION_AGREEMENT
        if agree or (len(times) >= repeats and clock() - started >= budget_s):
            return {"all_cores_hash_ms": round(fastest[0], 3)}


def snapshot(measure: bool = True) -> dict[str, Any]:
    """The machine now: time, load average and (when `measure`) the calibration."""
    from datetime import datetime, timezone

    state: dict[str, Any] = {"at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                             "loadavg": _loadavg(), "cpus": os.cpu_count()}
    state["calibration"] = calibrate() if measure else None
    return state


class RunState:
    """The machine around a whole run: a snapshot before the first case and after the last."""

    def __init__(self, measure: bool = True) -> None:
        self._measure = measure
        self.before = snapshot(measure)

    def finish(self, complete: bool = True) -> dict[str, Any]:
        """summary.json's `environment.machine_state`. An interrupted run leaves at once: its
        `after` has no calibration."""
        state: dict[str, Any] = {"before": self.before,
                                 "after": snapshot(self._measure and complete)}
        if not self._measure:
            state["reason"] = "not measured: --debug-fake-timer runs on a fake clock"
        return state
