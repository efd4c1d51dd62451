"""What every renderer says the same way: action symbols, counts, the summary line and totals.

Symbols (documented in `gpujob plan --help` and the README):
    +    create                 ~    update in place         -/+  replace (terminate, then create)
    -    terminate / destroy / delete volume / release IP / delete snapshot
    ▶    start                  ⏸    stop                    ⇣    pull checkpoints
    ⇡    push checkpoints       »    launch the run          ·    no-op
"""

from __future__ import annotations

from dataclasses import dataclass

from gpujob.cost.rates import usd
from gpujob.invariant import holds
from gpujob.plan.finding_lines import where as where
from gpujob.plan.model import Action, ActionKind, Finding, JobPlan, Plan

K = ActionKind

SYMBOL: dict[ActionKind, str] = {
    K.CREATE: "+",
    K.UPDATE: "~",
    K.REPLACE: "-/+",
    K.TERMINATE: "-",
    K.DELETE_VOLUME: "-",
    K.RELEASE_IP: "-",
    K.DELETE_SNAPSHOT: "-",
    K.START: "▶",
    K.STOP: "⏸",
    K.PULL: "⇣",
    K.PUSH: "⇡",
    K.LAUNCH: "»",
    K.RELAUNCH: "~",
    K.MOVE: "⇄",
    K.NOOP: "·",
}

VERB: dict[ActionKind, str] = {
    K.CREATE: "create",
    K.UPDATE: "update in place",
    K.REPLACE: "replace",
    K.TERMINATE: "terminate",
    K.DELETE_VOLUME: "delete",
    K.RELEASE_IP: "release",
    K.DELETE_SNAPSHOT: "delete",
    K.START: "start",
    K.STOP: "stop",
    K.PULL: "pull checkpoints",
    K.PUSH: "push checkpoints",
    K.LAUNCH: "launch run",
    K.RELAUNCH: "relaunch",
    K.MOVE: "move to another platform",
    K.NOOP: "no change",
}

DESTROY = {K.TERMINATE, K.DELETE_VOLUME, K.RELEASE_IP, K.DELETE_SNAPSHOT}

# Every ActionKind must have a symbol and a verb: a new kind fails loudly here, not in a user's plan.
holds(set(SYMBOL) == set(ActionKind) == set(VERB), "every action kind has a symbol and a verb")


def verb(action: Action) -> str:
    if action.kind is K.TERMINATE and action.platform == "paperspace":
        return "destroy"
    return VERB[action.kind]


# After these, what keeps billing is the point; after a create or start it is noise.
SHOW_KEEPS = {K.MOVE, K.STOP, K.TERMINATE, K.REPLACE, K.DELETE_VOLUME, K.RELEASE_IP, K.DELETE_SNAPSHOT}
KIND_LABEL = {"public_ip": "static IP", "network_volume": "network volume"}


def resource_label(action: Action) -> str:
    kind = KIND_LABEL.get(action.resource_kind, action.resource_kind.replace("_", " "))
    if action.kind is K.RELAUNCH or (action.kind is K.UPDATE and action.resource_kind == "run"):
        return f"run {action.job}"
    if action.kind in (K.PULL, K.PUSH, K.LAUNCH):
        return action.resource_name
    return f"{kind} {action.resource_name}"


@dataclass(frozen=True)
class Totals:
    running_per_hour: float
    parked_per_month: float
    now_per_hour: float
    after_per_hour: float

    @property
    def delta_per_hour(self) -> float:
        return round(self.after_per_hour - self.now_per_hour, 6)


def totals(plan: Plan) -> Totals:
    from gpujob.plan.rate import running_rate

    jobs = plan.jobs
    running = running_rate(j for j in jobs if j.desired_state == "running")  # the rate the caps judge
    return Totals(
        running_per_hour=round(running.usd_per_hour, 6),
        # what everything still bills per month while its machines are stopped (absent jobs: leftovers)
        parked_per_month=round(sum(j.parked_usd_per_month for j in jobs), 6),
        now_per_hour=round(sum(j.current_usd_per_hour for j in jobs), 6),
        after_per_hour=round(sum(j.after_usd_per_hour for j in jobs), 6),
    )


