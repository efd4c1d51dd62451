"""Audit as a capability (gpujob.plan.capability): a saved `gpujob audit --fix` plan is derived again the
way audit made it (gpujob.audit.fix), before `gpujob apply` runs it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from gpujob.audit.account import fix_jobs
from gpujob.audit.classify import classify
from gpujob.audit.fix import build_fix_plan
from gpujob.live import LiveState
from gpujob.plan.capability import Capability
from gpujob.plan.model import Plan
from gpujob.profile import load_profile


class Audit(Capability):
    name = "audit"

    def derive_plan(
        self, origin: str, loaded: Sequence[Any], live: LiveState, *, now: datetime
    ) -> Plan | None:
        if origin != "audit-fix":
            return None
        jobs = fix_jobs(loaded)
        report = classify(
            live,
            local_jobs={j.name: j.project for j in jobs},
            now=now,
            idle_threshold_s=0.0,  # what the fix plan targets does not depend on the threshold
            profiles=load_profile,
            platforms=sorted({j.platform for j in jobs}),
        )
        return build_fix_plan(report, live, jobs, now=now, profiles=load_profile)
