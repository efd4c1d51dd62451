"""Failover as a capability (gpujob.plan.capability): a job with fallback entries is planned across its
platforms (entry fixes and moves, before the account-wide balance), and what it holds on platforms it
no longer runs on is planned after it (gpujob.failover.leftover)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from gpujob.failover.entries import entry_fixes
from gpujob.failover.leftover import with_left
from gpujob.failover.planning import with_moves
from gpujob.plan.capability import AFTER_BALANCE, BEFORE_BALANCE, Capability, PlanRound
from gpujob.plan.model import JobPlan


def _moves(rnd: PlanRound) -> list[JobPlan]:
    if not any(ls.spec.fallback for ls in rnd.loaded):
        return rnd.jobs
    jobs = [entry_fixes(ls, jp) for ls, jp in zip(rnd.loaded, rnd.jobs, strict=True)]
    return with_moves(rnd.loaded, jobs, rnd.live, rnd.pull_records, now=rnd.now, env=rnd.env,
                      capabilities=rnd.capabilities)  # fmt: skip


def _left(rnd: PlanRound) -> list[JobPlan]:
    # A job whose failover record names a platform its file no longer lists has no fallback left,
    # but may have left resources there all the same.
    if not any(ls.spec.fallback or getattr(ls, "strays", ()) for ls in rnd.loaded):
        return rnd.jobs
    return with_left(rnd.loaded, rnd.jobs, rnd.live, now=rnd.now, env=rnd.env, pull_records=rnd.pull_records,
                     launch_records=rnd.launch_records, release=rnd.release_left,
                     capabilities=rnd.capabilities)  # fmt: skip


class Failover(Capability):
    name = "failover"

    def rounds(self) -> Mapping[str, Callable[[PlanRound], list[JobPlan]]]:
        return {BEFORE_BALANCE: _moves, AFTER_BALANCE: _left}
