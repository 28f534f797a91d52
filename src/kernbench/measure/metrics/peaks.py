"""Peak figures of the machine a benchmark ran on, for roofline percentages.

Two kinds of peak, never mixed up:

* **GPUs** — :data:`GPU_PEAKS` is a table of *theoretical* peaks copied from vendor spec
  sheets (each entry names its sheet in ``source`` and in a comment).  All figures are
  **dense** (no 2:4 structured sparsity: where a sheet only quotes sparse figures, they are
  halved and the comment says so).  Per precision, the figure is the highest dense one at
  that precision, so a library GEMM cannot exceed it:

  - ``fp64``: FP64 tensor-core (NVIDIA) / matrix (AMD) figure where the GPU has one, else
    the plain FP64 figure;
  - ``fp32``: on NVIDIA the plain (non-tensor) FP32 figure — TF32 rounds inputs, so it has
    its own key; on AMD CDNA the FP32 *matrix* figure (full FP32, used by rocBLAS SGEMM);
  - ``tf32``, ``fp16``, ``bf16``, ``fp8``, ``int8``: tensor-core / matrix-core figures, with
    FP32 accumulation where the vendor distinguishes (GeForce); ``int8`` is in TOPS.

  ``memory_bandwidth_gbs`` is in GB/s (1e9 bytes/s); ``l2_cache_mb`` in MiB as vendors quote
  it.  A figure the sheet does not give (or the GPU lacks) is ``None`` — never estimated.
  :func:`gpu_peak` finds the entry for a device name.

* **CPUs** — no table: :func:`probe_cpu` *measures* an attainable peak with NumPy (a large
  array copy for bandwidth, fp64/fp32 matmul for compute) and :func:`cpu_peak` caches that
  per machine fingerprint (:func:`kernbench.results.fingerprint.machine_fingerprint`).
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kernbench.results.files import write_text_atomic

__all__ = [
    "CPU_PROBE_METHOD",
    "GPU_PEAKS",
    "PRECISION_KEYS",
    "cpu_peak",
    "cpu_peak_path",
    "gpu_peak",
    "probe_cpu",
]

PRECISION_KEYS: tuple[str, ...] = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8")
"""Keys of every GPU entry's ``tflops`` mapping."""

CPU_PROBE_METHOD = "measured: numpy copy / matmul best-of-N"


def _gpu(name: str, source: str, match: Sequence[str], *, bw: float | None,
         l2: float | None, exclude: Sequence[str] = (), **tflops: float | None) -> dict[str, Any]:
    """One table entry; precisions not given are None."""
    unknown = set(tflops) - set(PRECISION_KEYS)
    if unknown:
        raise ValueError(f"unknown precision keys {sorted(unknown)}")
    return {
        "name": name, "source": source, "match": tuple(match), "exclude": tuple(exclude),
        "memory_bandwidth_gbs": bw, "l2_cache_mb": l2,
        "tflops": {key: tflops.get(key) for key in PRECISION_KEYS},
    }


_NV_DENSE = "sparsity figures halved to dense"

