"""The --help of plan, apply, destroy and watch says what failover does there, with an example."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _help(command: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "gpujob", command, "--help"], capture_output=True, text=True, check=True
    ).stdout
    return " ".join(out.split())  # click rewraps; compare words


def test_each_command_explains_its_failover_part_with_an_example() -> None:
    watch = _help("watch")
    assert "fallback: entries" in watch and "failover: says how" in watch, watch
    assert "gpujob watch --approve bert.move" in watch.split("Examples:")[1], watch
    apply = _help("apply")
    assert "(<job>.move) destroys nothing: it is an ordinary action" in apply, apply
    assert "gpujob apply --release-left --approve bert.left." in apply.split("Examples:")[1], apply
    plan = _help("plan")
    assert "gpujob plan --release-left" in plan.split("Examples:")[1], plan
    destroy = _help("destroy")
    assert "--approve bert.left.runpod." in destroy.split("Examples:")[1], destroy
    assert "⇄ move to another platform" in _help("plan")


def test_a_plan_with_a_move_has_its_symbol_in_the_legend(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import dataclasses
    import os
    from datetime import UTC, datetime

    from gpujob.live import LiveResource, LiveState
    from gpujob.plan.planner import build_plan
    from gpujob.render import render_plan
    from gpujob.spec.load import load_spec
    from tests.failover.jobs import job_text

    for k in [k for k in os.environ if k.startswith("GPUJOB_STATE")]:
        monkeypatch.delenv(k)
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    p = tmp_path / "job.yaml"
    p.write_text(job_text(mode="ask"))
    ls = dataclasses.replace(load_spec(p), project="testproj")
    pod = LiveResource(platform="runpod", kind="pod", id="p1", name="gpujob-bert--testproj", status="stopped",
                       gpu_id="NVIDIA GeForce RTX 4090", gpu_count=1, attributes={"project": "testproj"})  # fmt: skip
    live = LiveState(read_at=now, resources=[pod], quotes=[], spot_unavailable={"runpod": "HTTP 410 Gone"})
    moving = render_plan(build_plan([ls], live, now=now, env={}), "text")
    assert "⇄ move to another platform job bert" in moving  # the action line
    assert "⇄ move to another platform" in moving.splitlines()[1], moving  # and the legend
    staying = render_plan(
        build_plan([ls], live.model_copy(update={"spot_unavailable": {}}), now=now, env={}), "text"
    )
    assert "⇄" not in staying.splitlines()[1]
