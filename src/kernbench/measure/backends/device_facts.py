"""Facts about a GPU that every framework's backend needs alike, in one place: how large a
buffer evicts its last-level cache.
"""

from __future__ import annotations

from types import MappingProxyType

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
