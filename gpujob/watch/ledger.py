"""What watch has seen of one job over its life: money and GPU time, the runs (one per launch) and
their steps, the recoveries it made, and whether the job is parked or finished. Saved to the project's
store (watch/<job>.json) after every tick, so a killed watcher starts where it stopped.

Goodput = useful steps ÷ the steps the billed GPU time could have done at the run's own pace.
Steps come from $GPUJOB_PROGRESS_FILE (see gpujob.ssh.launcher): the launcher records each run's
first and last step with their times ($JOBDIR/runs, progress.first), so the work redone after a loss
and the time from the lost run's last step to the next run's first are exact, not sampled, even for
a run that lived and died between two ticks.
The pace is the median step rate between two readings of one run, so a checkpoint write between two
readings slows one sample, not the estimate. Money is integrated from the plan's hourly rate of what
is live (gpujob.plan.cost) at each tick, and GPU time from the machine's state at each tick; the money
shown and budgeted is the cost engine's (gpujob.cost) once it has answered.
"""

from __future__ import annotations

import hashlib
import statistics
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from gpujob.live import LiveResource
from gpujob.state import StateRef, write_model
from gpujob.state.ledger import RunFields, ledger_name, read_ledger_as

MAX_SAMPLES = 200
MIN_SAMPLE_S = 0.5  # two readings closer than this give a noisy rate
MAX_TRAIL = 400  # points kept of each trail (steps, money) for the charts; thinned, never cut short


