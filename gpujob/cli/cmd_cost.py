"""`gpujob cost`: spend so far per job, current burn, projection to max_runtime and to the budget."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from gpujob.audit.cliutil import ErrorExitOne
from gpujob.cli.main import run_command
from gpujob.cli.options import no_color_option

HELP = """Spend so far per job, the current burn and where it is heading.

\b
Spent: from the platform's billing data where it has one (RunPod /v2/billing), else an estimate
from metered time (Paperspace machine events, when gpujob saw each resource), priced by the same rates
as plan, status and audit and billed as the platform bills (Paperspace: every started hour). Resources
that are gone are still counted (gpujob records what it saw in its state, seen/); what could not be seen
is said, never shown as $0.00.
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
@no_color_option(help="Plain output: no colour, ASCII charts (also with NO_COLOR set, or piped).")
def command(jobfiles: tuple[Path, ...], fmt: str, no_color: bool) -> None:
    sys.exit(run_command(_run, list(jobfiles), fmt, no_color))


def _run(jobfiles: list[Path], fmt: str, no_color: bool = False) -> int:
    import asyncio

    from gpujob.errors import ConfigError
    from gpujob.plan.costs import render_cost
    from gpujob.providers.registry import open_providers
    from gpujob.spec.load import discover_job_files, load_specs

    files = jobfiles or discover_job_files(Path.cwd())
    if not files:
        raise ConfigError(
            "no job files found", hint="pass job files, or run where job.yaml / *.job.yaml / jobs/*.yaml live"
        )
    from gpujob.project import with_projects

    loaded = with_projects(load_specs(files), create=False)

    async def read() -> Any:
        from gpujob.failover.entries import platforms_read
        from gpujob.failover.money import read_costs_anywhere

        async with open_providers(platforms_read(loaded)) as providers:
            return await read_costs_anywhere(loaded, providers)  # every platform a job may run on

    report, pictures = _with_goodput(asyncio.run(read()), loaded)
    click.echo(render_cost(report, fmt), nl=False)
    if fmt == "text" and pictures:
        from gpujob.chart import terminal_style
        from gpujob.chart.jobs import charts
        from gpujob.cli.options import color_wanted

        style = terminal_style(color_wanted(no_color))
        for job, data in pictures.items():
            lines = charts(data, style)
            if lines:
                click.echo(f"\n{job} (recorded by gpujob watch):")
                click.echo("\n".join(lines))
    if report.read_errors:  # type: ignore[attr-defined]
        return 1
    return int(report.exit_code)  # type: ignore[attr-defined]


def _with_goodput(report: Any, loaded: Any) -> tuple[Any, dict[str, Any]]:
    """Goodput next to the money, and the steps and money over time (gpujob.chart.jobs.series), for the
    jobs `gpujob watch` kept a ledger of."""
    from gpujob.chart.jobs import series
    from gpujob.plan.costs import with_goodput
    from gpujob.state import open_store
    from gpujob.watch.ledger import read_ledger

    paths = {ls.spec.name: ls.path for ls in loaded}
    pictures: dict[str, Any] = {}
    goodput: dict[str, Any] = {}
    for job in dict.fromkeys(j.job for j in report.jobs):  # a moved job has a row per platform
        ledger = read_ledger(open_store(paths[job]), job) if job in paths else None
        if ledger is not None:
            goodput[job] = ledger.goodput(report.generated_at)
            pictures[job] = series(ledger)
    return with_goodput(report, goodput), pictures
