"""The run's launch and the checkpoints' actions around it: pull before anything that deletes them, push
the verified copies onto a replaced machine, and carry them across a changed checkpoint.dir.
"""

from __future__ import annotations

from typing import Any

from gpujob.invariant import present
from gpujob.plan.builder import add
from gpujob.plan.context import JobContext
from gpujob.plan.model import ActionKind

K = ActionKind


def launch_run(
    ctx: JobContext, machine_action: str | None, *, first: str | None = None, resume: str | None = None
) -> None:
    """The LAUNCH of the run; `first` leads the reasons when the launch comes from a run fact."""
    run, ck = ctx.spec.run, ctx.spec.checkpoint
    if run is None:
        return
    reasons = [first] if first else []
    from gpujob.layout.queues import shown_command

    reasons.append(
        f"sync {run.sync.src} to {run.sync.dest}, then run `{shown_command(ctx.job, run.command)}` "
        f"detached ({run.detach})"
    )
    reasons += gang_lines(ctx)
    from gpujob.layout.shown import cell_lines

    cells = cell_lines(getattr(ctx.loaded, "sweep", None))
    reasons += cells  # a sweep queue: each cell's command, values and checkpoint dir
    if resume:
        reasons.append(resume)
    elif ck is not None and not cells:
        reasons.append(f"the command resumes from the latest checkpoint in {ck.dir}")
    old = previous_ck_dir(ctx)
    if ck is not None and old is not None:
        reasons.append(
            f"checkpoint.dir changed from {old}: checkpoints still there move into {ck.dir} before the run "
            "starts (only into an empty dir; each copy read back before the original goes), so training "
            "continues from its step"
        )
    fed = _fed_env(run.env)
    if fed:
        reasons.append(fed)
    if run.secrets:
        reasons.append(f"secrets passed over SSH by name: {', '.join(run.secrets)}")
    m = ctx.machine if machine_action is None else None  # launched on the machine there is now
    fact = ctx.live.runs.get(ctx.job)
    if (
        ck is not None
        and fact is not None
        and fact.push_from
        and not any(a.kind is K.PUSH for a in ctx.actions)
    ):
        # A replace of an earlier apply erased the checkpoints' disk and the apply died before the push.
        machine_action = push_checkpoints(
            ctx,
            machine_action,
            first=f"an earlier apply replaced {fact.push_from} and stopped before this push",
        )
    add(
        ctx,
        K.LAUNCH,
        "run",
        ctx.machine_name,
        resource_id=m.id if m else None,
        reasons=reasons,
        depends_on=[machine_action],
    )


def _fed_env(env: dict[str, str]) -> str:
    """What the launcher sets so the GPU is fed (gpujob.ssh.launcher), each only where run.env does not."""
    parts = []
    threads = [n for n in ("OMP_NUM_THREADS", "MKL_NUM_THREADS") if n not in env]
    if threads:
        parts.append(f"{'/'.join(threads)} = the cgroup's CPU quota (U40: not the host's cores)")
    if "PYTHONUNBUFFERED" not in env:
        parts.append("PYTHONUNBUFFERED=1 (U43: the log is not held back in a buffer)")
    return ("environment: " + "; ".join(parts)) if parts else ""


def gang_lines(ctx: JobContext) -> list[str]:
    """A multi-node job (or torchrun on one): each node's launch line, from the live nodes when they
    have their private addresses, else with placeholders (docs/multinode.md)."""
    from gpujob.jobfile.nodes import GangError, gang_launches, is_gang, node_count, planned_launches

    spec = ctx.spec
    if not is_gang(spec):
        return []
    m = ctx.machine
    try:
        starts = gang_launches(spec, m.nodes if m is not None else [])
    except GangError:
        starts = planned_launches(spec)
    lines = [f"node {s.rank}: {s.shown()}" for s in starts]
    if node_count(spec) > 1:
        lines.insert(
            0,
            f"preflight first: every node reaches every other on port {spec.run.rendezvous_port} "  # type: ignore[union-attr]
            "over the private network, sees its GPUs, has the checkpoint dir; else nothing launches",
        )
    return lines


def previous_ck_dir(ctx: JobContext) -> str | None:
    """The checkpoint dir the last run wrote, when the job file now names another one."""
    ck = ctx.spec.checkpoint
    if ck is None:
        return None
    fact = ctx.live.runs.get(ctx.job)
    old = (fact.checkpoint_dir if fact is not None else None) or _get(ctx.pull_record, "remote_dir")
    return str(old) if old and str(old).rstrip("/") != ck.dir.rstrip("/") else None


def pull_checkpoints(ctx: JobContext, before_what: str, *, first: str | None = None) -> str:
    ck = ctx.spec.checkpoint
    ck = present(ck, "the checkpoint block of a job that pulls")
    reasons = [first] if first else []
    reasons.append(f"copy {ck.dir} to {ck.pull_to} and verify it before the {before_what}")
    rec = ctx.pull_record
    if rec is None:
        reasons.append("no pull on record: the teardown gate needs a verified pull of the latest checkpoint")
    else:
        reasons.append(_describe_record(rec))
    m = ctx.machine
    return add(ctx, K.PULL, "checkpoints", ck.dir, resource_id=m.id if m else None, reasons=reasons).id


def push_checkpoints(ctx: JobContext, replace_id: str | None, *, first: str | None = None) -> str:
    """After a replace erased the checkpoints' disk: carry the final pull's verified copies onto the new
    machine's checkpoint.dir before its run starts, so training continues from its step."""
    ck = ctx.spec.checkpoint
    ck = present(ck, "the checkpoint block of a job that pulls")
    kind = ctx.machine_kind
    reasons = [first] if first else []
    reasons += [
        f"carry the checkpoints across: the verified copies of the final pull go from {ck.pull_to} into "
        f"{ck.dir} on the new {kind} before its run starts, so training continues from its step",
    ]
    rec = ctx.pull_record
    files = [f for f in (_get(rec, "files") or []) if f.name in (_get(rec, "remote_files") or {})]
    if files:
        size = sum(f.size for f in files)
        reasons.append(
            f"{len(files)} file(s), {human_bytes(size)} as of the last pull; the final pull before the "
            "replace decides the exact set"
        )
    else:
        reasons.append("size known after the final pull before the replace (no pull on record yet)")
    return add(ctx, K.PUSH, "checkpoints", ck.dir, reasons=reasons, depends_on=[replace_id]).id


def human_bytes(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _get(rec: object, name: str) -> Any:
    return rec.get(name) if isinstance(rec, dict) else getattr(rec, name, None)


def _describe_record(rec: object) -> str:
    """One line about gpujob.plan.records.PullRecord (read by attribute, so a dict works too)."""
    when = _get(rec, "at")
    files = _get(rec, "files") or []
    verified = sum(1 for f in files if _get(f, "verified"))
    stamp = f"{when:%Y-%m-%d %H:%M} UTC" if hasattr(when, "strftime") else str(when or "unknown time")
    text = f"last pull on record: {stamp}, {len(files)} file(s), {verified} verified"
    missing = rec.missing() if hasattr(rec, "missing") else []
    if missing:
        text += f"; {len(missing)} remote file(s) not pulled since"
    return text
