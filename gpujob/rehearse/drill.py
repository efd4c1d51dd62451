"""The drill: pull, interrupt, recover as watch does, prove the resume, record.

Times are taken on gpujob's clock; the first new step's time is the moment the run wrote it (the read
time minus the progress file's age), so a slow read does not count against the recovery.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from gpujob.errors import GpujobError
from gpujob.plan.records import step_of
from gpujob.rehearse.record import Rehearsal

TIMEOUT_S = 900.0
Say = Callable[[str], None]


@dataclass
class Options:
    timeout_s: float = TIMEOUT_S  # interrupt -> resumed, at most
    probe_s: float = 1.0  # watch's probe interval during the drill
    interval_s: float = 5.0  # watch's tick interval during the drill


@dataclass
class _Seen:
    """A run status as read at `at` (gpujob's clock)."""

    at: datetime
    status: Any

    def step(self) -> int | None:
        p = getattr(self.status, "progress", None)
        return p.step if p is not None else None

    def step_time(self, which: str = "progress") -> datetime | None:
        p = getattr(self.status, which, None)
        return self.at - timedelta(seconds=p.age_s) if p is not None else None


@dataclass
class _Events:
    items: list[Any] = field(default_factory=list)


def simulator_base(env: Mapping[str, str], platform: str) -> str | None:
    """The simulator's address when the job's platform API is the local simulator (its /_sim/ answers)."""
    from gpujob.config import endpoints

    ep = endpoints(dict(env))
    api = ep.runpod_api if platform == "runpod" else ep.paperspace_api
    base = re.sub(r"/v\d+$", "", api)
    try:
        with urllib.request.urlopen(f"{base}/_sim/clock", timeout=5) as resp:
            return base if "now" in json.loads(resp.read() or b"{}") else None
    except (OSError, ValueError, urllib.error.URLError):
        return None


def _sim_preempt(base: str, pod_id: str) -> None:
    req = urllib.request.Request(
        f"{base}/_sim/inject",
        data=json.dumps({"fault": "preempt", "pod_id": pod_id}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        preempted = json.loads(resp.read()).get("preempted", [])
    if pod_id not in preempted:
        raise GpujobError(f"the simulator did not preempt {pod_id} (preempted: {preempted})")


def refuse_unless_drillable(spec: Any, machine: Any) -> None:
    kind = "pod" if spec.platform == "runpod" else "machine"
    if spec.checkpoint is None:
        raise GpujobError(
            f"{spec.name}: no checkpoint block: a preemption restarts it from zero, there is no resume to prove",
            hint="add checkpoint: {dir: ..., interval: ...} and make the run resume from GPUJOB_CHECKPOINT_DIR",
        )
    if spec.run is None:
        raise GpujobError(f"{spec.name}: no run section: nothing to interrupt")
    if machine is None or machine.status != "running":
        state = "does not exist" if machine is None else f"is {machine.raw_status or machine.status}"
        raise GpujobError(
            f"{spec.name}: its {kind} {state}: a drill interrupts a live run",
            hint="gpujob apply (state: running), wait for a checkpoint, then gpujob rehearse",
        )


async def refuse_dead_spot_api(spec: Any, machine: Any, provider: Any) -> None:
    """RunPod spot pods resume only through the legacy GraphQL spot API: when it no longer answers,
    nothing could bring the pod back, and a drill would leave it down."""
    if spec.platform != "runpod" or not spec.machine.spot:
        return
    from gpujob.providers.runpod import spot

    client = getattr(provider, "client", None)
    if client is None:
        return
    try:
        await spot.floor(
            client, machine.gpu_id or spec.machine.gpu[0], machine.cloud, max(1, machine.gpu_count)
        )
    except GpujobError as exc:
        raise GpujobError(
            f"{spec.name}: RunPod's spot API does not answer a bid for {machine.gpu_id} ({str(exc).splitlines()[0]}): "
            "nothing could resume the pod after the drill, so it is not interrupted",
            hint="try again later, or set machine.spot: false",
        ) from exc


async def drill(
    view: Any,
    providers: Mapping[str, Any],
    *,
    clock: Any,
    ssh: Any,
    env: Mapping[str, str],
    say: Say,
    sim_base: str | None,
    options: Options | None = None,
) -> Rehearsal:
    """Run the drill on one job (its lock held by the caller, the interrupt already agreed to)."""
    from gpujob.apply import runtime

    opt = options or Options()
    spec, provider = view.spec, view.provider
    machine = view.machine
    refuse_unless_drillable(spec, machine)
    await refuse_dead_spot_api(spec, machine, provider)
    before = await _read(view, ssh, clock)
    if not getattr(before.status, "alive", False):
        raise GpujobError(f"{spec.name}: its run is not going on {machine.name}: nothing to interrupt",
                          hint="gpujob status shows why; gpujob apply relaunches it")  # fmt: skip
    say("pulling first: the drill proves the resume against the newest checkpoint verified at home")
    record = await runtime.pull(view.target(), ssh, clock, say)
    verified = [(step_of(f.name), f.name) for f in record.files if f.verified]
    steps = [(s, n) for s, n in verified if s is not None]
    if not steps:
        raise GpujobError(
            f"{spec.name}: no verified checkpoint with a step in its name yet ({len(record.files)} pulled): "
            "there is nothing to prove a resume against",
            hint="wait for the run's first checkpoint (checkpoint.interval), then gpujob rehearse",
        )
    ck_step, ck_name = max(steps)
    just_before = await _read(view, ssh, clock)
    rate = _seconds_per_step(before, just_before)
    usd_h = machine.cost_per_hour
    t0 = clock.now()
    if sim_base is not None and spec.platform == "runpod" and machine.spot:
        how = "the simulator's spot preemption (SIGTERM, then SIGKILL after the grace)"
        _sim_preempt(sim_base, machine.id)
    else:
        from gpujob.apply.quiesce import stop

        # The stop gpujob makes everywhere: the job's processes get SIGTERM and their grace first.
        how = f"a stop through the {spec.platform} API"
        _stopped, said = await stop(view.target(), ssh, clock, say, before="drill's stop")
        how += f" ({said})" if said else ""
    say(
        f"interrupted {machine.name} ({machine.id}) with {how}; newest verified checkpoint: {ck_name} (step {ck_step})"
    )
    events = _Events()
    out: dict[str, Any] = dict(job=spec.name, platform=spec.platform, at=t0, machine_id=machine.id, how=how,
                               ok=False, checkpoint=ck_name, checkpoint_step=ck_step, step_before=just_before.step(),
                               seconds_per_step=rate, usd_per_hour=usd_h)  # fmt: skip
    after = await _recover(view, providers, clock=clock, ssh=ssh, env=env, say=say, t0=t0, old=just_before,
                           events=events, opt=opt)  # fmt: skip
    acted = next((e for e in events.items if e.level == "action" and e.at >= t0), None)
    if acted is not None:
        out["detection_s"] = round((acted.at - t0).total_seconds(), 1)
    if after is None:
        return Rehearsal(
            **out, detail=f"the run did not resume within {opt.timeout_s:.0f} s of the interrupt"
        )
    first = after.status.progress_first.step
    resume = first - 1
    first_at = after.step_time("progress_first") or after.at
    out |= {"resume_step": resume, "recovery_s": round(max(0.0, (first_at - t0).total_seconds()), 1)}
    last_old = _last_step_of_old_run(after.status, just_before)
    if last_old is not None:
        redone = max(0, last_old - resume)
        out |= {"step_before": last_old, "redone_steps": redone}
    _price(out, view, machine)
    out["ok"] = first >= ck_step
    if not out["ok"]:
        out["detail"] = (f"the new run's first step {first} is before the newest verified checkpoint's step "
                         f"{ck_step}: it did not resume from its checkpoints")  # fmt: skip
    return Rehearsal(**out)


async def _read(view: Any, ssh: Any, clock: Any) -> _Seen:
    from gpujob.apply import runtime

    async with runtime.open_remote(view.target(), ssh, clock, lambda _t: None) as remote:
        status = await ssh.run_status(remote, view.spec)
    return _Seen(clock.now(), status)


def _price(out: dict[str, Any], view: Any, machine: Any) -> None:
    """The redone work and the recovery in dollars, from one rate: the machine's as the platform bills
    it (else the profile's price), and the step time read around the interrupt (else the job's pace in
    watch's ledger, else run.step_time)."""
    from gpujob.cost.history import read_history

    spec, said = view.spec, []
    usd_h = machine.cost_per_hour
    if usd_h:
        said.append(f"${usd_h:,.4f}/h billed for {machine.id}")
    else:
        from gpujob.cost.rates import gpu_rate
        from gpujob.profile import load_profile

        m = spec.machine
        r = gpu_rate(load_profile(spec.platform), [], spec.machine.gpu[0], count=m.gpu_count, cloud=m.cloud,
                     spot=bool(machine.spot))  # fmt: skip
        usd_h = r.usd_per_hour if r is not None else None
        said += [f"${usd_h:,.4f}/h from the profile ({r.source})"] if r is not None and usd_h else []
    step_s = out.get("seconds_per_step")
    if step_s:
        said.append(f"{step_s:.3g} s/step read around the interrupt")
    else:
        h = read_history(view.state_dir, spec.name)
        if h is not None and h.step_rate:
            step_s = 1 / h.step_rate
            said.append(f"{step_s:.3g} s/step from watch's ledger")
        elif spec.run is not None and spec.run.step_time is not None:
            step_s = spec.run.step_time.total_seconds()
            said.append(f"{step_s:.3g} s/step from run.step_time")
        out["seconds_per_step"] = step_s
    out["usd_per_hour"], out["priced_from"] = usd_h, "; ".join(said)
    if usd_h and step_s and out.get("redone_steps") is not None:
        out["redone_usd"] = round(out["redone_steps"] * step_s * usd_h / 3600.0, 6)
    if usd_h and out.get("recovery_s") is not None:
        out["recovery_usd"] = round(out["recovery_s"] * usd_h / 3600.0, 6)


def _seconds_per_step(a: _Seen, b: _Seen) -> float | None:
    sa, sb, ta, tb = a.step(), b.step(), a.step_time(), b.step_time()
    if None in (sa, sb, ta, tb) or sb <= sa:  # type: ignore[operator]
        return None
    return (tb - ta).total_seconds() / (sb - sa)  # type: ignore[operator]


def _last_step_of_old_run(status: Any, old: _Seen) -> int | None:
    """The interrupted run's last step: the launcher's record of it, else the step read just before."""
    started = getattr(old.status, "started_at", None)
    for past in reversed(getattr(status, "history", None) or []):
        if past.started_at == started and past.last is not None:
            return int(past.last.step)
    return old.step()


async def _recover(
    view: Any, providers: Mapping[str, Any], *, clock: Any, ssh: Any, env: Mapping[str, str], say: Say,
    t0: datetime, old: _Seen, events: _Events, opt: Options,
) -> _Seen | None:  # fmt: skip
    """Watch's own loop, tick by tick, until a new run reports its first step (or the time is up)."""
    from gpujob.watch.events import append_event
    from gpujob.watch.jobs import Options as WatchOptions
    from gpujob.watch.loop import Watcher

    def emit(event: Any, store: Any) -> None:
        events.items.append(event)
        append_event(store, event)
        say(f"watch: {event.event}: {event.happened}" + (f" -> {event.did}" if event.did else ""))

    watcher = Watcher(
        [(view.loaded.path, view.spec.name, view.state_dir)], providers, clock=clock, ssh=ssh, env=env,
        emit=emit, options=WatchOptions(interval_s=opt.interval_s, probe_s=opt.probe_s, rerun="gpujob rehearse"),
    )  # fmt: skip
    started = getattr(old.status, "started_at", None)
    try:
        while (clock.now() - t0).total_seconds() < opt.timeout_s:
            await watcher.tick()
            status = watcher.spy.statuses.get(view.spec.name)
            if (
                status is not None
                and getattr(status, "started_at", None) not in (None, started)
                and getattr(status, "progress_first", None) is not None
            ):
                return _Seen(clock.now(), status)
            await clock.sleep(opt.probe_s)
        return None
    finally:
        await watcher.pulls.close()
        await watcher.probe.close()
