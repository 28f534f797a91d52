"""GPU hygiene facts through NVML for records: clocks, temperature, power, throttle reasons.

``gpu_state(device_index)`` reads each fact with its own NVML query, so one query that fails
(unsupported on the board, permission) leaves that field ``None`` and keeps the others. Without
NVML (no ``pynvml``, no driver, no device) it returns ``{"source": None, "reason": ...}``.

``throttled`` is True when any clocks-event ("throttle") reason other than GpuIdle or
ApplicationsClocksSetting is set: those two mean the clocks are low because the GPU is idle or
pinned on purpose, not because power or heat held it back. Unknown bits count as throttling and
are named ``Unknown(0x...)`` so nothing is lost.

``pynvml`` is imported lazily; pass ``nvml=`` a stand-in module to test without a GPU.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernbench.results.vocabulary import BENIGN_THROTTLE_REASONS

# (name, pynvml constant, value from nvml.h for when pynvml is absent or lacks the constant)
THROTTLE_REASONS: tuple[tuple[str, str, int], ...] = (
    ("GpuIdle", "nvmlClocksThrottleReasonGpuIdle", 0x1),
    ("ApplicationsClocksSetting", "nvmlClocksThrottleReasonApplicationsClocksSetting", 0x2),
    ("SwPowerCap", "nvmlClocksThrottleReasonSwPowerCap", 0x4),
    ("HwSlowdown", "nvmlClocksThrottleReasonHwSlowdown", 0x8),
    ("SyncBoost", "nvmlClocksThrottleReasonSyncBoost", 0x10),
    ("SwThermalSlowdown", "nvmlClocksThrottleReasonSwThermalSlowdown", 0x20),
    ("HwThermalSlowdown", "nvmlClocksThrottleReasonHwThermalSlowdown", 0x40),
    ("HwPowerBrakeSlowdown", "nvmlClocksThrottleReasonHwPowerBrakeSlowdown", 0x80),
    ("DisplayClockSetting", "nvmlClocksThrottleReasonDisplayClockSetting", 0x100),
    ("BoardLimit", "nvmlClocksThrottleReasonBoardLimit", 0x200),
    ("Reliability", "nvmlClocksThrottleReasonReliability", 0x400),
)
KEPT_REASONS = BENIGN_THROTTLE_REASONS | {"SwPowerCap"}
"""Reasons that do not discard a block. ``SwPowerCap`` is a power-hungry kernel's own steady
state, not a disturbance: on an H100 (700 W limit) a 4,096-squared bf16 matmul held it in 86 of
100 NVML reads, at 594 W median and 1,680 of 1,980 MHz, and it lingered in 23 of 100 reads of
the idle second after. Discarding it failed such kernels outright ("throttled throughout") and
discarded short kernels timed just after them. The record still names it (``throttle_reasons``
before and after sampling, the ``gpu_throttled`` warning); a clock under
:data:`MIN_CLOCK_SHARE` of the maximum is still discarded, whatever the reason."""
_CLOCK_SM, _CLOCK_MEM, _TEMPERATURE_GPU = 1, 2, 0  # nvml.h values, used if pynvml lacks them


def _load_nvml(nvml: Any | None) -> Any:
    return nvml if nvml is not None else importlib.import_module("pynvml")


def _reason_table(nvml: Any | None) -> list[tuple[str, int]]:
    if nvml is None:
        try:
            nvml = _load_nvml(None)
        except Exception:
            nvml = None
    return [(name, int(getattr(nvml, const, value))) for name, const, value in THROTTLE_REASONS]


def throttle_flags(reasons_bitmask: int, nvml: Any | None = None) -> list[str]:
    """Names of the clocks-event reasons set in ``reasons_bitmask`` (pynvml's constants)."""
    names: list[str] = []
    known = 0
    for name, bit in _reason_table(nvml):
        known |= bit
        if reasons_bitmask & bit:
            names.append(name)
    unknown = reasons_bitmask & ~known
    bit = 1
    while unknown:
        if unknown & bit:
            names.append(f"Unknown({bit:#x})")
            unknown &= ~bit
        bit <<= 1
    return names


def _query(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception:
        return None


def _watts(milliwatts: Any) -> float | None:
    return float(milliwatts) / 1000.0 if milliwatts is not None else None


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value) if value is not None else None


def _reasons_bitmask(nvml: Any, handle: Any) -> int | None:
    """Newer NVML calls it clocks-event reasons; older releases only have the throttle name."""
    for getter in ("nvmlDeviceGetCurrentClocksEventReasons",
                   "nvmlDeviceGetCurrentClocksThrottleReasons"):
        try:
            return int(getattr(nvml, getter)(handle))
        except Exception:
            continue
    return None


def _read_state(nvml: Any, handle: Any) -> dict[str, Any]:
    sm = getattr(nvml, "NVML_CLOCK_SM", _CLOCK_SM)
    mem = getattr(nvml, "NVML_CLOCK_MEM", _CLOCK_MEM)
    temp = getattr(nvml, "NVML_TEMPERATURE_GPU", _TEMPERATURE_GPU)
    state: dict[str, Any] = {
        "name": _text(_query(lambda: nvml.nvmlDeviceGetName(handle))),
        "sm_clock_mhz": _query(lambda: nvml.nvmlDeviceGetClockInfo(handle, sm)),
        "mem_clock_mhz": _query(lambda: nvml.nvmlDeviceGetClockInfo(handle, mem)),
        "max_sm_clock_mhz": _query(lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, sm)),
        "temperature_c": _query(lambda: nvml.nvmlDeviceGetTemperature(handle, temp)),
        "power_w": _watts(_query(lambda: nvml.nvmlDeviceGetPowerUsage(handle))),
        "power_limit_w": _watts(_query(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle))),
    }
    bitmask = _reasons_bitmask(nvml, handle)
    reasons = throttle_flags(bitmask, nvml) if bitmask is not None else None
    state["throttle_reasons"] = reasons
    state["throttled"] = (any(r not in BENIGN_THROTTLE_REASONS for r in reasons)
                          if reasons is not None else None)
    state["source"] = "nvml"
    return state


