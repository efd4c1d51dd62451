"""Two guards that had no test (issue 42): a spot pod without a checkpoint block is warned of
(spot-no-checkpoint), and nothing is synced or relaunched while the run is alive (U2: never overwrite a
script a process is executing; lifecycle checklist LC3.2). And LC4.3: a run that exits 0 far sooner than
run.max_runtime is asked about."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

from gpujob.apply.runtime.launch import launch
from gpujob.plan.planner import build_plan
from gpujob.plan.run_evidence import fast_finish, status_warnings
from tests.apply.test_gate import world
from tests.plan.plan_helpers import NOW, RUNPOD_JOB, live


def test_nothing_is_synced_or_launched_while_the_run_is_alive(tmp_path: Path) -> None:
    ctx, _prov, ssh = world(tmp_path)  # the fake's run is alive
    (tmp_path / "train.py").write_text("print('v2')\n")
    target = SimpleNamespace(
        spec=ctx.spec, spec_path=ctx.spec_path, provider=ctx.provider, resource=ctx.machine,
        state_dir=ctx.state_dir, moved=False,
    )  # fmt: skip
    said = asyncio.run(launch(target, ctx.ssh, ctx.clock, {"HF_TOKEN": "x"}, lambda _t: None))  # type: ignore[arg-type]
    assert said == "run already alive: not relaunched"
    assert ssh.synced == [] and ssh.launches == [] and ssh.alive
    ssh.alive = False  # ended: now it is synced and launched
    said = asyncio.run(launch(target, ctx.ssh, ctx.clock, {"HF_TOKEN": "x"}, lambda _t: None))  # type: ignore[arg-type]
    assert said.startswith("run launched on") and len(ssh.synced) == 1 and len(ssh.launches) == 1


def test_a_spot_pod_without_a_checkpoint_block_is_warned_of(tmp_path: Path) -> None:
    from dataclasses import replace

    from gpujob.spec.load import load_specs
    from tests.owners import PROJECT

    body = RUNPOD_JOB.split("checkpoint:")[0] + "run:" + RUNPOD_JOB.split("run:", 1)[1]
    body = body.replace("machine:\n", "machine:\n  spot: true\n", 1)
    assert "checkpoint:" not in body and "spot: true" in body, body
    path = tmp_path / "job.yaml"
    path.write_text(body)
    loaded = replace(load_specs([path])[0], project=PROJECT)
    plan = build_plan([loaded], live(), now=NOW, env={})
    (f,) = [f for f in plan.all_findings() if f.code == "spot-no-checkpoint"]
    assert f.severity == "warning" and "a preemption restarts training from zero" in f.summary
    assert f.source is not None and f.source.key == "machine.spot" and "checkpoint:" in f.fix
    on_demand = body.replace("spot: true", "spot: false")
    path.write_text(on_demand)
    loaded = replace(load_specs([path])[0], project=PROJECT)
    assert not [
        f
        for f in build_plan([loaded], live(), now=NOW, env={}).all_findings()
        if f.code == "spot-no-checkpoint"
    ]


def test_a_run_that_ends_far_sooner_than_expected_is_questioned(tmp_path: Path) -> None:
    from tests.apply.fakes import make_spec

    spec = make_spec(run={"command": "python t.py", "max_runtime": "10h"})
    w = fast_finish(spec, exit_code=0, started_at="2026-12-07T00:00:00Z", finished_at="2026-12-07T00:20:00Z")
    assert (
        w is not None
        and w.code == "fast-finish"
        and "after 20 min, under a tenth of run.max_runtime (10 h)" in w.summary
    )
    assert (
        fast_finish(spec, exit_code=0, started_at="2026-12-07T00:00:00Z", finished_at="2026-12-07T02:00:00Z")
        is None
    )
    assert (
        fast_finish(spec, exit_code=1, started_at="2026-12-07T00:00:00Z", finished_at="2026-12-07T00:01:00Z")
        is None
    )
    status = SimpleNamespace(
        alive=False, exit_code=0, started_at="2026-12-07T00:00:00Z", finished_at="2026-12-07T00:05:00Z"
    )
    assert [w["code"] for w in status_warnings(spec, status, None, NOW)] == ["fast-finish"]
