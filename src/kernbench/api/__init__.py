"""The library API: what the CLI, tools/, the pytest plugin and the bot call.

One room above all others but the CLI: it may import every room below (execution, measure,
discovery, config, results, analysis, reporting, ci) and joins them into the commands a user
runs. Callers import from here; the submodules are its parts:

- :mod:`~kernbench.api.run`: discover kernels, run a suite (:func:`run_suite`), its exit code;
- :mod:`~kernbench.api.sink`: the run's report set, written case by case as it goes;
- :mod:`~kernbench.api.reports`: render formats, write a finished report set, merge shards;
- :mod:`~kernbench.api.compare`: compare two runs into comparison.json and regressions.md;
- :mod:`~kernbench.api.ab`: interleaved A/B of a git ref against this tree;
- :mod:`~kernbench.api.baselines`: the history store, and baselines stored or at a git ref.
"""

from kernbench.api.ab import run_ab
from kernbench.api.baselines import (
    compare_dir_to_ref,
    compare_to_ref,
    compare_to_stored,
    save_history,
    save_history_of_dir,
)
from kernbench.api.compare import compare_files, write_run_comparison
from kernbench.api.reports import (
    clear_previous_reports,
    merge_shards,
    render_reports,
    write_report_set,
)
from kernbench.api.run import RunOutcome, discover, exit_code_for, run_suite

__all__ = [
    "RunOutcome",
    "clear_previous_reports",
    "compare_dir_to_ref",
    "compare_files",
    "compare_to_ref",
    "compare_to_stored",
    "discover",
    "exit_code_for",
    "merge_shards",
    "render_reports",
    "run_ab",
    "run_suite",
    "save_history",
    "save_history_of_dir",
    "write_report_set",
    "write_run_comparison",
]
