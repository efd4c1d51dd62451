"""Per-job money, as `gpujob cost` and `gpujob status` show it (and `gpujob watch` can read it): what each
resource has cost so far (gpujob.cost.spend), what it bills per hour now (gpujob.cost.live), and where
that is heading at run.max_runtime and against budget.max_total_usd.

`read_costs` does the reads: one listing per platform, the platform's metering for every resource the
jobs have (live, and gone ones from gpujob.cost.seen), all concurrently."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import Field

from gpujob import naming
from gpujob.cost.live import Pricing, resource_meters
from gpujob.cost.model import MeterLine
from gpujob.cost.seen import Seen
from gpujob.cost.spend import SpendLine, job_spend, more_until
from gpujob.errors import GpujobError
from gpujob.live import LiveResource, Metering, ResourceRef
from gpujob.model import Model, Platform
from gpujob.plan.model import Finding


class JobCost(Model):
    job: str
    platform: Platform
    spec_file: str
    resources: list[SpendLine] = Field(default_factory=list)
    spent_usd: float = 0.0
    estimate: bool = Field(False, description="True when any part of spent_usd is an estimate.")
    burn_usd_per_hour: float = 0.0
    running: bool = False
    gpu: str | None = Field(None, description="The GPU the job's machine has now, as it bills.")
    elapsed_s: float | None = Field(None, description="Time the machine has been up in its current run.")
    max_runtime_s: float | None = None
    projected_at_max_runtime_usd: float | None = None
    budget_usd: float | None = None
    budget_left_usd: float | None = None
    hours_to_budget: float | None = Field(
        None, description="Time until the budget is spent at the current burn."
    )
    over_budget: bool = False
    as_of: datetime | None = Field(None, description="The platform's clock when this was read.")
    sources: list[str] = Field(default_factory=list, description="Billing calls and price sources used.")
    findings: list[Finding] = Field(default_factory=list)
    meters: list[MeterLine] = Field(
        default_factory=list,
        description="What bills now, meter by meter (a stopped pod's volume disk at 2×).",
    )
    goodput: float | None = Field(
        None,
        description="gpujob watch: useful steps / the steps the billed GPU time could have done. The job's "
        "across platforms: on its first row only.",
    )
    goodput_detail: str = Field("", description="gpujob watch: GPU-hours, steps done and redone, recoveries.")


class CostReport(Model):
    generated_at: datetime
    jobs: list[JobCost] = Field(default_factory=list)
    spent_usd: float = 0.0
    burn_usd_per_hour: float = 0.0
    read_errors: list[str] = Field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 2 if any(j.over_budget for j in self.jobs) else 0


def budget_finding(
    job: str, *, spent: float, projected: float | None, budget: float | None, burn: float
) -> Finding | None:
    """A warning when spend so far, or its projection to max_runtime, crosses budget.max_total_usd.
    Usable by the planner as well as by `gpujob cost`."""
    if budget is None:
        return None
    if spent > budget:
        return Finding(
            code="budget", severity="warning", job=job,
            summary=f"spent ${spent:.2f} already exceeds budget.max_total_usd ${budget:.2f}",
            fix="stop or tear down the job, or raise budget.max_total_usd",
        )  # fmt: skip
    if projected is not None and projected > budget:
        return Finding(
            code="budget", severity="warning", job=job,
            summary=f"projected ${projected:.2f} at run.max_runtime crosses budget.max_total_usd ${budget:.2f}",
            detail=f"at ${burn:.2f}/h the remaining ${budget - spent:.2f} lasts {(budget - spent) / burn:.1f} h" if burn > 0 else "",
            fix="shorten run.max_runtime, pick a cheaper GPU, or raise budget.max_total_usd",
        )  # fmt: skip
    return None


@dataclass
class JobFacts:
    """Everything one job's money is computed from (all read beforehand: this is pure)."""

    job: str
    platform: Platform
    spec_file: str
    live: list[LiveResource]
    seen: dict[str, Seen]
    metering: Metering
    pricing: Pricing
    now: datetime
    max_runtime_s: float | None
    budget_usd: float | None


