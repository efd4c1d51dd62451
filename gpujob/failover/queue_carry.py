"""A sweep queue's move (docs/sweeps.md, "With fallback:"): each queue `<job>--q<N>` is the unit that
moves, and its move carries what a queue needs so that no finished cell ever runs again and its cell
in flight resumes where it was:

- the records of the cells it finished or failed: each cell's record (`gpujob-cell.txt`, its exit
  code) as pulled home with its results (a sweep with fallback pulls them continuously,
  gpujob.watch.pulls), written as the wrapper's own never-run-again records (`state/<cell>.exit`,
  `.starts`) on the new machine before its run is launched, so its wrapper skips those cells there;
- for each cell it has not finished, the newest checkpoint of that cell verified here (by
  checkpoint.verify and by sha256), pushed into the cell's own `GPUJOB_CHECKPOINT_DIR` there, so
  the cell resumes from that step.

What is only on the old machine's disk (a cell that ended after the last pull) is not known here: that
cell counts as not finished and resumes from its newest verified checkpoint there.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from gpujob.jobfile.cells import sweep_dir


@dataclass(frozen=True)
class QueueCarry:
    queue: str  # q<N>
    finished: dict[str, int] = field(default_factory=dict)  # cell -> its recorded exit code
    left: tuple[str, ...] = ()  # the cells still to run, in queue order
    checkpoints: dict[str, tuple[str, int | None]] = field(default_factory=dict)  # cell -> (file, step)

    def files(self) -> list[str]:
        return [name for name, _ in self.checkpoints.values()]

    def in_flight(self) -> tuple[str, str, int | None] | None:
        """(cell, file, step) of the first cell left with a checkpoint carried: the one in flight."""
        for cell in self.left:
            if cell in self.checkpoints:
                name, step = self.checkpoints[cell]
                return cell, name, step
        return None


def drained(ls: Any) -> bool:
    """A queue whose every cell has its record home: nothing left to run, so nothing to move."""
    from gpujob.layout.isolation import queue_drained

    return queue_drained(ls)


def queue_carry(ls: Any, record: Any = None) -> QueueCarry | None:
    """What the move of queue `ls` carries (None: `ls` is no sweep queue). `record`: the queue's pull
    record (read from the project's state when None)."""
    q = getattr(ls, "sweep", None)
    if q is None:
        return None
    from gpujob.layout.isolation import local_records
    from gpujob.layout.outputs import pull_to

    cells = [c.name for c in q.cells]
    recs = local_records(pull_to(ls.spec, ls.path), cells)
    finished = {c: int(r.exit) for c, r in recs.items() if r is not None and r.exit is not None}
    left = tuple(c for c in cells if c not in finished)
    if record is None and ls.spec.checkpoint is not None:
        from gpujob.plan.records import load_pull_record
        from gpujob.state import open_store

        record = load_pull_record(open_store(ls.path), ls.spec.name)
    return QueueCarry(
        queue=f"q{q.n}", finished=finished, left=left, checkpoints=_newest_per_cell(ls, record, left)
    )


def _newest_per_cell(ls: Any, record: Any, cells: tuple[str, ...]) -> dict[str, tuple[str, int | None]]:
    from gpujob.plan.records import step_of

    if record is None or ls.spec.checkpoint is None:
        return {}
    local = _local_dir(ls)
    out: dict[str, tuple[str, int | None]] = {}
    for cell in cells:
        mine = [f for f in record.files if f.name.startswith(cell + "/") and f.verified and f.checksum_ok]
        mine.sort(key=lambda f: (step_of(f.name) is not None, step_of(f.name) or 0, f.at), reverse=True)
        for f in mine:
            if _sha(local / f.name) == f.sha256:
                out[cell] = (f.name, step_of(f.name))
                break
    return out


def _local_dir(ls: Any) -> Any:
    from gpujob.apply.runtime import pull_dir

    return pull_dir(ls.spec, ls.path)


def _sha(path: Any) -> str | None:
    from gpujob.apply.localfiles import local_sha256

    return local_sha256(path)


def records_command(mount: str, job: str, carry: QueueCarry) -> str:
    """Shell that writes each finished cell's never-run-again record into the wrapper's state dir on the
    new machine (only where none is: a record there is the machine's own truth), then lists them."""
    state = shlex.quote(sweep_dir(mount, job) + "/state")
    lines = [f"S={state}", 'mkdir -p "$S"']
    for cell, code in sorted(carry.finished.items()):
        c = shlex.quote(cell)
        lines.append(
            f'[ -e "$S"/{c}.exit ] || {{ echo {int(code)} > "$S"/{c}.exit.tmp && mv "$S"/{c}.exit.tmp "$S"/{c}.exit; }}'
        )
        lines.append(f'[ -e "$S"/{c}.starts ] || echo 1 > "$S"/{c}.starts')
    lines.append('ls "$S" | grep "\\.exit$" | sed "s/\\.exit$//"; true')
    return "\n".join(lines)


def plan_lines(ls: Any, carry: QueueCarry, frm: str, to: str) -> list[str]:
    """What the plan's move says of a queue: its cells left, the records and the step it carries, and,
    on a shared network volume, what stays on it."""
    q = ls.sweep
    left = ", ".join(carry.left) if carry.left else "none"
    lines = [
        f"{ls.spec.name} moves {frm} -> {to}: {len(carry.left)} of its {len(q.cells)} cell(s) left ({left})",
        f"carries the records of {len(carry.finished)} finished cell(s) (pulled home with their results): "
        "they never run again there",
    ]
    flight = carry.in_flight()
    lines.append(
        f"carries {flight[1]} (step {flight[2]}) of {flight[0]}, verified here: it resumes from that step"
        if flight
        else "carries no cell checkpoint (none verified here for a cell left): its cells start from step 0"
    )
    nv = getattr(
        ls.declared.storage if getattr(ls, "declared", None) else ls.spec.storage, "network_volume", None
    )
    if nv is not None:
        lines.append(
            f"network volume {nv.name} stays on {frm} ({to} cannot mount it) with the other queues' cells and "
            f"every file of this queue's cells not pulled here; what moves is what came home: the records and "
            "verified checkpoints above"
        )
    return lines
