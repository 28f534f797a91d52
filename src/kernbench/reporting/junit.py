"""junit.xml: one testcase per case of a run, for CI test reporters (see :func:`render_junit`).

Like the other exports (:mod:`kernbench.reporting.exports`), the renderer is pure: the same
documents give byte-identical output. Where a run holds two cases with the same case id, the
testcase names get the compact problem size appended (:func:`views.case_names`); comparison
cases are matched to results by :func:`views.matched_cases`.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from kernbench.reporting.bundle import ReportInputs
from kernbench.reporting.views import (
    Record,
    case_names,
    ci95_bounds,
    compact_json,
    dig,
    exact_text,
    finite,
    mappings,
    matched_cases,
)

__all__ = ["render_junit"]

_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(value: Any) -> str:
    """Text XML 1.0 can carry: characters it forbids (ANSI escapes, NUL) become \\xNN."""
    text = exact_text(value) or ""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _seconds(value: Any) -> str:
    found = finite(value)
    return f"{found if found is not None and found > 0 else 0:.6f}"


def _failure_text(record: Record) -> str:
    """The reason, then the worker's traceback and stderr tail when they hold anything."""
    parts = [str(record.get("reason") or record.get("status"))]
    for title, key in (("traceback", "traceback"), ("stderr (tail)", "stderr_tail")):
        found = dig(record, "worker", key)
        if isinstance(found, str) and found.strip():
            parts.append(f"--- {title} ---\n{found.rstrip()}")
    return "\n\n".join(parts)


def _lines(block: Any, keys: Iterable[str]) -> str:
    """``key: value`` lines for the keys of `block` that hold a value."""
    found = ((key, exact_text(dig(block, key))) for key in keys)
    return "\n".join(f"{key}: {text}" for key, text in found if text is not None)


def _golden_failure(record: Record) -> tuple[str, str, str] | None:
    golden = record.get("golden")
    if dig(golden, "passed") is not False:
        return None
    message = str(dig(golden, "reason") or "over the golden limit")
    details = _lines(golden, ("sku", "golden_sku", "golden_time_ms", "tolerance_multiplier",
                              "limit_ms", "measured_ms", "exceeded_by_pct"))
    return "golden", message, f"{message}\n{details}".rstrip()


def _regression(case: Record | None) -> tuple[str, str, str] | None:
    if dig(case, "verdict") != "regressed":
        return None
    message = (f"regressed: ratio {exact_text(dig(case, 'ratio'))} (candidate / baseline), "
               f"interval [{exact_text(dig(case, 'ci_low'))}, {exact_text(dig(case, 'ci_high'))}], "
               f"q {exact_text(dig(case, 'q_value'))}")
    details = _lines(case, ("threshold", "method", "baseline_p50_ms", "candidate_p50_ms",
                            "p_value", "note"))
    return "regression", message, f"{message}\n{details}".rstrip()


def _outcome(record: Record, case: Record | None) -> tuple[str, str, str, str] | None:
    """(element, type, message, text) of a case that did not pass, or None."""
    status = str(record.get("status"))
    reason = str(record.get("reason") or status)
    if status == "skipped":
        return "skipped", "skipped", reason, ""
    if status in ("failed", "timeout"):
        golden = _golden_failure(record) if status == "failed" else None
        if golden is not None:
            return "failure", golden[0], reason, f"{golden[2]}\n\n{_failure_text(record)}"
        return "failure", status, reason, _failure_text(record)
    if status != "ok":
        return "error", status, reason, _failure_text(record)
    found = _golden_failure(record) or _regression(case)
    return None if found is None else ("failure", *found)


def _properties(parent: ET.Element, values: Mapping[str, Any]) -> None:
    present = {key: value for key, value in values.items() if value is not None}
    if present:
        block = ET.SubElement(parent, "properties")
        for key, value in present.items():
            ET.SubElement(block, "property", name=key, value=_xml_text(value))


def _case_facts(record: Record, case: Record | None) -> dict[str, Any]:
    low, high = ci95_bounds(record)
    size = record.get("problem_size")
    return {"status": record.get("status"), "backend": record.get("backend"),
            "precision": record.get("precision"),
            "problem_size": None if size is None else compact_json(size),
            "latency_ms_p50": dig(record, "timing", "latency_ms_p50"),
            "latency_ms_p50_ci95_low": low, "latency_ms_p50_ci95_high": high,
            "comparison_verdict": dig(case, "verdict"), "comparison_ratio": dig(case, "ratio"),
            "comparison_q_value": dig(case, "q_value")}


