"""A hostile artifact corpus through `kernbench comment DIR --validate`, the bot's only reader.

Each broken artifact must end in one clean error line naming the file and the JSON path (exit
2, no traceback); each artifact whose strings are hostile but well-formed must render a comment
in which nothing mentions, links, references an issue or commit, or opens HTML.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kernbench.cli.main import main
from kernbench.results.schema import SCHEMA_VERSION
from support.reports import FIXTURE

Mutation = Callable[[Path], None]


def rewrite(name: str, change: Callable[[dict[str, Any]], None]) -> Mutation:
    def apply(run: Path) -> None:
        document = json.loads((run / name).read_text(encoding="utf-8"))
        change(document)
        (run / name).write_text(json.dumps(document), encoding="utf-8")
    return apply


def raw(name: str, text: str) -> Mutation:
    return lambda run: (run / name).write_text(text, encoding="utf-8")


def literal(name: str, setter: Callable[[dict[str, Any], float], None], value: str) -> Mutation:
    """Put the JSON literal `value` (NaN, 1e309...) where `setter` puts a placeholder."""
    placeholder = 7.25e-7

    def apply(run: Path) -> None:
        rewrite(name, lambda d: setter(d, placeholder))(run)
        text = (run / name).read_text(encoding="utf-8")
        (run / name).write_text(text.replace(repr(placeholder), value), encoding="utf-8")
    return apply


def sparse(size: int) -> Mutation:
    def apply(run: Path) -> None:
        (run / "summary.json").unlink()
        with open(run / "summary.json", "wb") as f:
            f.truncate(size)
    return apply


def ratio(d: dict[str, Any], v: float) -> None:
    d["cases"][0]["ratio"] = v


def p50(d: dict[str, Any], v: float) -> None:
    d["results"][0]["timing"]["latency_ms_p50"] = v


REFUSED: dict[str, tuple[Mutation, str]] = {
    "oversized": (sparse(25_000_000), "summary.json: 25000000 bytes"),
    "deeply nested": (raw("comparison.json", '{"cases": ' + "[" * 100_000 + "]" * 100_000 + "}"),
                      "comparison.json: not valid JSON"),
    "nested within limits": (rewrite("env.json", lambda d: d.update(
        gpus=[{"name": json.loads("[" * 500 + "]" * 500)}])), "env.json: $.gpus[0].name:"),
    "1e309": (literal("comparison.json", ratio, "1e309"), "$.cases[0].ratio: expected a finite"),
    "NaN": (literal("summary.json", p50, "NaN"), "$.results[0].timing.latency_ms_p50:"),
    "-Infinity": (literal("comparison.json", ratio, "-Infinity"), "$.cases[0].ratio:"),
    "400-digit integer": (literal("comparison.json", ratio, "9" * 400), "400 digits"),
    "newer schema": (rewrite("summary.json", lambda d: d.update(schema_version=SCHEMA_VERSION + 1)),
                     "summary.json: $.schema_version:"),
    "schema version 0": (rewrite("comparison.json", lambda d: d.update(schema_version=0)),
                         "comparison.json: $.schema_version: expected a number >= 1"),
    "schema version text": (rewrite("env.json", lambda d: d.update(schema_version="2")),
                            "env.json: $.schema_version: expected an integer"),
    "environment block": (rewrite("summary.json", lambda d: d["environment"].update(
        cpu={"model": {"html": "<b>"}})), "summary.json: $.environment.cpu.model:"),
    "not an object": (raw("env.json", "[1, 2]"), "env.json: $: expected an object"),
}

NAMES = [
    "@octocat please look", "cc @acme/security-team", "fixes #1 and GH-2 and acme/kernels#3",
    "commit c305d4b8da5b0123456789abcdef0123456789ab", "https://evil.example/login",
    "www.evil.example", "[click](https://evil.example)", "<img src=x onerror=alert(1)>",
    "</details><script>x</script>", "<!-- kernbench-comment -->", "&#64;octocat &#35;12",
]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    target = tmp_path / "artifact"
    shutil.copytree(FIXTURE, target)
    (target / "history.json").unlink()
    return target


def comment(run: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["comment", str(run), "--validate", "--from-fork", "mallory/kernels"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", list(REFUSED))
def test_broken_artifacts_are_refused_cleanly(run: Path, capsys: pytest.CaptureFixture[str],
                                              case: str) -> None:
    mutate, expected = REFUSED[case]
    mutate(run)
    code, out, err = comment(run, capsys)
    assert (code, out) == (2, "")
    assert err.startswith("kernbench: error: ") and err.count("\n") == 1, err
    assert expected in err and "Traceback" not in err


def poison_names(name: str) -> Mutation:
    def summary(d: dict[str, Any]) -> None:
        for r in d["results"]:
            r.update(kernel_name=name, case_id=f"{name}[cpu]", reason=name)
        d["environment"]["cpu"]["model"] = name

    def comparison(d: dict[str, Any]) -> None:
        for c in d["cases"]:
            c.update(key=name, label=name, note=name)
        d["warnings"] = [name]
        d["baseline"].update(machine=name, source=name, commit=name)

    def apply(run: Path) -> None:
        rewrite("summary.json", summary)(run)
        rewrite("comparison.json", comparison)(run)
        rewrite("env.json", lambda d: d.update(gpus=[{"name": name}], fingerprint=name))(run)
    return apply


@pytest.mark.parametrize("name", NAMES)
def test_hostile_names_render_inert(run: Path, capsys: pytest.CaptureFixture[str],
                                    name: str) -> None:
    poison_names(name)(run)
    code, out, err = comment(run, capsys)
    assert (code, err) == (0, "")
    prose = re.sub(r"(?<!\\)`[^`\n]*`", "", out)  # code spans link nothing
    assert re.search(r"@[A-Za-z0-9]", out) is None
    assert re.search(r"(?i)(#|\bGH-)[0-9]", prose) is None
    assert re.search(r"[0-9a-fA-F]{7,}", prose) is None
    assert "://" not in out and "www." not in prose
    assert re.findall(r"(?<!\\)<[A-Za-z/!][^ >]*", out) == [
        "<!--", "<details", "<summary", "</summary", "</details"]
    assert out.count("<!-- kernbench-comment -->") == 1
    assert "fork `mallory/kernels`" in out
