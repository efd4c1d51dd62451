"""The plan's side: where the job runs now, the price on each platform in order, and when the current
one cannot serve, the one action `<job>.move` in place of the ones that would wait for it there.

The move destroys nothing: the old machine stays as the platform left it (a running one is stopped
through the quiesce by the move), its storage is kept and its monthly cost is shown in the move's
billing; deleting it is a separate gated action like any other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from gpujob.cost.model import Billing, MeterLine
from gpujob.cost.rates import usd
from gpujob.failover.choice import Choice, choose
from gpujob.invariant import present
from gpujob.live import LiveResource, LiveState
from gpujob.plan.model import Action, ActionKind, DataEffect, Finding, JobPlan

K = ActionKind


def move_id(job: str) -> str:
    return f"{job}.move"


def newest_verified(record: Any) -> tuple[str | None, int | None]:
    """(file, step) of the newest checkpoint pulled here, verified by load and by checksum."""
    from gpujob.plan.records import step_of

    if record is None:
        return None, None
    ok = [f for f in record.files if f.verified and f.checksum_ok]
    if not ok:
        return None, None
    best = max(ok, key=lambda f: (step_of(f.name) is not None, step_of(f.name) or 0, f.at))
    return best.name, step_of(best.name)


def left_behind(live: LiveState, job: str, project: str | None, platform: str) -> list[LiveResource]:
    from gpujob import naming

    return [r for r in naming.owned(live.resources, job, project) if r.platform == platform]


def running_here(live: LiveState, job: str, project: str | None, platform: str) -> bool:
    return any(
        r.kind in ("pod", "machine") and r.status == "running"
        for r in left_behind(live, job, project, platform)
    )


def kept_meters(live: LiveState, resources: Sequence[LiveResource], platform: str) -> list[MeterLine]:
    """What the job's resources on `platform` bill once its machine there is stopped."""
    from gpujob.cost import rates
    from gpujob.cost.live import Pricing, footprint
    from gpujob.profile import load_profile

    if not resources:
        return []
    profile = load_profile(platform)  # type: ignore[arg-type]
    fp = footprint(Pricing(profile=profile, quotes=live.quotes), resources)
    if fp.machine is not None:
        fp = fp.with_(machine="stopped")
    return [m for m in rates.meters(fp, profile).values() if m.usd_per_month > 0 or m.usd_per_hour > 0]


def with_moves(
    loaded: Sequence[Any],
    jobs: list[JobPlan],
    live: LiveState,
    pull_records: Mapping[str, Any] | None = None,
    failed_starts: Mapping[str, int] | None = None,
    *,
    now: datetime | None = None,
    env: Mapping[str, str] | None = None,
    capabilities: Sequence[Any] | None = None,
) -> list[JobPlan]:
    """Each job with fallback entries planned across its platforms (the others as they are)."""
    out = []
    for ls, jp in zip(loaded, jobs, strict=True):
        spec = ls.spec
        from gpujob.failover.queue_carry import drained

        if not spec.fallback or spec.state != "running" or drained(ls):
            out.append(jp)
            continue
        declared = getattr(ls, "declared", None) or spec
        entry = getattr(ls, "entry", -1)
        from gpujob.failover.failback import loaded_hold

        when = now or live.read_at
        choice = choose(
            declared, entry, live.quotes, failed_starts=(failed_starts or {}).get(spec.name, 0),
            running_here=running_here(live, spec.name, ls.project, spec.platform),
            spot_gone=live.spot_unavailable, failback_held=loaded_hold(ls, when),
        )  # fmt: skip
        record = (pull_records or {}).get(spec.name)
        beside = siblings(spec.name, jobs)
        choice = within_cap(ls, choice, live, now=when, env=env or {}, jp=jp, record=record, beside=beside)
        out.append(
            moved_plan(jp, ls, choice, live, record, now=when, env=env or {}, capabilities=capabilities)
        )
    return out


def moved_plan(
    jp: JobPlan,
    ls: Any,
    choice: Choice,
    live: LiveState,
    record: Any,
    *,
    now: datetime,
    env: Mapping[str, str],
    capabilities: Sequence[Any] | None = None,
) -> JobPlan:
    """The job's plan under `choice`: its move, priced as the plan there plus what it keeps here, or
    where it stays (the plan's rate check, gpujob.plan.rate, reads the result)."""
    moved = _with_choice(jp, ls, choice, live, record)
    if choice.move_to is not None:
        moved = _with_money_there(moved, ls, choice, live, now, env, capabilities)
    return moved


