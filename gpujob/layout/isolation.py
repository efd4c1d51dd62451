"""Isolation checked, not hoped for: each cell's record lists the files it wrote on the durable mount
outside its own dirs (the wrapper's `find -newer`, caches and gpujob's own dir aside). A write into
another cell's results or checkpoint dir is an error (two cells' results interleave, which no later
reconciliation can undo); any other outside write is a warning."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gpujob.layout.wrapper import RECORD


@dataclass(frozen=True)
class CellRecord:
    cell: str
    exit: int | None
    starts: int
    outside: tuple[str, ...] = ()
    version: str | None = None  # the run version it ran under (gpujob.layout.wrapper)
    queue: int | None = None  # the queue it ran on


def parse_record(text: str) -> CellRecord | None:
    """The wrapper's key=value record; None when it is not one (its text comes from the machine)."""
    cell, code, starts, outside = "", None, 0, []
    version: str | None = None
    queue: int | None = None
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        if key == "cell":
            cell = value
        elif key == "exit" and value.lstrip("-").isdigit():
            code = int(value)
        elif key == "starts" and value.isdigit():
            starts = int(value)
        elif key == "outside":
            outside.append(value)
        elif key == "version" and value.startswith("v") and value[1:].isalnum():
            version = value
        elif key == "queue" and value.startswith("q") and value[1:].isdigit() and int(value[1:]) >= 1:
            queue = int(value[1:])
    return CellRecord(cell, code, starts, tuple(outside), version, queue) if cell else None


@dataclass
class Isolation:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def judge(records: list[CellRecord], *, cell_roots: list[str], cells: list[str] | None = None) -> Isolation:
    """`cell_roots`: the dirs whose children are cell dirs (results root, checkpoint root); `cells`: every
    cell of the sweep (default: the records' own)."""
    names = set(cells) if cells is not None else {r.cell for r in records}
    out = Isolation()
    for r in records:
        for path in r.outside:
            other = _cell_under(path, cell_roots)
            if other is not None and other != r.cell and other in names:
                out.errors.append(f"cell {r.cell} wrote {path}, in cell {other}'s dir")
            else:
                out.warnings.append(f"cell {r.cell} wrote {path}, outside its own dirs")
    return out


def _cell_under(path: str, roots: list[str]) -> str | None:
    for root in roots:
        prefix = root.rstrip("/") + "/"
        if path.startswith(prefix):
            return path[len(prefix) :].split("/", 1)[0]
    return None


def local_records(pull_to: Path, cells: list[str]) -> dict[str, CellRecord | None]:
    """Each cell's record as pulled to pull_to/<cell>/ (None: not there: the cell has not finished or
    was never pulled)."""
    out: dict[str, CellRecord | None] = {}
    for cell in cells:
        f = pull_to / cell / RECORD
        out[cell] = parse_record(f.read_text(errors="replace")) if f.is_file() else None
    return out


def queue_drained(loaded: object) -> bool:
    """A sweep queue whose every cell has its record pulled with an exit code: it has nothing left to
    run (a finished or failed cell never runs again), so its machine is not started for it. A queue
    a cell is leaving is not: it must run the version without that cell for the cell to land."""
    q = getattr(loaded, "sweep", None)
    if q is None or not q.cells or q.leaving:
        return False
    from gpujob.layout.outputs import pull_to

    recs = local_records(pull_to(loaded.spec, loaded.path), [c.name for c in q.cells])  # type: ignore[attr-defined]
    return all(r is not None and r.exit is not None for r in recs.values())
