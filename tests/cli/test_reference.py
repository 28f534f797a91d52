"""A CLI without surprises: help from one source (the README's tables included), no prefix
abbreviations, did-you-mean, `python -m kernbench`, the same -q/-v/--json in every command, and
a report format whose library is missing refused before the run."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernbench.cli.main import main
from kernbench.cli.parser import build_parser
from kernbench.cli.reference import other_table, run_table
from kernbench.config.options import COMMANDS
from support.kernel_tree import kernel, subprocess_env

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "report_run"
FAST = ("--iters", "3", "--warmup", "1", "--no-cpu-peak", "--processes", "1",
        "--debug-fake-timer", "1")


def subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions
                  if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


# -- one source for help and README ----------------------------------------------------------


def test_readme_tables_are_the_generated_ones() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert run_table() in readme, "regenerate with: python -m kernbench.cli.reference"
    assert other_table() in readme, "regenerate with: python -m kernbench.cli.reference"


def test_readme_and_help_agree_on_resume_and_max_memory() -> None:
    run_help = subparsers()["run"].format_help()
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for flag in ("--resume", "--max-memory"):
        option = next(o for c in COMMANDS for o in c.options if o.name == flag)
        assert option.help is not None
        assert " ".join(option.help.split()) in " ".join(run_help.split())
        assert f"| {option.help} |" in readme
    assert "repeat the run's flags" not in readme + run_help  # --resume alone continues


@pytest.mark.parametrize("name", [c.name for c in COMMANDS])
def test_every_argument_of_every_command_has_a_help_text(name: str) -> None:
    parser = subparsers()[name]
    missing = [a.dest for a in parser._actions if not a.help or a.help == argparse.SUPPRESS]
    assert missing == []
    assert parser.description


def test_no_parser_allows_abbreviations() -> None:
    from kernbench.ci import github, history_push

    parsers = [build_parser(), *subparsers().values(), history_push._parser(), github._parser()]
    parsers += [p for a in github._parser()._actions
                if isinstance(a, argparse._SubParsersAction) for p in a.choices.values()]
    assert all(not p.allow_abbrev for p in parsers)


# -- no surprises on the command line --------------------------------------------------------


@pytest.mark.parametrize(("argv", "message"), [
    (["run", "--iter", "3"], "unrecognized arguments: --iter (did you mean '--iters'?) 3"),
    (["run", "--outputdir=x"], "--outputdir=x (did you mean '--output-dir'?)"),
    (["history", "--limt", "3"], "(did you mean '--limit'?)"),
    (["rn"], "invalid choice: 'rn'"),
    (["rn"], "(did you mean 'run'?)"),
    (["list", "--jsn"], "(did you mean '--json'?)"),
])
def test_unknown_flags_and_commands_get_the_nearest(argv: list[str], message: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_a_prefix_is_not_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--iter", "3"])
    assert "--iters" in capsys.readouterr().err  # suggested, never taken


def test_python_dash_m_kernbench_runs_the_cli(tmp_path: Path) -> None:
    kernel(tmp_path, "axpy", "def run_benchmark(problem_size=8):\n    return problem_size\n")
    listed = subprocess.run([sys.executable, "-m", "kernbench", "list", "--json", "--root",
                             str(tmp_path)], env=subprocess_env(), capture_output=True,
                            text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert [k["name"] for k in json.loads(listed.stdout)["kernels"]] == ["axpy"]
    bad = subprocess.run([sys.executable, "-m", "kernbench", "run", "--iter", "3"],
                         env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "did you mean '--iters'?" in bad.stderr


# -- a format whose library is missing -------------------------------------------------------


def test_png_without_matplotlib_is_refused_before_the_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    kernel(tmp_path, "axpy", "def run_benchmark():\n    return 1.0\n")
    code = main(["run", "--root", str(tmp_path), "--output-dir", str(tmp_path / "out"),
                 "--format", "md,png", *FAST])
    assert code == 2
    err = capsys.readouterr().err
    assert "--format png needs matplotlib, which is not installed" in err
    assert "-m pip install 'matplotlib>=3.7'" in err
    assert not (tmp_path / "out").exists()  # refused before anything ran
    assert main(["report", str(FIXTURE), "--output-dir", str(tmp_path / "r"),
                 "--format", "all"]) == 2


# -- -q, -v and --json mean the same in every command ----------------------------------------


def command_lines(tmp_path: Path) -> dict[str, list[str]]:
    """One invocation of every command on small inputs (a kernel tree, the report fixture)."""
    kernel(tmp_path / "tree", "axpy", "def run_benchmark():\n    return 1.0\n")
    root = str(tmp_path / "tree")
    shard = tmp_path / "shard"
    shutil.copytree(FIXTURE, shard)
    return {
        "run": ["run", "--root", root, "--output-dir", str(tmp_path / "run"), *FAST],
        "list": ["list", "--root", root],
        "history": ["history", "--root", root],
        "merge": ["merge", str(tmp_path / "merged"), str(shard), "--root", root],
        "comment": ["comment", str(FIXTURE)],
        "report": ["report", str(FIXTURE), "--output-dir", str(tmp_path / "report")],
        "compare": ["compare", str(FIXTURE), str(FIXTURE), "--output-dir",
                    str(tmp_path / "cmp")],
    }


def test_every_command_is_exercised_here(tmp_path: Path) -> None:
    assert set(command_lines(tmp_path)) == {c.name for c in COMMANDS}


@pytest.mark.parametrize("name", [c.name for c in COMMANDS])
def test_quiet_and_json_mean_the_same_in_every_command(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for flag in ("-q", "-v", "--json"):
        assert flag in subparsers()[name]._option_string_actions, (name, flag)
    argv = command_lines(tmp_path)[name]
    # the fixture's failed and timed-out cases: merge exits 1 for them, as run does
    code = 1 if name == "merge" else 0
    assert main([*argv, "-q", "--json"]) == code
    captured = capsys.readouterr()
    # -q: nothing but errors and a comparison's verdict (compare, merge of --ab shards)
    verdicts = [line for line in captured.err.splitlines() if line.endswith("regressions.md")]
    assert captured.err.splitlines() == verdicts
    assert len(verdicts) == (name == "compare")
    json.loads(captured.out)  # --json: the result, as one JSON document
    assert main(argv) == code
    text = capsys.readouterr()
    assert text.out.strip() == "" or not text.out.lstrip().startswith(("{", "["))


def test_verbose_says_more_than_the_default(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    argv = command_lines(tmp_path)["list"]
    main(argv)
    plain = capsys.readouterr().err
    main([*argv, "-v"])
    assert len(capsys.readouterr().err) > len(plain)
