"""Stops under the Iron Law (seeds/references/lifecycle_checklist.md: no stop until the checkpoints are
pulled and verified): which stops would leave the newest checkpoint only on the machine's own disk, and
the approval that accepts an on-box stop that cannot pull.

A stop strands checkpoint.dir when its tier is one a stop wipes, bills at more than the running rate
(RunPod's volume disk: 2×, RP4) or deletes on a clock (RunPod removes stopped pods after about 30 days,
and at once when the balance runs low, RP8). A network volume is none of these, nor is a Paperspace
machine's disk (kept and billed alike while off). gpujob's own stops (gpujob.apply.quiesce.stop) pull and
verify first; the pod's on-box stop at the end of the run (teardown.on_finish / on_failure: stop, done by
the launcher with runpodctl), and the on-box agent's stop when budget.max_total_usd or run.stall_after
trips (gpujob.ssh.guard), cannot pull, so the plan refuses it with an error unless the job's exact
`<job>.pod.self-stop` is approved (--approve, as every gated action is: `accept_risks`)."""

from __future__ import annotations

from typing import Any

from gpujob.jobfile.model import JobSpec
from gpujob.live import LiveResource
from gpujob.plan.context import path_tier
from gpujob.plan.trap_findings import STOPPED_POD_DAYS  # RunPod removes stopped pods after ~30 days (RP8)

CODE = "self-stop-unpulled"


def live_tier(spec: JobSpec, machine: LiveResource | None) -> str | None:
    """The tier checkpoint.dir is on, for `machine` as it is (None: no checkpoint block)."""
    ck = spec.checkpoint
    if ck is None:
        return None
    tier = path_tier(spec, ck.dir)
    if machine is None or spec.platform != "runpod" or tier == "container_disk":
        return tier
    if tier.startswith("network_volume") and machine.network_volume_id is None:
        return "volume_disk" if machine.volume_gb else "container_disk"
    return tier


def stop_risk(profile: Any, spec: JobSpec, tier: str | None) -> str | None:
    """What a stop does to checkpoints on `tier` (None: nothing, a stop keeps them as they are)."""
    if tier is None:
        return None
    t = profile.tier(tier)
    if not profile.survives(tier, "stop"):
        return f"a stop wipes the {t.title}"
    said = []
    if t.price_gb_month_stopped > t.price_gb_month_running:
        times = t.price_gb_month_stopped / t.price_gb_month_running if t.price_gb_month_running else 0
        said.append(f"bills {times:g}× while stopped (RP4)" if times else "bills more while stopped")
    if spec.platform == "runpod" and not tier.startswith("network_volume"):
        said.append(
            f"is deleted with the pod when the balance runs low or after about {STOPPED_POD_DAYS} days "
            "stopped, with no backup (RP8)"
        )
    return f"the {t.title} " + " and ".join(said) if said else None


def approval_id(job: str) -> str:
    """The --approve id that accepts an on-box stop leaving the checkpoints on the pod's disk."""
    return f"{job}.pod.self-stop"


def self_stops(spec: JobSpec) -> list[str]:
    """The teardown keys whose stop the launcher does on the machine itself (gpujob.ssh.launcher)."""
    from gpujob.naming import SEP

    if spec.platform != "runpod" or spec.run is None:
        return []
    out = []
    if spec.teardown.on_finish == "stop" and SEP not in spec.name:  # a sweep queue is stopped by gpujob
        out.append("on_finish")
    if spec.teardown.on_failure == "stop":
        out.append("on_failure")
    return out + guard_stops(spec)


def guard_stops(spec: JobSpec) -> list[str]:
    """The limits whose stop the launcher's on-box agent does with nobody watching (gpujob.ssh.guard:
    `launcher.sh guard`, RunPod only, never a sweep's queue): the same stop that cannot pull first."""
    from gpujob.naming import SEP

    if spec.platform != "runpod" or spec.run is None or SEP in spec.name:
        return []
    out = []
    if spec.budget.max_total_usd is not None:
        out.append("budget.max_total_usd")
    if spec.run.stall_after is not None:
        out.append("run.stall_after")
    return out


def accept_risks(plan: Any, approvals: set[str]) -> Any:
    """The plan with each self-stop-unpulled error whose approval was given turned into a warning that
    says so (the plan is a value; apply, watch and plan call this with their --approve ids)."""
    if not approvals:
        return plan
    jobs = []
    for jp in plan.jobs:
        findings = [_accepted(f, approvals) for f in jp.findings]
        jobs.append(jp.model_copy(update={"findings": findings}) if findings != jp.findings else jp)
    return plan.model_copy(update={"jobs": jobs})


def _accepted(f: Any, approvals: set[str]) -> Any:
    if f.code != CODE or f.severity != "error" or f.job is None or approval_id(f.job) not in approvals:
        return f
    return f.model_copy(
        update={
            "severity": "warning",
            "summary": f.summary + f" (risk accepted: {approval_id(f.job)} approved)",
        }
    )
