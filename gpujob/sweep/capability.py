"""Sweep as a capability (gpujob.plan.capability): a sweep queue's plan carries its cells' estimate
(gpujob.sweep.plan), before its first step the cells are placed on the queue (gpujob.sweep.assign), and
`gpujob watch` lands cells and watches the queues they land on (gpujob.sweep.watching)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpujob.apply.context import SWEEP_QUEUE
from gpujob.plan.capability import Capability
from gpujob.plan.model import ActionKind
from gpujob.sweep.assign import note_placed
from gpujob.sweep.plan import sweep_plan
from gpujob.sweep.rebalance import note_leaving, note_started
from gpujob.sweep.watching import LandedQueues, admit, settle_watched
from gpujob.watch.hooks import WatchHooks


class Sweep(Capability):
    name = "sweep"

    def expand_loaded(self, loaded: Any) -> list[Any] | None:
        if getattr(loaded.spec, "sweep", None) is None:
            return None
        from gpujob.sweep.expand import expand_loaded

        return expand_loaded(loaded)

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

    def watch_hooks(self, options: Any) -> Any:
        return SweepWatch(getattr(options, "rerun", "gpujob watch"))


class SweepWatch(WatchHooks):
    """A sweep in `gpujob watch`: cells landed on another queue are settled each tick, and a queue they
    land on first is watched under its own lock (gpujob.sweep.watching)."""

    def __init__(self, rerun: str) -> None:
        self.landed = LandedQueues(rerun)  # queues watched mid-run

    @property
    def waiting(self) -> bool:
        return bool(self.landed.waiting)

    def admit(self, watcher: Any) -> None:
        admit(watcher, self.landed)  # a landed queue whose lock is free now

    async def settle(self, watcher: Any, loaded: list[Any], live: Any) -> list[Any]:
        return await settle_watched(watcher, self.landed, loaded, live)

    def is_recovery(self, job: str, decision: Any) -> bool:
        return self.landed.is_recovery(job, decision)

    def created(self, job: str, ok: bool) -> None:
        self.landed.created(job, ok)

    def close(self) -> None:
        self.landed.close()
