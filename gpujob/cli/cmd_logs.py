"""`gpujob logs [-f] [JOBFILE]`: the run's log, read over SSH from the durable mount."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gpujob.cli.main import run_command
from gpujob.cli.options import no_color_option

HELP = """Show the end of the run's log; with -f, keep printing until the run stops.

Text from the machine is shown with control characters made visible (\\x1b[2J, not a cleared
screen) and a redrawn line (a progress bar) as its last frame, unless --raw; lines longer than 64 KiB are cut on the machine (…[cut 199.9 MB]); known
secret values are masked as *** either way.

\b
Examples:
  gpujob logs
  gpujob logs -f -n 200 jobs/bert.yaml
"""


@click.command(name="logs", help=HELP)
@click.argument("targets", nargs=-1, type=click.Path(path_type=Path))
@click.option("-f", "--follow", is_flag=True, help="Follow new lines until the run stops (Ctrl-C to leave).")
@click.option("-n", "--lines", default=50, show_default=True, help="Lines to show first.")
@click.option(
    "--raw", is_flag=True, help="Pass escape sequences through to the terminal (secrets stay masked)."
)
@no_color_option("Never pass escape sequences through, even with --raw.")
def command(targets: tuple[Path, ...], follow: bool, lines: int, raw: bool, no_color: bool) -> None:
    sys.exit(run_command(_logs, targets, follow, lines, raw and not no_color))


def _logs(targets: tuple[Path, ...], follow: bool, lines: int, raw: bool = False) -> int:
    import asyncio

    from gpujob.errors import GpujobError
    from gpujob.spec.load import load_specs, resolve_job_files

    loaded = load_specs(resolve_job_files(list(targets), command="logs"))
    if len(loaded) != 1:
        raise GpujobError(
            f"logs shows one job at a time; {len(loaded)} job files found", hint="name the job file"
        )
    asyncio.run(_go(loaded, follow, lines, raw))
    return 0


async def _go(loaded, follow: bool, lines: int, raw: bool) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    from gpujob.apply.observe import follow_log, job_views
    from gpujob.apply.runtime import open_remote
    from gpujob.apply.sshapi import SSHApi
    from gpujob.clock import SystemClock
    from gpujob.layout.machine import job_dir
    from gpujob.redact import from_machine
    from gpujob.render.frames import LastFrames

    ssh, clock = SSHApi.default(), SystemClock()
    async with job_views(loaded) as views:
        view = views[0]
        async with open_remote(view.target(), ssh, clock, lambda m: click.echo(m, err=True)) as remote:

            async def alive() -> bool:
                return bool((await ssh.run_status(remote, view.spec)).alive)

            frames = None if raw else LastFrames()  # a progress bar's last frame per line, unless --raw

            def write(text: str) -> None:
                text = text if frames is None else frames.feed(text)
                # color=raw: click would strip escape sequences when piped, and --raw means raw
                click.echo(from_machine(text, raw=raw), nl=False, color=raw or None)

            await follow_log(
                remote,
                f"{job_dir(view.spec)}/run.log",
                write,
                lines=lines,
                follow=follow,
                alive=alive,
                sleep=asyncio.sleep,
            )
            if frames is not None:
                click.echo(from_machine(frames.flush()), nl=False)
