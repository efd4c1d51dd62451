"""A sweep job file becomes one ordinary job per queue, so plan, apply, watch, pull, status and the
teardown gate handle each queue machine like any job, with nothing per cell against the platform API.

Queue N of job `abl` is job `abl--q<N>`: its machine is gpujob-abl--q<N>--<project> (gpujob.naming
reads the q<N> part back), its actions abl.q<N>.… ; its run.command places the sweep's versioned files
and runs the wrapper on its queue file (gpujob.layout.wrapper); its outputs are its cells' dirs (and
the job file's `{cell}` output paths for each of its cells); a finished queue stops its machine
(teardown.on_finish keep becomes stop), through the gate like any stop."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpujob.jobfile.cells import Cell, cell_dir, expand
from gpujob.layout.wrapper import Placement, place, queue_command
from gpujob.naming import queue_job, sweep_of


@dataclass(frozen=True)
class Queue:
    sweep_job: str
    n: int
    cells: tuple[Cell, ...]
    placement: Placement
    queues: int = 1
    all_cells: tuple[Cell, ...] = ()
    machines: int = 0  # sweep.machines as the job file says (queues differ when placed cells keep theirs)
    shared: bool = False  # its cells live on one network volume all queues mount (gpujob.layout.storage)
    cell_outputs: tuple[str, ...] = ()  # the job file's `{cell}` output paths
    # gpujob.sweep.rebalance: the sweep's moves (all queues'), the cells leaving this queue (on no
    # queue now, still covered by its outputs), the cells seen started here, and the job file's own
    # LoadedSpec (to expand it again with the verdicts of phase 2)
    moves: tuple[Any, ...] = ()
    leaving: tuple[str, ...] = ()
    started: tuple[str, ...] = ()
    origin: Any = None
    fitted: str = ""  # why it runs fewer queues than sweep.machines (gpujob.sweep.fit), else ""

    @property
    def job(self) -> str:
        return queue_job(self.sweep_job, self.n)


def shown_command(job: str, command: str) -> str:
    """What a plan shows as the command: a queue's carries its files, so it is named, not printed."""
    of = sweep_of(job)
    return command if of is None else f"queue q{of[1]} of sweep {of[0]} (docs/sweeps.md)"


def queues(spec: Any, placed: Mapping[str, int] | None = None, arranged: Any = None) -> list[Queue]:
    """The queues of a sweep JobSpec, cells split by estimated cost; `placed` (cell -> queue, from
    gpujob.sweep.assign) keeps the cells already placed where they are; `arranged`
    (gpujob.sweep.rebalance.Arrangement) instead: its placements, and its cells in transit on no queue.
    A queue with no cells is none."""
    sw = spec.sweep
    cells = expand(sw)
    transit = set(arranged.transit) if arranged is not None else set()
    if arranged is not None:
        placed = arranged.placed
    parts = split([c for c in cells if c.name not in transit], sw.machines, placed)
    ck = spec.checkpoint.dir if spec.checkpoint is not None else None
    shared = spec.storage.network_volume is not None
    prune = (spec.run.sync.dest,) if shared else ()  # the queues' code trees (gpujob.layout.storage)
    p = place(
        job=spec.name, mount=spec.storage.mount, ck_dir=ck, command=spec.run.command, queues=parts,
        env=version_env(spec), prune=prune,
    )  # fmt: skip
    templates = tuple(spec.outputs.paths) if spec.outputs is not None else ()
    used = [(n, c) for n, c in enumerate(parts, start=1) if c]
    extra: dict[str, Any] = {}
    out = []
    for n, c in used:
        if arranged is not None:
            names = {x.name for x in c}
            extra = {
                "moves": arranged.moves,
                "leaving": arranged.leaving(n),
                "started": tuple(x for x in sorted(arranged.started) if x in names),
            }
        out.append(
            Queue(
                spec.name,
                n,
                tuple(c),
                p,
                len(used),
                tuple(cells),
                machines=sw.machines,
                shared=shared,
                cell_outputs=templates,
                **extra,
            )
        )
    return out


