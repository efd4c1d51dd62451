"""One function per action kind. Each re-reads what it acts on and is safe to run twice."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from gpujob import naming
from gpujob.apply import ownership as guard
from gpujob.apply import quiesce, runtime, teardown
from gpujob.apply.capacity import candidates, create_with_fallback, launch_request
from gpujob.apply.carry import push_after_replace
from gpujob.apply.context import SWEEP_QUEUE, JobContext
from gpujob.apply.journal import crashpoint
from gpujob.apply.reconcile import FINISHED, HOST_LOST_GPU, NOT_RELAUNCHED, launched_digest
from gpujob.apply.records import PullRecord, note_launch, note_run
from gpujob.errors import GpujobError, ProviderNotFound, command_text, job_file_args, ssh_words
from gpujob.live import LiveResource
from gpujob.plan.model import Action, ActionKind
from gpujob.providers.base import VolumeRequest, ZeroGpuError
from gpujob.reach import gate as reach_gate

CAPACITY_WAIT_S = 1800.0
ABSENCE_READS = 3  # a just-created resource may not be listed yet: absence needs more than one read
DETACH_WAIT_S = 300.0


@dataclass
class Outcome:
    resource_id: str | None = None
    detail: str = ""


def _machine_kind(ctx: JobContext) -> str:
    return "pod" if ctx.spec.platform == "runpod" else "machine"


def _teardown_verb(ctx: JobContext) -> str:
    return "terminate" if ctx.spec.platform == "runpod" else "destroy"


async def refresh(ctx: JobContext) -> None:
    """Find the job's machine and network volume by gpujob.naming's rule (owned resources only)."""
    listed = await ctx.provider.list_resources()
    ctx.machine, ctx.volume = _pick(ctx, listed)
    ctx.owned_ids |= {r.id for r in naming.owned(listed, ctx.spec.name, ctx.project)}


def _pick(ctx: JobContext, listed: list[LiveResource]) -> tuple[LiveResource | None, LiveResource | None]:
    kind = _machine_kind(ctx)
    mine = naming.owned(listed, ctx.spec.name, ctx.project)
    machine = next((r for r in naming.machines(mine, ctx.spec.name, ctx.project) if r.kind == kind), None)
    vol_name = ctx.volume_name
    volume = next((r for r in mine if r.kind == "network_volume" and vol_name and r.name == vol_name), None)
    return machine, volume


async def _look_harder(ctx: JobContext, action: Action) -> None:
    """After a killed apply whose create outcome is unknown, read a few more times before creating."""
    if action.id not in ctx.in_flight:
        return
    for _ in range(ABSENCE_READS):
        await refresh(ctx)
        found = ctx.volume if action.resource_kind == "network_volume" else ctx.machine
        if found is not None:
            return
        ctx.note(f"{action.resource_name}: previous apply died mid-create; re-reading before creating")
        await ctx.clock.sleep(runtime.POLL_S)


async def run(ctx: JobContext, action: Action) -> Outcome:
    kind = action.kind
    gone = (kind in (ActionKind.TERMINATE, ActionKind.REPLACE) and ctx.machine is None) or (
        kind is ActionKind.DELETE_VOLUME and await guard.volume_of(ctx, action) is None
    )
    checked = ""
    if action.gated and not gone:
        await guard.require_target_owned(ctx, action)  # before the gate looks at (or pulls from) it
        checked = await teardown.guard(ctx, action)
    outcome = await _dispatch(ctx, action)
    if checked:
        outcome.detail += f" (gate: {checked})"
    return outcome


def _push_intent(ctx: JobContext, old_id: str) -> None:
    """A PUSH after this replace carries what the gate pulled from `old_id`. Journalled before the
    terminate, so an apply that dies before the push leaves it pending for the next one."""
    ctx.replaced = old_id
    push = next((a for a in ctx.todo if a.kind is ActionKind.PUSH), None)
    if push is not None:
        ctx.journal.append(
            "intent", ctx.clock.now(), action_id=push.id, kind=str(push.kind), resource_name=push.resource_name,
            resource_id=old_id, detail=f"carry the checkpoints pulled from {old_id} onto its successor",
        )  # fmt: skip


async def _dispatch(ctx: JobContext, action: Action) -> Outcome:
    kind = action.kind
    if kind is ActionKind.CREATE:
        if action.resource_kind == "network_volume":
            return await create_volume(ctx, action)
        if action.resource_kind == "public_ip":
            return await static_ip(ctx, action)
        return await create_machine(ctx, action)
    if kind is ActionKind.REPLACE:
        if ctx.machine is not None:
            _push_intent(ctx, ctx.machine.id)
        await terminate(ctx, action)
        return await create_machine(ctx, action)
    handlers = {
        ActionKind.START: start,
        ActionKind.STOP: stop,
        ActionKind.TERMINATE: terminate,
        ActionKind.DELETE_VOLUME: delete_volume,
        ActionKind.RELEASE_IP: release_ip,
        ActionKind.DELETE_SNAPSHOT: delete_snapshot,
        ActionKind.UPDATE: update,
        ActionKind.PULL: pull,
        ActionKind.PUSH: push,
        ActionKind.LAUNCH: launch,
        ActionKind.RELAUNCH: relaunch,
    }
    handler = handlers.get(kind)
    if handler is None:
        return Outcome(detail="nothing to do")
    return await handler(ctx, action)


async def create_volume(ctx: JobContext, action: Action) -> Outcome:
    await _look_harder(ctx, action)
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


async def create_machine(ctx: JobContext, action: Action) -> Outcome:
    await _look_harder(ctx, action)
    if ctx.machine is not None:
        adopted = ctx.machine
        if adopted.status == "stopped":
            await guard.refuse_running_elsewhere(ctx, action)
            await guard.require_owned(ctx, adopted, action, "start")
            ctx.machine = await ctx.provider.start(adopted)
            ctx.moved = True
            return Outcome(adopted.id, f"adopted existing {adopted.name} ({adopted.id}) and started it")
        return Outcome(adopted.id, f"adopted existing {adopted.name} ({adopted.id})")
    if ctx.spec.storage.network_volume is not None and ctx.volume is None:
        await _await_shared_volume(ctx)
    if ctx.spec.storage.network_volume is not None and ctx.volume is None:
        raise GpujobError(f"{action.id}: network volume {ctx.volume_name} does not exist yet")
    try:
        await guard.refuse_running_elsewhere(ctx, action)
    except GpujobError as exc:  # another checkout's machine came up after this apply made the volume
        raise await _drop_race_volume(ctx, exc) from None
    _, public_key = ctx.ssh.ensure_project_key(ctx.state_dir)
    pinned = ctx.volume.region if ctx.volume is not None else None  # a network volume locks the data center
    cands = candidates(ctx.spec, region=pinned)
    machine = await create_with_fallback(
        ctx.provider,
        launch_request(ctx, public_key),
        cands,
        clock=ctx.clock,
        note=ctx.note,
        max_wait_s=CAPACITY_WAIT_S,
    )
    ctx.machine = machine
    ctx.moved = True
    try:
        await guard.settle_create_race(ctx, action, machine)
    except GpujobError as exc:
        raise await _drop_race_volume(ctx, exc) from None
    note_launch(ctx.state_dir, ctx.spec, machine)
    where = f" {machine.gpu_id or ''} in {machine.region}" if machine.region else ""
    return Outcome(machine.id, f"created {machine.name} ({machine.id}){where}")


CREATED_VOLUME = "created_volume"  # ctx.extra: the network volume this apply created
SHARED_VOLUME_WAIT_S = 600.0


async def _await_shared_volume(ctx: JobContext) -> None:
    """Queues 2..N of a sweep on a shared network volume: queue 1 creates it, in this same apply (its
    own job, run at the same time), and this queue's pod is made only once it exists (RP7: attached at
    creation, in its data center)."""
    from gpujob.sweep.storage import holds_volume

    if holds_volume(ctx.spec, ctx.extra.get(SWEEP_QUEUE)):
        return
    started = ctx.clock.now()
    ctx.note(f"waiting for network volume {ctx.volume_name}, which another queue of the sweep creates")
    while ctx.volume is None and (ctx.clock.now() - started).total_seconds() < SHARED_VOLUME_WAIT_S:
        await ctx.clock.sleep(runtime.POLL_S)
        await refresh(ctx)


async def _drop_race_volume(ctx: JobContext, lost: GpujobError) -> GpujobError:
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


def _need_machine(ctx: JobContext, action: Action) -> LiveResource:
    if ctx.machine is None:
        raise GpujobError(f"{action.id}: {ctx.machine_name} does not exist", hint="plan again")
    return ctx.machine


async def start(ctx: JobContext, action: Action) -> Outcome:
    machine = _need_machine(ctx, action)
    if machine.status == "running":
        return Outcome(machine.id, "already running")
    await guard.refuse_running_elsewhere(ctx, action)
    await guard.require_owned(ctx, machine, action, "start")
    try:
        ctx.machine = await ctx.provider.start(machine)
    except ZeroGpuError as exc:
        # RP1: the host has no GPU for this pod any more. Recorded so the next plan replaces the pod on
        # a fresh host instead of proposing the same start again (gpujob.apply.reconcile.host_lost_gpu).
        ctx.journal.append(
            "done", ctx.clock.now(), action_id=f"{ctx.spec.name}.{_machine_kind(ctx)}.{HOST_LOST_GPU}",
            kind="start", resource_name=machine.name, resource_id=machine.id, detail=str(exc),
        )  # fmt: skip
        raise
    ctx.moved = True
    return Outcome(machine.id, f"started {machine.name}")


async def stop(ctx: JobContext, action: Action) -> Outcome:
    machine = _need_machine(ctx, action)
    if machine.status == "stopped":
        return Outcome(machine.id, "already stopped")
    await guard.require_owned(ctx, machine, action, "stop")
    ctx.machine, saved = await quiesce.stop_for(ctx, machine)
    return Outcome(machine.id, f"stopped {machine.name}" + (f" ({saved})" if saved else ""))


async def terminate(ctx: JobContext, action: Action) -> Outcome:
    machine = ctx.machine
    if machine is None:
        return Outcome(action.resource_id, "already gone")
    await guard.require_owned(ctx, machine, action, _teardown_verb(ctx))
    await ctx.provider.terminate(machine)
    ctx.machine = None
    return Outcome(machine.id, f"terminated {machine.name}")


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
        await ctx.clock.sleep(runtime.POLL_S)


async def _by_id(ctx: JobContext, action: Action) -> LiveResource | None:
    if action.resource_id is None:
        return None
    return await ctx.provider.get(action.resource_kind, action.resource_id)


async def release_ip(ctx: JobContext, action: Action) -> Outcome:
    ip = await _by_id(ctx, action)
    if ip is None:
        return Outcome(action.resource_id, "already released")
    await guard.require_owned(ctx, ip, action, "release")
    await ctx.provider.release_ip(ip)
    return Outcome(ip.id, f"released {ip.public_ip or ip.name}")


async def static_ip(ctx: JobContext, action: Action) -> Outcome:
    """Claim a static IP in the machine's region and assign it. The claim is journalled at once, so a
    re-run after a kill between claim and assign adopts that IP instead of claiming (and billing) twice."""
    machine = _need_machine(ctx, action)
    claim, assign = getattr(ctx.provider, "claim_ip", None), getattr(ctx.provider, "assign_ip", None)
    if claim is None or assign is None:
        raise GpujobError(f"{action.id}: {ctx.spec.platform} has no static IPs")
    ips = [r for r in await ctx.provider.list_resources() if r.kind == "public_ip"]
    held = next((r for r in ips if r.machine_id == machine.id), None)
    if held is not None:
        return Outcome(held.id, f"{machine.name} already has static IP {held.id}")
    claimed = {e.resource_id for e in ctx.journal.entries() if e.action_id == action.id and e.resource_id}
    ip = next((r for r in ips if r.id in claimed and r.machine_id is None), None)
    if ip is not None:
        ctx.note(f"adopting {ip.id}, claimed by an apply that stopped before assigning it")
    else:
        if not machine.region:
            raise GpujobError(f"{action.id}: {machine.name} reports no region to claim an IP in")
        ip = await claim(machine.region)
        ctx.journal.append(
            "intent", ctx.clock.now(), action_id=action.id, kind=str(action.kind),
            resource_name=action.resource_name, resource_id=ip.id, detail=f"claimed {ip.id}; assigning next",
        )  # fmt: skip
        crashpoint("after", f"{action.id}:claim")
    # The address of a running machine changes under its sessions, and a switch while off is the only
    # one known to work (REFERENCE 0.6): stop, assign, start, and resume the run if the job has one.
    await guard.require_owned(ctx, machine, action, "assign a static IP to")
    was_running = machine.status == "running"
    if was_running:
        ctx.note(f"stopping {machine.name} to assign static IP {ip.id}")
        machine, _saved = await quiesce.stop_for(ctx, machine, before="static IP switch")
    await assign(ip.id, machine.id)
    ctx.machine = await ctx.provider.get(machine.kind, machine.id) or machine
    detail = f"claimed static IP {ip.id} and assigned it to {machine.name}"
    if was_running:
        ctx.machine = await ctx.provider.start(ctx.machine)
        ctx.moved = True
        if ctx.spec.run is not None:
            detail += "; " + (await launch(ctx, action)).detail
    return Outcome(ip.id, detail)


async def delete_snapshot(ctx: JobContext, action: Action) -> Outcome:
    snap = await _by_id(ctx, action)
    if snap is None:
        return Outcome(action.resource_id, "already deleted")
    await guard.require_owned(ctx, snap, action, "delete")
    await ctx.provider.delete_snapshot(snap)
    return Outcome(snap.id, f"deleted snapshot {snap.name}")


async def update(ctx: JobContext, action: Action) -> Outcome:
    """In place: grow a network volume or a machine's own disk, set a Paperspace auto-shutdown timer, or
    change a sweep queue's run from its next cell."""
    if action.resource_kind == "run":
        return await update_queue_run(ctx, action)
    shutdown = next((c for c in action.changes if c.path == "auto_shutdown_hours"), None)
    if shutdown is not None:
        return await set_auto_shutdown(ctx, action, shutdown.after)
    size = next((c.after for c in action.changes if c.path.endswith(("size_gb", "volume_gb"))), None)
    if isinstance(size, int) and action.resource_kind == "network_volume" and ctx.volume is not None:
        await guard.require_owned(ctx, ctx.volume, action, "grow")
        ctx.volume = await ctx.provider.grow_volume(ctx.volume, size)
        return Outcome(ctx.volume.id, f"grew the volume of {ctx.volume.name} to {size} GB")
    if isinstance(size, int) and action.resource_kind in ("pod", "machine"):
        return await grow_disk(ctx, action, size)
    raise GpujobError(
        f"{action.id}: this in-place update is not supported by apply", hint="change it in the console"
    )


