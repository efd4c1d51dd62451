"""The reconcile loop of `gpujob watch`: level-triggered, one tick at a time.

Each tick re-reads the job files, reads live state and the run facts (one listing per platform, the
run status over SSH), plans exactly as `gpujob plan` does, and lets gpujob.watch.policy pick what it
may apply on its own. Fixes go through the applier (journal, adoption by name, the teardown gate), so
a watcher killed at any point converges when started again. Between ticks a cheap probe (one GET of
each running machine and its run status over a kept-open SSH connection, gpujob.watch.probe) wakes the
loop early when a machine goes down or a run ends, so both are acted on in seconds.

Alongside: checkpoints are pulled in the background as they appear (checkpoint.pull: continuous),
money, GPU time and steps are folded into each job's ledger, and the limits park a job safely.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from gpujob.errors import GpujobError, SpecError
from gpujob.live import LiveState
from gpujob.plan.model import JobPlan, Plan
from gpujob.watch.acting import Acting
from gpujob.watch.intent import destroyed_on_purpose
from gpujob.watch.jobs import BLOCKED_TICKS, COST_REFRESH_S, ERROR, HEALTHY, HUMAN, JobWatch, job_machine
from gpujob.watch.ledger import save_ledger
from gpujob.watch.policy import Decision


class Watcher(Acting):
    # --- the loop
    async def run(self) -> int:
        names = ", ".join(self.jobs)
        every = "once" if self.opt.once else f"every {self.opt.interval_s:g}s (probe {self.opt.probe_s:g}s)"
        self.say(None, "watch-start", f"watching {names} {every}")
        for j in self.jobs.values():
            if j.ledger.parked is not None:
                self.say(j, "parked", f"parked since {j.ledger.parked.at:%Y-%m-%d %H:%M} UTC: {j.ledger.parked.reason}",
                         "not watched until the job file changes", level="human", topic="parked")  # fmt: skip
        code = HEALTHY
        try:
            while True:
                code = await self.tick()
                if self.opt.once:
                    await self.pulls.wait_all()
                    if any(j.ledger.parked is not None for j in self.jobs.values()):
                        code = max(
                            code, HUMAN
                        )  # a parked job waits for a person, even when nothing else does
                    return max(code, ERROR) if self.pulls.failed_since_start and code == HEALTHY else code
                watching = [j for j in self.jobs.values() if j.watching]
                if not watching and not any(h.waiting for h in self.hooks):
                    return HEALTHY if all(j.done for j in self.jobs.values()) else HUMAN
                if watching and all(j.blocked_ticks >= BLOCKED_TICKS for j in watching):
                    self.say(
                        None, "watch-stop", "every job left waits for a person (see the needs-human events)"
                    )
                    return HUMAN
                await self._sleep_or_probe()
        finally:
            await self.pulls.close()
            await self.probe.close()
            for h in self.hooks:
                h.close()
            for j in self.jobs.values():
                save_ledger(j.state_dir, j.ledger)

    async def _sleep_or_probe(self) -> None:
        """Sleep until the next tick, probing each running machine so a loss wakes the loop early.
        After a tick that changed something, the next one comes after one probe interval: it sees the
        machine as it is now (and the probe knows which machine to watch)."""
        if self.acted:
            await self.clock.sleep(self.opt.probe_s)
            return
        waited = 0.0
        while waited < self.opt.interval_s:
            step = min(self.opt.probe_s, self.opt.interval_s - waited)
            if await self._sleep_unless_closed(step):
                return  # a run's SSH connection closed: its machine is going down
            waited += step
            if await self._something_went_down():
                return

    async def _sleep_unless_closed(self, seconds: float) -> bool:
        """Sleep, or return True early when one of the probe's SSH connections closes."""
        sleeper = asyncio.ensure_future(self.clock.sleep(seconds))
        closers = [asyncio.ensure_future(w) for w in self.probe.closed()]
        done, pending = await asyncio.wait([sleeper, *closers], return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        return sleeper not in done

    async def _something_went_down(self) -> bool:
        for j in self.jobs.values():
            if not j.watching or j.machine_id is None or j.loaded is None:
                continue
            provider = self.providers[j.loaded.spec.platform]
            wake, status, fresh = await self.probe.check(j, provider, j.machine_id)
            if status is not None:
                j.ledger.observe_run(self.clock.now(), status)
                self._maybe_pull(j, fresh, status)
            if wake:
                return True
        return False

    # --- one tick
    async def tick(self) -> int:
        from gpujob.apply.refresh import read_live_state

        for h in self.hooks:  # e.g. a sweep queue whose lock is free now (gpujob.sweep.watching)
            h.admit(self)
        active = [j for j in self.jobs.values() if self._reload(j)]
        if not active:
            return HEALTHY
        loaded = [j.loaded for j in active]
        self.spy.statuses.clear()
        try:
            live = await read_live_state(
                [ls.spec for ls in loaded], self.providers, runs_for=loaded, ssh=self.spy.api,
                run_timeout=self.opt.run_timeout_s,
            )  # fmt: skip
        except GpujobError as exc:
            self.say(
                None,
                "read-failed",
                f"live state could not be read: {exc}",
                "retrying next tick",
                level="warning",
            )
            return ERROR
        loaded = await self._settle(loaded, live)
        now = self.clock.now()
        from gpujob.apply.migration import follow

        for ls in loaded:  # RunPod migrated a stopped pod: the new id is the job's from now on
            jw = self.jobs.get(ls.spec.name)
            moved = follow(jw.state_dir, ls, live.resources) if jw is not None else None
            if moved is not None:
                self.say(jw, "migrated", moved.describe(), "followed: the new id is the job's pod")
        try:
            plan = self.plan_of(loaded, live, now)
        except SpecError as exc:  # the job files were read above: this is the project file's budget block
            self.say(
                None, "read-failed", str(exc), "nothing is acted on; retrying next tick", level="warning"
            )
            return ERROR
        for jp in plan.jobs:
            self._observe(self.jobs[jp.job], jp, live, now)
        await self._refresh_costs(active, now)
        code = ERROR if live.read_errors else HEALTHY
        todo: list[tuple[JobWatch, JobPlan, Decision]] = []
        self.tick_plans = {jp.job: jp for jp in plan.jobs}  # what a judge weighs a move beside (a cap's sum)
        self.acted = False  # a judge may act itself (a move, gpujob.failover.watching) and say so here
        for jp in plan.jobs:
            j = self.jobs[jp.job]
            code = max(code, await self._judge(j, jp, live, now, todo))
        self.acted = (
            self.acted
            or bool(todo)
            or any(j.ledger.parked is not None and j.watching is False for j in active)
        )
        if todo:
            code = max(code, await self._apply(todo, plan, live))
        for j, _, _ in todo:
            j.blocked_ticks = 0
        changed = {j.name for j, _, _ in todo}
        for jp in plan.jobs:
            j = self.jobs[jp.job]
            if j.watching and j.name not in changed:  # what was read before a change is stale now
                await self._after(j, jp, job_machine(live, j.loaded))
                for h in self.hooks:  # e.g. a disk about to fill up (gpujob.disks.guard)
                    full = await h.park_reason(
                        self, j, job_machine(live, j.loaded), self.providers[jp.platform]
                    )
                    if full is not None and j.watching:
                        await self._park(j, jp, job_machine(live, j.loaded), live, full)
            save_ledger(j.state_dir, j.ledger)
        return code

    async def _settle(self, loaded: list[Any], live: LiveState) -> list[Any]:
        """The capabilities' settle (e.g. a sweep's proven cells landed; a queue they land on first is
        watched under its own lock, gpujob.sweep.watching)."""
        for h in self.hooks:
            loaded = await h.settle(self, loaded, live)
        return loaded

    def _observe(self, j: JobWatch, jp: JobPlan, live: LiveState, now: datetime) -> None:
        """Fold what this tick read into the job's ledger: money and GPU time, the run's steps."""
        machine = job_machine(live, j.loaded)
        j.machine_id = machine.id if machine is not None and machine.status == "running" else None
        j.ledger.observe_money(now, machine, jp.current_usd_per_hour)
        status = self.spy.statuses.get(j.name)
        if status is not None:
            j.ledger.observe_run(now, status)

    def plan_of(self, loaded: list[Any], live: LiveState, now: datetime) -> Plan:
        """The tick's plan, from what `gpujob plan` reads besides live state: the pull and launch records,
        the histories and the project's month (budget.max_monthly_usd: a restart that would cross it is
        refused, as a plan's start is; watch's ledgers carry the spend, the last tick's saved)."""
        from pathlib import Path

        from gpujob.cost.monthly import project_monthly, read_cap
        from gpujob.plan.planner import build_plan
        from gpujob.plan.records import recorded
        from gpujob.plan.stop_law import accept_risks

        # Only a project with a budget has its store's ledgers read, at every tick.
        capped = bool(loaded) and read_cap(Path(loaded[0].path).resolve().parent)[0] is not None
        monthly = project_monthly(loaded, now) if capped else None
        plan = build_plan(loaded, live, now=now, env=self.env, **recorded(loaded, monthly))
        return accept_risks(plan, set(self.opt.approvals))  # e.g. <job>.pod.self-stop (gpujob.plan.stop_law)

    async def _refresh_costs(self, active: list[JobWatch], now: datetime) -> None:
        """Money so far from the cost engine (the platform's billing where it has one), every
        COST_REFRESH_S: between two reads the ledger adds the burn, so a tick costs no billing call."""
        from gpujob.plan.costs import read_costs

        stale = [
            j for j in active
            if j.ledger.billed_at is None or (now - j.ledger.billed_at).total_seconds() >= COST_REFRESH_S
        ]  # fmt: skip
        if not stale:
            return
        try:
            report = await read_costs([j.loaded for j in stale], self.providers)
        except GpujobError as exc:
            self.say(None, "cost-read-failed", f"the cost engine could not read: {exc}", "counting the burn meanwhile",
                     level="warning")  # fmt: skip
            return
        for cost in report.jobs:
            self.jobs[cost.job].ledger.billed(now, cost.spent_usd)

    def _reload(self, j: JobWatch) -> bool:
        """Re-read the job file (watch follows edits). False: not to be reconciled this tick."""
        from gpujob.project import with_projects
        from gpujob.spec.load import load_specs

        if j.done:
            return False
        try:
            found = [ls for ls in with_projects(load_specs([j.path]), create=True) if ls.spec.name == j.name]
        except GpujobError as exc:
            self.say(j, "needs-human", f"{j.path} cannot be read: {str(exc).splitlines()[0]}", "holding until it is fixed",
                     level="human", topic="file")  # fmt: skip
            return False
        if not found:
            self.say(
                j,
                "needs-human",
                f"{j.path} no longer defines job {j.name}",
                "holding",
                level="human",
                topic="file",
            )
            return False
        j.said.pop("file", None)
        j.loaded = found[0]
        destroyed = destroyed_on_purpose(j.loaded)
        if destroyed:
            self.say(j, "destroyed", f"{j.name}: {destroyed}", "not created again by watch")
            j.done = True
            return False
        park = j.ledger.parked
        if park is not None and park.digest != j.loaded.digest:
            j.ledger.parked = None
            self.say(j, "unparked", "the job file changed since it was parked", "watching it again")
        return j.ledger.parked is None
