"""The teardown gate at run time, right before a destructive call. In this order:

  1. approval: the action's exact id was approved, or nothing happens (not even stopping the run);
  2. a look at the disk, through the machine that mounts it (a stopped machine is started; a network
     volume no pod mounts gets a temporary pod, the cheapest that can mount it in its data center,
     terminated after): the run is quiesced first, the way a platform stop would do it (SIGTERM to
     every process of the run, up to gate.quiesce_grace_s for its final save, SIGKILL after, and all of
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
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpujob import gpus, naming
from gpujob.apply import gate
from gpujob.apply.capacity import create_with_fallback, launch_request
from gpujob.apply.context import SWEEP_QUEUE, JobContext
from gpujob.apply.ownership import volume_of
from gpujob.apply.quiesce import quiesce
from gpujob.apply.records import current_record, load_pull_record
from gpujob.apply.runtime.pulling import pull_dir, pull_over
from gpujob.apply.runtime.remote import MachineNotRunning, Target, Unreachable, open_remote
from gpujob.errors import GateError, GpujobError, ProviderError
from gpujob.invariant import present
from gpujob.live import LiveResource
from gpujob.plan.checkpoint_actions import human_bytes
from gpujob.plan.model import Action, ActionKind
from gpujob.providers.base import ZeroGpuError
from gpujob.reach import gate as reach
from gpujob.reach import unreachable
from gpujob.ssh.quote import remote_path

DETACH_WAIT_S = 300.0
POLL_S = 2.0


@dataclass
class Evidence:
    """A volume's checkpoint dir as listed after the run stopped, through its last pod (terminated by
    this apply right after), with every file pulled and verified into local_dir."""

    listing: Any  # gpujob.ssh.pull.RemoteListing
    local_dir: Path
    through: str


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
    from gpujob.sweep.storage import shared

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
        return volume_dies or not (vol_id is not None and _on_mount(listing, ctx.machine, ctx))

    return await _inspect(ctx, action, machine, erased, evidence_for=vol_id if volume_dies else None)


# --- delete volume -----------------------------------------------------------------------------------


async def _volume_gate(ctx: JobContext, action: Action) -> str:
    vol = await volume_of(ctx, action)
    if vol is None:
        return ""
    from gpujob.sweep.storage import shared

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
            return _on_mount(listing, ctx.machine, ctx)

        return await _inspect(ctx, action, machine, on_volume, evidence_for=None)
    return await _through_helper(ctx, action, vol)


async def _shared_volume_gate(ctx: JobContext, action: Action, vol: LiveResource) -> str:
    """A sweep's shared network volume, deleted by queue 1: once no queue pod mounts it (each queue's
    terminate has its own gate), a temporary pod looks at it for every cell of every queue."""
    import dataclasses

    from gpujob.sweep.storage import volume_spec

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
    said = await _through_helper(every, action, vol)
    return f"every cell of the sweep's {queue.queues} queues: {said}"


async def _through_helper(ctx: JobContext, action: Action, vol: LiveResource) -> str:
    """No pod mounts the volume: bring up the cheapest one that can, look and pull, terminate it."""
    if ctx.spec.platform != "runpod":
        raise GateError(f"{action.id}: {vol.name} cannot be mounted by gpujob to check it")
    ctx.note(
        f"no pod mounts {vol.name}: starting a temporary pod in {vol.region} to look at it (and pull its "
        "checkpoints) before deleting it"
    )
    try:
        helper = await _create_helper(ctx, vol)
    except GpujobError as exc:
        raise GateError(
            f"{action.id}: no pod mounts {vol.name}, and a temporary pod to check it could not be created: "
            f"{str(exc).splitlines()[0]}",
            hint=(
                "set state: running in the job file and `gpujob apply` (a pod mounts the volume again), "
                f"then `{ctx.rerun} {gate.approve_flags(a.id for a in ctx.todo if a.gated)}`"
            ),
        ) from exc
    try:
        return await _inspect(
            ctx,
            action,
            helper,
            lambda listing: _on_mount(listing, helper, ctx),
            evidence_for=None,
            through=f"temporary pod {helper.name}",
        )
    finally:
        try:
            await ctx.provider.terminate(helper)
            ctx.note(f"terminated the temporary pod {helper.name} ({helper.id})")
        except ProviderError as exc:
            ctx.note(
                f"the temporary pod {helper.name} ({helper.id}) could not be terminated and may bill: "
                f"{str(exc).splitlines()[0]}; terminate it in the console"
            )


async def _create_helper(ctx: JobContext, vol: LiveResource) -> LiveResource:
    from gpujob.profile import load_profile

    profile = load_profile(ctx.spec.platform)
    region = vol.region or (ctx.spec.machine.regions[0] if ctx.spec.machine.regions else None)
    any_gpu = ctx.spec.machine.model_copy(
        update={
            "gpu": [g.alias for g in profile.gpus],
            "gpu_count": 1,
            "regions": [region] if region else [],
            "spot": False,
            "max_price_per_hour": None,
        }
    )
    try:
        quotes = await ctx.provider.quotes()
    except ProviderError:
        quotes = []
    cands = sorted(gpus.candidates(profile, any_gpu, quotes), key=lambda c: c.price_hour)
    _, public_key = ctx.ssh.ensure_project_key(ctx.state_dir)
    base = launch_request(ctx, public_key).model_copy(
        update={
            "name": naming.helper_name(ctx.spec.name, ctx.project),
            "spot": False,
            "volume_gb": None,
            "network_volume_id": vol.id,
            "public_ip": None,
        }
    )
    return await create_with_fallback(
        ctx.provider, base, cands[:5], clock=ctx.clock, note=ctx.note, max_wait_s=600.0
    )


# --- the look, the final pull, the relist -------------------------------------------------------------


def _on_mount(listing: Any, machine: LiveResource | None, ctx: JobContext) -> bool:
    """The listed dir really lives on the machine's network volume mount (not a symlink elsewhere)."""
    if machine is None or machine.network_volume_id is None:
        return False
    mount = remote_path(machine.mount_path or ctx.spec.storage.mount)
    real = listing.real_dir or listing.dir
    under = real == mount or real.startswith(mount.rstrip("/") + "/")
    return bool(under and listing.mount == mount)


