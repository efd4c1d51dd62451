"""The machine's steps: create it (with capacity fallback), start, stop, terminate, update in place (grow
the disk, the auto-shutdown timer) and its static IP. Each re-reads what it acts on and is safe to run twice.
"""

from __future__ import annotations

from gpujob.apply import ownership as guard
from gpujob.apply import quiesce
from gpujob.apply.capacity import candidates, create_with_fallback, launch_request, within_ceiling
from gpujob.apply.context import JobContext
from gpujob.apply.reconcile import HOST_LOST_GPU
from gpujob.apply.stepbase import Outcome, look_harder, machine_kind, teardown_verb
from gpujob.apply.volume_steps import await_shared_volume, by_id, drop_race_volume
from gpujob.errors import GpujobError
from gpujob.live import LiveResource
from gpujob.plan.model import Action
from gpujob.plan.records import note_launch
from gpujob.providers.base import ZeroGpuError

CAPACITY_WAIT_S = 1800.0


async def create_machine(ctx: JobContext, action: Action) -> Outcome:
    await look_harder(ctx, action)
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
        await await_shared_volume(ctx)
    if ctx.spec.storage.network_volume is not None and ctx.volume is None:
        raise GpujobError(f"{action.id}: network volume {ctx.volume_name} does not exist yet")
    try:
        await guard.refuse_running_elsewhere(ctx, action)
    except GpujobError as exc:  # another checkout's machine came up after this apply made the volume
        raise await drop_race_volume(ctx, exc) from None
    _, public_key = ctx.ssh.ensure_project_key(ctx.state_dir)
    pinned = ctx.volume.region if ctx.volume is not None else None  # a network volume locks the data center
    cands = within_ceiling(ctx, candidates(ctx.spec, region=pinned))  # never over the plan's cap
    machine = await create_with_fallback(
        ctx.provider,
        launch_request(ctx, public_key),
        cands,
        clock=ctx.clock,
        note=ctx.note,
        max_wait_s=CAPACITY_WAIT_S,
        wait_s=wait_up_to(ctx.spec),
    )
    ctx.machine = machine
    ctx.moved = True
    try:
        await guard.settle_create_race(ctx, action, machine)
    except GpujobError as exc:
        raise await drop_race_volume(ctx, exc) from None
    note_launch(ctx.state_dir, ctx.spec, machine)
    where = f" {machine.gpu_id or ''} in {machine.region}" if machine.region else ""
    return Outcome(machine.id, f"created {machine.name} ({machine.id}){where}")


def wait_up_to(spec: object) -> float | None:
    """machine.wait_up_to in seconds when machine.when_unavailable is `wait`, else None."""
    m = getattr(spec, "machine", None)
    if m is None or getattr(m, "when_unavailable", "fail") != "wait":
        return None
    return float(m.wait_for.total_seconds())


def need_machine(ctx: JobContext, action: Action) -> LiveResource:
    if ctx.machine is None:
        raise GpujobError(f"{action.id}: {ctx.machine_name} does not exist", hint="plan again")
    return ctx.machine


async def start(ctx: JobContext, action: Action) -> Outcome:
    machine = need_machine(ctx, action)
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
            "done", ctx.clock.now(), action_id=f"{ctx.spec.name}.{machine_kind(ctx)}.{HOST_LOST_GPU}",
            kind="start", resource_name=machine.name, resource_id=machine.id, detail=str(exc),
        )  # fmt: skip
        raise
    ctx.moved = True
    return Outcome(machine.id, f"started {machine.name}")


async def stop(ctx: JobContext, action: Action) -> Outcome:
    machine = need_machine(ctx, action)
    if machine.status == "stopped":
        return Outcome(machine.id, "already stopped")
    await guard.require_owned(ctx, machine, action, "stop")
    ctx.machine, saved = await quiesce.stop_for(ctx, machine)
    return Outcome(machine.id, f"stopped {machine.name}" + (f" ({saved})" if saved else ""))


async def terminate(ctx: JobContext, action: Action) -> Outcome:
    machine = ctx.machine
    if machine is None:
        return Outcome(action.resource_id, "already gone")
    await guard.require_owned(ctx, machine, action, teardown_verb(ctx))
    await ctx.provider.terminate(machine)
    ctx.machine = None
    return Outcome(machine.id, f"terminated {machine.name}")


async def release_ip(ctx: JobContext, action: Action) -> Outcome:
    ip = await by_id(ctx, action)
    if ip is None:
        return Outcome(action.resource_id, "already released")
    await guard.require_owned(ctx, ip, action, "release")
    await ctx.provider.release_ip(ip)
    return Outcome(ip.id, f"released {ip.public_ip or ip.name}")