def counts(actions: list[Action]) -> dict[str, int]:
    c = {"create": 0, "update": 0, "replace": 0, "start": 0, "stop": 0, "destroy": 0, "pull": 0, "push": 0}
    c["launch"] = c["relaunch"] = c["move"] = 0
    for a in actions:
        if a.kind in DESTROY:
            c["destroy"] += 1
        elif a.kind is not K.NOOP:
            c[
                {
                    K.UPDATE: "update",
                    K.PULL: "pull",
                    K.PUSH: "push",
                    K.LAUNCH: "launch",
                    K.RELAUNCH: "relaunch",
                }.get(a.kind, a.kind.value)
            ] += 1
    return c


def summary_line(plan: Plan) -> str:
    """'Plan: 1 to create, 1 to stop, 0 to destroy. Running: $2.49/h. Parked: $20.00/mo.'"""
    t = totals(plan)
    money = f"Running: {usd(t.running_per_hour)}/h. Parked: {usd(t.parked_per_month)}/mo."
    if not plan.has_changes:
        return f"No changes: live state matches the spec. {money}"
    c = counts(plan.all_actions())
    parts = [f"{c['create']} to create"]
    parts += [f"{c[k]} to {k}" for k in ("update", "replace", "start", "stop") if c[k]]
    parts.append(f"{c['destroy']} to destroy")
    parts += [f"{c[k]} to {k}" for k in ("pull", "push", "launch", "relaunch", "move") if c[k]]
    return f"Plan: {', '.join(parts)}. {money}"


def billing_line(plan: Plan) -> str:
    t = totals(plan)
    sign = "+" if t.delta_per_hour > 0 else ""
    delta = f"{sign}{usd(t.delta_per_hour)}/h" if t.delta_per_hour else "no change"
    return f"Billing now {usd(t.now_per_hour)}/h, after apply {usd(t.after_per_hour)}/h ({delta})."


def job_cost_line(job: JobPlan) -> str:
    delta = round(job.after_usd_per_hour - job.current_usd_per_hour, 6)
    sign = "+" if delta > 0 else ""
    parts = [
        f"now {usd(job.current_usd_per_hour)}/h",
        f"after apply {usd(job.after_usd_per_hour)}/h ({sign}{usd(delta)}/h)"
        if delta
        else "after apply: no change",
    ]
    if job.desired_state != "absent":
        parts += [f"running {usd(job.running_usd_per_hour)}/h", f"parked {usd(job.parked_usd_per_month)}/mo"]
    return " · ".join(parts)


def finding_counts(findings: list[Finding]) -> str:
    n = {s: sum(1 for f in findings if f.severity == s) for s in ("error", "warning", "info")}
    words = [f"{n['error']} error{'s' if n['error'] != 1 else ''}"]
    words.append(f"{n['warning']} warning{'s' if n['warning'] != 1 else ''}")
    words.append(f"{n['info']} info")
    return ", ".join(words)


def run_line(job: JobPlan) -> str | None:
    """'lost (started 2026-11-29T10:00:00Z) · last checkpoint step-400, 12 min ago', or None."""
    run = job.run
    if run is None:
        return None
    if run.state is None:
        text = run.reason or "not read"
    elif run.state == "unknown":
        text = f"unknown ({run.reason})" if run.reason else "unknown"
    elif run.state == "exited":
        text = f"exited {run.exit_code}"
    else:
        text = run.state.replace("_", " ")
    if run.last_checkpoint:
        age = run.last_checkpoint_age_s
        text += f" · last checkpoint {run.last_checkpoint}"
        if age is not None:
            text += f", {int(age // 60)} min ago" if age >= 120 else f", {int(age)}s ago"
    journal = []
    if run.launch_pending:
        journal.append("a launch is pending")
    if run.finished_for_digest:
        journal.append("finished with this job file")
    if journal:
        text += " · journal: " + ", ".join(journal)
    return text
