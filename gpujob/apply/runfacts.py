"""Run facts: what the run on each job's machine is doing, read during refresh so the plan can see it.

Two sources, both read-only: the local journal (a launch a killed apply left undone, a run already
marked finished for this job file) and, for machines that are running, the run status over SSH with
the project key and the pinned host keys. SSH reads go to every machine at once with a short
timeout; an unreachable machine yields an "unknown" fact, never an exception. Planning never creates
the state dir, a key or a pin that was not there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from gpujob.live import LiveResource, LiveState, RunFact
from gpujob.naming import machine_kind_of
from gpujob.plan import run_evidence

RUN_READ_TIMEOUT_S = 8.0
NOT_REFRESHED = "not read over SSH (--no-refresh-runs)"


def wants_run_facts(spec: Any) -> bool:
    return spec.state == "running" and spec.run is not None


def running_machine(ls: Any, live: LiveState) -> LiveResource | None:
    """The job's own running pod / machine (gpujob.naming's rule), if any."""
    from gpujob.naming import machines

    kind = machine_kind_of(ls.spec.platform, ls.spec.machine.nodes)
    for r in machines(live.resources, ls.spec.name, ls.project):
        if r.kind == kind and r.status == "running":
            return r
    return None


def journal_facts(loaded: Any) -> dict[str, Any]:
    """launch_pending, finished_for_digest, launched_digest and push_from from the job's journal."""
    from gpujob.apply.journal import Journal
    from gpujob.apply.reconcile import finished_marker, launch_pending, launched_digest, push_pending
    from gpujob.layout.isolation import queue_drained
    from gpujob.state import open_store

    entries = Journal(open_store(loaded.path), loaded.spec.name).entries()
    facts: dict[str, Any] = {}
    if entries:
        facts = {
            "launch_pending": launch_pending(entries),
            "finished_for_digest": finished_marker(entries, loaded.digest) is not None,
            "launched_digest": launched_digest(entries),
            "push_from": push_pending(entries),
        }
    # a sweep queue is finished by its cells, not by its job file: a new version of the sweep's
    # files (another queue's cells changed) gives every queue a new digest, and starting a drained
    # queue's machine again would run nothing and bill until something stops it
    if queue_drained(loaded):
        facts["finished_for_digest"] = True
    return facts


def journal_machine_facts(loaded: Sequence[Any], live: LiveState) -> LiveState:
    """What only the journal knows about a job's machine, as attributes on its live resource so the
    planner reads it next to what the platform reports, on stopped machines: `host_lost_gpu` (RP1) when
    the last start found no GPU on its host; `host_faulty` (the finding) when the preflight stopped it; `stopped_at` when gpujob stopped it; `run_launched_at` when a run was last launched; `run_finished_at`
    when its last run was marked finished (exit 0) after its last launch."""
    from gpujob.apply.journal import Journal
    from gpujob.apply.reconcile import host_faulty, host_lost_gpu
    from gpujob.naming import machines
    from gpujob.state import open_store

    marks: dict[str, dict[str, str | bool]] = {}
    for ls in loaded:
        entries = Journal(open_store(ls.path), ls.spec.name).entries()
        rid = host_lost_gpu(entries)
        if rid is not None:
            marks.setdefault(rid, {})["host_lost_gpu"] = True
        faulty = host_faulty(entries)
        if faulty is not None:
            marks.setdefault(faulty[0], {})["host_faulty"] = faulty[1] or "the preflight found its GPU unfit"
        for r in machines(live.resources, ls.spec.name, ls.project) if entries else []:
            if r.status == "stopped":
                marks.setdefault(r.id, {}).update(_stop_marks(entries, r.id))
    marks = {rid: m for rid, m in marks.items() if m}
    if not marks:
        return live
    resources = [
        r.model_copy(update={"attributes": {**r.attributes, **marks[r.id]}})
        if r.id in marks and r.status == "stopped"
        else r
        for r in live.resources
    ]
    return live.model_copy(update={"resources": resources})


def _stop_marks(entries: Sequence[Any], resource_id: str) -> dict[str, str | bool]:
    """When gpujob last stopped this machine, and when the run was last marked finished after a launch
    (a pull after that time holds everything the run wrote)."""
    from gpujob.apply.reconcile import FINISHED

    out: dict[str, str | bool] = {}
    finished = None
    for e in entries:
        aid = e.action_id or ""
        if e.phase != "done":
            continue
        if aid.endswith(".stop") and e.resource_id == resource_id:
            out["stopped_at"] = e.at.isoformat()
        elif aid.endswith(".run.launch"):
            finished = None
            out["run_launched_at"] = e.at.isoformat()  # a pull the stop took before it is not current
        elif aid.endswith("." + FINISHED):
            finished = e.at
    if finished is not None:
        out["run_finished_at"] = finished.isoformat()
    return out


async def read_run_facts(
    loaded: Sequence[Any],
    live: LiveState,
    providers: Mapping[str, Any],
    *,
    refresh: bool = True,
    timeout: float = RUN_READ_TIMEOUT_S,
    ssh: Any = None,
) -> dict[str, RunFact]:
    """A RunFact for every job that wants a run (state: running with a run section)."""
    wanted = [ls for ls in loaded if wants_run_facts(ls.spec)]
    reads = []
    for ls in wanted:
        machine = running_machine(ls, live)
        if machine is None:
            reads.append(_not_read("the machine is not running"))
        elif not refresh:
            reads.append(_not_read(NOT_REFRESHED, machine))
        else:
            reads.append(_read_one(ls, machine, providers.get(ls.spec.platform), ssh, timeout))
    facts = await asyncio.gather(*reads)
    out: dict[str, RunFact] = {}
    for ls, fact in zip(wanted, facts, strict=True):
        out[ls.spec.name] = fact.model_copy(update=journal_facts(ls))
    return out


async def _not_read(reason: str, machine: LiveResource | None = None) -> RunFact:
    return RunFact(reason=reason, resource_id=machine.id if machine else None)


async def _read_one(ls: Any, machine: LiveResource, provider: Any, ssh: Any, timeout: float) -> RunFact:
    try:
        status = await asyncio.wait_for(_status(ls, machine, provider, ssh, timeout), timeout)
    except TimeoutError:
        return _unknown(machine, f"no answer over SSH within {timeout:g}s")
    except Exception as exc:  # any failure of the read is a fact about the run, not a crash of the plan
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        return _unknown(machine, first)
    if isinstance(status, str):
        return _unknown(machine, status)
    return RunFact(
        state=status.state,
        resource_id=machine.id,
        exit_code=status.exit_code,
        started_at=status.started_at,
        last_checkpoint=status.last_checkpoint,
        last_checkpoint_age_s=status.last_checkpoint_age_s,
        checkpoint_dir=status.checkpoint_dir,
        ended=getattr(status, "ended", None),
        earlier_ooms=getattr(status, "earlier_ooms", 0),
        finished_at=getattr(status, "finished_at", None),
        **run_evidence.progress_facts(status),
    )


def _unknown(machine: LiveResource, reason: str) -> RunFact:
    return RunFact(state="unknown", reason=reason, resource_id=machine.id)


async def _status(ls: Any, machine: LiveResource, provider: Any, ssh: Any, timeout: float) -> Any:
    """RunStatus, or a string saying why the status cannot be read from here."""
    from gpujob.apply.runtime import read_status_once

    if provider is None:
        return f"no {ls.spec.platform} provider open"
    from gpujob.state import open_store

    return await read_status_once(ls.spec, machine, provider, open_store(ls.path), ssh=ssh, timeout=timeout)