async def grow_disk(ctx: JobContext, action: Action, size: int) -> Outcome:
    """A pod's volume disk (PATCH mounts.persistent: the container restarts) or a machine's disk (PUT
    diskSize, only while it is off: stopped first and started again). A run that was going is relaunched
    from its latest checkpoint, as after any restart."""
    machine = _need_machine(ctx, action)
    await guard.require_owned(ctx, machine, action, "grow the disk of")
    was_running = machine.status == "running"
    # Either way the run ends (a pod's container restarts): it gets its SIGTERM save first.
    saved = ""
    if ctx.spec.platform == "paperspace" and was_running:
        ctx.note(
            f"stopping {machine.name} to grow its disk (Paperspace resizes a machine only while it is off)"
        )
        machine, saved = await quiesce.stop_for(ctx, machine, before="disk grow")
    elif was_running:
        saved = await quiesce.before_restart(ctx, action, machine)
        machine = ctx.machine or machine
    grown = await ctx.provider.grow_volume(machine, size)
    note_launch(ctx.state_dir, ctx.spec, grown, disk_gb=size)
    ctx.machine = grown
    detail = f"grew the disk of {grown.name} to {size} GB" + (f" ({saved})" if saved else "")
    if was_running:
        if grown.status != "running":
            ctx.machine = await ctx.provider.start(grown)
        ctx.moved = True
        if ctx.spec.run is not None:
            detail += "; " + (await launch(ctx, action)).detail
    return Outcome(grown.id, detail)


