"""Know before, stop in time (issue #39), against the simulator with its billing clock frozen: a job with
run.total_steps plans with a P50 and a P90 of cost and finish; status after some steps shows the spend so
far and the forecast updated; and with budget.max_total_usd set, moving the simulated clock up to the
budget makes the next watch tick park the job, its checkpoint pulled, `gpujob cost` within one
interval's spend of the cap."""

from __future__ import annotations

import json
import re
from pathlib import Path

from gpujob.sim.testing import Sim
from tests.e2e.e2e_support import poll
from tests.e2e.test_money_scenario import RUNPOD_JOB, frozen, make_project

__all__ = ["frozen"]

CAP = 3.0
INTERVAL_S = 1.0
JOB = (
    RUNPOD_JOB.format(state="running", digest="0" * 64).replace(
        '  env: {TOTAL_STEPS: "100000", STEP_SECONDS: "0.2"}',
        '  env: {TOTAL_STEPS: "100000", STEP_SECONDS: "0.05"}\n  total_steps: 30000\n  step_time: 0.2s',
    )
    + f"budget:\n  max_total_usd: {CAP}\n"
)


def test_forecast_in_plan_and_status_and_the_budget_parks_the_job(frozen: Sim, tmp_path: Path) -> None:
    assert "total_steps: 30000" in JOB
    p = make_project(frozen, tmp_path, JOB.lstrip())
    (jp,) = json.loads(p.gj("plan", "--format", "json").stdout)["jobs"]
    f = jp["forecast"]
    assert f["p50_usd"] <= f["p90_usd"] < CAP and f["p50_finish"] <= f["p90_finish"], f
    assert "forecast: P50 $" in p.gj("plan").stdout

    p.gj("apply", "--auto-approve")
    poll("some steps", lambda: ((p.status().get("run") or {}).get("progress_step") or 0) > 20)
    p.sim.advance(600)  # ten simulated minutes on the meter
    status = p.status()
    sf = status["forecast"]
    assert sf["spent_usd"] > 0 and abs(sf["spent_usd"] - status["cost_usd"]) < 1e-4
    assert sf["steps_done"] > 20 and sf["p50_usd"] > sf["spent_usd"]
    assert re.search(r"forecast:  step [0-9,]+ of 30,000, P50 \$", p.gj("status").stdout)

    # up to just under the budget: what one more watch interval bills would cross it
    cost = json.loads(p.gj("cost", "--format", "json").stdout)["jobs"][0]
    rate = cost["burn_usd_per_hour"]
    p.sim.advance((CAP - 0.2 * rate * INTERVAL_S / 3600 - cost["spent_usd"]) / rate * 3600)
    out = p.gj("watch", "--once", "--interval", "1s", check=False).stdout
    assert "budget.max_total_usd $3.00" in out and "parked" in out, out
    assert p.live("pods") == [] or p.live("pods")[0]["status"] == "EXITED"
    assert p.record("pulls/money.json")["files"], "parked without pulling"
    spent = json.loads(p.gj("cost", "--format", "json").stdout)["jobs"][0]["spent_usd"]
    assert spent <= CAP + rate * INTERVAL_S / 3600, (spent, CAP)

    # the project-wide budget counts the month's spend of every job in the state (watch's ledger)
    (p.dir / "gpujob.yaml").write_text("budget: {max_monthly_usd: 2}\n")
    out = p.gj("budget", "--format", "json", check=False)
    report = json.loads(out.stdout)
    assert out.returncode == 1 and report["over"] and report["max_monthly_usd"] == 2.0, report
    (row,) = report["jobs"]
    assert row["job"] == "money" and abs(row["spent_this_month_usd"] - spent) < 0.05, (row, spent)
