"""The import path of the library API's data: ``from kernbench.model import ProtocolSettings``.

A stable name of the documented API (README, "Library API"): everything
:mod:`kernbench.results.model` exports, where the code lives, and ``COMPILE_MODES`` (the
torch.compile modes, :data:`kernbench.results.vocabulary.COMPILE_MODE_NAMES`).
"""

from kernbench.results.model import *  # noqa: F403
from kernbench.results.model import __all__ as _MODEL_ALL
from kernbench.results.vocabulary import COMPILE_MODE_NAMES as COMPILE_MODES

__all__ = [*_MODEL_ALL, "COMPILE_MODES"]
