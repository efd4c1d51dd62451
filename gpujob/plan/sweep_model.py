"""What a plan says about a sweep queue (JobPlan.sweep): its cells with their estimated time and cost,
the cells moving between queues, and the whole sweep's estimate against budget.max_total_usd. Data the
sweep capability fills (gpujob.sweep.plan) and the renderers show; no planning here."""

from __future__ import annotations

from pydantic import Field

from gpujob.model import Model


class CellCost(Model):
    cell: str
    est_s: float
    usd: float
    done: bool = Field(False, description="Its record is pulled with an exit code: it never runs again.")


class CellMove(Model):
    """A cell of the sweep moving between queues (gpujob.sweep.rebalance)."""

    cell: str
    origin: int = Field(description="The queue it leaves.")
    to: int = Field(description="The queue it lands on once proven never to start on its origin.")
    state: str = Field(
        description="leaves (its origin gets a version without it now), waits (in transit, not proven yet), "
        "lands (proven: placed on `to` now), stays (it started on its origin: it stays there), stranded (in "
        "transit too long, its origin not running: `gpujob apply --land <sweep>.<cell>` is the way on)"
    )
    why: str = ""


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
    done: int = Field(0, description="The sweep's cells whose records are pulled (done or failed).")
    todo_usd: float | None = Field(
        None, description="The estimate of the sweep's cells not done yet (set when some are done)."
    )
    budget_usd: float | None = None
    machines: int | None = Field(
        None,
        description="sweep.machines, when the queues differ from it (cells placed on a queue stay there).",
    )
    moves: list[CellMove] = Field(
        default_factory=list, description="The cells leaving or landing on this queue (a rebalance)."
    )

    on_finish: str = Field(
        "keep", description="teardown.on_finish of the queue: what its machine does once its cells are done."
    )

    @property
    def summary(self) -> str:
        """The sweep-wide part, then this queue's own."""
        return f"{self.whole_summary}; {self.queue_summary}"

    @property
    def whole_summary(self) -> str:
        """`sweep abl: 6 cells on 2 machines, est. $2.31 in all (within budget.max_total_usd $5.00)`: what
        every queue of the sweep says of the whole sweep (the plans print it once, above the queues)."""
        return f"{self.scope_summary}, est. ${self.total_usd:.2f} in all{self.estimate_notes}"

    @property
    def scope_summary(self) -> str:
        """`sweep abl: 6 cells on 2 machines` (and why the machines differ from sweep.machines)."""
        kept = ""
        if self.machines is not None and self.machines > self.cells_total == self.queues:
            kept = f" (sweep.machines is {self.machines}: a machine runs at least one cell)"
        elif self.machines is not None and self.machines != self.queues:
            kept = (
                f" (sweep.machines is {self.machines}: a cell placed on a queue moves to another only once "
                "its queue is proven never to start it, and a queue gets moved cells only then)"
            )
        return f"sweep {self.sweep}: {self.cells_total} cells on {self.queues} machines{kept}"

    @property
    def estimate_notes(self) -> str:
        """What follows the estimate: against budget.max_total_usd, and what is left when cells are done."""
        over = ""
        if self.budget_usd is not None:
            over = (
                f" (over budget.max_total_usd ${self.budget_usd:.2f})"
                if self.total_usd > self.budget_usd
                else (f" (within budget.max_total_usd ${self.budget_usd:.2f})")
            )
        todo = ""
        if self.todo_usd is not None:
            left = self.cells_total - self.done
            todo = f", ${self.todo_usd:.2f} for the {left} not done yet" if left else ", every cell done"
        return over + todo

    @property
    def queue_summary(self) -> str:
        """`queue q1: 3 cells, $1.15: <cell> 1h00m $0.69, ...` and the cells moving to or from it."""
        cells = ", ".join(
            f"{c.cell} done" if c.done else f"{c.cell} {_dur(c.est_s)} ${c.usd:.2f}" for c in self.cells
        )
        mine = sum(c.done for c in self.cells)
        queue_usd = sum(c.usd for c in self.cells if not c.done)
        head = f"{len(self.cells)} cells, ${queue_usd:.2f}"
        if mine:
            head = (
                f"{len(self.cells)} cells, all done"
                if mine == len(self.cells)
                else f"{len(self.cells)} cells ({mine} done), ${queue_usd:.2f} to go"
            )
        moves = "".join(f"; {_move(m, self.queue)}" for m in self.moves)
        return f"queue q{self.queue}: {head}: {cells}{moves}"


def _move(m: CellMove, queue: int) -> str:
    arrow = f"q{m.origin} -> q{m.to}"
    text = {
        "leaves": f"cell {m.cell} leaves {arrow} (not started yet): {m.why}",
        "waits": f"cell {m.cell} waits to land ({arrow}): {m.why}",
        "lands": f"cell {m.cell} lands ({arrow}): {m.why}",
        "stays": f"cell {m.cell} stays on q{m.origin}: {m.why}",
        "stranded": f"cell {m.cell} is stranded ({arrow}): {m.why}",
    }
    return text.get(m.state, f"cell {m.cell} {m.state} ({arrow})")


def _dur(seconds: float) -> str:
    m = round(seconds / 60)
    return f"{m // 60}h{m % 60:02d}m" if m >= 60 else f"{m}m"