GPU_PEAKS: tuple[dict[str, Any], ...] = (
    # NVIDIA H100 Tensor Core GPU datasheet, "H100 SXM" column (FP64 67 = FP64 Tensor Core;
    # TF32 989*, BF16/FP16 1,979*, FP8/INT8 3,958* are sparse -> halved). L2 50 MB: NVIDIA
    # H100 Tensor Core GPU Architecture whitepaper. Device name "NVIDIA H100 80GB HBM3".
    _gpu("NVIDIA H100 SXM5 80GB",
         f"NVIDIA H100 Tensor Core GPU datasheet (H100 SXM), {_NV_DENSE}; L2 from the "
         "NVIDIA H100 architecture whitepaper",
         ("H100 80GB HBM3", "H100 SXM5 80GB"), bw=3350.0, l2=50.0,
         fp64=67.0, fp32=67.0, tf32=494.5, fp16=989.5, bf16=989.5, fp8=1979.0, int8=1979.0),
    # NVIDIA H100 Tensor Core GPU datasheet, "H100 PCIe" column (FP64 Tensor Core 51, FP32 51,
    # TF32 756*, BF16/FP16 1,513*, FP8/INT8 3,026* sparse -> halved; 2 TB/s).
    # L2 50 MB: H100 architecture whitepaper.
    _gpu("NVIDIA H100 PCIe 80GB",
         f"NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe), {_NV_DENSE}; L2 from the "
         "NVIDIA H100 architecture whitepaper",
         ("H100 PCIe",), bw=2000.0, l2=50.0,
         fp64=51.0, fp32=51.0, tf32=378.0, fp16=756.5, bf16=756.5, fp8=1513.0, int8=1513.0),
    # NVIDIA H200 Tensor Core GPU datasheet, "H200 SXM" column (same compute as H100 SXM,
    # 4.8 TB/s). The datasheet gives no L2 size. H200 NVL (lower clocks) is excluded, and
    # "GH200" does not match (whole-word matching).
    _gpu("NVIDIA H200 SXM 141GB",
         f"NVIDIA H200 Tensor Core GPU datasheet (H200 SXM), {_NV_DENSE}",
         ("H200",), exclude=("NVL",), bw=4800.0, l2=None,
         fp64=67.0, fp32=67.0, tf32=494.5, fp16=989.5, bf16=989.5, fp8=1979.0, int8=1979.0),
    # NVIDIA A100 Tensor Core GPU datasheet (dense figures are printed; FP64 19.5 = FP64
    # Tensor Core). Bandwidth per variant: 80GB SXM 2,039 GB/s, 80GB PCIe 1,935 GB/s,
    # 40GB 1,555 GB/s. No FP8. L2 40 MB: NVIDIA A100 architecture whitepaper.
    _gpu("NVIDIA A100 SXM4 80GB",
         "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM); L2 from the NVIDIA A100 "
         "architecture whitepaper",
         ("A100 SXM4 80GB",), bw=2039.0, l2=40.0,
         fp64=19.5, fp32=19.5, tf32=156.0, fp16=312.0, bf16=312.0, int8=624.0),
    _gpu("NVIDIA A100 SXM4 40GB",
         "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB SXM); L2 from the NVIDIA A100 "
         "architecture whitepaper",
         ("A100 SXM4 40GB",), bw=1555.0, l2=40.0,
         fp64=19.5, fp32=19.5, tf32=156.0, fp16=312.0, bf16=312.0, int8=624.0),
    _gpu("NVIDIA A100 PCIe 40GB",
         "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB PCIe); L2 from the NVIDIA A100 "
         "architecture whitepaper",
         ("A100 PCIe 40GB",), bw=1555.0, l2=40.0,
         fp64=19.5, fp32=19.5, tf32=156.0, fp16=312.0, bf16=312.0, int8=624.0),
    _gpu("NVIDIA A100 PCIe 80GB",
         "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB PCIe); L2 from the NVIDIA A100 "
         "architecture whitepaper",
         ("A100 80GB PCIe", "A100 PCIe 80GB"), bw=1935.0, l2=40.0,
         fp64=19.5, fp32=19.5, tf32=156.0, fp16=312.0, bf16=312.0, int8=624.0),
    # NVIDIA L40S datasheet: FP32 91.6, TF32 183, BF16/FP16 362.05, FP8 733 (dense figures
    # printed next to the sparse ones), 864 GB/s. FP64, INT8 and L2 not given there -> None.
    _gpu("NVIDIA L40S", "NVIDIA L40S datasheet (dense figures)",
         ("L40S",), bw=864.0, l2=None,
         fp32=91.6, tf32=183.0, fp16=362.05, bf16=362.05, fp8=733.0),
    # NVIDIA L4 Tensor Core GPU datasheet: FP32 30.3; TF32 120*, FP16/BF16 242*, FP8/INT8 485*
    # sparse -> halved; 300 GB/s. FP64 and L2 not given -> None.
    _gpu("NVIDIA L4", f"NVIDIA L4 Tensor Core GPU datasheet, {_NV_DENSE}",
         ("L4",), bw=300.0, l2=None,
         fp32=30.3, tf32=60.0, fp16=121.0, bf16=121.0, fp8=242.5, int8=242.5),
    # NVIDIA A10 Tensor Core GPU datasheet: FP32 31.2, TF32 62.5, BF16/FP16 125, INT8 250
    # (dense figures printed next to the sparse ones), 600 GB/s. "A10G" does not match.
    _gpu("NVIDIA A10", "NVIDIA A10 Tensor Core GPU datasheet (dense figures)",
         ("A10",), bw=600.0, l2=None,
         fp32=31.2, tf32=62.5, fp16=125.0, bf16=125.0, int8=250.0),
    # NVIDIA T4 Tensor Core GPU datasheet: FP32 8.1, mixed-precision FP16/FP32 65, INT8 130
    # TOPS, 320 GB/s. No BF16/TF32/FP8; FP64 and L2 not given -> None.
    _gpu("NVIDIA T4", "NVIDIA T4 Tensor Core GPU datasheet",
         ("T4",), bw=320.0, l2=None,
         fp32=8.1, fp16=65.0, int8=130.0),
    # NVIDIA V100 Tensor Core GPU datasheet, SXM2 column: FP64 7.8, FP32 15.7, Tensor 125
    # (FP16 inputs), 900 GB/s. L2 6 MB: NVIDIA Tesla V100 (Volta) architecture whitepaper.
    _gpu("NVIDIA V100 SXM2",
         "NVIDIA V100 Tensor Core GPU datasheet (V100 SXM2); L2 from the NVIDIA Volta "
         "architecture whitepaper",
         ("V100 SXM2",), bw=900.0, l2=6.0,
         fp64=7.8, fp32=15.7, fp16=125.0),
    # NVIDIA Ada Lovelace GPU architecture whitepaper, appendix table for GeForce RTX 4090:
    # FP32 82.6; tensor, dense, FP32 accumulate: TF32 82.6, FP16/BF16 165.2, FP8 330.3;
    # INT8 660.6 TOPS; 1,008 GB/s; L2 72 MB. The 4090 D and laptop parts are different GPUs.
    _gpu("NVIDIA GeForce RTX 4090",
         "NVIDIA Ada Lovelace GPU architecture whitepaper (GeForce RTX 4090), dense, "
         "FP32 accumulate",
         ("RTX 4090",), exclude=("RTX 4090 D", "Laptop"), bw=1008.0, l2=72.0,
         fp32=82.6, tf32=82.6, fp16=165.2, bf16=165.2, fp8=330.3, int8=660.6),
    # AMD Instinct MI300X data sheet: FP64 matrix 163.4 (vector 81.7), FP32 vector/matrix
    # 163.4, TF32 653.7, FP16/BF16 1,307.4, FP8 2,614.9, INT8 2,614.9 TOPS (all dense),
    # 5.3 TB/s. L2 32 MiB (4 per XCD; plus 256 MiB Infinity Cache): ROCm GPU hardware
    # specifications table. Figures are for the whole GPU (SPX partition mode).
    _gpu("AMD Instinct MI300X",
         "AMD Instinct MI300X data sheet (dense); L2 from the ROCm GPU specifications table",
         ("MI300X",), bw=5300.0, l2=32.0,
         fp64=163.4, fp32=163.4, tf32=653.7, fp16=1307.4, bf16=1307.4, fp8=2614.9,
         int8=2614.9),
    # AMD Instinct MI250X data sheet, per package: FP64/FP32 matrix 95.7 (vector 47.9),
    # FP16/BF16 383, INT8 383 TOPS, 3.2768 TB/s. ROCm exposes each of the two GCDs as one
    # device, so the entry holds the package figures halved (L2 8 MiB per GCD: ROCm GPU
    # specifications table). ROCm's "MI250X/MI250" name cannot tell MI250X from MI250 ->
    # excluded (None).
    _gpu("AMD Instinct MI250X (one GCD)",
         "AMD Instinct MI250X data sheet, package figures halved per GCD; L2 from the ROCm "
         "GPU specifications table",
         ("MI250X",), exclude=("MI250X/MI250",), bw=1638.4, l2=8.0,
         fp64=47.85, fp32=47.85, fp16=191.5, bf16=191.5, int8=191.5),
    # AMD Instinct MI210 data sheet: FP64/FP32 matrix 45.3 (vector 22.6), FP16/BF16 181.0,
    # INT8 181.0 TOPS, 1.6384 TB/s. L2 8 MiB: ROCm GPU specifications table.
    _gpu("AMD Instinct MI210",
         "AMD Instinct MI210 data sheet; L2 from the ROCm GPU specifications table",
         ("MI210",), bw=1638.4, l2=8.0,
         fp64=45.3, fp32=45.3, fp16=181.0, bf16=181.0, int8=181.0),
)
"""Vendor spec-sheet peaks (dense) of common GPUs; see the module docstring for conventions."""


