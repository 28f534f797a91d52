"""RunSettings: the per-case limit is checked however the settings are made."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kernbench.errors import KernbenchError
from kernbench.execution.settings import RunSettings


@pytest.mark.parametrize("timeout_s", [math.inf, math.nan, 1e10, 604_801, 0, -1.0])
def test_a_timeout_the_waits_cannot_take_is_refused(timeout_s: float) -> None:
    """The library API and a resumed run's recorded settings bypass the flag's check; an
    infinite or huge limit overflowed the wait for the worker (`OverflowError`)."""
    with pytest.raises(KernbenchError, match="timeout_s: expected a finite number of seconds "
                                             "> 0 and at most 604800 \\(one week\\)"):
        RunSettings(root=Path("."), timeout_s=timeout_s)


@pytest.mark.parametrize("timeout_s", [0.001, 300.0, 604_800])
def test_timeouts_up_to_a_week_are_kept(timeout_s: float) -> None:
    assert RunSettings(root=Path("."), timeout_s=timeout_s).timeout_s == timeout_s
