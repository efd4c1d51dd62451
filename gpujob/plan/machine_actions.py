"""The machine's own actions when it exists: the live-vs-desired diff of its attributes, growing its disk,
Paperspace's auto-shutdown timer and static IP, and why a stopped machine is started again.
"""

from __future__ import annotations

from typing import Any

from gpujob import naming
from gpujob.live import LiveResource
from gpujob.plan.builder import add
from gpujob.plan.context import JobContext
from gpujob.plan.diff import diff_fields
from gpujob.plan.model import ActionKind, FieldChange

K = ActionKind


def machine_changes(ctx: JobContext, m: LiveResource) -> list[FieldChange]:
    """Normalised live vs desired attributes of the job's machine, as FieldChanges."""
    spec = ctx.spec
    mc = spec.machine
    live_alias = ctx.live_gpu_alias(m)
    wanted = [g.lower() for g in mc.gpu]
    gpu = live_alias if live_alias and live_alias.lower() in wanted else ctx.desired_gpu_alias or mc.gpu[0]
    if ctx.deadline_replan and ctx.desired_gpu_alias:  # run.deadline re-chose for a stopped machine
        gpu = ctx.desired_gpu_alias
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
            "spot": _desired_spot(ctx, m),
            "network_volume": ctx.volume_name,
        }
        if mc.image is not None:
            live["image"], desired["image"] = m.image, mc.image
        if mc.container_disk_gb is not None:
            live["container_disk_gb"], desired["container_disk_gb"] = (
                m.container_disk_gb,
                mc.container_disk_gb,
            )
    elif mc.template is not None:
        template = _live_template(ctx, m)
        if template is not None:  # unknown is not a difference: it would replace (and wipe) the machine
            live["template"], desired["template"] = template, mc.template
    size = spec.storage.volume_gb
    if spec.platform == "paperspace":
        disk = _live_disk(ctx, m, size)
        if size is not None and disk is not None and size > disk:  # disks only grow
            live["volume_gb"], desired["volume_gb"] = disk, size
    elif size is not None:
        live["volume_gb"], desired["volume_gb"] = m.volume_gb, size
    if m.kind in naming.GROUP_KINDS:  # a multi-node group's shape is fixed at create: any change replaces it
        live["nodes"], desired["nodes"] = len(m.nodes), mc.nodes
        return diff_fields(live, desired, updatable={})  # type: ignore[arg-type]
    return diff_fields(live, desired)  # type: ignore[arg-type]


def _desired_spot(ctx: JobContext, m: LiveResource) -> bool:
    """`prefer` keeps what the pod is (it never replaces a pod to change its pricing), except a stopped
    spot pod that can no longer resume as spot (RunPod's spot API is gone and v2 will not start it as
    on-demand): that one is replaced by an on-demand pod on the same storage."""
    want = ctx.spec.machine.spot
    if ctx.deadline_replan and ctx.spot_choice is not None:  # run.deadline re-chose for a stopped pod
        return ctx.spot_choice
    if want == "prefer":
        return m.spot and (ctx.spot_gone is None or m.status != "stopped")
    return bool(want)


def _launch_record(ctx: JobContext, m: LiveResource) -> Any:
    rec = ctx.launch_record
    return rec if rec is not None and rec.resource_id == m.id else None


def _live_template(ctx: JobContext, m: LiveResource) -> str | None:
    """The machine's template, from the launch record: a Paperspace machine object has no templateId.
    The name as written and the id it resolved to are the same template."""
    wanted = ctx.spec.machine.template
    rec = _launch_record(ctx, m)
    if rec is not None:
        return (
            wanted if wanted is not None and rec.template_matches(wanted) else rec.template or rec.template_id
        )
    if m.template is not None and m.template in (wanted, m.attributes.get("template_name")):
        return wanted
    return m.template


