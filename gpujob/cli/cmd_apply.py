"""`gpujob apply [JOBFILE...|PLAN.json]`: make live state match the job files, safely."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gpujob.cli.main import run_command
from gpujob.cli.options import gated_run_options

HELP = """Make live state match the job files: plan, show, confirm, execute.

\b
Irreversible or cost-bearing teardown (terminate, replace, delete a volume, release a static IP,
delete a snapshot) runs only after its checkpoints were pulled and verified, and only with its exact
id approved: --approve ID, or typing the id at the prompt. --auto-approve never approves those.
Without a terminal (or with CI=true) nothing prompts: pass --auto-approve.
A planned move to a fallback platform (<job>.move) destroys nothing: it is an ordinary action.

\b
Examples:
  gpujob apply                                  plan every job file here, confirm, apply
  gpujob apply job.yaml --auto-approve          no question for ordinary actions
  gpujob apply plan.json                        execute exactly a saved plan (refused if stale)
  gpujob apply --approve bert.pod.terminate     approve one irreversible action
  gpujob apply --lock-timeout 5m                wait for another apply of the same job to finish
  gpujob apply --recreate                       bring back a job `gpujob destroy` tore down
  gpujob apply --replace bert.run               relaunch bert's run (it resumes from its newest checkpoint)
  gpujob apply --replace abl.q1.run             relaunch queue q1 of sweep abl (its cell in flight resumes)
  gpujob apply --release-left --approve bert.left.runpod.network_volume.delete-volume
                                                delete, gated, what a move left on another platform
  gpujob apply --adopt paperspace               the job's own machine runs on Paperspace though its
                                                failover record says otherwise (edited, restored, lost):
                                                make that machine the one (sets the record to the
                                                live truth; creates, starts and stops nothing)
  gpujob apply --land abl.lr-1e-4.seed-1.553e97 a sweep cell stranded in transit (its old queue's
                                                machine never ran again): place it on the queue it
                                                was bound for (you vouch the old one never ran it)
