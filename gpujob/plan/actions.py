"""The per-state planning rules: which actions a job needs, in apply order, with their consequences.

Every action is appended through `add()`, which reads the billing change off the job's footprint
before and after the action and the data effect off the profile's survival matrix, so no rule has
to compute money or data loss itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpujob.live import LiveResource
from gpujob.plan.context import JobContext, path_tier, tier_title, tiers_in_use
from gpujob.plan.cost import Footprint, billing
from gpujob.plan.diff import diff_fields
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
    action_id = f"{ctx.job}.{resource_kind}{f'[{index}]' if index else ''}.{kind.value}"
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
    name, rid = (ctx.machine.name, ctx.machine.id) if ctx.machine else (ctx.spec.resource_name, None)
    return add(ctx, K.NOOP, ctx.machine_kind, name, resource_id=rid, reasons=[reason], drift=drift)


def noop_reason(ctx: JobContext) -> str:
    m, state = ctx.machine, ctx.spec.state
    if state == "absent":
        return "nothing of this job exists; nothing to destroy"
    if m is None:
        return f"no {ctx.machine_kind} exists and state: stopped creates none"
    if state == "stopped":
        return f"{ctx.machine_kind} {m.name} is already stopped"
    return f"{ctx.machine_kind} {m.name} is running and matches the spec"


# --- data effects ----------------------------------------------------------------------------


def data_effect(ctx: JobContext, kind: ActionKind, before: Footprint) -> DataEffect:
    spec, profile = ctx.spec, ctx.profile
    ck = spec.checkpoint
    ck_tier = path_tier(spec, ck.dir) if ck else None
    verb = {K.STOP: "stop", K.TERMINATE: "terminate", K.REPLACE: "terminate"}.get(kind)
    if verb is not None:
        wipes = [t for t in tiers_in_use(spec, before) if not profile.survives(t, verb)]
        safe = profile.survives(ck_tier, verb) if ck_tier else None
        names = [tier_title(profile, t) for t in wipes]
        text = f"wipes {', '.join(names)}" if names else "wipes nothing"
        if kind is not K.STOP:
            text += " (irreversible)"
        if ck is not None and ck_tier is not None:
            where = tier_title(profile, ck_tier)
            text += f"; checkpoint.dir {ck.dir} is on the {where}: " + (
                "survives" if safe else "LOST unless pulled"
            )
        return DataEffect(wipes=names, irreversible=kind is not K.STOP, checkpoint_safe=safe, summary=text)
    if kind is K.DELETE_VOLUME:
        on_it = ck_tier is not None and ck_tier.startswith("network_volume")
        return DataEffect(
            wipes=["network volume"],
            irreversible=True,
            checkpoint_safe=not on_it if ck else None,
            summary="deletes the volume and every file on it (irreversible)"
            + ("; checkpoint.dir is on it" if on_it else ""),
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
    if kind is K.LAUNCH and spec.run is not None:
        return DataEffect(summary=f"writes code to {spec.run.sync.dest}; deletes nothing")
    return DataEffect()


# --- rules per desired state -----------------------------------------------------------------


def plan_running(ctx: JobContext) -> None:
    spec, m = ctx.spec, ctx.machine
    nv_dep = _network_volume(ctx)
    machine_fp = ctx.fp.with_(
        machine="running",
        gpu=ctx.desired_gpu,
        container_disk_gb=spec.machine.container_disk_gb,
        volume_gb=spec.storage.volume_gb,
        static_ip=ctx.fp.static_ip or spec.machine.public_ip == "static",
    )
    if m is None:
        evidence = [r.name for r in ([ctx.volume] if ctx.volume else []) + ctx.ips + ctx.snapshots]
        reasons = [f"{ctx.machine_kind} {spec.resource_name} does not exist"]
        if evidence or ctx.pull_record is not None:
            reasons[0] += (
                " but the job's other resources do: it was deleted outside gpujob (console, low balance or cleanup)"
            )
        if ctx.desired_gpu_alias:
            reasons.append(
                f"GPU: {ctx.desired_gpu_alias} ×{spec.machine.gpu_count} (first candidate with a price and stock)"
            )
        a = add(
            ctx,
            K.CREATE,
            ctx.machine_kind,
            spec.resource_name,
            reasons=reasons,
            after=machine_fp,
            drift=bool(evidence),
            depends_on=[nv_dep],
        )
        _launch(ctx, a.id)
        return
    changes = machine_changes(ctx, m)
    forcing = [c for c in changes if c.forces_replacement]
    if forcing:
        pull_id = _pull(ctx, "replace") if _ckpts_on_machine(ctx, m) else None
        culprits = ", ".join(c.path for c in forcing)
        a = add(
            ctx,
            K.REPLACE,
            ctx.machine_kind,
            m.name,
            resource_id=m.id,
            reasons=[
                f"{culprits} cannot change on an existing {ctx.machine_kind}: terminate and create again"
            ],
            after=machine_fp,
            changes=changes,
            depends_on=[pull_id, nv_dep],
            findings=lambda aid: _replace_findings(ctx, aid, forcing),
        )
        _launch(ctx, a.id)
        return
    if m.status == "stopped":
        reasons, fired = _stopped_reason(ctx, m)
        a = add(
            ctx,
            K.START,
            ctx.machine_kind,
            m.name,
            resource_id=m.id,
            reasons=reasons,
            after=ctx.fp.with_(machine="running"),
            drift=True,
            depends_on=[nv_dep],
            findings=lambda aid: _start_findings(ctx, aid, fired),
        )
        if changes:
            _grow(ctx, m, changes, a.id)
        _launch(ctx, a.id)
        return
    if changes:
        _grow(ctx, m, changes, None)
    _static_ip(ctx, m)


def plan_stopped(ctx: JobContext) -> None:
    m = ctx.machine
    if m is None or m.status == "stopped":
        return
    add(
        ctx,
        K.STOP,
        ctx.machine_kind,
        m.name,
        resource_id=m.id,
        reasons=[f"state: stopped; {ctx.machine_kind} {m.name} is {m.raw_status or m.status}"],
        after=ctx.fp.with_(machine="stopped"),
        findings=lambda aid: _stop_findings(ctx, aid),
    )


def plan_absent(ctx: JobContext) -> None:
    m, spec = ctx.machine, ctx.spec
    pull_id = _pull(ctx, ctx.teardown_verb) if m is not None and spec.checkpoint is not None else None
    term_id = None
    if m is not None:
        term_id = add(
            ctx,
            K.TERMINATE,
            ctx.machine_kind,
            m.name,
            resource_id=m.id,
            reasons=[f"state: absent; {ctx.teardown_verb} stops the {ctx.machine_kind}'s meters for good"],
            after=ctx.fp.with_(
                machine=None, gpu=None, container_disk_gb=None, volume_gb=None, static_ip=bool(ctx.ips)
            ),
            depends_on=[pull_id],
            findings=lambda aid: _teardown_findings(ctx, aid),
        ).id
    for v in [x for x in [ctx.volume, *ctx.stale_volumes] if x is not None]:
        add(
            ctx,
            K.DELETE_VOLUME,
            "network_volume",
            v.name,
            resource_id=v.id,
            reasons=["state: absent; a network volume outlives its pods and bills until deleted"],
            after=ctx.fp.with_(network_volume=None),
            depends_on=[term_id, pull_id],
            index=v.id if len(ctx.stale_volumes) else "",
            findings=lambda aid: _volume_without_pull(ctx, aid, pull_id),
        )
    for ip in ctx.ips:
        add(
            ctx,
            K.RELEASE_IP,
            "public_ip",
            ip.name or ip.public_ip or ip.id,
            resource_id=ip.id,
            reasons=["state: absent; a static IP survives destroy and bills until released (PS1)"],
            after=ctx.fp.with_(static_ip=False),
            depends_on=[term_id],
        )
    for s in ctx.snapshots:
        add(
            ctx,
            K.DELETE_SNAPSHOT,
            "snapshot",
            s.name,
            resource_id=s.id,
            index=s.id,
            reasons=["state: absent; snapshots survive destroy and bill until deleted (PS9)"],
            after=ctx.fp.with_(snapshots=tuple(x for x in ctx.fp.snapshots if x[0] != s.id)),
            depends_on=[term_id, pull_id],
        )


# --- pieces --------------------------------------------------------------------------------


def _network_volume(ctx: JobContext) -> str | None:
    nv = ctx.spec.storage.network_volume
    if ctx.spec.platform != "runpod" or nv is None:
        return None
    name = ctx.spec.volume_resource_name() or nv.name
    v = ctx.volume
    if v is None:
        region = (
            ctx.spec.machine.regions[0] if ctx.spec.machine.regions else "the data center the pod lands in"
        )
        return add(
            ctx,
            K.CREATE,
            "network_volume",
            name,
            reasons=[
                f"network volume {name} does not exist; created in {region} before the pod that mounts it"
            ],
            after=ctx.fp.with_(network_volume=(nv.name, nv.size_gb, nv.tier)),
        ).id
    live_size = v.volume_gb or 0
    if live_size < nv.size_gb:
        return add(
            ctx,
            K.UPDATE,
            "network_volume",
            v.name,
            resource_id=v.id,
            reasons=[f"grow in place from {live_size} GB to {nv.size_gb} GB"],
            changes=[FieldChange(path="size_gb", before=live_size, after=nv.size_gb)],
            after=ctx.fp.with_(network_volume=(nv.name, nv.size_gb, nv.tier)),
        ).id
    if live_size > nv.size_gb:
        ctx.findings.append(
            ctx.finding(
                "drift",
                "warning",
                f"network volume {v.name} is {live_size} GB but the spec says {nv.size_gb} GB: it was grown outside "
                "gpujob, and volumes never shrink",
                fix=f"set storage.network_volume.size_gb: {live_size}",
                key="storage.network_volume.size_gb",
            )
        )
    if (v.volume_tier or "standard") != nv.tier:
        ctx.findings.append(
            ctx.finding(
                "RP7",
                "error",
                f"network volume {v.name} is {v.volume_tier}, the spec says {nv.tier}: the tier is fixed at creation",
                fix="keep the live tier in the spec, or move the data to a new volume with another name",
                key="storage.network_volume.tier",
            )
        )
    return None


def machine_changes(ctx: JobContext, m: LiveResource) -> list[FieldChange]:
    """Normalised live vs desired attributes of the job's machine, as FieldChanges."""
    spec = ctx.spec
    mc = spec.machine
    live_alias = ctx.live_gpu_alias(m)
    wanted = [g.lower() for g in mc.gpu]
    gpu = live_alias if live_alias and live_alias.lower() in wanted else ctx.desired_gpu_alias or mc.gpu[0]
    region = m.region if not mc.regions or m.region in mc.regions else mc.regions[0]
    live: dict[str, object] = {"gpu": live_alias, "gpu_count": m.gpu_count, "region": m.region}
    desired: dict[str, object] = {"gpu": gpu, "gpu_count": mc.gpu_count, "region": region}
    if spec.platform == "runpod":
        nv_name = None
        if m.network_volume_id:
            found = next((r for r in ctx.live.resources if r.id == m.network_volume_id), None)
            nv_name = found.name if found else m.network_volume_id
        live |= {"cloud": m.cloud or "secure", "spot": m.spot, "network_volume": nv_name}
        desired |= {
            "cloud": mc.cloud or "secure",
            "spot": mc.spot,
            "network_volume": spec.volume_resource_name(),
        }
        if mc.image is not None:
            live["image"], desired["image"] = m.image, mc.image
        if mc.container_disk_gb is not None:
            live["container_disk_gb"], desired["container_disk_gb"] = (
                m.container_disk_gb,
                mc.container_disk_gb,
            )
    elif mc.template is not None:
        live["template"], desired["template"] = m.template, mc.template
    size = spec.storage.volume_gb
    if size is not None and not (m.volume_gb and m.volume_gb > size and spec.platform == "paperspace"):
        live["volume_gb"], desired["volume_gb"] = m.volume_gb, size
    if spec.platform == "paperspace" and mc.auto_shutdown is not None:
        want = mc.auto_shutdown.total_seconds() / 3600
        if m.auto_shutdown_hours != want:
            ctx.findings.append(
                ctx.finding(
                    "PS2",
                    "warning",
                    f"machine auto-shutdown is {_hours(m.auto_shutdown_hours)}, the spec says {_hours(want)}",
                    detail="gpujob sets auto-shutdown only when it creates a machine.",
                    fix="change it in the Paperspace console (disable, then enable with the new timer)",
                    key="machine.auto_shutdown",
                )
            )
    return diff_fields(live, desired)  # type: ignore[arg-type]


