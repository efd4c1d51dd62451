"""`gpujob rehearse [JOB]`: a preemption drill on a live job."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gpujob.cli.main import run_command

HELP = """Interrupt a live job the way its platform would, let watch's recovery bring it back, and prove
the run resumed from a step at or past its newest verified checkpoint. Reports how fast the interrupt
was acted on (detection), interrupt -> first new step (recovery), and the work done twice in steps and
dollars; the result is recorded, and the plan of a spot job shows it.

Before interrupting it pulls (the proof is against a checkpoint verified at home) and holds the job's
lock. Against the local simulator a RunPod spot pod is preempted by the simulator itself; on a real
platform the machine is stopped through the API, after you confirm (--yes for scripts).

\b
Examples:
  gpujob rehearse
  gpujob rehearse jobs/bert.yaml --yes
"""


@click.command(name="rehearse", help=HELP)
@click.argument("targets", nargs=-1, type=click.Path(path_type=Path))
@click.option("--yes", is_flag=True, help="Interrupt a job on a real platform without asking.")
@click.option("--timeout", default="15m", show_default=True, help="Longest wait for the resume, e.g. 10m.")
def command(targets: tuple[Path, ...], yes: bool, timeout: str) -> None:
    sys.exit(run_command(_rehearse, targets, yes, timeout))


def _rehearse(targets: tuple[Path, ...], yes: bool, timeout: str) -> int:
    import asyncio
    import os

    from gpujob.cli.session import interactive, job_files, locked
    from gpujob.errors import ConfigError, GpujobError
    from gpujob.jobfile.rules import parse_duration
    from gpujob.rehearse import drill
    from gpujob.spec.load import load_specs

    loaded = load_specs(job_files(list(targets)))
    if len(loaded) != 1:
        names = ", ".join(ls.spec.name for ls in loaded)
        raise ConfigError(f"rehearse drills one job at a time; found {len(loaded)} ({names})",
                          hint="name its job file: gpujob rehearse jobs/NAME.yaml")  # fmt: skip
    try:
        limit = parse_duration(timeout).total_seconds()
    except ValueError as exc:
        raise ConfigError(f"--timeout: {exc}") from None
    spec = loaded[0].spec
    if spec.checkpoint is None:  # refused before asking anything
        drill.refuse_unless_drillable(spec, None)
    sim_base = drill.simulator_base(os.environ, spec.platform)
    if sim_base is None and not yes:
        kind = "pod" if spec.platform == "runpod" else "machine"
        if not interactive():
            raise GpujobError(
                f"rehearse interrupts {spec.name}'s {kind} on {spec.platform} (a real platform), and there is "
                "no terminal to ask",
                hint="run it again with --yes to agree",
            )
        answer = click.prompt(
            f"Interrupt {spec.name}'s {kind} on {spec.platform} now (its run stops; watch's recovery brings it "
            "back)? Only 'yes' is accepted", default="", show_default=False,
        )  # fmt: skip
        if answer.strip() != "yes":
            raise GpujobError("rehearse cancelled; nothing was interrupted")
    with locked(loaded, "gpujob rehearse"):
        result = asyncio.run(_go(loaded, sim_base, limit))
    click.echo(f"{spec.name}: {result.line()}")
    if result.ok:
        click.echo(f"  interrupted {result.machine_id} by {result.how} at {result.at:%Y-%m-%d %H:%M:%S} UTC")
        if result.redone_usd is None:
            click.echo("  redone work in $: unknown (no rate or no step speed was read)")
        else:
            click.echo(f"  redone work ${result.redone_usd:.4f} ({result.redone_steps} step(s)), recovery "
                       f"${result.recovery_usd or 0:.4f} ({result.recovery_s or 0:.0f} s), at {result.priced_from}")  # fmt: skip
    return 0 if result.ok else 1


async def _go(loaded, sim_base, limit):  # type: ignore[no-untyped-def]
    from gpujob.apply.observe import job_views
    from gpujob.apply.sshapi import SSHApi
    from gpujob.clock import SystemClock
    from gpujob.rehearse import drill, record

    clock = SystemClock()
    async with job_views(loaded) as views:
        view = views[0]
        say = lambda text: click.echo(f"  {view.spec.name}: {text}", err=True)  # noqa: E731
        result = await drill.drill(
            view, {view.spec.platform: view.provider}, clock=clock, ssh=SSHApi.default(), env=dict(_env()),
            say=say, sim_base=sim_base, options=drill.Options(timeout_s=limit),
        )  # fmt: skip
        record.save(view.state_dir, result)
        return result


def _env():  # type: ignore[no-untyped-def]
    import os

    return os.environ
