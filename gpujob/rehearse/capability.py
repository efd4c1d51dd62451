"""Rehearse as a capability (gpujob.plan.capability): the plan of an interruptible job with a checkpoint
block shows its last drill, or that it never had one (gpujob.rehearse.record)."""

from __future__ import annotations

from typing import Any

from gpujob.plan.capability import Capability
from gpujob.plan.model import Finding
from gpujob.rehearse.record import plan_finding


class Rehearse(Capability):
    name = "rehearse"

    def spot_findings(self, ctx: Any) -> list[Finding]:
        return plan_finding(ctx)
