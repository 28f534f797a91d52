"""CLI tests: `kernbench.cli.main.main(argv)` on small temporary kernel trees.

Each run spawns real worker processes on tiny NumPy kernels; `--debug-fake-timer` is used
wherever exact figures are asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kernbench.cli.main import main
from kernbench.cli.parser import build_parser
from kernbench.results.schema import SCHEMA_VERSION
from support.gpus import gpu_listed
from support.kernel_tree import FAST, SRC

GOOD = """
import numpy as np

def run_benchmark():
    return np.ones(4, dtype=np.float32) * 2
"""

FP64 = """
import numpy as np

def run_benchmark():
    return np.zeros(3)
"""

PRECISION_AWARE = """
import json
from pathlib import Path

import numpy as np

def run_benchmark(precision):
    seen = {"type": type(precision).__name__, "value": precision}
    Path(__file__).with_name(f"seen_{precision}.json").write_text(json.dumps(seen))
    return np.zeros(4, dtype=np.float16 if precision == "fp16" else np.float32)
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def run_cli(capsys: pytest.CaptureFixture[str], root: Path, out: Path,
            *extra: str) -> tuple[int, dict[str, Any] | None, str]:
    """Run `kernbench run`; returns (exit code, summary.json or None, stderr)."""
    code = main(["run", "--root", str(root), "--output-dir", str(out), *FAST, *extra])
    err = capsys.readouterr().err
    summary_path = out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else None
    return code, summary, err


def by_case(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["case_id"]: r for r in summary["results"]}


def listed_names(stdout: str) -> list[str]:
    """Kernel names from the text manifest (first line is the header)."""
    return [line.split()[0] for line in stdout.splitlines()[1:] if line.strip()]


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    return env


# -- precision ------------------------------------------------------------------------------


