"""budget.max_hourly_usd over a whole sweep (issue #37), in the simulator: three queue pods whose sum is
over the cap plan as an error naming the sum, and apply starts none of them; with sweep.min_machines
the sweep runs the most queues that fit, and apply starts exactly those; under the cap, all three."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpujob.sim.testing import Sim
from tests.e2e.sweep_support import gj, pods, sweep_project
from tests.e2e.test_sweep import JOB as SWEEP

pytestmark = [pytest.mark.sim, pytest.mark.ssh]

JOB = SWEEP.replace("machines: 2", "machines: 3")


def _running(out: str) -> float:
    found = re.search(r"Running: \$(\d+\.\d\d)/h", out)
    assert found, out
    return float(found.group(1))


def _creates(out: str) -> int:
    return len(re.findall(r"\(abl\.q\d\.pod\.create\)", out))


def _queue_pods(sim: Sim) -> list[str]:
    return sorted(p["name"] for p in pods(sim) if "--q" in p["name"])


def test_a_sweep_over_the_hourly_cap_starts_nothing_and_fewer_queues_fit_when_the_file_allows(
    sim: Sim, tmp_path: Path
) -> None:
    d, env = sweep_project(sim, tmp_path, JOB)
    free = gj(d, env, "plan")
    assert free.returncode in (0, 2) and _creates(free.stdout) == 3, free.stdout + free.stderr
    total = _running(free.stdout)
    cap = round(total * 0.8, 2)  # each queue (a third) fits, and two do; three do not
    job = d / "job.yaml"

    job.write_text(JOB + f"budget: {{max_hourly_usd: {cap}}}\n")
    over = gj(d, env, "plan")
    flat = " ".join(over.stdout.split())
    assert over.returncode == 1, over.stdout + over.stderr
    assert (
        f"✗ error [budget] running rate ${total:.2f}/h exceeds budget.max_hourly_usd ${cap:.2f}/h" in flat
    ), flat
    assert "(the sum of 3 parts; largest: abl--q1 runs on runpod $" in flat, flat
    refused = gj(d, env, "apply", "--auto-approve")
    said = refused.stdout + refused.stderr
    assert refused.returncode == 1 and "nothing was applied" in said, said
    assert said.index("[budget] running rate") < said.index("nothing was applied"), said
    assert _queue_pods(sim) == []

    job.write_text(
        JOB.replace("machines: 3", "machines: 3\n  min_machines: 2") + f"budget: {{max_hourly_usd: {cap}}}\n"
    )
    fitted = gj(d, env, "plan")
    flat = " ".join(fitted.stdout.split())
    assert fitted.returncode in (0, 2) and "✗ error" not in fitted.stdout, fitted.stdout + fitted.stderr
    assert _creates(fitted.stdout) == 2 and "sweep abl: 6 cells on 2 machines" in flat, flat
    assert f"i info [budget] sweep abl runs 2 queue(s), not 3: 3 would bill ${total:.2f}/h" in flat, flat
    assert _running(fitted.stdout) <= cap
    done = gj(d, env, "apply", "--auto-approve", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _queue_pods(sim) == sorted(n for n in _queue_pods(sim) if "--q1--" in n or "--q2--" in n)
    assert len(_queue_pods(sim)) == 2, _queue_pods(sim)


def test_a_sweep_under_the_hourly_cap_plans_clean(sim: Sim, tmp_path: Path) -> None:
    d, env = sweep_project(sim, tmp_path, JOB)
    total = _running(gj(d, env, "plan").stdout)
    (d / "job.yaml").write_text(JOB + f"budget: {{max_hourly_usd: {round(total * 1.05 + 0.01, 2)}}}\n")
    clean = gj(d, env, "plan")
    assert clean.returncode in (0, 2) and "✗ error" not in clean.stdout, clean.stdout + clean.stderr
    assert _creates(clean.stdout) == 3
