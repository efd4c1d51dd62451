"""The per-state planning rules: which actions a job needs, in apply order (volume before the pod that
mounts it, pull before anything that deletes checkpoints). Money and data effects come from builder.add().
"""

from __future__ import annotations

from gpujob.images import cuda_from_tag
from gpujob.plan import action_findings as af
from gpujob.plan.builder import add, stop, terminate
from gpujob.plan.checkpoint_actions import launch_run, pull_checkpoints, push_checkpoints
from gpujob.plan.context import JobContext
from gpujob.plan.machine_actions import (
    auto_shutdown_action,
    grow_actions,
    machine_changes,
    static_ip_actions,
    stopped_reason,
)
from gpujob.plan.model import ActionKind
from gpujob.plan.replace import machine_forced
from gpujob.plan.volume_actions import network_volume_action, without_volume

K = ActionKind
__all__ = ["plan_absent", "plan_parked", "plan_running", "plan_stopped"]

# --- rules per desired state -----------------------------------------------------------------


def plan_running(ctx: JobContext) -> None:
    spec, m = ctx.spec, ctx.machine
    nv_dep = network_volume_action(ctx)
    machine_fp = ctx.fp.with_(
        machine="running",
        gpu=ctx.desired_gpu,
        container_disk_gb=spec.machine.container_disk_gb,
        volume_gb=spec.storage.volume_gb,
        static_ip=ctx.fp.static_ip or spec.machine.public_ip == "static",
        dynamic_ip=spec.platform == "paperspace" and spec.machine.public_ip in (None, "dynamic"),
    )
    if m is None:
        from gpujob.layout.storage import shared

        # a sweep's shared volume is the sweep's: it proves nothing of this queue's machine (never created)
        volume = [ctx.volume] if ctx.volume is not None and not shared(spec) else []
        evidence = [r.name for r in volume + ctx.ips + ctx.snapshots]
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
        if spec.machine.nodes > 1:
            reasons.append(af.nodes_reason(ctx))
        cuda = cuda_from_tag(spec.machine.image) if spec.platform == "runpod" else None
        if cuda:
            reasons.append(f"host filter: CUDA {cuda} or newer, read from the image's tag (RP9)")
        from gpujob.layout.storage import shared_volume_reason

        reasons += shared_volume_reason(ctx)
        from gpujob.plan.waiting import create_reasons

        reasons += create_reasons(ctx)
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
    elif forcing and ctx.deadline_replan:
        reasons.append(ctx.deadline_replan)
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
        reasons, fired = stopped_reason(ctx, m)
        grown = grow_actions(
            ctx, m, changes, None
        )  # while it is off: no restart, and Paperspace needs it off
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
        auto_shutdown_action(ctx, m, a.id)
        launch_run(ctx, a.id)
        return
    if changes:
        grow_actions(ctx, m, changes, None)
    auto_shutdown_action(ctx, m, None)
    static_ip_actions(ctx, m)


def plan_stopped(ctx: JobContext) -> None:
    m = ctx.machine
    if m is None or m.status == "stopped":
        return
    stop(ctx, m, f"state: stopped; {ctx.machine_kind} {m.name} is {m.raw_status or m.status}")


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
    terminate(
        ctx,
        m,
        [
            f"state: parked; terminate the {ctx.machine_kind} and keep {where}, which holds checkpoint.dir: "
            "the meter of the pod stops for good, the data stays (the safe park, unlike stop: RP4, RP8)",
            "state: running later creates a fresh pod on the same volume, in its data center",
        ],
        count_ips=False,
    )


def plan_absent(ctx: JobContext) -> None:
    m, spec = ctx.machine, ctx.spec
    pull_id = (
        pull_checkpoints(ctx, ctx.teardown_verb) if m is not None and spec.checkpoint is not None else None
    )
    term_id = None
    from gpujob.layout.storage import shared, shared_volume_gate_reason

    if m is not None:
        # a sweep's shared volume is looked at by its own delete, once every queue pod is gone
        volume_goes = ctx.volume is not None and m.network_volume_id == ctx.volume.id and not shared(spec)
        term_id = terminate(
            ctx,
            m,
            [
                f"state: absent; {ctx.teardown_verb} stops the {ctx.machine_kind}'s meters for good",
                af.gate_reason(ctx, m, volume_goes=volume_goes),
            ],
            pull_id=pull_id,
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
            after=without_volume(ctx, v),
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
