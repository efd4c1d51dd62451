"""The plan's view of a sweep queue: its cells with their estimated time and cost, and the whole
sweep's estimate against budget.max_total_usd. Computed here, rendered by gpujob.render."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gpujob.model import Model


class CellCost(Model):
    cell: str
    est_s: float
    usd: float


class SweepPlan(Model):
    sweep: str = Field(description="The sweep's job name (this queue's job is <sweep>--q<queue>).")
    queue: int
    queues: int
    cells_total: int
    cells: list[CellCost] = Field(default_factory=list, description="This queue's cells, in run order.")
    queue_usd: float = Field(
        description="This queue's estimate: its cells' time at its machine's running rate."
    )
    total_usd: float = Field(description="The whole sweep's estimate (every cell at this machine's rate).")
    budget_usd: float | None = None
    machines: int | None = Field(
        None,
        description="sweep.machines, when the queues differ from it (cells placed on a queue stay there).",
    )

    @property
    def summary(self) -> str:
        cells = ", ".join(f"{c.cell} {_dur(c.est_s)} ${c.usd:.2f}" for c in self.cells)
        over = ""
        if self.budget_usd is not None:
            over = (
                f" (over budget.max_total_usd ${self.budget_usd:.2f})"
                if self.total_usd > self.budget_usd
                else (f" (within budget.max_total_usd ${self.budget_usd:.2f})")
            )
        kept = ""
        if self.machines is not None and self.machines != self.queues:
            kept = (
                f" (sweep.machines is {self.machines}: cells placed on a queue stay there, so only new cells "
                "are spread over the machines asked for)"
            )
        return (
            f"sweep {self.sweep}: {self.cells_total} cells on {self.queues} machines{kept}, est. "
            f"${self.total_usd:.2f} in all{over}; queue q{self.queue}: {len(self.cells)} cells, "
            f"${self.queue_usd:.2f}: {cells}"
        )


def _dur(seconds: float) -> str:
    m = round(seconds / 60)
    return f"{m // 60}h{m % 60:02d}m" if m >= 60 else f"{m}m"


def sweep_plan(loaded: Any, usd_per_hour: float) -> SweepPlan | None:
    q = getattr(loaded, "sweep", None)
    if q is None:
        return None
    spec = loaded.spec
    all_cells = q.all_cells
    cells = [CellCost(cell=c.name, est_s=c.est_s, usd=c.est_s / 3600 * usd_per_hour) for c in q.cells]
    return SweepPlan(
        sweep=q.sweep_job,
        queue=q.n,
        queues=q.queues,
        cells_total=len(all_cells),
        cells=cells,
        queue_usd=sum(c.usd for c in cells),
        total_usd=sum(c.est_s for c in all_cells) / 3600 * usd_per_hour,
        budget_usd=spec.budget.max_total_usd,
        # a split from scratch uses min(machines, cells) queues: any other count is placed cells kept
        machines=q.machines if q.machines and min(q.machines, len(all_cells)) != q.queues else None,
    )
