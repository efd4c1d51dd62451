"""Whose resources carry a job's name: another project's are never touched (a running copy of the job there
blocks a second one here), and names of an older gpujob without project markers are pointed out.
"""

from __future__ import annotations

from gpujob import naming
from gpujob.plan.context import JobContext
from gpujob.plan.model import Finding
from gpujob.project import ENV as PROJECT_ENV


def ownership_findings(ctx: JobContext) -> list[Finding]:
    """Another project's resources under this job's name are never touched; a running machine of
    theirs blocks starting a second copy of the run here. Names of an older gpujob are pointed out."""
    out: list[Finding] = []
    theirs = naming.others(ctx.live.resources, ctx.job, ctx.project)
    busy = [r for r in theirs if r.kind == ctx.machine_kind and r.status in ("running", "pending")]
    ours_runs = ctx.machine is not None and ctx.machine.status in ("running", "pending")
    if busy and ctx.spec.state == "running" and not ours_runs:  # this plan would create or start one
        r = busy[0]
        their = naming.parse(r.name)
        out.append(
            ctx.finding(
                "owner",
                "error",
                f"job '{ctx.job}' already runs in another checkout: {ctx.machine_kind} {r.name} ({r.id}) "
                f"of {naming.describe_owner(r)}; this checkout is project {ctx.project}",
                detail="Two copies of one job would train twice and bill twice. gpujob never adopts, "
                "stops or deletes another project's resources.",
                fix=_owner_fix(ctx, their.project if their else "?"),
                key="name",
            )
        )
    elif theirs:
        out.append(
            ctx.finding(
                "owner",
                "warning",
                f"another checkout has resources for a job named '{ctx.job}': "
                + ", ".join(f"{r.name} ({r.id}, {r.status})" for r in theirs[:4])
                + f"; they are not this project's ({ctx.project}) and are left alone",
                fix="manage them from the checkout that owns them (gpujob audit lists what they cost)",
                key="name",
            )
        )
    legacy = {naming.PREFIX + ctx.job}
    nv = ctx.spec.storage.network_volume
    if nv is not None:
        legacy.add(f"{naming.PREFIX}{ctx.job}-{nv.name}")
    old = [r for r in ctx.live.resources if r.name in legacy and naming.parse(r.name) is None]
    if old:
        out.append(
            ctx.finding(
                "owner",
                "warning",
                "named like this job by a gpujob without project markers: "
                + ", ".join(f"{r.kind} {r.name} ({r.id})" for r in old)
                + "; not adopted",
                detail="Names without a project id cannot prove which checkout made them.",
                fix="pull what it holds (gpujob ssh / the console), then terminate or delete it in the console",
            )
        )
    return out


def _owner_fix(ctx: JobContext, their_project: str) -> str:
    """What to do about another project's running copy of this job. A teammate whose checkout keeps
    its state locally, while the team's lives in a database, is that other project: the fix is the
    team's state store (its project id comes with it), not a hand-set project id."""
    from gpujob.state.config import URL_ENV, Local, resolve

    try:
        local = isinstance(resolve(ctx.loaded.path, dict(ctx.env)), Local)
    except Exception:  # a broken state setting is reported where the store is opened
        local = False
    usual = (
        "stop or destroy it from the checkout that owns it, or rename this job; if it is this checkout's and "
        f"its state was lost, set {PROJECT_ENV}={their_project} (or restore .gpujob/project.json)"
    )
    if local:
        return (
            f"if your team keeps gpujob's state in a database, set {URL_ENV}=postgresql://… (or `state:` in "
            f"gpujob.yaml) as your teammates do: this checkout then shares their project. Otherwise {usual}"
        )
    return usual