# --------------------------------------------------------------------------------------------
# GPU lookup
# --------------------------------------------------------------------------------------------


def _normalise(text: str) -> str:
    """Lower case, ``-``/``_`` as blanks, single blanks: "A100-SXM4-80GB" -> "a100 sxm4 80gb"."""
    return " ".join(re.sub(r"[-_]", " ", text.lower()).split())


def _contains_word(name: str, pattern: str) -> bool:
    """Whether ``pattern`` is in ``name`` as whole words ("h200" is not in "gh200")."""
    regex = rf"(?<![a-z0-9]){re.escape(_normalise(pattern))}(?![a-z0-9])"
    return re.search(regex, name) is not None


def _match_length(entry: Mapping[str, Any], name: str) -> int:
    """Length of the longest pattern of ``entry`` found in ``name``; 0 when none or excluded."""
    if any(_contains_word(name, pattern) for pattern in entry.get("exclude", ())):
        return 0
    found = [len(_normalise(p)) for p in entry["match"] if _contains_word(name, p)]
    return max(found, default=0)


def _public(entry: Mapping[str, Any]) -> dict[str, Any]:
    record = {k: copy.deepcopy(v) for k, v in entry.items() if k not in ("match", "exclude")}
    record["kind"] = "gpu"
    return record


def gpu_peak(device_name: str,
             table: Sequence[Mapping[str, Any]] = GPU_PEAKS) -> dict[str, Any] | None:
    """The spec-sheet peaks of the GPU called ``device_name``, or None when it is not known.

    Matching is case-insensitive, treats ``-``/``_`` as blanks and needs whole words.  The
    entry with the longest matching pattern wins (so "H200 NVL"-style variants can have their
    own entries); a tie between different entries is ambiguous and gives None.  The result is
    a fresh copy: ``name``, ``source``, ``memory_bandwidth_gbs``, ``l2_cache_mb``, ``tflops``
    and ``kind`` ("gpu").
    """
    name = _normalise(device_name)
    scored = [(_match_length(entry, name), index) for index, entry in enumerate(table)]
    best = max((score for score, _ in scored), default=0)
    winners = [index for score, index in scored if score == best and best > 0]
    if len(winners) != 1:
        return None
    return _public(table[winners[0]])