def _hours(h: float | None) -> str:
    return "off" if not h else f"{h:g}h"


def _grow(ctx: JobContext, m: LiveResource, changes: list[FieldChange], dep: str | None) -> None:
    for c in changes:
        if c.path == "volume_gb":
            add(
                ctx,
                K.UPDATE,
                ctx.machine_kind,
                m.name,
                resource_id=m.id,
                reasons=[f"grow the volume in place from {c.before} GB to {c.after} GB"],
                changes=[c],
                after=ctx.fp.with_(volume_gb=c.after),
                depends_on=[dep],
            )


def _static_ip(ctx: JobContext, m: LiveResource) -> None:
    if ctx.spec.platform != "paperspace" or ctx.spec.machine.public_ip is None:
        return
    want = ctx.spec.machine.public_ip == "static"
    if want and not ctx.fp.static_ip:
        add(
            ctx,
            K.CREATE,
            "public_ip",
            f"{m.name}-ip",
            reasons=["public_ip: static; claim a static IP and assign it to the machine"],
            after=ctx.fp.with_(static_ip=True),
        )
    elif not want:
        for ip in ctx.ips:
            add(
                ctx,
                K.RELEASE_IP,
                "public_ip",
                ip.name or ip.id,
                resource_id=ip.id,
                reasons=[f"public_ip: {ctx.spec.machine.public_ip}; the static IP is no longer wanted"],
                after=ctx.fp.with_(static_ip=False),
            )


