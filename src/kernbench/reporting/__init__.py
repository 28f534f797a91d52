"""ReportGenerator: writes the report set under the output directory.

Files (all JSON carries ``schema_version``): ``env.json``, ``kernel_manifest.json``,
``kernels/<name>.json`` (rewritten atomically after each of that kernel's cases),
``summary.json`` and ``summary.md``. Every write goes to a temporary file first and is renamed
into place, so a run killed half-way leaves valid files for everything that finished.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernbench.analysis.summary import machine_of, record_dict, summary_dict
from kernbench.results.files import safe_filename, write_json_atomic, write_text_atomic
from kernbench.results.model import CaseResult, RunResult
from kernbench.results.schema import SCHEMA_VERSION

__all__ = ["ReportGenerator"]


class ReportGenerator:
    """Writes every report file of a run into `output_dir`."""

    def __init__(self, output_dir: str | os.PathLike[str]) -> None:
        self.output_dir = Path(output_dir)
        self._machine: dict[str, Any] = {"fingerprint": None, "testbed": None}
        """The machine the records name, from the environment written."""

    def write_environment(self, environment: Mapping[str, Any]) -> Path:
        self._machine = machine_of(environment)
        return write_json_atomic(self.output_dir / "env.json",
                                 {"schema_version": SCHEMA_VERSION, **environment})

    def write_manifest(self, manifest: Mapping[str, Any]) -> Path:
        return write_json_atomic(self.output_dir / "kernel_manifest.json", dict(manifest))

    def kernel_path(self, kernel_name: str) -> Path:
        return self.output_dir / "kernels" / f"{safe_filename(kernel_name)}.json"

    def write_kernel(self, kernel_name: str, kernel: Mapping[str, Any] | None,
                     results: Sequence[CaseResult]) -> Path:
        """All finished cases of one kernel: {schema_version, kernel_name, kernel, results}."""
        document = {"schema_version": SCHEMA_VERSION, "kernel_name": kernel_name,
                    "kernel": dict(kernel) if kernel else None,
                    "results": [{**record_dict(r), **self._machine} for r in results]}
        return write_json_atomic(self.kernel_path(kernel_name), document)

    def write_summary(self, run: RunResult) -> list[Path]:
        """summary.json and summary.md."""
        from kernbench.reporting.markdown import render_summary

        document = summary_dict(run)
        json_path = write_json_atomic(self.output_dir / "summary.json", document,
                                      one_line_items=True)
        md_path = write_text_atomic(self.output_dir / "summary.md",
                                    render_summary(document, run.environment))
        return [json_path, md_path]
