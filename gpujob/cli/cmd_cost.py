"""`gpujob cost`: spend so far per job, current burn, projection to max_runtime and to the budget."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from gpujob.audit.cliutil import ErrorExitOne
from gpujob.cli.main import run_command

HELP = """Spend so far per job, the current burn and where it is heading.

\b
Spent: from the platform's billing endpoint where gpujob has one, else current rates × observed
time, labelled "estimate" (earlier runs of a restarted machine are not seen by an estimate).
Projection: spend at run.max_runtime, and how long budget.max_total_usd lasts at the current burn.

\b
Exit codes: 0 within budget · 2 spent or projected over budget.max_total_usd · 1 error.

\b
Examples:
  gpujob cost
  gpujob cost jobs/bert.yaml --format json
"""


@click.command(name="cost", cls=ErrorExitOne, help=HELP)
@click.argument("jobfiles", nargs=-1, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def command(jobfiles: tuple[Path, ...], fmt: str) -> None:
    sys.exit(run_command(_run, list(jobfiles), fmt))


async def _read(platforms: Sequence[str], job_names: list[str]) -> tuple[Any, dict[str, float | None]]:
    import asyncio
    from datetime import UTC, datetime

    from gpujob.audit.cost import billed_amounts
    from gpujob.errors import GpujobError
    from gpujob.live import LiveState
    from gpujob.providers.registry import open_providers

    resources: list[Any] = []
    errors: list[str] = []
    billed: dict[str, float | None] = {}
    async with open_providers(set(platforms)) as providers:
        results = await asyncio.gather(
            *(providers[p].list_resources() for p in platforms), return_exceptions=True
        )
        for platform, result in zip(platforms, results, strict=True):
            if isinstance(result, GpujobError):
                from gpujob.audit.account import read_error_text

                errors.append(read_error_text(platform, result))
                continue
            if isinstance(result, BaseException):
                raise result
            resources.extend(result)
            live = LiveState(read_at=datetime.now(UTC), resources=result)
            owned = [r for job in job_names for r in live.owned_by(job)]
            billed.update(await billed_amounts(providers[platform], owned))
    return LiveState(read_at=datetime.now(UTC), resources=resources, read_errors=errors), billed


def _run(jobfiles: list[Path], fmt: str) -> int:
    import asyncio
    from datetime import UTC, datetime

    from gpujob.audit.classify import classify
    from gpujob.audit.cost import CostReport, job_cost, render_cost
    from gpujob.errors import ConfigError
    from gpujob.profile import load_profile
    from gpujob.spec.load import discover_job_files, load_specs

    files = jobfiles or discover_job_files(Path.cwd())
    if not files:
        raise ConfigError(
            "no job files found", hint="pass job files, or run where job.yaml / *.job.yaml / jobs/*.yaml live"
        )
    specs = [ld for ld in load_specs(files)]
    platforms = sorted({ld.spec.platform for ld in specs})
    names = [ld.spec.name for ld in specs]
    live, billed = asyncio.run(_read(platforms, names))
    now = datetime.now(UTC)
    audit = classify(live, local_jobs=names, now=now, idle_threshold_s=float("inf"), profiles=load_profile)
    by_id = {r.id: r for r in live.resources}
    jobs = []
    for ld in specs:
        spec = ld.spec
        items = [i for i in audit.items if i.owner == "this-repo" and i.job == spec.name and i.billable]
        max_rt = spec.run.max_runtime.total_seconds() if spec.run and spec.run.max_runtime else None
        jobs.append(
            job_cost(
                job=spec.name, platform=spec.platform, spec_file=str(ld.path), items=items, resources=by_id,
                billed=billed, now=now, max_runtime_s=max_rt, budget_usd=spec.budget.max_total_usd,
            )
        )  # fmt: skip
    report = CostReport(
        generated_at=now,
        jobs=jobs,
        spent_usd=round(sum(j.spent_usd for j in jobs), 4),
        burn_usd_per_hour=round(sum(j.burn_usd_per_hour for j in jobs), 6),
        read_errors=live.read_errors,
    )
    click.echo(render_cost(report, fmt), nl=False)
    if live.read_errors:
        return 1
    return report.exit_code
