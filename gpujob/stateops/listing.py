"""`gpujob state list`: every job here with the resources that are its own now (gpujob.naming, with
what this project adopted), where they run, and what it forgot; read from the platforms, read-only."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from gpujob.live import LiveResource


@dataclass(frozen=True)
class Row:
    job: str
    platform: str
    kind: str
    name: str
    id: str
    status: str
    region: str
    ssh: str  # user@host:port where the machine answers SSH, "-" for the rest
    note: str


async def read_resources(platforms: set[str]) -> dict[str, list[LiveResource]]:
    from gpujob.providers.registry import open_providers

    async with open_providers(platforms) as providers:
        return {p: await providers[p].list_resources() for p in platforms}


def rows(loaded: Sequence[Any], listed: dict[str, list[LiveResource]]) -> list[Row]:
    from gpujob import naming
    from gpujob.project import ownership
    from gpujob.state import open_store

    out: list[Row] = []
    seen: set[str] = set()  # a sweep's queues share its network volume: listed once, under the first
    for ls in loaded:
        platform = ls.spec.platform
        resources = listed.get(platform, [])
        doc = ownership.read(open_store(ls.path))
        adopted = {rid for rid, e in doc["adopted"].items() if e.get("project") == ls.project}
        for r in naming.owned(resources, ls.spec.name, ls.project):
            if r.id in seen:
                continue
            seen.add(r.id)
            note = "adopted (gpujob import)" if r.id in adopted else ""
            if naming.is_helper(r):
                note = "the gate's temporary pod"
            elif r.kind == "network_volume" and naming.volume_job(ls.spec.name) != ls.spec.name:
                note = f"the network volume of every queue of sweep {naming.volume_job(ls.spec.name)}"
            out.append(_row(ls.spec.name, r, note))
        by_id = {r.id: r for r in resources}
        for rid, e in doc["forgotten"].items():
            if e.get("job") != ls.spec.name or e.get("project") != ls.project:
                continue
            live = by_id.get(rid)
            note = f"forgotten {str(e.get('at', ''))[:16]} (gpujob state rm): not managed"
            if live is not None:
                out.append(_row(ls.spec.name, live, note + ", still on the platform"))
            else:
                out.append(Row(ls.spec.name, platform, str(e.get("kind", "?")), str(e.get("name", "?")), rid,
                               "gone", "-", "-", note + ", gone from the platform"))  # fmt: skip
    return out


def _row(job: str, r: LiveResource, note: str) -> Row:
    status = r.status if r.raw_status in ("", r.status) else f"{r.status} ({r.raw_status})"
    ssh = f"{r.ssh.user}@{r.ssh.host}:{r.ssh.port}" if r.ssh else "-"
    return Row(job, r.platform, r.kind, r.name, r.id, status, r.region or "-", ssh, note)


def render_text(
    found: list[Row], loaded: Sequence[Any], *, color: bool = False, width: int | None = None
) -> str:
    """`color`/`width`: a terminal's (the table fits it, header bold); piped: plain, unwrapped."""
    from gpujob.redact import from_machine
    from gpujob.state import open_store

    lines = []
    stores = dict.fromkeys(open_store(ls.path).location for ls in loaded)
    lines.append(f"state: {', '.join(stores)}")
    header = ("JOB", "PLATFORM", "KIND", "NAME", "ID", "STATUS", "REGION", "SSH", "NOTE")
    from gpujob.table import table

    rows = [[str(c) for c in asdict(r).values()] for r in found]
    lines += table(header, rows, color=color, width=width)
    empty = [ls.spec.name for ls in loaded if not any(r.job == ls.spec.name for r in found)]
    for job in empty:
        project = next(ls.project for ls in loaded if ls.spec.name == job)
        why = (
            "no project id here yet (nothing applied from this checkout)"
            if project is None
            else "nothing live"
        )
        lines.append(f"{job}: {why}")
    return from_machine("\n".join(lines)) + "\n"  # names and statuses come from the platforms


def render_json(found: list[Row]) -> str:
    return json.dumps([asdict(r) for r in found], indent=2) + "\n"
