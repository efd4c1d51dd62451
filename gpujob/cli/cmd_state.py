"""`gpujob state [JOBFILE]`: the job's resources as the platform reports them now, normalised.
`gpujob state migrate --to URL|DIR`: move the project's stored state (gpujob.state) to another store."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import click

from gpujob.cli.main import run_command
from gpujob.cli.options import no_color_option


def _job_file(path: str | None) -> Path:
    from gpujob.errors import GpujobError

    if path:
        return Path(path)
    from gpujob.spec.load import discover_job_files

    found = discover_job_files(Path.cwd())
    if len(found) != 1:
        raise GpujobError(
            "found no job file here" if not found else f"found {len(found)} job files here; name one",
            hint="e.g. gpujob state job.yaml",
        )
    return found[0]


def _load(path: Path) -> list[Any]:  # LoadedSpecs with their project id (None: nothing made from here yet)
    """The file's job, or each queue of its sweep (gpujob.sweep.expand)."""
    from gpujob.project import with_projects
    from gpujob.spec.load import load_specs

    return with_projects(load_specs([path]), create=False)


async def _read(platform: str) -> list[Any]:
    from gpujob.providers.registry import open_providers

    async with open_providers({platform}) as providers:
        return await providers[platform].list_resources()


def owned(resources: list[Any], job: str, project: str | None) -> list[Any]:
    """The job's resources by gpujob.naming's rule (its machine, its volumes, their IPs and snapshots)."""
    from gpujob.naming import owned as owned_by

    return owned_by(resources, job, project)


def _row(r: Any, dup: bool) -> list[str]:
    ssh = f"{r.ssh.user}@{r.ssh.host}:{r.ssh.port}" if r.ssh else "-"
    gpu = f"{r.gpu_count}x {r.gpu_id}" if r.gpu_id else "-"
    cost = f"${r.cost_per_hour:.3f}/h" if r.cost_per_hour is not None else "-"
    size = f"{r.volume_gb} GB" if r.volume_gb else "-"
    name = r.name + ("  (DUPLICATE)" if dup else "")
    return [r.kind, name, r.id, f"{r.status} ({r.raw_status})", gpu, r.region or "-", size, ssh, cost]


def render_text(
    resources: list[Any], job: str, platform: str, project: str | None = None, *, color: bool = False
) -> str:
    if not resources:
        if project is None:
            return f"{job} ({platform}): nothing live: no project id here yet (nothing was applied from this checkout)."
        return f"{job} ({platform}): nothing live: no resource of project {project} is named for job {job}."
    counts = Counter((r.kind, r.name) for r in resources)
    header = ["KIND", "NAME", "ID", "STATUS", "GPU", "REGION", "DISK", "SSH", "COST"]
    rows = [_row(r, counts[(r.kind, r.name)] > 1) for r in resources]
    lines = [f"{job} ({platform}): {len(resources)} live resource(s)"]
    from gpujob.table import table

    width = shutil.get_terminal_size().columns if color else None
    lines += table(header, rows, color=color, width=width)
    dups = sorted({name for (kind, name), n in counts.items() if n > 1})
    if dups:
        from gpujob.safe import for_terminal

        names = ", ".join(dups)  # from the API
        lines.append(for_terminal(f"warning: duplicated names (gpujob never picks one silently): {names}"))
    return "\n".join(lines)  # the table's cells went through gpujob.safe (gpujob.table)


def _state(job_file: str | None, fmt: str, no_color: bool = False) -> None:
    """Every job of the file: the job, or each queue of a sweep (one block, or one set of rows, each)."""
    path = _job_file(job_file)
    jobs = _load(path)
    listed = asyncio.run(_read(jobs[0].spec.platform))  # one file, one platform (a sweep has no fallback:)
    per_job = [(ls, owned(listed, ls.spec.name, ls.project)) for ls in jobs]
    if fmt == "json":
        rows = []
        for ls, resources in per_job:
            counts = Counter((r.kind, r.name) for r in resources)
            rows += [
                {**r.model_dump(mode="json"), "duplicate": counts[(r.kind, r.name)] > 1}
                | ({"job": ls.spec.name} if len(jobs) > 1 else {})
                for r in resources
            ]
        click.echo(json.dumps(rows, indent=2))
    else:
        from gpujob.cli.options import color_wanted

        color = color_wanted(no_color)
        click.echo(
            "\n".join(
                render_text(resources, ls.spec.name, ls.spec.platform, ls.project, color=color)
                for ls, resources in per_job
            )
        )