def test_declared_precisions_run_one_case_each_and_pass_the_string(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = write(tmp_path / "kernels" / "scale" / "scale.py", PRECISION_AWARE)
    write(kernel.with_name("bench.yaml"), "precisions: [fp32, fp16]\n")
    code, summary, _ = run_cli(capsys, tmp_path, tmp_path / "out", "--debug-fake-timer", "1")
    assert code == 0
    assert summary is not None
    cases = by_case(summary)
    assert set(cases) == {"scale[cpu,fp32]", "scale[cpu,fp16]"}
    for precision in ("fp32", "fp16"):
        record = cases[f"scale[cpu,{precision}]"]
        assert record["status"] == "ok"
        assert record["precision"] == precision
        assert record["output"]["precision"] == precision
        seen = json.loads(kernel.with_name(f"seen_{precision}.json").read_text())
        assert seen == {"type": "str", "value": precision}


def test_precision_flag_selects_one_declared_precision(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = write(tmp_path / "kernels" / "scale" / "scale.py", PRECISION_AWARE)
    write(kernel.with_name("bench.yaml"), "precisions: [fp32, fp16]\n")
    code, summary, _ = run_cli(capsys, tmp_path, tmp_path / "out", "--debug-fake-timer", "1",
                               "--precision", "fp32")
    assert code == 0
    assert summary is not None
    assert [r["precision"] for r in summary["results"]] == ["fp32"]
    assert summary["settings"]["precisions"] == ["fp32"]
    assert not kernel.with_name("seen_fp16.json").exists()


def test_a_kernel_the_precision_flag_leaves_without_a_case_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, declared in (("both", "[fp32, fp16]"), ("wide", "[fp64, fp32]")):
        kernel = write(tmp_path / "kernels" / name / f"{name}.py", PRECISION_AWARE)
        write(kernel.with_name("bench.yaml"), f"precisions: {declared}\n")
    code, summary, err = run_cli(capsys, tmp_path, tmp_path / "out", "--debug-fake-timer", "1",
                                 "--precision", "fp16")
    assert code == 0 and summary is not None
    assert [r["case_id"] for r in summary["results"]] == ["both[cpu,fp16]"]
    assert ("kernbench: 1 kernel ran no case: wide (none of its precisions (fp64, fp32) is "
            "among --precision fp16)") in err
    # run --list says the same before anything runs
    assert main(["run", "--root", str(tmp_path), "--list", "--precision", "fp16"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert [line.split()[:4] for line in listing[1:]] == [
        ["both", "numpy", "cpu", "fp16"], ["wide", "NOT", "RUN", "none"]]
    assert main(["run", "--root", str(tmp_path), "--list", "--backends", "cuda", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["not_selected"] == {
        "both": "none of its backends (cpu) is among --backends cuda",
        "wide": "none of its backends (cpu) is among --backends cuda"}


def test_precision_alias_fp8_selects_the_declared_fp8_case(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--precision fp8` is an accepted choice; bench.yaml's `fp8` is stored as fp8_e4m3."""
    kernel = write(tmp_path / "kernels" / "scale" / "scale.py", """
        import numpy as np

        def run_benchmark(precision):
            return np.zeros(2, dtype=np.float32 if precision else None)
    """)
    write(kernel.with_name("bench.yaml"), "precisions: [fp32, fp8]\n")
    code, summary, _ = run_cli(capsys, tmp_path, tmp_path / "out", "--debug-fake-timer", "1",
                               "--precision", "fp8")
    assert summary is not None
    assert [r["precision"] for r in summary["results"]] == ["fp8_e4m3"], (
        "--precision fp8 selected no case of a kernel declaring fp8")
    assert code == 0


def test_kernel_without_precision_runs_once_labelled_by_its_output_dtype(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "kernels" / "zeros.py", FP64)
    code, summary, _ = run_cli(capsys, tmp_path, tmp_path / "out", "--debug-fake-timer", "1")
    assert code == 0
    assert summary is not None
    assert [(r["case_id"], r["status"]) for r in summary["results"]] == [
        ("zeros[cpu,fp64]", "ok")]
    assert summary["results"][0]["output"]["items"][0]["dtype"] == "float64"


def test_a_precision_parameter_never_read_is_said_in_the_listing_the_records_and_after_the_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "kernels" / "unread.py", """
        import numpy as np

        def run_benchmark(precision="fp32"):
            return np.zeros(2)
    """)
    write(tmp_path / "kernels" / "zeros.py", FP64)  # no parameter: nothing to say
    typo = write(tmp_path / "kernels" / "typo" / "typo.py", """
        def run_benchmark(n, precision="fp32"):
            return [0.0] * n
    """)  # invalid when it runs (bench.yaml names a size it does not take): it ran nothing
    write(typo.with_name("bench.yaml"), "problem_size: {m: 4}\n")
    code, summary, err = run_cli(capsys, tmp_path, tmp_path / "out", "--debug-fake-timer", "1",
                                 "--precision", "fp16")
    assert code == 2 and summary is not None  # 2: a kernel was invalid
    assert [r["status"] for r in summary["results"] if r["kernel_name"] == "typo"] == ["invalid"]
    assert sorted(r["case_id"] for r in summary["results"] if r["kernel_name"] != "typo") == [
        "unread[cpu,fp64]", "zeros[cpu,fp64]"]  # one case each, labelled by their outputs
    assert ("kernbench: warning: 1 kernel declares a `precision` parameter but never reads "
            "it: unread; it ran once at its own precision (its output's, as labelled), not at "
            "--precision fp16.") in err
    records = {r["kernel_name"]: r for r in summary["results"]}
    said = [w for w in records["unread"]["warnings"] if w["code"] == "precision_unread"]
    assert [w["value"] for w in said] == ["fp64"]  # and in summary.md's caveats, for it alone
    assert records["unread"]["output"]["precision_parameter"] == "unread"
    assert "precision_parameter" not in records["zeros"]["output"]
    caveats = [line for line in (tmp_path / "out" / "summary.md").read_text().splitlines()
               if line.startswith("- **Caveats**")]
    assert len(caveats) == 1 and "unread\\[cpu,fp64\\]: the kernel declares a" in caveats[0]
    assert "zeros" not in caveats[0]
    assert main(["run", "--root", str(tmp_path), "--list"]) == 0
    listing = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert "native (precision unread)" in listing["unread"]
    assert "unread" not in listing["zeros"].split(maxsplit=1)[1]


def test_a_precision_parameter_unread_but_taken_another_way_is_not_called_unread(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A kernel that declares `precision` without reading it, but calls current_precision(),
    or whose implementations the harness casts, runs at each precision: nothing calls it
    unread, in the listing, the records, summary.md or the run's last lines."""
    write(tmp_path / "kernels" / "ctx.py", """
        import numpy as np
        import kernbench

        DTYPES = {"fp32": np.float32, "fp16": np.float16}

        def setup(precision="fp32"):
            return {"x": np.ones(8, dtype=DTYPES[kernbench.current_precision("fp32")])}

        def run_benchmark(x, precision="fp32"):
            return x * 2
    """)
    kernel = write(tmp_path / "kernels" / "impl" / "impl.py", """
        import numpy as np

        def setup(precision="fp32"):
            return {"x": np.ones(8)}

        def f_a(x, precision="fp32"):
            return x * 2

        run_benchmark = f_a
    """)
    write(kernel.with_name("bench.yaml"), "precisions: [fp32, fp16]\nimplementations:\n"
                                          "  a: {function: f_a, framework: numpy}\n")
    code, summary, err = run_cli(capsys, tmp_path, tmp_path / "out", "--debug-fake-timer", "1",
                                 "--precision", "fp32,fp16")
    assert code == 0 and summary is not None, err
    assert sorted((r["kernel_name"], r["precision"]) for r in summary["results"]) == [
        ("ctx", "fp16"), ("ctx", "fp32"), ("impl", "fp16"), ("impl", "fp32")]
    for record in summary["results"]:
        assert "precision_parameter" not in record["output"], record["case_id"]
        assert "precision_unread" not in {w["code"] for w in record["warnings"]}
    assert "never reads" not in err
    assert "never reads" not in (tmp_path / "out" / "summary.md").read_text()
    assert main(["run", "--root", str(tmp_path), "--list"]) == 0
    assert "unread" not in capsys.readouterr().out


def test_precisions_in_bench_yaml_for_a_kernel_without_precision_is_invalid(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = write(tmp_path / "kernels" / "zeros" / "zeros.py", FP64)
    write(kernel.with_name("bench.yaml"), "precisions: [fp32, fp16]\n")
    code = main(["list", "--root", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 2
    assert "INVALID" in out
    assert "precision" in out


SETUP_ONLY_N = """
import numpy as np

def setup(n=8):
    return {"a": np.ones((n, n))}

def run_benchmark(a):
    return a @ a
"""


def test_configuration_errors_the_worker_finds_make_cases_invalid_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bench.yaml key only the worker can check (it needs the imported kernel) makes that
    case `invalid` with the file and the key, the run exits 2, and the others still run; an
    exception the kernel raises stays `failed`."""
    for name, config in (("typo", "problem_size: {nn: 5}\n"), ("scalar", "problem_size: 64\n"),
                         ("formula", 'work: {flops: "2*n**3"}\n')):
        write(tmp_path / "kernels" / name / f"{name}.py", SETUP_ONLY_N)
        write(tmp_path / "kernels" / name / "bench.yaml", config)
    write(tmp_path / "kernels" / "good.py", GOOD)
    write(tmp_path / "kernels" / "raiser.py", "def run_benchmark():\n    raise ValueError('x')\n")
    code, summary, _ = run_cli(capsys, tmp_path, tmp_path / "out", "--debug-fake-timer", "1")
    assert summary is not None
    cases = by_case(summary)
    assert {k: r["status"] for k, r in cases.items()} == {
        "typo[cpu,native]": "invalid", "scalar[cpu,native]": "invalid",
        "formula[cpu,native]": "invalid", "good[cpu,fp32]": "ok", "raiser[cpu,native]": "failed"}
    assert cases["typo[cpu,native]"]["reason"].startswith(
        "kernels/typo/bench.yaml: key 'problem_size.nn': expected a parameter of setup()")
    assert cases["scalar[cpu,native]"]["reason"].startswith(
        "kernels/scalar/bench.yaml: key 'problem_size': expected a mapping")
    assert cases["formula[cpu,native]"]["reason"].startswith(
        "kernels/formula/bench.yaml: key 'work.flops': expected formula '2*n**3'")
    assert cases["raiser[cpu,native]"]["reason"] == "ValueError: x"
    assert code == 2


# -- backends -------------------------------------------------------------------------------


def test_numpy_kernel_declaring_cuda_gets_a_skipped_cuda_case(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = write(tmp_path / "kernels" / "vec" / "vec.py", GOOD)
    write(kernel.with_name("bench.yaml"), "backends: [cpu, cuda]\n")
    code, summary, _ = run_cli(capsys, tmp_path, tmp_path / "out", "--debug-fake-timer", "1")
    assert code == 0
    assert summary is not None
    cases = by_case(summary)
    assert cases["vec[cpu,fp32]"]["status"] == "ok"
    cuda = next(r for r in summary["results"] if r["backend"] == "cuda")
    assert cuda["status"] == "skipped"
    assert cuda["success"] is False
    assert "cuda" in cuda["reason"].lower()
    assert cuda["timing"]["latency_ms_p50"] is None
    assert summary["counts"]["skipped"] == 1
    md = (tmp_path / "out" / "summary.md").read_text()
    # A backend this machine lacks is one line, not a row per case (the JSON keeps the case);
    # on a machine with an NVIDIA GPU, numpy's lack of CUDA is the case's own row.
    line = "CUDA not available on this machine (1 case of vec)"
    assert (line in md) is not gpu_listed()


def test_backends_flag_restricts_cases(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    kernel = write(tmp_path / "kernels" / "vec" / "vec.py", GOOD)
    write(kernel.with_name("bench.yaml"), "backends: [cpu, cuda]\n")
    code, summary, _ = run_cli(capsys, tmp_path, tmp_path / "out", "--debug-fake-timer", "1",
                               "--backends", "cpu")
    assert code == 0
    assert summary is not None
    assert [r["backend"] for r in summary["results"]] == ["cpu"]


# -- setup, problem_size, seed ---------------------------------------------------------------


def test_only_run_benchmark_is_timed_and_setup_result_reaches_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = write(tmp_path / "kernels" / "prep" / "prep.py", """
        import time

        import numpy as np

        def setup(n):
            time.sleep(0.5)
            return {"a": np.ones((n, 3), dtype=np.float32)}

        def run_benchmark(a):
            return a
    """)
    write(kernel.with_name("bench.yaml"), "problem_size: {n: 7}\n")
    code, summary, _ = run_cli(capsys, tmp_path, tmp_path / "out")  # real timer
    assert code == 0
    assert summary is not None
    (record,) = summary["results"]
    assert record["status"] == "ok", record["reason"]
    assert record["problem_size"] == {"n": 7}
    assert record["output"]["items"][0]["shape"] == [7, 3]
    assert record["worker"]["wall_s"] >= 0.5  # setup did run (and sleep) in the worker
    assert record["timing"]["timer"] != "fake"
    assert record["timing"]["latency_ms_p50"] < 50
    assert record["timing"]["latency_ms_max"] < 50


def test_problem_size_mapping_becomes_keyword_arguments(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = write(tmp_path / "kernels" / "grid" / "grid.py", """
        import numpy as np

        def run_benchmark(n, m):
            return np.zeros((n, m))
    """)
    write(kernel.with_name("bench.yaml"), "problem_size: {n: 6, m: 2}\n")
    code, summary, _ = run_cli(capsys, tmp_path, tmp_path / "out", "--debug-fake-timer", "1")
    assert code == 0
    assert summary is not None
    assert summary["results"][0]["output"]["items"][0]["shape"] == [6, 2]


def test_scalar_problem_size_is_passed_as_problem_size(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = write(tmp_path / "kernels" / "line" / "line.py", """
        import numpy as np

        def run_benchmark(problem_size):
            return np.zeros(problem_size)
    """)
    write(kernel.with_name("bench.yaml"), "problem_size: 5\n")
    code, summary, _ = run_cli(capsys, tmp_path, tmp_path / "out", "--debug-fake-timer", "1")
    assert code == 0
    assert summary is not None
    record = summary["results"][0]
    assert record["problem_size"] == 5
    assert record["output"]["items"][0]["shape"] == [5]


def test_seed_is_passed_when_declared_and_equals_the_flag(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = write(tmp_path / "kernels" / "rng" / "rng.py", """
        from pathlib import Path

        import numpy as np

        def run_benchmark(seed):
            Path(__file__).with_name("seed.txt").write_text(repr(seed))
            return np.zeros(2)
    """)
    write(tmp_path / "kernels" / "plain.py", FP64)  # takes no seed: must not receive one
    code, summary, _ = run_cli(capsys, tmp_path, tmp_path / "out", "--debug-fake-timer", "1",
                               "--seed", "4242")
    assert code == 0
    assert summary is not None
    assert kernel.with_name("seed.txt").read_text() == "4242"
    assert summary["settings"]["seed"] == 4242
    assert {r["status"] for r in summary["results"]} == {"ok"}


# -- selection and discovery paths ----------------------------------------------------------


def _named_tree(root: Path) -> None:
    for name in ("gemm", "gemv", "fft"):
        write(root / "kernels" / name / f"{name}.py", GOOD)
    write(root / "kernels" / "linalg" / "norm.py", GOOD)


def test_filter_globs_select_kernels_in_a_run(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    _named_tree(tmp_path)
    code, summary, _ = run_cli(capsys, tmp_path, tmp_path / "out", "--debug-fake-timer", "1",
                               "--filter", "ge*")
    assert code == 0
    assert summary is not None
    assert sorted(r["kernel_name"] for r in summary["results"]) == ["gemm", "gemv"]
    assert summary["settings"]["filters"] == ["ge*"]
    assert sorted(p.name for p in (tmp_path / "out" / "kernels").iterdir()) == [
        "gemm.json", "gemv.json"]


def test_filter_accepts_several_globs(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    _named_tree(tmp_path)
    code = main(["list", "--root", str(tmp_path), "--filter", "fft,linalg.*"])
    assert code == 0
    assert listed_names(capsys.readouterr().out) == ["fft", "linalg.norm"]


def test_paths_replace_the_discovery_paths(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "kernels" / "default_one.py", GOOD)
    write(tmp_path / "elsewhere" / "other_one.py", GOOD)
    code, summary, _ = run_cli(capsys, tmp_path, tmp_path / "out", "--debug-fake-timer", "1",
                               "--paths", "elsewhere")
    assert code == 0
    assert summary is not None
    assert [r["kernel_name"] for r in summary["results"]] == ["other_one"]
    assert summary["settings"]["paths"] == ["elsewhere"]


def test_root_elsewhere_run_from_another_cwd(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write(repo / "kernels" / "vec.py", GOOD)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "kernbench.cli", "run", "--root", str(repo), "--output-dir",
         "reports", *FAST, "--debug-fake-timer", "1.5", "--quiet"],
        cwd=cwd, env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((cwd / "reports" / "summary.json").read_text())
    (record,) = summary["results"]
    assert record["kernel_name"] == "vec"
    assert record["kernel_path"] == "kernels/vec.py"
    assert record["timing"]["latency_ms_p50"] == 1.5
    assert summary["settings"]["root"] == str(repo.resolve())
    assert not (repo / "reports").exists()


def test_pyproject_paths_extend_discovery(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "pyproject.toml", """
        [tool.kernbench]
        paths = ["bench/extra"]
    """)
    write(tmp_path / "kernels" / "base.py", GOOD)
    write(tmp_path / "bench" / "extra" / "added.py", GOOD)
    write(tmp_path / "bench" / "ignored.py", GOOD)
    code = main(["run", "--list", "--json", "--root", str(tmp_path)])
    manifest = json.loads(capsys.readouterr().out)
    assert code == 0
    assert "bench/extra" in manifest["paths"]
    assert "kernels" in manifest["paths"]
    assert sorted(k["name"] for k in manifest["kernels"]) == ["added", "base"]


def test_unknown_pyproject_key_is_a_usage_error(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "pyproject.toml", '[tool.kernbench]\npath = ["k"]\n')
    write(tmp_path / "kernels" / "base.py", GOOD)
    code = main(["list", "--root", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "tool.kernbench.path" in err


@pytest.mark.parametrize("command", ["list", "run"])
@pytest.mark.parametrize("given", ["nope", "../outside", "/etc"])
def test_paths_that_are_no_folder_inside_the_root_are_usage_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, given: str) -> None:
    """As pyproject's `paths` are: a typo, or a folder outside the repository, is an error
    naming it, not "0 kernels" (list) or "no kernels found" (run)."""
    root = tmp_path / "repo"
    write(root / "kernels" / "base.py", GOOD)
    (tmp_path / "outside").mkdir()
    code = main([command, "--root", str(root), "--paths", f"kernels,{given}",
                 "--output-dir", str(tmp_path / "out")][:5 if command == "list" else None])
    err = capsys.readouterr().err
    assert code == 2, err
    assert (f"--paths {given}: expected a folder or kernel file inside --root {root} that "
            "exists" in err)
    assert not (tmp_path / "out").exists()


def test_paths_may_name_a_kernel_file_or_a_linked_folder_as_discovery_takes_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "repo"
    write(root / "kernels" / "base.py", GOOD)
    write(tmp_path / "vendor" / "linked.py", GOOD)
    (root / "vendor").symlink_to(tmp_path / "vendor")
    assert main(["list", "--root", str(root), "--paths", "kernels/base.py,vendor",
                 "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sorted(k["name"] for k in listed["kernels"]) == ["base", "linked"]
    assert main(["list", "--root", str(tmp_path / "absent"), "--paths", "kernels"]) == 2
    assert "--root" in capsys.readouterr().err  # discovery's error, not one about --paths


def test_a_suite_files_bad_paths_entry_is_named_by_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "kernels" / "base.py", GOOD)
    suite = write(tmp_path / "suite.yml", f"root: {tmp_path}\npaths: [kernels, typo]\n")
    assert main(["run", "--config", str(suite), "--list"]) == 2
    assert (f"{suite}: key 'paths': typo: expected a folder or kernel file inside --root"
            in capsys.readouterr().err)


# -- listing --------------------------------------------------------------------------------


def test_list_prints_names_and_runs_nothing(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    _named_tree(tmp_path)
    out = tmp_path / "out"
    code = main(["run", "--list", "--root", str(tmp_path), "--output-dir", str(out)])
    stdout = capsys.readouterr().out
    assert code == 0
    assert listed_names(stdout) == ["fft", "gemm", "gemv", "linalg.norm"]
    assert str(tmp_path.resolve()) in stdout.splitlines()[0]
    assert not out.exists()


def test_list_json_is_a_valid_manifest(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    _named_tree(tmp_path)
    code = main(["list", "--json", "--root", str(tmp_path)])
    manifest = json.loads(capsys.readouterr().out)
    assert code == 0
    assert manifest["schema_version"] == SCHEMA_VERSION
    assert manifest["count"] == 4
    assert [k["name"] for k in manifest["kernels"]] == ["fft", "gemm", "gemv", "linalg.norm"]
    gemm = manifest["kernels"][1]
    assert gemm["path"] == "kernels/gemm/gemm.py"
    assert gemm["framework"] == "numpy"
    assert gemm["status"] == "ok"


def test_list_json_counts_agree_with_the_filtered_kernels(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _named_tree(tmp_path)
    write(tmp_path / "kernels" / "broken.py", "def run_benchmark(:\n    pass\n")
    code = main(["list", "--json", "--root", str(tmp_path), "--filter", "gemm"])
    manifest = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [k["name"] for k in manifest["kernels"]] == ["gemm"]
    assert manifest["count"] == len(manifest["kernels"])
    assert manifest["invalid"] == 0


def test_list_shows_how_many_points_a_sweep_has(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    _named_tree(tmp_path)
    write(tmp_path / "kernels" / "gemm" / "bench.yaml", """
        sweep:
          matrix_shapes: [{name: pow2, min_power: 2, max_power: 4}]
          params: {block: [1, 2, 4, 8]}
        """)
    code = main(["list", "--root", str(tmp_path)])
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert code == 0
    assert lines["gemm"].endswith("kernels/gemm/gemm.py  (12 points)")
    assert lines["fft"].endswith("kernels/fft/fft.py")  # no sweep, no count
    main(["list", "--json", "--root", str(tmp_path), "--filter", "gemm"])
    (gemm,) = json.loads(capsys.readouterr().out)["kernels"]
    assert gemm["config"]["sweep_points"] == 12


def test_a_bad_sweep_makes_only_its_kernel_invalid(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _named_tree(tmp_path)
    write(tmp_path / "kernels" / "gemm" / "bench.yaml", """
        sweep:
          matrix_shapes: [{name: pow3, min_power: 2}]
        """)
    code = main(["list", "--root", str(tmp_path)])
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert code == 2
    assert "INVALID  kernels/gemm/bench.yaml: key 'sweep.matrix_shapes[0].name'" in lines["gemm"]
    assert "did you mean 'pow2'" in lines["gemm"]
    assert "INVALID" not in lines["fft"]


@pytest.mark.parametrize(("value", "expected"), [
    (".inf", "expected a finite number (got inf)"),
    ("1e10", "expected seconds, a number > 0 and at most 604800 (one week)"),
])
def test_an_unbounded_bench_yaml_timeout_makes_only_its_kernel_invalid(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, expected: str) -> None:
    """`timeout_s: .inf` or `1e10` crashed the whole run (OverflowError in the wait for the
    worker): later kernels never ran and the summary was left incomplete."""
    write(tmp_path / "kernels" / "a" / "a.py", GOOD)
    write(tmp_path / "kernels" / "a" / "bench.yaml", f"timeout_s: {value}\n")
    write(tmp_path / "kernels" / "b" / "b.py", GOOD)
    code, summary, err = run_cli(capsys, tmp_path, tmp_path / "out", "--processes", "1",
                                 "--debug-fake-timer", "1")
    assert code == 2
    assert "Traceback" not in err
    assert summary is not None and summary["complete"] is True
    status = {r["kernel_name"]: r["status"] for r in summary["results"]}
    assert status == {"a": "invalid", "b": "ok"}
    assert f"kernels/a/bench.yaml: key 'timeout_s': {expected}" in err


def test_a_repeated_bench_yaml_key_makes_only_its_kernel_invalid(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _named_tree(tmp_path)
    write(tmp_path / "kernels" / "gemm" / "bench.yaml", "timeout_s: 5\ntimeout_s: 6\n")
    code = main(["list", "--root", str(tmp_path)])
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert code == 2
    assert "INVALID  kernels/gemm/bench.yaml:2:1: key 'timeout_s'" in lines["gemm"]
    assert "INVALID" not in lines["fft"]


def test_list_exits_2_when_a_kernel_is_invalid(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "kernels" / "good.py", GOOD)
    write(tmp_path / "kernels" / "broken.py", "import numpy\n\ndef run_benchmark(:\n    pass\n")
    code = main(["list", "--root", str(tmp_path)])
    stdout = capsys.readouterr().out
    assert code == 2
    broken = next(line for line in stdout.splitlines() if line.strip().startswith("broken"))
    assert "INVALID" in broken
    assert "syntax error" in broken


def test_verbose_list_explains_discovery(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "kernels" / "good.py", GOOD)
    write(tmp_path / "kernels" / "helper.py", "def not_a_kernel():\n    return 1\n")
    code = main(["list", "--verbose", "--root", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 0
    assert "helper.py" in err
    assert "not a kernel" in err


def test_quiet_run_prints_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "kernels" / "good.py", GOOD)
    code = main(["run", "--quiet", "--root", str(tmp_path), "--output-dir",
                 str(tmp_path / "out"), *FAST, "--debug-fake-timer", "1"])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out == ""
    assert captured.err == ""
    assert (tmp_path / "out" / "summary.json").is_file()


def test_quiet_run_still_names_its_failed_and_invalid_cases(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A bare exit code in a CI log, with no reason, was all -q left of a failure.
    write(tmp_path / "kernels" / "good.py", GOOD)
    write(tmp_path / "kernels" / "boom.py", "def run_benchmark():\n    raise ValueError('no')\n")
    write(tmp_path / "kernels" / "bad.py", GOOD)
    write(tmp_path / "kernels" / "bad.bench.yaml", "problem_size: {nn: 5}\n")
    code = main(["run", "--quiet", "--root", str(tmp_path), "--output-dir",
                 str(tmp_path / "out"), *FAST, "--processes", "1"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert any(line.startswith("boom[") and ": FAILED: " in line and "no" in line
               for line in lines), lines
    assert any(line.startswith("bad[") and ": INVALID: " in line for line in lines), lines
    assert not any(line.startswith("good[") for line in lines)


def test_run_prints_progress_and_tally(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "kernels" / "good.py", GOOD)
    code, _, err = run_cli(capsys, tmp_path, tmp_path / "out", "--debug-fake-timer", "3")
    assert code == 0
    assert "[3/3] good[cpu,fp32]: p50 3 ms" in err  # three processes, in rounds
    assert "1 case: 1 ok" in err


# -- usage errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--iters", "0", ">= 1"),
    ("--iters", "many", "expected an integer"),
    ("--iters", "99999999999999999999", "expected an integer from 1 to 100000, got 9999"),
    ("--iters", "100001", "expected an integer from 1 to 100000, got 100001"),
    ("--processes", "3000000", "expected an integer from 1 to 1000, got 3000000"),
    ("--rounds", "1001", "expected an integer from 2 to 1000, got 1001"),
    ("--precision", "fp33", "fp33"),
    ("--backends", "gpu", "gpu"),
    ("--timeout", "0", "> 0"),
    ("--timeout", "inf", "expected a finite number > 0 and at most 604800, got inf"),
    ("--timeout", "1e400", "expected a finite number > 0 and at most 604800, got 1e400"),
    ("--timeout", "1e10", "at most 604800, got 1e10"),
    ("--timeout", "nan", "expected a finite number > 0"),
    ("--threshold", "inf", "expected a finite number > 0, got inf"),
    ("--alpha", "2", "expected a number > 0 and < 1, got 2"),
    ("--alpha", "1", "expected a number > 0 and < 1, got 1"),
    ("--alpha", "nan", "expected a number > 0 and < 1, got nan"),
    ("--debug-fake-timer", "-1", "> 0"),
    ("--ab", "", "expected a value, got an empty string"),  # a failed $(git merge-base ...)
    ("--compare-to", " ", "expected a value, got an empty string"),
    ("--seed", "99999999999999999999", "expected an integer from 0 to 4294967295"),
    ("--seed", "-1", "expected an integer >= 0, got -1"),
    ("--precision", "fp17", "unknown value 'fp17' (did you mean 'fp16'?)"),
    ("--precision", "FP32", "unknown value 'FP32' (did you mean 'fp32'?)"),
])
def test_bad_flag_values_exit_2_with_a_message(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str,
        message: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", "--root", str(tmp_path), flag, value])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert flag in err
    assert message in err
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize("command", [["compare", "a", "b"], ["merge", "out", "shard"]])
def test_every_command_refuses_an_alpha_outside_0_1(
        command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """A false discovery rate of 2 made every change significant, silently."""
    with pytest.raises(SystemExit) as exc:
        main([*command, "--alpha", "2"])
    assert exc.value.code == 2
    assert "argument --alpha: expected a number > 0 and < 1, got 2" in capsys.readouterr().err


def test_bad_usage_exit_code_through_a_subprocess(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "kernbench.cli", "run", "--iters", "0"],
                          cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert "--iters" in proc.stderr


def test_no_kernels_found_names_root_and_paths(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, summary, err = run_cli(capsys, tmp_path, tmp_path / "out")
    assert code == 2
    assert summary is None
    assert "no kernels" in err
    assert str(tmp_path.resolve()) in err
    assert "kernels" in err and "integrations/kernels" in err


def test_no_kernels_found_under_explicit_paths(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "kernels" / "good.py", GOOD)
    code, _, err = run_cli(capsys, tmp_path, tmp_path / "out", "--paths", "nowhere")
    assert code == 2
    assert "nowhere" in err


def test_filter_matching_nothing_exits_2(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "kernels" / "good.py", GOOD)
    code, summary, err = run_cli(capsys, tmp_path, tmp_path / "out", "--filter", "nomatch*")
    assert code == 2
    assert summary is None
    assert "nomatch*" in err


def test_missing_root_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["list", "--root", str(tmp_path / "absent")])
    assert code == 2
    assert "not a directory" in capsys.readouterr().err


def test_a_command_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2
    assert "COMMAND" in capsys.readouterr().err


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    from kernbench import __version__

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"kernbench {__version__}"


# -- start-up cost --------------------------------------------------------------------------


def test_help_does_not_import_heavy_modules() -> None:
    code = textwrap.dedent("""
        import contextlib, io, json, sys
        import kernbench.cli.main
        import kernbench.cli.parser
        kernbench.cli.parser.build_parser().format_help()
        for argv in (["--help"], ["run", "--help"], ["list", "--help"]):
            with contextlib.redirect_stdout(io.StringIO()):
                try:
                    kernbench.cli.main.main(argv)
                except SystemExit:
                    pass
        heavy = {"numpy", "torch", "jax", "scipy", "jinja2", "jsonschema"}
        print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy)))
    """)
    proc = subprocess.run([sys.executable, "-c", code], env=subprocess_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_parser_documents_every_run_flag() -> None:
    text = build_parser().format_help()
    assert "run" in text and "list" in text
    run_help = subprocess.run([sys.executable, "-m", "kernbench.cli", "run", "--help"],
                              env=subprocess_env(), capture_output=True, text=True, timeout=60)
    for flag in ("--iters", "--warmup", "--precision", "--backends", "--filter", "--paths",
                 "--timeout", "--seed", "--list", "--quiet", "--verbose", "--debug-fake-timer",
                 "--output-dir", "--root"):
        assert flag in run_help.stdout


# -- output folder ---------------------------------------------------------------------------


@pytest.mark.parametrize("below", ["", "sub/deeper"])
def test_an_output_dir_that_is_a_file_is_refused_before_any_kernel_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], below: str) -> None:
    marker = tmp_path / "ran"
    write(tmp_path / "kernels" / "k" / "k.py", f"""
def run_benchmark():
    open({str(marker)!r}, "w").close()
    return 1.0
""")
    blocker = tmp_path / "out"
    blocker.write_text("not a folder")
    out = blocker / below if below else blocker
    code = main(["run", "--root", str(tmp_path), "--output-dir", str(out), *FAST])
    err = capsys.readouterr().err
    assert code == 2
    assert f"--output-dir {out}" in err and "not a folder" in err
    assert "Traceback" not in err
    assert not marker.exists()
    assert blocker.read_text() == "not a folder"


@pytest.mark.parametrize("command", ["report", "compare", "merge"])
def test_the_other_writing_commands_refuse_a_file_as_output_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    write(tmp_path / "kernels" / "k" / "k.py", GOOD)
    good = tmp_path / "good"
    assert main(["run", "--root", str(tmp_path), "--output-dir", str(good), *FAST,
                 "--debug-fake-timer", "1"]) == 0
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    argv = {"report": ["report", str(good), "--output-dir", str(blocker)],
            "compare": ["compare", str(good / "summary.json"), str(good / "summary.json"),
                        "--output-dir", str(blocker)],
            "merge": ["merge", str(blocker), str(good)]}[command]
    capsys.readouterr()
    assert main(argv) == 2
    assert "not a folder" in capsys.readouterr().err


# -- history ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "expected"), [
    (["--since", "garbage"], "--since 'garbage': expected an ISO date"),
    (["--since", "26-11-2026"], "--since '26-11-2026': expected an ISO date"),
    (["--since", "2026-13"], "--since '2026-13': expected an ISO date"),  # was: 0 records
    (["--since", "2026-02-30"], "--since '2026-02-30': expected an ISO date"),
    (["--since", "2026-11-26T25"], "--since '2026-11-26T25': expected an ISO date"),
    (["--root", "{missing}"], "no such folder"),
])
def test_history_refuses_a_bad_date_or_root_instead_of_listing_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
        expected: str) -> None:
    argv = [a.format(missing=tmp_path / "missing") for a in argv]
    root = [] if "--root" in argv else ["--root", str(tmp_path)]
    assert main(["history", *root, *argv]) == 2
    assert expected in capsys.readouterr().err


@pytest.mark.parametrize("since", ["2026", "2026-11", "2026-11-26", "2026-11-26T12:00",
                                   "2026-11-26T12:00:00Z", "2024-02-29 23:59:59.5"])
def test_history_takes_an_iso_date_or_a_prefix_of_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], since: str) -> None:
    assert main(["history", "--root", str(tmp_path), "--since", since]) == 0


def test_a_run_measured_on_a_busy_machine_warns_at_its_end(
        capsys: pytest.CaptureFixture[str]) -> None:
    from types import SimpleNamespace

    from kernbench.cli.run import _busy_warning

    quiet = {"other_cpu_cores": 0.1, "steal_share": 0.0}
    busy = {"other_cpu_cores": 1.0, "steal_share": 0.0, "cpus": 2}
    _busy_warning([SimpleNamespace(status="ok", machine=quiet),
                   SimpleNamespace(status="ok", machine=busy),
                   SimpleNamespace(status="failed", machine=busy)])
    assert "warning: 1 of 2 cases were measured while other processes kept CPUs busy" in (
        capsys.readouterr().err)
    _busy_warning([SimpleNamespace(status="ok", machine=quiet)])
    assert capsys.readouterr().err == ""


def test_a_case_timed_under_another_precision_than_its_output_warns_at_the_end(
        capsys: pytest.CaptureFixture[str]) -> None:
    from types import SimpleNamespace

    from kernbench.cli.run import _precision_warning

    def case(precision: str, output: str, status: str = "ok") -> SimpleNamespace:
        return SimpleNamespace(status=status, precision=precision, output={"precision": output},
                               case_id=f"k[cpu,{precision}]")

    _precision_warning([case("fp16", "fp32"), case("fp32", "fp32"), case("bf16", "fp32", "failed")])
    assert ("kernbench: warning: 1 case returned another precision than they were timed under: "
            "k[cpu,fp16] (output fp32)") in capsys.readouterr().err
    _precision_warning([case("fp32", "fp32"), case("fp8_e4m3", "bf16")])
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("listing", [(), ("--list",)], ids=["run", "run-list"])
@pytest.mark.parametrize(("flags", "message"), [
    (["--ab", "HEAD", "--save-history"], "--save-history cannot be combined with --ab"),
    (["--debug-inject-slowdown", "k=2", "--save-history"],
     "--debug-inject-slowdown cannot be combined with --save-history"),
    (["--debug-inject-slowdown", "k=2", "--debug-fake-timer", "1"],
     "--debug-inject-slowdown has no effect on --debug-fake-timer's clock"),
    (["--jobs", "2"], "--jobs is an option of --shards N"),
    (["--ab", "HEAD", "--compare-to", "HEAD"], "--compare-to and --ab cannot be combined"),
    (["--ab", "no-such-ref"], "--ab no-such-ref: "),
    (["--compare-to", "no-such-ref"], "--compare-to no-such-ref: "),
    (["--baseline", "missing.json"], "missing.json: no such result file"),
])
def test_flags_that_would_do_nothing_or_record_a_fake_together_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str],
        message: str, listing: tuple[str, ...]) -> None:
    """And `run --list` refuses them as the run would: it lists what the run would do."""
    write(tmp_path / "kernels" / "k.py", GOOD)
    assert main(["run", "--root", str(tmp_path), "--output-dir", str(tmp_path / "out"),
                 *flags, *listing]) == 2
    assert message in capsys.readouterr().err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("listing", [(), ("--list",)], ids=["run", "run-list"])
def test_a_baseline_on_the_other_clock_is_refused_by_run_and_run_list(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], listing: tuple[str, ...]) -> None:
    write(tmp_path / "kernels" / "k.py", GOOD)
    base = tmp_path / "base"
    assert main(["run", "--root", str(tmp_path), "--output-dir", str(base),
                 "--debug-fake-timer", "1", "-q"]) == 0
    capsys.readouterr()
    assert main(["run", "--root", str(tmp_path), "--output-dir", str(tmp_path / "out"),
                 "--baseline", str(base), *listing]) == 2
    assert "ran on the fake clock" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_an_injected_slowdown_is_recorded_in_the_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "kernels" / "k.py", GOOD)
    code, summary, _ = run_cli(capsys, tmp_path, tmp_path / "out", "--processes", "1",
                               "--debug-inject-slowdown", "k=2")
    assert code == 0 and summary is not None
    assert summary["settings"]["inject_slowdown"] == {"k": 2.0}
    assert main(["history", "--root", str(tmp_path), "--add", str(tmp_path / "out")]) == 2
    assert "slowed kernels down on purpose" in capsys.readouterr().err


def test_a_filter_glob_that_matches_nothing_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "kernels" / "gemm.py", GOOD)
    code, summary, err = run_cli(capsys, tmp_path, tmp_path / "out", "--debug-fake-timer", "1",
                                 "--filter", "gemm*,sofmax")
    assert code == 0 and summary is not None and len(summary["results"]) == 1
    assert "kernbench: warning: --filter 'sofmax' matched no kernel (a typo?)" in err
    assert main(["list", "--root", str(tmp_path), "--filter", "gemm*,sofmax"]) == 0
    captured = capsys.readouterr()
    assert "--filter 'sofmax' matched no kernel" in captured.err
    assert captured.out.startswith("1 kernel under ")


def test_a_second_run_into_a_folder_being_written_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # two runs writing one --output-dir at once mixed their records into one report
    import subprocess
    import sys

    write(tmp_path / "kernels" / "k.py", GOOD)
    out = tmp_path / "out"
    holder = subprocess.Popen(  # another run, in another process, holding the folder
        [sys.executable, "-c", "import sys; from pathlib import Path\n"
         "from kernbench.results.files import output_lock\n"
         "with output_lock(Path(sys.argv[1])):\n    print('held', flush=True)\n"
         "    sys.stdin.read()\n", str(out)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        code, _, err = run_cli(capsys, tmp_path, out, "--debug-fake-timer", "1")
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    assert code == 2
    assert f"{out}: another kernbench run (pid {holder.pid}) is writing this folder" in err
    assert not (out / "summary.json").exists()
    code, summary, _ = run_cli(capsys, tmp_path, out, "--debug-fake-timer", "1")
    assert code == 0 and summary is not None  # released: the next run goes ahead
    assert not (out / ".kernbench-lock").exists()


def test_an_output_folder_that_cannot_be_written_is_refused_first(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "kernels" / "k.py", GOOD)
    readonly = tmp_path / "ro"
    readonly.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == readonly
                        else real(p, mode))  # a read-only mount (root ignores mode bits)
    code, _, err = run_cli(capsys, tmp_path, readonly / "out", "--debug-fake-timer", "1")
    assert code == 2 and f"--output-dir {readonly / 'out'}: cannot be written (in {readonly})" \
        in err


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path: Path) -> None:
    # `kernbench list --json | head`: the manifest is larger than a pipe's buffer
    for index in range(400):
        (tmp_path / "kernels").mkdir(exist_ok=True)
        (tmp_path / "kernels" / f"kernel_number_{index:04d}.py").write_text(
            "def run_benchmark():\n    return 0\n", encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "kernbench", "list", "--root", str(tmp_path), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(SRC)})
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.read(10).startswith(b"{")
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 141, stderr
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr


def test_run_list_with_a_shard_shows_that_shards_kernels(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("a", "b", "c", "d"):
        write(tmp_path / "kernels" / f"{name}.py", GOOD)
    shown = []
    for k in (1, 2):
        assert main(["run", "--root", str(tmp_path), "--list", "--shard", f"{k}/2"]) == 0
        shown.append(set(listed_names(capsys.readouterr().out)))
    assert shown[0] | shown[1] == {"a", "b", "c", "d"} and not shown[0] & shown[1]
    assert len(shown[0]) == len(shown[1]) == 2


def test_run_list_with_resume_shows_what_is_left_to_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    for name in ("a", "b", "c"):
        write(tmp_path / "kernels" / f"{name}.py", GOOD)
    out = tmp_path / "out"
    assert main(["run", "--root", str(tmp_path), "--output-dir", str(out), "--processes", "1",
                 "--iters", "3", "--debug-fake-timer", "1", "-q"]) == 0
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--list"]) == 0
    shown = capsys.readouterr()
    assert listed_names(shown.out) == []
    assert "3 finished cases kept, 0 cases to run: nothing to run" in shown.err
    summary = json.loads((out / "summary.json").read_text())  # as a killed run leaves it
    (out / "summary.json").write_text(json.dumps({**summary, "results": [], "complete": False}))
    (out / "kernels" / "b.json").unlink()
    assert main(["run", "--resume", str(out), "--list"]) == 0
    shown = capsys.readouterr()
    assert listed_names(shown.out) == ["b"]
    assert "2 finished cases kept, 1 case to run, in the 1 kernel below" in shown.err
    # b's worker processes that finished before the kill are held, and said to be
    (out / "processes").mkdir()
    (out / "processes" / "b-0123.jsonl").write_text('{"case": "b"}\n{"case": "b"}\n')
    assert main(["run", "--resume", str(out), "--list"]) == 0
    assert ("2 finished cases kept, 1 case to run (2 worker processes of them finished and "
            "kept: reused where the kernel is unchanged), in the 1 kernel below"
            ) in capsys.readouterr().err


def test_a_report_folder_broken_mid_run_is_one_clear_error_and_the_summary_is_saved(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The second kernel's setup replaces out/kernels with a file: the next kernel file
    cannot be written. One message naming it (no chained tracebacks), exit 2, and an
    incomplete summary.json with the record that finished."""
    import json

    out = tmp_path / "out"
    write(tmp_path / "kernels" / "a.py", GOOD)
    write(tmp_path / "kernels" / "b.py", f"""
import os, shutil

def setup():
    shutil.rmtree({str(out / "kernels")!r})
    open({str(out / "kernels")!r}, "w").close()
    return {{}}

def run_benchmark():
    return 1
""")
    code = main(["run", "--root", str(tmp_path), "--output-dir", str(out), "--processes", "1",
                 "--iters", "3", "--debug-fake-timer", "1", "-q"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert f"kernbench: error: FileExistsError on {out / 'kernels'}: [Errno 17]" in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is False
    assert [r["case_id"] for r in summary["results"]] == ["b[cpu,native]"]


def test_a_fake_clock_run_is_never_compared_with_a_measured_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--debug-fake-timer's made-up figures against measured ones gave confident verdicts
    (a 100 ms fake baseline made any real run "improved")."""
    write(tmp_path / "kernels" / "a.py", GOOD)
    common = ["--root", str(tmp_path), "--processes", "1", "--iters", "3", "-q"]
    assert main(["run", *common, "--output-dir", str(tmp_path / "fake"),
                 "--debug-fake-timer", "100"]) == 0
    assert main(["run", *common, "--output-dir", str(tmp_path / "real")]) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "fake"), str(tmp_path / "real")]) == 2
    err = capsys.readouterr().err
    assert "the baseline (" in err and "ran on the fake clock (--debug-fake-timer 100.0" in err
    assert "compare runs made on the same clock" in err
    assert main(["run", *common, "--output-dir", str(tmp_path / "new"),
                 "--baseline", str(tmp_path / "fake")]) == 2
    assert "ran on the fake clock" in capsys.readouterr().err
    assert not (tmp_path / "new" / "summary.json").exists(), "refused before any kernel ran"
    assert main(["compare", str(tmp_path / "fake"), str(tmp_path / "fake")]) == 0  # one clock


def test_a_run_never_deletes_files_it_did_not_write(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--output-dir . at the repository's top deleted kernels/*.py (the kernels themselves),
    and a report folder's own kernels/ or plots/ lost the user's files in them."""
    root = tmp_path / "repo"
    write(root / "kernels" / "a.py", GOOD)
    write(root / "kernels" / "weights.json", '{"w": 1}')
    common = ["--root", str(root), "--processes", "1", "--iters", "3", "--debug-fake-timer",
              "1", "-q"]
    for out in (root, root / "kernels" / "out"):
        assert main(["run", *common, "--output-dir", str(out)]) == 2
        assert "the kernel folder" in capsys.readouterr().err
    assert sorted(p.name for p in (root / "kernels").iterdir()) == ["a.py", "weights.json"]
    out = tmp_path / "out"
    for path in ("kernels/notes.txt", "kernels/nested/keep.txt", "plots/mine.txt"):
        write(out / path, "mine")
    write(out / "kernels" / "user.json", '{"x": 1}')
    for _ in range(2):  # the second run replaces the first one's kernels/a.json
        assert main(["run", *common, "--output-dir", str(out)]) == 0
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")
                  if "kernels" in p.parts or "plots" in p.parts) == [
        "kernels", "kernels/a.json", "kernels/nested", "kernels/nested/keep.txt",
        "kernels/notes.txt", "kernels/user.json", "plots", "plots/mine.txt"]


def test_processes_with_ab_is_refused_not_ignored(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "kernels" / "a.py", GOOD)
    assert main(["run", "--root", str(tmp_path), "--ab", "HEAD", "--processes", "7"]) == 2
    assert "--processes 7 has no effect with --ab: its rounds are its processes" in \
        capsys.readouterr().err


def test_an_interrupt_before_any_case_says_nothing_was_saved(tmp_path: Path) -> None:
    """It said 'continue with --resume OUT' for a folder that did not exist."""
    from types import SimpleNamespace

    from kernbench.cli.main import _how_to_continue

    args = SimpleNamespace(command="run", ab=None, shards=None, output_dir=tmp_path / "out")
    assert _how_to_continue(args) == ("; no case had started, so nothing was saved: run it "  # type: ignore[arg-type]
                                      "again")
    write(tmp_path / "out" / "summary.json", "{}")
    assert _how_to_continue(args).startswith(  # type: ignore[arg-type]
        "; no case had finished, so only the run's settings were saved: continue with "
        "--resume")
    write(tmp_path / "out" / "processes" / "a[cpu,fp64].jsonl", "{}\n")
    assert _how_to_continue(args).startswith(  # type: ignore[arg-type]
        "; no case had finished, but the worker processes that did are saved")
    write(tmp_path / "out" / "kernels" / "a.json", "{}")
    assert _how_to_continue(args) == (  # type: ignore[arg-type]
        f"; finished cases are saved: continue with --resume {tmp_path / 'out'}")


def test_a_second_ctrl_c_while_rendering_says_what_is_missing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    import kernbench.cli.run as cli_run

    (tmp_path / "summary.json").write_text("{}")

    def interrupted(*args: Any, **kwargs: Any) -> list[str]:
        raise KeyboardInterrupt("SIGINT")

    monkeypatch.setattr(cli_run, "render", interrupted)
    cli_run._render_partial(SimpleNamespace(output_dir=tmp_path))  # type: ignore[arg-type]
    assert (f"interrupted again while rendering the partial reports; kernbench report "
            f"{tmp_path} renders them") in capsys.readouterr().err


def test_a_run_sweeps_the_scratch_folder_a_killed_run_left(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a run killed outright (SIGKILL) left /tmp/kernbench-run-* behind, which no run swept
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    dead = tmp_path / "tmp" / "kernbench-run-4194303-leftover"  # a pid no process has
    (dead / "refs").mkdir(parents=True)
    write(tmp_path / "repo" / "kernels" / "k.py", GOOD)
    code, _, _ = run_cli(capsys, tmp_path / "repo", tmp_path / "out", "--debug-fake-timer", "1")
    assert code == 0 and not dead.exists()
    assert not list((tmp_path / "tmp").glob("kernbench-run-*"))  # and its own is gone


def test_resume_checks_given_paths_against_the_runs_own_root(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, out = tmp_path / "repo", tmp_path / "out"
    write(root / "kernels" / "base.py", GOOD)
    assert main(["run", "--root", str(root), "--paths", "kernels", "--output-dir", str(out),
                 "--debug-fake-timer", "1", "-q"]) == 0
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # the default --root here has no kernels/
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--paths", "kernels", "--list"]) == 0, (
        capsys.readouterr().err)
