"""Traps the profiles record that a job walks into through the live state it meets: a stopped pod whose
checkpoints were never pulled (RP8), checkpoints that do not fit their disk (U6), a Paperspace machine
gpujob cannot reach, a network volume on the community cloud (RP7), and a run whose checkpoints are not
being written or not being resumed from. Read after the job's actions are planned (ctx.fp is the
footprint the plan leaves behind)."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from gpujob.cost.rates import Footprint, meters, monthly_total, tier_line, usd
from gpujob.live import LiveResource, RunFact
from gpujob.plan import run_evidence
from gpujob.plan.context import JobContext, live_ck_tier, path_tier, run_record, tier_title
from gpujob.plan.model import Finding

# RunPod removes stopped pods after about this many days unused (profiles/runpod.yaml, RP8).
STOPPED_POD_DAYS = 30


def trap_findings(ctx: JobContext) -> list[Finding]:
    out: list[Finding] = []
    out += _stopped_pod_unpulled(ctx)
    out += _disk_budget(ctx)
    out += _unreachable(ctx)
    out += _community_network_volume(ctx)
    out += _run_evidence(ctx)
    return out


def _get(rec: object, name: str) -> Any:
    return rec.get(name) if isinstance(rec, dict) else getattr(rec, name, None)


# --- RP8: a stopped pod holding the only copy --------------------------------------------------


def unpulled_reason(rec: object, m: LiveResource) -> str | None:
    """Why the checkpoints on pod `m` are not all safely home (None: the last pull covers them)."""
    if rec is None:
        return "no pull on record"
    if _get(rec, "resource_id") not in (None, m.id):
        return f"the last pull was from another machine ({_get(rec, 'resource_id')})"
    missing = rec.missing() if hasattr(rec, "missing") else []
    unverified = rec.unverified() if hasattr(rec, "unverified") else []
    if missing or unverified:
        return f"the last pull is incomplete ({len(missing)} not pulled, {len(unverified)} not verified)"
    at = _get(rec, "at")
    if m.started_at is not None and at is not None and at < m.started_at:
        return (
            f"the last pull ({at:%Y-%m-%d %H:%M} UTC) is older than the pod's last start "
            f"({m.started_at:%Y-%m-%d %H:%M} UTC): what the run wrote since is on its disk only"
        )
    finished = _stamp(m.attributes.get("run_finished_at"))
    launched = _stamp(m.attributes.get("run_launched_at"))
    stop_pulled = _get(rec, "before_stop") and (launched is None or (at is not None and launched < at))
    if at is not None and (finished is None or finished > at) and not stop_pulled:
        # RunPod does not report when a pod stopped: only a run that had finished before the pull wrote
        # nothing after it.
        stopped = _stamp(m.attributes.get("stopped_at"))
        until = f"until gpujob stopped it ({stopped:%Y-%m-%d %H:%M} UTC)" if stopped else "until it stopped"
        return (
            f"the last pull ({at:%Y-%m-%d %H:%M} UTC) was taken while the run could still write: "
            f"what it wrote {until} is on its disk only"
        )
    return None


def _stamp(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def holds_unpulled(f: Finding) -> bool:
    """Whether `f` is the warning below (a stopped pod holding un-pulled checkpoints): gpujob.plan.balance
    raises an unread balance to a warning next to it."""
    return (
        f.code == "RP8"
        and f.severity == "warning"
        and f.summary.startswith("stopped pod ")
        and (" holds un-pulled checkpoints " in f.summary)
    )


def _stopped_pod_unpulled(ctx: JobContext) -> list[Finding]:
    m, ck = ctx.machine, ctx.spec.checkpoint
    if ctx.spec.platform != "runpod" or m is None or ck is None:
        return []
    if m.status != "stopped" or ctx.fp.machine != "stopped":  # only a pod the plan leaves stopped
        return []
    if (
        live_ck_tier(ctx) != "volume_disk"
    ):  # a network volume outlives the pod; a container disk is already wiped
        return []
    why = unpulled_reason(ctx.pull_record, m)
    if why is None:
        return []
    monthly = monthly_total(meters(Footprint(machine="stopped", volume_gb=m.volume_gb), ctx.profile))
    return [
        ctx.finding(
            "RP8",
            "warning",
            f"stopped pod {m.name} holds un-pulled checkpoints ({ck.dir}) on its volume disk: {why}",
            detail=f"RunPod stops pods when the balance runs low and then deletes them, and removes "
            f"stopped pods after about {STOPPED_POD_DAYS} days; it keeps no backups. Meanwhile the volume "
            f"disk bills {usd(monthly)}/mo at the stopped rate (RP4).",
            fix=(
                "set state: running and `gpujob apply` (a stopped pod has no SSH), then `gpujob pull`; "
                if ctx.spec.state == "stopped"
                else ""  # state: running, and the pod stays stopped: its run finished for this job file
            )
            + "state: absent pulls and verifies them before it terminates the pod (its gate starts the pod "
            "for the pull)",
            key="state",
        )
    ]


def stop_leaves_unpulled(ctx: JobContext, aid: str) -> list[Finding]:
    """On a stop action: the pod it stops keeps checkpoints on its volume disk that the last pull does not
    hold. The stop pulls them and verifies the newest first (gpujob.apply.stop_pull, the Iron Law), and is
    refused when it does not come home: a note of that, with why the last pull is not enough."""
    m, ck = ctx.machine, ctx.spec.checkpoint
    if ctx.spec.platform != "runpod" or m is None or ck is None or m.status != "running":
        return []
    if live_ck_tier(ctx) != "volume_disk":
        return []
    fact = ctx.live.runs.get(ctx.job)
    why = unpulled_reason(ctx.pull_record, m)
    if why is None:
        return []
    if "could still write" in why and fact is not None and fact.state == "exited":
        # The pod runs now and was pulled since its last start: that pull holds everything when the run
        # had already exited when the plan read it (the fact has no exit time, so this is the best read).
        return []
    return [
        ctx.finding(
            "RP8",
            "info",
            f"before this stop, the checkpoints ({ck.dir}) are pulled and the newest verified ({why}); "
            f"the stop is refused if it does not come home",
            detail=f"A stopped pod's volume disk bills at twice the running rate (RP4), and RunPod deletes "
            f"stopped pods when the balance runs low or after about {STOPPED_POD_DAYS} days; a stopped pod "
            "has no SSH to pull from.",
            fix="put checkpoint.dir on a storage.network_volume (it outlives the pod and needs no pull)",
            key="checkpoint.dir",
            action_id=aid,
        )
    ]


# --- U6: keep × size on the disk that holds checkpoint.dir ------------------------------------


def checkpoint_size_gb(ctx: JobContext) -> tuple[float, str] | None:
    """checkpoint.size_gb, else the newest checkpoint in the last pull (files grouped by their top
    directory, so a checkpoint that is a folder of shards counts whole)."""
    ck = ctx.spec.checkpoint
    if ck is None:
        return None
    if ck.size_gb is not None:
        return ck.size_gb, "checkpoint.size_gb"
    rec = ctx.pull_record
    listed = _get(rec, "remote_files") or {}
    files = [f for f in (_get(rec, "files") or []) if f.name in listed]
    if not files:
        return None
    groups: dict[str, list[Any]] = {}
    for f in files:
        groups.setdefault(f.name.split("/", 1)[0], []).append(f)
    name, newest = max(groups.items(), key=lambda kv: (max(f.at for f in kv[1]), kv[0]))
    return sum(f.size for f in newest) / 1e9, f"{name} in the last pull"


def checkpoint_disk(ctx: JobContext) -> tuple[str, int, str, str] | None:
    """(tier id, size in GB, job-file key that sizes it, its name) of the disk checkpoint.dir is on,
    once the plan is applied (disks only grow, so a larger live disk stays larger)."""
    spec, ck = ctx.spec, ctx.spec.checkpoint
    if ck is None:
        return None
    tier = path_tier(spec, ck.dir)
    nv, m = spec.storage.network_volume, ctx.machine
    if tier.startswith("network_volume") and nv is not None:
        live = ctx.volume.volume_gb if ctx.volume is not None and ctx.volume.volume_gb else 0
        return tier, max(nv.size_gb, live), "storage.network_volume.size_gb", "network volume"
    if tier == "container_disk":
        return None  # RP2 already says it is wiped at every stop: its size is the lesser problem
    live = m.volume_gb if m is not None and m.volume_gb else 0
    size = max(spec.storage.volume_gb or 0, live) or (ctx.profile.tier(tier).default_gb or 0)
    return (tier, size, "storage.volume_gb", tier_title(ctx.profile, tier)) if size else None


def _disk_budget(ctx: JobContext) -> list[Finding]:
    ck = ctx.spec.checkpoint
    if ck is None or ctx.spec.state == "absent":
        return []
    sized, disk = checkpoint_size_gb(ctx), checkpoint_disk(ctx)
    if sized is None or disk is None:
        return []
    size, basis = sized
    tier, capacity, key, title = disk
    kept, peak = ck.keep * size, (ck.keep + 1) * size
    if peak <= capacity:
        return []
    need = math.ceil(peak)
    fits = math.floor(capacity / size) - 1
    profile_tier = ctx.profile.tier(tier)
    more = tier_line(ctx.profile, profile_tier, need, what="") if need else None
    now = tier_line(ctx.profile, profile_tier, capacity, what="")
    extra = (more.usd_per_month if more else 0.0) - (now.usd_per_month if now else 0.0)
    lower = f", or lower checkpoint.keep to {fits}" if fits >= 1 else ""
    stopped_differs = profile_tier.price_gb_month_stopped != profile_tier.price_gb_month_running
    running = " while running" if stopped_differs else ""
    return [
        ctx.finding(
            "U6",
            "warning",
            f"checkpoint.keep {ck.keep} × {size:g} GB ({basis}) = {kept:g} GB, {peak:g} GB while the next one "
            f"is written, does not fit the {capacity} GB {title} that holds {ck.dir}",
            detail="The write that finds the disk full fails mid-save (the run crashes or leaves a partial "
            "file), and caches and code on the same mount take room too. "
            + (
                "A volume can only grow, never shrink back: size it once, with headroom."
                if profile_tier.grow_only or ctx.spec.platform == "runpod"
                else ""
            ),
            fix=f"raise {key} to at least {need} (+{usd(extra)}/mo{running}; it can never be shrunk back){lower}",
            key=key,
        )
    ]


# --- Paperspace without a public address --------------------------------------------------------


def _unreachable(ctx: JobContext) -> list[Finding]:
    spec = ctx.spec
    if spec.platform != "paperspace" or spec.machine.public_ip != "none" or spec.state == "absent":
        return []
    if spec.run is None and spec.checkpoint is None:
        return []
    blocked = [
        what
        for what, wanted in (
            ("launch run.command", spec.run is not None),
            ("pull checkpoints", spec.checkpoint is not None),
        )
        if wanted
    ]
    dynamic = "" if ctx.machine is not None else "; or public_ip: dynamic (only at create)"
    return [
        ctx.finding(
            "unreachable",
            "warning",
            f"public_ip: none: gpujob reaches machines over SSH on their public address, so it cannot "
            f"{' or '.join(blocked)}",
            detail="The teardown gate needs a verified pull before a destroy, so it would refuse to destroy "
            "this machine for as long as it has no address."
            if spec.checkpoint is not None
            else "",
            fix="set machine.public_ip: static (gpujob claims one and assigns it, to an existing machine "
            f"too; it bills while the machine is off, PS1){dynamic}",
            key="machine.public_ip",
        )
    ]


# --- RP7: network volumes are a Secure Cloud thing -----------------------------------------------


def _community_network_volume(ctx: JobContext) -> list[Finding]:
    spec = ctx.spec
    if spec.platform != "runpod" or spec.storage.network_volume is None or spec.state == "absent":
        return []
    if spec.machine.cloud != "community":
        return []
    return [
        ctx.finding(
            "RP7",
            "error",
            "machine.cloud is community, but network volumes exist on Secure Cloud only: no community pod "
            "can mount storage.network_volume",
            fix="set machine.cloud: secure (the default), or drop storage.network_volume and keep the "
            "checkpoints on storage.volume_gb (pulled before every terminate)",
            key="machine.cloud",
        )
    ]


# --- are checkpoints written and resumed from? ----------------------------------------------------


def _run_evidence(ctx: JobContext) -> list[Finding]:
    fact = ctx.live.runs.get(ctx.job)
    if fact is None or fact.state is None:
        return []
    # LC4.3: what a run that ended far sooner than expected left is not trusted without saying so
    fast = run_evidence.fast_finish(
        ctx.spec,
        exit_code=fact.exit_code if fact.state == "exited" else None,
        started_at=fact.started_at,
        finished_at=fact.finished_at,
    )
    warnings = [fast]
    if ctx.spec.checkpoint is not None:
        warnings += _checkpoint_evidence(ctx, fact)
    return [
        ctx.finding(w.code, "warning", w.summary, detail=w.detail, fix=w.fix, key=w.key)
        for w in warnings
        if w is not None
    ]


def _checkpoint_evidence(ctx: JobContext, fact: RunFact) -> list[run_evidence.RunWarning | None]:
    return [
        run_evidence.stale_checkpoint(
            ctx.spec,
            alive=fact.state == "running",
            started_at=fact.started_at,
            now=ctx.now,
            last_checkpoint=fact.last_checkpoint,
            age_s=fact.last_checkpoint_age_s,
            launched_interval_s=getattr(run_record(ctx), "checkpoint_interval_s", None),
        ),
        run_evidence.fresh_start(
            ctx.spec,
            first_step=fact.first_step,
            earlier_last_step=fact.earlier_last_step,
            earlier_span_s=fact.earlier_span_s,
            pulled_before_start=run_evidence.pulled_before(
                ctx.pull_record, fact.resource_id, fact.started_at
            ),
        ),
    ]
