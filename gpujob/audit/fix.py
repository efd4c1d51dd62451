"""`gpujob audit --fix`: a Plan that stops the idle spend of resources this repo owns. It never acts:
the plan goes through `gpujob apply plan.json`, whose teardown gate checks every gated action."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

from pydantic import Field

from gpujob import __version__
from gpujob.audit.model import AuditItem, AuditReport
from gpujob.cost.model import Billing, MeterLine
from gpujob.live import LiveState
from gpujob.model import Model, Platform
from gpujob.plan.model import Action, ActionKind, DataEffect, Finding, JobPlan, Plan
from gpujob.profile import Profile


class FixJob(Model):
    """What the fix planner needs to know about one local job."""

    name: str
    platform: Platform
    spec_file: str
    desired_state: str = "running"
    has_checkpoint: bool = False
    digest: str = Field("", description="sha256 of the job file.")
    project: str | None = Field(None, description="The project id of the job's state dir (None: none yet).")


# (resource kind, status) -> (action kind, profile action whose `destroys` lists the wiped tiers)
_VERBS: dict[str, tuple[ActionKind, str]] = {
    "pod": (ActionKind.TERMINATE, "terminate"),
    "machine": (ActionKind.TERMINATE, "destroy"),
    "network_volume": (ActionKind.DELETE_VOLUME, "delete_volume"),
    "public_ip": (ActionKind.RELEASE_IP, "release_ip"),
    "snapshot": (ActionKind.DELETE_SNAPSHOT, "delete_snapshot"),
}
_APPLY_ORDER = {"pod": 0, "machine": 0, "snapshot": 1, "public_ip": 2, "network_volume": 3}


def spec_digest(jobs: Iterable[FixJob]) -> str:
    """The planner's recipe, so apply's stale-plan guard accepts a fix plan exactly as a `gpujob plan`."""
    from gpujob.plan.planner import files_digest

    return files_digest((job.spec_file, job.digest) for job in jobs)


def fix_fingerprint(live: LiveState, jobs: Iterable[FixJob]) -> str:
    """The live fingerprint apply recomputes for a saved plan: what the plan's jobs own (the planner's
    own recipe), so a foreign resource changing elsewhere does not stale the fix plan."""
    from gpujob.audit.views import plan_view
    from gpujob.plan.planner import live_fingerprint

    return live_fingerprint(plan_view(live), {j.name: j.project for j in jobs})


def _billing(item: AuditItem, kind: ActionKind) -> Billing:
    stops = list(item.meters)
    if not stops:
        stops = [
            MeterLine(
                what=f"{item.kind} {item.name}",
                usd_per_hour=item.usd_per_hour,
                usd_per_month=item.usd_per_month,
                source=f"{item.rate_source} rate at audit",
            )
        ]
    return Billing(
        stops=stops,
        hourly_before=item.usd_per_hour,
        hourly_after=0.0,
        summary=f"{kind.value}: stops {item.usd_per_hour:.4f} $/h ({item.usd_per_month:.2f} $/mo) of idle spend",
    )


def _data(profile: Profile, item: AuditItem, profile_action: str) -> DataEffect:
    try:
        act = profile.action(profile_action)
        wipes, irreversible = list(act.destroys), act.irreversible
    except KeyError:
        wipes, irreversible = [], True
    if item.kind == "public_ip":
        summary = "the address is given back; a new static IP will differ"
    elif wipes:
        summary = f"erases {', '.join(wipes)}; pull and verify checkpoints first"
    else:
        summary = f"removes {item.kind} {item.name}"
    return DataEffect(wipes=wipes, irreversible=irreversible, summary=summary)


def build_fix_plan(
    report: AuditReport,
    live: LiveState,
    jobs: Iterable[FixJob],
    *,
    now: datetime,
    profiles: Callable[[str], Profile],
) -> Plan:
    """Actions for every idle, billable resource owned by this repo's jobs; foreign ones are left alone."""
    by_name = {j.name: j for j in jobs}
    targets = [
        i for i in report.items if i.owner == "this-repo" and i.idle and i.billable and i.kind in _VERBS
    ]
    targets.sort(key=lambda i: (i.job or "", _APPLY_ORDER[i.kind], i.name, i.id))
    plans: dict[str, JobPlan] = {}
    actions_by_job: dict[str, list[Action]] = {}
    machine_action: dict[str, str] = {}  # resource id -> the id of the action that removes it
    used_ids: set[str] = set()

    def new_id(job: str, kind: str, verb: str, rid: str) -> str:
        base = f"{job}.{kind}.{verb}"
        aid = base if base not in used_ids else f"{base}.{rid}"
        used_ids.add(aid)
        return aid

    machine_of = {r.id: r.machine_id for r in live.resources if r.machine_id}
    volume_users = {
        r.network_volume_id: r.id for r in live.resources if r.kind == "pod" and r.network_volume_id
    }
    for item in targets:
        job = by_name.get(item.job or "")
        if job is None:
            continue
        kind, profile_action = _VERBS[item.kind]
        acts = actions_by_job.setdefault(job.name, [])
        depends: list[str] = []
        if item.kind in ("pod", "machine") and job.has_checkpoint:
            pull_id = new_id(job.name, item.kind, ActionKind.PULL.value, item.id)
            acts.append(
                Action(
                    id=pull_id, job=job.name, platform=item.platform, kind=ActionKind.PULL,
                    resource_kind=item.kind, resource_name=item.name, resource_id=item.id,
                    reasons=["pull and verify checkpoints before the teardown below"],
                )
            )  # fmt: skip
            depends.append(pull_id)
        if (
            item.kind == "network_volume"
            and item.id in volume_users
            and volume_users[item.id] in machine_action
        ):
            depends.append(machine_action[volume_users[item.id]])
        owner_machine = machine_of.get(item.id)
        if item.kind in ("public_ip", "snapshot") and owner_machine in machine_action:
            depends.append(machine_action[owner_machine])
        aid = new_id(job.name, item.kind, kind.value, item.id)
        if item.kind in ("pod", "machine"):
            machine_action[item.id] = aid
        findings = []
        if item.gotcha:
            findings.append(
                Finding(
                    code=item.gotcha, severity="warning", job=job.name, action_id=aid,
                    summary=f"{item.kind} {item.name} idle for {_ago(item.idle_seconds)}, billing {item.usd_per_month:.2f} $/mo",
                    detail=item.gotcha_title, fix=item.fix,
                )
            )  # fmt: skip
        acts.append(
            Action(
                id=aid, job=job.name, platform=item.platform, kind=kind, resource_kind=item.kind,
                resource_name=item.name, resource_id=item.id,
                reasons=[f"audit: idle since {item.since:%Y-%m-%d %H:%M} ({item.since_basis})" if item.since else "audit: idle"],
                billing=_billing(item, kind), data=_data(profiles(item.platform), item, profile_action),
                findings=findings, depends_on=depends, gated=True,
            )
        )  # fmt: skip
    for name, acts in actions_by_job.items():
        job = by_name[name]
        plans[name] = JobPlan(
            job=name,
            platform=job.platform,
            spec_file=job.spec_file,
            desired_state=job.desired_state,
            actions=acts,
            current_usd_per_hour=round(sum(a.billing.hourly_before for a in acts), 6),
        )
    return Plan(
        origin="audit-fix",
        created_at=now,
        gpujob_version=__version__,
        # Apply loads only the job files the plan names, and checks digest and fingerprint over those.
        spec_digest=spec_digest(by_name[n] for n in plans),
        live_fingerprint=fix_fingerprint(live, (by_name[n] for n in plans)),
        jobs=[plans[n] for n in sorted(plans)],
    )


def _ago(seconds: float | None) -> str:
    from gpujob.plan.costs import ago

    return ago(seconds)
