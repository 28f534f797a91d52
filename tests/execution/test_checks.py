"""The reason a failed accuracy check gives: the figure that exceeded its tolerance, or the
check's own words where no figure says it."""

from __future__ import annotations

import numpy as np

from kernbench.execution.checks import accuracy_failure
from kernbench.measure.metrics.accuracy import compute_accuracy


def reason(output: object, reference: object) -> str:
    return accuracy_failure(compute_accuracy(output, reference, "fp32", None))


def test_an_exceeded_figure_is_named_with_its_tolerance() -> None:
    text = reason(np.array([1.0, 2.5], np.float32), np.array([1.0, 2.0]))
    assert text.startswith("accuracy check failed: relative_error ") and "> 1e-05" in text


def test_a_zero_reference_says_inf_not_none() -> None:
    """relative_error is null (the reference norm is zero): it read 'None > 1e-05'."""
    text = reason(np.full(3, 1e-3, np.float32), np.zeros(3))
    assert text == "accuracy check failed: relative_error inf > 1e-05"


def test_nan_positions_are_named_not_see_accuracy() -> None:
    text = reason(np.array([1.0, 2.0], np.float32), np.array([np.nan, 2.0]))
    assert text == ("accuracy check failed: 1 positions where the reference is NaN/inf and "
                    "the output differs")