def _stopped_reason(ctx: JobContext, m: LiveResource) -> tuple[list[str], bool]:
    h = m.auto_shutdown_hours
    if ctx.spec.platform == "paperspace" and h and m.started_at is not None:
        from datetime import timedelta

        fired = m.started_at + timedelta(hours=h)
        if fired <= ctx.now:
            return [
                f"drift: machine {m.name} is off because its {h:g}h auto-shutdown fired at "
                f"{fired:%Y-%m-%d %H:%M} UTC (started {m.started_at:%Y-%m-%d %H:%M} UTC); the spec wants it running"
            ], True
    return [
        f"drift: {ctx.machine_kind} {m.name} is {m.raw_status or 'stopped'} but the spec wants it running"
    ], False


def _launch(ctx: JobContext, machine_action: str) -> None:
    run, ck = ctx.spec.run, ctx.spec.checkpoint
    if run is None:
        return
    reasons = [f"sync {run.sync.src} to {run.sync.dest}, then run `{run.command}` detached ({run.detach})"]
    if ck is not None:
        reasons.append(f"the command resumes from the latest checkpoint in {ck.dir}")
    if run.secrets:
        reasons.append(f"secrets passed over SSH by name: {', '.join(run.secrets)}")
    add(ctx, K.LAUNCH, "run", ctx.spec.resource_name, reasons=reasons, depends_on=[machine_action])