def _testcase(record: Record, name: str, case: Record | None) -> tuple[ET.Element, str | None]:
    element = ET.Element("testcase", classname=_xml_text(f"kernbench.{record.get('kernel_name')}"),
                         name=_xml_text(name), time=_seconds(record.get("duration_s")))
    facts = _case_facts(record, case)
    _properties(element, facts)
    outcome = _outcome(record, case)
    if outcome is not None:
        tag, kind, message, text = outcome
        child = ET.SubElement(element, tag, message=_xml_text(message))
        if tag != "skipped":
            child.set("type", kind)
        child.text = _xml_text(text) or None
    summary = _lines(facts, ("status", "latency_ms_p50", "latency_ms_p50_ci95_low",
                             "latency_ms_p50_ci95_high", "comparison_verdict",
                             "comparison_ratio", "comparison_q_value"))
    ET.SubElement(element, "system-out").text = _xml_text(summary)
    return element, None if outcome is None else outcome[0]


def _unfinished(ran: int) -> tuple[ET.Element, str]:
    """The testcase that fails a run that did not finish: its other cases never ran, and a
    report of only the cases that did would read as a clean pass."""
    element = ET.Element("testcase", classname="kernbench", name="run finished", time=_seconds(0))
    message = (f"the run did not finish (interrupted or killed): only the {ran} cases above "
               "ran; finish it with kernbench run --resume DIR")
    ET.SubElement(element, "error", message=message, type="incomplete")
    return element, "error"


def _suite_attributes(inputs: ReportInputs, tags: Iterable[str | None],
                      tests: int) -> dict[str, str]:
    counts = Counter(tags)
    total = sum(finite(r.get("duration_s")) or 0 for r in mappings(inputs.results))
    return {"name": "kernbench", "tests": str(tests), "failures": str(counts["failure"]),
            "errors": str(counts["error"]), "skipped": str(counts["skipped"]),
            "time": _seconds(total)}


def render_junit(inputs: ReportInputs) -> str:
    """junit.xml: ``<testsuites>`` holding one ``<testsuite name="kernbench">``, one
    ``<testcase classname="kernbench.<kernel>" name="<case id>" time="<duration_s>">`` per case.

    Outcomes: failed -> ``<failure type="failed">``; a failed case whose golden check did not
    pass -> ``<failure type="golden">``; timeout -> ``<failure type="timeout">`` (the text holds
    the reason, the worker's traceback and stderr tail when present); skipped -> ``<skipped>``;
    invalid (or any other status) -> ``<error>``; an ok case whose comparison verdict is
    ``regressed`` -> ``<failure type="regression">`` with the ratio, its interval and q; an ok
    case over its golden limit -> ``<failure type="golden">``. Each testcase carries its
    median, interval and comparison verdict as ``<properties>`` (as pytest writes them) and in
    ``<system-out>``. A run that did not finish (``complete: false``) gets one more testcase,
    ``kernbench / run finished``, with ``<error type="incomplete">``. Suite ``time`` is the sum
    of the cases' durations; ``timestamp`` is the run's ``started_at``.
    """
    results = mappings(inputs.results)
    cases = matched_cases(results, inputs.comparison)
    built = [_testcase(record, name, case) for record, name, case
             in zip(results, case_names(results), cases, strict=True)]
    if inputs.summary.get("complete") is False:
        built.append(_unfinished(len(results)))
    attributes = _suite_attributes(inputs, (tag for _, tag in built), len(built))
    root = ET.Element("testsuites", attributes)
    suite = ET.SubElement(root, "testsuite", attributes)
    for key, value in (("timestamp", inputs.summary.get("started_at")),
                       ("hostname", inputs.environment.get("hostname"))):
        if value is not None:
            suite.set(key, _xml_text(value))
    _properties(suite, {"kernbench_version": inputs.summary.get("kernbench_version"),
                        "commit": dig(inputs.environment, "git", "commit"),
                        "fingerprint": inputs.environment.get("fingerprint")})
    suite.extend(element for element, _ in built)
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'