async def start_for_disk(ctx: JobContext, machine: LiveResource, why: str) -> LiveResource:
    """A stopped machine's disks are reachable only while it runs: start it (RP1: a zero-GPU pod
    still runs and can hand over its disks, which is all a pull or a look needs)."""
    ctx.note(f"starting {machine.name} {why}")
    try:
        started = await ctx.provider.start(machine)
    except ZeroGpuError:
        current = await ctx.provider.get(machine.kind, machine.id)
        if current is None or current.status != "running" or ctx.provider.ssh_endpoint(current) is None:
            raise
        ctx.note(f"{machine.name} came back with zero GPUs (RP1): enough to copy its checkpoints")
        started = current
    ctx.moved = True
    return started


def _target(ctx: JobContext, machine: LiveResource, *, moved: bool) -> Target:
    return Target(
        spec=ctx.spec,
        spec_path=ctx.spec_path,
        provider=ctx.provider,
        resource=machine,
        state_dir=ctx.state_dir,
        moved=moved,
    )


async def _inspect(
    ctx: JobContext,
    action: Action,
    machine: LiveResource,
    erased: Callable[[Any], bool],
    *,
    evidence_for: str | None,
    through: str | None = None,
) -> str:
    """Steps 2-5 of the module docstring through `machine`. A machine started here for the look is
    stopped again when the look fails (a failed destroy never bills more than before it ran); one it
    cannot reach is refused with the risk, unless the .unverified override applies (gpujob.reach)."""
    own = ctx.machine is not None and ctx.machine.id == machine.id
    moved = ctx.moved if own else True
    started = False
    reached: list[bool] = []
    if ctx.extra.get(reach.UNREACHED) == machine.id and unreachable.approved_unverified(
        action.id, ctx.approvals
    ):
        return f"NOT CHECKED: {machine.name} was unreachable earlier in this command and {unreachable.override_id(action.id)} was approved"
    try:
        if machine.status == "stopped":
            machine = await start_for_disk(ctx, machine, "so the gate can look at its disk")
            started = moved = True
            if own:
                ctx.machine = machine
        return await _look(ctx, action, machine, erased, own, moved, reached, evidence_for, through)
    except Exception as exc:  # whatever failed, a machine started here is stopped again
        lost = not reached and isinstance(exc, Unreachable | MachineNotRunning)
        if lost and unreachable.approved_unverified(action.id, ctx.approvals):
            ctx.note(
                f"DATA LOSS approved: {machine.name} could not be reached ({str(exc).splitlines()[0]}); "
                f"{action.id} goes ahead unverified, as approved with {unreachable.override_id(action.id)}"
            )
            return f"NOT CHECKED: {machine.name} was unreachable and {unreachable.override_id(action.id)} was approved"
        if started:
            await reach.stop_again(ctx, machine, own)
        if lost:
            raise reach.refusal(ctx, action, machine, exc) from exc
        raise


