"""What apply calls before every launch: preflight the machine, replace a fresh bad one, else stop it.

A fresh machine is one this very apply created (its journal says so) and nothing was synced to yet: it
holds nothing, so terminating it loses nothing, and the next create lands on another host (or the next
candidate GPU). At most MAX_REPLACEMENTS times; after that, or for a machine that already held the run,
it is stopped (disks kept, the GPU no longer billed) and the step fails naming the finding.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from gpujob.errors import GpujobError
from gpujob.invariant import present
from gpujob.preflight.checks import Verdict, assess
from gpujob.preflight.probe import parse

if TYPE_CHECKING:
    from gpujob.apply.context import JobContext
    from gpujob.plan.model import Action

MAX_REPLACEMENTS = 2
STEP = "preflight"  # the journal's action id suffix for what the preflight did


async def before_launch(
    ctx: JobContext, action: Action, *, recreate: Callable[[JobContext, Action], Awaitable[Any]]
) -> None:
    """Return when the job's machine is fit to train on (or its run is already going); raise otherwise.
    `recreate` creates the job's machine anew (the apply step that made it)."""
    read = getattr(ctx.ssh, "read_gpu_host", None)
    if read is None or ctx.spec.run is None or ctx.machine is None:
        return
    left: list[str] = []
    while True:
        machine = ctx.machine
        machine = present(machine, "the machine preflight reads")
        verdict = await _read(ctx, read)
        if verdict is None:
            return  # the run is alive: nothing is launched, nothing to preflight
        for note in verdict.notes:
            ctx.note(f"preflight: {note}")
        why = "; ".join(f"{p.message} ({p.code})" for p in verdict.problems)
        _journal(ctx, "preflight", machine.id, f"{verdict.summary}: " + (why or "ok"))
        if verdict.ok:
            after = f" (left {', '.join(left)})" if left else ""
            ctx.note(f"preflight on {machine.name} ({machine.id}): {verdict.summary}: fit to train{after}")
            return
        kind = machine.kind
        if _fresh(ctx, machine.id) and len(left) < MAX_REPLACEMENTS:
            from gpujob.apply import ownership

            ctx.note(
                f"preflight failed on {kind} {machine.id}, fresh and holding nothing: {why}; replacing it"
            )
            await ownership.require_owned(ctx, machine, action, "terminate")
            await ctx.provider.terminate(machine)
            _journal(ctx, "terminate", machine.id, f"preflight failed: {why}")
            left.append(f"{machine.id}: {verdict.problems[0].message}")
            ctx.machine = None
            outcome = await recreate(ctx, action)
            _journal(ctx, "create", getattr(outcome, "resource_id", None), "created (preflight replacement)")
            continue
        await _stop(ctx, action)
        _mark_faulty(ctx, machine, why)
        tried = f" after replacing {len(left)} ({'; '.join(left)})" if left else ""
        raise GpujobError(
            f"{ctx.spec.name}: preflight failed on {kind} {machine.name} ({machine.id}): {why}{tried}. "
            f"Nothing was started on it; it is stopped (its disks are kept, the GPU no longer bills)",
            hint="a faulty or throttled GPU is the host's, not your code's: `gpujob plan` now proposes to "
            "replace it on a fresh host (the gate pulls its checkpoints first); apply that",
        )


async def _read(ctx: JobContext, read: Callable[[Any], Awaitable[str]]) -> Verdict | None:
    from gpujob.apply import runtime

    machine = present(ctx.machine, "the machine preflight reads")
    target = runtime.Target(
        spec=ctx.spec, spec_path=ctx.spec_path, provider=ctx.provider, resource=machine,
        state_dir=ctx.state_dir, moved=ctx.moved,
    )  # fmt: skip
    async with runtime.open_remote(target, ctx.ssh, ctx.clock, ctx.note) as remote:
        status = await ctx.ssh.run_status(remote, ctx.spec)
        if getattr(status, "alive", False) is True:
            return None
        text = await read(remote)
    ctx.machine = target.resource
    return assess(parse(text), ctx.machine.gpu_id, ctx.spec.machine.gpu_count)


def _fresh(ctx: JobContext, machine_id: str) -> bool:
    """Created by this apply (not adopted, not started from stopped): nothing was ever synced to it."""
    return any(
        e.run == ctx.journal.run
        and e.phase == "done"
        and e.kind in ("create", "replace")
        and e.resource_id == machine_id
        and e.detail.startswith("created")
        for e in ctx.journal.entries()
    )


async def _stop(ctx: JobContext, action: Action) -> None:
    from gpujob.apply import ownership, quiesce

    machine = ctx.machine
    if machine is None or machine.status == "stopped":
        return
    await ownership.require_owned(ctx, machine, action, "stop")
    # Nothing of the run was launched, but an adopted machine may still hold a helper of an earlier run.
    ctx.machine, _ = await quiesce.stop_for(ctx, machine, before="preflight's stop")
    _journal(ctx, "stop", machine.id, "preflight failed: stopped")


def _mark_faulty(ctx: JobContext, machine: Any, why: str) -> None:
    """The mark the next plan reads (gpujob.apply.reconcile.host_faulty): replace, do not start again."""
    from gpujob.apply.reconcile import HOST_FAULTY

    ctx.journal.append(
        "done", ctx.clock.now(), action_id=f"{ctx.spec.name}.{machine.kind}.{HOST_FAULTY}", kind="stop",
        resource_name=machine.name, resource_id=machine.id, detail=why,
    )  # fmt: skip


def _journal(ctx: JobContext, kind: str, resource_id: str | None, detail: str) -> None:
    ctx.journal.append(
        "done", ctx.clock.now(), action_id=f"{ctx.spec.name}.{STEP}", kind=kind,
        resource_id=resource_id, detail=detail,
    )  # fmt: skip
