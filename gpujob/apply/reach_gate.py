"""The teardown gate's side of reaching a machine, as hooks teardown.py and steps.pull call: the
evidence that a stopped machine holds nothing (no start for a look), stopping again a machine a failed
look started, and the refusal (or the .unverified override) when a machine cannot be reached."""

from __future__ import annotations

from gpujob.apply import unreachable
from gpujob.apply.context import JobContext
from gpujob.apply.runtime.remote import MachineNotRunning, Unreachable
from gpujob.errors import GateError, GpujobError
from gpujob.live import LiveResource
from gpujob.plan.model import Action, ActionKind
from gpujob.plan.records import load_pull_record


async def stop_again(ctx: JobContext, machine: LiveResource, own: bool) -> None:
    try:
        current = await ctx.provider.get(machine.kind, machine.id) or machine
        if current.status != "stopped":
            from gpujob.apply.quiesce import stop_for

            current, _ = await stop_for(
                ctx, current, fresh="started for the gate's look only: nothing of the job was launched on it"
            )
        ctx.note(
            f"stopped {machine.name} again: the gate started it to look at its disk, and the look failed"
        )
        if own:
            ctx.machine = current
    except GpujobError as exc:
        ctx.note(
            f"{machine.name} was started for the gate's look and could not be stopped again "
            f"({str(exc).splitlines()[0]}): stop it in the console, it bills while it runs"
        )


UNREACHED = "unreached"  # ctx.extra: the machine this command already failed to reach (pull step)


def unreached(ctx: JobContext, action: Action, machine: LiveResource, exc: Exception) -> str | None:
    """A step before the gate (the pull) could not reach `machine`: None when `exc` is not that;
    else the outcome when the teardown it guards was approved with the .unverified override (the gate
    then does not wait for the machine again); else the refusal with the risk is raised."""
    if not isinstance(exc, Unreachable | MachineNotRunning):
        return None
    gated = next(
        (a for a in ctx.todo if a.kind in (ActionKind.TERMINATE, ActionKind.REPLACE) and a.gated), action
    )
    if not unreachable.approved_unverified(gated.id, ctx.approvals):
        raise refusal(ctx, gated, machine, exc) from exc
    ctx.extra[UNREACHED] = machine.id
    ctx.note(
        f"DATA LOSS approved: {machine.name} could not be reached ({str(exc).splitlines()[0]}); nothing was "
        f"pulled, and {gated.id} goes ahead unverified, as approved with {unreachable.override_id(gated.id)}"
    )
    return f"NOT PULLED: {machine.name} was unreachable; {unreachable.override_id(gated.id)} was approved"


def refusal(ctx: JobContext, action: Action, machine: LiveResource, exc: Exception) -> GateError:
    from gpujob.plan.outputs_record import load_outputs_record

    if ctx.spec.platform == "paperspace":
        erases = f"{machine.name}'s disk (all of it)"
    elif machine.network_volume_id is not None:
        erases = f"{machine.name}'s container disk (network volume {machine.network_volume_id} stays)"
    else:
        erases = f"{machine.name}'s container disk and volume disk"
    said = unreachable.risk(
        erases=erases,
        pull_record=load_pull_record(ctx.state_dir, ctx.spec.name),
        outputs_record=load_outputs_record(ctx.state_dir, ctx.spec.name),
        now=ctx.clock.now(),
    )
    return GateError(
        f"{action.id}: refused: cannot reach {machine.name} ({machine.id}) to check its disks "
        f"({str(exc).splitlines()[0]}); {said}",
        hint=unreachable.hint(action.id),
    )


def nothing_to_protect_here(ctx: JobContext, machine: LiveResource) -> str | None:
    from gpujob.apply.reach_evidence import nothing_to_protect
    from gpujob.plan.outputs_record import load_outputs_record

    return nothing_to_protect(
        ctx.spec,
        machine.id,
        ctx.journal.entries(),
        load_pull_record(ctx.state_dir, ctx.spec.name),
        load_outputs_record(ctx.state_dir, ctx.spec.name),
    )