def _handle(module: Any, device_index: int, pci_bus_id: str | None) -> Any:
    if pci_bus_id is not None:
        return module.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
    return module.nvmlDeviceGetHandleByIndex(device_index)


def gpu_state(device_index: int = 0, nvml: Any | None = None,
              pci_bus_id: str | None = None) -> dict[str, Any]:
    """Clocks, temperature, power and throttle reasons of one GPU (by PCI bus id where given,
    the device that ran the case; else by index); never raises."""
    try:
        module = _load_nvml(nvml)
        module.nvmlInit()
    except Exception as exc:
        return {"source": None, "reason": f"NVML not available: {type(exc).__name__}: {exc}"}
    device = pci_bus_id if pci_bus_id is not None else device_index
    try:
        state = _read_state(module, _handle(module, device_index, pci_bus_id))
        if pci_bus_id is not None:
            state["pci_bus_id"] = pci_bus_id
        return state
    except Exception as exc:
        return {"source": None, "reason": f"NVML device {device}: {type(exc).__name__}: {exc}"}
    finally:
        _query(lambda: module.nvmlShutdown())


MIN_CLOCK_SHARE = 0.75
"""A block whose SM clock is under this share of the maximum is discarded."""


class ThrottleGuard:
    """Reads throttle reasons and the SM clock before and after each block of calls; a block
    with a throttle reason (other than idle, pinned clocks or the power cap: :data:`KEPT_REASONS`)
    or a low SM clock at either read is discarded. An idle GPU's low clock says nothing of the
    block, and clocks pinned on purpose (application clocks, ``nvidia-smi -ac``) are what the
    user asked for: neither is held against it.
    """

    def __init__(self, nvml: Any, handle: Any) -> None:
        self._nvml, self._handle = nvml, handle
        self._sm = getattr(nvml, "NVML_CLOCK_SM", _CLOCK_SM)
        self._max_sm = _query(lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, self._sm))
        self._before: str | None = None
        self._open = True

    def close(self) -> None:
        """Let NVML go (its init is counted: the guard's own is undone, once)."""
        if self._open:
            self._open = False
            _query(lambda: self._nvml.nvmlShutdown())

    def begin(self) -> None:
        self._before = self._problem()

    def end(self) -> str | None:
        after = self._problem()
        return self._before or after

    def _problem(self) -> str | None:
        bitmask = _reasons_bitmask(self._nvml, self._handle)
        reasons = throttle_flags(bitmask, self._nvml) if bitmask is not None else []
        throttled = [r for r in reasons if r not in KEPT_REASONS]
        if throttled:
            return f"throttled: {', '.join(throttled)}"
        if "GpuIdle" in reasons or "ApplicationsClocksSetting" in reasons or not self._max_sm:
            return None  # idle, or clocks pinned below the maximum on purpose
        sm = _query(lambda: self._nvml.nvmlDeviceGetClockInfo(self._handle, self._sm))
        if sm is not None and sm < MIN_CLOCK_SHARE * self._max_sm:
            return f"SM clock under {MIN_CLOCK_SHARE:.0%} of its maximum ({self._max_sm} MHz)"
        return None


