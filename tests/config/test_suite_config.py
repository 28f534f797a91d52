"""Suite files: `kernbench run --config suite.yml` (keys -> flags, precedence, validation)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kernbench.cli.main import main
from kernbench.cli.parser import build_parser, parse_args
from kernbench.cli.run import run_settings
from kernbench.config.options import command
from kernbench.config.schema import BACKEND_NAMES, PRECISION_NAMES
from kernbench.config.suite import SUITE_KEYS, load_suite
from kernbench.errors import ConfigError, KernbenchError

REPO = Path(__file__).resolve().parents[2]

FULL = """
root: repo
paths: [kernels, ops]
kernels: [gemm, "soft*"]
output_dir: reports/nightly
iterations: 50
warmup: 5
warmup_time_s: 0.5
isolation: spawn
seed: 7
timeout_s: 120
gpu_timing: all
processes: 5
interleave: false
backends: [cpu]
precisions: [fp32, bf16]
formats: [json, md, html, csv]
sku: H100
testbed: h100-pool
trace_memory: true
save_history: true
compare_to: main
threshold: 0.05
fail_on_regression: true
profile: cprofile
profile_iters: 7
compile_mode: max-autotune
sweeps:
  "gem*":
    matrix_shapes: [{name: pow2, min_power: 4, max_power: 5}]
max_memory: 2G
shards: 4
executor: slurm
jobs: 2
partition: gpu
gpus_per_task: 1
time: 30
exclusive: true
slurm_args: [mem=64G]
ray_address: auto
gpus_per_shard: 1
ray_resources: ["sku:H100=1"]
"""

GOOD = """
import numpy as np

def run_benchmark():
    return np.ones(4, dtype=np.float32) * 2
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def parsed(tmp_path: Path, text: str, *flags: str) -> Any:
    suite = write(tmp_path / "suite.yml", text)
    return parse_args(["run", "--config", str(suite), *flags])


def config_error(tmp_path: Path, text: str) -> str:
    suite = write(tmp_path / "suite.yml", text) if text else tmp_path / "suite.yml"
    if not text:
        suite.write_text("", encoding="utf-8")
    with pytest.raises(KernbenchError) as caught:
        load_suite(suite)
    assert caught.value.exit_code == 2
    return caught.value.message.removeprefix(f"{tmp_path}/")  # the file as named: suite.yml


# -- every key maps to its setting ------------------------------------------------------------


@pytest.fixture()
def full_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FULL's `root: repo` (relative to the working directory) with its `paths`, which must
    be folders inside it, as the flag's must."""
    monkeypatch.chdir(tmp_path)
    for folder in ("kernels", "ops"):
        (tmp_path / "repo" / folder).mkdir(parents=True)


@pytest.mark.usefixtures("full_repo")
def test_every_key_maps_to_its_setting(tmp_path: Path) -> None:
    args = parsed(tmp_path, FULL)
    settings = run_settings(args)
    assert settings.root == Path("repo").resolve()
    assert settings.protocol.iterations == 50
    assert settings.protocol.warmup == 5
    assert settings.protocol.seed == 7
    assert settings.timeout_s == 120.0
    assert settings.processes == 5
    assert settings.interleave is False
    assert settings.isolation == "spawn"
    assert settings.protocol.warmup_time_s == 0.5
    assert settings.filters == ("gemm", "soft*")
    assert settings.backends == ("cpu",)
    assert settings.precisions == ("fp32", "bf16")
    assert settings.sku == "H100"
    assert settings.trace_python is True
    assert settings.profile == "cprofile" and settings.profile_iters == 7
    assert settings.compile_mode == "max-autotune"
    assert settings.gpu_timing == "all"
    ((pattern, points),) = settings.sweeps
    assert pattern == "gem*" and [p.label for p in points] == ["m=16,k=16,n=16", "m=32,k=32,n=32"]
    # Options that are not RunSettings: the namespace cmd_run reads.
    assert args.paths == ("kernels", "ops")
    assert args.output_dir == Path("reports/nightly")
    assert args.format == ("json", "md", "html", "csv")
    assert args.save_history is True
    assert args.compare_to == "main"
    assert args.threshold == 0.05
    assert args.fail_on_regression is True
    assert settings.max_memory_bytes == 2 << 30


