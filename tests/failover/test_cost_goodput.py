"""`gpujob cost` of a moved job: one row per platform it holds anything on, its goodput once (watch's
ledger is the job's, across platforms), on the row of the platform it runs on."""

from __future__ import annotations

from datetime import UTC, datetime

from gpujob.plan.costs import CostReport, JobCost, render_cost, with_goodput
from gpujob.watch.ledger import Goodput

NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


def _goodput(value: float) -> Goodput:
    return Goodput(
        wall_s=3600, gpu_hours=0.9, usd=0.5, steps_done=900, steps_executed=1000, steps_redone=100,
        losses=1, recovery_s=[40.0], step_rate=1.0, goodput=value,
    )  # fmt: skip


def _row(job: str, platform: str, spent: float) -> JobCost:
    return JobCost(job=job, platform=platform, spec_file="job.yaml", spent_usd=spent, as_of=NOW)  # type: ignore[arg-type]


def test_a_moved_jobs_goodput_is_printed_once_on_the_row_where_it_runs() -> None:
    report = CostReport(
        generated_at=NOW,
        jobs=[_row("bert", "paperspace", 0.4), _row("bert", "runpod", 0.1), _row("gpt", "runpod", 0.2)],
        spent_usd=0.7,
    )
    out = with_goodput(report, {"bert": _goodput(0.81), "gpt": _goodput(0.5)})
    assert [(j.job, j.platform, j.goodput) for j in out.jobs] == [
        ("bert", "paperspace", 0.81), ("bert", "runpod", None), ("gpt", "runpod", 0.5),
    ]  # fmt: skip
    text = render_cost(out)
    assert text.count("goodput 0.81") == 1 and text.count("goodput 0.50") == 1, text
    # under the row of the platform it runs on, before the other platform's row
    assert text.index("bert [paperspace]") < text.index("goodput 0.81") < text.index("bert [runpod]"), text
    assert '"goodput": 0.81' in render_cost(out, "json")


def test_a_job_without_a_ledger_shows_no_goodput() -> None:
    report = CostReport(generated_at=NOW, jobs=[_row("bert", "runpod", 0.1)])
    out = with_goodput(report, {})
    assert out.jobs[0].goodput is None and "goodput" not in render_cost(out)