# --------------------------------------------------------------------------------------------
# CPU probe
# --------------------------------------------------------------------------------------------


def _best_seconds(run: Callable[[], object], repeats: int, budget_s: float) -> float:
    """Shortest wall time of ``run`` over up to ``repeats`` timed calls after one warm-up.

    Stops early once ``budget_s`` is spent (at least one timed call is always made).
    """
    run()  # warm-up: page faults, BLAS thread start-up
    best = float("inf")
    deadline = time.perf_counter() + budget_s
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
        if time.perf_counter() >= deadline:
            break
    return best


def _rate(amount: float, seconds: float) -> float | None:
    """``amount / seconds / 1e9``, or None for a non-positive time."""
    return amount / seconds / 1e9 if seconds > 0 else None


def _copy_bandwidth_gbs(copy_mib: int, repeats: int, budget_s: float) -> float | None:
    import numpy as np

    count = copy_mib * 1024 * 1024 // 8
    src = np.ones(count, dtype=np.float64)
    dst = np.zeros_like(src)
    seconds = _best_seconds(lambda: np.copyto(dst, src), repeats, budget_s)
    return _rate(2.0 * src.nbytes, seconds)  # every byte is read once and written once


def _matmul_gflops(n: int, dtype: str, repeats: int, budget_s: float) -> float | None:
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    out = np.empty_like(a)
    seconds = _best_seconds(lambda: np.matmul(a, b, out=out), repeats, budget_s)
    return _rate(2.0 * n**3, seconds)


