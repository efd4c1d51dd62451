"""`gpujob state list` and `gpujob state rm` (attached to the `state` group in cmd_state.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import click

from gpujob.cli.main import run_command
from gpujob.cli.options import accepts_no_color, lock_timeout_option, no_color_option


def load_jobs(files: tuple[Path, ...], command: str, *, create: bool = False) -> list[Any]:
    from gpujob.project import with_projects
    from gpujob.spec.load import load_specs, resolve_job_files

    return with_projects(load_specs(resolve_job_files(list(files), command=command)), create=create)


LIST_HELP = """Every job here with the resources it owns now, where they run, and what was forgotten
(`gpujob state rm`) or adopted (`gpujob import`). Read-only: the platforms' listings and gpujob's state.

\b
Examples:
  gpujob state list
  gpujob state list jobs/ --format json
"""


@click.command(name="list", help=LIST_HELP, short_help="Jobs, their resources and where they run.")
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@no_color_option()
def list_command(files: tuple[Path, ...], fmt: str, no_color: bool) -> None:
    def go() -> None:
        import shutil

        from gpujob.cli.options import color_wanted
        from gpujob.stateops import listing

        loaded = load_jobs(files, "state list")
        listed = asyncio.run(listing.read_resources({ls.spec.platform for ls in loaded}))
        found = listing.rows(loaded, listed)
        if fmt == "json":
            click.echo(listing.render_json(found), nl=False)
            return
        color = color_wanted(no_color)
        width = shutil.get_terminal_size().columns if color else None
        click.echo(listing.render_text(found, loaded, color=color, width=width), nl=False)

    run_command(go)


RM_HELP = """Forget a job's resources (TARGET = a job name) or one resource (its id or name), without
touching the platform: gpujob stops managing it (plan, apply, watch, status leave it alone) and it keeps
running and billing until you delete it there. Pull records, the journal and the spend ledger are kept
(the teardown gate and `gpujob cost` need them). `gpujob import JOB ID` takes a resource back.

\b
Examples:
  gpujob state rm pod-abc123                 one resource, by id
  gpujob state rm bert -f jobs/bert.yaml     everything job bert owns now
"""


@click.command(name="rm", help=RM_HELP, short_help="Forget a job's resources (the platform is untouched).")
@click.argument("target")
@click.option("-f", "--file", "files", multiple=True, type=click.Path(path_type=Path),
              help="Job file(s) to look in (default: every job file here).")  # fmt: skip
@lock_timeout_option()
@accepts_no_color
def rm_command(target: str, files: tuple[Path, ...], lock_timeout: float) -> None:
    def go() -> None:
        from gpujob.cli.session import locked
        from gpujob.stateops import forgetting, listing

        loaded = load_jobs(files, "state rm")
        platforms = {ls.spec.platform for ls in loaded}
        pairs = forgetting.targets(loaded, asyncio.run(listing.read_resources(platforms)), target)
        if not pairs:
            click.echo(f"Job {target} owns nothing live now: nothing to forget.")
            return
        jobs = list({id(ls): ls for ls, _ in pairs}.values())
        with locked(jobs, f"gpujob state rm {target}", timeout=lock_timeout):
            # Read again under the lock: an apply that held it may have changed what the job owns.
            pairs = forgetting.targets(loaded, asyncio.run(listing.read_resources(platforms)), target)
            forgetting.forget(pairs)
        from gpujob.redact import from_machine

        for ls, r in pairs:
            click.echo(
                from_machine(
                    f"Forgot {r.kind} {r.name} ({r.id}) of job {ls.spec.name}: untouched on {r.platform}."
                )
            )
        click.echo(
            "gpujob no longer manages them; they keep running and billing until deleted on the platform. "
            "Kept: pull records, journal, spend ledger. The next plan treats the job as not having them "
            "(take one back with: gpujob import JOB ID)."
        )

    run_command(go)
