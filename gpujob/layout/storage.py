"""Where a sweep's files live: each queue machine's own volume disk, or one RunPod network volume that
every queue machine mounts (`storage.network_volume` in a sweep's job file).

On a shared network volume:
  - the volume is the sweep's (gpujob-<sweep>--<volume>--<project>, gpujob.naming.volume_job), and one
    queue holds it (q1, or the lowest-numbered queue with cells): only its plan creates, grows or
    deletes it; the other queues' pods wait for it and mount it, in its data center (RP7);
  - every queue's launch places the whole version (wrapper, every queue file, every cell's env file),
    each file created once (a hard link, which fails where the file exists): the first queue to start
    places them all before its wrapper runs, and no later launch writes over them;
  - the state dir (<mount>/.gpujob/<sweep>.sweep/state) is on the volume, so a cell finished on any
    queue is done for every queue;
  - each queue syncs its code into its own dir (<sync.dest>/q<N>): two launches never write one tree;
  - a queue pulls only its own cells' checkpoints; the delete of the volume is gated on every cell of
    every queue (the gate waits until no queue pod holds the volume, then looks through a temporary pod).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpujob.jobfile.cells import cell_dir


def _queue(spec: Any) -> tuple[str, int] | None:
    from gpujob.naming import sweep_of

    return sweep_of(spec.name)


def shared(spec: Any) -> bool:
    """A queue job whose sweep keeps its cells on one network volume all queues mount."""
    return _queue(spec) is not None and spec.storage.network_volume is not None


def holder(queue: Any) -> int:
    """The queue whose plan creates, grows and deletes the shared volume: the lowest-numbered one with
    cells (queue 1 unless its placed cells left it empty; gpujob.sweep.assign)."""
    cells = getattr(getattr(queue, "placement", None), "queue_cells", None) or {1: ()}
    return min(cells)


def holds_volume(spec: Any, queue: Any = None) -> bool:
    """Whether this job's plan manages its network volume (every job but a sweep's other queues).
    `queue`: the job's gpujob.layout.queues.Queue, when known (else queue 1 is taken to hold it)."""
    q = _queue(spec)
    return not shared(spec) or (q is not None and q[1] == holder(queue))


def sibling_queue(spec: Any, r: Any, project: str | None) -> bool:
    """Whether pod `r` is another queue machine of the same sweep as queue job `spec` (on a shared
    volume they write at once, each cell only into its own dirs: the isolation check holds them to it)."""
    from gpujob import naming
    from gpujob.naming import sweep_of

    mine, o = _queue(spec), naming.owner(r)
    theirs = sweep_of(o.job) if o is not None else None
    return (
        shared(spec)
        and mine is not None
        and theirs is not None
        and o is not None
        and o.project == project
        and theirs[0] == mine[0]
    )


def queue_sync_dest(dest: str, n: int) -> str:
    return f"{dest.rstrip('/')}/q{n}"


def own_cells(spec: Any) -> list[str]:
    """The cells of a queue job, read back from its outputs (its cells' results dirs)."""
    from gpujob.jobfile.cells import cell_of_dir

    paths = spec.outputs.paths if spec.outputs is not None else []
    return [c for p in paths if (c := cell_of_dir(spec, p)) is not None]


def own_checkpoints(spec: Any) -> Callable[[str], bool] | None:
    """What of checkpoint.dir a queue on a shared volume pulls: its own cells' subdirs (the others'
    are pulled by their own queues); None: everything (any other job)."""
    if not shared(spec):
        return None
    mine = frozenset(own_cells(spec))
    return lambda name: name.split("/", 1)[0] in mine


def volume_outputs(spec: Any, queue: Any) -> list[str]:
    """Every cell's results dir and `{cell}` output paths, and every queue's run records: what the shared
    volume holds and its delete must see pulled. `queue`: the queue's gpujob.layout.queues.Queue."""
    mount = spec.storage.mount
    paths = [cell_dir(mount, queue.sweep_job, c.name) for c in queue.all_cells]
    paths += [t.replace("{cell}", c.name) for c in queue.all_cells for t in queue.cell_outputs]
    paths += [_run_dir(mount, job) for job in queue_jobs(queue) if job != spec.name]
    return list(dict.fromkeys(paths))


