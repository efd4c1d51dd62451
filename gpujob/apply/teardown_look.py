"""What the teardown gate does on the disk it reaches through a machine that mounts it (a stopped one is
started first): quiesce the run, list every checkpoint directory (the job file's, the last pull's, the last
launched run's), check each is empty or pullable, pull it and list it again until every file has a
verified local copy.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpujob.apply import gate, unreachable
from gpujob.apply import reach_gate as reach
from gpujob.apply.context import JobContext
from gpujob.apply.quiesce import quiesce, target_of
from gpujob.apply.runtime.pulling import pull_dir, pull_over
from gpujob.apply.runtime.remote import MachineNotRunning, Unreachable, open_remote
from gpujob.errors import GateError
from gpujob.invariant import present
from gpujob.live import LiveResource
from gpujob.plan import capability
from gpujob.plan.checkpoint_actions import human_bytes
from gpujob.plan.model import Action
from gpujob.plan.records import load_pull_record
from gpujob.providers.base import ZeroGpuError
from gpujob.quote import remote_path


@dataclass
class Evidence:
    """A volume's checkpoint dir as listed after the run stopped, through its last pod (terminated by
    this apply right after), with every file pulled and verified into local_dir."""

    listing: Any  # gpujob.ssh.pull.RemoteListing
    local_dir: Path
    through: str


def on_mount(listing: Any, machine: LiveResource | None, ctx: JobContext) -> bool:
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


async def inspect_disk(
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
    cannot reach is refused with the risk, unless the .unverified override applies (gpujob.apply.unreachable)."""
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
    target = target_of(ctx, machine, moved=moved)
    through = through or f"{machine.name} ({machine.id})"
    async with open_remote(target, ctx.ssh, ctx.clock, ctx.note) as remote:
        reached.append(True)
        if own:
            ctx.machine = target.resource
        stopped = await quiesce(ctx, action, remote, machine, strict=True)
        listings = await _listings(ctx, remote)
        at_risk = {d: lst for d, lst in listings.items() if (lst.files or lst.unpullable) and erased(lst)}
        kept = {d: lst for d, lst in listings.items() if lst.files and d not in at_risk}
        at_risk = at_risk or _every_writer(ctx, listings, erased)
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
    from gpujob.apply.runtime.gang import writers_problem

    gang = writers_problem(ctx.spec, record, final.files)  # a multi-node job: the newest complete step
    problems += [gang] if gang else []
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
    out = ""
    for cap in capability.of(ctx):  # e.g. the job's outputs pulled and verified first (gpujob.outputs.gate)
        said = await cap.before_erase(ctx, action, remote, machine, erased)
        out += f"; {said}" if said else ""
    return out


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


def _every_writer(ctx: JobContext, listings: dict[str, Any], erased: Callable[[Any], bool]) -> dict[str, Any]:
    """Under checkpoint.writers: all, node 0's checkpoint dir as at risk whenever the teardown erases
    it, even empty: node 0's listing says nothing of the other writers' disks, which the teardown erases
    as well, so the final pull (every writer's files) and the writers' check must run all the same."""
    from gpujob.jobfile.nodes import node_count

    ck = ctx.spec.checkpoint
    if ck is None or ck.writers != "all" or node_count(ctx.spec) == 1:
        return {}
    ck_dir = remote_path(ck.dir)
    lst = listings.get(ck_dir)
    return {ck_dir: lst} if lst is not None and erased(lst) else {}


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
