"""NumPy on the CPU: its dtypes, with bf16 and fp8 from ml_dtypes (NumPy has none of its own).

CuPy arrays take the same dtype objects, so :mod:`cupy_backend` uses this table too."""

from __future__ import annotations

from types import MappingProxyType
from typing import ClassVar

from kernbench.measure.backends.base import CpuOnlyBackend, DtypeTable, dtypes_in

NUMPY_DTYPES: DtypeTable = MappingProxyType({
    **dtypes_in("numpy", ("fp64", "fp32", "fp16", "int8")),
    **dtypes_in("ml_dtypes", ("bf16", "fp8_e4m3", "fp8_e5m2")),
})


class NumpyBackend(CpuOnlyBackend):
    DTYPES: ClassVar[DtypeTable] = NUMPY_DTYPES

    def __init__(self) -> None:
        super().__init__("numpy")
