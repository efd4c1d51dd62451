"""A saved plan is re-derived, never trusted.

`gpujob apply plan.json` builds the plan again, the way its origin made it (`gpujob plan`, or
`gpujob audit --fix`), from the job files and the live state read now, and requires the two to agree
on every job, its desired state, and every action: id, kind, resource kind, name and id, in order.
Then it executes the plan it derived; the file only proves what the reviewer saw. Nothing in the file
decides what runs: `gated` follows the action kind (gpujob.plan.model.Action refuses a file that
says otherwise), and the applier checks ownership again before every call that destroys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from gpujob.errors import PlanMismatchError
from gpujob.live import LiveState
from gpujob.plan.capability import Capability, chosen
from gpujob.plan.model import Action, JobPlan, Plan
from gpujob.plan.planner import build_plan

_FIELDS = ("kind", "resource_kind", "resource_name", "resource_id")


def rederive(
    saved: Plan,
    loaded: Sequence[Any],
    live: LiveState,
    *,
    now: datetime,
    env: Mapping[str, str],
    pull_records: Mapping[str, Any] | None = None,
    launch_records: Mapping[str, Any] | None = None,
    histories: Mapping[str, Any] | None = None,
    monthly: Any = None,
    capabilities: Sequence[Capability] | None = None,
) -> Plan:
    """The plan derived now for the saved plan's jobs; PlanMismatchError listing every difference when
    it is not the saved one."""
    fresh = derive(
        saved.origin, loaded, live, now=now, env=env, pull_records=pull_records, launch_records=launch_records,
        histories=histories, monthly=monthly, replace=saved.replace, fresh=saved.fresh, release_left=saved.release_left, capabilities=capabilities,
    )  # fmt: skip
    problems = differences(saved, fresh)
    if problems:
        shown = problems[:12] + ([f"... and {len(problems) - 12} more"] if len(problems) > 12 else [])
        raise PlanMismatchError(
            "the saved plan is not the plan gpujob derives now from the job files and live state, so "
            "it is refused and nothing was changed:\n" + "\n".join(f"  - {p}" for p in shown),
            hint="a plan file is checked, never trusted: make a new one and review it "
            + (
                "(gpujob audit --fix -o fix.json)"
                if saved.origin == "audit-fix"
                else "(gpujob plan -o plan.json)"
            ),
        )
    return fresh


def derive(
    origin: str,
    loaded: Sequence[Any],
    live: LiveState,
    *,
    now: datetime,
    env: Mapping[str, str],
    pull_records: Mapping[str, Any] | None = None,
    launch_records: Mapping[str, Any] | None = None,
    histories: Mapping[str, Any] | None = None,
    monthly: Any = None,
    replace: Sequence[str] = (),
    fresh: bool = False,
    release_left: bool = False,
    capabilities: Sequence[Capability] | None = None,
) -> Plan:
    """The plan its origin makes: a capability's (e.g. "audit-fix", gpujob.audit), else `gpujob plan`'s."""
    caps = chosen(capabilities)
    for cap in caps:
        plan = cap.derive_plan(origin, loaded, live, now=now)
        if plan is not None:
            return plan
    return build_plan(
        loaded, live, now=now, env=env, pull_records=pull_records, launch_records=launch_records,
        histories=histories, monthly=monthly, replace=replace, fresh=fresh, release_left=release_left, capabilities=caps,
    )  # fmt: skip


def _describe(a: Action) -> str:
    rid = f" ({a.resource_id})" if a.resource_id else ""
    return f"{a.kind.value} {a.resource_kind} {a.resource_name}{rid}"


def differences(saved: Plan, fresh: Plan) -> list[str]:
    """Every way `saved` is not `fresh`, one line each (empty: they agree)."""
    out: list[str] = []
    saved_jobs = {j.job: j for j in saved.jobs}
    fresh_jobs = {j.job: j for j in fresh.jobs}
    for job in saved_jobs.keys() - fresh_jobs.keys():
        out.append(f"job '{job}': in the saved plan, but nothing is derived for it now")
    for job in fresh_jobs.keys() - saved_jobs.keys():
        out.append(f"job '{job}': derived now, missing from the saved plan")
    for job in [j.job for j in saved.jobs if j.job in fresh_jobs]:
        out += _job_differences(saved_jobs[job], fresh_jobs[job])
    return out


def _job_differences(saved: JobPlan, fresh: JobPlan) -> list[str]:
    out: list[str] = []
    if saved.desired_state != fresh.desired_state:
        out.append(f"job '{saved.job}': desired state {saved.desired_state} saved, {fresh.desired_state} now")
    if saved.platform != fresh.platform:
        out.append(f"job '{saved.job}': platform {saved.platform} saved, {fresh.platform} now")
    theirs = {a.id: a for a in saved.actions}
    ours = {a.id: a for a in fresh.actions}
    for a in saved.actions:
        b = ours.get(a.id)
        if b is None:
            out.append(f"{a.id}: saved as {_describe(a)}, but no such action is derived now")
            continue
        for field in _FIELDS:
            x, y = getattr(a, field), getattr(b, field)
            if x != y:
                shown = (x.value if hasattr(x, "value") else x, y.value if hasattr(y, "value") else y)
                out.append(f"{a.id}: {field} is {shown[0]!r} in the saved plan, {shown[1]!r} derived now")
    for b in fresh.actions:
        if b.id not in theirs:
            out.append(f"{b.id}: derived now ({_describe(b)}), missing from the saved plan")
    if not out and [a.id for a in saved.actions] != [b.id for b in fresh.actions]:
        out.append(f"job '{saved.job}': the saved plan runs its actions in a different order")
    return out
