"""RP8 without a balance, end to end (issue #42): with the simulator's RunPod GraphQL gone, a stopped
pod holding un-pulled checkpoints on its own disk plans a WARNING naming the deletion clock (`gpujob
plan` as a subprocess), and `gpujob doctor` prints its Auto-Pay line in each state the simulator has."""

from __future__ import annotations

import pytest

from tests.e2e.e2e_support import Project, poll
from tests.e2e.test_traps import ON_VOLUME_DISK, edit


def test_a_stopped_pod_with_unpulled_checkpoints_warns_of_the_deletion_clock(project: Project) -> None:
    p = project
    edit(
        p,
        ON_VOLUME_DISK,
        ('TOTAL_STEPS: "3000"', 'TOTAL_STEPS: "40"'),
        ("on_finish: keep", "on_finish: stop"),
    )
    refused = p.gj("apply", "--auto-approve", check=False)
    assert refused.returncode != 0 and "self-stop-unpulled" in refused.stdout + refused.stderr
    p.gj("apply", "--auto-approve", "--approve", "quickstart.pod.self-stop")
    poll("the pod to stop itself", lambda: p.sim_objects("pods")[0]["status"] == "EXITED", deadline_s=90)
    edit(p, ("state: running", "state: stopped"))
    p.sim.engine.options.runpod_graphql = "gone"
    plan = p.gj("plan", check=False).stdout
    line = next((ln for ln in plan.splitlines() if "[RP8]" in ln and "balance" in ln), "")
    assert line.lstrip().startswith(("! warning [RP8]", "⚠ warning [RP8]")), plan
    assert "no longer reports the balance" in line and "holds un-pulled checkpoints" in line, plan
    assert "about 30 days" in line, plan


@pytest.mark.parametrize(
    ("mode", "outcome", "said"),
    [
        ("live", "OK", "the balance is readable (GraphQL myself)"),
        ("gone", "WARN", "the balance cannot be read either"),
    ],
)
def test_doctor_prints_the_auto_pay_line_in_each_graphql_state(
    project: Project, mode: str, outcome: str, said: str
) -> None:
    p = project
    p.sim.engine.options.runpod_graphql = mode
    out = p.gj("doctor", check=False)
    text = out.stdout + out.stderr
    money = text[text.index("Money (what no API reports):") :]
    line = next((ln for ln in money.splitlines() if "RunPod Auto-Pay (RP8)" in ln), "")
    assert line.split()[0] == outcome and said in line, money
    if outcome == "WARN":
        assert "fix: turn on Auto-Pay in the RunPod console (Billing)" in money, money
