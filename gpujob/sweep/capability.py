"""Sweep as a capability (gpujob.plan.capability): a sweep queue's plan carries its cells' estimate
(gpujob.sweep.plan), and before its first step the cells are placed on the queue (gpujob.sweep.assign)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpujob.apply.context import SWEEP_QUEUE
from gpujob.plan.capability import Capability
from gpujob.plan.model import ActionKind
from gpujob.sweep.assign import note_placed
from gpujob.sweep.plan import sweep_plan
from gpujob.sweep.rebalance import note_leaving, note_started


class Sweep(Capability):
    name = "sweep"

    def job_plan_fields(self, loaded: Any, running_usd_per_hour: float) -> dict[str, Any]:
        # the cells' estimate at the running rate: only where they run (a destroy priced them at $0.00)
        return {"sweep": sweep_plan(loaded, running_usd_per_hour)}

    def before_steps(self, ctx: Any, todo: Sequence[Any]) -> None:
        """A sweep queue about to get a version of its files: its cells are placed on it for good first,
        so no later split moves one its machine may have run (gpujob.sweep.assign)."""
        queue = ctx.extra.get(SWEEP_QUEUE)
        places = any(
            a.kind in (ActionKind.LAUNCH, ActionKind.RELAUNCH)
            or (a.kind is ActionKind.UPDATE and a.resource_kind == "run")
            for a in todo
        )
        if queue is not None and places:
            now = ctx.clock.now()
            # the cells leaving this queue are marked on their way before its version without them is placed
            note_leaving(ctx.state_dir, queue.sweep_job, [m for m in queue.moves if m.origin == queue.n], now)
            note_placed(ctx.state_dir, queue.sweep_job, queue.n, [c.name for c in queue.cells], now)
            note_started(ctx.state_dir, queue.sweep_job, queue.started, now)