def _ckpts_on_machine(ctx: JobContext, m: LiveResource) -> bool:
    """Checkpoints sit on a disk that dies with this machine: the spec says so, or (RunPod) the live pod
    has no network volume, so whatever it wrote is on its own volume disk even if the spec now adds one."""
    if ctx.spec.checkpoint is None:
        return False
    return _ck_lost_by(ctx, "terminate") or (ctx.spec.platform == "runpod" and m.network_volume_id is None)


def _ck_lost_by(ctx: JobContext, verb: str) -> bool:
    ck = ctx.spec.checkpoint
    return ck is not None and not ctx.profile.survives(path_tier(ctx.spec, ck.dir), verb)


def _pull(ctx: JobContext, before_what: str) -> str:
    ck = ctx.spec.checkpoint
    assert ck is not None
    reasons = [f"copy {ck.dir} to {ck.pull_to} and verify it before the {before_what}"]
    rec = ctx.pull_record
    if rec is None:
        reasons.append("no pull on record: the teardown gate needs a verified pull of the latest checkpoint")
    else:
        reasons.append(_describe_record(rec))
    m = ctx.machine
    return add(ctx, K.PULL, "checkpoints", ck.dir, resource_id=m.id if m else None, reasons=reasons).id


def _get(rec: object, name: str) -> Any:
    return rec.get(name) if isinstance(rec, dict) else getattr(rec, name, None)


