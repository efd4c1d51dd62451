"""Disks as a capability (gpujob.plan.capability): the container disk findings of a run's setup (RP11)."""

from __future__ import annotations

from typing import Any

from gpujob.disks.findings import container_disk_findings
from gpujob.plan.capability import Capability
from gpujob.plan.model import Finding


class Disks(Capability):
    name = "disks"

    def disk_findings(self, ctx: Any) -> list[Finding]:
        return container_disk_findings(ctx)
