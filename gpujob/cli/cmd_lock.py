"""`gpujob force-unlock JOB`: remove a stale apply lock, after saying who holds it since when."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gpujob.cli.main import run_command

HELP = """Remove a job's apply lock left behind by a process that is gone.

\b
The lock is a file lock under the project's state dir (.gpujob/locks/JOB.lock, or $GPUJOB_STATE_DIR),
with a note naming the holder; with a PostgreSQL state store (GPUJOB_STATE_URL) it is the holder's
database session, which the server ends when that process dies. While the holder's process still
runs on this host it is refused even with --yes (two applies must never touch one job at once), and
so is a local file lock some live process holds. In CI (CI=true) or without a terminal nothing
prompts; pass --yes.

\b
Examples:
  gpujob force-unlock bert
  gpujob force-unlock bert --yes -f jobs/bert.yaml
"""


@click.command(name="force-unlock", help=HELP)
@click.argument("job")
@click.option("--yes", "-y", is_flag=True, help="Do not ask; required when not interactive.")
@click.option("-f", "--file", "job_file", type=click.Path(path_type=Path, dir_okay=False),
              help="The job file (its directory holds .gpujob/); default: the discovered job of that name.")  # fmt: skip
def command(job: str, yes: bool, job_file: Path | None) -> None:
    from gpujob.layout.address import queue_job_of

    sys.exit(run_command(_run, queue_job_of(job), yes, job_file))  # a sweep's queue: abl.q1 is abl--q1


def _find_job_file(job: str) -> Path | None:
    from gpujob.errors import SpecError
    from gpujob.spec.load import discover_job_files, load_specs

    files = discover_job_files(Path.cwd())
    try:
        from gpujob.layout.address import names_job

        for loaded in load_specs(files):
            if names_job(job, loaded.spec.name):
                return loaded.path
    except SpecError:
        return None  # the lock lives beside the files either way: fall back to the current directory
    return None


def _run(job: str, yes: bool, job_file: Path | None) -> int:
    from gpujob.audit.cliutil import interactive
    from gpujob.errors import GpujobError, LockError
    from gpujob.state import open_store

    store = open_store(job_file or _find_job_file(job))
    info = store.read_lock(job)
    held = store.lock_held(job)
    if info is None and not held and job not in store.locked_jobs():
        click.echo(f"Job '{job}' is not locked (looked in {store.location}).")
        return 0
    who = info.describe() if info else "an unknown process (no holder note)"
    click.echo(f"Job '{job}' is locked by {who}.")
    alive = info.holder_alive() if info else None
    if alive:
        # Unlocking under a live holder lets a second apply in beside it: never, even with --yes.
        raise LockError(
            f"job '{job}' is locked by {who}, and that process is still running on this host; refusing to unlock it",
            hint="wait for it to finish (or stop that process); the lock frees itself when its holder exits",
        )
    if held:
        # The store decides whether that holder can be cleared (a local file lock held by a live process
        # never can; a database session of a vanished host can be ended).
        click.echo("  it is held right now by a holder not running on this host.")
    elif alive is None and info is not None:
        click.echo(f"  the holder ran on another host ({info.host}) and holds nothing now.")
    else:
        click.echo("  the holder is gone: the lock is stale.")
    if not yes:
        if not interactive():
            import shlex

            again = shlex.join(
                ["gpujob", "force-unlock", job, "--yes", *(["-f", str(job_file)] if job_file else [])]
            )
            raise GpujobError(
                f"refusing to prompt: not interactive (CI=true or stdin is not a terminal); job '{job}' stays locked",
                hint=f"pass --yes to remove the lock: `{again}`",
            )
        if not click.confirm(f"Remove the lock of job '{job}'?", default=False):
            click.echo("Left the lock in place.")
            return 1
    store.force_unlock(job)
    click.echo(f"Removed the lock of job '{job}'.")
    return 0
