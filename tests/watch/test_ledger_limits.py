"""The per-job ledger (money, GPU time, runs, losses, goodput) and the limits that park a job."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from gpujob.jobfile.model import JobSpec
from gpujob.live import LiveResource
from gpujob.ssh.launcher import PastRun, Progress, RunStatus
from gpujob.watch.ledger import Ledger, load_ledger, read_ledger, save_ledger
from gpujob.watch.limits import limit_reached, projection_warning

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def at(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


def pod(status: str = "running", gpus: int = 1) -> LiveResource:
    return LiveResource(
        platform="runpod", kind="pod", id="p1", name="gpujob-job", status=status, gpu_count=gpus
    )


def prog(p: tuple[int, float] | None) -> Progress | None:
    return Progress(step=p[0], age_s=p[1]) if p else None


def status(started: str, step: int | None, age: float = 0.0, *, first: tuple[int, float] | None = None,
           history: list[PastRun] | None = None, alive: bool = True, code: int | None = None) -> RunStatus:  # fmt: skip
    return RunStatus(
        alive=alive, exit_code=code, started_at=started, last_checkpoint=None, last_checkpoint_age_s=None,
        log_tail="", progress=prog((step, age) if step is not None else None), progress_first=prog(first),
        history=history or [],
    )  # fmt: skip


def past(started: str, first: tuple[int, float], last: tuple[int, float], code: int | None = None) -> PastRun:
    return PastRun(started_at=started, first=prog(first), last=prog(last), exit_code=code)


def test_money_and_gpu_time_are_integrated_at_the_rates_seen_and_restated_after_a_change() -> None:
    led = Ledger(job="job", first_seen=T0)
    led.observe_money(at(0), None, 0.01)  # nothing up yet: only a volume bills
    led.observe_money(at(3600), None, 0.01)
    assert round(led.usd, 6) == 0.01 and led.gpu_seconds == 0
    led.restate(at(3600), 1.01, gpu_billing=True)  # watch created the pod just now
    led.observe_money(at(5400), pod(), 1.01)
    assert round(led.usd, 4) == round(0.01 + 1.01 / 2, 4) and led.gpu_seconds == 1800
    led.observe_money(at(7200), pod("stopped"), 0.02)  # preempted: billed until seen down
    led.observe_money(at(10800), pod("stopped"), 0.02)
    assert led.gpu_seconds == 3600 and round(led.usd, 4) == round(0.01 + 1.01 + 0.02, 4)
    led.observe_money(at(14400), pod(gpus=0), 0.5)  # RP1: up with zero GPUs bills no GPU time
    led.observe_money(at(18000), pod(gpus=0), 0.5)
    assert led.gpu_seconds == 3600


def test_money_so_far_is_the_cost_engines_figure_plus_what_changed_since() -> None:
    led = Ledger(job="job", first_seen=T0)
    led.observe_money(at(0), pod(), 2.0)
    assert led.money(at(1800)) == 1.0  # watch's own integration until the engine answers
    led.observe_money(at(3600), pod(), 2.0)
    led.billed(at(3600), 5.0)  # the platform billed more than watch saw (it ran before watch started)
    led.observe_money(at(5400), pod("stopped"), 0.1)  # preempted: the burn drops at once
    assert led.money(at(5400)) == 6.0 and round(led.money(at(9000)), 4) == 6.1
    assert led.goodput(at(9000)).usd == led.money(at(9000))


def test_first_sight_of_a_running_job_counts_its_current_run() -> None:
    led = Ledger(job="job", first_seen=at(3600))
    up = pod().model_copy(update={"started_at": at(0)})
    led.observe_money(at(3600), up, 2.0)
    assert led.gpu_seconds == 3600 and led.usd == 2.0


def test_runs_steps_losses_and_goodput() -> None:
    led = Ledger(job="job", first_seen=T0)
    led.observe_money(at(0), pod(), 1.0)
    led.observe_run(at(10), status("r1", 100, 0.0, first=(1, 9.0)))  # 100 steps in 9 s, resumed from 0
    led.observe_run(at(20), status("r1", 200, 0.0, first=(1, 19.0)))  # 10 steps/s
    led.observe_run(at(30), status("r1", 280, 1.0, first=(1, 29.0)))  # a checkpoint write in there
    led.observe_money(at(40), pod("stopped"), 0.0)  # preempted at 35 s, after step 340
    led.observe_money(at(45), pod(), 1.0)
    # r2 lived and died between two readings (resumed from 280, reached 300); r3 resumed from 290.
    hist = [past("r1", (1, 49.0), (340, 15.0)), past("r2", (281, 8.0), (300, 6.0))]
    led.observe_run(at(50), status("r3", 330, 0.0, first=(291, 3.0), history=hist))
    hist = [past("r1", (1, 59.0), (340, 25.0)), past("r2", (281, 18.0), (300, 16.0))]
    led.observe_run(at(60), status("r3", 430, 0.0, first=(291, 13.0), history=hist))
    g = led.goodput(at(60))
    assert [s.started_at for s in led.segments] == ["r1", "r2", "r3"]
    assert led.segments[0].last_step == 340  # the launcher's record corrects the last reading (280)
    assert [(x.last_step, x.resumed_from, x.steps_redone, x.recovery_s) for x in led.losses()] == [
        (340, 280, 60, 7.0),  # r1's last step at 35 s, r2's first at 42 s
        (300, 290, 10, 3.0),  # r2's last step at 44 s, r3's first at 47 s
    ]
    assert g.steps_done == 430 and g.steps_redone == 70 and g.losses == 2
    assert g.steps_executed == 340 + (300 - 280) + (430 - 290)
    assert g.step_rate == 10.0  # median of 10, 8.9 and 10: the checkpoint slowed one sample only
    assert g.gpu_hours == 55 / 3600  # 0-40 s (billed until seen down) + 45-60 s
    assert g.goodput is not None and abs(g.goodput - 430 / 550) < 1e-9
    assert "goodput 0.78" in g.line() and "70 redone after 2 loss(es)" in g.line()


def test_a_run_that_exited_0_is_no_loss() -> None:
    led = Ledger(job="job", first_seen=T0)
    led.observe_run(
        at(10), status("r2", 5, 0.0, first=(1, 1.0), history=[past("r1", (1, 9.0), (50, 5.0), 0)])
    )
    assert led.losses() == [] and led.segments[0].exit_code == 0


def test_a_ledger_survives_a_restart(tmp_path: Path) -> None:
    led = load_ledger(tmp_path, "job", T0)
    assert read_ledger(tmp_path, "job") is None
    led.observe_run(at(10), status("r1", 10, 0.0, first=(1, 1.0)))
    led.recovered(at(11), "job.pod.start", ok=True)
    save_ledger(tmp_path, led)
    back = load_ledger(tmp_path, "job", at(99))
    assert back == led and back.first_seen == T0
    (tmp_path / "watch" / "job.json").write_text("{torn")
    assert load_ledger(tmp_path, "job", at(99)).first_seen == at(99)


def spec(**over: object) -> JobSpec:
    data: dict[str, object] = {
        "version": 1, "name": "job", "platform": "runpod", "machine": {"gpu": "A100-80GB"},
        "run": {"command": "x", "max_runtime": "2h"}, "budget": {"max_total_usd": 10.0},
    }  # fmt: skip
    data.update(over)
    return JobSpec.model_validate(data)


def reached(led: Ledger, now: datetime, *, burn: float = 1.0, recovering: bool = False, s: JobSpec | None = None) -> str | None:  # fmt: skip
    return limit_reached(s or spec(), led, now, burn_usd_per_hour=burn, interval_s=30,
                         max_recoveries_per_hour=3, recovering=recovering)  # fmt: skip


def test_max_runtime_is_wall_time_since_the_run_was_first_seen() -> None:
    led = Ledger(job="job", first_seen=T0, run_started_at=at(0))
    assert reached(led, at(7199)) is None
    why = reached(led, at(7200))
    assert why is not None and why.startswith("run.max_runtime 2h reached")


def test_the_budget_is_checked_before_it_is_crossed() -> None:
    led = Ledger(job="job", first_seen=T0, usd=9.0)
    # 2 ticks of 30 s plus 120 s to park, at $18/h, is $0.90: still under $10.
    assert reached(led, at(0), burn=18.0) is None
    why = reached(led, at(0), burn=20.0)  # $1.00 more would reach it
    assert why is not None and "budget.max_total_usd $10.00: $9.00 spent so far at $20.00/h" in why
    assert reached(led, at(0), burn=20.0, s=spec(budget={})) is None


def test_recoveries_per_hour_count_only_when_another_recovery_is_due() -> None:
    led = Ledger(job="job", first_seen=T0)
    for s in (0, 600, 1200):
        led.recovered(at(s), "job.pod.start", ok=s != 600)  # failed attempts count too
    assert reached(led, at(1300)) is None  # nothing to recover now
    why = reached(led, at(1300), recovering=True)
    assert why is not None and why.startswith("3 recoveries in the last hour (the limit is 3)")
    assert reached(led, at(3601), recovering=True) is None  # the first one is more than an hour old


def test_projection_warning_when_the_run_would_cross_the_budget() -> None:
    led = Ledger(job="job", first_seen=T0, usd=2.0, run_started_at=at(0))
    assert projection_warning(spec(), led, at(0), 4.0) is None  # $2 + 2 h × $4 = $10: not over
    text = projection_warning(spec(), led, at(0), 5.0)
    assert text is not None and "reaches $12.00 by run.max_runtime, over budget.max_total_usd $10.00" in text