@pytest.mark.usefixtures("full_repo")
def test_the_full_example_sets_every_key_and_each_key_names_a_real_flag(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path / "suite.yml", FULL))
    assert set(suite.values) == set(SUITE_KEYS)
    run = next(a for a in build_parser()._actions
               if isinstance(a, argparse._SubParsersAction)).choices["run"]
    dests = {flag: action.dest for action in run._actions for flag in action.option_strings}
    defaults = parse_args(["run"])
    resolved = parse_args(["run", "--config", str(suite.path)])
    for key, (dest, flag) in SUITE_KEYS.items():
        if key != "sweeps":  # the one key no flag stands for
            assert dests[flag] == dest, key
        assert getattr(resolved, dest) != getattr(defaults, dest, None), key


def test_schema_choices_match_the_cli() -> None:
    from kernbench.config.options import PROFILERS
    from kernbench.config.schema import suite_schema
    from kernbench.results.vocabulary import COMPILE_MODE_NAMES

    choices = {o.name: o.choices for o in command("run").options}
    assert choices["--precision"] == PRECISION_NAMES
    assert choices["--backends"] == BACKEND_NAMES
    assert tuple(suite_schema(())["properties"]["profile"]["enum"]) == choices["--profile"]
    keys = suite_schema(())["properties"]
    assert tuple(keys["profile"]["enum"]) == PROFILERS
    assert tuple(keys["compile_mode"]["enum"]) == COMPILE_MODE_NAMES


def test_formats_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernbench.reporting import formats

    monkeypatch.setattr(formats, "check_libraries", lambda names: None)  # matplotlib or not
    assert parsed(tmp_path, "formats: [all]\n").format == formats.ALL_FORMATS


# -- precedence -------------------------------------------------------------------------------


@pytest.mark.usefixtures("full_repo")
def test_explicit_flags_win_over_the_file_and_the_file_over_defaults(tmp_path: Path) -> None:
    args = parsed(tmp_path, FULL, "--iters", "30", "--precision", "fp16", "--filter", "x",
                  "--output-dir", "elsewhere")
    settings = run_settings(args)
    assert settings.protocol.iterations == 30  # explicit, even though it equals the default
    assert settings.precisions == ("fp16",)
    assert settings.filters == ("x",)
    assert args.output_dir == Path("elsewhere")
    assert settings.protocol.warmup == 5  # from the file
    assert settings.processes == 5
    plain = run_settings(parse_args(["run"]))
    assert plain.protocol.iterations == 30 and plain.protocol.warmup == 3  # defaults
    partial = run_settings(parsed(tmp_path, "warmup: 0\n"))
    assert partial.protocol.warmup == 0 and partial.protocol.iterations == 30
    assert partial.processes == 3


def test_flag_position_does_not_matter(tmp_path: Path) -> None:
    suite = write(tmp_path / "suite.yml", "iterations: 50\n")
    args = parse_args(["run", "--iters", "9", "--config", str(suite)])
    assert args.iters == 9


def test_record_names_the_file_and_the_resolved_values(tmp_path: Path) -> None:
    args = parsed(tmp_path, "iterations: 50\nwarmup: 5\nprecisions: [fp32]\n", "--iters", "8")
    record = args.suite.record(args)
    assert record == {"path": str((tmp_path / "suite.yml").resolve()),
                      "values": {"iterations": 8, "warmup": 5, "precisions": ["fp32"]},
                      "overridden_by_flags": ["iterations"]}
    json.dumps(record)


def test_no_config_means_no_suite() -> None:
    assert parse_args(["run"]).suite is None


# -- validation -------------------------------------------------------------------------------


def test_unknown_key_suggests_the_closest(tmp_path: Path) -> None:
    message = config_error(tmp_path, "iteration: 5\n")
    assert message.startswith("suite.yml: key 'iteration': expected a known key")
    assert "did you mean 'iterations'?" in message


def test_wrong_type(tmp_path: Path) -> None:
    message = config_error(tmp_path, "iterations: '50'\n")
    assert "key 'iterations': expected an integer (got '50')" in message
    assert "key 'kernels': expected a list" in config_error(tmp_path, "kernels: gemm\n")
    assert "key 'trace_memory': expected true or false" in config_error(
        tmp_path, "trace_memory: 1\n")
    assert "key 'iterations': expected a number >= 1" in config_error(tmp_path,
                                                                       "iterations: 0\n")


