"""The cost engine's money data: one thing that bills at one rate (MeterLine), and the money consequence
of one action (Billing). Data, no behaviour; the plan carries them (gpujob.plan.model)."""

from __future__ import annotations

from pydantic import Field

from gpujob.model import Model


class MeterLine(Model):
    """One thing that bills, at one rate."""

    what: str = Field(description="e.g. 'GPU 1× A100 80GB (secure)', 'volume disk 100 GB (stopped, 2×)'")
    usd_per_hour: float
    usd_per_month: float
    monthly_cap_usd: float | None = None
    source: str = Field(
        description="price source and date, e.g. 'profile runpod 2026-06' or 'catalog 2026-11-29'"
    )


class Billing(Model):
    """Money consequence of one action."""

    starts: list[MeterLine] = Field(default_factory=list, description="Meters this action starts.")
    stops: list[MeterLine] = Field(default_factory=list, description="Meters this action stops.")
    keeps: list[MeterLine] = Field(
        default_factory=list, description="Meters still billing after this action."
    )
    hourly_before: float = 0.0
    hourly_after: float = 0.0
    summary: str = Field(
        "", description="One line, e.g. 'stop: GPU meter stops ($2.49/h); volume disk keeps billing at 2×'"
    )
