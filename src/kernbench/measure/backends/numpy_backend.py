"""NumPy on the CPU: its dtypes, with bf16 and fp8 from ml_dtypes (NumPy has none of its own).

CuPy arrays take the same dtype objects, so :mod:`cupy_backend` uses this table too."""

from __future__ import annotations

from types import MappingProxyType
from typing import ClassVar

from kernbench.measure.backends.base import CpuOnlyBackend, DtypeTable

NUMPY_DTYPES: DtypeTable = MappingProxyType({
    "fp64": ("numpy", "float64"),
    "fp32": ("numpy", "float32"),
    "fp16": ("numpy", "float16"),
    "bf16": ("ml_dtypes", "bfloat16"),
    "fp8_e4m3": ("ml_dtypes", "float8_e4m3fn"),
    "fp8_e5m2": ("ml_dtypes", "float8_e5m2"),
    "int8": ("numpy", "int8"),
})


class NumpyBackend(CpuOnlyBackend):
    DTYPES: ClassVar[DtypeTable] = NUMPY_DTYPES

    def __init__(self) -> None:
        super().__init__("numpy")
