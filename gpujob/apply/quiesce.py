"""Let the run save before gpujob takes its machine away: SIGTERM to every process of the run, up to
gate.quiesce_grace_s for its final save, SIGKILL after, all confirmed gone (gpujob.ssh.launcher).

The teardown gate quiesces before it looks at a disk it may erase (strict: a run it cannot stop blocks
the teardown). Every stop apply makes itself (stop, park, a disk grow or static IP switch that needs
the machine off, a relaunch) quiesces first too, so the run's own SIGTERM save lands: there it is best
effort, since the platform's stop ends the run either way and a machine gpujob cannot reach must still
stop billing."""

from __future__ import annotations

from typing import Any

from gpujob.apply import gate
from gpujob.apply.context import JobContext
from gpujob.apply.runtime.remote import Target, open_remote
from gpujob.errors import GateError, GpujobError
from gpujob.live import LiveResource
from gpujob.plan.model import Action


async def quiesce(
    ctx: JobContext, action: Action, remote: Any, machine: LiveResource, *, strict: bool
) -> str:
    """Stop the run on an open connection; a one-line outcome. `strict`: a run still alive after
    SIGKILL raises GateError (its disk cannot be checked while it writes)."""
    grace = gate.quiesce_grace_s(ctx.spec)
    q = await ctx.ssh.quiesce_run(remote, ctx.spec, grace_s=grace)
    state = getattr(q, "state", "not-running")
    if state == "stuck":
        if strict:
            raise GateError(
                f"{action.id}: the run on {machine.name} is still alive after SIGTERM, {grace:.0f}s and SIGKILL "
                f"(pids {', '.join(map(str, q.pids))}); nothing more is done while it may still write",
                hint="look at it with `gpujob ssh`, then run the command again",
            )
        said = f"the run did not exit after SIGTERM, {grace:.0f}s and SIGKILL (pids {', '.join(map(str, q.pids))})"
    elif state == "not-running":
        said = "no run was alive"
    else:
        how = "exited after SIGTERM" if state == "stopped" else f"was killed after {grace:.0f}s"
        ctx.note(f"stopped the run on {machine.name} before the {action.kind.value}: it {how}")
        said = f"the run {how}"
    return said + await _quiesce_workload(ctx, action, remote, machine, grace, strict=strict)


async def _quiesce_workload(
    ctx: JobContext, action: Action, remote: Any, machine: LiveResource, grace: float, *, strict: bool
) -> str:
    """Whatever of the workload outlived the run's tree (setsid'd, double-forked): gpujob.ssh.workload."""
    try:
        w = await ctx.ssh.quiesce_workload(remote, ctx.spec, grace_s=grace)
    except NotImplementedError:  # a test's SSH layer without it
        return ""
    if w.state == "stuck":
        names = ", ".join(f"{p.name} ({p.pid})" for p in w.left[:6])
        if strict:
            raise GateError(
                f"{action.id}: workload process(es) on {machine.name} still running after SIGTERM, {grace:.0f}s "
                f"and SIGKILL: {names}; its disk cannot be checked while they may write",
                hint="look at them with `gpujob ssh -- ps -ef`, then run the command again",
            )
        return f"; workload process(es) still running after SIGKILL: {names}"
    if w.state == "none":
        return ""
    ctx.note(f"before the {action.kind.value} on {machine.name}: {w.describe()}")
    return f"; {w.describe()}"


async def before_stop(ctx: JobContext, action: Action, machine: LiveResource) -> str:
    """Before a stop gpujob makes of a running machine with a run: quiesce it (best effort). Returns
    what happened to the run, for the step's outcome ("" when there was nothing to do)."""
    if ctx.spec.run is None or machine.status != "running":
        return ""
    target = Target(
        spec=ctx.spec,
        spec_path=ctx.spec_path,
        provider=ctx.provider,
        resource=machine,
        state_dir=ctx.state_dir,
        moved=ctx.moved,
    )
    try:
        async with open_remote(target, ctx.ssh, ctx.clock, ctx.note) as remote:
            ctx.machine = target.resource
            return await quiesce(ctx, action, remote, machine, strict=False)
    except GpujobError as exc:
        first = str(exc).splitlines()[0]
        ctx.note(f"could not reach the run on {machine.name} to let it save first ({first}); stopping anyway")
        return "the run could not be reached to save first"
