"""`gpujob status` asks the planner's two checkpoint questions of the RunStatus it reads over SSH."""

from __future__ import annotations

from gpujob.cli.cmd_status import _text
from gpujob.jobfile.model import JobSpec
from gpujob.plan.run_evidence import status_warnings
from gpujob.ssh.launcher import PastRun, Progress, RunStatus
from tests.plan.plan_helpers import NOW

SPEC = JobSpec.model_validate(
    {
        "version": 1,
        "name": "job",
        "platform": "runpod",
        "machine": {"gpu": ["A6000"]},
        "checkpoint": {"dir": "/workspace/ckpt", "interval": "10m"},
        "run": {"command": "python train.py"},
    }
)


def status(**kw: object) -> RunStatus:
    base: dict[str, object] = {
        "alive": True,
        "exit_code": None,
        "started_at": "2026-11-29T10:00:00Z",  # two hours before NOW
        "last_checkpoint": "step_000300.pt",
        "last_checkpoint_age_s": 30.0,
        "log_tail": "",
    }
    base.update(kw)
    return RunStatus(**base)  # type: ignore[arg-type]


def test_status_warns_on_a_stale_checkpoint_of_a_live_run() -> None:
    (w,) = status_warnings(SPEC, status(last_checkpoint_age_s=25 * 60), None, NOW)
    assert w["code"] == "checkpoint-stale" and "25m old while the run is alive" in w["summary"]
    assert (
        status_warnings(SPEC, status(last_checkpoint_age_s=25 * 60, alive=False, exit_code=0), None, NOW)
        == []
    )


def test_status_warns_when_the_run_started_from_zero_after_an_earlier_run() -> None:
    earlier = PastRun(
        started_at="2026-11-29T08:00:00Z",
        first=Progress(step=1, age_s=4 * 3600),
        last=Progress(step=700, age_s=2.5 * 3600),
        exit_code=None,
    )
    st = status(progress_first=Progress(step=1, age_s=7000), history=[earlier])
    (w,) = status_warnings(SPEC, st, None, NOW)
    assert w["code"] == "resume-from-zero" and "reached step 700" in w["summary"]
    resumed = status(progress_first=Progress(step=701, age_s=7000), history=[earlier])
    assert status_warnings(SPEC, resumed, None, NOW) == []


def test_status_text_prints_each_warning_with_its_fix() -> None:
    (w,) = status_warnings(SPEC, status(last_checkpoint_age_s=3600), None, NOW)
    row = {
        "job": "job",
        "platform": "runpod",
        "desired": "running",
        "machine": None,
        "run": {"state": "running", "exit_code": None, "last_checkpoint": "step_000300.pt",
                "last_checkpoint_age_s": 3600.0, "warnings": [w]},
    }  # fmt: skip
    text = _text(row)
    assert f"  warning:   [checkpoint-stale] {w['summary']}" in text
    assert f"             fix: {w['fix']}" in text
