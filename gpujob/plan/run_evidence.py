"""Evidence that the run really checkpoints and resumes, read off its status (not taken on trust).

The plan says "the command resumes from the latest checkpoint"; these checks say when the run's own
traces disagree: the newest checkpoint is much older than checkpoint.interval while the run is alive,
or the run started again from step 0 although the run before it had written checkpoints. Both the
planner (through a RunFact) and `gpujob status` (through a RunStatus) ask the same two questions here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gpujob.jobfile.model import JobSpec
from gpujob.plan.cadence import human

# An interval is a promise with some slack (a slow write, a long step): twice it is not slack any more.
STALE_FACTOR = 2


@dataclass(frozen=True)
class RunWarning:
    code: str
    summary: str
    detail: str
    fix: str
    key: str


def interval_s(spec: JobSpec) -> int | None:
    from gpujob.layout.machine import checkpoint_interval_s

    return checkpoint_interval_s(spec)


def run_age_s(started_at: str | None, now: datetime) -> float | None:
    """Seconds since the run's start stamp (the launcher writes UTC ISO, e.g. 2026-11-29T10:00:00Z)."""
    if not started_at:
        return None
    try:
        started = datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    except ValueError:
        return None  # remote text that is not a time is no evidence
    if started.tzinfo is None:
        return None
    return max(0.0, (now - started).total_seconds())


def stale_checkpoint(
    spec: JobSpec,
    *,
    alive: bool,
    started_at: str | None,
    now: datetime,
    last_checkpoint: str | None,
    age_s: float | None,
    launched_interval_s: int | None = None,
) -> RunWarning | None:
    """The run is alive, has been up longer than twice the interval, and its newest checkpoint is older
    than that (or there is none). `launched_interval_s`: the interval the run alive was launched with
    (its run record), which is what it keeps until it is relaunched, whatever the job file says now."""
    ck, every = spec.checkpoint, launched_interval_s or interval_s(spec)
    if ck is None or every is None or not alive:
        return None
    limit = STALE_FACTOR * every
    up = run_age_s(started_at, now)
    if up is not None and up <= limit:
        return None  # just (re)started: the first checkpoint of this run is not due yet
    if last_checkpoint is None:
        if up is None:
            return None
        summary = (
            f"the run has been up {human(up)} and {ck.dir} holds no checkpoint; checkpoint.interval is "
            f"{human(every)}"
        )
    elif age_s is not None and age_s > limit:
        summary = (
            f"the newest checkpoint ({last_checkpoint}) is {human(age_s)} old while the run is alive: more "
            f"than {STALE_FACTOR}× checkpoint.interval ({human(every)})"
        )
    else:
        return None
    return RunWarning(
        code="checkpoint-stale",
        summary=summary,
        detail="A preemption or stop now loses all the work since; resuming from the latest checkpoint "
        "only saves what was written.",
        fix=f"check that the command saves into $GPUJOB_CHECKPOINT_DIR every $GPUJOB_CHECKPOINT_INTERVAL "
        f"seconds ({every}) and that the saves finish (`gpujob logs`), or set checkpoint.interval to "
        "the cadence it really keeps",
        key="checkpoint.interval",
    )


def fresh_start(
    spec: JobSpec,
    *,
    first_step: int | None,
    earlier_last_step: int | None,
    earlier_span_s: float | None,
    pulled_before_start: bool,
) -> RunWarning | None:
    """This run's first reported step is 1 (it started from 0) although the run before it on the same
    disk got further and checkpoints existed: it lived through a checkpoint interval, or a pull listed
    checkpoints before this run started. Needs the command to report steps (GPUJOB_PROGRESS_FILE)."""
    ck, every = spec.checkpoint, interval_s(spec)
    if ck is None or first_step is None or first_step > 1:
        return None
    if earlier_last_step is None or earlier_last_step <= first_step:
        return None
    lived = every is not None and earlier_span_s is not None and earlier_span_s >= every
    if not (lived or pulled_before_start):
        return None
    why = (
        "a pull listed checkpoints before it started"
        if pulled_before_start
        else f"the run before it reported steps for {human(earlier_span_s or 0)}, longer than "
        f"checkpoint.interval ({human(every or 0)})"
    )
    return RunWarning(
        code="resume-from-zero",
        summary=f"the run started again from step 0 although the run before it reached step "
        f"{earlier_last_step} and checkpoints existed",
        detail=f"Its first reported step is {first_step}; {why}. The work was redone from scratch, and "
        "the next preemption or restart will redo it again.",
        fix="make the command load the newest checkpoint in $GPUJOB_CHECKPOINT_DIR when it starts "
        '(docs/job-file.md: "Your job\'s side of the contract"); `gpujob logs` shows what it did on start',
        key="run.command",
    )


def pulled_before(pull_record: object, resource_id: str | None, started_at: str | None) -> bool:
    """The job's last pull, from this machine, listed checkpoints before the current run started."""
    if pull_record is None or not started_at:
        return False
    files = getattr(pull_record, "remote_files", None) or {}
    at = getattr(pull_record, "at", None)
    if not files or not isinstance(at, datetime):
        return False
    if resource_id is not None and getattr(pull_record, "resource_id", None) not in (None, resource_id):
        return False
    try:
        started = datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    except ValueError:
        return False
    return started.tzinfo is not None and at < started


def progress_facts(status: object) -> dict[str, Any]:
    """From a RunStatus: the first step this run reported, and how far the run before it on the same
    disk got and for how long it reported steps (RunFact's first_step / earlier_*)."""
    first = getattr(status, "progress_first", None)
    history = getattr(status, "history", None) or []
    earlier = history[-1] if history else None
    out: dict[str, Any] = {"first_step": first.step if first is not None else None}
    if earlier is not None and earlier.last is not None:
        out["earlier_last_step"] = earlier.last.step
        if earlier.first is not None:
            out["earlier_span_s"] = max(0.0, earlier.first.age_s - earlier.last.age_s)
    return out


def status_warnings(
    spec: JobSpec, status: object, pull_record: object, now: datetime
) -> list[dict[str, str]]:
    """The same two checks on a RunStatus (gpujob.ssh.launcher), for `gpujob status` text and JSON."""
    facts = progress_facts(status)
    started_at = getattr(status, "started_at", None)
    found = [
        stale_checkpoint(
            spec,
            alive=bool(getattr(status, "alive", False)),
            started_at=started_at,
            now=now,
            last_checkpoint=getattr(status, "last_checkpoint", None),
            age_s=getattr(status, "last_checkpoint_age_s", None),
        ),
        fresh_start(
            spec,
            first_step=facts.get("first_step"),
            earlier_last_step=facts.get("earlier_last_step"),
            earlier_span_s=facts.get("earlier_span_s"),
            pulled_before_start=pulled_before(pull_record, None, started_at),
        ),
    ]
    return [{"code": w.code, "summary": w.summary, "fix": w.fix} for w in found if w is not None]