def job_cost(f: JobFacts) -> JobCost:
    """One job's figures: spend per resource (billing or estimate), burn now, projection, budget."""
    with_ip = {r.machine_id for r in f.live if r.kind == "public_ip" and r.machine_id}
    burn: dict[str, float] = {}
    now_lines: list[MeterLine] = []
    for r in f.live:
        lines = resource_meters(f.pricing, r, static_ip_listed=r.id in with_ip) or []
        burn[r.id] = round(sum(m.usd_per_hour for m in lines), 9)
        now_lines += lines
    rows = job_spend(f.pricing, f.live, f.seen, f.metering, f.now, burn)
    spent = round(sum(x.usd for x in rows), 6)
    rate = round(sum(burn.values()), 9)
    machine = next(
        (
            r
            for r in f.live
            if r.kind in naming.MACHINE_KINDS + naming.GROUP_KINDS and r.status != "terminating"
        ),
        None,
    )
    running = machine is not None and machine.status in ("running", "pending")
    elapsed = None
    if running and machine is not None:
        # Paperspace lists no start time: its events (the open running span) say when this start began
        spans = [s for s in f.metering.running.get(machine.id, []) if s.end is None]
        started = machine.started_at or (spans[-1].start if spans else None)
        elapsed = (f.now - started).total_seconds() if started is not None else None
    projected = None
    if running and f.max_runtime_s is not None:
        remaining = max(f.max_runtime_s - (elapsed or 0.0), 0.0)
        # billed the way the platform bills: an hour already started is not paid for twice
        more = more_until(f.pricing, f.live, f.seen, f.metering, f.now, f.now + timedelta(seconds=remaining))
        projected = round(spent + more, 6)
    left = round(f.budget_usd - spent, 6) if f.budget_usd is not None else None
    hours_left = round(max(left, 0.0) / rate, 2) if left is not None and rate > 0 else None
    finding = budget_finding(f.job, spent=spent, projected=projected, budget=f.budget_usd, burn=rate)
    gpu = None
    if machine is not None and running:
        meters = resource_meters(f.pricing, machine) or []
        gpu = next((m.what for m in meters if m.what.startswith("GPU")), None)
    sources = [f.metering.source] if f.metering.source and any(x.source == "billing" for x in rows) else []
    sources += f.metering.errors
    return JobCost(
        job=f.job, platform=f.platform, spec_file=f.spec_file, resources=rows, spent_usd=spent,
        estimate=any(x.source == "estimate" for x in rows), burn_usd_per_hour=rate, running=running, gpu=gpu,
        elapsed_s=elapsed, max_runtime_s=f.max_runtime_s, projected_at_max_runtime_usd=projected,
        budget_usd=f.budget_usd, budget_left_usd=left, hours_to_budget=hours_left,
        over_budget=finding is not None, as_of=f.now, sources=sources, findings=[finding] if finding else [],
        meters=now_lines,
    )  # fmt: skip


def with_goodput(report: CostReport, goodput: Mapping[str, Any]) -> CostReport:
    """The report with each job's goodput (gpujob.watch.ledger.Goodput, by job) on its first row only:
    goodput is the job's across platforms (watch's ledger follows it through a move), so a moved job's
    other platforms' rows carry none and the figure is printed once."""
    done: set[str] = set()
    jobs = []
    for j in report.jobs:
        g = goodput.get(j.job)
        if g is not None and j.job not in done:
            done.add(j.job)
            j = j.model_copy(update={"goodput": g.goodput, "goodput_detail": g.line()})
        jobs.append(j)
    return report.model_copy(update={"jobs": jobs})


# --- reading ----------------------------------------------------------------------------------------


def job_resources(
    listed: Sequence[LiveResource], owned: Sequence[LiveResource], seen: Mapping[str, Seen]
) -> list[LiveResource]:
    """The job's live resources: those its name owns, plus any it was seen owning that are still listed
    (a static IP left unassigned by a destroy keeps billing, though nothing names it for the job)."""
    ids = {r.id for r in owned}
    extra = [
        r
        for r in listed
        if r.id in seen and r.id not in ids and r.kind in ("public_ip", "snapshot", "network_volume")
    ]
    return [r for r in owned if r.status != "terminating"] + extra


