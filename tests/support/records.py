"""Summary records and documents built by hand, for the findings and summary-view tests."""

from __future__ import annotations

from typing import Any


def rec(kernel: str, precision: str = "fp32", p50: float | None = 10.0, *,
        backend: str = "cpu", ci: tuple[float, float] | None = None, status: str = "ok",
        p99: float | None = None, size: Any = None, **extra: Any) -> dict[str, Any]:
    """A summary record; the CI defaults to ±1% of p50 (precise, never unstable)."""
    if p50 is not None and ci is None:
        ci = (p50 * 0.99, p50 * 1.01)
    timing = {"latency_ms_p50": p50, "latency_ms_p99": p50 if p99 is None else p99,
              "latency_ms_p50_ci95": list(ci) if ci else None}
    record = {"case_id": f"{kernel}[{backend},{precision}]", "kernel_name": kernel,
              "backend": backend, "precision": precision, "problem_size": size,
              "status": status, "reason": None, "timing": timing, "warnings": [],
              "accuracy": {"passed": None}, "memory": {"allocated_mb": None}, "work": None}
    record.update(extra)
    return record


def doc(*records: dict[str, Any], **settings: Any) -> dict[str, Any]:
    return {"results": list(records), "settings": settings}