def _with_money_there(
    jp: JobPlan,
    ls: Any,
    choice: Choice,
    live: LiveState,
    now: datetime,
    env: Mapping[str, str],
    capabilities: Sequence[Any] | None = None,
) -> JobPlan:
    """The moving job's running, parked and after-apply rates: the platform it moves to, planned from
    the same read (its machine, storage and IP, not only the GPU offer), plus what it keeps where it
    leaves (its storage, billing while kept)."""
    import dataclasses

    from gpujob.plan.planner import plan_one
    from gpujob.project.placement import placed_spec

    declared = getattr(ls, "declared", None) or ls.spec
    to = choice.move_to
    to = present(to, "the move's target")
    there = dataclasses.replace(ls, spec=placed_spec(declared, to.entry), entry=to.entry, declared=declared)
    target = plan_one(there, live, now=now, env=env, capabilities=capabilities)
    (move,) = jp.actions
    kept = move.billing.keeps if move.billing is not None else []
    kept_hour = sum(m.usd_per_hour for m in kept)
    after = round(target.after_usd_per_hour + kept_hour, 4)
    # What the plan there starts, meter by meter (the machine's storage and IP too), priced as any plan.
    starts = [m for a in target.actions if a.billing is not None for m in a.billing.starts]
    update: dict[str, Any] = {"hourly_after": after} | ({"starts": starts} if starts else {})
    billing = move.billing.model_copy(update=update) if move.billing is not None else None
    return jp.model_copy(
        update={
            "actions": [move.model_copy(update={"billing": billing})],
            "running_usd_per_hour": round(target.running_usd_per_hour + kept_hour, 9),
            "parked_usd_per_month": round(
                target.parked_usd_per_month + sum(m.usd_per_month for m in kept), 2
            ),
            "after_usd_per_hour": after,
        }
    )


def _place_lines(choice: Choice) -> list[str]:
    out = []
    for p in choice.places:
        now = " (runs here now)" if p.entry == choice.here.entry else ""
        state = f"can serve: {p.offer}" if p.serves else f"cannot serve: {p.why}"
        out.append(f"{p.name}{now}: {state}")
    return out


def _left_lines(ls: Any, choice: Choice, live: LiveState) -> list[str]:
    """What the job keeps on the other platforms of its chain: billing, and not in this plan's costs
    (they are the platform it runs on)."""
    declared = getattr(ls, "declared", None) or ls.spec
    out = []
    for platform in dict.fromkeys([declared.platform, *(f.platform for f in declared.fallback)]):
        left = (
            [] if platform == choice.here.platform else left_behind(live, ls.spec.name, ls.project, platform)
        )
        alive = [r for r in left if r.kind in ("pod", "machine") and r.status in ("running", "pending")]
        if alive:  # a running GPU bills by the hour: never summarised as a month of kept storage
            from gpujob.plan.one_run import machine_rate

            out.append(
                f"running on {platform}: "
                + ", ".join(f"{r.kind} {r.name} {r.status}, {usd(machine_rate(live, r))}/h" for r in alive)
                + " (the job's own machine: `gpujob apply --adopt "
                + f"{platform}` makes it the one)"
            )
        elif left:
            month = sum(m.usd_per_month for m in kept_meters(live, left, platform))
            out.append(
                f"left on {platform}: {', '.join(f'{r.kind} {r.name} {r.status}' for r in left)}, "
                f"${month:.2f}/month while kept (not in this plan's cost; `gpujob plan --release-left` "
                "plans deleting them, gated)"
            )
    return out


def _back_finding(job: str, choice: Choice, lines: list[str]) -> Finding:
    """No failback now: home refused the start lately (waits) or too often (held, for a person)."""
    held = choice.back.startswith("failback held")
    return Finding(
        code="failover",
        severity="warning" if held else "info",
        summary=f"runs on {choice.here.name}, no move home: {choice.back}",
        detail="; ".join(lines),
        fix=choice.back.split("to try the move home again: ", 1)[-1] if held else "",
        job=job,
    )