class _Mutable(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class RunSegment(RunFields):
    """One launch of the command, known by the launcher's started_at stamp."""

    model_config = _Mutable.model_config


class Loss(BaseModel):
    """A run that ended without finishing, and what its successor had to do again."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    last_step: int = Field(description="The last step the lost run reported.")
    resumed_from: int = Field(description="The step the next run resumed from (its first step - 1).")
    steps_redone: int
    recovery_s: float = Field(description="Last step of the lost run -> first step of the next one.")


class Recovery(_Mutable):
    at: datetime
    what: str
    ok: bool = True


class TimePoint(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    at: datetime
    value: float


def _trail(points: list[TimePoint], at: datetime, value: float) -> None:
    """Add a point; past MAX_TRAIL drop every other older one, so the trail keeps its whole span."""
    if points and points[-1].at >= at:
        if points[-1].at == at:
            points[-1] = TimePoint(at=at, value=value)
        return
    points.append(TimePoint(at=at, value=value))
    if len(points) > MAX_TRAIL:
        points[:-1] = points[:-1:2]


class Park(_Mutable):
    at: datetime
    reason: str
    digest: str = Field(description="The job file it was parked under; a changed file un-parks it.")


class Goodput(BaseModel):
    """The figures `status` and `cost` show."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    wall_s: float
    gpu_hours: float
    usd: float
    steps_done: int | None
    steps_executed: int | None
    steps_redone: int
    losses: int
    recovery_s: list[float]
    step_rate: float | None
    goodput: float | None

    def line(self) -> str:
        parts = [f"{self.gpu_hours:.3f} GPU-h billed over {_hours(self.wall_s)}"]
        if self.steps_done is not None:
            parts.append(
                f"{self.steps_done} steps done, {self.steps_redone} redone after {self.losses} loss(es)"
            )
        if self.recovery_s:
            worst = max(self.recovery_s)
            parts.append(f"recovery {statistics.median(self.recovery_s):.1f} s median, {worst:.1f} s worst")
        head = f"goodput {self.goodput:.2f}" if self.goodput is not None else "goodput unknown"
        return head + " (" + "; ".join(parts) + ")"


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


class Ledger(_Mutable):
    job: str
    first_seen: datetime
    last_tick: datetime | None = None
    usd: float = 0.0
    usd_per_hour: float = 0.0
    gpu_seconds: float = 0.0
    gpu_billing: bool = False
    billed_usd: float | None = Field(None, description="Spent so far per the cost engine (gpujob.cost).")
    billed_at: datetime | None = None
    billed_anchor: float = Field(0.0, description="`usd` when billed_usd was read.")
    run_started_at: datetime | None = Field(
        None, description="When the run of this job was first seen going."
    )
    segments: list[RunSegment] = Field(default_factory=list)
    rates: list[float] = Field(default_factory=list)
    recoveries: list[Recovery] = Field(default_factory=list)
    last_pulled: str | None = Field(None, description="Newest checkpoint name in the last complete pull.")
    last_pull_at: datetime | None = None
    final_pull_for: str | None = Field(None, description="started_at of the finished run last pulled.")
    parked: Park | None = None
    finished_digest: str | None = None
    warned: list[str] = Field(default_factory=list, description="One-time warnings already given.")
    steps_trail: list[TimePoint] = Field(default_factory=list, description="The run's step over time.")
    usd_trail: list[TimePoint] = Field(default_factory=list, description="Money spent so far, over time.")
    activity: str | None = Field(
        None, description="The run's last sign of life: its step, checkpoint and log."
    )
    activity_at: datetime | None = Field(
        None, description="When watch first saw that sign (run.stall_after)."
    )
    activity_usd: float = Field(0.0, description="Money spent so far at activity_at.")
    progress_sign: str | None = Field(None, description="The run's last step and checkpoint (no log).")
    progress_at: datetime | None = Field(None, description="When watch first saw that sign.")
    progress_usd: float = Field(0.0, description="Money spent so far at progress_at.")
    gpu_idle_since: datetime | None = Field(
        None, description="The first of the ticks since which nvidia-smi read 0 % on the machine."
    )

    # --- observing
    def observe_money(self, now: datetime, machine: LiveResource | None, usd_per_hour: float) -> None:
        """Integrate what billed since the last tick at the rates seen then (a gap while watch was dead
        is billed at the last rate: the resources most likely kept running)."""
        if self.last_tick is not None:
            dt = max(0.0, (now - self.last_tick).total_seconds())
            self.usd += self.usd_per_hour * dt / 3600
            if self.gpu_billing:
                self.gpu_seconds += dt
        elif machine is not None and machine.status == "running":
            # First sight of a job already up: count its current run from the platform's start time.
            start = machine.started_at or machine.created_at
            if start is not None and start < now:
                dt = (now - start).total_seconds()
                self.usd += usd_per_hour * dt / 3600
                self.gpu_seconds += dt if machine.gpu_count > 0 else 0.0
        self.last_tick = now
        self.usd_per_hour = usd_per_hour
        self.gpu_billing = machine is not None and machine.status == "running" and machine.gpu_count > 0
        _trail(self.usd_trail, now, self.money(now))

    def money(self, now: datetime) -> float:
        """Spent so far: the cost engine's last figure (the platform's billing where it has one) plus
        what watch's own integration added since (it follows every stop and start between two reads);
        the integration alone until the engine has answered once."""
        tail = (
            self.usd_per_hour * max(0.0, (now - self.last_tick).total_seconds()) / 3600
            if self.last_tick
            else 0.0
        )
        if self.billed_usd is None:
            return self.usd + tail
        return self.billed_usd + (self.usd - self.billed_anchor) + tail

    def billed(self, at: datetime, usd: float) -> None:
        """The cost engine's figure, read at the tick just folded in (observe_money(at) came first)."""
        self.billed_usd, self.billed_at, self.billed_anchor = usd, at, self.usd

    def restate(self, now: datetime, usd_per_hour: float, gpu_billing: bool) -> None:
        """After watch changed the machine itself: bill up to now as before, from now at the new rates
        (so a pod created mid-tick is not counted as idle until the next tick)."""
        if self.last_tick is not None:
            dt = max(0.0, (now - self.last_tick).total_seconds())
            self.usd += self.usd_per_hour * dt / 3600
            self.gpu_seconds += dt if self.gpu_billing else 0.0
        self.last_tick, self.usd_per_hour, self.gpu_billing = now, usd_per_hour, gpu_billing

    def observe_run(self, now: datetime, status: object) -> None:
        """Fold one RunStatus (gpujob.ssh.launcher) into the runs: the earlier ones exactly as the
        launcher recorded them, the current one from its progress file (and a pace sample)."""
        started = getattr(status, "started_at", None)
        if not started:
            return
        self._activity(now, status)
        if getattr(status, "alive", False) and self.run_started_at is None:
            self.run_started_at = now
        for past in getattr(status, "history", []):
            seg = self._segment(past.started_at)
            seg.exit_code = past.exit_code
            if past.first is not None:
                seg.first_step, seg.first_at = past.first.step, now - timedelta(seconds=past.first.age_s)
            if past.last is not None:
                seg.last_step, seg.last_at = past.last.step, now - timedelta(seconds=past.last.age_s)
        seg = self._segment(started)
        seg.exit_code = getattr(status, "exit_code", None)
        first = getattr(status, "progress_first", None)
        if first is not None:
            seg.first_step, seg.first_at = first.step, now - timedelta(seconds=first.age_s)
        cur = getattr(status, "progress", None)
        if cur is not None:
            at = now - timedelta(seconds=cur.age_s)
            if seg.last_step is not None and seg.last_at is not None and cur.step > seg.last_step:
                dt = (at - seg.last_at).total_seconds()
                if dt >= MIN_SAMPLE_S:
                    self.rates.append((cur.step - seg.last_step) / dt)
                    del self.rates[:-MAX_SAMPLES]
            seg.last_step, seg.last_at = cur.step, at
            _trail(self.steps_trail, at, cur.step)

    def _activity(self, now: datetime, status: object) -> None:
        """A new step, checkpoint or log line (or a new run) since the last reading moves activity_at."""
        cur = getattr(status, "progress", None)
        tail = getattr(status, "log_tail", "") or ""
        sign = "|".join([
            str(getattr(status, "started_at", "")), str(cur.step if cur is not None else ""),
            str(getattr(status, "last_checkpoint", "")), hashlib.sha256(tail.encode()).hexdigest()[:16],
        ])  # fmt: skip
        if sign != self.activity:
            self.activity, self.activity_at, self.activity_usd = sign, now, self.money(now)
        stepped = sign.rsplit("|", 1)[0]  # a run that only logs is not progressing (GPU 0 %)
        if stepped != self.progress_sign:
            self.progress_sign, self.progress_at, self.progress_usd = stepped, now, self.money(now)
        util = getattr(status, "gpu_util", None)
        if util != 0 or not getattr(status, "alive", False):
            self.gpu_idle_since = None  # busy, not reported (no nvidia-smi), or no run to judge
        elif self.gpu_idle_since is None:
            self.gpu_idle_since = now

    def stalled_for(self, now: datetime) -> float | None:
        """Seconds since the run's last sign of life, or None before the first."""
        return None if self.activity_at is None else max(0.0, (now - self.activity_at).total_seconds())

    def idle_for(self, now: datetime) -> tuple[float, float] | None:
        """(seconds the GPU has read 0 %, seconds since the last new step or checkpoint), or None
        while the GPU is not read at 0 %."""
        if self.gpu_idle_since is None or self.progress_at is None:
            return None
        return (now - self.gpu_idle_since).total_seconds(), max(0.0, (now - self.progress_at).total_seconds())

    def _segment(self, started_at: str) -> RunSegment:
        found = next((s for s in self.segments if s.started_at == started_at), None)
        if found is None:
            found = RunSegment(started_at=started_at)
            self.segments.append(found)
            self.segments.sort(key=lambda s: s.started_at)  # ISO stamps sort in time order
            del self.segments[:-MAX_SAMPLES]
        return found

    def losses(self) -> list[Loss]:
        """Each run that ended short of exit 0, with what the next run redid and how long it took to
        get from the lost run's last step to the next run's first."""
        out = []
        for a, b in zip(self.segments, self.segments[1:], strict=False):
            if a.exit_code == 0 or a.last_step is None or a.last_at is None:
                continue
            if b.first_step is None or b.first_at is None:
                continue
            resumed = b.first_step - 1
            out.append(
                Loss(
                    last_step=a.last_step,
                    resumed_from=resumed,
                    steps_redone=max(0, a.last_step - resumed),
                    recovery_s=max(0.0, (b.first_at - a.last_at).total_seconds()),
                )
            )
        return out

    def recovered(self, now: datetime, what: str, ok: bool) -> None:
        self.recoveries.append(Recovery(at=now, what=what, ok=ok))
        del self.recoveries[:-MAX_SAMPLES]

    def recoveries_since(self, since: datetime) -> int:
        return sum(1 for r in self.recoveries if r.at >= since)

    # --- figures
    def goodput(self, now: datetime) -> Goodput:
        done = max((s.last_step for s in self.segments if s.last_step is not None), default=None)
        executed = None
        if self.segments:
            executed = 0
            for s in self.segments:
                if s.last_step is not None:
                    start = (s.first_step - 1) if s.first_step is not None else s.last_step
                    executed += max(0, s.last_step - start)
        rate = statistics.median(self.rates) if self.rates else None
        if (self.finished_digest or self.parked) and self.last_tick is not None:
            now = self.last_tick  # the figures of a finished or parked job stop where watch stopped
        since = max(0.0, (now - self.last_tick).total_seconds()) if self.last_tick is not None else 0.0
        gpu_s = self.gpu_seconds + (since if self.gpu_billing else 0.0)
        ratio = None
        if done is not None and rate and gpu_s > 0:
            useful = done - self._steps_before_watch()
            ratio = max(0.0, min(1.0, useful / (gpu_s * rate)))
        losses = self.losses()
        return Goodput(
            wall_s=(now - self.first_seen).total_seconds(),
            gpu_hours=gpu_s / 3600,
            usd=self.money(now),
            steps_done=done,
            steps_executed=executed,
            steps_redone=sum(x.steps_redone for x in losses),
            losses=len(losses),
            recovery_s=[x.recovery_s for x in losses],
            step_rate=rate,
            goodput=ratio,
        )

    def _steps_before_watch(self) -> int:
        """Steps done before the first run watch saw (it resumed from them: they cost no GPU time here)."""
        first = self.segments[0] if self.segments else None
        if first is None or first.first_step is None:
            return 0
        return max(0, first.first_step - 1)


def load_ledger(state: StateRef, job: str, now: datetime) -> Ledger:
    return read_ledger(state, job) or Ledger(job=job, first_seen=now)


def read_ledger(state: StateRef, job: str) -> Ledger | None:
    """The ledger if watch ever kept one for this job (None for none, or an unreadable one)."""
    return read_ledger_as(state, job, Ledger)


def save_ledger(state: StateRef, ledger: Ledger) -> None:
    """Replaced atomically by the store: a kill never leaves half a ledger."""
    write_model(state, ledger_name(ledger.job), ledger, indent=1)