def _run_dir(mount: str, job: str) -> str:
    from gpujob.quote import remote_path

    return remote_path(f"{mount}/.gpujob/{job}")  # gpujob.layout.machine.job_dir


def queue_of_run_dir(spec: Any, path: str) -> str | None:
    """The queue job whose run records dir `path` is, when it is another queue of `spec`'s sweep."""
    q = _queue(spec)
    if q is None:
        return None
    _, _, job = path.rstrip("/").rpartition("/")
    from gpujob.naming import sweep_of

    of = sweep_of(job)
    if of is None or of[0] != q[0] or job == spec.name:
        return None
    return job if _run_dir(spec.storage.mount, job) == path.rstrip("/") else None


def volume_spec(spec: Any, queue: Any) -> Any:
    """A queue job's spec as the shared volume's delete sees it: every cell's outputs."""
    from gpujob.jobfile.model import OutputsSpec

    pull_to = spec.outputs.pull_to if spec.outputs is not None else "./outputs"
    outputs = OutputsSpec.model_construct(paths=volume_outputs(spec, queue), pull_to=pull_to)
    return spec.model_copy(update={"outputs": outputs})


def queue_jobs(queue: Any) -> list[str]:
    """The jobs of every queue of the sweep (numbers may have gaps: a queue with no cells is none)."""
    from gpujob.naming import queue_job

    return [queue_job(queue.sweep_job, n) for n in sorted(queue.placement.queue_cells)]


def data_center_note(spec: Any, region: str | None, queues: int) -> str:
    """What a plan says of where a shared-volume sweep's pods run."""
    nv = spec.storage.network_volume
    where = region or "one data center"
    return (
        f"all {queues} queue pods mount network volume {nv.name} and run in its data center {where} "
        "(RP7: a network volume is shared within one data center): GPU candidates are looked for there"
    )


# --- what a plan says (gpujob.plan.actions and volume_actions call these; each is empty for any other job) ---


def _live_volume(ctx: Any) -> Any:
    name = ctx.volume_name
    return next((r for r in ctx.live.resources if r.kind == "network_volume" and r.name == name), None)


def _count(ctx: Any) -> int:
    q = getattr(ctx.loaded, "sweep", None)
    return int(q.queues) if q is not None else 1


def _region(ctx: Any) -> str | None:
    live = _live_volume(ctx)
    if live is not None and live.region:
        return str(live.region)
    return ctx.spec.machine.regions[0] if ctx.spec.machine.regions else None


def shared_volume_findings(ctx: Any) -> list[Any]:
    """Queue 1's plan says once where every queue pod of a shared-volume sweep runs (RP7)."""
    if not shared(ctx.spec) or not holds_volume(ctx.spec, getattr(ctx.loaded, "sweep", None)):
        return []
    return [
        ctx.finding(
            "RP7",
            "info",
            data_center_note(ctx.spec, _region(ctx), _count(ctx)),
            detail="A network volume is attached at pod creation and only in its own data center; queue 1 "
            "creates it, the other queues' pods wait for it and are placed there.",
            fix="list the data center in machine.regions to choose it; candidates outside it are never tried",
            key="storage.network_volume",
        )
    ]


def shared_volume_reason(ctx: Any) -> list[str]:
    """A queue pod's create reason on a shared volume: what it mounts, where, and who makes the volume."""
    q = _queue(ctx.spec)
    if not shared(ctx.spec) or q is None:
        return []
    nv = ctx.spec.storage.network_volume
    where = _region(ctx) or "the volume's data center"
    queue = getattr(ctx.loaded, "sweep", None)
    first = holder(queue)
    made = "" if _live_volume(ctx) is not None or q[1] == first else f", created by {q[0]}.q{first}'s plan"
    return [
        f"mounts the sweep's network volume {ctx.volume_name or nv.name}{made}, shared by every queue: "
        f"placed in {where} (RP7); its wrapper, queue files and each cell's done mark live there"
    ]


def shared_volume_gate_reason(ctx: Any) -> str | None:
    """The delete of a sweep's shared volume: gated on every cell of every queue."""
    q = _queue(ctx.spec)
    if not shared(ctx.spec) or q is None:
        return None
    return (
        f"gate: waits until no pod of the sweep's {_count(ctx)} queues mounts it, then a temporary pod mounts "
        "it: every cell's results and checkpoints (of every queue) are pulled, listed again and must match a "
        "verified local copy"
    )
