"""Findings attached to one action: the traps a start, stop, replace or teardown walks into."""

from __future__ import annotations

from gpujob.live import LiveResource
from gpujob.plan.cadence import quiesce_grace_s
from gpujob.plan.context import JobContext, live_ck_tier, path_tier
from gpujob.plan.model import FieldChange, Finding


def ckpts_on_machine(ctx: JobContext, m: LiveResource) -> bool:
    """Checkpoints sit on a disk that dies with this machine: the spec says so, or (RunPod) the live pod
    has no network volume, so whatever it wrote is on its own volume disk even if the spec now adds one."""
    if ctx.spec.checkpoint is None:
        return False
    return ck_lost_by(ctx, "terminate") or (ctx.spec.platform == "runpod" and m.network_volume_id is None)


def gate_reason(ctx: JobContext, m: LiveResource, *, volume_goes: bool) -> str:
    """What the teardown gate does right before this terminate / replace (it looks at the disk)."""
    stop = f"the run is stopped first (SIGTERM, up to {quiesce_grace_s(ctx.spec):.0f}s for its final save)"
    ck = ctx.spec.checkpoint
    if ck is None:
        return (
            f"gate: {stop}, then the disk is listed: files left in the last run's checkpoint dir refuse "
            "it (the gate looks at the disk, not at the job file)"
        )
    on_volume = (live_ck_tier(ctx) or "").startswith("network_volume") and m.network_volume_id is not None
    if on_volume and not volume_goes:
        return (
            f"gate: {stop}; {ck.dir} must list on the network volume's mount, where its checkpoints "
            "stay: no pull needed"
        )
    return (
        f"gate: {stop}, then a final pull of {ck.dir} and a new listing right before the call: every "
        "file there must match a verified local copy (name, size, sha256)"
    )


def stop_reason(ctx: JobContext) -> list[str]:
    """What every stop gpujob makes does first (gpujob.apply.quiesce.stop), for a stop's lines."""
    if ctx.spec.run is None:
        return []
    return [
        f"first: SIGTERM to the run and every helper of job {ctx.spec.name}, up to "
        f"{quiesce_grace_s(ctx.spec):.0f}s for their last save, then SIGKILL"
    ]


def volume_gate_reason(ctx: JobContext, v: LiveResource, through: str | None) -> str:
    """How the gate looks into a network volume before deleting it."""
    if through is not None:
        return f"gate: checked against the final pull the terminate above makes through {through}"
    price = helper_price(ctx, v.region)
    cost = f", about ${price:.2f}/h for a few minutes" if price is not None else ""
    where = f" in {v.region}" if v.region else ""
    return (
        f"gate: no pod mounts it: a temporary pod (the cheapest GPU{where}{cost}) mounts it to list it "
        "and pull its checkpoints, and is terminated after"
    )


def helper_price(ctx: JobContext, region: str | None) -> float | None:
    from gpujob import gpus

    any_gpu = ctx.spec.machine.model_copy(
        update={
            "gpu": [g.alias for g in ctx.profile.gpus],
            "gpu_count": 1,
            "regions": [region] if region else [],
            "spot": False,
            "max_price_per_hour": None,
        }
    )
    prices = [c.price_hour for c in gpus.candidates(ctx.profile, any_gpu, ctx.live.quotes)]
    return min(prices) if prices else None


def ck_lost_by(ctx: JobContext, verb: str) -> bool:
    ck = ctx.spec.checkpoint
    return ck is not None and not ctx.profile.survives(path_tier(ctx.spec, ck.dir), verb)


def start_findings(ctx: JobContext, aid: str, fired: bool) -> list[Finding]:
    out = []
    if ctx.spec.platform == "runpod":
        out.append(
            ctx.finding(
                "RP1",
                "warning",
                "a stopped pod is tied to its host: if that GPU was rented meanwhile it starts with zero GPUs",
                fix="nothing to change: if the start finds no free GPU, apply stops and records it, and the next "
                "`gpujob plan` replaces the pod on a fresh host (its checkpoints pulled first when they are on "
                "the pod's own disk; a network volume is kept)",
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


def work_at_risk(ctx: JobContext) -> str | None:
    """When the run alive has no recent checkpoint: what a stop of it may lose (said on the stop)."""
    from gpujob.layout.machine import checkpoint_interval_s

    fact = ctx.live.runs.get(ctx.job)
    every = checkpoint_interval_s(ctx.spec)
    if fact is None or fact.state != "running" or every is None:
        return None
    age = fact.last_checkpoint_age_s
    if age is not None and age <= every:
        return None
    since = "no checkpoint yet" if age is None else f"the newest checkpoint is {int(age // 60)} min old"
    return (
        f"work at risk: {since} (checkpoint.interval {every}s); the run gets SIGTERM and "
        f"{quiesce_grace_s(ctx.spec):.0f}s for a final save before the stop"
    )


def stop_findings(ctx: JobContext, aid: str) -> list[Finding]:
    from gpujob.plan.trap_findings import stop_leaves_unpulled

    out = stop_leaves_unpulled(ctx, aid)
    risk = work_at_risk(ctx)
    if risk:
        out.append(ctx.finding("work-at-risk", "info", risk, action_id=aid))
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


def replace_findings(ctx: JobContext, aid: str, forcing: list[FieldChange]) -> list[Finding]:
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
    if ctx.machine is not None and ckpts_on_machine(ctx, ctx.machine):
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


def teardown_findings(ctx: JobContext, aid: str) -> list[Finding]:
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


def volume_without_pull(ctx: JobContext, aid: str, pull_id: str | None) -> list[Finding]:
    ck = ctx.spec.checkpoint
    if ck is None or pull_id is not None or not path_tier(ctx.spec, ck.dir).startswith("network_volume"):
        return []
    return [
        ctx.finding(
            "RP3",
            "info",
            "no pod mounts this network volume: its checkpoints are pulled through a temporary pod "
            "before it is deleted",
            detail="The cheapest pod that can mount it in its data center; terminated right after the pull.",
            fix="to pull through the job's own pod instead: state: running, `gpujob apply`, then destroy",
            key="state",
            action_id=aid,
        )
    ]


def nodes_reason(ctx: JobContext) -> str:
    """What creating a multi-node job's group makes (docs/multinode.md)."""
    n, spec = ctx.spec.machine.nodes, ctx.spec
    what = (
        "one Instant Cluster (type TRAINING) of that many pods in one data center, on its private network"
        if spec.platform == "runpod"
        else "a private network and that many machines in it, each with its own disk"
    )
    return (
        f"{n} nodes of {spec.machine.gpu_count} GPU(s) each: {what}; all or nothing (a node that cannot "
        "be had leaves no node billing)"
    )
