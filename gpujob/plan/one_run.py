"""One run per job, from the live state: a plan that would start the job's run while the live read finds
its own machine (by its ownership markers, gpujob.naming) running on another platform the job file or
its state knows is an error, whatever the local failover record says — edited, restored from a backup
taken before a move, or lost. The error names the running machine, its $/h and the command that makes
it the one: `gpujob apply --adopt <platform>` (gpujob.failover.adopt) sets the record to the live truth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpujob import naming
from gpujob.live import LiveResource, LiveState
from gpujob.plan.model import ActionKind, Finding, JobPlan

K = ActionKind
# What starts a run, or a machine for one: a second copy if the job runs elsewhere already.
STARTS = frozenset({K.CREATE, K.START, K.REPLACE, K.LAUNCH, K.RELAUNCH, K.MOVE})
ALIVE = ("running", "pending")


def machine_rate(live: LiveState, r: LiveResource) -> float:
    """What a machine bills per hour as it runs (GPU, its disks, its IP), priced as status and cost price it."""
    from gpujob.cost import rates
    from gpujob.cost.live import Pricing, footprint
    from gpujob.profile import load_profile

    profile = load_profile(r.platform)
    return rates.hourly_total(
        rates.meters(footprint(Pricing(profile=profile, quotes=live.quotes), [r]), profile)
    )


def running_elsewhere(live: LiveState, owned: Sequence[LiveResource], platform: str) -> list[LiveResource]:
    """The job's own machines running on a platform other than `platform` (not the gate's helpers)."""
    return [
        r
        for r in owned
        if r.platform != platform
        and r.kind in naming.MACHINE_KINDS
        and r.status in ALIVE
        and not naming.is_helper(r)
    ]


def adopt_words(ls: Any, platform: str) -> list[str]:
    from gpujob.errors import job_file_args

    return ["gpujob", "apply", *job_file_args(ls.path), "--adopt", platform]


def with_one_run(
    loaded: Sequence[Any], jobs: list[JobPlan], live: LiveState, owners: Mapping[str, list[LiveResource]]
) -> list[JobPlan]:
    """Each job whose plan starts a run (or a machine for one) checked against the machines of its own
    the live read finds running on its other platforms: an error per such machine."""
    from gpujob.cost.rates import usd
    from gpujob.errors import command_text

    out = []
    for ls, jp in zip(loaded, jobs, strict=True):
        starting = [a for a in jp.actions if a.kind in STARTS]
        if ls.spec.state != "running" or not starting:
            out.append(jp)
            continue
        # a move too: a half-made move's record names its target already (it is written before the create)
        alive = running_elsewhere(live, owners.get(jp.job, []), jp.platform)
        if not alive:
            out.append(jp)
            continue
        findings = []
        for r in alive:
            fix = command_text(*adopt_words(ls, r.platform))
            findings.append(
                Finding(
                    code="two-runs",
                    severity="error",
                    summary=f"job '{jp.job}' runs on {r.platform} already: {r.kind} {r.name} ({r.id}) is {r.status}, "
                    f"billing {usd(machine_rate(live, r))}/h; this plan would start another run on {jp.platform} "
                    f"({', '.join(a.id for a in starting)})",
                    detail=f"The failover record says the job runs on {jp.platform} (edited, restored from a backup "
                    f"taken before a move, or lost); the live read finds its own machine running on {r.platform}. "
                    "Two runs of one job bill twice and write checkpoints twice: nothing is started.",
                    fix=f"{fix} makes the {r.platform} machine the one (it sets the failover record to "
                    f"{r.platform}); or stop it there first if the run belongs on {jp.platform}",
                    job=jp.job,
                )
            )
        from gpujob.plan.findings import by_severity

        out.append(jp.model_copy(update={"findings": by_severity([*findings, *jp.findings])}))
    return out