async def _look(
    ctx: JobContext,
    action: Action,
    machine: LiveResource,
    erased: Callable[[Any], bool],
    own: bool,
    moved: bool,
    reached: list[bool],
    evidence_for: str | None,
    through: str | None,
) -> str:
    target = _target(ctx, machine, moved=moved)
    through = through or f"{machine.name} ({machine.id})"
    async with open_remote(target, ctx.ssh, ctx.clock, ctx.note) as remote:
        reached.append(True)
        if own:
            ctx.machine = target.resource
        stopped = await quiesce(ctx, action, remote, machine, strict=True)
        listings = await _listings(ctx, remote)
        at_risk = {d: lst for d, lst in listings.items() if (lst.files or lst.unpullable) and erased(lst)}
        kept = {d: lst for d, lst in listings.items() if lst.files and d not in at_risk}
        record = final = ck_dir = None
        if at_risk:
            ck_dir = _pullable_dir(ctx, action, at_risk, machine, stopped)
            record = await pull_over(remote, target, ctx.ssh, ctx.clock, ctx.note)
            final = await ctx.ssh.list_checkpoints(remote, ck_dir)
        outputs = await _outputs(ctx, action, remote, machine, erased)
    if final is None:
        return _kept_detail(stopped, kept) + outputs
    local_dir = pull_dir(ctx.spec, ctx.spec_path)
    problems = [f"{n!r} (not pullable: {why})" for n, why in sorted(final.unpullable.items())]
    problems += await asyncio.to_thread(gate.unsafe_files, final.files, record, local_dir)
    if problems:
        raise GateError(
            f"{action.id}: {len(problems)} checkpoint file(s) in {ck_dir} on {machine.name} have no verified "
            f"local copy right before the {action.kind.value}: "
            + "; ".join(problems[:5])
            + _stopped_note(stopped, machine),
            hint=f"gpujob pull, then run the command again (inspect the local copies in {local_dir})",
        )
    if evidence_for is not None:
        ctx.evidence[evidence_for] = Evidence(listing=final, local_dir=local_dir, through=through)
    size = final.total_bytes
    return (
        f"{stopped}; final pull: {len(final.files)} checkpoint file(s) ({human_bytes(size)}) in {ck_dir} "
        "listed again and each matched a verified local copy" + outputs
    )


async def _outputs(
    ctx: JobContext, action: Action, remote: Any, machine: LiveResource, erased: Callable[[Any], bool]
) -> str:
    from gpujob.outputs.gate import protect

    said = await protect(
        remote,
        ssh=ctx.ssh,
        spec=ctx.spec,
        spec_path=ctx.spec_path,
        state_dir=ctx.state_dir,
        resource_id=machine.id,
        erased=erased,
        now=ctx.clock.now(),
        note=ctx.note,
        action_id=action.id,
        where=f"{machine.name} ({machine.id})",
    )
    return f"; {said}" if said else ""


