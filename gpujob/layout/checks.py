"""What a job file with `sweep:` must hold, checked at load (so validate, plan and apply refuse alike)."""

from __future__ import annotations

from typing import Any

# The run's environment that gpujob sets (gpujob.layout.machine.run_env): a cell may not shadow it.
GPUJOB_ENV = frozenset({"HF_HOME", "PIP_CACHE_DIR"})


def sweep_problem(spec: Any) -> str | None:
    """'key.path: message' (gpujob.spec.errmap places it at that key), or None."""
    sw = spec.sweep
    if sw is None:
        if spec.outputs is not None and any("{cell}" in p for p in spec.outputs.paths):
            return "outputs.paths: {cell} is only meaningful in a job with a sweep: block"
        return None
    if spec.run is None:
        return "sweep.machines: a sweep needs a run: block (each cell runs run.command)"
    fallback_problem = _fallback_problem(spec)
    if fallback_problem:
        return fallback_problem
    from gpujob.jobfile.cells import expand

    names = {k for c in expand(sw) for k, _ in c.values}
    clash = sorted(
        n for n in names if n in spec.run.env or n in GPUJOB_ENV or n.upper().startswith("GPUJOB_")
    )
    if clash:
        name = clash[0]
        where = f"sweep.matrix.{name}" if sw.matrix is not None else "sweep.cells"
        if name in spec.run.env:
            return (
                f"{where}: {name} is set by run.env too, and each cell's value would override it: "
                f"drop {name} from run.env (the cells set it) or give the sweep's value another name"
            )
        return f"{where}: {name} is gpujob's own in the run's environment (run.caches sets it): give the sweep's value another name"
    from gpujob.layout.queues import queues
    from gpujob.layout.wrapper import COMMAND_MAX, queue_command

    for q in queues(spec):
        size = len(queue_command(q.placement, q.n, every=q.shared).encode())
        if size > COMMAND_MAX:
            return (
                f"sweep.machines: queue q{q.n} ({len(q.cells)} cells) would need a {size // 1000} KB command, over "
                f"the {COMMAND_MAX // 1000} KB one process argument holds: use more machines or shorter values"
            )
    bad = [p for p in (spec.outputs.paths if spec.outputs else []) if "{cell}" not in p]
    if bad:
        return (
            f"outputs.paths: in a sweep each path must contain {{cell}} (one per cell), not {', '.join(bad)}; "
            "each cell's GPUJOB_CELL_DIR is an output already"
        )
    return None


def _fallback_problem(spec: Any) -> str | None:
    """A sweep with `fallback:` moves queue by queue (gpujob.failover.queue_carry); what a move cannot
    carry is refused here."""
    entries = getattr(spec, "fallback", None) or []
    if not entries:
        return None
    ck = spec.checkpoint
    if ck is None or ck.pull != "continuous":
        return (
            "fallback: a sweep's queue moves with what came home: its cells' records (which never run again) "
            "and their verified checkpoints, which only checkpoint.pull: continuous brings home while the "
            "queue runs; without it a moved queue would run its finished cells again. Set "
            "checkpoint.pull: continuous, or drop fallback:"
        )
    for i, entry in enumerate(entries):
        if entry.storage.mount != spec.storage.mount:
            return (
                f"fallback[{i}].storage.mount: a sweep's queue files name every cell's dirs under "
                f"storage.mount ({spec.storage.mount}), so a moved queue needs the same mount there, "
                f"not {entry.storage.mount}: set it to {spec.storage.mount}"
            )
    return None
