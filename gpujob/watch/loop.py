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
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from gpujob.apply.sshapi import SSHApi
from gpujob.clock import Clock
from gpujob.errors import GpujobError
from gpujob.live import LiveResource, LiveState
from gpujob.plan.model import ActionKind, JobPlan, Plan
from gpujob.state import Store
from gpujob.sweep.watching import LandedQueues, admit
from gpujob.watch import limits
from gpujob.watch.apply import apply_decisions, describe
from gpujob.watch.disks import DiskGuard
from gpujob.watch.events import Event, make_event
from gpujob.watch.home import hold_stop, unhome
from gpujob.watch.intent import destroyed_on_purpose
from gpujob.watch.ledger import Ledger, Park, load_ledger, save_ledger
from gpujob.watch.policy import Decision, decide
from gpujob.watch.probe import RunProbe
from gpujob.watch.pulls import Puller

K = ActionKind
HEALTHY, ERROR, RECOVERED, HUMAN = 0, 1, 2, 3
BLOCKED_TICKS = 3  # a job blocked on a person this many ticks in a row stops being watched
COST_REFRESH_S = 300.0  # how often the cost engine (billing calls) is read; the burn fills the gaps


@dataclass
class Options:
    interval_s: float = 30.0
    probe_s: float = 2.5
    once: bool = False
    approvals: set[str] = field(default_factory=set)
    max_recoveries_per_hour: int = 10
    run_timeout_s: float = 8.0
    rerun: str = "gpujob watch"  # the command line as given (no webhook URL: a secret), for approval lines


@dataclass
class JobWatch:
    path: Path
    name: str
    state_dir: Store  # the project's store (gpujob.state)
    ledger: Ledger
    loaded: Any = None
    done: bool = False
    blocked_ticks: int = 0
    said: dict[str, str] = field(default_factory=dict)  # topic -> last text, to say each thing once
    machine_id: str | None = None  # the machine last seen running (probed between ticks)

    @property
    def watching(self) -> bool:
        return not self.done and self.ledger.parked is None


class StatusSpy:
    """The SSH layer with run_status recorded per job, so a tick reads each run once for the plan and
    for the ledger."""

    def __init__(self, inner: SSHApi) -> None:
        self.statuses: dict[str, Any] = {}
        self.api = dataclasses.replace(inner, run_status=self._run_status)
        self._inner = inner

    async def _run_status(self, remote: Any, spec: Any) -> Any:
        status = await self._inner.run_status(remote, spec)
        self.statuses[spec.name] = status
        return status


