"""The journal's side of the run facts (pure readers), and the two lines apply writes about the run.

Reading (gpujob.apply.runfacts puts these into LiveState.runs for the planner):
- launch_pending: a machine was created or started and no launch finished since (a killed apply);
- finished_marker: the run was marked finished (exit 0) for this exact job file, so it is not
  started again until the job file changes;
- launched_digest: the job file digest the last launch was made from;
- push_pending: a replace's checkpoints not yet pushed onto its successor.

Writing (gpujob.cli.session, around apply_plan): the finished mark, when a plan carries the
teardown.on_finish of a run that exited 0; the launch digest, after a launch step is done.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from gpujob.apply.journal import Journal, JournalEntry
from gpujob.plan.model import ActionKind, Plan

JournalOf = Callable[[Any], Journal]
FINISHED = "run.finished"
LAUNCHED = "run.spec"
NOT_RELAUNCHED = (
    "not relaunched:"  # a launch step's outcome when the run it found had ended and stopped its machine
)
HOST_LOST_GPU = "host-lost-gpu"  # <job>.<pod|machine>.host-lost-gpu: a start found no GPU on the host (RP1)
HOST_FAULTY = (
    "host-faulty"  # <job>.<pod|machine>.host-faulty: the preflight found its GPU unfit (gpujob.preflight)
)


def launch_pending(entries: Sequence[JournalEntry]) -> bool:
    """A machine was (being) created or started, and no launch finished since."""
    pending = False
    for e in entries:
        if e.action_id is None or ".network_volume" in e.action_id:
            continue
        kind = e.action_id.rsplit(".", 1)[-1]
        if kind in ("create", "start", "replace") and e.phase in ("intent", "done"):
            pending = True
        elif kind in ("launch", "relaunch", "terminate", "stop") and e.phase == "done":
            pending = False
    return pending


def push_pending(entries: Sequence[JournalEntry]) -> str | None:
    """Id of the machine a replace terminated whose checkpoints were never pushed onto its successor
    (the apply died, or the push failed, between the two): the next launch pushes them first."""
    pending: str | None = None
    for e in entries:
        aid = e.action_id or ""
        if aid.endswith(".checkpoints.push"):
            if e.phase == "done":
                pending = None
            elif e.resource_id:  # the replace's own line names the machine; the step's lines do not
                pending = e.resource_id
        elif e.phase == "done" and aid.rsplit(".", 1)[-1] == "terminate":
            pending = None  # the machine that would have received them is gone too
    return pending


def host_lost_gpu(entries: Sequence[JournalEntry]) -> str | None:
    """Id of the machine whose last start failed because its host has no GPU for it any more (RP1),
    unless that machine was started, replaced or terminated successfully since."""
    lost: str | None = None
    for e in entries:
        aid = e.action_id or ""
        if e.phase != "done" or ".network_volume" in aid:
            continue
        if aid.endswith("." + HOST_LOST_GPU):
            lost = e.resource_id
        elif aid.rsplit(".", 1)[-1] in ("start", "create", "replace", "terminate"):
            lost = None
    return lost


def host_faulty(entries: Sequence[JournalEntry]) -> tuple[str, str] | None:
    """(machine id, finding) of the machine the preflight last stopped as unfit to train on, unless it
    was started, replaced or terminated successfully since (a start that passes its preflight clears it)."""
    found: tuple[str, str] | None = None
    for e in entries:
        aid = e.action_id or ""
        if e.phase != "done" or ".network_volume" in aid:
            continue
        if aid.endswith("." + HOST_FAULTY) and e.resource_id:
            found = (e.resource_id, e.detail)
        elif aid.rsplit(".", 1)[-1] in ("start", "create", "replace", "terminate"):
            found = None
    return found


def finished_marker(entries: Sequence[JournalEntry], digest: str) -> JournalEntry | None:
    """The last 'run finished' mark, if it was made for this exact job file after the last launch."""
    marks = [e for e in entries if e.action_id and e.action_id.endswith("." + FINISHED)]
    last_launch = max(
        (
            i
            for i, e in enumerate(entries)
            if e.phase == "done"
            and (e.action_id or "").endswith((".launch", ".relaunch"))
            and not e.detail.startswith(NOT_RELAUNCHED)
        ),
        default=-1,
    )
    if marks and entries.index(marks[-1]) > last_launch and marks[-1].detail.endswith(digest):
        return marks[-1]
    return None


def launched_digest(entries: Sequence[JournalEntry]) -> str | None:
    """Digest of the job file the last launch was made from (None when not recorded)."""
    for e in reversed(entries):
        if e.action_id and e.action_id.endswith("." + LAUNCHED) and e.phase == "done":
            return e.detail.rsplit(" ", 1)[-1] or None
    return None


def finishing_jobs(plan: Plan) -> list[str]:
    """Jobs whose plan applies teardown.on_finish to a run that exited 0 (read off the plan's facts)."""
    out = []
    for jp in plan.jobs:
        run = jp.run
        if run is None or run.state != "exited" or run.exit_code != 0 or run.finished_for_digest:
            continue
        if any(a.kind in (ActionKind.STOP, ActionKind.TERMINATE) for a in jp.actions):
            out.append(jp.job)
    return out


def mark_finished(plan: Plan, loaded: Iterable[Any], journal_of: JournalOf, now: datetime) -> None:
    """Before the on_finish steps run: a kill mid-teardown must not let the next apply restart the run."""
    by_name = {ls.spec.name: ls for ls in loaded}
    for job in finishing_jobs(plan):
        ls = by_name.get(job)
        if ls is not None:
            journal_of(ls).append(
                "done", now, action_id=f"{job}.{FINISHED}", detail=f"exit 0; spec {ls.digest}"
            )


def record_launches(done: Iterable[str], loaded: Iterable[Any], journal_of: JournalOf, now: datetime) -> None:
    """After apply: which job file each finished launch was made from."""
    from gpujob.naming import action_prefix

    # a sweep queue's run updated in place runs this job file's version from its next cell
    ends = (".run.launch", ".run.relaunch", ".run.update")
    launched = {a.rsplit(".run.", 1)[0] for a in done if a.endswith(ends)}
    for ls in loaded:
        if action_prefix(ls.spec.name) in launched:  # a sweep queue abl--q1 acts as abl.q1
            journal_of(ls).append(
                "done", now, action_id=f"{ls.spec.name}.{LAUNCHED}", detail=f"launched from spec {ls.digest}"
            )