def _describe_record(rec: object) -> str:
    """One line about gpujob.apply.records.PullRecord (read by attribute, so a dict works too)."""
    when = _get(rec, "at")
    files = _get(rec, "files") or []
    verified = sum(1 for f in files if _get(f, "verified"))
    stamp = f"{when:%Y-%m-%d %H:%M} UTC" if hasattr(when, "strftime") else str(when or "unknown time")
    text = f"last pull on record: {stamp}, {len(files)} file(s), {verified} verified"
    missing = rec.missing() if hasattr(rec, "missing") else []
    if missing:
        text += f"; {len(missing)} remote file(s) not pulled since"
    return text


# --- action findings -----------------------------------------------------------------------


def _start_findings(ctx: JobContext, aid: str, fired: bool) -> list[Finding]:
    out = []
    if ctx.spec.platform == "runpod":
        out.append(
            ctx.finding(
                "RP1",
                "warning",
                "a stopped pod is tied to its host: if that GPU was rented meanwhile it starts with zero GPUs",
                fix="if the start finds no GPU, use state: absent then running (fresh host, network volume)",
                action_id=aid,
            )
        )
    if (
        ctx.spec.platform == "paperspace"
        and ctx.machine is not None
        and ctx.machine.public_ip_kind == "dynamic"
    ):
        out.append(
            ctx.finding(
                "PS6",
                "info",
                "the machine's dynamic IP changes on every start; gpujob re-reads it before connecting",
                fix="use public_ip: static for an address that stays (it bills while stopped, PS1)",
                action_id=aid,
            )
        )
    if fired:
        out.append(
            ctx.finding(
                "PS2",
                "warning",
                "the run was cut by the auto-shutdown clock, not by a crash",
                fix="raise machine.auto_shutdown above run.max_runtime (console) and let the run resume",
                key="machine.auto_shutdown",
                action_id=aid,
            )
        )
    return out


def _stop_findings(ctx: JobContext, aid: str) -> list[Finding]:
    out = []
    if ctx.spec.platform == "paperspace":
        if ctx.fp.static_ip:
            out.append(
                ctx.finding(
                    "PS1",
                    "warning",
                    "the static IP keeps billing while the machine is off",
                    fix="state: absent releases it, or use public_ip: dynamic",
                    action_id=aid,
                )
            )
        if ctx.fp.snapshots:
            out.append(
                ctx.finding(
                    "PS9",
                    "warning",
                    f"{len(ctx.fp.snapshots)} snapshot(s) keep billing while the machine is off",
                    fix="delete snapshots you no longer need",
                    action_id=aid,
                )
            )
    return out


def _replace_findings(ctx: JobContext, aid: str, forcing: list[FieldChange]) -> list[Finding]:
    out = []
    if any(c.path == "network_volume" and c.before is None for c in forcing):
        out.append(
            ctx.finding(
                "RP7",
                "warning",
                "a network volume can only be attached when a pod is created, so the pod is replaced",
                detail="Files on the old pod's volume disk are deleted with it; the pull runs first.",
                key="storage.network_volume",
                action_id=aid,
            )
        )
    if ctx.machine is not None and _ckpts_on_machine(ctx, ctx.machine):
        out.append(
            ctx.finding(
                "RP3" if ctx.spec.platform == "runpod" else "checkpoint-tier",
                "warning",
                "replacing deletes the checkpoints on the old machine's disk; they are pulled first",
                key="checkpoint.dir",
                action_id=aid,
            )
        )
    return out


def _teardown_findings(ctx: JobContext, aid: str) -> list[Finding]:
    out = []
    if ctx.spec.checkpoint is None:
        out.append(
            ctx.finding(
                "no-checkpoint",
                "warning",
                f"no checkpoint block: nothing is pulled before the {ctx.teardown_verb}, and its disks are deleted",
                fix="add a checkpoint block, or copy what you need off the machine first",
                action_id=aid,
            )
        )
    if ctx.snapshots:
        out.append(
            ctx.finding(
                "PS9",
                "info",
                "snapshots survive the destroy; they are deleted by their own actions below",
                action_id=aid,
            )
        )
    return out


def _volume_without_pull(ctx: JobContext, aid: str, pull_id: str | None) -> list[Finding]:
    ck = ctx.spec.checkpoint
    if ck is None or pull_id is not None or not path_tier(ctx.spec, ck.dir).startswith("network_volume"):
        return []
    return [
        ctx.finding(
            "RP3",
            "warning",
            "checkpoints on this network volume cannot be pulled: no pod is running to pull them through",
            fix="set state: running and `gpujob pull`, then state: absent",
            key="state",
            action_id=aid,
        )
    ]
