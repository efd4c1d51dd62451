"""The per-state planning rules: which actions a job needs, in apply order (volume before the pod that
mounts it, pull before anything that deletes checkpoints). Money and data effects come from builder.add().
"""

from __future__ import annotations

from typing import Any

from gpujob.images import cuda_from_tag
from gpujob.invariant import present
from gpujob.live import LiveResource
from gpujob.plan import action_findings as af
from gpujob.plan.builder import add, noop, noop_reason
from gpujob.plan.context import JobContext
from gpujob.plan.diff import diff_fields
from gpujob.plan.model import ActionKind, FieldChange
from gpujob.plan.replace import machine_forced

K = ActionKind
__all__ = [
    "launch_run",
    "machine_changes",
    "noop",
    "noop_reason",
    "plan_absent",
    "plan_parked",
    "plan_running",
    "plan_stopped",
    "pull_checkpoints",
    "push_checkpoints",
]

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
        dynamic_ip=spec.platform == "paperspace" and spec.machine.public_ip in (None, "dynamic"),
    )
    if m is None:
        evidence = [r.name for r in ([ctx.volume] if ctx.volume else []) + ctx.ips + ctx.snapshots]
        reasons = [f"{ctx.machine_kind} {ctx.machine_name} does not exist"]
        if evidence or ctx.pull_record is not None:
            reasons[0] += (
                " but the job's other resources do: it was parked (state: parked), or deleted outside gpujob "
                "(console, low balance or cleanup)"
            )
        if ctx.desired_gpu_alias:
            reasons.append(
                f"GPU: {ctx.desired_gpu_alias} ×{spec.machine.gpu_count} (first candidate with a price and stock)"
            )
        cuda = cuda_from_tag(spec.machine.image) if spec.platform == "runpod" else None
        if cuda:
            reasons.append(f"host filter: CUDA {cuda} or newer, read from the image's tag (RP9)")
        from gpujob.sweep.storage import shared_volume_reason

        reasons += shared_volume_reason(ctx)
        a = add(
            ctx,
            K.CREATE,
            ctx.machine_kind,
            ctx.machine_name,
            reasons=reasons,
            after=machine_fp,
            drift=bool(evidence),
            depends_on=[nv_dep],
        )
        from gpujob.plan.seed import seed_checkpoints

        launch_run(ctx, seed_checkpoints(ctx, a.id) or a.id)
        return
    changes = machine_changes(ctx, m)
    forcing = [c for c in changes if c.forces_replacement]
    reasons = []
    if forcing and [c.path for c in forcing] == ["spot"] and ctx.spot_gone and spec.machine.spot == "prefer":
        reasons.append(
            f"the stopped spot pod cannot resume: RunPod's spot API is gone ({ctx.spot_gone}) and REST v2 "
            "will not start a spot pod as on-demand; spot: prefer makes it an on-demand pod on the same storage"
        )
    elif forcing:
        culprits = ", ".join(c.path for c in forcing)
        reasons.append(
            f"{culprits} cannot change on an existing {ctx.machine_kind}: terminate and create again"
        )
    elif machine_forced(ctx):
        reasons.append(str(machine_forced(ctx)))
    elif m.status == "stopped" and m.attributes.get("host_lost_gpu"):
        reasons.append(
            f"RP1: the last start of {m.name} found no free GPU on its host (see the journal in gpujob's state), so starting "
            "it again would fail the same way: replace it on a fresh host"
        )
    elif m.status == "stopped" and m.attributes.get("host_faulty"):
        reasons.append(
            f"the preflight stopped {m.name} as unfit to train on ({m.attributes['host_faulty']}): the fault is "
            "the host's, so replace it on a fresh host"
        )
    if reasons:
        pull_id = pull_checkpoints(ctx, "replace") if af.ckpts_on_machine(ctx, m) else None
        a = add(
            ctx,
            K.REPLACE,
            ctx.machine_kind,
            m.name,
            resource_id=m.id,
            reasons=[*reasons, af.gate_reason(ctx, m, volume_goes=False)],
            after=machine_fp,
            changes=changes,
            drift=not forcing and not machine_forced(ctx),
            depends_on=[pull_id, nv_dep],
            findings=lambda aid: af.replace_findings(ctx, aid, forcing),
        )
        push_id = push_checkpoints(ctx, a.id) if pull_id is not None else None
        launch_run(ctx, push_id or a.id)
        return
    if m.status == "stopped":
        reasons, fired = _stopped_reason(ctx, m)
        grown = _grow(ctx, m, changes, None)  # while it is off: no restart, and Paperspace needs it off
        a = add(
            ctx,
            K.START,
            ctx.machine_kind,
            m.name,
            resource_id=m.id,
            reasons=reasons,
            after=ctx.fp.with_(machine="running"),
            drift=True,
            depends_on=[nv_dep, *grown],
            findings=lambda aid: af.start_findings(ctx, aid, fired),
        )
        _auto_shutdown(ctx, m, a.id)
        launch_run(ctx, a.id)
        return
    if changes:
        _grow(ctx, m, changes, None)
    _auto_shutdown(ctx, m, None)
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
        reasons=[
            f"state: stopped; {ctx.machine_kind} {m.name} is {m.raw_status or m.status}",
            *af.stop_reason(ctx),
        ],
        after=ctx.fp.with_(machine="stopped"),
        findings=lambda aid: af.stop_findings(ctx, aid),
    )


