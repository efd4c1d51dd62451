"""`gpujob cost`: what each job has spent, burns now, and will have spent at max_runtime / the budget.

Spend comes from a provider's billing endpoint when it has one (an optional `async spend(resource) ->
float | None` method, duck-typed: it is not part of the Provider protocol); otherwise it is estimated
as current rates × observed time and labelled "estimate".
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from gpujob.audit.model import AuditItem
from gpujob.live import LiveResource
from gpujob.model import Model, Platform
from gpujob.plan.model import Finding
from gpujob.profile import HOURS_PER_MONTH

SpendSource = Literal["billing", "estimate"]


class ResourceSpend(Model):
    platform: Platform
    kind: str
    id: str
    name: str
    state: str
    usd: float
    source: SpendSource
    basis: str = ""
    usd_per_hour: float = 0.0


class JobCost(Model):
    job: str
    platform: Platform
    spec_file: str
    resources: list[ResourceSpend] = Field(default_factory=list)
    spent_usd: float = 0.0
    estimate: bool = Field(False, description="True when any part of spent_usd is an estimate.")
    burn_usd_per_hour: float = 0.0
    running: bool = False
    elapsed_s: float | None = Field(None, description="Time the machine has been up in its current run.")
    max_runtime_s: float | None = None
    projected_at_max_runtime_usd: float | None = None
    budget_usd: float | None = None
    budget_left_usd: float | None = None
    hours_to_budget: float | None = Field(
        None, description="Time until the budget is spent at the current burn."
    )
    over_budget: bool = False
    findings: list[Finding] = Field(default_factory=list)


class CostReport(Model):
    generated_at: datetime
    jobs: list[JobCost] = Field(default_factory=list)
    spent_usd: float = 0.0
    burn_usd_per_hour: float = 0.0
    read_errors: list[str] = Field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 2 if any(j.over_budget for j in self.jobs) else 0


def estimate_spend(item: AuditItem, r: LiveResource, now: datetime) -> tuple[float, str]:
    """Current rates × observed time: GPU meters since the last start (only while running), storage and
    add-on meters since creation, each monthly cap applied per 30-day cycle. Earlier runs are not seen."""
    total = 0.0
    parts: list[str] = []
    if item.rate_source == "api" or not item.meters:
        start = r.started_at if r.status == "running" else None
        start = start or r.created_at
        hours = max((now - start).total_seconds() / 3600, 0.0) if start else 0.0
        return item.usd_per_hour * hours, f"{item.rate_source} rate × {hours:.1f} h"
    for m in item.meters:
        compute = m.what.startswith("GPU") or "while running" in m.what
        start = r.started_at if compute else r.created_at
        if start is None:
            continue
        hours = max((now - start).total_seconds() / 3600, 0.0)
        usd = m.usd_per_hour * hours
        if m.monthly_cap_usd is not None:
            cycles = int(hours // HOURS_PER_MONTH) + 1
            usd = min(usd, m.monthly_cap_usd * cycles)
        total += usd
        parts.append(f"{m.what.split(' (')[0]} {hours:.1f} h")
    return total, "current rates × " + ", ".join(parts) if parts else "no start time known"


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


def job_cost(
    *,
    job: str,
    platform: Platform,
    spec_file: str,
    items: list[AuditItem],
    resources: Mapping[str, LiveResource],
    billed: Mapping[str, float | None],
    now: datetime,
    max_runtime_s: float | None,
    budget_usd: float | None,
) -> JobCost:
    """One job's figures from its classified resources (`items`) and any billing-endpoint amounts."""
    rows: list[ResourceSpend] = []
    for it in items:
        r = resources[it.id]
        amount = billed.get(it.id)
        if amount is not None:
            rows.append(ResourceSpend(platform=it.platform, kind=it.kind, id=it.id, name=it.name, state=it.state,
                                      usd=amount, source="billing", basis="platform billing endpoint",
                                      usd_per_hour=it.usd_per_hour))  # fmt: skip
        else:
            usd, basis = estimate_spend(it, r, now)
            rows.append(ResourceSpend(platform=it.platform, kind=it.kind, id=it.id, name=it.name, state=it.state,
                                      usd=round(usd, 4), source="estimate", basis=basis,
                                      usd_per_hour=it.usd_per_hour))  # fmt: skip
    spent = round(sum(x.usd for x in rows), 4)
    burn = round(sum(x.usd_per_hour for x in rows), 6)
    machine = next((resources[i.id] for i in items if i.kind in ("pod", "machine")), None)
    running = machine is not None and machine.status in ("running", "pending")
    elapsed = (
        (now - machine.started_at).total_seconds() if running and machine and machine.started_at else None
    )
    projected = None
    if running and max_runtime_s is not None:
        remaining = max(max_runtime_s - (elapsed or 0.0), 0.0)
        projected = round(spent + burn * remaining / 3600, 4)
    left = round(budget_usd - spent, 4) if budget_usd is not None else None
    hours_left = round(max(left, 0.0) / burn, 2) if left is not None and burn > 0 else None
    finding = budget_finding(job, spent=spent, projected=projected, budget=budget_usd, burn=burn)
    return JobCost(
        job=job, platform=platform, spec_file=spec_file, resources=rows, spent_usd=spent,
        estimate=any(x.source == "estimate" for x in rows), burn_usd_per_hour=burn, running=running,
        elapsed_s=elapsed, max_runtime_s=max_runtime_s, projected_at_max_runtime_usd=projected,
        budget_usd=budget_usd, budget_left_usd=left, hours_to_budget=hours_left,
        over_budget=finding is not None, findings=[finding] if finding else [],
    )  # fmt: skip