class Watcher:
    def __init__(
        self,
        jobs: Sequence[tuple[Path, str, Store]],  # (job file, job name, its store), locked by the caller
        providers: Mapping[str, Any],
        *,
        clock: Clock,
        ssh: SSHApi,
        env: Mapping[str, str],
        emit: Callable[[Event, Store], None],
        options: Options,
    ) -> None:
        now = clock.now()
        self.jobs = {
            name: JobWatch(path=path, name=name, state_dir=sdir, ledger=load_ledger(sdir, name, now))
            for path, name, sdir in jobs
        }
        self.providers = providers
        self.clock = clock
        self.spy = StatusSpy(ssh)
        self.env = env
        self._emit = emit
        self.opt = options
        self.pulls = Puller(clock=clock, ssh=self.spy.api, say=self.say)
        self.probe = RunProbe(self.spy.api)
        self.disks = DiskGuard(self.spy.api, clock)
        self.acted = False  # the last tick applied something
        self.landed = LandedQueues(options.rerun)  # queues watched mid-run (gpujob.sweep.watching)
        self.final_failures: dict[str, int] = {}  # final pulls failed in a row (gpujob.watch.home)

    # --- events
    def say(
        self,
        job: JobWatch | None,
        kind: str,
        happened: str,
        did: str = "",
        *,
        level: str = "info",
        topic: str = "",
    ) -> None:
        """Emit an event; with a topic, only when its text differs from the last one on that topic."""
        if job is not None and topic:
            if job.said.get(topic) == happened + did:
                return
            job.said[topic] = happened + did
        usd = job.ledger.money(self.clock.now()) if job is not None else None
        event = make_event(
            self.clock.now(),
            job.name if job else "-",
            kind,
            happened,
            did,
            usd_so_far=usd,
            level=level,  # type: ignore[arg-type]
        )
        first = next(iter(self.jobs.values()))
        self._emit(event, (job or first).state_dir)

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
                if not watching and not self.landed.waiting:
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
            self.landed.close()
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

    def _maybe_pull(self, j: JobWatch, machine: LiveResource | None, status: Any) -> None:
        """checkpoint.pull: continuous: a background pull when the run names a checkpoint not pulled yet."""
        ck = j.loaded.spec.checkpoint
        if machine is None or machine.status != "running" or ck is None or ck.pull != "continuous":
            return
        newest = getattr(status, "last_checkpoint", None)
        if newest and newest != j.ledger.last_pulled:
            self.pulls.start(j, machine, self.providers[j.loaded.spec.platform], newest)

    # --- one tick
    async def tick(self) -> int:
        from gpujob.plan.planner import build_plan
        from gpujob.plan.refresh import read_live_state

        admit(self)  # a landed queue whose lock is free now (gpujob.sweep.watching)
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
        from gpujob.apply.records import job_pull_records

        plan = build_plan(loaded, live, now=now, env=self.env, pull_records=job_pull_records(loaded))
        for jp in plan.jobs:
            self._observe(self.jobs[jp.job], jp, live, now)
        await self._refresh_costs(active, now)
        code = ERROR if live.read_errors else HEALTHY
        todo: list[tuple[JobWatch, JobPlan, Decision]] = []
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
                await self._after(j, jp, _machine(live, j.loaded))
                full = await self.disks.check(
                    j, _machine(live, j.loaded), self.providers[jp.platform], self.say
                )
                if full is not None and j.watching:
                    await self._park(j, jp, _machine(live, j.loaded), live, full)
            save_ledger(j.state_dir, j.ledger)
        return code

    async def _settle(self, loaded: list[Any], live: LiveState) -> list[Any]:
        """Land a sweep's proven cells; a queue they land on first is watched under its own lock."""
        from gpujob.sweep.watching import settle_watched

        return await settle_watched(self, loaded, live)

    def _observe(self, j: JobWatch, jp: JobPlan, live: LiveState, now: datetime) -> None:
        """Fold what this tick read into the job's ledger: money and GPU time, the run's steps."""
        machine = _machine(live, j.loaded)
        j.machine_id = machine.id if machine is not None and machine.status == "running" else None
        j.ledger.observe_money(now, machine, jp.current_usd_per_hour)
        status = self.spy.statuses.get(j.name)
        if status is not None:
            j.ledger.observe_run(now, status)

    async def _refresh_costs(self, active: list[JobWatch], now: datetime) -> None:
        """Money so far from the cost engine (the platform's billing where it has one), every
        COST_REFRESH_S: between two reads the ledger adds the burn, so a tick costs no billing call."""
        from gpujob.cost.report import read_costs

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

    async def _judge(
        self,
        j: JobWatch,
        jp: JobPlan,
        live: LiveState,
        now: datetime,
        todo: list[tuple[JobWatch, JobPlan, Decision]],
    ) -> int:
        spec = j.loaded.spec
        machine = _machine(live, j.loaded)
        if any(f.code == "live-read" for f in jp.findings):
            return ERROR  # a partial read proves nothing; the next tick reads again
        if spec.fallback:  # it may run on another platform (gpujob.failover)
            from gpujob.failover.watching import on_move

            if (moved := await on_move(self, j, jp, live)) is not None:
                return moved
        decision = decide(jp, spec, machine, approved=self.opt.approvals, rerun=self.opt.rerun)
        burn = max(jp.current_usd_per_hour, jp.after_usd_per_hour if decision.actions else 0.0)
        recovering = self.landed.is_recovery(j.name, decision) and j.ledger.run_started_at is not None
        reason = limits.limit_reached(
            spec, j.ledger, now, burn_usd_per_hour=burn, interval_s=self.opt.interval_s,
            max_recoveries_per_hour=self.opt.max_recoveries_per_hour, recovering=recovering,
        )  # fmt: skip
        if reason is not None:
            await self._park(j, jp, machine, live, reason)
            return HUMAN
        warning = limits.projection_warning(spec, j.ledger, now, jp.current_usd_per_hour)
        if warning and "projection" not in j.ledger.warned:
            j.ledger.warned.append("projection")
            self.say(j, "budget", warning, level="warning")
        if decision.human:
            j.blocked_ticks += 0 if decision.actions else 1
            held = ", ".join(a.id for a in decision.held)
            self.say(j, "needs-human", "; ".join(decision.human), f"holding {held}" if held else "",
                     level="human", topic="human")  # fmt: skip
        else:
            j.said.pop("human", None)
            j.blocked_ticks = 0
        if decision.actions:
            todo.append((j, jp, decision))
            kind, why = describe(jp, decision, machine)
            what = ", ".join(f"{a.kind.value} {a.resource_kind}" for a in decision.actions)
            self.say(j, kind, why, what, level="action")
        return HUMAN if decision.human else HEALTHY

    async def _apply(
        self, todo: list[tuple[JobWatch, JobPlan, Decision]], plan: Plan, live: LiveState
    ) -> int:
        for j, _, d in list(todo):
            await self.pulls.settle(j.name)
            await self.probe.drop(j.name)
            machine = _machine(live, j.loaded)
            if _stops_machine(d) and machine is not None and machine.status == "running":
                home = await self._wind_down(j, machine, "before it stops")
                if not home and d.finishing and hold_stop(self, j, machine):
                    todo.remove((j, _, d))  # its files are on that disk: no stop until they are home
        if not todo:
            return HEALTHY
        outcomes = await apply_decisions(todo, plan, self.providers, ssh=self.spy.api, clock=self.clock, env=self.env,
                                         note=lambda job, text: self.say(self.jobs[job], "note", text))  # fmt: skip
        code = RECOVERED
        now = self.clock.now()
        for j, jp, d in todo:
            ok, detail = outcomes[j.name]
            kinds = {a.kind for a in d.actions if a.resource_kind in ("pod", "machine")}
            if ok and kinds & {K.CREATE, K.START, K.REPLACE, K.STOP, K.TERMINATE}:
                up = bool(kinds & {K.CREATE, K.START, K.REPLACE}) and not kinds & {K.STOP, K.TERMINATE}
                j.ledger.restate(now, jp.after_usd_per_hour, gpu_billing=up)
            # creating a job never run is no recovery, nor is the planned create of a landed queue's machine
            if self.landed.is_recovery(j.name, d) and j.ledger.run_started_at is not None:
                j.ledger.recovered(now, ", ".join(a.id for a in d.actions), ok)
            self.landed.created(j.name, ok)
            if ok:
                self.say(j, "finishing" if d.finishing else "recovered", detail, level="action")
            else:
                code = ERROR
                self.say(j, "recovery-failed", detail, "retrying next tick", level="warning")
        return code

    async def _after(self, j: JobWatch, jp: JobPlan, machine: LiveResource | None) -> None:
        """Background pulls, and the end of a job whose run finished."""
        spec = j.loaded.spec
        status = self.spy.statuses.get(j.name)
        provider = self.providers[spec.platform]
        up = machine if machine is not None and machine.status == "running" else None
        if status is not None:
            self._maybe_pull(j, up, status)
        run = jp.run
        finished = run is not None and (
            run.finished_for_digest or (run.state == "exited" and run.exit_code == 0)
        )
        if not finished or any(a.kind is not K.NOOP for a in jp.actions):
            return
        started = getattr(status, "started_at", None) if status is not None else None
        wants_pull = (
            spec.checkpoint is not None and spec.checkpoint.pull != "never"
        ) or spec.outputs is not None
        if up is not None and wants_pull and j.ledger.final_pull_for != (started or "?"):
            await self.pulls.settle(j.name)
            if not await self.pulls.final(j, up, provider, reason="the run finished"):
                return  # try again next tick
            j.ledger.final_pull_for = started or "?"
        elif up is None and wants_pull and unhome(self, j, machine):
            return  # stopped with its files on its disk: a person pulls them (gpujob.watch.home)
        self.final_failures.pop(j.name, None)
        j.done = True
        j.ledger.finished_digest = j.loaded.digest
        verb = spec.teardown.on_finish
        self.say(j, "finished", "the run exited 0" + (f"; teardown.on_finish: {verb} done" if verb != "keep" else ""),
                 j.ledger.goodput(self.clock.now()).line())  # fmt: skip

    async def _wind_down(self, j: JobWatch, machine: LiveResource, why: str) -> bool:
        """Before watch stops a machine itself: stop the run (its final save lands), then the final pull,
        so the pull sees everything the run wrote; whether it brought all home. (A terminate gets both
        from the teardown gate.)"""
        from gpujob.watch.apply import quiesce

        ck = j.loaded.spec.checkpoint
        if (ck is None or ck.pull == "never") and j.loaded.spec.outputs is None:
            return True
        provider = self.providers[j.loaded.spec.platform]
        stopped = await quiesce(j, machine, provider, ssh=self.spy.api, clock=self.clock)
        return await self.pulls.final(j, machine, provider, reason=f"{why}; {stopped}")

    async def _park(
        self, j: JobWatch, jp: JobPlan, machine: LiveResource | None, live: LiveState, reason: str
    ) -> None:
        from gpujob.watch.apply import park

        spec = j.loaded.spec
        verb = "terminate" if spec.teardown.on_finish == "terminate" else "stop"
        self.say(j, "limit", reason, f"parking: pull the checkpoints, then {verb} the machine", level="human")
        await self.pulls.settle(j.name)
        if machine is not None and machine.status == "running":
            # Also before a terminate: the gate only pulls what the terminate would erase, and a network
            # volume survives it; a parked job has every checkpoint at home all the same.
            await self._wind_down(j, machine, "before parking")
        ok, detail = await park(
            j.loaded, verb, live, self.providers, ssh=self.spy.api, clock=self.clock, env=self.env
        )
        if ok:
            j.ledger.parked = Park(at=self.clock.now(), reason=reason, digest=j.loaded.digest)
            self.say(j, "parked", detail or "nothing was running", "edit the job file (or raise the limit) to resume",
                     level="human")  # fmt: skip
        else:
            self.say(j, "park-failed", detail, "retrying next tick", level="warning")


def _machine(live: LiveState, loaded: Any) -> LiveResource | None:
    """The job's own pod / machine (gpujob.naming's rule)."""
    from gpujob.naming import machines

    kind = "pod" if loaded.spec.platform == "runpod" else "machine"
    found = [r for r in machines(live.resources, loaded.spec.name, loaded.project) if r.kind == kind]
    found.sort(key=lambda r: (r.created_at is None, r.created_at or datetime.min, r.id))
    return found[0] if found else None


def _stops_machine(d: Decision) -> bool:
    """A stop watch makes itself (a terminate passes the teardown gate, which quiesces and pulls)."""
    return any(a.kind is K.STOP for a in d.actions)