async def _listings(ctx: JobContext, remote: Any) -> dict[str, Any]:
    """The candidate checkpoint dirs, each listed: the job file's, the last pull's, the last run's."""
    dirs: list[str] = []
    if ctx.spec.checkpoint is not None:
        dirs.append(ctx.spec.checkpoint.dir)
    record = load_pull_record(ctx.state_dir, ctx.spec.name)
    if record is not None and record.remote_dir:
        dirs.append(record.remote_dir)
    if ctx.spec.run is not None or ctx.spec.checkpoint is not None or record is not None:
        marker = await ctx.ssh.recorded_checkpoint_dir(remote, ctx.spec)
        if marker:
            dirs.append(marker)
    out: dict[str, Any] = {}
    for d in dirs:
        try:
            clean = remote_path(d)
        except ValueError:
            continue
        if clean not in out:
            out[clean] = await ctx.ssh.list_checkpoints(remote, clean, hashes=False)  # hashed by the pull
    return out


def _pullable_dir(
    ctx: JobContext, action: Action, at_risk: dict[str, Any], machine: LiveResource, stopped: str
) -> str:
    """The one dir the final pull covers; refuse when files sit where nothing can pull them."""
    ck = ctx.spec.checkpoint
    ck_dir = remote_path(ck.dir) if ck is not None else None
    where = f"{machine.name} ({machine.id})"
    tail = _stopped_note(stopped, machine)
    stray = {d: lst for d, lst in at_risk.items() if d != ck_dir}
    if stray:
        d, lst = next(iter(stray.items()))
        n = len(lst.files) + len(lst.unpullable)
        if ck is None:
            why = "the job file has no checkpoint block, so nothing pulls them"
            fix = (
                f"put the checkpoint block back (dir: {d}, pull_to, verify) in {ctx.spec_path.name} and run "
                f"the command again; or, if they are not needed, delete them first: gpujob ssh -- rm -r {shlex.quote(d)}"
            )
        else:
            why = f"checkpoint.dir is now {ck.dir}, so nothing pulls them"
            fix = (
                f"copy what you need (gpujob ssh -- ls -la {shlex.quote(d)}), or delete them: "
                f"gpujob ssh -- rm -r {shlex.quote(d)}; then run the command again"
            )
        raise GateError(f"{action.id}: {n} file(s) in {d} on {where} would be erased: {why}{tail}", hint=fix)
    ck, ck_dir = present(ck, "the checkpoint block"), present(ck_dir, "checkpoint.dir")
    lst = at_risk[ck_dir]
    if ck.verify is None:
        raise GateError(
            f"{action.id}: would erase {len(lst.files)} checkpoint file(s) in {ck.dir} on {where}, and "
            f"checkpoint.verify is not set, so no pulled copy can be verified{tail}",
            hint="set checkpoint.verify in the job file (e.g. python verify_ckpt.py {file}), then run the command again",
        )
    if lst.unpullable:
        names = "; ".join(f"{n!r} ({why})" for n, why in sorted(lst.unpullable.items())[:5])
        raise GateError(
            f"{action.id}: {len(lst.unpullable)} entr(y/ies) in {ck.dir} on {where} are not pullable and "
            f"would be erased: {names}{tail}",
            hint=f"rename or remove them on the machine (gpujob ssh -- ls -la {shlex.quote(ck.dir)}), then run the command again",
        )
    return ck_dir


def _stopped_note(stopped: str, machine: LiveResource) -> str:
    if stopped.startswith("no run was alive") and "workload process" not in stopped:
        return ""
    return f" ({stopped} for this check; `gpujob apply` relaunches it on {machine.name} if you keep the job)"


def _kept_detail(stopped: str, kept: dict[str, Any]) -> str:
    if not kept:
        return f"{stopped}; no checkpoint files on the disks it erases"
    d, lst = next(iter(kept.items()))
    return f"{stopped}; {len(lst.files)} checkpoint file(s) in {d} stay on the network volume (listed on its mount {lst.mount})"
