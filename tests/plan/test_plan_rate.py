"""One running rate per plan (issue #37): gpujob.plan.rate sums what the plan leaves billing per hour over
every job, queue and platform of a job file; budget.max_hourly_usd is judged on that sum, naming the
cap, the sum and its largest parts; the choosers (a failover move, a sweep's queue count) never propose
what the check would refuse; and apply's refusal prints the error findings above itself."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpujob import naming
from gpujob.cost.model import Billing, MeterLine
from gpujob.live import LiveResource, LiveState
from gpujob.plan.model import Action, ActionKind, JobPlan
from gpujob.plan.planner import build_plan
from gpujob.spec.load import load_spec, load_specs
from tests.failover import test_choice as fc
from tests.failover.jobs import job_text
from tests.sweep.test_sweep_unit import JOB as SWEEP

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _jp(job: str, platform: str, running: float, kept: float = 0.0) -> JobPlan:
    actions = []
    if kept:
        line = MeterLine(what="network volume 20 GB", usd_per_hour=kept, usd_per_month=kept * 730, source="t")
        actions = [
            Action(id=f"{job}.move", job=job, platform="paperspace", kind=ActionKind.MOVE, resource_kind="job",
                   resource_name=job, billing=Billing(keeps=[line]))
        ]  # fmt: skip
    return JobPlan(job=job, platform=platform, spec_file="j.yaml", desired_state="running",  # type: ignore[arg-type]
                   running_usd_per_hour=running + kept, actions=actions)  # fmt: skip


def test_the_running_rate_sums_every_job_and_what_a_move_keeps_where_it_was() -> None:
    from gpujob.plan.rate import over_cap, running_rate

    rate = running_rate(
        [_jp("abl--q1", "runpod", 0.69), _jp("abl--q2", "runpod", 0.69), _jp("bert", "runpod", 0.5, 0.25)]
    )
    assert rate.usd_per_hour == pytest.approx(0.69 * 2 + 0.75)
    assert [(p.job, p.platform, p.what) for p in rate.largest(4)] == [
        ("abl--q1", "runpod", "runs"), ("abl--q2", "runpod", "runs"), ("bert", "paperspace", "runs"),
        ("bert", "runpod", "keeps"),
    ]  # fmt: skip
    assert rate.parts_text(2) == "abl--q1 runs on runpod $0.69/h, abl--q2 runs on runpod $0.69/h and 2 more"
    assert over_cap(rate, 2.0) and not over_cap(rate, 2.13) and not over_cap(rate, None)
    absent = _jp("gone", "runpod", 3.0).model_copy(update={"desired_state": "absent"})
    assert running_rate([absent]).usd_per_hour == 0 and running_rate([]).parts == ()


def _sweep(tmp_path: Path, cap: float, extra: str = "") -> list:
    text = SWEEP.replace("machines: 2", "machines: 3" + extra) + f"budget: {{max_hourly_usd: {cap}}}\n"
    (tmp_path / "job.yaml").write_text(text)
    return [dataclasses.replace(ls, project="p1") for ls in load_specs([tmp_path / "job.yaml"])]


def _errors(plan) -> list[str]:  # type: ignore[no-untyped-def]
    return [f.summary for f in plan.all_findings() if f.severity == "error"]


def test_a_sweep_whose_queues_sum_over_the_hourly_cap_is_an_error_naming_the_sum_and_its_parts(
    tmp_path: Path,
) -> None:
    live = LiveState(read_at=NOW, resources=[])
    loaded = _sweep(tmp_path, 1.0)
    plan = build_plan(loaded, live, now=NOW, env={})
    one = plan.jobs[0].running_usd_per_hour
    assert len(plan.jobs) == 3 and one < 1.0 < 3 * one  # each queue is under the cap; their sum is not
    (error,) = [f for f in plan.all_findings() if f.severity == "error"]
    total = sum(j.running_usd_per_hour for j in plan.jobs)
    assert error.code == "budget" and error.job == "abl--q1", error
    assert error.summary.startswith(f"running rate ${total:.2f}/h exceeds budget.max_hourly_usd $1.00/h"), (
        error
    )
    assert "the sum of 3 parts; largest: abl--q1 runs on runpod $" in error.summary, error
    assert error.source is not None and error.source.key == "budget.max_hourly_usd"
    from gpujob.render.summary import totals

    assert totals(plan).running_per_hour == pytest.approx(total, abs=1e-6)  # the line the plan prints
    clean = build_plan(_sweep(tmp_path, 1.5), live, now=NOW, env={})
    assert _errors(clean) == [] and len(clean.jobs) == 3


def test_a_sweep_runs_fewer_queues_under_the_cap_when_min_machines_allows_it(tmp_path: Path) -> None:
    from gpujob.sweep.fit import fit_queues

    live = LiveState(read_at=NOW, resources=[])
    loaded = fit_queues(_sweep(tmp_path, 1.0, "\n  min_machines: 1"), live, now=NOW, env={})
    assert [ls.spec.name for ls in loaded] == ["abl--q1", "abl--q2"]
    assert sorted(c.name for ls in loaded for c in ls.sweep.cells) == sorted(
        c.name for c in loaded[0].sweep.all_cells
    )
    plan = build_plan(loaded, live, now=NOW, env={})
    assert _errors(plan) == []
    (why,) = [f for f in plan.jobs[0].findings if f.code == "budget" and f.severity == "info"]
    assert why.summary.startswith("sweep abl runs 2 queue(s), not 3: 3 would bill $1.03/h, over budget"), why
    assert "min_machines: 1" in why.summary
    # a floor it cannot go under: the queues stay, and the plan is the error
    floor = fit_queues(_sweep(tmp_path, 0.5, "\n  min_machines: 2"), live, now=NOW, env={})
    assert len(floor) == 3 and _errors(build_plan(floor, live, now=NOW, env={}))
    # under the cap, or without min_machines, the file's count stands
    assert len(fit_queues(_sweep(tmp_path, 1.5, "\n  min_machines: 1"), live, now=NOW, env={})) == 3
    assert len(fit_queues(_sweep(tmp_path, 1.0), live, now=NOW, env={})) == 3


def _fallback(tmp_path: Path, cap: float):  # type: ignore[no-untyped-def]
    text = job_text().replace("max_hourly_usd: 1.0", f"max_hourly_usd: {cap}")
    assert f"max_hourly_usd: {cap}" in text
    (tmp_path / "job.yaml").write_text(text)
    return dataclasses.replace(load_spec(tmp_path / "job.yaml"), project="testproj")


def test_a_failover_the_whole_move_would_put_over_the_cap_plans_no_move_and_says_why(tmp_path: Path) -> None:
    """The A4000 offer ($0.76/h) is under a $0.765/h cap; with its block storage and IP the move is not."""
    live = LiveState(read_at=NOW, resources=[fc._pod("stopped")], quotes=[fc._out(g) for g in fc.RP_GPUS])
    jp = build_plan([_fallback(tmp_path, 0.765)], live, now=NOW, env={}).jobs[0]
    assert ActionKind.MOVE not in [a.kind for a in jp.actions]
    (why,) = [f for f in jp.findings if f.code == "failover"]
    assert "no move: moved to paperspace (fallback[0]) it would bill $0.77/h" in why.summary, why
    assert why.summary.endswith(", over budget.max_hourly_usd $0.77/h"), why  # $0.765, shown in cents
    assert "budget.max_hourly_usd" in why.fix
    moved = build_plan([_fallback(tmp_path, 0.77)], live, now=NOW, env={})
    assert [a.kind for a in moved.jobs[0].actions] == [ActionKind.MOVE] and not moved.blocked


def test_a_move_that_keeps_storage_billing_where_it_was_counts_it_against_the_cap(tmp_path: Path) -> None:
    volume = LiveResource(platform="runpod", kind="network_volume", id="v1", status="available", volume_gb=2000,
                          name=naming.volume_name("bert", "ckpts", "testproj"), region="EU-RO-1")  # fmt: skip
    live = LiveState(
        read_at=NOW, resources=[fc._pod("stopped"), volume], quotes=[fc._out(g) for g in fc.RP_GPUS]
    )
    from gpujob.plan.rate import running_rate

    big = build_plan([_fallback(tmp_path, 5.0)], live, now=NOW, env={}).jobs[0]
    (move,) = big.actions
    kept = sum(m.usd_per_hour for m in move.billing.keeps)
    assert kept > 0.05 and len(running_rate([big]).parts) == 2
    cap = round(big.running_usd_per_hour - kept / 2, 4)  # the plan there fits; with what stays, it does not
    held = build_plan([_fallback(tmp_path, cap)], live, now=NOW, env={}).jobs[0]
    assert ActionKind.MOVE not in [a.kind for a in held.actions]
    (why,) = [f for f in held.findings if f.code == "failover"]
    assert "bert keeps on runpod $" in why.summary, why


def test_apply_refusing_a_blocked_plan_prints_its_error_findings_above_the_refusal(tmp_path: Path) -> None:
    from gpujob.apply.applier import apply_plan
    from gpujob.errors import PlanBlockedError
    from gpujob.render import render_plan

    loaded = _sweep(tmp_path, 1.0)
    plan = build_plan(loaded, LiveState(read_at=NOW, resources=[]), now=NOW, env={})
    with pytest.raises(PlanBlockedError) as err:
        asyncio.run(apply_plan(plan, loaded, {}, approvals=set(), auto_approve=True))
    shown = err.value.render()
    assert shown.index("[budget] running rate") < shown.index(
        "Error: the plan has 1 error finding(s) (above)"
    )
    printed = render_plan(plan, "text")
    for line in err.value.findings:
        if "✗ error" in line:
            assert line.strip() in printed  # in the plan's own words
    assert "[budget] running rate" in str(err.value)  # what watch and a move report of it too