def probe_cpu(copy_mib: int = 256, matmul_n: int = 1536, repeats: int = 5,
              budget_s: float = 3.0) -> dict[str, Any]:
    """Measure this machine's attainable memory bandwidth and fp64/fp32 matmul throughput.

    Bandwidth: best ``np.copyto`` of a ``copy_mib`` MiB float64 array, counting bytes read plus
    bytes written.  Compute: best ``np.matmul`` of two ``matmul_n`` square matrices, 2·n³ flops.
    Each of the three measurements makes up to ``repeats`` timed runs after a warm-up and stops
    early after about ``budget_s / 3`` seconds.  These are measured, attainable figures (what
    NumPy and its BLAS reach here), not the CPU's theoretical peak.
    """
    started = time.perf_counter()
    share = budget_s / 3.0
    bandwidth = _copy_bandwidth_gbs(copy_mib, repeats, share)
    gflops = {"fp64": _matmul_gflops(matmul_n, "float64", repeats, share),
              "fp32": _matmul_gflops(matmul_n, "float32", repeats, share)}
    measured_at = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    return {
        "kind": "cpu",
        "source": "measured attainable peak on this machine (NumPy copy and matmul, best of N); "
                  "not the theoretical peak",
        "method": CPU_PROBE_METHOD,
        "memory_bandwidth_gbs": bandwidth,
        "gflops": gflops,
        "sizes": {"copy_mib": copy_mib, "matmul_n": matmul_n, "repeats": repeats},
        "measured_at": measured_at,
        "seconds": round(time.perf_counter() - started, 3),
    }


# --------------------------------------------------------------------------------------------
# CPU cache
# --------------------------------------------------------------------------------------------

_FINGERPRINT = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def cpu_peak_path(cache_dir: Path, fingerprint: str) -> Path:
    """Where :func:`cpu_peak` caches the probe of the machine ``fingerprint``."""
    if not _FINGERPRINT.fullmatch(fingerprint) or fingerprint.strip(".") == "":
        raise ValueError(f"fingerprint {fingerprint!r} is not a safe file-name fragment")
    return Path(cache_dir) / f"cpu_peak-{fingerprint}.json"


def _read_cached(path: Path, fingerprint: str) -> dict[str, Any] | None:
    """The cached record, or None when absent, unreadable, corrupt or for another machine."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("fingerprint") != fingerprint:
        return None
    return record


def _write_atomic(path: Path, record: Mapping[str, Any]) -> None:
    """The cached peak as sorted, strict JSON (no NaN), written atomically."""
    write_text_atomic(path, json.dumps(record, indent=2, sort_keys=True, allow_nan=False) + "\n")


def cpu_peak(cache_dir: Path, fingerprint: str,
             probe: Callable[[], dict[str, Any]] | None = None) -> dict[str, Any]:
    """This machine's measured CPU peak, probed once per ``fingerprint`` and cached.

    Reads ``cache_dir/cpu_peak-<fingerprint>.json`` when it holds a record for this
    fingerprint; otherwise (absent, corrupt, another machine's) runs ``probe`` (default
    :func:`probe_cpu`), adds ``"fingerprint"``, writes the file atomically and returns the
    record.  A cache that cannot be written is not an error: the record is still returned.
    """
    path = cpu_peak_path(cache_dir, fingerprint)
    cached = _read_cached(path, fingerprint)
    if cached is not None:
        return cached
    result = (probe or probe_cpu)()
    if not isinstance(result, dict):
        raise TypeError(f"the CPU probe returned {type(result).__name__}, not a dict")
    record = {**result, "fingerprint": fingerprint}
    # A read-only or full cache folder, or a non-finite figure: return it, probe again next time.
    with contextlib.suppress(OSError, ValueError):
        _write_atomic(path, record)
    return record
