"""The storage steps: create a network volume (or wait for the sweep queue that creates a shared one), delete
it once no pod mounts it, and delete snapshots. Each re-reads what it acts on and is safe to run twice.
"""

from __future__ import annotations

import contextlib

from gpujob.apply import ownership as guard
from gpujob.apply import runtime
from gpujob.apply.capacity import candidates
from gpujob.apply.context import SWEEP_QUEUE, JobContext
from gpujob.apply.stepbase import Outcome, look_harder, refresh
from gpujob.errors import GpujobError, ProviderNotFound, command_text, job_file_args
from gpujob.live import LiveResource
from gpujob.plan.model import Action
from gpujob.providers.base import VolumeRequest


async def create_volume(ctx: JobContext, action: Action) -> Outcome:
    await look_harder(ctx, action)
    if ctx.volume is not None:
        return Outcome(ctx.volume.id, f"adopted existing {ctx.volume.name} ({ctx.volume.id})")
    nv = ctx.spec.storage.network_volume
    name = ctx.volume_name
    if nv is None or name is None:
        raise GpujobError(f"{action.id}: the job file has no storage.network_volume")
    await guard.refuse_running_elsewhere(ctx, action)  # its volume would bill beside theirs for nothing
    region = _volume_region(ctx)
    vol = await ctx.provider.create_volume(
        VolumeRequest(name=name, size_gb=nv.size_gb, region=region, tier=nv.tier)
    )
    ctx.volume = vol
    ctx.extra[CREATED_VOLUME] = vol.id  # a create race this apply loses deletes it again
    return Outcome(vol.id, f"created {vol.name} ({vol.id}) in {region}")


def _volume_region(ctx: JobContext) -> str:
    if ctx.spec.machine.regions:
        return ctx.spec.machine.regions[0]
    for cand in candidates(ctx.spec):
        if cand.region:
            return cand.region
    from gpujob.profile import load_profile

    return load_profile(ctx.spec.platform).regions[0]


CREATED_VOLUME = "created_volume"  # ctx.extra: the network volume this apply created


SHARED_VOLUME_WAIT_S = 600.0


async def await_shared_volume(ctx: JobContext) -> None:
    """Queues 2..N of a sweep on a shared network volume: queue 1 creates it, in this same apply (its
    own job, run at the same time), and this queue's pod is made only once it exists (RP7: attached at
    creation, in its data center)."""
    from gpujob.layout.storage import holds_volume

    if holds_volume(ctx.spec, ctx.extra.get(SWEEP_QUEUE)):
        return
    started = ctx.clock.now()
    ctx.note(f"waiting for network volume {ctx.volume_name}, which another queue of the sweep creates")
    while ctx.volume is None and (ctx.clock.now() - started).total_seconds() < SHARED_VOLUME_WAIT_S:
        await ctx.clock.sleep(runtime.poll_s())
        await refresh(ctx)


async def drop_race_volume(ctx: JobContext, lost: GpujobError) -> GpujobError:
    """The create race was lost (the machine terminated again, or another checkout's came up after this
    apply made the volume): the network volume this apply created for it is deleted too (it is empty:
    nothing ran), or named with the command to delete it."""
    vol = ctx.volume
    if vol is None or ctx.extra.get(CREATED_VOLUME) != vol.id:
        return lost
    try:
        await _wait_detached(ctx, vol)
        with contextlib.suppress(ProviderNotFound):
            await ctx.provider.delete_volume(vol)
    except GpujobError as exc:
        again = command_text("gpujob", "destroy", *job_file_args(ctx.spec_path), "--approve",
                             f"{ctx.spec.name}.network_volume.delete-volume")  # fmt: skip
        return GpujobError(
            f"{lost}; the network volume {vol.name} ({vol.id}) this apply created for it could not be deleted "
            f"({str(exc).splitlines()[0]}) and bills until it is",
            hint=f"delete it: {again} (or in the console); then {lost.hint or 'see above'}",
        )
    ctx.volume = None
    ctx.note(f"deleted {vol.name} ({vol.id}) again: created by this apply for the machine that lost the race")
    return GpujobError(
        f"{lost}; the network volume {vol.name} ({vol.id}) this apply created for it was deleted again",
        hint=lost.hint,
    )


async def delete_volume(ctx: JobContext, action: Action) -> Outcome:
    vol = await guard.volume_of(ctx, action)
    if vol is None:
        return Outcome(action.resource_id, "already gone")
    vol = await guard.require_owned(ctx, vol, action, "delete")
    await _wait_detached(ctx, vol)
    with contextlib.suppress(ProviderNotFound):  # deleting what is gone is success
        await ctx.provider.delete_volume(vol)
    if ctx.volume is not None and ctx.volume.id == vol.id:
        ctx.volume = None
    return Outcome(vol.id, f"deleted {vol.name}")


DETACH_WAIT_S = 300.0


async def _wait_detached(ctx: JobContext, vol: LiveResource) -> None:
    """Terminated pods can linger in the list; never delete a volume a pod still holds."""
    started = ctx.clock.now()
    while True:
        listed = await ctx.provider.list_resources()
        holders = [r for r in listed if r.network_volume_id == vol.id and r.kind in ("pod", "machine")]
        if not holders:
            return
        if (ctx.clock.now() - started).total_seconds() > DETACH_WAIT_S:
            names = ", ".join(f"{h.name} ({h.id})" for h in holders)
            raise GpujobError(
                f"{vol.name} is still attached to {names}", hint="terminate those first, then re-run"
            )
        ctx.note(f"waiting for {vol.name} to be released by {holders[0].name}")
        await ctx.clock.sleep(runtime.poll_s())


async def by_id(ctx: JobContext, action: Action) -> LiveResource | None:
    if action.resource_id is None:
        return None
    return await ctx.provider.get(action.resource_kind, action.resource_id)


async def delete_snapshot(ctx: JobContext, action: Action) -> Outcome:
    snap = await by_id(ctx, action)
    if snap is None:
        return Outcome(action.resource_id, "already deleted")
    await guard.require_owned(ctx, snap, action, "delete")
    await ctx.provider.delete_snapshot(snap)
    return Outcome(snap.id, f"deleted snapshot {snap.name}")