def block_guard(pci_bus_id: str | None, nvml: Any | None = None) -> ThrottleGuard | None:
    """A guard on the device at `pci_bus_id` (index 0 where unknown); None without NVML. It
    holds NVML initialised until :meth:`ThrottleGuard.close`."""
    try:
        module = _load_nvml(nvml)
        module.nvmlInit()
    except Exception:
        return None
    try:
        return ThrottleGuard(module, _handle(module, 0, pci_bus_id))
    except Exception:
        _query(lambda: module.nvmlShutdown())
        return None


@dataclass(frozen=True)
class NvmlDevice:
    """The GPU that ran a case, as NVML is to read it: by its PCI bus id, or index 0 where the
    machine has one GPU; `refusal` says why NVML must not be read for it at all."""

    pci_bus_id: str | None = None
    refusal: str | None = None

    def state(self, nvml: Any | None = None) -> dict[str, Any]:
        """:func:`gpu_state` of the device, or null with the refusal."""
        if self.refusal is not None:
            return {"source": None, "reason": self.refusal}
        return gpu_state(nvml=nvml, pci_bus_id=self.pci_bus_id)

    def guard(self, nvml: Any | None = None) -> ThrottleGuard | None:
        """:func:`block_guard` on the device; None where it must not be read."""
        return None if self.refusal is not None else block_guard(self.pci_bus_id, nvml)


def nvml_device(pci_bus_id: str | None, nvml: Any | None = None) -> NvmlDevice:
    """The case's device by `pci_bus_id`; without one, index 0 stands for it only where NVML
    sees a single GPU: on a machine with several, index 0 may be another GPU, so NVML's
    figures are null with the reason rather than another device's (never raises)."""
    if pci_bus_id is not None:
        return NvmlDevice(pci_bus_id)
    try:
        module = _load_nvml(nvml)
        module.nvmlInit()
    except Exception:
        return NvmlDevice()  # no NVML: each reader says so itself
    try:
        count = int(module.nvmlDeviceGetCount())
    except Exception:
        count = 0
    finally:
        _query(lambda: module.nvmlShutdown())
    if count > 1:
        return NvmlDevice(refusal=f"NVML not read: the PCI bus id of the GPU that ran the "
                                  f"case is unknown and NVML sees {count} GPUs, so index 0 "
                                  "may be another one")
    return NvmlDevice()
