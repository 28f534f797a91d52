"""Report templates compile once per machine, not once per run: jinja2's bytecode cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernbench.reporting.html import html_environment
from kernbench.reporting.markdown import template_environment
from kernbench.reporting.templating import bytecode_cache


def test_compiled_templates_are_cached_under_the_users_cache_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = html_environment.__wrapped__().get_template("index.html.j2")
    cached = list((tmp_path / "kernbench" / "templates").iterdir())
    assert len(cached) == 1 and cached[0].stat().st_size > 0
    again = html_environment.__wrapped__().get_template("index.html.j2")  # from the cache
    assert again.render is not None and first is not again
    assert list((tmp_path / "kernbench" / "templates").iterdir()) == cached


def test_without_a_cache_folder_templates_are_compiled_as_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert bytecode_cache() is None
    template = template_environment.__wrapped__().get_template("regressions.md.j2")
    assert template.name == "regressions.md.j2"
