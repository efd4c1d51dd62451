"""Appending an action: every action goes through `add()`, which reads its billing change off the job's
footprint before and after it and its data effect off the profile's survival matrix, so no planning
rule computes money or data loss itself.
"""

from __future__ import annotations

from collections.abc import Callable

from gpujob.cost.rates import Footprint, billing
from gpujob.live import LiveResource, booting
from gpujob.plan import action_findings as af
from gpujob.plan import capability
from gpujob.plan.context import JobContext, live_ck_tier, path_tier, tier_title, tiers_in_use
from gpujob.plan.findings import by_severity
from gpujob.plan.model import GATED, Action, ActionKind, DataEffect, FieldChange, Finding

K = ActionKind


def add(
    ctx: JobContext,
    kind: ActionKind,
    resource_kind: str,
    resource_name: str,
    *,
    reasons: list[str],
    after: Footprint | None = None,
    resource_id: str | None = None,
    changes: list[FieldChange] | None = None,
    drift: bool = False,
    depends_on: list[str | None] | None = None,
    index: str = "",
    findings: Callable[[str], list[Finding]] | None = None,
) -> Action:
    from gpujob.naming import action_prefix

    action_id = f"{action_prefix(ctx.job)}.{resource_kind}{f'[{index}]' if index else ''}.{kind.value}"
    before = ctx.fp
    after = before if after is None else after
    action = Action(
        id=action_id,
        job=ctx.job,
        platform=ctx.spec.platform,
        kind=kind,
        resource_kind=resource_kind,
        resource_name=resource_name,
        resource_id=resource_id,
        reasons=reasons,
        changes=changes or [],
        drift=drift,
        billing=billing(before, after, ctx.profile),
        data=data_effect(ctx, kind, before),
        findings=by_severity(findings(action_id)) if findings else [],
        depends_on=[d for d in (depends_on or []) if d],
        gated=kind in GATED,
    )
    ctx.fp = after
    ctx.actions.append(action)
    return action


def noop(ctx: JobContext, reason: str, *, drift: bool = False) -> Action:
    name, rid = (ctx.machine.name, ctx.machine.id) if ctx.machine else (ctx.machine_name, None)
    return add(ctx, K.NOOP, ctx.machine_kind, name, resource_id=rid, reasons=[reason], drift=drift)


def noop_reason(ctx: JobContext) -> str:
    m, state = ctx.machine, ctx.spec.state
    if state == "absent":
        return "nothing of this job exists; nothing to destroy"
    if m is None and state == "parked":
        kept = f"network volume {ctx.volume.name} keeps the checkpoints" if ctx.volume else "nothing exists"
        return f"parked: no {ctx.machine_kind} runs; {kept}"
    if m is None:
        return f"no {ctx.machine_kind} exists and state: {state} creates none"
    if state in ("stopped", "parked"):
        return f"{ctx.machine_kind} {m.name} is already stopped"
    if m.status == "pending" and not booting(m):
        return f"{ctx.machine_kind} {m.name} is {m.raw_status}: plan again once it is off, to start it again"
    if m.status == "pending":
        return (
            f"{ctx.machine_kind} {m.name} is still starting ({m.raw_status or m.status}) and matches the spec"
        )
    return f"{ctx.machine_kind} {m.name} is running and matches the spec"


# --- data effects ----------------------------------------------------------------------------


def _outputs_on_volume(ctx: JobContext) -> str:
    if ctx.spec.outputs is None:
        return ""
    line = _effect_lines(ctx, lambda tier: not tier.startswith("network_volume"))
    return "" if line.endswith("survive") else line


def _effect_lines(ctx: JobContext, survives: Callable[[str], bool]) -> str:
    """What the capabilities add to a data effect (e.g. gpujob.outputs: outputs lost unless pulled)."""
    return "".join(cap.data_effect_line(ctx, survives) for cap in capability.of(ctx))


def terminate(
    ctx: JobContext,
    m: LiveResource,
    reasons: list[str],
    *,
    pull_id: str | None = None,
    count_ips: bool = True,
) -> Action:
    """The job's machine ends for good: its GPU and its disks leave the footprint, and with `count_ips`
    the footprint's static IP is whether the job still holds one; the gate judges it (teardown findings)."""
    after = ctx.fp.with_(machine=None, gpu=None, container_disk_gb=None, volume_gb=None)
    if count_ips:
        after = after.with_(static_ip=bool(ctx.ips))
    return add(
        ctx,
        K.TERMINATE,
        ctx.machine_kind,
        m.name,
        resource_id=m.id,
        reasons=reasons,
        after=after,
        depends_on=[pull_id],
        findings=lambda aid: af.teardown_findings(ctx, aid),
    )


