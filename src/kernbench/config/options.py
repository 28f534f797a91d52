"""The one option table: every command-line flag, its suite-file key, its default and its help.

Pure data, read three ways: :mod:`kernbench.cli.parser` builds argparse from it,
:mod:`kernbench.config.suite` maps suite-file keys to flags and converts their values with it,
and ``tests/config/test_options.py`` checks that the README's CLI reference states the same
flags and defaults. It lives in ``config`` (not ``cli``) so the suite loader can read it
without importing the room above; it imports no argparse.

An option's ``help`` stops before its default: where ``shown_default`` is set, the help ends in
``(default: <shown_default>)`` and the README's default column says exactly that.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from kernbench.config.values import MAX_ITERATIONS
from kernbench.results.vocabulary import (
    BACKEND_NAMES,
    COMPILE_MODE_NAMES,
    GPU_TIMING_CHOICES,
    PRECISION_NAMES,
)

Kind = Literal["switch", "toggle", "text", "int", "count", "positive_float", "non_negative_float",
               "probability", "path", "list", "choice", "size", "formats", "shard", "slowdowns"]
"""How an option's text is read: `switch` takes no value; `toggle` takes none either and has
a `--no-` twin that turns it off; `count` is an integer >= `minimum`;
`probability` is a number strictly between 0 and 1; `list` is a comma list (checked against
`choices` when given); the last four have parsers of their own
(:mod:`kernbench.cli.arguments`)."""

DEFAULT_PROCESSES = 3
"""Worker processes per case: the fewest with which a comparison of two stored runs can
estimate between-process noise (Welch's test on process medians needs 3 a side)."""
MAX_PROCESSES = 1_000
"""The most worker processes per case (``--processes``, suite-file ``processes``) and --ab rounds
(``--rounds``): each process has its own timeout, but nothing bounds their number, so a typo
(``--processes 3000000``) would run for ever."""
MAX_TIMEOUT_S = 604_800
"""The longest per-case limit (``--timeout``, bench.yaml and suite-file ``timeout_s``): one
week. Longer is no limit at all, and past ~24 days the waits of the worker's pipes overflow."""
DEFAULT_PROFILE_ITERS = 5
"""Kernel calls made under ``--profile``."""
PROFILERS = ("cprofile", "torch", "jax")
"""``--profile`` choices: the profilers :mod:`kernbench.measure.profiling` runs."""
REPORT_FORMATS = ("json", "md", "html", "csv", "pytorch_v3", "github", "junit", "png", "bmf",
                  "pytest-benchmark")
"""``--format`` names a user may write besides ``all``; the suite schema checks them. The
writers behind them are the registry of :mod:`kernbench.reporting.formats` (a test keeps the
two equal; config may not import reporting)."""
FORMAT_ALIASES = {"pytorch-oss": "pytorch_v3"}
"""Other names of a format: the name its consumer knows it by."""
DEFAULT_FORMATS = ("json", "md", "html")
EXECUTORS = ("local", "slurm", "ray")
"""``--executor`` choices: where ``--shards N`` run (:mod:`kernbench.execution.executors`)."""
SLURM_TEST_CLUSTERS = ("local", "debug")
"""``--debug-slurm-cluster`` choices: submitit's executors that run the job array here."""


@dataclass(frozen=True)
class Option:
    """One flag (or positional argument) of one or more commands."""

    flags: tuple[str, ...]
    help: str | None = None
    kind: Kind = "text"
    default: Any = None
    shown_default: str | None = None
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    minimum: int = 0
    maximum: float | None = None
    """The largest value a `count` or a float kind takes (None: no bound but finiteness)."""
    suite_key: str | None = None
    nargs: str | None = None

    @property
    def name(self) -> str:
        """The long flag (`--output-dir`), or a positional argument's name."""
        return self.flags[-1]

    @property
    def dest(self) -> str:
        """The attribute argparse stores the value under."""
        return self.name.lstrip("-").replace("-", "_")

    @property
    def positional(self) -> bool:
        return not self.name.startswith("-")

    @property
    def full_help(self) -> str | None:
        """The help as printed: the text, then the stated default."""
        if self.shown_default is None:
            return self.help
        return f"{self.help} (default: {self.shown_default})"

    @property
    def negation(self) -> str | None:
        """A toggle's flag that turns it off (`--no-interleave`); None for other kinds."""
        return f"--no-{self.name[2:]}" if self.kind == "toggle" else None

    @property
    def usage(self) -> str:
        """`--iters N`, `--isolation fork|spawn`, `--list`, `--interleave/--no-interleave`: how
        the README's reference names it."""
        if self.kind in ("switch", "toggle"):
            return "/".join((*self.flags, *filter(None, [self.negation])))
        value = self.metavar or ("|".join(self.choices) if self.choices else self.dest.upper())
        return f"{self.name} {value}"


@dataclass(frozen=True)
class Command:
    """A subcommand: its name, its one-line help, and its options in the order of its help."""

    name: str
    help: str
    options: tuple[Option, ...]


DESCRIPTION = ("Discover compute kernels, measure them under one protocol, and write JSON and "
               "Markdown reports.")

FORMAT = Option(("--format",), "report formats: json, md, html, csv, pytorch_v3 (or "
                "pytorch-oss), github, junit, png (needs matplotlib), bmf, pytest-benchmark, or "
                "all (see README, Reports)", "formats", DEFAULT_FORMATS, "json,md,html",
                metavar="F[,F]", suite_key="formats")

COMPARISON = (
    Option(("--fail-on-regression",), "exit 1 when a comparison finds a regression", "switch",
           False,
           "warn only", suite_key="fail_on_regression"),
    Option(("--threshold",), "practical threshold for latency changes, e.g. 0.05 for 5%",
           "positive_float", 0.10, "0.10; bench.yaml regression.latency overrides per kernel",
           metavar="FRACTION", suite_key="threshold"),
    Option(("--accuracy-drift",), "flag a change of relative error larger than this",
           "positive_float", 1e-3, "1e-3", metavar="X"),
    Option(("--alpha",), "false discovery rate across all cases, between 0 and 1",
           "probability", 0.05, "0.05"),
)

MERGE_COMPARISON = tuple(replace(
    option, default=None, shown_default=f"for the comparison of --ab shards, theirs (which "
    f"must agree); else {option.shown_default}") for option in COMPARISON[1:])
"""`merge`'s --threshold, --accuracy-drift and --alpha: not given (None), the merge of --ab
shards compares as the shards did."""

DISCOVERY = (
    Option(("--root",), "repository whose discovery paths are scanned", "path", Path("."), ".",
           suite_key="root"),
    Option(("--paths",), "replace the discovery paths, relative to --root (by default the five "
           "seed paths + [tool.kernbench] paths)", "list",
           metavar="DIR[,DIR]", suite_key="paths"),
    Option(("--filter",), "only kernels whose name matches one of these globs (by default all)",
           "list", (),
           metavar="GLOB[,GLOB]", suite_key="kernels"),
)

RUN = (
    Option(("--config",), "suite file of run options (see README, Suite files); flags given "
           "here win over it", "path", metavar="SUITE.yml"),
    Option(("--iters",), f"timed samples per worker process (at most {MAX_ITERATIONS})", "count",
           30, "30", "N", minimum=1, maximum=MAX_ITERATIONS, suite_key="iterations"),
    Option(("--warmup",), "untimed calls before calibration", "count", 3, "3", "N",
           suite_key="warmup"),
    Option(("--warmup-time",), "least time the kernel runs before its first sample: the warmup "
           "calls, calibration, then untimed blocks of calls (see README, Measurement)",
           "non_negative_float", 0.1, "0.1",
           "SECONDS", suite_key="warmup_time_s"),
    Option(("--precision",), "precisions to run, e.g. fp32,fp16 (intersected with the "
           "kernel's)", "list", None,
           "each kernel's bench.yaml precisions, else fp32", "P[,P]", PRECISION_NAMES,
           suite_key="precisions"),
    Option(("--backends",), "device kinds to run on, e.g. cpu,cuda; a backend missing here is "
           "skipped with the reason", "list", None,
           "each kernel's declared backends", "B[,B]", BACKEND_NAMES, suite_key="backends"),
    Option(("--processes",), "worker processes per case, each taking --iters samples; the "
           "process is the unit of replication, and comparisons need 3 a side to measure the "
           f"noise between processes (at most {MAX_PROCESSES})", "count", DEFAULT_PROCESSES,
           str(DEFAULT_PROCESSES), "N", minimum=1, maximum=MAX_PROCESSES, suite_key="processes"),
    Option(("--interleave",), "run the --processes in rounds, process k of every case in round "
           "k (as asv's interleaved rounds do), so a burst of load hits one process of several "
           "cases, not every process of one; --no-interleave runs a case's processes back to "
           "back; nothing changes with --processes 1, nor with --ab, which runs rounds of its "
           "own (see README, Regressions you can trust)", "toggle", True, "on",
           suite_key="interleave"),
    Option(("--output-dir",), "where reports are written", "path", Path("reports"), "reports",
           "DIR", suite_key="output_dir"),
    Option(("--seed",), "passed to kernels that take `seed`; seeds random, NumPy's and "
           "torch's global RNGs",
           "count", 1337, "1337", minimum=0, maximum=2**32 - 1, suite_key="seed"),
    Option(("--timeout",), "limit of each of a case's worker processes; the worker and its "
           f"children are killed after it (at most {MAX_TIMEOUT_S}: one week)",
           "positive_float", 300.0, "300; bench.yaml timeout_s overrides per kernel",
           "SECONDS", maximum=MAX_TIMEOUT_S, suite_key="timeout_s"),
    Option(("--max-memory",), "address-space limit of each worker (RLIMIT_AS), e.g. 512M or "
           "2G (by default none); an allocation past it fails the case, naming the limit. "
           "NumPy kernels fit in 512M, torch and jax kernels want 2G-4G (see README, "
           "Robustness)", "size", metavar="SIZE", suite_key="max_memory"),
    Option(("--resume",), "finish the interrupted run in DIR: keep its finished cases, run the "
           "rest, with the run's own settings (a flag that contradicts them is refused; see "
           "README, Robustness)", "path", metavar="DIR"),
    Option(("--isolation",), "how each case's worker process starts: fork (from a server that "
           "preloaded the framework once; spawned where fork is unsafe) or spawn (a fresh "
           "interpreter per worker)", "choice", "fork", "fork", choices=("fork", "spawn"),
           suite_key="isolation"),
    Option(("--trace-memory",), "also record Python allocations with tracemalloc (slows Python "
           "code; flagged)", "switch", False, suite_key="trace_memory"),
    Option(("--gpu-timing",), "how GPU cases are timed: cold (L2 flushed before each call, an "
           "event pair per call, one host sync per block of up to 256 calls), hot (N "
           "back-to-back calls / N), graph (N calls in a CUDA graph / N; also graph_cold), "
           "kernel (the profiler's device time per call), sync (a host sync after every call) "
           "or all (every mode, and the launch overhead)", "choice", None,
           "cold; bench.yaml gpu_timing sets it per kernel", choices=GPU_TIMING_CHOICES,
           suite_key="gpu_timing"),
    Option(("--no-l2-flush",), "GPU cases: do not evict the L2 cache before each call",
           "switch", False),
    Option(("--cache-dir",), "machine-level cache: the CPU peak probe, the --testbed name",
           "path", None,
           "$XDG_CACHE_HOME/kernbench or ~/.cache/kernbench", "DIR"),
    Option(("--no-cpu-peak",), "skip the CPU probe; CPU % of peak stays empty",
           "switch", False),
    Option(("--list",), "print the kernels and what each would run; run nothing", "switch", False),
    Option(("--sku",), "SKU for bench.yaml golden values", "text", None, "detected from the GPU",
           suite_key="sku"),
    Option(("--shard",), "run only shard K of N (stable by kernel); join with `kernbench "
           "merge`", "shard", metavar="K/N"),
    Option(("--testbed",), "the name this machine goes by in merged reports; kept for this host "
           "in the cache folder, so later runs keep it", "text", None,
           "the name kept for this host, else the host name", "NAME", suite_key="testbed"),
    Option(("--save-history",), "append this run's record under ROOT/benchmarks/history/",
           "switch", False, suite_key="save_history"),
    Option(("--compare-to",), "compare with the newest history record at git ref REF for this "
           "machine; writes regressions.md", metavar="REF", suite_key="compare_to"),
    Option(("--baseline",), "compare with a stored run (summary.json, report directory or "
           "history record), read before anything runs; writes regressions.md", "path",
           metavar="FILE"),
    Option(("--ab",), "interleaved A/B on this machine: REF (in a temporary worktree) against "
           "this tree, in alternating rounds; writes regressions.md", metavar="REF"),
    Option(("--rounds",), "--ab rounds: processes per case and side (30 caught 100% of +10% "
           f"and 90% of +5% slowdowns here, with no false alarm; at most {MAX_PROCESSES})",
           "count", 30, "30; p < 0.05 needs 6 rounds, and q < 0.05 among m compared cases "
           "more than log2(40 m), 8 for 4", "N", minimum=2, maximum=MAX_PROCESSES),
    Option(("--debug-inject-slowdown",), "testing aid: matching kernels' calls take FACTOR "
           "times as long (with --ab: on this tree's side only); kept in settings.inject_slowdown,"
           " never in history", "slowdowns", (), metavar="GLOB=FACTOR[,...]"),
    Option(("--profile",), "after each case's timed samples, call the kernel again under this "
           "profiler and write OUTPUT_DIR/profiles/ (the samples are not profiled; not with "
           "--ab)", "choice",
           choices=PROFILERS, suite_key="profile"),
    Option(("--profile-iters",), "kernel calls made under --profile", "count",
           DEFAULT_PROFILE_ITERS, str(DEFAULT_PROFILE_ITERS), "N", minimum=1,
           suite_key="profile_iters"),
    Option(("--compile-mode",), "torch.compile mode for every implementation whose bench.yaml "
           "has `compile:`, instead of the mode it names (see README, Several "
           "implementations)", "choice",
           choices=COMPILE_MODE_NAMES, suite_key="compile_mode"),
)

ALLOW_MIXED = Option(("--allow-mixed",), "merge shards of different machines (fingerprints) "
                     "into one report, kept apart and grouped by testbed, never compared across "
                     "(without it such a merge is refused, naming both machines)", "switch",
                     False)
STRICT = Option(("--strict",), "exit 1 when a case of the suite is missing (a shard that never "
                "came back, an interrupted shard)", "switch", False, "warn only")

SCALE = (
    Option(("--shards",), "run the suite as N shards on --executor, each into "
           "OUTPUT_DIR/shards/K-of-N, retry a shard that did not finish once, then merge them "
           "into OUTPUT_DIR", "count", None, metavar="N", minimum=1, suite_key="shards"),
    Option(("--executor",), "where --shards run: local (processes on this machine), slurm (one "
           "job array; kernbench[slurm]) or ray (one task per shard; kernbench[ray])", "choice",
           "local", "local", choices=EXECUTORS, suite_key="executor"),
    Option(("--jobs",), "local executor: shards running at once", "count", 1, "1", "N",
           minimum=1, suite_key="jobs"),
    Option(("--partition",), "slurm: the partition of the job array", metavar="NAME",
           suite_key="partition"),
    Option(("--gpus-per-task",), "slurm: GPUs of each shard's task", "count", None,
           metavar="N", minimum=0, suite_key="gpus_per_task"),
    Option(("--time",), "slurm: time limit of each shard's task, in minutes", "count", None,
           metavar="MIN", minimum=1, suite_key="time"),
    Option(("--exclusive",), "slurm: each task has its node to itself", "switch", False,
           suite_key="exclusive"),
    Option(("--slurm-arg",), "slurm: more sbatch options (submitit's own parameter where it "
           "has one of the name, else #SBATCH --KEY=VALUE)", "list", (),
           metavar="KEY=VALUE[,...]", suite_key="slurm_args"),
    Option(("--ray-address",), "ray: the cluster to join (auto: the one this node is in)",
           metavar="ADDRESS", suite_key="ray_address"),
    Option(("--gpus-per-shard",), "ray: GPUs each shard's task asks for", "non_negative_float",
           0.0, "0", "N", suite_key="gpus_per_shard"),
    Option(("--ray-resource",), "ray: custom resources each shard's task asks for, such as a "
           "machine kind a node declares", "list", (), metavar="KEY=AMOUNT[,...]",
           suite_key="ray_resources"),
    ALLOW_MIXED,
    STRICT,
)

RUN_LAST = (
    Option(("--debug-fake-timer",), "testing aid: each call takes exactly MS on a fake clock "
           "(known numbers; never compared with measured ones)", "positive_float", metavar="MS"),
    Option(("--debug-slurm-cluster",), "testing aid: --executor slurm submits its job array to "
           "submitit's local or debug executor on this machine, not to Slurm (the Slurm options "
           "are then ignored); without it, a machine with no sbatch is refused", "choice",
           choices=SLURM_TEST_CLUSTERS),
)

OUTPUT = (
    Option(("-v", "--verbose"), "print more on stderr: discovery decisions, each step and case",
           "switch", False),
    Option(("-q", "--quiet"), "print nothing on stderr but errors and a comparison's verdict "
           "and its warnings: no progress, status lines or other warnings", "switch", False),
    Option(("--json",), "print the command's result on stdout as JSON instead of text (run: "
           "the manifest with --list, else the outcome)", "switch", False),
)
"""Every command takes these, with the same meaning: what it produces goes to stdout (text, or
JSON with --json), what it says about it to stderr (more with -v, nothing but errors with -q)."""

HISTORY = (
    Option(("--root",), "repository whose benchmarks/history is listed", "path", Path("."), "."),
    Option(("--kernel",), "only records holding a kernel whose name matches this glob",
           metavar="GLOB"),
    Option(("--machine",), "only records of this machine fingerprint", metavar="FINGERPRINT"),
    Option(("--branch",), "only records made on this git branch", metavar="BRANCH"),
    Option(("--since",), "only records created at or after this ISO date (a prefix such as "
           "2026-11 works)", metavar="DATE"),
    Option(("--limit",), "at most N records, newest first", kind="count", metavar="N",
           minimum=1),
    Option(("--add",), "append the record of the run in RUN_DIR (e.g. merged shards downloaded "
           "by CI) instead of listing", "path", metavar="RUN_DIR"),
)

MERGE = (
    Option(("output_dir",), "where the merged report set goes", "path"),
    Option(("shards",), "shard output directories", "path", nargs="+"),
    Option(("--root",), "repository whose benchmarks/history feeds the trends", "path",
           Path("."), "."),
    Option(("--save-history",), "append the merged run's record under "
           "ROOT/benchmarks/history/", "switch", False),
    Option(("--compare-to",), "compare the merged run with the newest history record at git "
           "ref REF for this machine", metavar="REF"),
    ALLOW_MIXED,
    STRICT,
)

COMMENT = (
    Option(("run_dir",), "report directory (summary.json, comparison.json, env.json)", "path",
           metavar="DIR"),
    Option(("--validate",), "first check DIR against the report schema and size limits (for "
           "artifacts of untrusted runs); exit 2 if it fails", "switch", False),
    Option(("--run-url",), "link to the CI run, shown at the end", metavar="URL"),
    Option(("--max-chars",), "hard size limit", "count", 60_000, "60000; GitHub allows 65536",
           "N", minimum=3000, maximum=65536),
    Option(("--from-fork",), "the pull request comes from this fork: the comment warns that its "
           "figures were measured by the fork's own, untrusted code", metavar="OWNER/NAME"),
)

REPORT = (
    Option(("run_dir",), "output directory of an earlier run (holds summary.json)", "path",
           metavar="DIR"),
    Option(("--output-dir",), "write the reports here instead of into DIR", "path",
           metavar="DIR"),
    Option(("--root",), "repository whose benchmarks/history feeds the trends (runs started "
           "after DIR's left out)", "path", None, "the run's own --root, when it still exists"),
)

COMPARE = (
    Option(("baseline",), "summary.json, report dir or history record", "path"),
    Option(("candidate",), "summary.json, report dir or history record", "path"),
    Option(("--output-dir",), "where regressions.md and comparison.json go", "path",
           Path("reports"), "reports", metavar="DIR"),
)

COMMANDS = (
    Command("run", "discover and benchmark kernels, write reports",
            (*DISCOVERY, *RUN, *SCALE, *COMPARISON, FORMAT, *RUN_LAST, *OUTPUT)),
    Command("list", "discover kernels and print the manifest", (*DISCOVERY, *OUTPUT)),
    Command("history", "list benchmark history records", (*HISTORY, *OUTPUT)),
    Command("merge", "join shard outputs into one report set",
            (*MERGE, COMPARISON[0], *MERGE_COMPARISON, FORMAT, *OUTPUT)),
    Command("comment", "print the pull-request comment for a report directory",
            (*COMMENT, *OUTPUT)),
    Command("report", "re-render the reports of an earlier run from its JSON; runs nothing",
            (*REPORT, FORMAT, *OUTPUT)),
    Command("compare", "compare two result files; write regressions.md and comparison.json",
            (*COMPARE, *COMPARISON, *OUTPUT)),
)
"""Every command, in the order of ``kernbench --help``."""

def command(name: str) -> Command:
    """The command called `name`."""
    return next(c for c in COMMANDS if c.name == name)


def suite_options() -> dict[str, Option]:
    """Suite-file key -> the run option it stands for (``sweeps`` has no flag)."""
    return {o.suite_key: o for o in command("run").options if o.suite_key is not None}
