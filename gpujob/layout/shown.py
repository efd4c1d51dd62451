"""What a sweep queue's launch runs, shown cell by cell: the job file's run.command with each cell's
values (escaped for the terminal and the shell) and the checkpoint dir that cell resumes from. The queue's
own command only places its files and starts the wrapper (gpujob.layout.wrapper), so the plan shows this
instead of it."""

from __future__ import annotations

import shlex
from typing import Any

from gpujob.layout.wrapper import cell_checkpoint_dir
from gpujob.safe import for_terminal


def _values(values: tuple[tuple[str, str], ...]) -> str:
    return " ".join(f"{k}={shlex.quote(v)}" for k, v in values)


def cell_lines(queue: Any) -> list[str]:
    """One line per cell of `queue` (gpujob.layout.queues.Queue), in run order; [] without its job file."""
    origin = getattr(queue, "origin", None)
    if origin is None or origin.spec.run is None:
        return []
    spec = origin.spec
    ck = spec.checkpoint.dir if spec.checkpoint is not None else None
    root = ck or f"{spec.storage.mount}/sweeps/{spec.name}/.checkpoints"
    command = spec.run.command
    out = []
    for cell in queue.cells:
        resumes = (
            f"; resumes from the latest checkpoint in {cell_checkpoint_dir(root, cell.name)}" if ck else ""
        )
        out.append(for_terminal(f"cell {cell.name}: {_values(cell.values)} `{command}`{resumes}"))
    return out
