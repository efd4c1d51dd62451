"""The run as a resource: what the run alive was launched with (apply.records.RunRecord, written at
launch) against what the job file says now. A difference is a `~ relaunch run <job>`: quiesce (the
run's SIGTERM save), a final pull when checkpoint.pull is continuous, launch again, resume from the
newest checkpoint. Pure; the planner calls plan_relaunch from the run rules."""

from __future__ import annotations

from typing import Any

from gpujob.invariant import present
from gpujob.jobfile.model import JobSpec
from gpujob.plan.builder import add
from gpujob.plan.context import JobContext, run_record
from gpujob.plan.model import ActionKind, DataEffect, FieldChange
from gpujob.plan.replace import run_address

Value = str | int | None


def run_changes(record: Any, spec: JobSpec) -> list[FieldChange]:
    """Every key of the run that differs, job-file order. Env values are shown (the job file holds
    them in the clear), the old one only as 'a different value' (the record keeps a digest); secrets
    by name only."""
    from gpujob.plan.records import run_record_of

    now = run_record_of(spec, record.at)
    out: list[FieldChange] = []

    def differ(path: str, before: Value, after: Value) -> None:
        if before != after:
            out.append(FieldChange(path=path, before=before, after=after))

    differ("run.command", record.command, now.command)
    differ("run.setup", record.setup, now.setup)
    env = spec.run.env if spec.run is not None else {}
    for name in sorted(set(record.env) | set(now.env)):
        old, new = record.env.get(name), now.env.get(name)
        if old != new:
            was = None if old is None else "(a different value)"
            out.append(FieldChange(path=f"run.env.{name}", before=was, after=env.get(name)))
    if record.secrets != now.secrets:
        out.append(FieldChange(path="run.secrets", before=record.secrets, after=now.secrets))
    differ("machine.image", record.image, now.image)
    differ("run.sync.dest", record.sync_dest, now.sync_dest)
    differ("checkpoint.dir", record.checkpoint_dir, now.checkpoint_dir)
    differ("checkpoint.interval", _secs(record.checkpoint_interval_s), _secs(now.checkpoint_interval_s))
    differ("checkpoint.keep", record.checkpoint_keep, now.checkpoint_keep)
    differ("run.detach", record.detach, now.detach)
    return out


# What a new version of a sweep's files carries (gpujob.layout.wrapper), so a queue's wrapper can pick
# it up between cells: the command and cells, run.env, the checkpoint interval and keep.
FROM_NEXT_CELL = ("sweep.version", "run.env.", "checkpoint.interval", "checkpoint.keep")


def _as_version(change: FieldChange) -> FieldChange:
    from gpujob.layout.wrapper import version_of

    before, after = (version_of(str(v or "")) for v in (change.before, change.after))
    return FieldChange(path="sweep.version", before=before, after=after)


def plan_queue_update(ctx: JobContext, changes: list[FieldChange], queue: tuple[str, int]) -> None:
    """A change of a running sweep queue's run: an in-place update that applies from the queue's next
    cell (the cell in flight runs on, never relaunched), when the new version of its files carries every
    key that differs; else nothing now, and a finding says when it applies."""
    m = ctx.machine
    m = present(m, "the machine of a run that changes")
    late = [c.path for c in changes if not c.path.startswith(FROM_NEXT_CELL)]
    name = f"queue q{queue[1]} of sweep {queue[0]}"
    if late:
        ctx.findings.append(
            ctx.finding(
                "sweep-change-waits",
                "info",
                f"{name} runs on with what it was launched with: a change of {', '.join(late)} cannot be picked "
                "up between cells; it applies when the queue is launched next (after it drains, or after a "
                "preemption): the cell in flight is not relaunched",
                fix=f"`gpujob apply --replace {run_address(ctx.job)}` (or `gpujob restart {run_address(ctx.job)[:-4]}`) "
                "relaunches it now (the cell in flight resumes from its checkpoint)",
            )
        )
        return
    version = next((c for c in changes if c.path == "sweep.version"), None)
    old = f" under version {version.before}" if version is not None and version.before else ""
    new = f"version {version.after}" if version is not None and version.after else "the new version"
    action = add(
        ctx,
        ActionKind.UPDATE,
        "run",
        ctx.machine_name,
        resource_id=m.id,
        reasons=[
            f"{name} was launched with a different {', '.join(c.path for c in changes)}",
            f"applies from the next cell: the cell in flight runs on{old}, then the queue picks up {new}",
            f"places {new} of the sweep's files beside the old one on {m.name} and points the queue at it",
        ],
        changes=changes,
    )
    data = DataEffect(
        summary="writes a new version of the queue's files beside the old ones (none rewritten); "
        "relaunches nothing; deletes nothing"
    )
    ctx.actions[-1] = action.model_copy(update={"data": data})


def _secs(s: int | None) -> str | None:
    return None if s is None else f"{s}s"


def plan_relaunch(ctx: JobContext, fact: Any, *, forced: bool = False) -> bool:
    """A RELAUNCH when the run alive differs from the job file (or `forced`: --replace <job>.run,
    `gpujob restart`). True when one was planned."""
    m = ctx.machine
    if m is None or ctx.spec.run is None:
        return False
    record = run_record(ctx)
    if record is None and not forced:
        ctx.findings.append(
            ctx.finding(
                "run-unrecorded",
                "info",
                "the run alive was launched before gpujob recorded what it launches: a change of run.command, "
                "run.env or checkpoint settings is not compared with it",
                fix="`gpujob restart JOB` relaunches it with the job file as it is (it resumes from its newest checkpoint)",
            )
        )
        return False
    changes = run_changes(record, ctx.spec) if record is not None else []
    if not changes and not forced:
        return False
    from gpujob.layout.queues import shown_command
    from gpujob.naming import sweep_of

    queue = sweep_of(ctx.job)
    if queue is not None:
        # A sweep queue's command carries its files: it is shown as the version it places.
        changes = [_as_version(c) if c.path == "run.command" else c for c in changes]
        if not forced:
            plan_queue_update(ctx, changes, queue)
            return False
    keys = ", ".join(c.path for c in changes)
    first = (
        f"the run alive was launched with a different {keys}"
        if changes
        else "asked for (--replace / restart)"
    )
    reasons = [
        first,
        _at_risk(fact),
        "SIGTERM to the run and up to the quiesce grace for its final save, then it is confirmed gone",
    ]
    ck = ctx.spec.checkpoint
    if ck is not None and ck.pull == "continuous":
        reasons.append(f"a final pull of {ck.dir} into {ck.pull_to} (checkpoint.pull: continuous)")
    run = ctx.spec.run
    shown = shown_command(ctx.job, run.command)
    reasons.append(
        f"sync {run.sync.src} to {run.sync.dest}, then run `{shown}` detached again ({run.detach})"
    )
    if ck is not None:
        reasons.append(f"the command resumes from the newest checkpoint in {ck.dir}")
    add(
        ctx,
        ActionKind.RELAUNCH,
        "run",
        ctx.machine_name,
        resource_id=m.id,
        reasons=reasons,
        changes=changes,
    )
    return True


def _at_risk(fact: Any) -> str:
    age = getattr(fact, "last_checkpoint_age_s", None)
    if age is None:
        return "work at risk: everything since the run's last save (no checkpoint was seen)"
    mins = int(age // 60)
    ago = f"{int(age)}s" if age < 120 else f"{mins} min"
    return f"work at risk: up to {ago} since the newest checkpoint, unless the run's SIGTERM save keeps it"