async def set_auto_shutdown(ctx: JobContext, action: Action, hours: object) -> Outcome:
    """PUT /machines/{id}. A timer change on an enabled machine does not reliably take in one call
    (REFERENCE 0.6), so a new timer is always written as disable, then enable with timeout and force."""
    machine = _need_machine(ctx, action)
    update = getattr(ctx.provider, "update", None)
    if update is None:
        raise GpujobError(f"{action.id}: {ctx.spec.platform} has no in-place auto-shutdown")
    await guard.require_owned(ctx, machine, action, "update")
    if hours is None or hours == 0:
        ctx.machine = await update(machine, {"autoShutdownEnabled": False})
        return Outcome(machine.id, f"disabled auto-shutdown of {machine.name}")
    if not isinstance(hours, int | float):
        raise GpujobError(f"{action.id}: auto-shutdown must be a number of hours, not {hours!r}")
    if machine.auto_shutdown_hours:
        await update(machine, {"autoShutdownEnabled": False})
    body = {"autoShutdownEnabled": True, "autoShutdownTimeout": hours, "autoShutdownForce": True}
    fresh = await update(machine, body)
    if fresh.auto_shutdown_hours != hours:
        raise GpujobError(
            f"{action.id}: auto-shutdown of {machine.name} reads {fresh.auto_shutdown_hours}h after setting "
            f"{hours:g}h",
            hint="re-run apply; if it persists set it in the Paperspace console",
        )
    ctx.machine = fresh
    return Outcome(machine.id, f"set auto-shutdown of {machine.name} to {hours:g}h")


