"""One total per screen (#41): after a failover move, `status` shows the job's money once, the cost
engine's figure summed over every platform of its chain with its parts labelled, and watch's ledger
(which only counts what it saw at its ticks) named as what it is where it differs, never as a second
"spent" figure."""

from __future__ import annotations

from gpujob.cli.cmd_status import _lines, elsewhere_rows
from gpujob.cost.spend import SpendLine
from gpujob.plan.costs import JobCost, one_total
from gpujob.watch.ledger import Goodput

GOODPUT = Goodput(wall_s=600, gpu_hours=0.1, usd=0.02, steps_done=None, steps_executed=None, steps_redone=0,
                  losses=0, recovery_s=[], step_rate=None, goodput=None)  # fmt: skip


def cost(platform: str, usd: float, state: str) -> JobCost:
    line = SpendLine(platform=platform, kind="pod", id=f"p-{platform}", name="gpujob-bert", state=state, usd=usd,
                     source="estimate")  # fmt: skip
    return JobCost(job="bert", platform=platform, spec_file="job.yaml", spent_usd=usd, resources=[line],
                   burn_usd_per_hour=0.77 if state == "running" else 0.0, estimate=True)  # fmt: skip


def row_for(here: JobCost, others: list[JobCost], watch_usd: float | None) -> dict:
    row = {"job": "bert", "platform": here.platform, "desired": "running", "machine": None}
    row |= {"usd_per_hour": here.burn_usd_per_hour, "cost_usd": here.spent_usd, "cost_source": "estimate"}
    row |= elsewhere_rows(others)
    if watch_usd is not None:
        g = GOODPUT.model_copy(update={"usd": watch_usd})
        row["watch"] = {"goodput": g.model_dump(mode="json"), "parked": None, "finished": False}
    row["money"] = one_total(here, others, watch_usd)
    return row


def test_a_moved_job_shows_one_total_with_its_parts_and_watchs_count_as_what_it_is() -> None:
    here, there = cost("paperspace", 0.75, "running"), cost("runpod", 0.02, "gone")
    text = "\n".join(_lines(row_for(here, [there], watch_usd=0.02)))
    assert "$0.77 spent so far in all ($0.75 on paperspace + $0.02 on runpod)" in text, text
    assert text.count("spent so far") == 1 and "counted by watch" not in text, text
    (goodput,) = [x for x in text.splitlines() if x.startswith("  goodput:")]
    assert goodput.endswith(
        "watch's ledger counted $0.02 at its ticks (it lags: the cost line's figure is the cost engine's, "
        "the one gpujob cost totals)"
    ), goodput
    assert "  also spent: runpod: $0.02 before the job left it" in text, text  # the part, and why


def test_one_platform_and_watch_agreeing_shows_the_figure_once() -> None:
    here = cost("runpod", 0.40, "running")
    text = "\n".join(_lines(row_for(here, [], watch_usd=0.401)))
    assert "$0.40 spent so far (estimate from metered time" in text, text
    assert "in all" not in text and "$0.40" not in text.split("goodput:")[1], text
    nothing = row_for(here, [], None) | {"usd_per_hour": None}  # no cost figure: watch's is the only one
    nothing.pop("usd_per_hour")
    nothing["watch"] = {"goodput": GOODPUT.model_dump(mode="json"), "parked": None, "finished": False}
    assert any(x.endswith("$0.02 counted by watch") for x in _lines(nothing)), _lines(nothing)
