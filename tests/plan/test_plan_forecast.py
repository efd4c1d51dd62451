"""The plan's forecast (run.total_steps) and budget.max_total_usd judged on it: a start whose P50 crosses the
budget is refused, one whose P90 crosses it is warned about; text, markdown and JSON carry it."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime

from gpujob.cost.history import History
from gpujob.plan.planner import build_plan
from gpujob.render import render_plan
from tests.plan.plan_helpers import NOW, RUNPOD_JOB, live

Write = Callable[..., object]

# 36,000 steps at 1 s each on an A100: 10 h of work, spot, 30 min checkpoints
JOB = RUNPOD_JOB.replace("gpu: A100-80GB", "gpu: A100-80GB\n  spot: true").replace(
    "run:\n  command: python train.py",
    "run:\n  command: python train.py\n  total_steps: 36000\n  step_time: 1s",
)


def _budget(job: str, cap: float) -> str:
    return job + f"budget:\n  max_total_usd: {cap}\n"


def test_a_job_with_total_steps_plans_a_p50_and_a_p90(write_job: Write) -> None:
    plan = build_plan([write_job(JOB)], live(), now=NOW, env={})
    f = plan.jobs[0].forecast
    assert f is not None
    assert 10 <= f.p50_hours <= f.p90_hours < 13
    assert f.p50_usd <= f.p90_usd and f.p50_finish <= f.p90_finish
    assert f.estimate  # the interruption rate and the recovery are the profile table's
    names = [i.name for i in f.inputs]
    assert names[:2] == ["steps left", "step time"] and "interruptions" in names and "recovery" in names
    text = render_plan(plan, "text")
    assert "forecast: P50 $" in text and "(estimate)" in text and "      interruptions 0.1/h" in text
    md = render_plan(plan, "markdown")
    assert "**Forecast:** P50" in md and "| recovery |" in md
    data = json.loads(render_plan(plan, "json"))["jobs"][0]["forecast"]
    assert data["p50_usd"] == f.p50_usd and data["inputs"][0]["name"] == "steps left"


def test_no_total_steps_no_forecast_and_no_key_in_the_json(write_job: Write) -> None:
    plan = build_plan([write_job(RUNPOD_JOB)], live(), now=NOW, env={})
    assert plan.jobs[0].forecast is None
    assert "forecast" not in json.loads(render_plan(plan, "json"))["jobs"][0]


def test_a_start_whose_p50_crosses_the_budget_is_refused(write_job: Write) -> None:
    plan = build_plan([write_job(JOB)], live(), now=NOW, env={})
    f = plan.jobs[0].forecast
    assert f is not None
    refused = build_plan([write_job(_budget(JOB, round(f.p50_usd * 0.9, 2)))], live(), now=NOW, env={})
    errors = [x for x in refused.jobs[0].findings if x.code == "budget" and x.severity == "error"]
    assert len(errors) == 1 and "P50" in errors[0].summary and "refused" in errors[0].summary
    assert errors[0].source is not None and errors[0].source.key == "budget.max_total_usd"
    assert refused.blocked


def test_a_p90_over_the_budget_warns(write_job: Write) -> None:
    plan = build_plan([write_job(JOB)], live(), now=NOW, env={})
    f = plan.jobs[0].forecast
    assert f is not None and f.p90_usd > f.p50_usd
    warned = build_plan(
        [write_job(_budget(JOB, round((f.p50_usd + f.p90_usd) / 2, 4)))], live(), now=NOW, env={}
    )
    found = [x for x in warned.jobs[0].findings if x.code == "budget"]
    assert [x.severity for x in found] == ["warning"] and "P90" in found[0].summary
    assert not warned.blocked


def test_history_replaces_the_estimates_and_adds_the_spend(write_job: Write) -> None:
    at = datetime(2026, 11, 29, 9, tzinfo=UTC)
    history = History.model_validate(
        {
            "usd": 4.0, "gpu_seconds": 7200.0, "rates": [2.0, 2.0, 2.0],
            "segments": [
                {"started_at": "a", "first_step": 1, "first_at": at, "last_step": 1000,
                 "last_at": at.replace(hour=10), "exit_code": None},
                {"started_at": "b", "first_step": 901, "first_at": at.replace(hour=10, minute=4),
                 "last_step": 6000, "last_at": at.replace(hour=11)},
            ],
        }
    )  # fmt: skip
    plan = build_plan([write_job(JOB)], live(), now=NOW, env={}, histories={"job": history})
    f = plan.jobs[0].forecast
    assert f is not None
    assert f.spent_usd == 4.0 and f.steps_done == 6000
    assert f.p50_hours < 5  # 30,000 steps at 2/s: 4.2 h of work
    by = {i.name: i for i in f.inputs}
    assert "this job" in by["interruptions"].source and not by["interruptions"].estimate
    assert by["recovery"].value == "240 s" and not by["recovery"].estimate
    assert by["step time"].value == "0.5 s"


def _deadline(hours: float) -> str:
    from datetime import timedelta

    at = (NOW + timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")
    # spot: prefer allows both; one interruption an hour (checkpoint.mtbf) slows spot down
    job = JOB.replace("spot: true", "spot: prefer").replace("interval: 30m", "interval: 30m\n  mtbf: 1h")
    return job.replace("  step_time: 1s", f"  step_time: 1s\n  deadline: {at}")


def test_a_deadline_only_on_demand_meets_plans_on_demand_and_says_why(write_job: Write) -> None:
    plan = build_plan([write_job(_deadline(12))], live(), now=NOW, env={})
    (chosen,) = [f for f in plan.jobs[0].findings if f.code == "deadline"]
    assert chosen.severity == "info" and "A100-80GB on-demand chosen" in chosen.summary
    assert "A100-80GB spot: P90 finish" in chosen.detail and "past the deadline" in chosen.detail
    create = next(a for a in plan.jobs[0].actions if a.id == "job.pod.create")
    assert any(
        "on-demand" in m.what or "spot" not in m.what for m in create.billing.starts if "GPU" in m.what
    )
    f = plan.jobs[0].forecast
    assert f is not None and f.p90_hours <= 12
    assert {i.name: i.value for i in f.inputs}["interruptions"] == "0/h"


def test_a_deadline_nothing_meets_is_an_error_naming_the_best_p90(write_job: Write) -> None:
    plan = build_plan([write_job(_deadline(9))], live(), now=NOW, env={})
    (err,) = [f for f in plan.jobs[0].findings if f.code == "deadline"]
    assert (
        err.severity == "error"
        and "the best is A100-80GB on-demand, P90 finish 2026-11-29 22:00 UTC" in err.summary
    )
    assert plan.blocked


def test_a_plan_crossing_the_projects_monthly_budget_is_refused(write_job: Write, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from gpujob.cost.monthly import Monthly, month_start, read_cap

    plan = build_plan([write_job(JOB)], live(), now=NOW, env={})
    f = plan.jobs[0].forecast
    assert f is not None
    spent = {"other": 50.0, "job": 0.0}
    ok = Monthly(cap=50.0 + f.p50_usd + 1, source="gpujob.yaml", month_start=month_start(NOW), spent=spent)
    assert not build_plan([write_job(JOB)], live(), now=NOW, env={}, monthly=ok).blocked
    tight = Monthly(cap=50.0 + f.p50_usd - 1, source="gpujob.yaml", month_start=month_start(NOW), spent=spent)
    refused = build_plan([write_job(JOB)], live(), now=NOW, env={}, monthly=tight)
    (err,) = [x for x in refused.jobs[0].findings if x.code == "budget" and x.severity == "error"]
    assert "the month's spend $50.00" in err.summary and "budget.max_monthly_usd" in err.summary
    assert refused.blocked
    (tmp_path / "gpujob.yaml").write_text("budget: {max_monthly_usd: 500}\n")
    assert read_cap(tmp_path) == (500.0, str(tmp_path / "gpujob.yaml"))


def test_the_months_spend_is_the_ledgers_figure_less_its_trail_before_the_month() -> None:
    h = History.model_validate(
        {"usd": 30.0, "usd_trail": [{"at": "2026-10-30T00:00:00Z", "value": 10.0},
                                    {"at": "2026-11-02T00:00:00Z", "value": 12.0}]}
    )  # fmt: skip
    assert h.spent_since(datetime(2026, 11, 1, tzinfo=UTC)) == 20.0
    assert h.spent_since(datetime(2026, 10, 1, tzinfo=UTC)) == 30.0