def _target(ctx: JobContext, action: Action) -> runtime.Target:
    return runtime.Target(
        spec=ctx.spec,
        spec_path=ctx.spec_path,
        provider=ctx.provider,
        resource=_need_machine(ctx, action),
        state_dir=ctx.state_dir,
        moved=ctx.moved,
    )


async def pull(ctx: JobContext, action: Action) -> Outcome:
    machine = _need_machine(ctx, action)
    if machine.status != "stopped":
        try:
            return await _pull(ctx, action)
        except GpujobError as exc:
            said = reach_gate.unreached(ctx, action, machine, exc)
            if said is None:
                raise
            return Outcome(machine.id, said)
    from gpujob.apply.volume_stays import stays_on_volume

    if (kept := stays_on_volume(ctx, machine)) is not None:
        return Outcome(machine.id, kept)
    # Started for the pull (the teardown this pull guards follows), and stopped again when the pull
    # fails so it does not bill the GPU.
    await guard.require_owned(ctx, machine, action, "start")
    ctx.machine = await teardown.start_for_disk(ctx, machine, "to pull its checkpoints")
    try:
        return await _pull(ctx, action)
    except GpujobError as exc:
        ctx.note(f"pull failed: stopping {machine.name} again")
        ctx.machine, _ = await quiesce.stop_for(
            ctx, ctx.machine, fresh="started for the pull only: nothing of the job was launched on it"
        )
        said = reach_gate.unreached(ctx, action, machine, exc)
        if said is None:
            raise
        return Outcome(machine.id, said)