"""


@click.command(name="apply", help=HELP)
@gated_run_options("Do not ask before ordinary actions (never approves gated ones).")
@click.option(
    "--recreate",
    is_flag=True,
    help="Create again a job `gpujob destroy` tore down (it resumes from its newest verified local checkpoint).",
)
@click.option(
    "--replace",
    "replace",
    multiple=True,
    metavar="ADDRESS",
    help="Relaunch the run (<job>.run) or recreate the machine (<job>.pod / <job>.machine, gated) though nothing changed.",
)
@click.option(
    "--fresh",
    is_flag=True,
    help="A machine created on a new disk starts at step 0 (no local checkpoint pushed).",
)
@click.option(
    "--release-left",
    is_flag=True,
    help="Delete what a move left on the platforms the job no longer runs on (each one gated: "
    "<job>.left.<platform>.…).",
)
@click.option(
    "--adopt",
    "adopt",
    type=click.Choice(["runpod", "paperspace"]),
    default=None,
    metavar="PLATFORM",
    help="Set each job's failover record to PLATFORM, where the live read finds its own machine running "
    "(after a record was edited, restored or lost); nothing is created, started or stopped.",
)
@click.option(
    "--land",
    "land",
    multiple=True,
    metavar="SWEEP.CELL",
    help="Place a sweep cell stranded in transit (the plan names it) on the queue it was bound for: its "
    "old queue's machine does not run, so only you can vouch it never ran the cell; nothing else changes.",
)
def command(
    targets: tuple[Path, ...],
    auto_approve: bool,
    approvals: tuple[str, ...],
    recreate: bool,
    replace: tuple[str, ...],
    fresh: bool,
    release_left: bool,
    no_color: bool,
    lock_timeout: float,
    adopt: str | None,
    land: tuple[str, ...],
) -> None:
    if adopt is not None:
        sys.exit(run_command(run_adopt, targets, adopt, lock_timeout))
    if land:
        sys.exit(run_command(run_land, targets, land, lock_timeout))
    sys.exit(
        run_command(
            run,
            targets,
            auto_approve,
            set(approvals),
            no_color,
            "gpujob apply",
            destroy=False,
            lock_timeout=lock_timeout,
            recreate=recreate,
            fresh=fresh,
            replace=replace,
            release_left=release_left,
        )
    )


def run(
    targets: tuple[Path, ...],
    auto_approve: bool,
    approvals: set[str],
    no_color: bool,
    name: str,
    *,
    destroy: bool,
    lock_timeout: float = 0.0,
    recreate: bool = False,
    fresh: bool = False,
    replace: tuple[str, ...] = (),
    release_left: bool = False,
) -> int:
    import asyncio

    from gpujob.cli import session
    from gpujob.render import render_plan
    from gpujob.spec.load import load_specs

    saved = None
    if len(targets) == 1 and targets[0].suffix == ".json":
        saved = session.load_saved_plan(targets[0])
        # a sweep's queues share one file: load it once (it expands into them again)
        loaded = load_specs(list(dict.fromkeys(Path(j.spec_file) for j in saved.jobs)))
    else:
        loaded = load_specs(session.job_files(list(targets)))
    if destroy:
        loaded = session.as_absent(loaded)
    from gpujob.project import with_projects

    loaded = with_projects(loaded, create=True)
    from gpujob.cli.options import color_wanted

    color = color_wanted(no_color)
    opts = session.Options(
        auto_approve=auto_approve,
        approvals=approvals,
        saved=saved is not None,
        command=name,
        targets=tuple(map(str, targets)),
        destroy=destroy,
        recreate=recreate,
        fresh=fresh,
        replace=replace,
        release_left=release_left,
    )
    ask = (
        (lambda prompt: click.prompt(prompt, default="", show_default=False, prompt_suffix=""))
        if session.interactive()
        else None
    )

    def show(plan):  # type: ignore[no-untyped-def]
        click.echo(render_plan(plan, "text", color=color), nl=False)

    async def go():  # type: ignore[no-untyped-def]
        from gpujob.providers.registry import open_providers

        with session.locked(loaded, " ".join([name, *map(str, targets)]), timeout=lock_timeout):
            from gpujob.failover.entries import platforms_read

            async with open_providers(platforms_read(loaded)) as providers:
                hooks = _hooks(color)
                with hooks if hasattr(hooks, "__enter__") else _nothing():
                    return await session.plan_and_apply(
                        loaded, providers, opts, saved_plan=saved, show=show, ask=ask, hooks=hooks
                    )

    try:
        plan, result = asyncio.run(go())
    except KeyboardInterrupt:
        click.echo(
            f"{name} interrupted: the step in flight is recorded in the job's journal (gpujob's state); "
            f"re-run `{name}` to converge from live state.",
            err=True,
        )
        raise
    if result is None:
        click.echo("No changes. Live state matches the job files.")
        return 0
    # on the step log's stream, after its last line: whether the two streams share a terminal or are
    # read one after the other (a CI log, a captured run), the summary follows the steps it counts,
    # and its failures follow it
    click.echo(
        f"{'Destroy' if destroy else 'Apply'} finished: {len(result.done)} done, "
        f"{len(result.failed)} failed, {len(result.skipped)} skipped.",
        err=True,
    )
    from gpujob.safe import for_terminal

    for action_id, message in result.failed.items():  # a failure quotes the machine or the API
        click.echo(for_terminal(f"  ✗ {action_id}: {message}", lines=True), err=True)
    if result.failed:
        # The same command line, approvals included: nothing remembers them between runs.
        from gpujob.apply.gate import approve_flags

        again = session.rerun_command(opts, can_ask=ask is not None)
        flags = approve_flags(a.id for a in plan.all_actions() if a.gated and a.id in opts.approvals)
        click.echo(
            f"Re-run `{' '.join([again, flags]).strip()}` to continue: it converges from live state.",
            err=True,
        )
        return 1
    return 0


def run_adopt(targets: tuple[Path, ...], platform: str, lock_timeout: float) -> int:
    """`gpujob apply --adopt PLATFORM` (gpujob.failover.adopt), under the jobs' locks."""
    import asyncio
    from datetime import UTC, datetime

    from gpujob.cli import session
    from gpujob.failover.adopt import adopt_live
    from gpujob.failover.entries import platforms_read
    from gpujob.project import with_projects
    from gpujob.providers.registry import open_providers
    from gpujob.safe import for_terminal
    from gpujob.spec.load import load_specs

    loaded = with_projects(load_specs(session.job_files(list(targets))), create=False)

    async def go() -> list[str]:
        with session.locked(loaded, f"gpujob apply --adopt {platform}", timeout=lock_timeout):
            async with open_providers(platforms_read(loaded) | {platform}) as providers:
                return await adopt_live(loaded, providers, platform, now=datetime.now(UTC))

    for line in asyncio.run(go()):
        click.echo(for_terminal(line))
    click.echo("Run `gpujob plan` to see the jobs where they run now.")
    return 0


def run_land(targets: tuple[Path, ...], addresses: tuple[str, ...], lock_timeout: float) -> int:
    """`gpujob apply --land SWEEP.CELL` (gpujob.sweep.stranded), under the jobs' locks."""
    import asyncio
    from datetime import UTC, datetime

    from gpujob.cli import session
    from gpujob.project import with_projects
    from gpujob.providers.registry import open_providers
    from gpujob.safe import for_terminal
    from gpujob.spec.load import load_specs
    from gpujob.sweep.stranded import land_live

    loaded = with_projects(load_specs(session.job_files(list(targets))), create=False)

    async def go() -> list[str]:
        with session.locked(loaded, "gpujob apply --land", timeout=lock_timeout):
            async with open_providers({ls.spec.platform for ls in loaded}) as providers:
                return await land_live(loaded, providers, list(addresses), now=datetime.now(UTC))

    for line in asyncio.run(go()):
        click.echo(for_terminal(line))
    click.echo("Run `gpujob apply` to run them there.")
    return 0


def _hooks(color: bool):  # type: ignore[no-untyped-def]
    from gpujob.cli.progress import choose_hooks

    return choose_hooks(not color, lambda line: click.echo(line, err=True))


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
