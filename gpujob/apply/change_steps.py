"""The in-place changes to a live machine: update (the disk, the auto-shutdown timer, a sweep queue's run) and
the static IP. A change that restarts the machine relaunches the run from its latest checkpoint.
"""

from __future__ import annotations

from gpujob.apply import ownership as guard
from gpujob.apply import quiesce
from gpujob.apply.context import JobContext
from gpujob.apply.journal import crashpoint
from gpujob.apply.machine_steps import need_machine
from gpujob.apply.run_steps import launch, update_queue_run
from gpujob.apply.stepbase import Outcome
from gpujob.errors import GpujobError
from gpujob.plan.model import Action
from gpujob.plan.records import note_launch


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
    machine = need_machine(ctx, action)
    await guard.require_owned(ctx, machine, action, "grow the disk of")
    was_running = machine.status == "running"
    # Either way the run ends (a pod's container restarts): it gets its SIGTERM save first.
    saved = ""
    if ctx.spec.platform == "paperspace" and was_running:
        ctx.note(
            f"stopping {machine.name} to grow its disk (Paperspace resizes a machine only while it is off)"
        )
        machine, saved = await quiesce.stop_for(ctx, machine, before="disk grow", lasting=False)
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
    machine = need_machine(ctx, action)
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


async def static_ip(ctx: JobContext, action: Action) -> Outcome:
    """Claim a static IP in the machine's region and assign it. The claim is journalled at once, so a
    re-run after a kill between claim and assign adopts that IP instead of claiming (and billing) twice."""
    machine = need_machine(ctx, action)
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
        machine, _saved = await quiesce.stop_for(ctx, machine, before="static IP switch", lasting=False)
    await assign(ip.id, machine.id)
    ctx.machine = await ctx.provider.get(machine.kind, machine.id) or machine
    detail = f"claimed static IP {ip.id} and assigned it to {machine.name}"
    if was_running:
        ctx.machine = await ctx.provider.start(ctx.machine)
        ctx.moved = True
        if ctx.spec.run is not None:
            detail += "; " + (await launch(ctx, action)).detail
    return Outcome(ip.id, detail)