def plan_parked(ctx: JobContext) -> None:
    """The cheapest state that keeps the checkpoints on the platform. RunPod: terminate the pod (its GPU
    and disks stop billing; a stopped pod would bill its volume disk at 2×, RP4, and be deleted after
    ~30 days, RP8) and keep the network volume the checkpoints are on. Paperspace: power the machine
    off; its disk and static IP go on billing (PS1), which is the price of keeping the data."""
    m = ctx.machine
    if ctx.spec.platform != "runpod":
        plan_stopped(ctx)
        return
    if ctx.volume is None and ctx.spec.storage.network_volume is not None and m is None:
        return  # nothing exists: nothing to park, and nothing is created to be parked
    if m is None:
        return
    v = ctx.volume
    where = f"network volume {v.name}" if v else "the network volume"
    add(
        ctx,
        K.TERMINATE,
        ctx.machine_kind,
        m.name,
        resource_id=m.id,
        reasons=[
            f"state: parked; terminate the {ctx.machine_kind} and keep {where}, which holds checkpoint.dir: "
            "the meter of the pod stops for good, the data stays (the safe park, unlike stop: RP4, RP8)",
            "state: running later creates a fresh pod on the same volume, in its data center",
        ],
        after=ctx.fp.with_(machine=None, gpu=None, container_disk_gb=None, volume_gb=None),
        findings=lambda aid: af.teardown_findings(ctx, aid),
    )


