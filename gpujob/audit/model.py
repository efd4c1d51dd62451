"""The audit report: every billable object in an account, who owns it and what it costs right now."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from gpujob.cost.model import MeterLine
from gpujob.live import ResourceKind, Status
from gpujob.model import Model, Platform

# this-repo: made by this checkout (its project id), whether or not a job file still names the job (one
# renamed or turned into a sweep in place: gpujob plan shows what it left); other-gpujob: a gpujob-* name
# of another checkout, or without project markers; foreign: made by something else (console, SkyPilot,
# runpodctl).
Owner = Literal["this-repo", "other-gpujob", "foreign"]
RateSource = Literal["api", "profile", "none"]


class AuditItem(Model):
    platform: Platform
    kind: ResourceKind
    id: str
    name: str
    owner: Owner
    job: str | None = Field(
        None, description="The gpujob job the name points at (for gpujob-owned resources)."
    )
    state: Status
    raw_status: str = ""
    detail: str = Field(
        "", description="Shape, e.g. '1× A100 80GB, volume 100 GB', 'unattached', 'of machine m-1'."
    )
    billable: bool
    usd_per_hour: float = 0.0
    usd_per_month: float = Field(
        0.0, description="This month's charge at the current rate, monthly caps applied."
    )
    rate_source: RateSource = "none"
    rate_note: str = ""
    meters: list[MeterLine] = Field(default_factory=list)
    since: datetime | None = None
    since_basis: str = Field("", description="What `since` is: created, started, last status change, ...")
    idle: bool = Field(False, description="Billing without doing work (stopped, unattached, orphaned).")
    idle_seconds: float | None = None
    idle_at_most_s: float | None = Field(
        None, description="When it went idle is unknown: its age, which its idle time cannot exceed."
    )
    over_threshold: bool = Field(False, description="Idle for longer than --idle-threshold.")
    gotcha: str | None = Field(None, description="Profile gotcha id explaining the trap (RP4, PS1, ...).")
    gotcha_title: str = ""
    fix: str = ""

    @property
    def label(self) -> str:
        """What a person needs to find it in the console: an IP's address (it often has no name), else the
        name, else the id."""
        if self.kind == "public_ip":
            return f"{self.id} ({self.name})" if self.name and self.name != self.id else self.id
        return self.name or self.id


class PlatformTotal(Model):
    platform: Platform
    resources: int
    billable: int
    usd_per_hour: float
    usd_per_month: float
    idle_usd_per_month: float
    owned_idle_usd_per_month: float


class AuditReport(Model):
    generated_at: datetime
    idle_threshold_s: float
    platforms: list[Platform]
    local_jobs: list[str] = Field(default_factory=list)
    items: list[AuditItem] = Field(default_factory=list)
    totals: list[PlatformTotal] = Field(default_factory=list)
    usd_per_hour: float = 0.0
    usd_per_month: float = 0.0
    idle_usd_per_month: float = 0.0
    read_errors: list[str] = Field(default_factory=list)

    @property
    def flagged(self) -> list[AuditItem]:
        return [i for i in self.items if i.billable and i.over_threshold]

    @property
    def exit_code(self) -> int:
        """2 when anything billable sits idle past the threshold (a nightly job's alarm), else 0."""
        return 2 if self.flagged else 0
