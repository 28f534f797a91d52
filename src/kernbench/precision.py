"""The import path kernels use for precisions: ``from kernbench.precision import dtype_for``.

A stable name of the kernel contract (README, "Write a kernel"): everything
:mod:`kernbench.measure.precision` exports, where the code lives.
"""

from kernbench.measure.precision import *  # noqa: F403
from kernbench.measure.precision import __all__ as __all__
