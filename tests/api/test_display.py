"""The objects notebooks show: figures from the samples, each in a unit fit for its size."""

from __future__ import annotations

import pytest

from kernbench.api.bench import compare
from kernbench.api.display import BenchResult, format_ms
from kernbench.results.model import CaseResult


def result(samples_ms: list[float], name: str = "k", loops: int = 10,
           counts: tuple[int, ...] = ()) -> BenchResult:
    return BenchResult(CaseResult(
        kernel_name=name, kernel_path="k.py", framework="numpy", backend="cpu",
        precision="fp32", problem_size=None, status="ok", samples_ms=tuple(samples_ms),
        inner_loops=loops, process_sample_counts=counts))


@pytest.mark.parametrize(("ms", "text"), [(0.0000123, "12.3 ns"), (0.0123, "12.3 µs"),
                                          (12.3, "12.3 ms"), (12300.0, "12.3 s"),
                                          (None, "n/a")])
def test_format_ms_picks_the_unit(ms: float | None, text: str) -> None:
    assert format_ms(ms) == text


def test_repr_shows_median_iqr_and_sample_count() -> None:
    shown = result([0.001, 0.002, 0.003, 0.004, 0.005])
    assert repr(shown) == "<BenchResult k[cpu,fp32]: median 3 µs, IQR 2 µs, n=5 × 10 calls>"


def test_html_is_a_table_with_escaped_names() -> None:
    page = result([1.0] * 12, name="a<b>")._repr_html_()
    assert page.startswith("<table>") and "a&lt;b&gt;[cpu,fp32]" in page
    assert "<td style='text-align:left'>1 ms</td>" in page
    assert "12 × 10 calls" in page


def test_record_is_the_run_record_layout() -> None:
    record = result([1.0, 2.0, 3.0]).record()
    assert record["timing"]["samples_ms"] == [1.0, 2.0, 3.0]
    assert record["timing"]["latency_ms_p50"] == 2.0
    assert record["case_id"] == "k[cpu,fp32]"


def test_compare_of_a_twice_slower_candidate_is_regressed() -> None:
    base = result([1.0 + i / 1000 for i in range(3 * 10)], counts=(10, 10, 10))
    slow = result([2.0 + i / 1000 for i in range(3 * 10)], name="other", counts=(10, 10, 10))
    comparison = compare(base, slow)
    assert comparison.verdict == "regressed"
    assert comparison.ratio == pytest.approx(2.0, rel=0.02)
    assert comparison.speedup == pytest.approx(0.5, rel=0.02)
    assert "1.99x slower; regressed>" in repr(comparison)
    assert "other[cpu,fp32] vs k[cpu,fp32]" in comparison._repr_html_()
    assert compare(slow, base).verdict == "improved"


def test_compare_refuses_what_bench_did_not_return() -> None:
    from kernbench.errors import KernbenchError

    with pytest.raises(KernbenchError, match="candidate must be"):
        compare(result([1.0]), 1.0)  # type: ignore[arg-type]