async def read_costs(
    loaded: Sequence[Any],
    providers: Mapping[str, Any],
    *,
    record: bool = True,
    state_dir_of: Any = None,
) -> CostReport:
    """Read what every job (loaded job files) has spent and burns now. With `record`, what was seen is
    written to each job's seen record (gpujob.cost.seen), so a resource that goes later is still counted."""
    from gpujob.cost import seen as seen_store
    from gpujob.naming import claims
    from gpujob.profile import load_profile

    if state_dir_of is None:
        from gpujob.state import open_store as state_dir_of
    platforms = sorted({ls.spec.platform for ls in loaded})
    listings = await asyncio.gather(
        *(providers[p].list_resources() for p in platforms), return_exceptions=True
    )
    errors: list[str] = []
    listed: dict[str, list[LiveResource]] = {}
    for p, result in zip(platforms, listings, strict=True):
        if isinstance(result, GpujobError):
            errors.append(read_error_text(p, result))
        elif isinstance(result, BaseException):
            raise result
        else:
            listed[p] = result
    # Each job's record, of the platform it is read on (a job with fallback entries has one per platform).
    seen = {
        ls.spec.name: {
            rid: s
            for rid, s in seen_store.load(state_dir_of(ls.path), ls.spec.name).items()
            if s.resource.platform == ls.spec.platform
        }
        for ls in loaded
    }
    jobs_live: dict[str, list[LiveResource]] = {}
    for p, resources in listed.items():
        projects = {ls.spec.name: ls.project for ls in loaded if ls.spec.platform == p}
        owners = claims(resources, projects)
        for job in projects:
            jobs_live[job] = job_resources(resources, owners.get(job, []), seen[job])
    refs: dict[str, list[ResourceRef]] = {p: [] for p in listed}
    for ls in loaded:
        p, job = ls.spec.platform, ls.spec.name
        if p not in listed:
            continue
        refs[p] += [
            ResourceRef(platform=r.platform, kind=r.kind, id=r.id, created_at=r.created_at)
            for r in jobs_live[job]
        ]
        refs[p] += [s.ref() for rid, s in seen[job].items() if rid not in {r.id for r in jobs_live[job]}]
    meterings = await asyncio.gather(*(providers[p].metering(refs[p]) for p in listed))
    metering = dict(zip(listed, meterings, strict=True))
    out: list[JobCost] = []
    for ls in loaded:
        spec, p = ls.spec, ls.spec.platform
        if p not in listed:
            continue
        now = providers[p].platform_now()
        machines = {r.id: r for r in listed[p] if r.kind in ("pod", "machine")}
        sizes = _known_snapshot_sizes(seen[spec.name])
        pricing = Pricing(profile=load_profile(p), machines=machines, known_sizes=sizes, read_at=now)
        max_rt = spec.run.max_runtime.total_seconds() if spec.run and spec.run.max_runtime else None
        facts = JobFacts(
            job=spec.name, platform=p, spec_file=str(ls.path), live=jobs_live[spec.name], seen=seen[spec.name],
            metering=metering[p], pricing=pricing, now=now, max_runtime_s=max_rt, budget_usd=spec.budget.max_total_usd,
        )  # fmt: skip
        out.append(job_cost(facts))
        if record:
            seen_store.record(state_dir_of(ls.path), spec.name, jobs_live[spec.name], now, platform=p)
    return CostReport(
        generated_at=max((j.as_of for j in out if j.as_of), default=None) or _utcnow(),
        jobs=out,
        spent_usd=round(sum(j.spent_usd for j in out), 6),
        burn_usd_per_hour=round(sum(j.burn_usd_per_hour for j in out), 9),
        read_errors=errors,
    )


def _utcnow() -> datetime:
    from datetime import UTC

    return datetime.now(UTC)


def _known_snapshot_sizes(seen: Mapping[str, Seen]) -> dict[str, int]:
    """Snapshot id -> the disk size of the machine it was taken from, as last seen."""
    out: dict[str, int] = {}
    for s in seen.values():
        r = s.resource
        if r.kind == "snapshot":
            machine = seen.get(r.machine_id or "")
            size = r.volume_gb or (machine.resource.volume_gb if machine else None)
            if size:
                out[r.id] = size
    return out


