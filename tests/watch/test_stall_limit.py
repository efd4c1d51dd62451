"""run.stall_after as watch judges it (gpujob.watch.limits.stall_reason): a new step, checkpoint or log
line (or a new run) is a sign of life; none for stall_after while the run is alive and billing parks it."""

from __future__ import annotations

from gpujob.jobfile.model import JobSpec
from gpujob.watch.ledger import Ledger
from gpujob.watch.limits import stall_reason
from tests.watch.test_ledger_limits import T0, at, pod, status


def spec(stall: str | None = "30m") -> JobSpec:
    run: dict = {"command": "python train.py"}
    if stall:
        run["stall_after"] = stall
    return JobSpec.model_validate(
        {"version": 1, "name": "job", "platform": "runpod", "machine": {"gpu": "A100-80GB"}, "run": run}
    )


def test_no_sign_of_life_for_stall_after_parks_with_the_last_step_the_span_and_the_cost() -> None:
    led = Ledger(job="job", first_seen=T0)
    led.observe_money(at(0), pod(), 2.0)
    led.observe_run(at(0), status("s1", 100))
    led.observe_money(at(1700), pod(), 2.0)
    led.observe_run(at(1700), status("s1", 100, age=1700))  # the same step: no sign of life
    assert stall_reason(spec(), led, at(1700), alive=True, billing=True) is None
    led.observe_money(at(1800), pod(), 2.0)
    why = stall_reason(spec(), led, at(1800), alive=True, billing=True)
    assert why is not None
    assert "run.stall_after 30m" in why and "for 30m" in why and "(last step 100)" in why
    assert "$1.00 billed while it stalled" in why


def test_a_new_step_a_new_log_line_or_no_billing_is_no_stall() -> None:
    led = Ledger(job="job", first_seen=T0)
    led.observe_run(at(0), status("s1", 100))
    led.observe_run(at(1000), status("s1", 101))
    assert stall_reason(spec(), led, at(2700), alive=True, billing=True) is None
    noisy = status("s1", 101).model_copy(update={"log_tail": "loss 0.1"})
    led.observe_run(at(2000), noisy)
    assert stall_reason(spec(), led, at(3700), alive=True, billing=True) is None
    assert stall_reason(spec(), led, at(9000), alive=True, billing=False) is None  # stopped: not billing
    assert stall_reason(spec(), led, at(9000), alive=False, billing=True) is None  # ended: not a stall
    assert stall_reason(spec(None), led, at(9000), alive=True, billing=True) is None


def _gpu(st: object, util: int | None) -> object:
    return st.model_copy(update={"gpu_util": util})  # type: ignore[attr-defined]


def test_a_gpu_at_zero_with_no_new_step_for_stall_after_parks_though_the_run_logs() -> None:
    led = Ledger(job="job", first_seen=T0)
    led.observe_money(at(0), pod(), 2.0)
    led.observe_run(at(0), _gpu(status("s1", 100), 0))
    for t in (600, 1200, 1799):  # a new log line every tick, the step stays, the GPU reads 0 %
        noisy = _gpu(status("s1", 100).model_copy(update={"log_tail": f"waiting {t}"}), 0)
        led.observe_money(at(t), pod(), 2.0)
        led.observe_run(at(t), noisy)
    assert stall_reason(spec(), led, at(1799), alive=True, billing=True) is None
    led.observe_money(at(1800), pod(), 2.0)
    why = stall_reason(spec(), led, at(1800), alive=True, billing=True)
    assert why is not None and why.startswith(
        "run.stall_after 30m: GPU 0 % for 30m and no new step or checkpoint"
    )
    assert "(last step 100)" in why and "$1.00 billed while it stalled" in why
    for util in (37, None):  # busy, or no nvidia-smi on the machine: a run that logs is no stall
        busy = Ledger(job="job", first_seen=T0)
        for t in (0, 600, 1200, 1800, 2400):
            busy.observe_run(at(t), _gpu(status("s1", 100).model_copy(update={"log_tail": f"w {t}"}), util))
        assert stall_reason(spec(), busy, at(2400), alive=True, billing=True) is None, util
