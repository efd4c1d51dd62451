"""What the job files no longer name: a job of this checkout (its project) whose machine or volume still
runs or bills although no job file names it any more (renamed, turned into a sweep, a queue the sweep no
longer has). `gpujob plan` and `gpujob destroy` show it and end it as they would a job with
state: absent: its machine's checkpoints pulled and verified, every delete gated.

`with_unnamed` adds one LoadedSpec per such job, the file's own spec under the old name with
state: absent (`LoadedSpec.unnamed` says why); the planner gives it only what no named job claims, so a
sweep's volume, shared by its queues and named like the job the sweep once was, is never its.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from gpujob import naming
from gpujob.cost.rates import usd
from gpujob.live import LiveResource, LiveState
from gpujob.plan.model import ActionKind, Finding, JobPlan

GONE = ("terminating", "gone")


def is_unnamed(ls: Any) -> bool:
    return bool(getattr(ls, "unnamed", ""))


def with_unnamed(loaded: Sequence[Any], live: LiveState) -> list[Any]:
    """`loaded`, then one absent LoadedSpec per job of these files' projects that owns a live machine or
    volume no loaded job claims."""
    named = [ls for ls in loaded if not is_unnamed(ls)]
    names = checkout_names(named)
    if names is None:
        return list(named)  # a job file of the checkout does not load: what it names is unknown
    volume_jobs = {naming.volume_job(n) for n in names}
    projects = {ls.project for ls in named if ls.project}
    machines = naming.machines_by_id(live.resources)
    found: dict[tuple[str, str], str] = {}
    for r in live.resources:
        o = naming.owner(r, machines)
        if o is None or o.project not in projects or r.status in GONE or naming.is_helper(r):
            continue
        if r.kind not in (*naming.MACHINE_KINDS, "network_volume"):
            continue  # IPs and snapshots go with their machine
        if o.job in (volume_jobs if r.kind == "network_volume" else names):
            continue
        found.setdefault((o.job, o.project), r.platform)
    out = list(named)
    for (job, project), platform in sorted(found.items()):
        base = _base(named, project, platform)
        if base is None:
            continue  # no job file of this checkout plans that platform: audit lists it
        spec = _spec_of(base)
        gone = spec.model_copy(update={"name": job, "state": "absent", "sweep": None, "fallback": []})
        why = _why(job, spec.name, str(base.path))
        out.append(dataclasses.replace(base, spec=gone, sweep=None, entry=-1, declared=None, strays=(),
                                       unnamed=why))  # fmt: skip
    return out


def checkout_names(loaded: Sequence[Any]) -> set[str] | None:
    """Every job the checkout's job files name, not only the files given (`gpujob plan jobs/a.yaml`
    must never take jobs/b.yaml's running pod for a job no file names): the loaded jobs and those of
    every job file beside them, in their checkout's root and in the current directory. None when one of
    them does not load."""
    from pathlib import Path

    from gpujob.errors import GpujobError
    from gpujob.spec.files import discover_job_files
    from gpujob.spec.load import load_specs

    names = {ls.spec.name for ls in loaded}
    have = {Path(ls.path).resolve() for ls in loaded}
    roots = {Path.cwd()}
    for ls in loaded:
        d = Path(ls.path).resolve().parent
        roots |= {d, d.parent} if d.name == "jobs" else {d}
    others = sorted({p.resolve() for r in roots for p in discover_job_files(r)} - have)
    if others:
        try:
            names |= {ls.spec.name for ls in load_specs(others)}
        except (GpujobError, ValueError, OSError):
            return None
    return names


def _spec_of(ls: Any) -> Any:
    """The job file's own spec (a sweep queue's is its origin's)."""
    origin = getattr(getattr(ls, "sweep", None), "origin", None)
    return (origin.declared or origin.spec) if origin is not None else (ls.declared or ls.spec)


def _base(loaded: Sequence[Any], project: str, platform: str) -> Any:
    return next((ls for ls in loaded if ls.project == project and _spec_of(ls).platform == platform), None)


def _why(job: str, now_named: str, path: str) -> str:
    queue = naming.sweep_of(job)
    if queue is not None and queue[0] == now_named:
        return f"queue q{queue[1]} of sweep {now_named}, which {path} no longer runs"
    if job == now_named:
        return f"{path} turned job '{job}' into a sweep"
    return f"{path} no longer names job '{job}' (renamed or removed)"


def unclaimed(owned: list[LiveResource], claimed: set[str]) -> list[LiveResource]:
    return [r for r in owned if r.id not in claimed]


def unnamed_finding(ctx: Any, current_usd_per_hour: float) -> Finding:
    """Why a job no file names is in the plan, what of it runs or bills, and what ends it."""
    what = [
        f"{r.kind} {r.name} ({r.id}, {r.status})"
        for r in [ctx.machine, ctx.volume, *ctx.stale_volumes]
        if r is not None
    ]
    ends = [a.id for a in ctx.actions if a.gated]
    how = f"approve its end: --approve {' --approve '.join(ends)} (its checkpoints are pulled first)"
    return ctx.finding(
        "unnamed",
        "warning",
        f"{ctx.loaded.unnamed}, but what it made still bills {usd(current_usd_per_hour)}/h: "
        f"{', '.join(what) or 'its resources'}; this plan ends it as state: absent would",
        detail="A job file changed in place leaves what the old job made running: gpujob still owns it "
        "(this checkout's project) and shows it until it is gone.",
        fix=f"{how if ends else 'apply this plan'}, or name job '{ctx.job}' in the job file again to keep it",
        key="name",
    )


WRITERS = "is also mounted by "


def explain_writers(jobs: list[JobPlan]) -> list[JobPlan]:
    """A named job's concurrent-writers error whose other writers are machines of a job the file no longer
    names says so, and how to end them first (their end is in this plan, but the error blocks it)."""
    ends = {a.resource_name: (j.job, a.id) for j in jobs for a in j.actions
            if a.kind is ActionKind.TERMINATE and any(f.code == "unnamed" for f in j.findings)}  # fmt: skip
    out = []
    for j in jobs:
        fs = []
        for f in j.findings:
            writers = f.summary.partition(WRITERS)[2].split(", ") if f.code == "concurrent-writers" else []
            if writers and all(w in ends for w in writers):
                olds = sorted({ends[w][0] for w in writers})
                ids = ", ".join(ends[w][1] for w in writers)
                f = f.model_copy(update={"fix": (
                    f"it is job {', '.join(repr(o) for o in olds)}'s, which the job file no longer names; "
                    f"this plan would end it ({ids}, gated), but this error blocks the plan: end it first, "
                    f"e.g. name job {olds[0]!r} again with state: parked (terminates its machine, keeps the "
                    "volume) and `gpujob apply`, then plan again")})  # fmt: skip
            fs.append(f)
        out.append(j if fs == j.findings else j.model_copy(update={"findings": fs}))
    return out
