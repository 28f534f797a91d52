"""Energy of the timed region of one benchmark case, from whatever counter the device has.

``energy_meter_for(backend)`` picks a meter; call ``start()`` just before the timed region and
``stop()`` just after it. ``stop()`` returns the *region* reading::

    {"region_energy_j": float | None, "region_s": float, "power_w": float | None,
     "source": str | None, "method": "counter" | "sampled" | None, "reason": str | None,
     "samples": int}

``energy_record(region, calls)`` turns that into the record's ``energy`` field (energy per kernel
call). Nothing is ever estimated: where no counter can be read the values are ``None`` and
``reason`` says why. Meters never raise; a failure mid-measurement becomes ``None`` + reason.

Sources, by backend:

* ``"cuda"``: NVML. ``nvmlDeviceGetTotalEnergyConsumption`` (mJ since driver load, Volta+) read
  at start and stop (``method="counter"``); otherwise ``nvmlDeviceGetPowerUsage`` (mW) sampled
  every ``SAMPLE_INTERVAL_S`` in a background thread and integrated with the trapezoid rule over
  the measured ``time.perf_counter`` timestamps (``method="sampled"``). NVML's power reading is
  itself an average over a driver-defined window (up to 1 s on recent GPUs), so sampled energy of
  short regions is coarse; both NVML sources update at a finite rate, and a counter that does
  not advance over a region yields ``None`` rather than 0 J.
* ``"rocm"``: the ``amdsmi`` module's ``amdsmi_get_energy_count`` (count x µJ resolution), else
  ``rocm-smi --showenergycounter --json`` (each read spawns a process: coarse, for long regions);
  the GPU is found by its PCI address (``amdsmi_get_gpu_device_bdf``, rocm-smi's ``--showbus``)
  where the backend gives one, so a case on its second GPU is not charged the first one's.
* ``"cpu"``: Linux powercap RAPL package domains (``intel-rapl:N`` with a ``package-N`` name;
  AMD's driver uses the same layout), ``energy_uj`` summed over packages, wraparound corrected
  with ``max_energy_range_uj``.

NVML is initialised once per meter and left initialised (``nvmlInit`` is reference counted and
cheap to leave open for the life of a worker).

Test hooks (the only boundaries with the outside world):

* ``energy_meter_for(..., nvml=module, amdsmi=module)`` hands in a pynvml / amdsmi stand-in;
  when ``None`` the real module is imported lazily through :func:`import_optional`, which tests
  may monkeypatch to make a module look absent.
* ``energy_meter_for(..., powercap_root=path)`` (default :data:`POWERCAP_ROOT`) points RAPL at a
  fake tree.
* ``energy_meter_for(..., runner=fn)`` replaces the subprocess runner for ``rocm-smi``; ``fn``
  takes the argv list and returns stdout, raising on failure (default :func:`run_command`).
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kernbench.measure.metrics.meters import (
    NOT_ADVANCED,
    CounterMeter,
    EnergyMeter,
    MeasureError,
    NullMeter,
    Reading,
    SampledMeter,
    describe_error,
    plain_delta_j,
)

__all__ = [
    # EnergyMeter and NullMeter are what energy_meter_for hands out; the worker names them.
    "POWERCAP_ROOT", "EnergyMeter", "NullMeter", "amd_counter_uj", "energy_meter_for",
    "energy_record", "import_optional", "rapl_delta_uj", "rapl_packages", "rocm_smi_uj",
    "run_command",
]

POWERCAP_ROOT = Path("/sys/class/powercap")
ROCM_SMI_TIMEOUT_S = 2.0
ROCM_SMI_ARGV = ("rocm-smi", "--showenergycounter", "--json")

Runner = Callable[[list[str]], str]


def import_optional(name: str) -> Any:
    """Import an optional heavy module lazily (monkeypatch point for tests)."""
    return importlib.import_module(name)


def run_command(argv: list[str]) -> str:
    """Run ``argv`` with a short timeout and return its stdout; raises on any failure."""
    import subprocess  # only where rocm-smi is read: not imported by every CPU worker

    done = subprocess.run(argv, capture_output=True, text=True,
                          timeout=ROCM_SMI_TIMEOUT_S, check=True)
    return done.stdout


# --------------------------------------------------------------------------- NVML (cuda)


def _nvml_meter(device_index: int, nvml: Any | None, pci_bus_id: str | None) -> EnergyMeter:
    try:
        module = nvml if nvml is not None else import_optional("pynvml")
        module.nvmlInit()
        handle = (module.nvmlDeviceGetHandleByPciBusId(pci_bus_id) if pci_bus_id is not None
                  else module.nvmlDeviceGetHandleByIndex(device_index))
    except Exception as exc:
        return NullMeter(f"NVML not available: {describe_error(exc)}", "nvml")
    try:
        module.nvmlDeviceGetTotalEnergyConsumption(handle)
    except Exception as counter_exc:
        return _nvml_sampled(module, handle, counter_exc)

    def read_mj() -> Reading:
        return [float(module.nvmlDeviceGetTotalEnergyConsumption(handle))]

    return CounterMeter("nvml:total_energy_consumption", read_mj, plain_delta_j(1e3))


def _nvml_sampled(module: Any, handle: Any, counter_exc: BaseException) -> EnergyMeter:
    def read_w() -> float:
        return float(module.nvmlDeviceGetPowerUsage(handle)) / 1000.0

    try:
        read_w()
    except Exception as exc:
        return NullMeter("NVML reads neither the energy counter "
                         f"({describe_error(counter_exc)}) nor power usage "
                         f"({describe_error(exc)})", "nvml")
    return SampledMeter("nvml:power_usage", read_w)


# --------------------------------------------------------------------------- AMD (rocm)


def amd_counter_uj(counter: Mapping[str, Any]) -> float:
    """µJ from an ``amdsmi_get_energy_count`` dict (key names differ between amdsmi releases)."""
    count = counter.get("energy_accumulator", counter.get("power"))
    resolution = counter.get("counter_resolution")
    if count is None or resolution is None:
        raise MeasureError(f"amdsmi energy count has no counter/resolution: {sorted(counter)}")
    return float(count) * float(resolution)


def _same_bus(text: object, pci_bus_id: str) -> bool:
    from kernbench.measure.backends.device_facts import parse_bus_id

    return parse_bus_id(text) == pci_bus_id


def _amdsmi_meter(device_index: int, amdsmi: Any, pci_bus_id: str | None) -> EnergyMeter:
    """By the device's PCI address where known (the one that ran the case, whatever
    HIP_VISIBLE_DEVICES renumbered), else by `device_index`."""
    amdsmi.amdsmi_init()
    handles = amdsmi.amdsmi_get_processor_handles()
    if pci_bus_id is None:
        handle = handles[device_index]
    else:
        found = [h for h in handles if _same_bus(amdsmi.amdsmi_get_gpu_device_bdf(h),
                                                 pci_bus_id)]
        if not found:
            raise MeasureError(f"amdsmi lists no GPU at {pci_bus_id}")
        handle = found[0]

    def read_uj() -> Reading:
        return [amd_counter_uj(amdsmi.amdsmi_get_energy_count(handle))]

    read_uj()
    return CounterMeter("amdsmi:energy_count", read_uj, plain_delta_j(1e6))


def _card_entry(data: Mapping[str, Any], device_index: int,
                pci_bus_id: str | None = None) -> Mapping[str, Any]:
    cards = {k: v for k, v in data.items() if re.fullmatch(r"card\d+", k) and isinstance(v, dict)}
    if pci_bus_id is not None:  # rocm-smi numbers every card, HIP_VISIBLE_DEVICES or not
        for entry in cards.values():
            if any("pci bus" in str(key).lower() and _same_bus(value, pci_bus_id)
                   for key, value in entry.items()):
                return entry
        raise MeasureError(f"rocm-smi reported no card at {pci_bus_id} (cards: {sorted(cards)})")
    indexed = cards.get(f"card{device_index}")
    if indexed is None:
        raise MeasureError(f"rocm-smi reported no card{device_index} (cards: {sorted(cards)})")
    return indexed


def rocm_smi_uj(stdout: str, device_index: int, pci_bus_id: str | None = None) -> float:
    """µJ of ``card<device_index>`` (or of the card at `pci_bus_id`, from ``--showbus``) from
    ``rocm-smi --showenergycounter --json`` output."""
    start = stdout.find("{")
    if start < 0:
        raise MeasureError("rocm-smi printed no JSON")
    try:
        data = json.loads(stdout[start:])
    except ValueError as exc:
        raise MeasureError(f"rocm-smi JSON did not parse: {exc}") from exc
    if not isinstance(data, dict):
        raise MeasureError("rocm-smi JSON is not an object")
    entry = _card_entry(data, device_index, pci_bus_id)
    for key, value in entry.items():
        if "accumulated energy" in key.lower() and "uj" in key.lower():
            try:
                return float(value)
            except (TypeError, ValueError) as exc:
                raise MeasureError(f"rocm-smi {key!r} is not a number: {value!r}") from exc
    raise MeasureError(f"rocm-smi reported no accumulated energy for "
                       f"{pci_bus_id or f'card{device_index}'}")


def _rocm_smi_meter(device_index: int, runner: Runner, pci_bus_id: str | None) -> EnergyMeter:
    argv = [*ROCM_SMI_ARGV, *(["--showbus"] if pci_bus_id is not None else [])]

    def read_uj() -> Reading:
        return [rocm_smi_uj(runner(list(argv)), device_index, pci_bus_id)]

    read_uj()
    return CounterMeter("rocm-smi:energy_counter", read_uj, plain_delta_j(1e6))


def _amd_meter(device_index: int, amdsmi: Any | None, runner: Runner,
               pci_bus_id: str | None = None) -> EnergyMeter:
    try:
        module = amdsmi if amdsmi is not None else import_optional("amdsmi")
        return _amdsmi_meter(device_index, module, pci_bus_id)
    except Exception as exc:
        amd_error = describe_error(exc)
    try:
        return _rocm_smi_meter(device_index, runner, pci_bus_id)
    except Exception as exc:
        smi_error = describe_error(exc)
    return NullMeter(f"no AMD energy counter: amdsmi ({amd_error}); rocm-smi ({smi_error})", "amd")


# --------------------------------------------------------------------------- RAPL (cpu)


def rapl_packages(root: Path) -> list[Path]:
    """Top-level RAPL package domains under ``root`` (``intel-rapl:N`` named ``package-N``)."""
    found: list[Path] = []
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return found
    for entry in entries:
        if not re.fullmatch(r"intel-rapl:\d+", entry.name):
            continue
        try:
            name = (entry / "name").read_text(encoding="ascii").strip()
        except OSError:
            continue
        if name.startswith("package"):
            found.append(entry)
    return found


def _read_int(path: Path) -> int:
    return int(path.read_text(encoding="ascii").strip())


def rapl_delta_uj(first: int, last: int, max_range_uj: int | None) -> int:
    """Energy between two ``energy_uj`` readings, correcting one wraparound of the counter."""
    if last >= first:
        return last - first
    if max_range_uj is None:
        raise MeasureError("RAPL counter wrapped and max_energy_range_uj is not readable")
    return last + max_range_uj - first


def _rapl_delta(domains: list[Path]) -> Callable[[Reading, Reading], float]:
    def delta(first: Reading, last: Reading) -> float:
        total = 0
        for domain, a, b in zip(domains, first, last, strict=True):
            try:
                max_range: int | None = _read_int(domain / "max_energy_range_uj")
            except (OSError, ValueError):
                max_range = None
            total += rapl_delta_uj(int(a), int(b), max_range)
        if total == 0:
            raise MeasureError(NOT_ADVANCED)
        return total / 1e6

    return delta


def _rapl_meter(root: Path) -> EnergyMeter:
    domains = rapl_packages(root)
    if not domains:
        return NullMeter(f"no RAPL domains under {root}", "rapl")

    def read_uj() -> Reading:
        return [float(_read_int(domain / "energy_uj")) for domain in domains]

    try:
        read_uj()
    except PermissionError:
        return NullMeter("RAPL energy_uj not readable (permission denied): run as root or chmod "
                         f"a+r {root}/intel-rapl:*/energy_uj", "rapl")
    except (OSError, ValueError) as exc:
        return NullMeter(f"RAPL energy_uj not readable: {describe_error(exc)}", "rapl")
    return CounterMeter(f"rapl:{root}", read_uj, _rapl_delta(domains))


# --------------------------------------------------------------------------- public


def energy_meter_for(backend: str, device_index: int = 0, *, pci_bus_id: str | None = None,
                     nvml: Any | None = None,
                     amdsmi: Any | None = None, powercap_root: Path | str | None = None,
                     runner: Runner | None = None) -> EnergyMeter:
    """The best energy meter for ``backend`` ("cuda", "rocm", "cpu"); a null meter otherwise.

    ``pci_bus_id`` picks the GPU by its PCI address, NVML's spelling (the device that ran the
    case, NVIDIA or AMD), else ``device_index`` does. ``nvml`` / ``amdsmi`` /
    ``powercap_root`` / ``runner`` are test hooks (see the module doc). Never raises.
    """
    try:
        if backend == "cuda":
            return _nvml_meter(device_index, nvml, pci_bus_id)
        if backend == "rocm":
            return _amd_meter(device_index, amdsmi, runner or run_command, pci_bus_id)
        if backend == "cpu":
            return _rapl_meter(Path(powercap_root) if powercap_root is not None else POWERCAP_ROOT)
    except Exception as exc:  # a meter must never break a benchmark
        return NullMeter(f"energy meter for {backend!r} failed: {describe_error(exc)}")
    return NullMeter(f"no energy counter known for backend {backend!r}")


def energy_record(region: Mapping[str, Any] | None, calls: int,
                  includes_reset: bool = False) -> dict[str, Any]:
    """The record's ``energy`` field: per-call energy from a region reading of ``calls`` calls;
    `includes_reset` (the kernel's reset ran before each call in the region, so its energy is
    in the figure) adds ``"includes_reset": true`` to a figure."""
    record = _energy_record(region, calls)
    if includes_reset and record["energy_j"] is not None:
        record["includes_reset"] = True
    return record


def _energy_record(region: Mapping[str, Any] | None, calls: int) -> dict[str, Any]:
    if region is None:
        return {"energy_j": None, "power_w": None, "region_energy_j": None, "region_s": None,
                "calls": calls, "source": None, "method": None, "reason": "not measured"}
    region_j = region.get("region_energy_j")
    reason = region.get("reason")
    per_call: float | None = None
    if region_j is not None and calls > 0:
        per_call = float(region_j) / calls
    elif region_j is not None:
        reason = f"no kernel calls in the region (calls={calls})"
    return {"energy_j": per_call, "power_w": region.get("power_w"), "region_energy_j": region_j,
            "region_s": region.get("region_s"), "calls": calls, "source": region.get("source"),
            "method": region.get("method"), "reason": reason}
