"""What a job file with `sweep:` must hold, checked at load (so validate, plan and apply refuse alike)."""

from __future__ import annotations

from typing import Any

# The run's environment that gpujob sets (gpujob.layout.machine.run_env): a cell may not shadow it.
GPUJOB_ENV = frozenset({"HF_HOME", "PIP_CACHE_DIR"})


# Why a sweep cannot move between platforms, and what to do instead (docs/sweeps.md, "With fallback:").
FALLBACK_REFUSED = (
    "fallback: a sweep's queues cannot move to another platform: which cells a queue ran (its wrapper's "
    "never-run-again records) and its cell in flight's checkpoints are on its machine's disk, and a move "
    "carries one checkpoint and none of those records, so a moved queue would run its finished cells again. "
    "Drop fallback: (the queues run on {platform} only), or write the sweep a second job file for the other "
    "platform (another name, sweep.cells split between the two) and apply the one that can run"
)


def sweep_problem(spec: Any) -> str | None:
    """'key.path: message' (gpujob.spec.errmap places it at that key), or None."""
    sw = spec.sweep
    if sw is None:
        if spec.outputs is not None and any("{cell}" in p for p in spec.outputs.paths):
            return "outputs.paths: {cell} is only meaningful in a job with a sweep: block"
        return None
    if spec.run is None:
        return "sweep.machines: a sweep needs a run: block (each cell runs run.command)"
    if getattr(spec, "fallback", None):
        return FALLBACK_REFUSED.format(platform=spec.platform)
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
