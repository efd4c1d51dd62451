"""`gpujob plan [JOBFILE...]`: show what apply would do, what it costs and keeps costing, what it destroys.

Exit codes: 0 success (with --detailed-exitcode: no changes), 2 changes present (--detailed-exitcode
only), 1 an error, including a plan with error findings (they block apply).
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from gpujob.cli.main import run_command

HELP = """Show what `gpujob apply` would do, what it costs and keeps costing, and what it destroys.

\b
Symbols:  + create   ~ update in place   -/+ replace   - terminate/destroy/delete/release
          ▶ start   ⏸ stop   ⇣ pull checkpoints   ⇡ push checkpoints   » launch the run   · no change
          ⇄ move to another platform (a job with fallback: entries whose own cannot serve it)

\b
Examples:
  gpujob plan                              every job file here (job.yaml, *.job.yaml, jobs/*.yaml)
  gpujob plan -o plan.json                 save the plan for `gpujob apply plan.json`
  gpujob plan --format markdown            a PR comment
  gpujob plan --detailed-exitcode          exit 0 no changes, 2 changes, 1 error (CI)
  gpujob plan --no-refresh-runs            skip reading the runs over SSH (faster, sees less)
  gpujob plan --release-left               also delete (gated) what a move left on another platform

\b
Besides the platform APIs, the plan reads each running machine's run over SSH (a few seconds at
most): a lost run is relaunched, a finished one gets its teardown.on_finish, exactly as apply will.
"""


@click.command(name="plan", help=HELP)
@click.argument("jobfiles", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True
)
@click.option(
    "-o", "--out", type=click.Path(path_type=Path), help="Save the plan as JSON for `gpujob apply`."
)
@click.option(
    "--detailed-exitcode",
    is_flag=True,
    help="Exit 0 when nothing changes, 2 when something does, 1 on error.",
)
@click.option("--no-color", is_flag=True, help="Plain text (also automatic when stdout is not a terminal).")
@click.option(
    "--no-refresh-runs",
    is_flag=True,
    help="Skip reading each run's status over SSH (faster; a lost or finished run is then not seen).",
)
@click.option(
    "--replace",
    "replace",
    multiple=True,
    metavar="ADDRESS",
    help="Relaunch the run (<job>.run) or recreate the machine (<job>.pod / <job>.machine) though nothing changed.",
)
@click.option(
    "--fresh", is_flag=True, help="A machine created on a new disk starts without the local checkpoints."
)
@click.option(
    "--release-left",
    is_flag=True,
    help="Also plan deleting what a move left on the platforms the job no longer runs on (gated, "
    "<job>.left.<platform>.…).",
)
@click.option(
    "--approve",
    "approvals",
    multiple=True,
    metavar="ID",
    help="Show the plan as with this approval (repeatable): an accepted risk (e.g. <job>.pod.self-stop) "
    "is then a warning. Approvals are not saved with -o: give them to apply too.",
)
@click.option(
    "--live-state",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    hidden=True,
    help="Plan against a saved LiveState JSON instead of reading the platforms (offline / tests).",
)
def command(
    jobfiles: tuple[Path, ...],
    fmt: str,
    out: Path | None,
    detailed_exitcode: bool,
    no_color: bool,
    no_refresh_runs: bool,
    replace: tuple[str, ...],
    fresh: bool,
    release_left: bool,
    approvals: tuple[str, ...],
    live_state: Path | None,
) -> None:
    code = run_command(
        _plan, jobfiles, fmt, out, no_color, live_state, not no_refresh_runs, replace=replace, fresh=fresh,
        release_left=release_left, approvals=approvals,
    )  # fmt: skip
    if code == 1:
        sys.exit(1)
    if detailed_exitcode and code == 2:
        sys.exit(2)


def _plan(
    jobfiles: tuple[Path, ...],
    fmt: str,
    out: Path | None,
    no_color: bool,
    live_state: Path | None,
    refresh_runs: bool = True,
    *,
    replace: tuple[str, ...] = (),
    fresh: bool = False,
    release_left: bool = False,
    approvals: tuple[str, ...] = (),
) -> int:
    from gpujob.plan.planner import build_plan
    from gpujob.project import with_projects
    from gpujob.render import render_plan
    from gpujob.spec.load import load_specs, resolve_job_files

    loaded = with_projects(load_specs(resolve_job_files(jobfiles, command="plan")), create=False)
    from gpujob.cli.month import capped, month_of_project, read_billed_aside

    billed = None
    if live_state is not None:
        live = _read_live_file(live_state)
        now = live.read_at
    else:
        # budget.max_monthly_usd counts what jobs never watched cost too, read while the live state is
        billed = read_billed_aside(loaded) if capped(loaded) else None
        live = read_live([ls.spec for ls in loaded], runs_for=loaded, refresh_runs=refresh_runs)
        now = datetime.now(UTC)
        if refresh_runs:
            loaded = settle_sweeps(loaded, live)
    from gpujob.sweep.fit import fit_queues

    loaded = fit_queues(loaded, live, now=now, env=os.environ)  # a sweep's queue count under its cap
    # The project id is made only now: a plan that could not read the platforms writes nothing.
    loaded = with_projects(loaded, create=True)
    from gpujob.plan.unnamed import with_unnamed

    loaded = with_unnamed(loaded, live)  # what the files no longer name, still running or billing
    from gpujob.plan.records import recorded
    from gpujob.plan.replace import check_addresses

    plan = build_plan(
        loaded,
        live,
        now=now,
        env=os.environ,
        **recorded(loaded, month_of_project(loaded, now, billed)),
        replace=check_addresses(replace, loaded),
        fresh=fresh,
        release_left=release_left,
    )
    from gpujob.cli.options import color_wanted
    from gpujob.plan.stop_law import accept_risks

    saved, plan = plan, accept_risks(plan, set(approvals))  # approvals are given to apply, never saved
    color = fmt == "text" and color_wanted(no_color)
    click.echo(render_plan(plan, fmt, color=color), nl=False)
    if out is not None:
        from gpujob.cli.private_file import write_private

        write_private(out, render_plan(saved, "json"))
        click.echo(f"Saved the plan to {out}. Apply exactly this plan with: gpujob apply {out}", err=True)
    if plan.blocked:
        n = sum(1 for f in plan.all_findings() if f.severity == "error")
        click.echo(f"Error: {n} error finding{'s' if n != 1 else ''} block apply (see above).", err=True)
        return 1
    return 2 if plan.has_changes else 0


def read_live(specs: list[Any], *, runs_for: list[Any] | None = None, refresh_runs: bool = True) -> Any:
    """Read live state for these specs through the platform APIs, with the run facts of `runs_for`
    (over SSH unless refresh_runs is False). Tests monkeypatch this."""
    import asyncio

    from gpujob.apply.refresh import read_live_state
    from gpujob.providers.registry import open_providers

    async def go() -> Any:
        from gpujob.failover.entries import platforms_of, strays_read

        also = strays_read(runs_for or [])  # what moved jobs left where their files no longer point
        async with open_providers(platforms_of(specs) | also) as providers:
            return await read_live_state(
                specs, providers, runs_for=runs_for, refresh_runs=refresh_runs, also=also
            )

    return asyncio.run(go())


def settle_sweeps(loaded: list[Any], live: Any) -> list[Any]:
    """A sweep's cells on their way to another queue, proven or not over SSH (gpujob.sweep.rebalance);
    opens the providers only when a cell moves."""
    import asyncio

    from gpujob.sweep.rebalance import LEAVES, WAITS
    from gpujob.sweep.transit import settle

    if not any(m.state in (WAITS, LEAVES) for ls in loaded if ls.sweep is not None for m in ls.sweep.moves):
        return loaded

    async def go() -> Any:
        from gpujob.failover.entries import platforms_of
        from gpujob.providers.registry import open_providers

        async with open_providers(platforms_of(ls.spec for ls in loaded)) as providers:
            return await settle(loaded, live, providers)

    return list(asyncio.run(go()))


def _read_live_file(path: Path) -> Any:
    from gpujob.errors import GpujobError
    from gpujob.live import LiveState

    try:
        return LiveState.model_validate_json(path.read_text())
    except ValueError as exc:
        raise GpujobError(f"{path}: not a LiveState JSON file: {exc}") from exc
