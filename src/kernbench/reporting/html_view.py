"""index.html of a large run, bounded like summary.md and rendered from the same view.

A page with a row and a card per case does not scale: 20,000 cases made a 100 MB page that
took 40 s and 700 MB to write. A run of more than `HTML_MAX_CASES` cases gets the dashboard of
:mod:`kernbench.reporting.html` (same template, same rows and cards) over a bounded set of
cases, taken from a :class:`~kernbench.reporting.summary_view.SummaryView`:

* the leaderboard: the first `MAX_ROWS` cases by p50 (summary.md's leaderboard);
* Failures & skips: the first `MAX_ROWS` failed, timed-out or invalid cases and skipped ones;
* Case details (and Latency distributions): a card for each case on the board, each of those
  problems with samples, the slowest case, and, when compared, each regressed case (up to
  `MAX_ROWS`; on this path only, which holds every record);
* the speedup and bandwidth charts: the first `CHART_KERNELS` kernels with successful cases;
* the comparison: at most `MAX_ROWS` significant changes and `MAX_ROWS` others;

and says how many more there are and where every case is (summary.json, results.csv). The
counts, the fastest and slowest case and summary.md's findings still cover every case. A run
of at most `HTML_MAX_CASES` cases keeps the whole page. A merge renders this page from the
views it fed shard by shard (:func:`html_view_pages`), so it never holds every record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kernbench.reporting.bundle import ReportInputs
from kernbench.reporting.html import (
    PageCases,
    board_row,
    environment_rows,
    html_environment,
    normalised,
    render_page,
)
from kernbench.reporting.machines import incomplete_text, machine_dir
from kernbench.reporting.summary_view import MAX_ROWS, SummaryView, summary_view
from kernbench.reporting.views import Record, section
from kernbench.results.machines import machine_label, machine_part, machines_of

__all__ = ["HTML_MAX_CASES", "bounded", "html_view_pages", "render_large"]

HTML_MAX_CASES = MAX_ROWS
"""A run of more cases than this gets the bounded page."""
STATUSES = ("ok", "failed", "timeout", "skipped", "invalid")


def bounded(total: int) -> bool:
    """Whether a run of `total` cases gets the bounded page."""
    return total > HTML_MAX_CASES


def _normaliser() -> Any:
    """One normalised copy per record (by identity), so a record on the board and in the
    charts is one case with one anchor."""
    made: dict[int, Record] = {}

    def norm(record: Record) -> Record:
        found = made.get(id(record))
        if found is None:
            found = made[id(record)] = normalised(record)
        return found
    return norm


def view_cases(view: SummaryView, environment: Mapping[str, Any],
               regressed: Sequence[Record] = ()) -> tuple[PageCases, dict[str, Any]]:
    """The cases a bounded page shows of `view` (its `machines` set), and what it leaves out."""
    norm = _normaliser()
    board_records, board_more = view.board(None)
    board = [norm(r) for r in board_records]
    problems = [norm(r) for r in view.items("problems")]
    slowest = view.extremes.get("slowest")
    last = [norm(slowest[1])] if slowest is not None else []
    chosen = board + [r for r in problems if section(r, "timing").get("samples_ms")] + last
    cards = list({id(r): r for r in chosen + [norm(r) for r in regressed]}.values())
    anchors = {id(r): f"case-{i}" for i, r in enumerate(cards)}
    absent = view.absent(environment)
    skipped, skipped_more = view.skipped_rows(absent)
    ran = [norm(r) for group in view.charted.items(view.machines) for r in group]
    rank = sum(kept.count for kept in view.boards.values())  # the slowest's place
    cases = PageCases(
        board=board, cards=cards, ran=ran, problems=problems,
        skipped=[norm(r) for r in skipped], absent=absent,
        tables=view.implementation_tables(absent), anchors=anchors, linked=cards,
        slowest=board_row(last[0], anchors[id(last[0])], rank) if last else None)
    left = {"board_more": board_more, "problems_more": view.rows["problems"].more,
            "skipped_more": skipped_more, "kernels": view.charted.count,
            "charted": len(view.charted.items(view.machines))}
    return cases, left


def render_view_page(view: SummaryView, inputs: ReportInputs, machine: str | None = None,
                     regressed: Sequence[Record] = ()) -> str:
    """The bounded index.html of `view` (one machine's, its `machines` set); `inputs`: the
    run's documents, its summary without its results (or with: they are not read)."""
    environment = inputs.environment or section(inputs.summary, "environment")
    cases, left = view_cases(view, environment, regressed)
    counts = dict(inputs.summary.get("counts") or {})
    for status in ("total", *STATUSES):
        counts.setdefault(status, 0)
    root = "../../" if machine is not None else ""
    left.update(root=root, cards_more=max(0, counts["total"] - len(cases.cards)))
    return render_page(inputs, cases, counts, machine, bounded=left)


def render_large(inputs: ReportInputs, machine: str | None = None) -> str:
    """The bounded index.html of a run whose documents hold every record: its view taken over
    them, with a card for each regressed case (up to `MAX_ROWS`)."""
    view = summary_view(inputs.summary)
    regressed_ids = {str(c.get("label")) for c in (inputs.comparison or {}).get("cases") or []
                     if isinstance(c, Mapping) and c.get("verdict") == "regressed"}
    regressed = [r for r in inputs.results if str(r.get("case_id")) in regressed_ids]
    return render_view_page(view, inputs, machine, regressed[:MAX_ROWS])


def html_view_pages(views: Mapping[str, SummaryView], tallies: Mapping[str, Mapping[str, int]],
                    inputs: ReportInputs) -> dict[str, str]:
    """The bounded HTML files of a merge from one view per machine (by fingerprint, "unknown"
    for none) and each machine's case counts by status; `inputs`: the merged documents, the
    summary without its results. As :func:`kernbench.reporting.html_machines.html_pages`
    lays them out: index.html alone for one machine, else an overview and one page each."""
    header = inputs.summary
    machines = machines_of(header)
    if not machines:
        view = next(iter(views.values()), SummaryView())
        view.machines = list(views)[:1] or [None]
        return {"index.html": render_view_page(view, inputs)}
    pages: dict[str, str] = {}
    parts = []
    for machine in machines:
        key = str(machine.get("fingerprint") or "unknown")
        tally = tallies.get(key) or {}
        part = machine_part(header, machine, [], {"total": sum(tally.values()), **tally})
        del part["results"]
        view = views.get(key) or SummaryView()
        view.machines = [key]
        pages[f"{machine_dir(machine)}/index.html"] = render_view_page(
            view, ReportInputs(part, part["environment"]), machine_label(machine))
        parts.append((machine, part))
    pages["index.html"] = overview(header, [(m, ReportInputs(p, p["environment"]))
                                            for m, p in parts])
    return pages


def overview(summary: Mapping[str, Any],
             parts: Sequence[tuple[Mapping[str, Any], ReportInputs]]) -> str:
    """index.html of several machines: each machine's section (environment, counts, A/B
    verdict), linking its own page."""
    views = [{"label": machine_label(machine), "href": f"{machine_dir(machine)}/index.html",
              "counts": part.summary["counts"], "env_rows": environment_rows(part.environment),
              "verdict": (part.comparison or {}).get("verdict")}
             for machine, part in parts]
    counts = summary.get("counts") or {}
    template = html_environment().get_template("machines.html.j2")
    return template.render(
        machines=views, counts={s: counts.get(s, 0) for s in ("total", *STATUSES)},
        statuses=STATUSES, complete=summary.get("complete", True) is not False,
        incomplete=incomplete_text(summary),
        started_at=summary.get("started_at"), finished_at=summary.get("finished_at"))
