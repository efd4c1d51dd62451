"""`gpujob state [JOBFILE]`: the job's resources as the platform reports them now, normalised."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import click

from gpujob.cli.main import run_command


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


def _load(path: Path) -> Any:  # JobSpec
    from gpujob.spec.load import load_spec

    return load_spec(path).spec


async def _read(platform: str) -> list[Any]:
    from gpujob.providers.registry import open_providers

    async with open_providers({platform}) as providers:
        return await providers[platform].list_resources()


def owned(resources: list[Any], job: str) -> list[Any]:
    """Resources named gpujob-<job> or gpujob-<job>-..., plus IPs and snapshots of those machines."""
    prefix = f"gpujob-{job}"

    def mine(name: str | None) -> bool:
        return bool(name) and (name == prefix or str(name).startswith(prefix + "-"))

    return [r for r in resources if mine(r.name) or mine(str(r.attributes.get("machine_name") or ""))]


def _row(r: Any, dup: bool) -> list[str]:
    ssh = f"{r.ssh.user}@{r.ssh.host}:{r.ssh.port}" if r.ssh else "-"
    gpu = f"{r.gpu_count}x {r.gpu_id}" if r.gpu_id else "-"
    cost = f"${r.cost_per_hour:.3f}/h" if r.cost_per_hour is not None else "-"
    size = f"{r.volume_gb} GB" if r.volume_gb else "-"
    name = r.name + ("  (DUPLICATE)" if dup else "")
    return [r.kind, name, r.id, f"{r.status} ({r.raw_status})", gpu, r.region or "-", size, ssh, cost]


def render_text(resources: list[Any], job: str, platform: str) -> str:
    if not resources:
        return f"{job} ({platform}): nothing live: no resource named gpujob-{job} exists."
    counts = Counter((r.kind, r.name) for r in resources)
    header = ["KIND", "NAME", "ID", "STATUS", "GPU", "REGION", "DISK", "SSH", "COST"]
    rows = [header] + [_row(r, counts[(r.kind, r.name)] > 1) for r in resources]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [f"{job} ({platform}): {len(resources)} live resource(s)"]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    dups = sorted({name for (kind, name), n in counts.items() if n > 1})
    if dups:
        lines.append(f"warning: duplicated names (gpujob never picks one silently): {', '.join(dups)}")
    return "\n".join(lines)


def _state(job_file: str | None, fmt: str) -> None:
    path = _job_file(job_file)
    spec = _load(path)
    resources = owned(asyncio.run(_read(spec.platform)), spec.name)
    if fmt == "json":
        counts = Counter((r.kind, r.name) for r in resources)
        rows = [{**r.model_dump(mode="json"), "duplicate": counts[(r.kind, r.name)] > 1} for r in resources]
        click.echo(json.dumps(rows, indent=2))
    else:
        click.echo(render_text(resources, spec.name, spec.platform))


@click.command(name="state", help="Print a job's normalised live state.   e.g. gpujob state --format json")
@click.argument("job_file", required=False)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def command(job_file: str | None, fmt: str) -> None:
    run_command(_state, job_file, fmt)
