"""`gpujob apply --adopt <platform>`: the job's failover record set to the live truth.

When the live read finds the job's own machine (by its ownership markers) running on a platform its
record does not name — the record edited, restored from a backup taken before a move, or lost — every
plan that would start the run refuses (gpujob.plan.one_run). Adopting writes the record to say the
job runs where its machine runs, with the adoption kept in its moves as history; nothing on any
platform is created, started, stopped or deleted. After it, a plan reads the job where it runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from gpujob.errors import GpujobError


def entry_for(declared: Any, platform: str) -> int:
    """The chain entry on `platform`: -1 for the job file's own platform, i for fallback[i]."""
    if declared.platform == platform:
        return -1
    for i, f in enumerate(declared.fallback):
        if f.platform == platform:
            return i
    listed = ", ".join([declared.platform, *(f.platform for f in declared.fallback)])
    raise GpujobError(
        f"job '{declared.name}': the job file lists no {platform} entry (it lists {listed})",
        hint="add a fallback entry for it, or stop that machine from the platform's console",
    )


def adopt(loaded: Sequence[Any], live: Any, platform: str, *, now: datetime) -> list[str]:
    """Write each job's failover record to say it runs on `platform`, where the live read finds its own
    machine running; the lines say what was done. Refused when no job's machine runs there."""
    from gpujob import naming
    from gpujob.cost.rates import usd
    from gpujob.plan.one_run import ALIVE, machine_rate
    from gpujob.project.placement import Move, Placement, read_placement, write_placement
    from gpujob.state import open_store

    lines: list[str] = []
    found = False
    for ls in loaded:
        declared = getattr(ls, "declared", None) or ls.spec
        mine = [
            r
            for r in naming.machines(live.resources, declared.name, ls.project)
            if r.platform == platform and r.status in ALIVE
        ]
        if not mine:
            lines.append(f"{declared.name}: no machine of its own runs on {platform}: record left as it is")
            continue
        found = True
        r = mine[0]
        entry = entry_for(declared, platform)
        store = open_store(ls.path)
        old = read_placement(store, declared.name)
        was_platform = old.platform if old is not None else declared.platform
        was_entry = old.entry if old is not None else -1
        running = f"{r.kind} {r.name} ({r.id}, {r.status}, {usd(machine_rate(live, r))}/h)"
        from gpujob.failover.failback import refusals

        refused = refusals(old) if entry >= 0 else []
        if (was_platform, was_entry) == (platform, entry) and not refused:
            lines.append(f"{declared.name}: its record names {platform} already, where {running} runs")
            continue
        why = f"adopted: {running} runs there (gpujob apply --adopt)"
        if refused:  # the adoption ends the row of failbacks home refused: the next one is tried again
            why += f"; the failback hold after {len(refused)} refusal(s) is cleared"
        move = Move(
            at=now, from_entry=was_entry, to_entry=entry, from_platform=was_platform,  # type: ignore[arg-type]
            to_platform=platform, why=why, outcome="adopted",  # type: ignore[arg-type]
        )  # fmt: skip
        moves = [*(old.moves if old is not None else []), move]
        write_placement(
            store, Placement(job=declared.name, entry=entry, platform=platform, since=now, moves=moves)
        )  # type: ignore[arg-type]
        lines.append(
            f"{declared.name}: adopted {running}: its failover record now says {platform} (was {was_platform})"
            + (f"; the failback hold is cleared ({len(refused)} refusal(s) home)" if refused else "")
        )
    if not found:
        raise GpujobError(
            f"no job here has a machine of its own running on {platform}; nothing was adopted",
            hint="`gpujob status` lists where each job's machines are",
        )
    return lines


async def adopt_live(
    loaded: Sequence[Any], providers: Mapping[str, Any], platform: str, *, now: datetime
) -> list[str]:
    from gpujob.apply.refresh import read_live_state
    from gpujob.failover.entries import strays_read

    also = (strays_read(loaded) | {platform}) & set(providers)
    live = await read_live_state([ls.spec for ls in loaded], providers, also=also)
    if live.read_errors:
        raise GpujobError(
            f"live state is incomplete ({'; '.join(live.read_errors)}); nothing was adopted",
            hint="run it again once the platforms answer",
        )
    return adopt(loaded, live, platform, now=now)
