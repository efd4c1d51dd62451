"""`gpujob import JOB RESOURCE_ID`: adopt an existing pod, network volume or machine into a job."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from gpujob.cli.main import run_command
from gpujob.cli.options import accepts_no_color, lock_timeout_option

HELP = """Adopt an existing RunPod pod or network volume, or a Paperspace machine, into job JOB.

\b
It gets the job's ownership marker, its gpujob name (gpujob-JOB--PROJECT), by a rename, which the
platforms make in place: a running pod is not restarted, nothing on a volume moves. (A pod's env marker
would restart it, so the adoption is recorded in gpujob's state instead.) Nothing else changes: run
`gpujob plan` next to see how it differs from the job file, and `gpujob apply` to converge.

\b
Examples:
  gpujob import bert pod-abc123
  gpujob import bert nv-9f8e7d -f jobs/bert.yaml
"""


@click.command(name="import", help=HELP)
@click.argument("job")
@click.argument("resource_id")
@click.option("-f", "--file", "files", multiple=True, type=click.Path(path_type=Path),
              help="Job file(s) to look in (default: every job file here).")  # fmt: skip
@lock_timeout_option()
@accepts_no_color
def command(job: str, resource_id: str, files: tuple[Path, ...], lock_timeout: float) -> None:
    run_command(_import, job, resource_id, files, lock_timeout)


def _import(job: str, resource_id: str, files: tuple[Path, ...], lock_timeout: float) -> None:
    from gpujob.cli.cmd_state_ops import load_jobs
    from gpujob.cli.session import locked
    from gpujob.errors import GpujobError
    from gpujob.redact import from_machine

    loaded = load_jobs(files, "import")
    from gpujob.layout.address import names_job, shown

    mine = [ls for ls in loaded if names_job(job, ls.spec.name)]
    if not mine:
        names = ", ".join(shown(ls.spec.name) for ls in loaded)
        raise GpujobError(f"no job named {job!r} here (found: {names})", hint="name its file with -f")
    if len(mine) > 1:  # the queues of a sweep: a machine becomes one queue's
        queues = ", ".join(shown(ls.spec.name) for ls in mine)
        raise GpujobError(
            f"{job!r} is a sweep of {len(mine)} queues ({queues}): name the queue the resource is to be",
            hint=f"e.g. gpujob import {shown(mine[0].spec.name)} {resource_id}",
        )
    job = mine[0].spec.name
    from gpujob.project import with_projects

    ls = with_projects(mine, create=True)[0]  # importing makes the project id, as a first apply would

    async def go():  # type: ignore[no-untyped-def]
        from gpujob.providers.registry import open_providers
        from gpujob.stateops.importing import import_resource

        async with open_providers({ls.spec.platform}) as providers:
            return await import_resource(ls, providers[ls.spec.platform], resource_id)

    with locked([ls], f"gpujob import {job} {resource_id}", timeout=lock_timeout):
        done = asyncio.run(go())
    r = done.resource
    if done.already:
        click.echo(from_machine(f"{r.kind} {r.name} ({r.id}) is job {job}'s already: nothing to do."))
        return
    renamed = (
        f"renamed {done.name_before!r} -> {r.name!r}" if done.name_before != r.name else "already so named"
    )
    click.echo(
        from_machine(
            f"Imported {r.kind} {r.id} into job {job}: {renamed}; status {r.status}, nothing else changed."
        )
    )
    click.echo("Next: `gpujob plan` shows how it differs from the job file; `gpujob apply` converges.")
