"""A sweep in the PR comment (#41): one sweep headline that leads with the estimated total, each queue's
own part in its block, identical findings once, and a $/mo "if left running" only of what runs on after
the cells are done."""

from __future__ import annotations

from gpujob.plan.model import ActionKind, Finding, SourceRef
from gpujob.plan.sweep_model import CellCost, SweepPlan
from gpujob.render import render_plan
from tests.render.test_render import action, job, plan_of

SRC = SourceRef(file="job.yaml", line=6, column=3, key="machine.image")


def queue(n: int, on_finish: str = "terminate", **kw: object):  # type: ignore[no-untyped-def]
    cells = [CellCost(cell=f"c{n}{i}", est_s=3600, usd=0.69) for i in range(3)]
    sw = SweepPlan(sweep="abl", queue=n, queues=2, cells_total=6, cells=cells, queue_usd=2.07,
                   total_usd=4.14, on_finish=on_finish)  # fmt: skip
    same = [
        Finding(code="image-digest", severity="warning", summary="image x is not pinned", source=SRC),
        Finding(code="RP8", severity="info", summary="the balance lasts 3 days"),
    ]
    return job(f"abl--q{n}", "running", [action(ActionKind.CREATE, f"abl--q{n}")], sweep=sw,
               findings=same, running_usd_per_hour=0.69, after_usd_per_hour=0.69, **kw)  # fmt: skip


def test_the_comment_leads_with_the_sweeps_estimated_total_once() -> None:
    out = render_plan(plan_of(queue(1), queue(2)), "markdown")
    lines = out.splitlines()
    assert lines[2] == (
        "**Estimated total $4.14** · sweep abl: 6 cells on 2 machines · $1.38/h while its machines run · "
        "its machines are terminated once their cells are done"
    ), lines[:5]
    assert out.count("6 cells on 2 machines") == 1
    assert "**Sweep:** queue q1: 3 cells, $2.07: c10 1h00m $0.69" in out
    assert "**Sweep:** queue q2: 3 cells, $2.07: c20 1h00m $0.69" in out
    # nothing is left running after the cells: no "/mo if left running", anywhere
    assert "left running" not in out and '/mo"]' not in out, out
    assert (
        "Billing now $0.00/h, after apply $1.38/h while the runs go, then no machine runs: +$1.38/h." in out
    )


def test_identical_findings_print_once_and_the_later_queue_names_the_first() -> None:
    out = render_plan(plan_of(queue(1), queue(2)), "markdown")
    assert out.count("image x is not pinned") == 1
    assert out.count("the balance lasts 3 days") == 1
    assert "- 2 as for `abl--q1` above (the same findings)" in out


def test_a_machine_kept_after_its_cells_is_the_one_rate_per_month() -> None:
    endless = job("web", "running", [action(ActionKind.CREATE, "web")], running_usd_per_hour=1.0,
                  after_usd_per_hour=1.0)  # fmt: skip
    out = render_plan(plan_of(queue(1, "keep"), queue(2, "keep"), endless), "markdown")
    assert out.splitlines()[2].endswith(
        "its machines keep running once their cells are done ($1.38/h, ≈ $993.60/mo if left running)"
    ), out
    # what runs on after the sweep: its kept machines and the job with no end
    assert "after apply $2.38/h while the runs go, then $2.38/h (≈ $1,713.60/mo if left running)" in out
    plain = render_plan(plan_of(endless), "markdown")  # no sweep: the headline as before
    assert "**Estimated total" not in plain
    assert "Billing now $0.00/h (≈ $0.00/mo if left running), after apply $1.00/h (≈ $720.00/mo" in plain


def test_a_job_with_max_runtime_leads_with_the_most_it_costs_and_a_month_only_if_kept() -> None:
    from gpujob.plan.model import RunEstimate

    def capped(on_finish: str):  # type: ignore[no-untyped-def]
        e = RunEstimate(usd=36.0, hours=12, usd_per_hour=3.0, on_finish=on_finish)
        return job("bert", "running", [action(ActionKind.CREATE, "bert")], running_usd_per_hour=3.0,
                   after_usd_per_hour=3.0, run_estimate=e)  # fmt: skip

    ends = render_plan(plan_of(capped("terminate")), "markdown")
    assert ends.splitlines()[2] == (
        "**Estimated total at most $36.00** · job `bert`: run.max\\_runtime 12 h at $3.00/h (gpujob watch "
        "parks it then) · its machine is terminated when the run ends"
    ), ends
    assert "left running" not in ends and "then no machine runs" in ends
    kept = render_plan(plan_of(capped("keep")), "markdown")
    assert "its machine keeps running after the run ($3.00/h, ≈ $2,160.00/mo if left running)" in kept
