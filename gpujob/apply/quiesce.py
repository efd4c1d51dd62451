"""Let the run save before gpujob takes its machine away: SIGTERM to every process of the job (the
run's tree, gpujob.ssh.launcher, then every other process carrying its GPUJOB_JOB marker: a helper in
its own session, a double-forked writer, gpujob.ssh.workload), up to plan.cadence.quiesce_grace_s for their
last save, SIGKILL after, all confirmed gone.

The teardown gate quiesces before it looks at a disk it may erase (strict: a process it cannot stop
blocks the teardown). Every stop gpujob makes goes through `stop` here, the one place that calls a
provider's stop: apply's stop, park and on_finish/on_failure stops, a disk grow or static IP switch
that needs the machine off, watch's stops, the failover move, a preflight-refused host and rehearse.
There it is best effort: the platform's stop ends the workload either way, and a machine gpujob cannot
reach must still stop billing. Only a machine gpujob itself started moments ago for a look or a pull
(nothing of the job was launched on it) skips the quiesce, and says so (`fresh`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from gpujob.apply.context import JobContext
from gpujob.apply.runtime.remote import Target, open_remote
from gpujob.apply.sshapi import SSHApi
from gpujob.clock import Clock
from gpujob.errors import GateError, GpujobError
from gpujob.jobfile.model import JobSpec
from gpujob.live import LiveResource
from gpujob.plan.cadence import quiesce_grace_s
from gpujob.plan.model import Action

# The id of the machine whose stop is going through `stop` right now (in this task): what a test's
# provider checks at its stop call, so a new path that calls a provider's stop directly fails there.
_STOPPING: ContextVar[str | None] = ContextVar("gpujob_quiesced_stop", default=None)


def stopping_through_quiesce() -> str | None:
    return _STOPPING.get()


async def quiesce(
    ctx: JobContext, action: Action, remote: Any, machine: LiveResource, *, strict: bool
) -> str:
    """Stop the job's processes on an open connection; a one-line outcome. `strict`: a process still
    alive after SIGKILL raises GateError (its disk cannot be checked while it writes)."""
    return await _on_open(
        _Quiet(remote, ctx.spec, ctx.ssh, ctx.note, machine.name, action.kind.value, action.id, strict)
    )


@dataclass(frozen=True)
class _Quiet:
    """One quiesce on an open connection: whose run, where, what follows (`before`), and how a process
    that will not die is taken (`strict`: GateError, naming `label`)."""

    remote: Any
    spec: JobSpec
    ssh: SSHApi
    note: Callable[[str], None]
    name: str
    before: str
    label: str
    strict: bool


async def _on_open(q: _Quiet) -> str:
    grace = quiesce_grace_s(q.spec)
    run = await q.ssh.quiesce_run(q.remote, q.spec, grace_s=grace)
    state = getattr(run, "state", "not-running")
    if state == "stuck":
        if q.strict:
            raise GateError(
                f"{q.label}: the run on {q.name} is still alive after SIGTERM, {grace:.0f}s and SIGKILL "
                f"(pids {', '.join(map(str, run.pids))}); nothing more is done while it may still write",
                hint="look at it with `gpujob ssh`, then run the command again",
            )
        said = f"the run did not exit after SIGTERM, {grace:.0f}s and SIGKILL (pids {', '.join(map(str, run.pids))})"
    elif state == "not-running":
        said = "no run was alive"
    else:
        how = "exited after SIGTERM" if state == "stopped" else f"was killed after {grace:.0f}s"
        q.note(f"stopped the run on {q.name} before the {q.before}: it {how}")
        said = f"the run {how}"
    return said + await _workload(q, grace)


async def _workload(q: _Quiet, grace: float) -> str:
    """Whatever of the workload outlived the run's tree (setsid'd, double-forked): gpujob.ssh.workload."""
    try:
        w = await q.ssh.quiesce_workload(q.remote, q.spec, grace_s=grace)
    except NotImplementedError:  # a test's SSH layer without it
        return ""
    if w.state == "stuck":
        names = ", ".join(f"{p.name} ({p.pid})" for p in w.left[:6])
        if q.strict:
            raise GateError(
                f"{q.label}: workload process(es) on {q.name} still running after SIGTERM, {grace:.0f}s "
                f"and SIGKILL: {names}; its disk cannot be checked while they may write",
                hint="look at them with `gpujob ssh -- ps -ef`, then run the command again",
            )
        return f"; workload process(es) still running after SIGKILL: {names}"
    if w.state == "none":
        return ""
    q.note(f"before the {q.before} on {q.name}: {w.describe()}")
    return f"; {w.describe()}"


async def let_save(
    target: Target,
    ssh: SSHApi,
    clock: Clock,
    note: Callable[[str], None],
    before: str,
    *,
    risk: str | None = None,
) -> str:
    """Quiesce the job's processes on its running machine, best effort (a stop follows either way):
    what happened, one line ("" when the job has no run or the machine does not run). `target.resource`
    is refreshed by the connection. `risk`: what the stop would do to the checkpoints left on the
    machine's disk (gpujob.apply.stop_pull): they are then pulled and the newest verified on the same
    connection, and one that does not come home refuses the stop (GateError)."""
    machine = target.resource
    if (target.spec.run is None and risk is None) or machine.status != "running":
        return ""
    try:
        async with open_remote(target, ssh, clock, note) as remote:
            said = ""
            if target.spec.run is not None:
                said = await _on_open(
                    _Quiet(remote, target.spec, ssh, note, machine.name, before, target.spec.name, False)
                )
            if risk is not None:
                from gpujob.apply.stop_pull import pull_newest

                said += await pull_newest(remote, target, ssh, clock, note, risk)
            return said.lstrip("; ")
    except GateError:
        raise
    except GpujobError as exc:
        first = str(exc).splitlines()[0]
        note(f"could not reach the run on {machine.name} to let it save first ({first}); stopping anyway")
        if risk is not None:
            note(f"NOT PULLED: the newest checkpoint stays only on {machine.name}, where {risk}")
            return "the machine could not be reached to save and pull first: NOT PULLED"
        return "the run could not be reached to save first"


async def stop(
    target: Target,
    ssh: SSHApi,
    clock: Clock,
    note: Callable[[str], None],
    *,
    before: str = "stop",
    fresh: str | None = None,
    lasting: bool = True,
) -> tuple[LiveResource, str]:
    """THE stop gpujob makes of a job's machine: its processes get SIGTERM and their grace (let_save),
    then, when the machine stays stopped (`lasting`) and its disk is one a stop wipes, bills at 2× or
    deletes on a clock, the checkpoints are pulled and the newest verified (the Iron Law,
    gpujob.apply.stop_pull; a newest checkpoint that does not come home refuses the stop), then the
    provider's stop. `fresh`: why nothing of the job can run on it (gpujob started it moments ago only
    for a look or a pull), so no quiesce. `lasting` False: the machine is started again by the same
    step (a disk grow, an IP switch, the drill). Returns (the machine as the stop left it, what happened
    to the job's processes and checkpoints)."""
    if fresh:
        said = fresh
    else:
        from gpujob.apply.stop_pull import risk_of

        risk = risk_of(target) if lasting else None
        said = await let_save(target, ssh, clock, note, before, risk=risk)
    with _through_quiesce(target.resource.id):
        stopped = await target.provider.stop(target.resource)
    target.resource = stopped
    return stopped, said


@contextmanager
def _through_quiesce(machine_id: str) -> Iterator[None]:
    token = _STOPPING.set(machine_id)
    try:
        yield
    finally:
        _STOPPING.reset(token)


def target_of(ctx: JobContext, machine: LiveResource, *, moved: bool | None = None) -> Target:
    """The job's machine as the SSH side needs it; `moved`: whether this apply created or started it
    (the context's own flag unless said)."""
    return Target(
        spec=ctx.spec,
        spec_path=ctx.spec_path,
        provider=ctx.provider,
        resource=machine,
        state_dir=ctx.state_dir,
        moved=ctx.moved if moved is None else moved,
    )


async def stop_for(
    ctx: JobContext,
    machine: LiveResource,
    *,
    before: str = "stop",
    fresh: str | None = None,
    lasting: bool = True,
) -> tuple[LiveResource, str]:
    """`stop` for a step of apply or a hook given its context."""
    return await stop(
        target_of(ctx, machine), ctx.ssh, ctx.clock, ctx.note, before=before, fresh=fresh, lasting=lasting
    )


async def before_restart(ctx: JobContext, action: Action, machine: LiveResource) -> str:
    """Before a change that restarts the machine without a stop of gpujob's (a RunPod volume-disk grow
    restarts the container): the same quiesce as a stop."""
    target = target_of(ctx, machine)
    said = await let_save(target, ctx.ssh, ctx.clock, ctx.note, action.kind.value)
    ctx.machine = target.resource
    return said