@pytest.mark.parametrize(("text", "expected"), [
    ("iterations: 5.0\n", "key 'iterations': expected an integer (got 5.0)"),
    ("warmup: 1.0\n", "key 'warmup': expected an integer (got 1.0)"),
    ("processes: 2.0\n", "key 'processes': expected an integer (got 2.0)"),
    ("profile_iters: 3.0\n", "key 'profile_iters': expected an integer (got 3.0)"),
    ("threshold: .nan\n", "key 'threshold': expected a finite number (got nan)"),
    ("warmup_time_s: .inf\n", "key 'warmup_time_s': expected a finite number (got inf)"),
    ("timeout_s: .nan\n", "key 'timeout_s': expected a finite number (got nan)"),
    ("gpus_per_shard: .inf\n", "key 'gpus_per_shard': expected a finite number (got inf)"),
    ("timeout_s: .inf\n", "key 'timeout_s': expected a finite number (got inf)"),
    ("iterations: 100001\n", "key 'iterations': expected a number <= 100000 (got 100001)"),
    ("processes: 3000000\n", "key 'processes': expected a number <= 1000 (got 3000000)"),
    ("timeout_s: 1e10\n", "key 'timeout_s': expected seconds, a number > 0 and at most 604800"),
])
def test_numbers_are_read_as_their_flags_read_them(tmp_path: Path, text: str,
                                                    expected: str) -> None:
    """`--iters 5.0` is refused and `--threshold nan` too; the file's keys were looser: 5.0
    failed later naming an internal job.json, NaN and inf went through."""
    message = config_error(tmp_path, text)
    assert message.startswith(f"suite.yml: {expected}")


def test_bad_precision_backend_and_format(tmp_path: Path) -> None:
    message = config_error(tmp_path, "precisions: [fp32, fp33]\n")
    assert "suite.yml: key 'precisions[1]': expected one of fp64, fp32" in message
    assert "did you mean 'fp32'?" in message and "(got 'fp33')" in message
    assert "key 'backends[0]'" in config_error(tmp_path, "backends: [cdua]\n")
    assert "did you mean 'cuda'?" in config_error(tmp_path, "backends: [cdua]\n")
    assert "key 'formats[1]'" in config_error(tmp_path, "formats: [json, pdf]\n")


def test_a_bad_gpu_timing_mode_names_the_file_the_key_and_the_modes(tmp_path: Path) -> None:
    message = config_error(tmp_path, "gpu_timing: warm\n")
    assert "suite.yml: key 'gpu_timing': expected one of cold, hot, graph, kernel, sync, all" \
        in message
    assert "(got 'warm')" in message


def test_not_a_mapping_and_empty_file(tmp_path: Path) -> None:
    assert config_error(tmp_path, "- iterations\n") == \
        "suite.yml: expected a mapping (got ['iterations'])"
    assert "expected a mapping of run options (the file is empty)" in config_error(tmp_path, "")


def test_a_key_written_twice_names_file_line_and_key(tmp_path: Path) -> None:
    message = config_error(tmp_path, "iterations: 5\nwarmup: 1\niterations: 6\n")
    assert message.startswith("suite.yml:3:1: key 'iterations': expected each key once in its "
                              "mapping (it is already on line 1"), message


def test_yaml_tags_are_refused_and_nothing_is_evaluated(tmp_path: Path) -> None:
    marker = tmp_path / "evaluated"
    text = f"seed: !!python/object/apply:os.system ['touch {marker}']\n"
    with pytest.raises(ConfigError) as caught:
        load_suite(write(tmp_path / "suite.yml", text))
    assert "expected valid YAML" in caught.value.message
    assert "python/object" in caught.value.message
    assert not marker.exists()


def test_cli_reports_a_bad_file_with_exit_code_2(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    suite = write(tmp_path / "suite.yml", "precisions: [fp33]\n")
    assert main(["run", "--config", str(suite)]) == 2
    err = capsys.readouterr().err
    assert "precisions[0]" in err and "did you mean" in err
    assert main(["run", "--config", str(tmp_path / "missing.yml")]) == 2
    assert "cannot read the suite file" in capsys.readouterr().err


# -- end to end -------------------------------------------------------------------------------


def test_run_with_config_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "kernels" / "double" / "double.py", GOOD)
    write(tmp_path / "kernels" / "other" / "other.py", GOOD)
    suite = write(tmp_path / "suite.yml", """
        output_dir: reports/nightly
        iterations: 7
        warmup: 1
        kernels: [doub*]
        formats: [json, csv]
        """)
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--config", str(suite), "--debug-fake-timer", "1", "-q"])
    assert code == 0, capsys.readouterr().err
    out = tmp_path / "reports" / "nightly"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["settings"]["iterations"] == 7
    assert [r["kernel_name"] for r in summary["results"]] == ["double"]
    assert (out / "results.csv").is_file()
    assert not (out / "index.html").exists()  # html not among the file's formats
    config = summary["settings"]["config"]
    assert config["path"] == str(suite.resolve())
    assert config["values"]["iterations"] == 7
    assert config["values"]["formats"] == ["json", "csv"]
    assert config["overridden_by_flags"] == []