def _with_choice(jp: JobPlan, ls: Any, choice: Choice, live: LiveState, record: Any) -> JobPlan:
    spec = ls.spec
    lines = _place_lines(choice)
    if choice.move_to is None:
        findings = list(jp.findings)
        if choice.back:
            findings.append(_back_finding(spec.name, choice, lines + _left_lines(ls, choice, live)))
            return jp.model_copy(update={"findings": findings})
        findings.append(
            Finding(
                code="failover",
                severity="info" if choice.here.serves else "warning",
                summary=f"runs on {choice.here.name}"
                + (
                    f", no move: {choice.held}"
                    if choice.held
                    else ("" if choice.here.serves else ", which cannot serve it, and no fallback can either")
                ),
                detail="; ".join(lines + _left_lines(ls, choice, live)),
                fix=(
                    "raise budget.max_hourly_usd, or pick a cheaper fallback (GPU, storage, IP), or release what "
                    "stays billing where it was"
                    if choice.held
                    else ""
                    if choice.here.serves
                    else "wait for capacity, or add a fallback entry that can serve"
                ),
                job=spec.name,
            )
        )
        return jp.model_copy(update={"findings": findings})
    to = choice.move_to
    ck_file, ck_step = newest_verified(record)
    carry = (
        f"carries {ck_file} (step {ck_step}), verified here, into {spec.checkpoint.dir} on {to.platform}"
        if ck_file and spec.checkpoint is not None
        else "carries no checkpoint (none verified here yet): the run starts from step 0 there"
    )
    left = left_behind(live, spec.name, ls.project, choice.here.platform)
    kept = kept_meters(live, left, choice.here.platform)
    starts = (
        [
            MeterLine(
                what=f"{to.offer}",
                usd_per_hour=to.usd_per_hour,
                usd_per_month=round(to.usd_per_hour * 730, 2),
                source=f"{to.platform} catalog",
            )
        ]
        if to.usd_per_hour is not None
        else []
    )
    kept_month = round(sum(m.usd_per_month for m in kept), 2)
    keeps_text = (
        f"keeps {len(left)} {choice.here.platform} resource(s) ({', '.join(r.name + ' ' + r.kind for r in left)}), "
        f"${kept_month:.2f}/month while kept"
        if left
        else f"leaves nothing on {choice.here.platform}"
    )
    move = Action(
        id=move_id(spec.name),
        job=spec.name,
        platform=to.platform,  # type: ignore[arg-type]
        kind=K.MOVE,
        resource_kind="job",
        resource_name=spec.name,
        reasons=[
            f"move {choice.here.name} -> {to.name}: {choice.why}",
            *_carry_lines(ls, carry, choice.here.platform, to.platform),
            keeps_text + "; deleting them is a separate gated action (gpujob apply --release-left)",
            *lines,
        ],
        billing=Billing(
            starts=starts,
            keeps=kept,
            hourly_before=jp.current_usd_per_hour,
            hourly_after=round((to.usd_per_hour or 0.0) + sum(m.usd_per_hour for m in kept), 4),
            summary=f"{to.platform}: {to.offer} starts; "  # the offer names its price
            f"{choice.here.platform}: ${kept_month:.2f}/month kept"
            if starts
            else f"{choice.here.platform}: ${kept_month:.2f}/month kept",
        ),
        data=DataEffect(
            wipes=[],
            irreversible=False,
            checkpoint_safe=True,
            summary=f"destroys nothing; {carry}",
        ),
    )
    # The actions that would wait for the current platform give way to the move (a pull too: it would
    # start a machine there; the move carries what is verified here already).
    # What blocked the old platform (spot-retired) does not block the move away from it.
    findings = [
        f.model_copy(update={"severity": "info", "action_id": None}) if f.code == "spot-retired" else f
        for f in jp.findings
    ]
    return jp.model_copy(
        update={"actions": [move], "findings": findings, "after_usd_per_hour": move.billing.hourly_after}
    )


# The chooser under budget.max_hourly_usd: a move is proposed only where the whole moved job fits the cap
# (its machine, storage and IP there, plus what stays billing where it was), judged by the running rate
# the plan's cap check reads (gpujob.plan.rate), so a plan never promises a move apply would refuse.
def within_cap(
    ls: Any,
    choice: Choice,
    live: Any,
    *,
    now: datetime,
    env: Mapping[str, str],
    jp: Any = None,
    record: Any = None,
    beside: Sequence[Any] = (),
) -> Choice:
    """`choice` when its move fits the cap (or there is no cap, or no move); else the first other
    place that can serve within it; else no move, `held` saying what each would bill. `jp`: the job's
    plan where it runs now (planned here from `live` when not given). `beside`: the plans of what
    bills beside it under the same cap (a sweep queue's sibling queues: the cap is the sweep's sum,
    so the moved queue counts at its new price beside them)."""
    declared = getattr(ls, "declared", None) or ls.spec
    cap = declared.budget.max_hourly_usd
    if choice.move_to is None or cap is None:
        return choice
    from gpujob.cost.rates import usd
    from gpujob.plan.rate import CAP_KEY, over_cap, running_rate

    if jp is None:
        from gpujob.plan.planner import plan_one

        jp = plan_one(ls, live, now=now, env=env)
    first = choice.move_to
    others = [p for p in choice.places if p.serves and p.entry not in (choice.here.entry, first.entry)]
    refused = []
    for to in [first, *([] if choice.failback else others)]:
        option = dataclasses.replace(choice, move_to=to)
        rate = running_rate([moved_plan(jp, ls, option, live, record, now=now, env=env), *beside])
        if not over_cap(rate, cap):
            return option
        refused.append(f"moved to {to.name} it would bill {usd(rate.usd_per_hour)}/h ({rate.parts_text()})")
    held = "; ".join(refused) + f", over {CAP_KEY} {usd(cap)}/h"
    return dataclasses.replace(choice, move_to=None, held=held)


def _carry_lines(ls: Any, carry: str, frm: str, to: str) -> list[str]:
    """A sweep queue's move carries its cells' records and checkpoints (gpujob.failover.queue_carry)."""
    from gpujob.failover.queue_carry import plan_lines, queue_carry

    q = queue_carry(ls)
    return [carry] if q is None else plan_lines(ls, q, frm, to)


def siblings(job: str, plans: Iterable[Any]) -> list[Any]:
    """The plans of the other queues of `job`'s sweep (none for a job that is not a sweep queue)."""
    from gpujob.naming import sweep_of

    mine = sweep_of(job)
    if mine is None:
        return []
    return [p for p in plans if p.job != job and (sweep_of(p.job) or ("", 0))[0] == mine[0]]
