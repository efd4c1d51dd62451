"""The plan's view of a sweep queue: its cells with their estimated time and cost, and the whole
sweep's estimate against budget.max_total_usd. Computed here, rendered by gpujob.render."""

from __future__ import annotations

from typing import Any

from gpujob.plan.sweep_model import CellCost, CellMove, SweepPlan


def sweep_plan(loaded: Any, usd_per_hour: float) -> SweepPlan | None:
    q = getattr(loaded, "sweep", None)
    if q is None:
        return None
    spec = loaded.spec
    all_cells = q.all_cells
    from gpujob.layout.isolation import local_records
    from gpujob.layout.outputs import pull_to

    recs = local_records(pull_to(spec, loaded.path), [c.name for c in all_cells])
    done = {c for c, r in recs.items() if r is not None and r.exit is not None}
    cells = [
        CellCost(cell=c.name, est_s=c.est_s, usd=c.est_s / 3600 * usd_per_hour, done=c.name in done)
        for c in q.cells
    ]
    return SweepPlan(
        sweep=q.sweep_job,
        queue=q.n,
        queues=q.queues,
        cells_total=len(all_cells),
        cells=cells,
        queue_usd=sum(c.usd for c in cells),
        total_usd=sum(c.est_s for c in all_cells) / 3600 * usd_per_hour,
        done=len(done),
        todo_usd=sum(c.est_s for c in all_cells if c.name not in done) / 3600 * usd_per_hour
        if done
        else None,
        budget_usd=spec.budget.max_total_usd,
        # sweep.machines whenever the queues differ: more machines than cells, or placed cells kept
        machines=q.machines if q.machines and q.machines != q.queues else None,
        on_finish=spec.teardown.on_finish,
        moves=[
            CellMove(cell=m.cell, origin=m.origin, to=m.to, state=m.state, why=m.why)
            for m in q.moves
            if q.n in (m.origin, m.to)
        ],
    )
