"""The teardown gate at run time, right before a destructive call. In this order:

  1. approval: the action's exact id was approved, or nothing happens (not even stopping the run);
  2. a look at the disk, through the machine that mounts it (a stopped machine is started; a network
     volume no pod mounts gets a temporary pod, the cheapest that can mount it in its data center,
     terminated after): the run is quiesced first, the way a platform stop would do it (SIGTERM to
     every process of the run, up to plan.cadence.quiesce_grace_s for its final save, SIGKILL after, and all of
     them confirmed gone); then the checkpoint directories are listed: the job file's
     checkpoint.dir, the one in the last pull record, and the one the last launched run recorded on
     the disk (so an edited or removed checkpoint block does not hide files);
  3. every listed directory on a disk this action erases must be empty, or be the job file's
     checkpoint.dir with checkpoint.verify set and no entry that cannot be pulled;
  4. the final pull of that directory (incremental: only what changed), each file verified;
  5. the directory listed again, and every file there (name, size, sha256) must have a verified local
     copy; then the caller makes the API call.

A checkpoint dir on a RunPod network volume survives a pod terminate: the terminate passes once the
run is stopped and the listing shows the dir really is on the volume's mount, unless this same apply
also deletes that volume, in which case the terminate does the final pull (the volume's last pod is
the last chance to read it) and the delete is checked against that evidence.
"""

from __future__ import annotations

import asyncio
from typing import Any

from gpujob.apply import gate
from gpujob.apply import reach_gate as reach
from gpujob.apply.context import SWEEP_QUEUE, JobContext
from gpujob.apply.ownership import volume_of
from gpujob.apply.teardown_helper import through_helper
from gpujob.apply.teardown_look import inspect_disk, on_mount
from gpujob.errors import GateError
from gpujob.invariant import present
from gpujob.live import LiveResource
from gpujob.plan.model import Action, ActionKind
from gpujob.plan.records import current_record, load_pull_record

DETACH_WAIT_S = 300.0
POLL_S = 2.0


async def guard(ctx: JobContext, action: Action) -> str:
    """Raise GateError naming the first unmet condition and what to run next; return a note for the
    step's outcome when everything holds. The caller makes the destructive call right after."""
    gated = [a.id for a in ctx.todo if a.gated]
    gate.require_approved(action, ctx.approvals, command=ctx.rerun, gated=gated)
    if action.kind in (ActionKind.TERMINATE, ActionKind.REPLACE):
        return await _machine_gate(ctx, action)
    if action.kind is ActionKind.DELETE_VOLUME:
        return await _volume_gate(ctx, action)
    return ""


# --- terminate / replace ---------------------------------------------------------------------------


async def _machine_gate(ctx: JobContext, action: Action) -> str:
    machine = ctx.machine
    machine = present(machine, "the machine the gate guards")
    vol_id = machine.network_volume_id if ctx.spec.platform == "runpod" else None
    from gpujob.layout.storage import shared

    # A sweep's shared volume is looked at by its own delete once no queue pod holds it (_volume_gate):
    # through this pod the other queues' cells would still be running.
    volume_dies = (
        vol_id is not None
        and not shared(ctx.spec)
        and any(a.kind is ActionKind.DELETE_VOLUME and a.resource_id == vol_id for a in ctx.todo)
    )

    if machine.status == "stopped" and vol_id is not None and not volume_dies:
        # A stopped pod runs nothing, its container disk was reset by the stop, and its mount is the
        # network volume, which stays: nothing it holds is erased, so it is not started (RP1: it may
        # not even start) just to be looked at.
        return (
            f"{machine.name} is stopped (no run alive; the stop reset its container disk); its mount is "
            f"network volume {vol_id}, which stays"
        )

    if machine.status == "stopped":
        why = reach.nothing_to_protect_here(ctx, machine)
        if why is not None:
            return f"{machine.name} is stopped and not started to be looked at: {why}"

    def erased(listing: Any) -> bool:
        return volume_dies or not (vol_id is not None and on_mount(listing, ctx.machine, ctx))

    return await inspect_disk(ctx, action, machine, erased, evidence_for=vol_id if volume_dies else None)


# --- delete volume -----------------------------------------------------------------------------------


async def _volume_gate(ctx: JobContext, action: Action) -> str:
    vol = await volume_of(ctx, action)
    if vol is None:
        return ""
    from gpujob.layout.storage import shared

    if shared(ctx.spec):
        return await _shared_volume_gate(ctx, action, vol)
    ev = ctx.evidence.get(vol.id)
    if ev is not None:
        # The final pull through the volume's last pod; a record of any other disk is no evidence.
        record = current_record(load_pull_record(ctx.state_dir, ctx.spec.name), None, [vol])
        problems = await asyncio.to_thread(gate.unsafe_files, ev.listing.files, record, ev.local_dir)
        if problems:
            raise GateError(
                f"{action.id}: {len(problems)} checkpoint file(s) of {vol.name} lack a verified local copy: "
                + "; ".join(problems[:5]),
                hint="run the command again: the volume is looked at through a temporary pod",
            )
        return f"its {len(ev.listing.files)} checkpoint file(s) were pulled and verified through {ev.through}"
    machine = ctx.machine
    if machine is not None and machine.network_volume_id == vol.id:

        def on_volume(listing: Any) -> bool:
            return on_mount(listing, ctx.machine, ctx)

        return await inspect_disk(ctx, action, machine, on_volume, evidence_for=None)
    return await through_helper(ctx, action, vol)


async def _shared_volume_gate(ctx: JobContext, action: Action, vol: LiveResource) -> str:
    """A sweep's shared network volume, deleted by queue 1: once no queue pod mounts it (each queue's
    terminate has its own gate), a temporary pod looks at it for every cell of every queue."""
    import dataclasses

    from gpujob.layout.storage import volume_spec

    queue = ctx.extra.get(SWEEP_QUEUE)
    if queue is None:
        raise GateError(
            f"{action.id}: {vol.name} is a sweep's shared volume, and this apply does not know its cells"
        )
    started = ctx.clock.now()
    while True:
        listed = await ctx.provider.list_resources()
        holders = [
            r
            for r in listed
            if r.network_volume_id == vol.id and r.kind == "pod" and r.status != "terminating"
        ]
        if not holders:
            break
        if (ctx.clock.now() - started).total_seconds() > DETACH_WAIT_S:
            names = ", ".join(f"{h.name} ({h.id})" for h in holders)
            raise GateError(
                f"{action.id}: {vol.name} holds the cells of every queue of the sweep, and {names} still mount(s) it",
                hint="destroy every queue of the sweep together (approve each queue's pod terminate too), then run the command again",
            )
        ctx.note(f"waiting for the sweep's other queue pods to let go of {vol.name} ({holders[0].name})")
        await ctx.clock.sleep(POLL_S)
    every = dataclasses.replace(ctx, spec=volume_spec(ctx.spec, queue))
    said = await through_helper(every, action, vol)
    return f"every cell of the sweep's {queue.queues} queues: {said}"


# --- the look, the final pull, the relist -------------------------------------------------------------