def _live_disk(ctx: JobContext, m: LiveResource, wanted: int | None) -> int | None:
    """The disk size the machine was created or grown with (launch record). storageTotal is what the OS
    sees, not the diskSize: it prices the plan but is never diffed, or every plan would 'grow' the disk."""
    rec = _launch_record(ctx, m)
    if rec is not None and rec.disk_gb is not None:
        return int(rec.disk_gb)
    if m.attributes.get("disk_gb_source") != "storageTotal":
        return m.volume_gb
    if wanted is not None and m.volume_gb != wanted:
        ctx.findings.append(
            ctx.finding(
                "disk-unknown",
                "info",
                f"machine {m.name} reports about {m.volume_gb} GB of storage; gpujob has no record of the disk "
                f"size it was created with, so storage.volume_gb: {wanted} is not applied",
                detail="Paperspace machine objects carry no diskSize; gpujob records it when it creates the "
                "machine (launches/ in gpujob's state). This machine was created elsewhere or that record is gone.",
                fix="grow the disk in the Paperspace console, or keep gpujob's state between runs (docs/team-state.md)",
                key="storage.volume_gb",
            )
        )
    return None


def _hours(h: float | None) -> str:
    return "off" if not h else f"{h:g}h"


def grow_actions(ctx: JobContext, m: LiveResource, changes: list[FieldChange], dep: str | None) -> list[str]:
    ids = []
    for c in changes:
        if c.path == "volume_gb":
            a = add(
                ctx,
                K.UPDATE,
                ctx.machine_kind,
                m.name,
                resource_id=m.id,
                reasons=[
                    f"grow the volume in place from {c.before} GB to {c.after} GB",
                    _grow_effect(ctx, m),
                ],
                changes=[c],
                after=ctx.fp.with_(volume_gb=c.after),
                depends_on=[dep],
            )
            ids.append(a.id)
    return ids


def _grow_effect(ctx: JobContext, m: LiveResource) -> str:
    relaunch = "; the run relaunches from its latest checkpoint" if ctx.spec.run is not None else ""
    if ctx.spec.platform == "runpod":
        # PATCH /v2/pods/{id} with the full mounts.persistent {size, path}: editing a pod resets it.
        if m.status != "running":
            return "PATCH /v2/pods/{id} mounts.persistent while the pod is stopped, before it starts"
        return (
            "PATCH /v2/pods/{id} mounts.persistent restarts the container: the container disk is wiped"
            + relaunch
        )
    # PUT /v1/machines/{id} {diskSize} is accepted only with the machine off (Metaphysic provider).
    if m.status == "running":
        return (
            "the machine is stopped for the resize (PUT diskSize needs it off) and started again" + relaunch
        )
    return "PUT /v1/machines/{id} diskSize while the machine is off"


def auto_shutdown_action(ctx: JobContext, m: LiveResource, dep: str | None) -> None:
    """Paperspace toggles auto-shutdown in place (PUT /machines/{id}); a new timer is applied as
    disable then enable, the only sequence that reliably takes (REFERENCE §0.6)."""
    mc = ctx.spec.machine
    if ctx.spec.platform != "paperspace" or mc.auto_shutdown is None:
        return
    want = mc.auto_shutdown.total_seconds() / 3600
    if m.auto_shutdown_hours == want:
        return
    add(
        ctx,
        K.UPDATE,
        ctx.machine_kind,
        m.name,
        resource_id=m.id,
        index="auto_shutdown",
        reasons=[
            f"auto-shutdown is {_hours(m.auto_shutdown_hours)}, the spec says {_hours(want)}: "
            "set in place (disable, then enable with the new timer)"
        ],
        changes=[FieldChange(path="auto_shutdown_hours", before=m.auto_shutdown_hours, after=want)],
        depends_on=[dep],
    )


def static_ip_actions(ctx: JobContext, m: LiveResource) -> None:
    if ctx.spec.platform != "paperspace" or ctx.spec.machine.public_ip is None:
        return
    want = ctx.spec.machine.public_ip == "static"
    if want and not ctx.fp.static_ip:
        add(
            ctx,
            K.CREATE,
            "public_ip",
            f"{m.name}-ip",
            reasons=["public_ip: static; claim a static IP and assign it to the machine"]
            + (
                # The IP type is only known to switch with the machine off (REFERENCE §0.6).
                [
                    "the machine is stopped for the switch and started again; the run relaunches from its latest checkpoint"
                ]
                if m.status == "running"
                else []
            ),
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


def stopped_reason(ctx: JobContext, m: LiveResource) -> tuple[list[str], bool]:
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
