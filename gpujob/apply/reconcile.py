"""What the pure planner cannot see, added to a fresh plan before it is shown:

- a launch a killed apply left undone (the journal says a machine was created or started and no
  launch finished since; the planner only sees a running machine and plans nothing);
- teardown.on_finish: when the run exited 0, stop the machine, or pull and terminate it (gated: the
  user still approves `<job>.<pod|machine>.terminate`). A finished run is marked in the journal with
  the spec digest, so later applies do not start it again until the job file changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpujob.apply.journal import Journal, JournalEntry
from gpujob.live import LiveResource
from gpujob.plan.model import Action, ActionKind, JobPlan, Plan

JournalOf = Callable[[Any], Journal]
_RESTARTS = (ActionKind.CREATE, ActionKind.START, ActionKind.LAUNCH, ActionKind.REPLACE)


def launch_pending(entries: Sequence[JournalEntry]) -> bool:
    """A machine was (being) created or started, and no launch finished since."""
    pending = False
    for e in entries:
        if e.action_id is None or ".network_volume" in e.action_id:
            continue
        kind = e.action_id.rsplit(".", 1)[-1]
        if kind in ("create", "start", "replace") and e.phase in ("intent", "done"):
            pending = True
        elif kind in ("launch", "terminate", "stop") and e.phase == "done":
            pending = False
    return pending


def finished_marker(entries: Sequence[JournalEntry], digest: str) -> JournalEntry | None:
    """The last 'run finished' mark, if it was made for this exact job file."""
    marks = [e for e in entries if e.action_id and e.action_id.endswith(".run.finished")]
    last_launch = max(
        (i for i, e in enumerate(entries) if e.phase == "done" and (e.action_id or "").endswith(".launch")),
        default=-1,
    )
    if marks and entries.index(marks[-1]) > last_launch and marks[-1].detail.endswith(digest):
        return marks[-1]
    return None


def _machine(ls: Any, live: Any) -> LiveResource | None:
    return next(
        (r for r in live.resources if r.name == ls.spec.resource_name and r.kind in ("pod", "machine")),
        None,
    )


def _action(jp: JobPlan, machine: LiveResource, kind: ActionKind, resource_kind: str, reason: str) -> Action:
    return Action(
        id=f"{jp.job}.{resource_kind}.{kind.value}",
        job=jp.job,
        platform=jp.platform,
        kind=kind,
        resource_kind=resource_kind,
        resource_name=machine.name,
        resource_id=machine.id,
        reasons=[reason],
        gated=kind is ActionKind.TERMINATE,
    )


def _changes(jp: JobPlan) -> list[Action]:
    return [a for a in jp.actions if a.kind is not ActionKind.NOOP]


def resume_interrupted_launches(plan: Plan, loaded: Sequence[Any], live: Any, journal_of: JournalOf) -> Plan:
    by_name = {ls.spec.name: ls for ls in loaded}
    jobs = []
    for jp in plan.jobs:
        ls = by_name.get(jp.job)
        machine = _machine(ls, live) if ls is not None else None
        if (
            ls is None
            or machine is None
            or ls.spec.state != "running"
            or ls.spec.run is None
            or machine.status not in ("running", "pending")
            or any(a.kind is ActionKind.LAUNCH for a in jp.actions)
            or not launch_pending(journal_of(ls).entries())
        ):
            jobs.append(jp)
            continue
        reason = "a previous apply stopped before the run was launched (see .gpujob/journal): launch it now"
        launch = _action(jp, machine, ActionKind.LAUNCH, "run", reason)
        jobs.append(jp.model_copy(update={"actions": [*_changes(jp), launch]}))
    return plan.model_copy(update={"jobs": jobs})


async def finish_runs(
    plan: Plan,
    loaded: Sequence[Any],
    live: Any,
    providers: Mapping[str, Any],
    journal_of: JournalOf,
    *,
    ssh: Any = None,
    clock: Any = None,
) -> Plan:
    """Apply teardown.on_finish to runs that exited 0, and keep finished runs from starting again."""
    from gpujob.apply.runtime import Target, open_remote
    from gpujob.apply.session import state_dir_of
    from gpujob.apply.sshapi import SSHApi
    from gpujob.clock import SystemClock
    from gpujob.errors import GpujobError

    by_name = {ls.spec.name: ls for ls in loaded}
    jobs = []
    for jp in plan.jobs:
        ls = by_name.get(jp.job)
        if (
            ls is None
            or ls.spec.run is None
            or ls.spec.state != "running"
            or ls.spec.teardown.on_finish == "keep"
        ):
            jobs.append(jp)
            continue
        journal = journal_of(ls)
        machine = _machine(ls, live)
        if finished_marker(journal.entries(), ls.digest) is None:
            if machine is None or machine.status != "running" or _changes(jp):
                jobs.append(jp)
                continue
            ssh = ssh or SSHApi.default()
            target = Target(ls.spec, ls.path, providers[ls.spec.platform], machine, state_dir_of(ls.path))
            try:
                async with open_remote(target, ssh, clock or SystemClock(), lambda _m: None) as remote:
                    status = await ssh.run_status(remote, ls.spec)
            except GpujobError:
                jobs.append(jp)  # unreachable now: decide on the next apply
                continue
            if status.alive or status.exit_code != 0:
                jobs.append(jp)
                continue
            now = (clock or SystemClock()).now()
            journal.append(
                "done", now, action_id=f"{jp.job}.run.finished", detail=f"exit 0; spec {ls.digest}"
            )
        # Finished (now or before) with this job file: never start it again; tear down what is still up.
        kept = [a for a in _changes(jp) if a.kind not in _RESTARTS]
        verb = ls.spec.teardown.on_finish
        kind = ActionKind.STOP if verb == "stop" else ActionKind.TERMINATE
        if machine is not None and machine.status == "running" and not any(a.kind is kind for a in kept):
            reason = f"the run exited 0 and teardown.on_finish is {verb}"
            if kind is ActionKind.TERMINATE and ls.spec.checkpoint is not None:
                kept.append(
                    _action(jp, machine, ActionKind.PULL, "checkpoints", reason + ": pull and verify first")
                )
            kept.append(_action(jp, machine, kind, machine.kind, reason))
        jobs.append(jp.model_copy(update={"actions": kept}))
    return plan.model_copy(update={"jobs": jobs})
