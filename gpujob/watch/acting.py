"""What a tick of `gpujob watch` does with its plan: judge each job (a move, the policy, the limits), apply
what it may fix on its own, pull in the background, and finish or park a job (its run stopped and its
checkpoints pulled first).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gpujob import naming
from gpujob.live import LiveResource, LiveState
from gpujob.plan.model import ActionKind, JobPlan, Plan
from gpujob.profile_facts import load_facts
from gpujob.watch import limits
from gpujob.watch.apply import apply_decisions, describe
from gpujob.watch.home import hold_stop, unhome
from gpujob.watch.hooks import is_recovery
from gpujob.watch.jobs import (
    ERROR,
    HEALTHY,
    HUMAN,
    RECOVERED,
    JobWatch,
    WatcherBase,
    job_machine,
    stops_machine,
)
from gpujob.watch.ledger import Park
from gpujob.watch.policy import Decision, decide

K = ActionKind


class Acting(WatcherBase):
    def _maybe_pull(self, j: JobWatch, machine: LiveResource | None, status: Any) -> None:
        """checkpoint.pull: continuous: a background pull when the run names a checkpoint not pulled yet."""
        ck = j.loaded.spec.checkpoint
        if machine is None or machine.status != "running" or ck is None or ck.pull != "continuous":
            return
        newest = getattr(status, "last_checkpoint", None)
        if newest and newest != j.ledger.last_pulled:
            self.pulls.start(j, machine, self.providers[j.loaded.spec.platform], newest)

    async def _judge(
        self,
        j: JobWatch,
        jp: JobPlan,
        live: LiveState,
        now: datetime,
        todo: list[tuple[JobWatch, JobPlan, Decision]],
    ) -> int:
        spec = j.loaded.spec
        machine = job_machine(live, j.loaded)
        if any(f.code == "live-read" for f in jp.findings):
            return ERROR  # a partial read proves nothing; the next tick reads again
        for h in self.hooks:  # e.g. a move to another platform (gpujob.failover.watching)
            if (acted := await h.judge(self, j, jp, live)) is not None:
                return acted
        decision = decide(
            jp, spec, machine, approved=self.opt.approvals, rerun=self.opt.rerun, hooks=self.hooks
        )
        burn = max(jp.current_usd_per_hour, jp.after_usd_per_hour if decision.actions else 0.0)
        recovering = is_recovery(self.hooks, j.name, decision) and j.ledger.run_started_at is not None
        reason = limits.limit_reached(
            spec, j.ledger, now, burn_usd_per_hour=burn, interval_s=self.opt.interval_s,
            max_recoveries_per_hour=self.opt.max_recoveries_per_hour, recovering=recovering,
        )  # fmt: skip
        status = self.spy.statuses.get(j.name)
        if reason is None and machine is not None and not decision.actions:
            reason = limits.stall_reason(spec, j.ledger, now, alive=bool(getattr(status, "alive", False)),
                                         billing=machine.status == "running")  # fmt: skip
        if reason is not None:
            await self._park(j, jp, machine, live, reason)
            return HUMAN
        warning = limits.projection_warning(spec, j.ledger, now, jp.current_usd_per_hour, jp.forecast)
        if warning and "projection" not in j.ledger.warned:
            j.ledger.warned.append("projection")
            self.say(j, "budget", warning, level="warning")
        self._deadline(j, jp, machine)
        self._fast_finish(j, jp)
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

    def _deadline(self, j: JobWatch, jp: JobPlan, machine: LiveResource | None) -> None:
        """run.deadline: the forecast slipped past it (after preemptions), or the start after one was
        re-planned for it (gpujob.plan.deadline): each said once per machine and kind, in this tick,
        before the tick applies anything (spends more)."""
        for f in jp.findings:
            kind = f.summary.split(" ", 1)[0]  # "the" (slipped), "re-planned", "nothing", "run.deadline"
            key = f"deadline:{machine.id if machine is not None else '-'}:{kind}"
            if f.code == "deadline" and f.severity != "info" and key not in j.ledger.warned:
                j.ledger.warned.append(key)
                self.say(j, "deadline", f.summary, f.fix, level="warning")

    def _fast_finish(self, j: JobWatch, jp: JobPlan) -> None:
        """LC4.3: a run that exited 0 far sooner than expected (gpujob.plan.run_evidence.fast_finish) is
        questioned once per run, as the plan does: its results are not to be trusted unread."""
        started = jp.run.started_at if jp.run is not None else None
        for f in jp.findings:
            key = f"fast-finish:{started or '-'}"
            if f.code == "fast-finish" and key not in j.ledger.warned:
                j.ledger.warned.append(key)
                self.say(j, "fast-finish", f.summary, f.fix, level="warning")

    async def _apply(
        self, todo: list[tuple[JobWatch, JobPlan, Decision]], plan: Plan, live: LiveState
    ) -> int:
        for j, _, d in list(todo):
            await self.pulls.settle(j.name)
            await self.probe.drop(j.name)
            machine = job_machine(live, j.loaded)
            if stops_machine(d) and machine is not None and machine.status == "running":
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
            kinds = {
                a.kind for a in d.actions if a.resource_kind in naming.MACHINE_KINDS + naming.GROUP_KINDS
            }
            if ok and kinds & {K.CREATE, K.START, K.REPLACE, K.STOP, K.TERMINATE}:
                up = bool(kinds & {K.CREATE, K.START, K.REPLACE}) and not kinds & {K.STOP, K.TERMINATE}
                j.ledger.restate(now, jp.after_usd_per_hour, gpu_billing=up)
            # creating a job never run is no recovery, nor is the planned create of a landed queue's machine
            if is_recovery(self.hooks, j.name, d) and j.ledger.run_started_at is not None:
                j.ledger.recovered(now, ", ".join(a.id for a in d.actions), ok)
            for h in self.hooks:
                h.created(j.name, ok)
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

    async def park_job(
        self, j: JobWatch, jp: JobPlan, machine: LiveResource | None, live: LiveState, reason: str
    ) -> int:
        """A capability's judge parks the job itself (e.g. a gang that cannot be made whole, gpujob.gang)."""
        self.acted = True
        await self._park(j, jp, machine, live, reason)
        return HUMAN

    async def _park(
        self, j: JobWatch, jp: JobPlan, machine: LiveResource | None, live: LiveState, reason: str
    ) -> None:
        from gpujob.watch.apply import park

        spec = j.loaded.spec
        verb = "terminate" if spec.teardown.on_finish == "terminate" or not _stoppable(spec) else "stop"
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


def _stoppable(spec: Any) -> bool:
    """Whether the job's machine has a stop: an Instant Cluster has none (it is deleted whole, behind the
    gate), so parking one terminates it rather than leaving it billing (profile `multinode.stoppable`)."""
    if spec.machine.nodes <= 1:
        return True
    mn = load_facts(spec.platform).multinode
    return mn is None or mn.stoppable
