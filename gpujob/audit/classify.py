"""Pure classification of an account's live resources: owner, rate, idleness, trap and fix."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime

from gpujob import naming
from gpujob.audit.model import AuditItem, AuditReport, Owner, PlatformTotal, RateSource
from gpujob.cost.live import Pricing, resource_meters, resource_note
from gpujob.cost.model import MeterLine
from gpujob.live import LiveResource, LiveState
from gpujob.model import PLATFORMS, Platform
from gpujob.profile import HOURS_PER_MONTH, Profile

ProfileLoader = Callable[[str], Profile]


def owner_of(
    r: LiveResource, local_jobs: Mapping[str, str | None], machines: dict[str, LiveResource]
) -> tuple[Owner, str | None]:
    """Owner by gpujob.naming's rule: this repo's when the name (and a pod's env marker) spells one of
    `local_jobs` (job -> this repo's project id); IPs and snapshots go with their machine."""
    found = naming.owner(r, machines)
    if found is not None:
        # this checkout's by its project id, whether or not a job file still names the job (a job
        # renamed or turned into a sweep in place: gpujob plan shows what it left, gpujob.plan.unnamed)
        if found.project in {p for p in local_jobs.values() if p}:
            return "this-repo", found.job
        return "other-gpujob", found.job
    name = r.name
    machine = machines.get(r.machine_id or "") if r.kind in naming.FOLLOWERS else None
    if machine is not None:
        name = machine.name
    # gpujob's prefix without a parsable owner: made by an older gpujob, or renamed by hand.
    return ("other-gpujob", None) if name.startswith(naming.PREFIX) else ("foreign", None)


def _status_change(r: LiveResource) -> tuple[datetime | None, str]:
    """When a stopped machine stopped, if the platform says; otherwise (None, why). A last start or the
    creation date is not a stop time: the machine may have stopped a minute after it, or a month."""
    for key in ("last_status_change", "stopped_at", "lastStatusChange"):
        value = r.attributes.get(key)
        if isinstance(value, str) and value:
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00")), "last status change"
            except ValueError:
                continue
    return None, "stop time unknown"


def _idle_since(
    r: LiveResource, machines: dict[str, LiveResource], pods_by_volume: dict[str, list[LiveResource]]
) -> tuple[bool, datetime | None, str, str]:
    """(idle, since, basis, detail). Idle = billing while nothing runs on or through it."""
    if r.kind in ("pod", "machine"):
        if r.status == "stopped":
            since, basis = _status_change(r)
            return True, since, basis, ""
        return False, r.started_at or r.created_at, "started" if r.started_at else "created", ""
    if r.kind == "network_volume":
        users = pods_by_volume.get(r.id, [])
        if any(p.status in ("running", "pending") for p in users):
            return False, r.created_at, "created", f"mounted by {', '.join(p.name for p in users)}"
        if users:
            # Idle since the last of its pods stopped.
            changes = [(_status_change(p), p) for p in users]
            dated = [c for c in changes if c[0][0] is not None]
            (since, basis), pod = max(dated, key=lambda c: c[0][0]) if dated else changes[0]  # type: ignore[arg-type,return-value]
            return True, since, f"pod {pod.name} stopped ({basis})", f"attached to stopped pod {pod.name}"
        last = r.attributes.get("last_attached_at")
        if isinstance(last, str) and last:
            return True, datetime.fromisoformat(last.replace("Z", "+00:00")), "last detached", "unattached"
        return True, r.created_at, "created", "unattached"
    if r.kind in ("public_ip", "snapshot"):
        machine = machines.get(r.machine_id or "")
        if machine is None:
            what = "unassigned" if r.kind == "public_ip" else "machine gone"
            if r.kind == "snapshot" and not r.machine_id:
                what = "no machine"
            return True, r.created_at, "created", what
        if machine.status in ("running", "pending"):
            return False, r.created_at, "created", f"of running {machine.name}"
        since, basis = _status_change(machine)
        return True, since, f"machine {machine.name} off ({basis})", f"of stopped {machine.name}"
    return False, r.created_at, "created", ""


# A stopped RunPod pod is removed after about this long unused (RP8); past it the data is at risk.
STALE_POD_S = 25 * 86400.0


def _gotcha(r: LiveResource, idle: bool, idle_s: float | None) -> str | None:
    """The profile gotcha behind what an idle resource costs (ids as in profiles/*.yaml)."""
    if r.kind == "pod" and r.status == "stopped":
        # the cost is the 2× volume disk (RP4); once it has been stopped for weeks, the trap is that RunPod
        # deletes stopped pods after ~30 days unused (RP8), data and all
        return "RP8" if idle_s is not None and idle_s > STALE_POD_S else "RP4"
    if r.kind == "machine" and r.status == "stopped":
        return "PS1"  # off stops only the GPU meter
    if r.kind == "public_ip" and idle:
        return "PS1"  # a static IP bills until released, machine on, off or gone
    if r.kind == "snapshot" and idle:
        return "PS9"  # snapshots outlive their machine and keep billing
    return None  # an idle network volume is the price of a safe park, not a trap: its fix says what to do


def _fix(r: LiveResource, owner: Owner, job: str | None, idle: bool, named: Iterable[str] = ()) -> str:
    if not idle:
        return ""
    verb = {
        "pod": "pull checkpoints, then terminate the pod",
        "machine": "pull checkpoints, then destroy the machine",
        "network_volume": "copy off what you need, then delete the volume",
        "public_ip": "release the static IP",
        "snapshot": "delete the snapshot",
    }.get(r.kind, "delete it if unused")
    if owner == "this-repo":
        names = set(named)
        if job is not None and job not in names:
            if any(naming.volume_job(n) == job for n in names):  # a sweep's volume, shared by its queues
                return f"{verb}: it is sweep '{job}''s shared volume; gpujob destroy deletes it with the sweep (gated)"
            return (
                f"{verb}: no job file read here names job '{job}' (renamed, or turned into a sweep?); "
                "gpujob plan shows what such a job left and gpujob apply ends it (gated)"
            )
        return f"{verb}: gpujob audit --fix -o fix.json && gpujob apply fix.json"
    if owner == "other-gpujob":
        if job is None:
            return f"{verb} (named by a gpujob without project markers: use the console)"
        return f"{verb}: run `gpujob destroy` in the checkout (project) holding job '{job}'"
    return f"{verb} (not gpujob's: use the console, runpodctl or pspace)"


def _rate(
    r: LiveResource, meters: list[MeterLine] | None
) -> tuple[float, float, RateSource, str, list[MeterLine]]:
    """(usd/h, usd/month, source, note, meters). The meters come from the cost engine (gpujob.cost.live),
    which already prices a running pod's GPU at the API's own rate; RunPod reports 0 for an exited pod whose
    volume disk still bills (RP4), which the note says."""
    api = r.cost_per_hour
    if meters is None:
        if api is not None and api > 0:
            line = MeterLine(
                what=f"{r.kind} (API rate)",
                usd_per_hour=api,
                usd_per_month=round(api * HOURS_PER_MONTH, 4),
                source="API",
            )
            return api, line.usd_per_month, "api", "", [line]
        return 0.0, 0.0, "none", "rate unknown: the profile cannot price this resource", []
    note = ""
    source: RateSource = "api" if any(" API " in f" {m.source} " for m in meters) else "profile"
    if api == 0 and any(m.usd_per_hour > 0 for m in meters):
        note = "API reports $0/h; storage still bills"
    hourly = round(sum(m.usd_per_hour for m in meters), 6)
    monthly = round(sum(m.usd_per_month for m in meters), 4)
    return hourly, monthly, source, note, meters


def _detail(r: LiveResource) -> str:
    parts: list[str] = []
    if r.gpu_id and r.kind in ("pod", "machine"):
        parts.append(f"{max(r.gpu_count, 1)}× {r.gpu_id}")
    if r.volume_gb:
        parts.append(f"{r.volume_gb} GB")
    if r.region:
        parts.append(r.region)
    if r.kind == "public_ip" and r.public_ip:
        parts.append(r.public_ip)
    a = r.attributes
    if r.kind == "endpoint":
        parts.append(
            f"serverless, workers.min {a.get('workers_min')} (max {a.get('workers_max')}), {a.get('pools')}"
        )
    if r.kind == "cluster":
        parts.append(
            f"{a.get('cluster_type') or 'cluster'} of {a.get('pods')} pods × {r.gpu_count} {r.gpu_id}"
        )
    if r.kind == "startup_script":
        machine = r.machine_id
        parts.append(f"of machine {machine}" if machine else "no machine of this name: a leftover")
    if a.get("cluster_id"):
        parts.append(f"member {a.get('cluster_rank')} of cluster {a.get('cluster_id')}")
    return ", ".join(parts)


def classify(
    live: LiveState,
    *,
    local_jobs: Mapping[str, str | None],
    now: datetime,
    idle_threshold_s: float,
    profiles: ProfileLoader,
    platforms: Iterable[Platform] | None = None,
    known_sizes: Mapping[str, int] | None = None,
) -> AuditReport:
    jobs = sorted(local_jobs)
    wanted = list(platforms) if platforms is not None else sorted({r.platform for r in live.resources})
    resources = [r for r in live.resources if r.platform in wanted]
    machines = {r.id: r for r in resources if r.kind in ("pod", "machine")}
    pods_by_volume: dict[str, list[LiveResource]] = {}
    for r in resources:
        if r.kind == "pod" and r.network_volume_id:
            pods_by_volume.setdefault(r.network_volume_id, []).append(r)
    listed_ip_machines = {r.machine_id for r in resources if r.kind == "public_ip" and r.machine_id}

    items: list[AuditItem] = []
    for r in sorted(resources, key=lambda x: (x.platform, x.kind, x.name, x.id)):
        profile = profiles(r.platform)
        owner, job = owner_of(r, local_jobs, machines)
        pricing = Pricing(profile=profile, machines=machines, known_sizes=known_sizes or {}, read_at=now)
        meters = resource_meters(pricing, r, static_ip_listed=r.id in listed_ip_machines)
        size_note = resource_note(pricing, r)
        hourly, monthly, source, note, meters = _rate(r, meters)
        note = "; ".join(x for x in (note, size_note) if x)
        idle, since, basis, where = _idle_since(r, machines, pods_by_volume)
        billable = hourly > 0 or (
            source == "none" and r.kind not in ("template", "registry_auth", "startup_script")
        )
        idle = idle and billable
        idle_s = (now - since).total_seconds() if idle and since is not None else None
        # when it went idle is unknown: it cannot have been idle longer than it has existed
        at_most = (now - r.created_at).total_seconds() if idle and idle_s is None and r.created_at else None
        gotcha = _gotcha(r, idle, idle_s) if billable else None
        title = ""
        if gotcha is not None:
            try:
                title = profile.gotcha(gotcha).title
            except KeyError:
                title = ""  # the id still names the trap; the profile just lacks its write-up
        detail = ", ".join(x for x in (_detail(r), where) if x)
        items.append(
            AuditItem(
                platform=r.platform, kind=r.kind, id=r.id, name=r.name, owner=owner, job=job,
                state=r.status, raw_status=r.raw_status, detail=detail, billable=billable,
                usd_per_hour=hourly, usd_per_month=monthly, rate_source=source, rate_note=note,
                meters=meters, since=since, since_basis=basis, idle=idle, idle_seconds=idle_s,
                idle_at_most_s=at_most, over_threshold=idle and (
                    idle_s > idle_threshold_s if idle_s is not None
                    else at_most is None or at_most > idle_threshold_s),
                gotcha=gotcha, gotcha_title=title, fix=_fix(r, owner, job, idle, local_jobs),
            )
        )  # fmt: skip
    totals = [_total(p, items) for p in PLATFORMS if p in wanted]
    return AuditReport(
        generated_at=now,
        idle_threshold_s=idle_threshold_s,
        platforms=[p for p in PLATFORMS if p in wanted],
        local_jobs=jobs,
        items=items,
        totals=totals,
        usd_per_hour=round(sum(t.usd_per_hour for t in totals), 6),
        usd_per_month=round(sum(t.usd_per_month for t in totals), 4),
        idle_usd_per_month=round(sum(t.idle_usd_per_month for t in totals), 4),
        read_errors=list(live.read_errors),
    )


def _total(platform: Platform, items: list[AuditItem]) -> PlatformTotal:
    mine = [i for i in items if i.platform == platform]
    return PlatformTotal(
        platform=platform,
        resources=len(mine),
        billable=sum(1 for i in mine if i.billable),
        usd_per_hour=round(sum(i.usd_per_hour for i in mine), 6),
        usd_per_month=round(sum(i.usd_per_month for i in mine), 4),
        idle_usd_per_month=round(sum(i.usd_per_month for i in mine if i.idle), 4),
        owned_idle_usd_per_month=round(
            sum(i.usd_per_month for i in mine if i.idle and i.owner == "this-repo"), 4
        ),
    )