class _StateGroup(click.Group):
    """`gpujob state [JOBFILE]` (no subcommand) means `gpujob state show [JOBFILE]`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("-h", "--help")):
            args = ["show", *args]
        return super().parse_args(ctx, args)


HELP = """A job's live state (`gpujob state [JOBFILE]`), and where gpujob keeps its own.


Examples:
  gpujob state --format json
  gpujob state list                          every job here, its resources and where they run
  gpujob state rm pod-abc123                 forget one resource (the platform is untouched)
  gpujob state migrate --to postgresql://gpujob@db.internal/gpujob
  GPUJOB_STATE_URL=postgresql://gpujob@db.internal/gpujob gpujob state migrate --to .gpujob
"""


@click.group(name="state", cls=_StateGroup, help=HELP)
def command() -> None:
    pass


@command.command(name="show", help="Print a job's normalised live state.   e.g. gpujob state --format json")
@click.argument("job_file", required=False)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@no_color_option()
def show(job_file: str | None, fmt: str, no_color: bool) -> None:
    run_command(_state, job_file, fmt, no_color)


MIGRATE_HELP = """Copy every record of the project's state (journal, pull and launch records, pinned host
keys, events, the SSH key) into another store, then read each back to check it.


The source is the store this project uses now (GPUJOB_STATE_URL, the state: block of gpujob.yaml, or
.gpujob/ beside the job file); --from names another. TARGET is a postgresql:// URL or a directory.
Secrets are sealed with GPUJOB_STATE_KEY on the way into PostgreSQL and written 0600 on the way out.
A destination holding different records is refused; nothing is deleted from the source.


Examples:
  gpujob state migrate --to postgresql://gpujob@db.internal/gpujob
  gpujob state migrate --from postgresql://gpujob@db.internal/gpujob --to .gpujob
"""


@command.command(
    name="migrate",
    help=MIGRATE_HELP,
    short_help="Move gpujob's own state to PostgreSQL or a directory (and back).",
)
@click.option("--to", "target", required=True, help="postgresql://… URL or a directory.")
@click.option("--from", "source", help="postgresql://… URL or a directory (default: this project's store).")
@click.option(
    "--workspace", help="Workspace in a PostgreSQL store (default: $GPUJOB_STATE_WORKSPACE or default)."
)
@click.option("-f", "--file", "job_file", type=click.Path(path_type=Path, dir_okay=False),
              help="A job file of the project (default: the current directory's).")  # fmt: skip
def migrate(target: str, source: str | None, workspace: str | None, job_file: Path | None) -> None:
    run_command(_migrate, target, source, workspace, job_file)


def _open(where: str, workspace: str | None) -> Any:  # Store
    import os

    from gpujob.state.config import (
        DEFAULT_WORKSPACE,
        WORKSPACE_ENV,
        Local,
        Postgres,
        checked_workspace,
        open_config,
        parse_url,
    )

    if "://" in where:
        ws = workspace or os.environ.get(WORKSPACE_ENV, "").strip() or DEFAULT_WORKSPACE
        return open_config(
            Postgres(parse_url(where, "--to/--from"), checked_workspace(ws, "--workspace"), "cli")
        )
    return open_config(Local(Path(where).absolute()))


def _migrate(target: str, source: str | None, workspace: str | None, job_file: Path | None) -> None:
    from gpujob.state import open_store
    from gpujob.state.migrate import migrate as run

    src = _open(source, workspace) if source else open_store(job_file)
    dst = _open(target, workspace)
    done = run(src, dst)
    click.echo(f"{src.location} -> {dst.location}: {done.summary()}; every record read back and compared.")
    if "://" in target:
        click.echo(
            f"Use it: export GPUJOB_STATE_URL={dst.location.split(' ')[0]} (password: PGPASSWORD or ~/.pgpass),\n"
            "  or commit a gpujob.yaml with  state: {url: ..., workspace: ...}.  Keep GPUJOB_STATE_KEY safe: "
            "without it the SSH key cannot be read back."
        )
    from gpujob.state.local import LocalStore

    if source is None and isinstance(src, LocalStore):
        click.echo(
            f"{src.location} is left as it was; it holds the SSH key in clear: remove it once you switched."
        )


def _attach() -> None:
    from gpujob.cli.cmd_state_ops import list_command, rm_command

    command.add_command(list_command)
    command.add_command(rm_command)


_attach()
