"""What every step shares: its Outcome, the platform's machine kind and teardown verb, and the re-read of
the job's machine and network volume (by gpujob.naming's rule) before a step acts.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpujob import naming
from gpujob.apply import runtime
from gpujob.apply.context import JobContext
from gpujob.live import LiveResource
from gpujob.plan.model import Action


@dataclass
class Outcome:
    resource_id: str | None = None
    detail: str = ""


ABSENCE_READS = 3  # a just-created resource may not be listed yet: absence needs more than one read


def machine_kind(ctx: JobContext) -> str:
    return naming.machine_kind_of(ctx.spec.platform, ctx.spec.machine.nodes)


def teardown_verb(ctx: JobContext) -> str:
    return "terminate" if ctx.spec.platform == "runpod" else "destroy"


async def refresh(ctx: JobContext) -> None:
    """Find the job's machine and network volume by gpujob.naming's rule (owned resources only)."""
    listed = await ctx.provider.list_resources()
    ctx.machine, ctx.volume = _pick(ctx, listed)
    ctx.owned_ids |= {r.id for r in naming.owned(listed, ctx.spec.name, ctx.project)}


def _pick(ctx: JobContext, listed: list[LiveResource]) -> tuple[LiveResource | None, LiveResource | None]:
    kind = machine_kind(ctx)
    mine = naming.owned(listed, ctx.spec.name, ctx.project)
    machine = next((r for r in naming.machines(mine, ctx.spec.name, ctx.project) if r.kind == kind), None)
    vol_name = ctx.volume_name
    volume = next((r for r in mine if r.kind == "network_volume" and vol_name and r.name == vol_name), None)
    return machine, volume


async def look_harder(ctx: JobContext, action: Action) -> None:
    """After a killed apply whose create outcome is unknown, read a few more times before creating."""
    if action.id not in ctx.in_flight:
        return
    for _ in range(ABSENCE_READS):
        await refresh(ctx)
        found = ctx.volume if action.resource_kind == "network_volume" else ctx.machine
        if found is not None:
            return
        ctx.note(f"{action.resource_name}: previous apply died mid-create; re-reading before creating")
        await ctx.clock.sleep(runtime.poll_s())