async def _pull(ctx: JobContext, action: Action) -> Outcome:
    target = _target(ctx, action)
    record = await runtime.pull(target, ctx.ssh, ctx.clock, ctx.note)
    ctx.machine = target.resource
    if not record.complete:
        problems = [f"not pulled or checksum mismatch: {n}" for n in record.missing()]
        problems += [f"failed verification: {n}{_said(record, n)}" for n in record.unverified()]
        problems += [f"not pullable: {n!r} ({why})" for n, why in sorted(record.unpullable.items())]
        raise GpujobError(
            f"{action.id}: pull incomplete: " + "; ".join(problems[:5]),
            hint=f"inspect {record.local_dir}; rename or remove on the machine what is not pullable or fails "
            f"the check ({command_text(*ssh_words(ctx.spec_path, 'ls', '-la', record.remote_dir))}), then "
            f"run {command_text('gpujob', 'pull', *job_file_args(ctx.spec_path))} again",
        )
    return Outcome(
        target.resource.id, f"pulled and verified {len(record.files)} file(s) into {record.local_dir}"
    )


def _said(record: PullRecord, name: str) -> str:
    """The last line checkpoint.verify printed on a file (the full tail is in `gpujob pull`'s output)."""
    f = record.file(name)
    last = (f.verify_output if f is not None else "").strip().splitlines()[-1:]
    return f" (verify said: {last[0][:200]})" if last else ""


async def push(ctx: JobContext, action: Action) -> Outcome:
    resource_id, detail = await push_after_replace(ctx, action, _target(ctx, action))
    return Outcome(resource_id, detail)


