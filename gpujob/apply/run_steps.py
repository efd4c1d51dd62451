"""The run's steps: pull and push checkpoints, launch and relaunch the run, and change a sweep queue's run in
place. Each re-reads what it acts on and is safe to run twice.
"""

from __future__ import annotations

from gpujob.apply import ownership as guard
from gpujob.apply import quiesce, reach_gate, runtime
from gpujob.apply.carry import push_after_replace
from gpujob.apply.context import SWEEP_QUEUE, JobContext
from gpujob.apply.machine_steps import create_machine, need_machine
from gpujob.apply.reconcile import FINISHED, NOT_RELAUNCHED, launched_digest
from gpujob.apply.stepbase import Outcome
from gpujob.apply.teardown_look import start_for_disk
from gpujob.errors import GpujobError, command_text, job_file_args, ssh_words
from gpujob.plan import capability
from gpujob.plan.model import Action
from gpujob.plan.records import PullRecord, note_run


def _target(ctx: JobContext, action: Action) -> runtime.Target:
    return runtime.Target(
        spec=ctx.spec,
        spec_path=ctx.spec_path,
        provider=ctx.provider,
        resource=need_machine(ctx, action),
        state_dir=ctx.state_dir,
        moved=ctx.moved,
    )


async def pull(ctx: JobContext, action: Action) -> Outcome:
    machine = need_machine(ctx, action)
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
    ctx.machine = await start_for_disk(ctx, machine, "to pull its checkpoints")
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
    for cap in capability.of(ctx):  # e.g. a bad GPU host never trains (gpujob.preflight)
        await cap.before_launch(ctx, action, create_machine)
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
    machine = need_machine(ctx, action)
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
    from gpujob.layout.wrapper import place_command

    queue = ctx.extra.get(SWEEP_QUEUE)
    if queue is None:
        raise GpujobError(f"{action.id}: only a sweep queue's run changes in place", hint="plan again")
    machine = need_machine(ctx, action)
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
    machine = need_machine(ctx, action)
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
