"""A failback the home platform refused: bounded, said, and the job runs on where it is.

`failback: auto` moves a job home when home's catalog says it can serve (gpujob.failover.choice). A
home that refuses the start anyway (no capacity after all, a bid under the floor, a machine that never
answers) fails the move (gpujob.failover.move), which then:

- stops whatever the move itself started at home (a machine it created or started there and left
  running or starting bills by the hour for nothing: `stop_half_started`);
- puts the record back on the fallback, the failed move kept in its moves (the record is the state);
- leaves the job to run on where it is: while a failback waits (`RETRY_S` after a refusal) or is held
  (`TRIES` refusals in a row), the chooser proposes no move home, so the plan, `apply` and `watch`
  start the stopped machine on the fallback and launch the run there as for any stopped job.

After `TRIES` refusals in a row the failback is held until a person clears it: `gpujob apply --adopt
<the platform it runs on>` (the adoption ends the row of refusals; the next plan moves it home again
when home can serve), or `failback: never` in the job file to stay.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

TRIES = 3  # failbacks home may refuse in a row before they are held for a person
RETRY_S = 600.0  # after a refused failback, the next one waits this long (the job runs on meanwhile)
EVENT = "failback-refused"
BILLING = ("running", "pending")  # a machine in these states bills by the hour


def refusals(record: Any) -> list[Any]:
    """The record's failed moves home (to entry -1) in a row, newest last: each one a failback home
    refused (a move that failed put the record back where it came from)."""
    out: list[Any] = []
    for m in reversed(list(getattr(record, "moves", None) or [])):
        if m.to_entry != -1 or not str(m.outcome).startswith("failed"):
            break
        out.append(m)
    return out[::-1]


def _why(move: Any) -> str:
    return str(move.outcome).removeprefix("failed:").strip() or "no reason given"


def hold(declared: Any, entry: int, record: Any, now: datetime) -> str:
    """Why no failback is proposed now ("" when one may be): it waits RETRY_S after a refusal, and is
    held after TRIES refusals in a row, naming the command that clears it."""
    from gpujob.jobfile.fallback import place_name

    if entry < 0 or declared.failback != "auto":
        return ""
    refused = refusals(record)
    if not refused:
        return ""
    last = refused[-1]
    home, here = place_name(declared, -1), place_name(declared, entry)
    here_platform = declared.fallback[entry].platform
    said = f"{home} refused the start {len(refused)} time(s) in a row (last at {last.at:%H:%M} UTC: {_why(last)})"
    if len(refused) >= TRIES:
        return (
            f"failback held: {said}; the job runs on {here}; to try the move home again: "
            f"`gpujob apply --adopt {here_platform}` (or set failback: never to stay)"
        )
    again = last.at + timedelta(seconds=RETRY_S)
    if now < again:
        return (
            f"failback waits: {said}; the job runs on {here} meanwhile; tried again after "
            f"{again:%H:%M} UTC ({len(refused)} of {TRIES} before it is held)"
        )
    return ""


def loaded_hold(ls: Any, now: datetime) -> str:
    """`hold` for a loaded job (its record read from its project's store)."""
    declared = getattr(ls, "declared", None) or ls.spec
    entry = getattr(ls, "entry", -1)
    if entry < 0 or declared.failback != "auto":
        return ""
    from gpujob.project.placement import read_placement
    from gpujob.state import open_store

    return hold(declared, entry, read_placement(open_store(ls.path), declared.name), now)


def refused_event(declared: Any, entry: int, record: Any, now: datetime) -> tuple[str, str]:
    """(happened, did) of the failback-refused event after a failed move home, from the record."""
    from gpujob.jobfile.fallback import place_name

    refused = refusals(record)
    n = len(refused)
    home, here = place_name(declared, -1), place_name(declared, entry)
    why = _why(refused[-1]) if refused else "no reason given"
    happened = f"{home} refused the start ({why}): failback {n} of {TRIES}"
    said = hold(declared, entry, record, now)
    if n >= TRIES:
        return happened, f"the job runs on {here}; {said.split('; ', 2)[-1]}"
    return happened, (
        f"the job runs on {here}: its machine there is started again and the run relaunched (the next "
        f"watch tick or `gpujob apply`); {said.split('; ')[-1]}"
    )


async def stop_half_started(
    live: Any, job: str, project: str | None, platform: str, before: Sequence[str], stop: Any, note: Any
) -> list[str]:
    """Stop every machine of the job on `platform` that is running or starting now and was not before
    the move (`before`: the ids that were): the failed move started it, and it would bill by the hour
    for nothing. `stop(machine)`: the one stop (gpujob.apply.quiesce.stop: its processes get their
    grace first). Returns what it did, each line noted too."""
    from gpujob import naming

    done: list[str] = []
    for r in naming.machines(live.resources, job, project):
        if r.platform != platform or r.id in before or r.status not in BILLING:
            continue
        try:
            await stop(r)
        except Exception as exc:  # said, never hidden: it may still bill
            done.append(
                f"could not stop {r.kind} {r.name} ({r.id}) on {platform}: {str(exc).splitlines()[0]}"
            )
            continue
        done.append(f"stopped {r.kind} {r.name} ({r.id}) on {platform}, which the failed move had started")
    for line in done:
        note(line)
    return done


def alive_ids(live: Any, job: str, project: str | None, platform: str) -> list[str]:
    """The ids of the job's machines on `platform` that bill by the hour now (running or starting)."""
    from gpujob import naming

    return [
        r.id
        for r in naming.machines(live.resources, job, project)
        if r.platform == platform and r.status in BILLING
    ]
