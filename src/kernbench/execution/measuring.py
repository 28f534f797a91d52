"""How a worker measures one case: bind its arguments, run the protocol with memory, energy,
machine activity and GPU state around it, then check its output and build the reply.

Everything here runs inside the worker process (:mod:`kernbench.execution.worker`), after the
case's skip rules and device check passed and its kernel module was imported.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kernbench.execution.checks import (
    NO_ACCURACY,
    accuracy,
    accuracy_failure,
    check_formula_variables,
    work_counts,
)
from kernbench.execution.contract import BoundKernel, bind_kernel
from kernbench.execution.describe import describe_device, describe_output, unevaluated
from kernbench.execution.jobs import WorkerJob, WorkerReply
from kernbench.measure.backends.base import Backend
from kernbench.measure.compiling import CompileWatch, compile_function
from kernbench.measure.gpu_record import gpu_timing_raw, missing_figure
from kernbench.measure.machine import ActivityProbe
from kernbench.measure.metrics import MetricsCollector
from kernbench.measure.metrics.energy import EnergyMeter, NullMeter, energy_meter_for, energy_record
from kernbench.measure.metrics.gpu_state import NvmlDevice, nvml_device
from kernbench.measure.metrics.memory import merge_device_memory
from kernbench.measure.precision import ignored_precision
from kernbench.measure.protocol import Outcome
from kernbench.results.measurement import NATIVE, ProtocolSettings

if TYPE_CHECKING:  # GPU timing and profiling are imported by the cases that use them
    from kernbench.measure.gpu_timing import Flush, GpuClock


class FakeClock:
    """Deterministic time for ``--debug-fake-timer``: each kernel call costs a fixed step."""

    name = "fake"

    def __init__(self, step_ns: float) -> None:
        self.now = 0.0
        self.step_ns = step_ns

    def start(self) -> object:
        return self.now

    def stop(self, token: object) -> float:
        assert isinstance(token, float)
        return self.now - token

    def wrap(self, call: Callable[[], object]) -> Callable[[], object]:
        def ticking() -> object:
            self.now += self.step_ns
            return call()
        return ticking


@dataclass(frozen=True)
class Timed:
    """What the protocol and the probes around it produced."""

    kernel: BoundKernel
    outcome: Outcome
    memory: dict[str, Any]
    energy: dict[str, Any]
    l2_flush: bool
    machine: dict[str, Any] | None
    compile: dict[str, Any] | None
    gpu_timing: dict[str, Any] | None = None


def bind(job: WorkerJob, module: ModuleType, function: Callable[..., Any],
         harness: Mapping[str, Any]) -> BoundKernel:
    """Setup and arguments: an implementation's own setup as it is, else the kernel's setup,
    whose NumPy arrays an implementation gets converted to its framework and precision."""
    impl = job.implementation
    formulas = [f for f in (job.work or {}).values() if isinstance(f, str)]
    source = job.config_source or "bench.yaml"
    check_formula_variables(job)
    if impl is None:
        return bind_kernel(module, function, job.problem_size, harness, formulas=formulas,
                           source=source)
    if impl.setup:
        return bind_kernel(module, function, job.problem_size, harness, impl.setup,
                           formulas=formulas, source=source)

    def convert(prepared: Mapping[str, Any]) -> Mapping[str, Any]:
        from kernbench.measure.convert import to_framework

        return to_framework(prepared, job.framework, job.precision, job.backend)
    return bind_kernel(module, function, job.problem_size, harness, convert=convert,
                       formulas=formulas, source=source)


def case_nvml(backend: Backend, name: str) -> NvmlDevice | None:
    """The NVML view of the device a case on `name` runs on (by its PCI bus id); None off
    CUDA, where NVML has nothing to say."""
    return nvml_device(backend.pci_bus_id(name)) if name == "cuda" else None


def measure_case(job: WorkerJob, settings: ProtocolSettings, backend: Backend,
                 module: ModuleType, function: Callable[..., Any],
                 harness: Mapping[str, Any]) -> WorkerReply:
    """Setup, the protocol with memory, energy and GPU state around it, then the checks."""
    fake = job.fake_call_ms is not None
    nvml = None if fake else case_nvml(backend, job.backend)
    gpu_before = nvml.state() if nvml is not None else None
    timed = _time_case(job, settings, backend, module, function, harness, nvml)
    gpu = None if nvml is None else {"before": gpu_before, "after": nvml.state()}
    m = timed.outcome.measurement
    output = describe_output(timed.outcome.last_result)
    if job.save_output_path is not None:
        from kernbench.measure.metrics.outputs import save_output

        save_output(timed.outcome.last_result, job.save_output_path)
    status, reason, checked = _verdict(job, timed.kernel, timed.outcome.last_result, output)
    untimed = missing_figure(timed.gpu_timing)
    if status == "ok" and untimed is not None:  # nothing to report as the case's figure
        status, reason = "skipped", untimed
    work = work_counts(job, timed.kernel, output)
    profile = None if job.profile is None else _profile(job, backend, timed.kernel)
    timed.kernel.teardown()  # last: it may free what the checks and the profile used
    return WorkerReply(
        status=status, reason=reason, samples_ns=tuple(m.samples_ns),
        inner_loops=m.inner_loops, warmup_ns=tuple(m.warmup_ns),
        warmup_s=None if fake else m.warmup_s, timer=m.timer,
        timer_overhead_ns=m.timer_overhead_ns, timer_resolution_ns=_resolution_ns(m.timer),
        memory=timed.memory, energy=timed.energy, output=output,
        device=describe_device(backend, job.backend), l2_flush=timed.l2_flush,
        work=work, machine=timed.machine, gpu_state=gpu,
        compile=timed.compile, accuracy=checked, gpu_timing=timed.gpu_timing,
        profile=profile)


def _time_case(job: WorkerJob, settings: ProtocolSettings, backend: Backend,
               module: ModuleType, function: Callable[..., Any],
               harness: Mapping[str, Any], nvml: NvmlDevice | None) -> Timed:
    """Bind (setup's allocations count as the case's memory), compile outside the protocol,
    then the protocol itself (or the GPU timing modes), with energy and machine activity."""
    name, fake = job.backend, job.fake_call_ms is not None
    settings = settled(settings, backend.settle_s(name))
    collector = MetricsCollector(settings, backend.timer(name), backend.synchronizer(name))
    clock = None if fake else backend.gpu_clock(name)
    meter = NullMeter("not measured: --debug-fake-timer runs on a fake clock") if fake \
        else _energy_meter(name, nvml, backend)
    options = job.implementation.compile if job.implementation is not None else None
    watch = CompileWatch(options) if options is not None else None
    if options is not None:
        function = compile_function(function, options)
    memory = DeviceMemory(backend, name, clock is not None, job.flush_l2 and clock is not None)
    flush = memory.start()
    with collector.measure_memory(job.trace_python) as host_memory:
        kernel = bind(job, module, function, harness)
        call = kernel.bare_call()
        if watch is not None:  # compiles outside the protocol: never in warmup or samples
            watch.first_call(call, backend.synchronizer(name))
        if job.fake_call_ms is not None:  # no settling on a fake clock: calls take no time
            fake_clock = FakeClock(job.fake_call_ms * 1e6)
            call, collector.timer = fake_clock.wrap(call), fake_clock
            collector.settings = dataclasses.replace(settings, warmup_time_s=0.0)
        if job.slowdown:
            call = slowed(call, job.slowdown)
        probe = None if fake else ActivityProbe()
        reset = kernel.reset_call()
        if clock is None:
            outcome, energy, gpu_timing = _protocol(collector, call, meter, reset)
        else:
            outcome, energy, gpu_timing = _gpu_modes(job, call, clock, flush, meter, nvml,
                                                     reset)
        machine = None if probe is None else probe.stop()
    return Timed(kernel, outcome, merge_device_memory(host_memory, memory.end()), energy,
                 memory.flush is not None, machine, None if watch is None else watch.record(),
                 gpu_timing)


@dataclass
class DeviceMemory:
    """The L2 flush buffer and the device memory reading of one case, in the order that keeps
    the buffer out of the kernel's figures: where the allocator's peak can be reset, the buffer
    is allocated first and the peak reset after it; where it cannot (JAX), the memory is read
    after the warm-up calls (which never flush) and only then is the buffer allocated."""

    backend: Backend
    name: str
    gpu: bool
    """A GPU case, timed in the GPU timing modes."""
    wanted: bool
    """A flush was asked for (not --no-l2-flush) and the case is a GPU one."""
    flush: Flush | None = None
    reading: dict[str, Any] | None = None

    @property
    def early(self) -> bool:
        return self.gpu and not self.backend.resets_device_peak(self.name)

    def start(self) -> Flush | Callable[[], Flush | None] | None:
        """Before setup: the flush, or, where the peak cannot be reset, what makes it later."""
        if self.early:
            return self.after_warmup
        self.flush = self.backend.l2_flush(self.name) if self.wanted else None
        self.backend.reset_device_memory(self.name)  # after the buffer: it is not the kernel's
        return self.flush

    def after_warmup(self) -> Flush | None:
        self.reading = self.backend.device_memory(self.name)
        self.flush = self.backend.l2_flush(self.name) if self.wanted else None
        return self.flush

    def end(self) -> dict[str, Any] | None:
        """The device memory figures: read at the end less the buffer, or read early."""
        if self.early:
            return self.reading
        return self.backend.device_memory(self.name,
                                          self.flush.bytes if self.flush is not None else 0)


def _protocol(collector: MetricsCollector, call: Callable[[], object], meter: EnergyMeter,
              reset: Callable[[], object] | None) -> tuple[Outcome, dict[str, Any], None]:
    """The CPU protocol (and a fake clock), with energy over the timed samples; `reset` runs
    untimed before every call (its energy, between the samples' calls, is in the region)."""
    region: dict[str, Any] = {}
    outcome = collector.time_execution(call, None, _metered(meter, region), reset)
    m = outcome.measurement
    return (outcome, energy_record(region, m.inner_loops * len(m.samples_ns), reset is not None),
            None)


def _energy_meter(name: str, nvml: NvmlDevice | None, backend: Backend) -> EnergyMeter:
    """The backend's meter, on the device that ran the case (by its PCI bus id: NVML's, or
    the backend's for an AMD GPU)."""
    if nvml is not None and nvml.refusal is not None:
        return NullMeter(nvml.refusal, "nvml")
    bus = nvml.pci_bus_id if nvml is not None else None
    if name == "rocm":
        try:
            bus = backend.pci_bus_id(name)
        except Exception:  # no address: the device index picks the GPU
            bus = None
    return energy_meter_for(name, pci_bus_id=bus)


def _gpu_modes(job: WorkerJob, call: Callable[[], object], clock: GpuClock,
               flush: Flush | Callable[[], Flush | None] | None, meter: EnergyMeter,
               nvml: NvmlDevice | None, reset: Callable[[], object] | None
               ) -> tuple[Outcome, dict[str, Any], dict[str, Any]]:
    """The GPU timing modes, throttled blocks discarded, energy over a hot region; `reset`
    runs untimed before every call (and in the energy region, whose figure then says so)."""
    from kernbench.measure.gpu_session import measure_gpu

    guard = nvml.guard() if nvml is not None else None
    try:
        run = measure_gpu(call, clock, flush, job.settings, job.gpu_timing, guard, meter,
                          reset=reset)
    finally:
        if guard is not None:
            guard.close()
    outcome = Outcome(run.outcome.measurement, run.outcome.last_result)
    return (outcome, energy_record(run.energy_region, run.energy_calls, reset is not None),
            gpu_timing_raw(run.outcome, job.gpu_timing))


def settled(settings: ProtocolSettings, settle_s: float) -> ProtocolSettings:
    """`settings` with a warm-up of at least `settle_s` (the backend's
    :meth:`~kernbench.measure.backends.base.Backend.settle_s`), unless warm-up is off."""
    if settings.warmup_time_s <= 0 or settings.warmup_time_s >= settle_s:
        return settings
    return dataclasses.replace(settings, warmup_time_s=settle_s)


def _verdict(job: WorkerJob, kernel: BoundKernel, value: object,
             output: Mapping[str, Any]) -> tuple[str, str | None, dict[str, Any]]:
    """Status, reason and accuracy record: a failed accuracy check, or an output whose dtype
    ignored the requested precision, fails the case."""
    checked: dict[str, Any]
    lazy = unevaluated(value)
    if lazy is not None:
        return "failed", lazy, {**NO_ACCURACY, "reason": "not checked: the case failed"}
    if job.skip_accuracy:
        checked = {**NO_ACCURACY, "reason": "checked in the case's first process"}
    else:
        # The case's precision sets the tolerance; the output's dtype only labels native kernels.
        label = job.precision if job.precision != NATIVE else output.get("precision")
        checked = accuracy(job, kernel, value, str(label or NATIVE))
        if checked.get("passed") is False:
            return "failed", accuracy_failure(checked), checked
    ignored = ignored_precision(job.precision, output["items"])
    if ignored is not None:
        return "failed", ignored, checked
    return "ok", None, checked


def _profile(job: WorkerJob, backend: Backend, kernel: BoundKernel) -> dict[str, Any]:
    """Extra calls under the requested profiler, after the samples and the accuracy check
    (so neither sees them); a profiling failure never fails the case."""
    from kernbench.measure.profiling import profile_case

    request = job.profile
    assert request is not None
    try:
        return profile_case(request.kind, kernel.call, backend.synchronizer(job.backend),
                            request.iterations, request.directory, request.case_id,
                            job.framework, job.backend)
    except Exception as exc:
        return {"path": None, "kind": request.kind,
                "reason": f"profiling failed: {type(exc).__name__}: {exc}"[:500]}


def slowed(call: Callable[[], object], factor: float) -> Callable[[], object]:
    """Testing aid (--debug-inject-slowdown): each call takes `factor` times as long, by a busy
    wait after it, so detection rates can be measured against a known, real slowdown."""
    def slow_call() -> object:
        start = time.perf_counter_ns()
        result = call()
        until = start + (time.perf_counter_ns() - start) * factor
        while time.perf_counter_ns() < until:
            pass
        return result
    return slow_call


@contextmanager
def _metered(meter: EnergyMeter, sink: dict[str, Any]) -> Iterator[None]:
    """Energy over the timed samples only (warmup and calibration excluded)."""
    meter.start()
    try:
        yield
    finally:
        sink.update(meter.stop())


def _resolution_ns(timer: str) -> float | None:
    if timer != "perf_counter_ns":
        return None
    return time.get_clock_info("perf_counter").resolution * 1e9
