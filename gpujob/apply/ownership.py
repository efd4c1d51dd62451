"""Ownership checks the applier makes at run time, whatever the plan says (gpujob.naming's rule).

Before any call that changes or destroys a resource, it is read again by id and must be the job's own;
before a machine is created or started, no other checkout's machine of a job with this name may be
running, and two checkouts that create one at the same moment settle which one stays.
"""

from __future__ import annotations

from datetime import UTC, datetime

from gpujob import naming
from gpujob.apply.context import JobContext
from gpujob.errors import GpujobError
from gpujob.live import LiveResource
from gpujob.plan.model import Action, ActionKind


def machine_kind(ctx: JobContext) -> str:
    return ctx.machine_kind


async def volume_of(ctx: JobContext, action: Action) -> LiveResource | None:
    """The network volume `action` acts on: the job's own, or (a stale volume of the job) read by id."""
    vol = ctx.volume
    if action.resource_id is not None and (vol is None or vol.id != action.resource_id):
        vol = await ctx.provider.get("network_volume", action.resource_id)
    return vol


async def require_owned(ctx: JobContext, resource: LiveResource, action: Action, verb: str) -> LiveResource:
    """Right before a call that changes or destroys `resource`: read it again by id and refuse unless
    it is this job's (gpujob.naming: its name, and a pod's env marker, spell this job and project),
    whatever the plan says. Returns the fresh read (None-safe callers treat a gone resource first)."""
    fresh = await ctx.provider.get(resource.kind, resource.id) or resource
    machines: dict[str, LiveResource] = {}
    if fresh.kind in naming.FOLLOWERS and fresh.machine_id:
        machine = await ctx.provider.get(machine_kind(ctx), fresh.machine_id)
        if machine is not None:
            machines[machine.id] = machine
    # A follower whose machine this apply already destroyed was seen owned through it earlier.
    orphaned = fresh.kind in naming.FOLLOWERS and not machines and fresh.id in ctx.owned_ids
    if not orphaned and not naming.belongs(fresh, ctx.spec.name, ctx.project, machines):
        why = naming.not_ours(fresh, ctx.spec.name, ctx.project, machines)
        raise GpujobError(
            f"{action.id}: refusing to {verb} {fresh.kind} {fresh.name or fresh.id} ({fresh.id}): it does not "
            f"belong to job '{ctx.spec.name}' of this project ({ctx.project}): {why}",
            hint="nothing was changed; make a fresh plan (gpujob plan) and review what it targets",
        )
    return fresh


async def refuse_running_elsewhere(ctx: JobContext, action: Action) -> None:
    """Before creating or starting the job's machine: another checkout's machine of a job with this
    name must not be running (two copies would train and bill twice)."""
    listed = await ctx.provider.list_resources()
    busy = _busy_elsewhere(ctx, listed)
    if busy:
        r = busy[0]
        raise GpujobError(
            f"{action.id}: job '{ctx.spec.name}' already runs in another checkout: {r.kind} {r.name} ({r.id}) "
            f"of {naming.describe_owner(r)}; this checkout is project {ctx.project}",
            hint="stop or destroy it from the checkout that owns it, or rename this job",
        )


def _busy_elsewhere(ctx: JobContext, listed: list[LiveResource]) -> list[LiveResource]:
    kind = machine_kind(ctx)
    theirs = naming.others(listed, ctx.spec.name, ctx.project)
    return [r for r in theirs if r.kind == kind and r.status in ("running", "pending")]


def _first_made(r: LiveResource) -> tuple[bool, datetime, str]:
    return (r.created_at is None, r.created_at or datetime.max.replace(tzinfo=UTC), r.id)


async def settle_create_race(ctx: JobContext, action: Action, made: LiveResource) -> None:
    """Two checkouts that created the same job's machine at the same moment both passed the check
    before creating. Both see both machines now and agree on one rule: the first made stays, the
    other is terminated by its own checkout before anything runs on it (nothing is on it yet)."""
    listed = await ctx.provider.list_resources()
    rivals = _busy_elsewhere(ctx, listed)
    if not rivals:
        return
    first = min([made, *rivals], key=_first_made)
    if first.id == made.id:
        ctx.note(
            f"another checkout created {rivals[0].name} at the same time; it stands down, {made.name} stays"
        )
        return
    await ctx.provider.terminate(made)
    ctx.machine = None
    raise GpujobError(
        f"{action.id}: job '{ctx.spec.name}' was started at the same moment by another checkout: "
        f"{first.kind} {first.name} ({first.id}) of {naming.describe_owner(first)} came first, so "
        f"{made.name} ({made.id}) was terminated again before anything ran on it",
        hint="manage the job from the checkout that owns it, or rename this job",
    )


async def require_target_owned(ctx: JobContext, action: Action) -> None:
    """Before the teardown gate looks at a gated action's target (it may start a pod, mount a volume
    through a temporary pod and pull its files): the target must be the job's own."""
    target: LiveResource | None = None
    if action.kind in (ActionKind.TERMINATE, ActionKind.REPLACE):
        target = ctx.machine
    elif action.kind is ActionKind.DELETE_VOLUME:
        target = await volume_of(ctx, action)
    elif action.resource_id is not None:
        target = await ctx.provider.get(action.resource_kind, action.resource_id)
    if target is not None:
        verb = {ActionKind.DELETE_VOLUME: "delete", ActionKind.RELEASE_IP: "release"}.get(
            action.kind, str(action.kind)
        )
        await require_owned(ctx, target, action, verb)