async def billed_amounts(provider: Any, resources: list[LiveResource]) -> dict[str, float | None]:
    """Ask the provider's optional billing method for each resource; absent or failing -> None."""
    spend = getattr(provider, "spend", None)
    if spend is None:
        return {r.id: None for r in resources}
    from gpujob.errors import GpujobError

    async def one(r: LiveResource) -> float | None:
        try:
            value = await spend(r)
        except GpujobError:
            return None
        return float(value) if value is not None else None

    values = await asyncio.gather(*(one(r) for r in resources))
    return {r.id: v for r, v in zip(resources, values, strict=True)}


def render_cost(report: CostReport, fmt: str = "text") -> str:
    if fmt == "json":
        return report.model_dump_json(indent=2) + "\n"
    from gpujob.audit.render import ago

    out: list[str] = []
    for j in report.jobs:
        label = " (estimate)" if j.estimate else ""
        out.append(
            f"{j.job} [{j.platform}]  spent ${j.spent_usd:,.2f}{label}  burn ${j.burn_usd_per_hour:,.4f}/h"
        )
        for r in j.resources:
            tag = "estimate" if r.source == "estimate" else "billed"
            out.append(f"    {r.kind:<15} {r.name:<28} {r.state:<10} ${r.usd:>10,.2f} {tag}: {r.basis}")
        if j.max_runtime_s is not None:
            if j.projected_at_max_runtime_usd is not None:
                up = ago(j.elapsed_s) if j.elapsed_s is not None else "?"
                out.append(
                    f"    at max_runtime {ago(j.max_runtime_s)} (up {up}): ${j.projected_at_max_runtime_usd:,.2f}"
                )
            else:
                out.append(f"    at max_runtime {ago(j.max_runtime_s)}: not running, no projection")
        if j.budget_usd is not None:
            when = f", lasts {j.hours_to_budget:g} h at this burn" if j.hours_to_budget is not None else ""
            out.append(f"    budget ${j.budget_usd:,.2f}: ${j.budget_left_usd:,.2f} left{when}")
        for f in j.findings:
            out.append(f"    {f.severity}: {f.summary}")
        if not j.resources:
            out.append("    nothing in the account")
    out.append(f"TOTAL spent ${report.spent_usd:,.2f}, burning ${report.burn_usd_per_hour:,.4f}/h")
    for e in report.read_errors:
        out.append(f"read error: {e}")
    return "\n".join(out) + "\n"
