"""Watch's side of the applier: run the actions the policy allowed (all jobs at once, through
gpujob.apply.applier with its journal and gate), park a job, and say in one line why a job needed
fixing."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpujob import naming
from gpujob.apply.sshapi import SSHApi
from gpujob.clock import Clock
from gpujob.errors import GpujobError
from gpujob.live import LiveResource, LiveState
from gpujob.naming import machine_kind_of
from gpujob.plan.model import Action, ActionKind, JobPlan, Plan
from gpujob.plan.run_actions import OOM_TWICE
from gpujob.watch.policy import Decision

K = ActionKind
Note = Callable[[str, str], None]


class _Hooks:
    """Collects each step's outcome; notes (capacity fallbacks, waits) become watch events."""

    def __init__(self, note: Note) -> None:
        self._note = note
        self.details: dict[str, list[str]] = {}
        self._waits: set[tuple[str, str]] = set()

    def step(self, action: Action, phase: str, detail: str = "") -> None:
        if phase in ("done", "failed") and detail:
            self.details.setdefault(action.job, []).append(detail)

    def note(self, job: str, message: str) -> None:
        self._note(job, message)

    def transfer(self, job: str, label: str, done_bytes: int, total_bytes: int) -> None:
        pass

    def waiting(self, job: str, what: str, elapsed_s: float, deadline_s: float | None) -> None:
        if (job, what) not in self._waits:  # once per wait, not once per second
            self._waits.add((job, what))
            self._note(job, what)

    def settle(self, job: str, key: str) -> None:
        self._waits = {w for w in self._waits if w != (job, key)}


async def apply_decisions(
    todo: Sequence[tuple[Any, JobPlan, Decision]],
    plan: Plan,
    providers: Mapping[str, Any],
    *,
    ssh: SSHApi,
    clock: Clock,
    env: Mapping[str, str],
    note: Note,
) -> dict[str, tuple[bool, str]]:
    """Apply each job's allowed actions; job name -> (ok, what happened, one line)."""
    from gpujob.apply.applier import apply_plan
    from gpujob.apply.journal import journal_of
    from gpujob.apply.reconcile import mark_finished, record_launches

    sub = plan.model_copy(
        update={"jobs": [jp.model_copy(update={"actions": d.actions}) for _, jp, d in todo]}
    )
    loaded = [j.loaded for j, _, _ in todo]
    approvals = set().union(*(d.approvals for _, _, d in todo))
    hooks = _Hooks(note)
    out: dict[str, tuple[bool, str]] = {}
    # Before an on_finish teardown: a kill mid-teardown must not let the next tick restart the run.
    mark_finished(sub, loaded, journal_of, clock.now())
    try:
        result = await apply_plan(
            sub, loaded, providers, approvals=approvals, auto_approve=True, hooks=hooks, clock=clock, env=env,
            ssh=ssh, command="gpujob watch",
        )  # fmt: skip
    except GpujobError as exc:
        return {j.name: (False, str(exc)) for j, _, _ in todo}
    record_launches(result.done, loaded, journal_of, clock.now())
    for j, _jp, d in todo:
        failed = [f"{aid}: {msg}" for aid, msg in result.failed.items() if aid.startswith(j.name + ".")]
        mine = [a.id for a in d.actions]
        if failed:
            out[j.name] = (False, "; ".join(failed))
        elif all(a in result.done for a in mine):
            out[j.name] = (True, "; ".join(hooks.details.get(j.name, [])) or "done")
        else:
            out[j.name] = (False, "not every step ran: " + ", ".join(a for a in mine if a not in result.done))
    return out


def describe(jp: JobPlan, d: Decision, machine: LiveResource | None) -> tuple[str, str]:
    """(event kind, what happened) for the actions about to run."""
    machine_action = next(
        (a for a in d.actions if a.resource_kind in naming.MACHINE_KINDS + naming.GROUP_KINDS), None
    )
    main = machine_action or next((a for a in d.actions if a.kind is not K.PULL), d.actions[0])
    why = main.reasons[0] if main.reasons else main.id
    if d.finishing:
        return "run-finished", why
    if main.kind is K.STOP and why.startswith(OOM_TWICE):  # gpujob.plan.run_actions: not relaunched again
        return "run-oom", why
    if main.kind is K.CREATE and main.resource_kind in naming.MACHINE_KINDS + naming.GROUP_KINDS:
        return ("gone" if main.drift else "create"), why
    if main.kind is K.START:
        return ("preempted" if machine is not None and machine.spot else "down"), why
    if main.kind is K.REPLACE:
        return (
            "host-lost-gpu" if machine is not None and machine.attributes.get("host_lost_gpu") else "replace"
        ), why
    if main.kind is K.LAUNCH:
        return "run-lost", why
    return "drift", why


async def park(
    loaded: Any,
    verb: str,
    live: LiveState,
    providers: Mapping[str, Any],
    *,
    ssh: SSHApi,
    clock: Clock,
    env: Mapping[str, str],
) -> tuple[bool, str]:
    """Stop (or, when teardown.on_finish is terminate, terminate through the gate) the job's machine.
    Planned like any other change: the same spec with state stopped / absent, machine actions only."""
    from gpujob.apply.applier import apply_plan
    from gpujob.plan.planner import build_plan
    from gpujob.plan.records import job_pull_records

    spec = loaded.spec.model_copy(update={"state": "stopped" if verb == "stop" else "absent"})
    as_parked = dataclasses.replace(loaded, spec=spec)
    plan = build_plan([as_parked], live, now=clock.now(), env=env, pull_records=job_pull_records([as_parked]))
    machine_kind = machine_kind_of(spec.platform, spec.machine.nodes)
    keep = [
        a
        for a in plan.jobs[0].actions
        if (a.kind in (K.STOP, K.TERMINATE) and a.resource_kind == machine_kind) or a.kind is K.PULL
    ]
    if not any(a.kind in (K.STOP, K.TERMINATE) for a in keep):
        return True, ""
    sub = plan.model_copy(update={"jobs": [plan.jobs[0].model_copy(update={"actions": keep})]})
    hooks = _Hooks(lambda job, text: None)
    try:
        result = await apply_plan(
            sub, [as_parked], providers, approvals={a.id for a in keep if a.kind is K.TERMINATE},
            auto_approve=True, hooks=hooks, clock=clock, env=env, ssh=ssh, command="gpujob watch",
        )  # fmt: skip
    except GpujobError as exc:
        return False, str(exc)
    if result.failed:
        return False, "; ".join(f"{k}: {v}" for k, v in result.failed.items())
    return True, "; ".join(hooks.details.get(spec.name, []))


async def quiesce(job: Any, machine: LiveResource, provider: Any, *, ssh: SSHApi, clock: Clock) -> str:
    """Let every process of the job save before the final pull and the stop that follow (the quiesce
    every stop of gpujob makes: gpujob.apply.quiesce), so the pull sees everything they wrote."""
    from gpujob.apply.quiesce import let_save
    from gpujob.apply.runtime import Target

    spec = job.loaded.spec
    target = Target(
        spec=spec, spec_path=job.loaded.path, provider=provider, resource=machine, state_dir=job.state_dir
    )
    return await let_save(target, ssh, clock, lambda _text: None, "final pull") or "no run was alive"
