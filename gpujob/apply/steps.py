"""Which step runs an action: the teardown gate first for a gated one, then one function per action kind
(machine_steps, change_steps, volume_steps, run_steps). Each re-reads what it acts on and is safe to run
twice."""

from __future__ import annotations

from gpujob.apply import ownership as guard
from gpujob.apply import teardown
from gpujob.apply.change_steps import static_ip, update
from gpujob.apply.context import JobContext
from gpujob.apply.machine_steps import create_machine, release_ip, start, stop, terminate
from gpujob.apply.run_steps import launch, pull, push, relaunch
from gpujob.apply.stepbase import Outcome
from gpujob.apply.volume_steps import create_volume, delete_snapshot, delete_volume
from gpujob.plan.model import Action, ActionKind


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