def one_total(here: JobCost | None, others: Sequence[JobCost], watch_usd: float | None) -> dict[str, Any]:
    """The one money figure a screen shows for a job: the cost engine's (the platform's billing where it
    has one, else metered time at the profile's prices, for every resource of the job from its first
    day), summed over each platform of its chain, its parts labelled where there are several (what
    `gpujob cost`'s TOTAL sums). watch's ledger counts only what it saw at its ticks (from when it first
    watched the job, re-anchored to the engine every few minutes, on the platform it watches): it is a
    part of nothing and never a second total, so it is named only where it differs, as what it is.

    {"spent_usd", "parts": [{"platform", "usd"}] (several platforms only), "watch_usd" (differs only)}"""
    mine = [here] if here is not None else []
    mine += [c for c in others if c.spent_usd > 0 or any(r.state != "gone" for r in c.resources)]
    out: dict[str, Any] = {"spent_usd": round(sum(c.spent_usd for c in mine), 9)}
    if len(mine) > 1:
        out["parts"] = [{"platform": c.platform, "usd": c.spent_usd} for c in mine]
    if watch_usd is not None and here is not None and abs(watch_usd - out["spent_usd"]) >= 0.005:
        out["watch_usd"] = watch_usd
    return out


# --- rendering --------------------------------------------------------------------------------------


def usd2(v: float) -> str:
    """Cents, or four places below ten cents so a small charge never reads as $0.00."""
    from gpujob.cost.rates import usd

    return usd(round(v, 4))


def render_cost(report: CostReport, fmt: str = "text") -> str:
    if fmt == "json":
        return report.model_dump_json(indent=2) + "\n"
    out: list[str] = []
    for j in report.jobs:
        how = "estimate from metered time" if j.estimate else "billed by the platform"
        if j.estimate and any(x.source == "billing" for x in j.resources):
            how = "billed by the platform, partly estimated"
        out.append(
            f"{j.job} [{j.platform}]  spent {usd2(j.spent_usd)} ({how})  burn {usd2(j.burn_usd_per_hour)}/h now"
            + (f" on {j.gpu}" if j.gpu else "")
        )
        for r in j.resources:
            tag = "estimate" if r.source == "estimate" else "billed"
            label = r.name if r.name == r.id else f"{r.name} ({r.id})"
            out.append(f"    {r.kind:<15} {label:<40} {r.state:<10} {usd2(r.usd):>10} {tag}: {r.basis}")
        if j.max_runtime_s is not None:
            if j.projected_at_max_runtime_usd is not None:
                up = ago(j.elapsed_s) if j.elapsed_s is not None else "?"
                out.append(
                    f"    at max_runtime {ago(j.max_runtime_s)} (up {up}): {usd2(j.projected_at_max_runtime_usd)}"
                )
            else:
                out.append(f"    at max_runtime {ago(j.max_runtime_s)}: not running, no projection")
        if j.budget_usd is not None and j.budget_left_usd is not None:
            when = f", lasts {j.hours_to_budget:g} h at this burn" if j.hours_to_budget is not None else ""
            out.append(f"    budget {usd2(j.budget_usd)}: {usd2(j.budget_left_usd)} left{when}")
        if j.goodput_detail:
            out.append(f"    {j.goodput_detail}")
        for f in j.findings:
            out.append(f"    {f.severity}: {f.summary}")
        for s in j.sources:
            out.append(f"    source: {s}")
        if not j.resources:
            out.append("    nothing in the account, and nothing seen before")
    out.append(f"TOTAL spent {usd2(report.spent_usd)}, burning {usd2(report.burn_usd_per_hour)}/h")
    for e in report.read_errors:
        out.append(f"read error: {e}")
    from gpujob.safe import for_terminal

    return "\n".join(for_terminal(line) for line in out) + "\n"  # names and errors from the APIs


def read_error_text(platform: str, exc: GpujobError) -> str:
    """One line for a platform that could not be read: the error, prefixed by the platform once, and
    what to do (e.g. which API key variable to fix)."""
    text = str(exc) if str(exc).startswith(f"{platform} ") else f"{platform}: {exc}"
    return f"{text} (hint: {exc.hint})" if exc.hint else text


def ago(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = max(int(seconds), 0)
    d, rem = divmod(s, 86400)
    h, rem = divmod(rem, 3600)
    m = rem // 60
    if d:
        return f"{d}d{h}h" if h else f"{d}d"
    if h:
        return f"{h}h{m}m" if m else f"{h}h"
    return f"{m}m"
