"""The project's monthly budget counts a job never watched (issue #39): a job applied and run in the
simulator, with no `gpujob watch` ever keeping a ledger of it, shows what the platform bills for it in
`gpujob budget` (its source named), and a plan whose start would cross budget.max_monthly_usd because
of that spend is refused."""

from __future__ import annotations

import json
from pathlib import Path

from gpujob.sim.testing import Sim
from tests.e2e.test_money_scenario import RUNPOD_JOB, frozen, make_project

__all__ = ["frozen"]

SECOND = (
    RUNPOD_JOB.format(state="running", digest="0" * 64)
    .replace("name: money", "name: second")
    .replace("{name: ckpts, size_gb: 100}", "{name: ckpts2, size_gb: 100}")
    .replace('  env: {TOTAL_STEPS: "100000", STEP_SECONDS: "0.2"}',
             '  env: {TOTAL_STEPS: "100000", STEP_SECONDS: "0.2"}\n  total_steps: 30000\n  step_time: 0.2s')
)  # fmt: skip


def test_a_job_never_watched_counts_in_the_months_budget(frozen: Sim, tmp_path: Path) -> None:
    p = make_project(frozen, tmp_path, RUNPOD_JOB.format(state="running", digest="0" * 64).lstrip())
    p.gj("apply", "--auto-approve")
    p.sim.advance(4 * 3600)  # four simulated hours on the meter, nobody watching
    spent = json.loads(p.gj("cost", "--format", "json").stdout)["jobs"][0]["spent_usd"]
    assert spent > 0.5, spent
    assert p.store().read("watch/money.json") is None, "the job was watched: the test proves nothing"

    (p.dir / "second.yaml").write_text(SECOND.lstrip())
    (jp,) = json.loads(p.gj("plan", "second.yaml", "--format", "json").stdout)["jobs"]
    p50 = jp["forecast"]["p50_usd"]
    # room for the second job's P50 alone, not for it on top of what the first has spent
    cap = round(p50 + spent / 2, 2)
    (p.dir / "gpujob.yaml").write_text(f"budget: {{max_monthly_usd: {cap}}}\n")

    out = p.gj("budget", "job.yaml", "--format", "json", check=False)
    report = json.loads(out.stdout)
    (row,) = [r for r in report["jobs"] if r["job"] == "money"]
    assert abs(row["spent_this_month_usd"] - spent) < 0.01, (row, spent)
    assert "gpujob cost (runpod billing)" in row["spent_source"], row
    assert "never watched" in row["spent_source"], row
    text = p.gj("budget", "job.yaml", check=False).stdout
    assert f"money: spent ${spent:,.2f} (gpujob cost (runpod billing)" in text, text

    out = p.gj("plan", "job.yaml", "second.yaml", "--format", "json", check=False)
    jobs = {j["job"]: j for j in json.loads(out.stdout)["jobs"]}
    errors = [f for f in jobs["second"]["findings"] if f["code"] == "budget" and f["severity"] == "error"]
    assert errors and "budget.max_monthly_usd" in errors[0]["summary"], jobs["second"]["findings"]
    assert f"the month's spend ${spent:,.2f}" in errors[0]["summary"], errors[0]["summary"]
