"""`gpujob budget [JOBFILE...]`: the project's budget.max_monthly_usd (gpujob.yaml) against this month's
spend of every job in the project's store and the P50/P90 still to come of the job files given."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from gpujob.cli.main import run_command

HELP = """Report the month's spend and forecast per job against the project's budget.

\b
The project file (gpujob.yaml, beside the job files or above them) holds the budget:
  budget: {max_monthly_usd: 500}
Every job counts its spend this month: watch's ledger, or the cost engine's figure (the platforms'
billing, as `gpujob cost` reads it) where that is more, each with its source; a job file given (or
found) adds its forecast's P50 and P90 still to come. Exit 1 when the P50 total crosses the budget;
`gpujob plan` and `apply` refuse a start that would cross it.

\b
Examples:
  gpujob budget
  gpujob budget --format json
"""


@click.command(name="budget", help=HELP)
@click.argument("targets", nargs=-1, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def command(targets: tuple[Path, ...], fmt: str) -> None:
    sys.exit(run_command(_budget, targets, fmt))


def _budget(targets: tuple[Path, ...], fmt: str) -> int:
    import json
    from datetime import UTC, datetime

    from gpujob.cli.cmd_plan import read_live
    from gpujob.cli.month import month_of_project, read_billed_aside
    from gpujob.cost.history import job_histories
    from gpujob.plan.planner import build_plan
    from gpujob.project import with_projects
    from gpujob.spec.load import load_specs, resolve_job_files

    loaded = with_projects(load_specs(resolve_job_files(list(targets), command="budget")), create=False)
    now = datetime.now(UTC)
    billed = read_billed_aside(loaded)  # the cost engine's figures, read while the live state is
    live = read_live([ls.spec for ls in loaded], runs_for=loaded, refresh_runs=False)
    monthly = month_of_project(loaded, now, billed)
    plan = build_plan(loaded, live, now=now, env={}, histories=job_histories(loaded))
    rows: list[dict[str, Any]] = []
    for job in sorted(set(monthly.spent) | {jp.job for jp in plan.jobs}):
        f = next((jp.forecast for jp in plan.jobs if jp.job == job), None)
        rows.append({
            "job": job, "spent_this_month_usd": monthly.spent.get(job, 0.0),
            "spent_source": monthly.sources.get(job, ""),
            "p50_to_come_usd": round(f.p50_usd - f.spent_usd, 4) if f else 0.0,
            "p90_to_come_usd": round(f.p90_usd - f.spent_usd, 4) if f else 0.0,
            "estimate": bool(f and f.estimate),
        })  # fmt: skip
    p50 = round(monthly.total + sum(float(r["p50_to_come_usd"]) for r in rows), 4)
    p90 = round(monthly.total + sum(float(r["p90_to_come_usd"]) for r in rows), 4)
    over = monthly.cap is not None and p50 > monthly.cap
    report = {"max_monthly_usd": monthly.cap, "source": monthly.source, "month_start": monthly.month_start.isoformat(),
              "spent_usd": monthly.total, "p50_usd": p50, "p90_usd": p90, "over": over, "jobs": rows}  # fmt: skip
    if fmt == "json":
        click.echo(json.dumps(report, indent=2))
        return 1 if over else 0
    from gpujob.cost.rates import usd
    from gpujob.safe import for_terminal

    cap = (
        f"{usd(monthly.cap)} ({monthly.source})"
        if monthly.cap is not None
        else "none set (budget.max_monthly_usd in gpujob.yaml)"
    )
    click.echo(for_terminal(f"budget this month (since {monthly.month_start:%Y-%m-%d}): {cap}"))
    for r in rows:
        tag = " (estimate)" if r["estimate"] else ""
        how = f" ({r['spent_source']})" if r["spent_source"] else ""
        click.echo(for_terminal(f"  {r['job']}: spent {usd(r['spent_this_month_usd'])}{how}, to come P50 "
                                f"{usd(r['p50_to_come_usd'])} / P90 {usd(r['p90_to_come_usd'])}{tag}"))  # fmt: skip
    verdict = (
        "OVER the budget at P50"
        if over
        else ("over at P90" if monthly.cap is not None and p90 > monthly.cap else "within")
    )
    click.echo(f"  total: spent {usd(monthly.total)}, P50 {usd(p50)}, P90 {usd(p90)}: {verdict}")
    return 1 if over else 0