def test_bench_all_accepts_config(tmp_path: Path) -> None:
    write(tmp_path / "kernels" / "double" / "double.py", GOOD)
    write(tmp_path / "suite.yml", "output_dir: out\niterations: 3\nwarmup: 0\n"
          "formats: [json]\n")
    done = subprocess.run(
        [sys.executable, str(REPO / "tools" / "bench_all.py"), "--config", "suite.yml",
         "--debug-fake-timer", "1", "-q", "--iters", "4"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    settings = json.loads((tmp_path / "out" / "summary.json").read_text())["settings"]
    assert settings["iterations"] == 4
    assert settings["config"]["overridden_by_flags"] == ["iterations"]


def test_readme_example_is_valid_and_documents_every_key(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Suite files"):readme.index("## Reports")]
    example = section[section.index("```yaml\n") + 8:]
    example = example[:example.index("```")]
    suite = load_suite(write(tmp_path / "suite.yml", example))
    assert set(suite.values) == set(SUITE_KEYS)
    for key, (_, flag) in SUITE_KEYS.items():
        assert f"| `{key}` | `{flag}` |" in section, key


def test_suite_sweeps_replace_the_matching_kernels_sweep(tmp_path: Path) -> None:
    kernel = write(tmp_path / "repo" / "kernels" / "mm" / "mm.py", """
        import numpy as np

        def run_benchmark(m=2, k=2, n=2, block=1):
            return np.ones((m, n))
    """)
    write(kernel.with_name("bench.yaml"), "sweep:\n  params:\n    m: [3, 5]\n")
    write(tmp_path / "repo" / "kernels" / "other" / "other.py", GOOD)
    write(tmp_path / "suite.yml", """
        root: repo
        output_dir: out
        iterations: 3
        warmup: 0
        sweeps:
          "m*":
            matrix_shapes: [{name: custom, shapes: [[4, 8, 16]]}]
            params: {block: [1, 2]}
    """)
    proc = subprocess.run([sys.executable, "-m", "kernbench.cli", "run", "--config",
    "suite.yml",
                           "--debug-fake-timer", "1.0", "--quiet"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    by_id = {r["case_id"]: r for r in summary["results"]}
    # A kernel without a precision parameter is labelled with its output's dtype.
    assert sorted(by_id) == ["mm[cpu,fp64,m=4,k=8,n=16,block=1]",
                             "mm[cpu,fp64,m=4,k=8,n=16,block=2]", "other[cpu,fp32]"]
    assert by_id["mm[cpu,fp64,m=4,k=8,n=16,block=2]"]["problem_size"] == {
        "m": 4, "k": 8, "n": 16, "block": 2}
    assert summary["settings"]["config"]["values"]["sweeps"]["m*"]["params"] == {"block": [1, 2]}


def test_suite_sweeps_are_checked_before_anything_runs(tmp_path: Path) -> None:
    message = config_error(tmp_path, """
        sweeps:
          gemm:
            matrix_shapes: [{name: pow2, min_power: 9, max_power: 3}]
    """)
    assert message.startswith("suite.yml (sweeps.gemm): key 'sweep.matrix_shapes[0]"), message
    bad = config_error(tmp_path, "sweeps:\n  gemm:\n    matrix_shapes: [{name: pow3}]\n")
    assert "key 'sweeps.gemm.matrix_shapes[0].name'" in bad and "pow2" in bad, bad


def test_a_suite_sweeps_glob_that_matches_no_kernel_is_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the suite's root is relative to the working directory
    write(tmp_path / "repo" / "kernels" / "scale" / "scale.py", GOOD)
    write(tmp_path / "suite.yml", """
        root: repo
        sweeps:
          scael:
            params: {n: [1, 2]}
    """)
    code = main(["run", "--config", str(tmp_path / "suite.yml"), "--output-dir",
                 str(tmp_path / "out"), "--debug-fake-timer", "1", "-q"])
    assert code == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'suite.yml'}: key 'sweeps.scael': expected a glob matching a kernel " \
           "(kernels: scale)" in err, err