def stop(ctx: JobContext, m: LiveResource, reason: str) -> Action:
    """The job's machine stops, its disk kept: `reason` first, then what the stop does to it
    (af.stop_reason); the stop findings judge it."""
    return add(
        ctx,
        K.STOP,
        ctx.machine_kind,
        m.name,
        resource_id=m.id,
        reasons=[reason, *af.stop_reason(ctx)],
        after=ctx.fp.with_(machine="stopped"),
        findings=lambda aid: af.stop_findings(ctx, aid),
    )


def data_effect(ctx: JobContext, kind: ActionKind, before: Footprint) -> DataEffect:
    spec, profile = ctx.spec, ctx.profile
    ck = spec.checkpoint
    ck_tier = path_tier(spec, ck.dir) if ck else None
    verb = {K.STOP: "stop", K.TERMINATE: "terminate", K.REPLACE: "terminate"}.get(kind)
    if verb is not None:
        ck_tier = live_ck_tier(ctx)  # the machine that exists now, not the one the spec describes
        wipes = [t for t in tiers_in_use(spec, before) if not profile.survives(t, verb)]
        safe = profile.survives(ck_tier, verb) if ck_tier else None
        names = [tier_title(profile, t) for t in wipes]
        text = f"wipes {', '.join(names)}" if names else "wipes nothing"
        if before.nodes > 1:  # a multi-node job: the verb reaches every node's disks at once
            text += f" on every one of its {before.nodes} nodes"
        if kind is not K.STOP:
            text += " (irreversible)"
        if ck is not None and ck_tier is not None:
            where = tier_title(profile, ck_tier)
            text += f"; checkpoint.dir {ck.dir} is on the {where}: " + (
                "survives" if safe else "LOST unless pulled"
            )
            if before.nodes > 1 and not safe:
                text += " (the gate pulls and verifies the writers' files first)"
        if spec.outputs is not None:
            text += _effect_lines(ctx, lambda t: profile.survives(t, verb))
        return DataEffect(wipes=names, irreversible=kind is not K.STOP, checkpoint_safe=safe, summary=text)
    if kind is K.DELETE_VOLUME:
        on_it = ck_tier is not None and ck_tier.startswith("network_volume")
        return DataEffect(
            wipes=["network volume"],
            irreversible=True,
            checkpoint_safe=not on_it if ck else None,
            summary="deletes the volume and every file on it (irreversible)"
            + ("; checkpoint.dir is on it" if on_it else "")
            + _outputs_on_volume(ctx),
        )
    if kind is K.DELETE_SNAPSHOT:
        return DataEffect(
            wipes=["snapshot"], irreversible=True, summary="deletes the snapshot (irreversible)"
        )
    if kind is K.RELEASE_IP:
        return DataEffect(
            irreversible=True, summary="the address goes back to the pool; a new one will differ"
        )
    if kind is K.UPDATE:
        return DataEffect(irreversible=True, summary="grow-only: the volume can never be shrunk back")
    if kind is K.START and spec.platform == "runpod":
        return DataEffect(summary="the container disk starts empty; only the volume mount kept its files")
    if kind is K.PULL and ck is not None:
        return DataEffect(summary=f"copies {ck.dir} to {ck.pull_to} and verifies each file; deletes nothing")
    if kind is K.PUSH and ck is not None:
        return DataEffect(
            summary=f"copies the verified checkpoints from {ck.pull_to} into {ck.dir}; deletes nothing"
        )
    if kind is K.RELAUNCH and spec.run is not None:
        return DataEffect(
            summary="SIGTERM to the run and a grace for its final save, then it starts again from its newest "
            f"checkpoint; writes code to {spec.run.sync.dest}; deletes nothing"
        )
    if kind is K.LAUNCH and spec.run is not None:
        return DataEffect(summary=f"writes code to {spec.run.sync.dest}; deletes nothing")
    return DataEffect()