async def launch(ctx: JobContext, action: Action) -> Outcome:
    from gpujob.preflight.hook import before_launch

    await before_launch(ctx, action, recreate=create_machine)  # a bad GPU host never trains
    target = _target(ctx, action)
    entries = ctx.journal.entries()
    same_file = bool(ctx.digest) and launched_digest(entries) == ctx.digest
    try:
        detail = await runtime.launch(target, ctx.ssh, ctx.clock, ctx.env, ctx.note, keep_ended=same_file)
    except runtime.RunEnded as ended:
        ctx.machine = target.resource
        return await _ended_on_its_own(ctx, action, ended)
    ctx.machine = target.resource
    if detail.startswith("run launched"):
        note_run(ctx.state_dir, ctx.spec, target.resource, ctx.clock.now())
    return Outcome(target.resource.id, detail)


async def relaunch(ctx: JobContext, action: Action) -> Outcome:
    """The run alive was launched differently from the job file (or a relaunch was asked for): quiesce
    it (its SIGTERM save), pull once more when checkpoint.pull is continuous, then launch it again; the
    command resumes from its newest checkpoint."""
    machine = _need_machine(ctx, action)
    await guard.require_owned(ctx, machine, action, "relaunch the run on")
    target = _target(ctx, action)
    pulled = ""
    async with runtime.open_remote(target, ctx.ssh, ctx.clock, ctx.note) as remote:
        ctx.machine = target.resource
        stopped = await quiesce.quiesce(ctx, action, remote, target.resource, strict=True)
        ck = ctx.spec.checkpoint
        if ck is not None and ck.pull == "continuous":
            record = await runtime.pull_over(remote, target, ctx.ssh, ctx.clock, ctx.note)
            pulled = f"; final pull: {len(record.files)} file(s) into {record.local_dir}"
    launched = await launch(ctx, action)
    return Outcome(launched.resource_id, f"{stopped}{pulled}; {launched.detail}")


async def update_queue_run(ctx: JobContext, action: Action) -> Outcome:
    """A sweep queue's run change, applied from its next cell (docs/sweeps.md): the new version of its
    files is placed beside the old one (nothing a live queue reads is rewritten) and the queue's pointer
    names it; the wrapper execs it before its next cell, the cell in flight runs on. A queue that
    drained meanwhile is launched again (a no-op while it is alive)."""
    from gpujob.sweep.wrapper import place_command

    queue = ctx.extra.get(SWEEP_QUEUE)
    if queue is None:
        raise GpujobError(f"{action.id}: only a sweep queue's run changes in place", hint="plan again")
    machine = _need_machine(ctx, action)
    await guard.require_owned(ctx, machine, action, "update the run on")
    target = _target(ctx, action)
    version = queue.placement.version
    async with runtime.open_remote(target, ctx.ssh, ctx.clock, ctx.note) as remote:
        ctx.machine = target.resource
        await remote.run(
            place_command(queue.placement, queue.n, every=queue.shared),
            what=f"placing version {version} of the sweep files of {ctx.spec.name}",
            left="the new version may be placed in part; the queue runs on with its own until it is complete",
        )
    note_run(ctx.state_dir, ctx.spec, target.resource, ctx.clock.now())
    launched = await runtime.launch(target, ctx.ssh, ctx.clock, ctx.env, ctx.note)
    if launched.startswith("run launched"):
        return Outcome(target.resource.id, f"placed version {version}; the queue had drained: {launched}")
    return Outcome(
        target.resource.id, f"placed version {version}: queue q{queue.n} runs it from its next cell"
    )


async def _ended_on_its_own(ctx: JobContext, action: Action, ended: runtime.RunEnded) -> Outcome:
    """The machine was started (by a watch that took the stop for a preemption, or an apply) and the
    run it holds had ended and stopped it itself: it is marked finished for this job file (so neither
    starts it again) and stopped again."""
    machine = _need_machine(ctx, action)
    ctx.journal.append(
        "done", ctx.clock.now(), action_id=f"{ctx.spec.name}.{FINISHED}",
        detail=f"exit {ended.run_exit}; stopped itself ({ended.why}); spec {ctx.digest}",
    )  # fmt: skip
    await guard.require_owned(ctx, machine, action, "stop")
    ctx.machine, _ = await quiesce.stop_for(ctx, machine)
    return Outcome(
        machine.id,
        f"{NOT_RELAUNCHED} the run ended (exit {ended.run_exit}) and {machine.name} had stopped itself "
        f"({ended.why}); stopped it again",
    )