def version_env(spec: Any) -> list[tuple[str, str]]:
    """What of the run's environment a version carries, so a change of it applies from the next cell:
    run.env and the checkpoint interval and keep (the rest is the queue's or gpujob's own, and secrets
    never go into a file)."""
    from gpujob.layout.machine import run_env

    keep = set(spec.run.env) | {"GPUJOB_CHECKPOINT_INTERVAL", "GPUJOB_CHECKPOINT_KEEP"}
    return [(k, v) for k, v in run_env(spec) if k in keep]


def queue_spec(spec: Any, q: Queue) -> Any:
    """The ordinary JobSpec of one queue (constructed, not re-validated: its name holds '--' on purpose)."""
    mount = spec.storage.mount
    # the cells leaving this queue stay its outputs until they land elsewhere: the gate covers
    # whatever such a cell may have written here (a path that does not exist lists empty)
    names = [c.name for c in q.cells] + list(q.leaving)
    paths = [cell_dir(mount, spec.name, c) for c in names]
    pull_to = "./outputs"
    if spec.outputs is not None:
        pull_to = spec.outputs.pull_to
        for c in names:
            paths += [p.replace("{cell}", c) for p in spec.outputs.paths]
    from gpujob.jobfile.model import OutputsSpec

    outputs = OutputsSpec.model_construct(paths=list(dict.fromkeys(paths)), pull_to=pull_to)
    run = spec.run.model_copy(update={"command": queue_command(q.placement, q.n, every=q.shared)})
    if q.shared:  # one code tree per queue: two launches never write one
        from gpujob.layout.storage import queue_sync_dest

        sync = run.sync.model_copy(update={"dest": queue_sync_dest(run.sync.dest, q.n)})
        run = run.model_copy(update={"sync": sync})
    on_finish = "stop" if spec.teardown.on_finish == "keep" else spec.teardown.on_finish
    teardown = spec.teardown.model_copy(update={"on_finish": on_finish})
    return spec.model_copy(
        update={"name": q.job, "run": run, "outputs": outputs, "teardown": teardown, "sweep": None}
    )


def split(cells: list[Cell], queues: int, placed: Mapping[str, int] | None = None) -> list[list[Cell]]:
    """Cells over `queues` queues by estimated cost: longest first, each onto the queue with the least
    estimated time so far (ties: the lower queue). Each queue keeps its cells in the sweep's order, so a
    queue file reads like the matrix. Never more queues than cells.

    `placed` (cell -> queue number, gpujob.sweep.assign): cells already placed on a queue stay there,
    whatever `queues`, the estimates or the other cells now say: only that machine's state knows whether
    it ran them (the seed's "guard scope must contain the scheduling scope"), so a move could run a
    finished cell again. Only the cells never placed are split, over the `queues` queues, onto what the
    placed ones already weigh. A queue above `queues` that holds placed cells stays; queue N is
    list[N-1], empty when it holds nothing."""
    placed = placed or {}
    kept = {c.name: placed[c.name] for c in cells if placed.get(c.name, 0) >= 1}
    fresh = [c for c in cells if c.name not in kept]
    n = max(1, min(queues, len(fresh))) if not kept else max(1, queues)
    width = max(n, max(kept.values(), default=0))
    loads = [0.0] * width
    owner: dict[str, int] = {}
    by_name = {c.name: c for c in cells}
    for name, q in kept.items():
        owner[name] = q - 1
        loads[q - 1] += by_name[name].est_s
    order = {c.name: i for i, c in enumerate(cells)}
    for cell in sorted(fresh, key=lambda c: (-c.est_s, order[c.name])):
        q = min(range(n), key=lambda i: (loads[i], i))
        loads[q] += cell.est_s
        owner[cell.name] = q
    out = [[c for c in cells if owner[c.name] == q] for q in range(width)]
    while len(out) > 1 and not out[-1]:
        out.pop()
    return out