def plan_absent(ctx: JobContext) -> None:
    m, spec = ctx.machine, ctx.spec
    pull_id = (
        pull_checkpoints(ctx, ctx.teardown_verb) if m is not None and spec.checkpoint is not None else None
    )
    term_id = None
    from gpujob.sweep.storage import shared, shared_volume_gate_reason

    if m is not None:
        # a sweep's shared volume is looked at by its own delete, once every queue pod is gone
        volume_goes = ctx.volume is not None and m.network_volume_id == ctx.volume.id and not shared(spec)
        term_id = add(
            ctx,
            K.TERMINATE,
            ctx.machine_kind,
            m.name,
            resource_id=m.id,
            reasons=[
                f"state: absent; {ctx.teardown_verb} stops the {ctx.machine_kind}'s meters for good",
                af.gate_reason(ctx, m, volume_goes=volume_goes),
            ],
            after=ctx.fp.with_(
                machine=None, gpu=None, container_disk_gb=None, volume_gb=None, static_ip=bool(ctx.ips)
            ),
            depends_on=[pull_id],
            findings=lambda aid: af.teardown_findings(ctx, aid),
        ).id
    for v in [x for x in [ctx.volume, *ctx.stale_volumes] if x is not None]:
        add(
            ctx,
            K.DELETE_VOLUME,
            "network_volume",
            v.name,
            resource_id=v.id,
            reasons=[
                "state: absent; a network volume outlives its pods and bills until deleted",
                shared_volume_gate_reason(ctx)
                or af.volume_gate_reason(
                    ctx, v, m.name if m is not None and m.network_volume_id == v.id else None
                ),
            ],
            after=_without_volume(ctx, v),
            depends_on=[term_id, pull_id],
            index=v.id if len(ctx.stale_volumes) else "",
            findings=lambda aid: af.volume_without_pull(ctx, aid, pull_id),
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


def _without_volume(ctx: JobContext, v: LiveResource) -> Any:
    """The footprint once volume `v` is deleted: the spec's volume, or one of the extras (orphans)."""
    if v is ctx.volume:
        return ctx.fp.with_(network_volume=None)
    return ctx.fp.with_(extra_volumes=tuple(x for x in ctx.fp.extra_volumes if x[0] != v.name))


def _network_volume(ctx: JobContext) -> str | None:
    nv = ctx.spec.storage.network_volume
    if ctx.spec.platform != "runpod" or nv is None:
        return None
    from gpujob.sweep.storage import holds_volume, shared_volume_findings

    ctx.findings += shared_volume_findings(ctx)
    if not holds_volume(ctx.spec, getattr(ctx.loaded, "sweep", None)):
        return None  # queue 1 of the sweep creates, grows and deletes it; this queue's pod mounts it
    name = ctx.volume_name or nv.name
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
    return diff_fields(live, desired)  # type: ignore[arg-type]


def _desired_spot(ctx: JobContext, m: LiveResource) -> bool:
    """`prefer` keeps what the pod is (it never replaces a pod to change its pricing), except a stopped
    spot pod that can no longer resume as spot (RunPod's spot API is gone and v2 will not start it as
    on-demand): that one is replaced by an on-demand pod on the same storage."""
    want = ctx.spec.machine.spot
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


def _grow(ctx: JobContext, m: LiveResource, changes: list[FieldChange], dep: str | None) -> list[str]:
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


def _auto_shutdown(ctx: JobContext, m: LiveResource, dep: str | None) -> None:
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


def launch_run(
    ctx: JobContext, machine_action: str | None, *, first: str | None = None, resume: str | None = None
) -> None:
    """The LAUNCH of the run; `first` leads the reasons when the launch comes from a run fact."""
    run, ck = ctx.spec.run, ctx.spec.checkpoint
    if run is None:
        return
    reasons = [first] if first else []
    from gpujob.sweep.expand import shown_command

    reasons.append(
        f"sync {run.sync.src} to {run.sync.dest}, then run `{shown_command(ctx.job, run.command)}` "
        f"detached ({run.detach})"
    )
    from gpujob.sweep.shown import cell_lines

    cells = cell_lines(getattr(ctx.loaded, "sweep", None))
    reasons += cells  # a sweep queue: each cell's command, values and checkpoint dir
    if resume:
        reasons.append(resume)
    elif ck is not None and not cells:
        reasons.append(f"the command resumes from the latest checkpoint in {ck.dir}")
    old = previous_ck_dir(ctx)
    if ck is not None and old is not None:
        reasons.append(
            f"checkpoint.dir changed from {old}: checkpoints still there move into {ck.dir} before the run "
            "starts (only into an empty dir; each copy read back before the original goes), so training "
            "continues from its step"
        )
    if run.secrets:
        reasons.append(f"secrets passed over SSH by name: {', '.join(run.secrets)}")
    m = ctx.machine if machine_action is None else None  # launched on the machine there is now
    fact = ctx.live.runs.get(ctx.job)
    if (
        ck is not None
        and fact is not None
        and fact.push_from
        and not any(a.kind is K.PUSH for a in ctx.actions)
    ):
        # A replace of an earlier apply erased the checkpoints' disk and the apply died before the push.
        machine_action = push_checkpoints(
            ctx,
            machine_action,
            first=f"an earlier apply replaced {fact.push_from} and stopped before this push",
        )
    add(
        ctx,
        K.LAUNCH,
        "run",
        ctx.machine_name,
        resource_id=m.id if m else None,
        reasons=reasons,
        depends_on=[machine_action],
    )


def previous_ck_dir(ctx: JobContext) -> str | None:
    """The checkpoint dir the last run wrote, when the job file now names another one."""
    ck = ctx.spec.checkpoint
    if ck is None:
        return None
    fact = ctx.live.runs.get(ctx.job)
    old = (fact.checkpoint_dir if fact is not None else None) or _get(ctx.pull_record, "remote_dir")
    return str(old) if old and str(old).rstrip("/") != ck.dir.rstrip("/") else None


def pull_checkpoints(ctx: JobContext, before_what: str, *, first: str | None = None) -> str:
    ck = ctx.spec.checkpoint
    ck = present(ck, "the checkpoint block of a job that pulls")
    reasons = [first] if first else []
    reasons.append(f"copy {ck.dir} to {ck.pull_to} and verify it before the {before_what}")
    rec = ctx.pull_record
    if rec is None:
        reasons.append("no pull on record: the teardown gate needs a verified pull of the latest checkpoint")
    else:
        reasons.append(_describe_record(rec))
    m = ctx.machine
    return add(ctx, K.PULL, "checkpoints", ck.dir, resource_id=m.id if m else None, reasons=reasons).id


def push_checkpoints(ctx: JobContext, replace_id: str | None, *, first: str | None = None) -> str:
    """After a replace erased the checkpoints' disk: carry the final pull's verified copies onto the new
    machine's checkpoint.dir before its run starts, so training continues from its step."""
    ck = ctx.spec.checkpoint
    ck = present(ck, "the checkpoint block of a job that pulls")
    kind = ctx.machine_kind
    reasons = [first] if first else []
    reasons += [
        f"carry the checkpoints across: the verified copies of the final pull go from {ck.pull_to} into "
        f"{ck.dir} on the new {kind} before its run starts, so training continues from its step",
    ]
    rec = ctx.pull_record
    files = [f for f in (_get(rec, "files") or []) if f.name in (_get(rec, "remote_files") or {})]
    if files:
        size = sum(f.size for f in files)
        reasons.append(
            f"{len(files)} file(s), {human_bytes(size)} as of the last pull; the final pull before the "
            "replace decides the exact set"
        )
    else:
        reasons.append("size known after the final pull before the replace (no pull on record yet)")
    return add(ctx, K.PUSH, "checkpoints", ck.dir, reasons=reasons, depends_on=[replace_id]).id


def human_bytes(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


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
