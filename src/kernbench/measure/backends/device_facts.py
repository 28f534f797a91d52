"""Facts about a GPU that every framework's backend needs alike, in one place: how large a
buffer evicts its last-level cache, and its PCI address as NVML spells it (from the device's
properties, or asked of the CUDA or HIP runtime by device ordinal where the framework gives
none, as JAX does).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

MiB = 2**20

LAST_LEVEL_CACHE_BYTES = MappingProxyType({
    # AMD Infinity Cache (a memory-side cache behind the L2), by gcnArchName. Sources: AMD
    # CDNA 3 white paper (MI300X, MI300A; MI325X is the same gfx942 die: 256 MB), AMD CDNA 4
    # white paper (MI350X, MI355X: 256 MB), AMD's Radeon product specifications (RDNA 3
    # gfx1100: RX 7900 XTX and PRO W7900, 96 MB, the largest of the parts on that die; RDNA 2
    # gfx1030: RX 6800 / 6900 XT, 128 MB). CDNA 1 and 2 (gfx908, gfx90a) have none: their L2
    # is the last level.
    "gfx942": 256 * MiB,
    "gfx950": 256 * MiB,
    "gfx1100": 96 * MiB,
    "gfx1030": 128 * MiB,
})
"""A cache behind the L2 that the device properties do not report, by architecture name."""


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return str(value or "")


def arch_name(value: object) -> str:
    """``gfx942`` of a gcnArchName such as ``gfx942:sramecc+:xnack-`` (bytes or str)."""
    return _text(value).split(":")[0].strip()


def flush_bytes(l2_bytes: int, arch: object = None) -> int:
    """Bytes of a buffer whose write evicts the device's last-level cache: twice the larger of
    its L2 and any cache behind it known for its architecture (`arch`: a gcnArchName); 0 where
    neither is known."""
    last_level = max(int(l2_bytes or 0), LAST_LEVEL_CACHE_BYTES.get(arch_name(arch), 0))
    return 2 * last_level


LARGEST_LAST_LEVEL_CACHE = max(LAST_LEVEL_CACHE_BYTES.values())
"""For a framework that reports no cache size (JAX): a flush of twice this covers every part
in the table, and any L2 up to its size."""


def nvml_bus_id(domain: int, bus: int, device: int, function: int = 0) -> str:
    """NVML's spelling of a PCI address: ``00000000:41:00.0``."""
    return f"{domain:08X}:{bus:02X}:{device:02X}.{function:X}"


def parse_bus_id(text: object) -> str | None:
    """A runtime's spelling (``0000:41:00.0``, as cudaDeviceGetPCIBusId writes it) in NVML's;
    None where it is not a PCI address."""
    raw = _text(text).strip().rstrip("\x00")
    try:
        domain, bus, rest = raw.split(":")
        device, _, function = rest.partition(".")
        return nvml_bus_id(int(domain, 16), int(bus, 16), int(device, 16),
                           int(function or "0", 16))
    except ValueError:
        return None


def bus_id_of_properties(props: Any) -> str | None:
    """The PCI address in a device's properties (``pci_bus_id``, ``pci_domain_id`` and
    ``pci_device_id``, as torch's are); None where they give none."""
    bus = getattr(props, "pci_bus_id", None)
    if bus is None:
        return None
    return nvml_bus_id(int(getattr(props, "pci_domain_id", 0) or 0), int(bus),
                       int(getattr(props, "pci_device_id", 0) or 0))


CUDART_NAMES = ("libcudart.so.12", "libcudart.so.13", "libcudart.so.11.0", "libcudart.so")
"""The CUDA runtime by soname: one JAX's CUDA plugin already loaded is found by it."""
HIP_NAMES = ("libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.7", "libamdhip64.so.5")


def _runtime_libraries(hip: bool) -> list[str]:
    """Where the runtime may be: by soname, then in the CUDA runtime wheel JAX's CUDA build
    installs (``nvidia-cuda-runtime-cu12``: ``nvidia/cuda_runtime/lib``)."""
    if hip:
        return list(HIP_NAMES)
    paths = list(CUDART_NAMES)
    try:
        spec = importlib.util.find_spec("nvidia.cuda_runtime")
    except (ImportError, ValueError):
        spec = None
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        paths += [os.path.join(folder, "lib", name) for name in CUDART_NAMES]
    return paths


def runtime_bus_id(ordinal: int, hip: bool = False,
                   load: Callable[[str], Any] = ctypes.CDLL) -> str | None:
    """The PCI address of device `ordinal` (the runtime's numbering, after
    ``CUDA_VISIBLE_DEVICES``), from ``cudaDeviceGetPCIBusId`` (``hipDeviceGetPCIBusId`` on
    ROCm), in NVML's spelling; None where no runtime library answers."""
    symbol = "hipDeviceGetPCIBusId" if hip else "cudaDeviceGetPCIBusId"
    for path in _runtime_libraries(hip):
        try:
            function = getattr(load(path), symbol)
        except (OSError, AttributeError):
            continue
        function.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
        function.restype = ctypes.c_int
        buffer = ctypes.create_string_buffer(64)
        if function(buffer, len(buffer), int(ordinal)) == 0:
            return parse_bus_id(buffer.value)
        return None  # the runtime answered: no such device
    return None
