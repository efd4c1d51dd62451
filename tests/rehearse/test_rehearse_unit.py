"""The drill's arithmetic, its record, the plan's line about it, and its refusals."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from gpujob.errors import GpujobError
from gpujob.plan.planner import build_plan
from gpujob.rehearse import record
from gpujob.rehearse.drill import (
    _last_step_of_old_run,
    _seconds_per_step,
    _Seen,
    refuse_dead_spot_api,
    refuse_unless_drillable,
    step_of,
)
from gpujob.state import open_store
from tests.plan.plan_helpers import NOW, RUNPOD_JOB, live

Write = Callable[..., object]
T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SPOT = RUNPOD_JOB.replace("  container_disk_gb: 20\n", "  container_disk_gb: 20\n  spot: true\n")


def seen(at_s: float, step: int, age_s: float = 0.0, **status: object) -> _Seen:
    progress = SimpleNamespace(step=step, age_s=age_s)
    return _Seen(T0 + timedelta(seconds=at_s), SimpleNamespace(progress=progress, **status))


@pytest.mark.parametrize(
    ("name", "step"), [("step_00000120.pt", 120), ("ckpt-3000.safetensors", 3000), ("latest.pt", None)]
)
def test_the_step_of_a_checkpoint_is_the_last_number_in_its_name(name: str, step: int | None) -> None:
    assert step_of(name) == step


def test_seconds_per_step_uses_when_each_step_was_written() -> None:
    # step 100 written 1 s before the first read; step 150 written 0.5 s before the second, 10 s later
    assert _seconds_per_step(seen(0, 100, age_s=1.0), seen(10, 150, age_s=0.5)) == pytest.approx(10.5 / 50)
    assert _seconds_per_step(seen(0, 100), seen(10, 100)) is None  # no progress: no speed


def test_the_old_runs_last_step_comes_from_the_launchers_history() -> None:
    old = seen(0, 240, started_at="run-1")
    past = SimpleNamespace(started_at="run-1", last=SimpleNamespace(step=251))
    assert _last_step_of_old_run(SimpleNamespace(history=[past]), old) == 251
    assert _last_step_of_old_run(SimpleNamespace(history=[]), old) == 240


def test_the_plan_of_a_spot_job_says_never_then_the_recorded_drill(write_job: Write) -> None:
    loaded = write_job(SPOT)

    def rehearse_findings() -> list[str]:
        plan = build_plan([loaded], live(), now=NOW, env={})  # type: ignore[list-item]
        return [f.summary for f in plan.jobs[0].findings if f.code == "rehearse"]

    assert rehearse_findings() == ["never rehearsed: no drill has shown this job resumes after a preemption"]
    done = record.Rehearsal(job="job", platform="runpod", at=T0, machine_id="p1", how="sim", ok=True,
                            checkpoint="step_120.pt", checkpoint_step=120, resume_step=131, recovery_s=42.4,
                            detection_s=2.0, redone_steps=9, redone_usd=0.0012)  # fmt: skip
    record.save(open_store(loaded.path), done)  # type: ignore[attr-defined]
    assert rehearse_findings() == [
        "rehearsed 2026-12-01: recovery 42 s (detected in 2 s, resumed from step 131 >= checkpoint step 120); "
        "redone 9 step(s), $0.0012"
    ]


def test_an_on_demand_job_gets_no_rehearse_line(write_job: Write) -> None:
    plan = build_plan([write_job(RUNPOD_JOB)], live(), now=NOW, env={})  # type: ignore[list-item]
    assert not [f for f in plan.jobs[0].findings if f.code == "rehearse"]


def test_refusals_name_what_is_missing(write_job: Write) -> None:
    spec = write_job(SPOT).spec  # type: ignore[attr-defined]
    with pytest.raises(GpujobError, match="does not exist"):
        refuse_unless_drillable(spec, None)
    stopped = SimpleNamespace(status="stopped", raw_status="EXITED")
    with pytest.raises(GpujobError, match="is EXITED"):
        refuse_unless_drillable(spec, stopped)
    with pytest.raises(GpujobError, match="no checkpoint block"):
        refuse_unless_drillable(spec.model_copy(update={"checkpoint": None}), stopped)


def test_a_runpod_spot_job_is_refused_when_the_spot_api_answers_no_bid(write_job: Write) -> None:
    spec = write_job(SPOT).spec  # type: ignore[attr-defined]

    class GoneClient:
        async def lowest_price(self, *a: object, **k: object) -> object:
            raise GpujobError("RunPod GraphQL: Cannot query field 'lowestPrice' on type 'GpuType'")

    provider = SimpleNamespace(client=GoneClient())
    machine = SimpleNamespace(gpu_id="NVIDIA A100 80GB PCIe", cloud="secure", gpu_count=1)
    with pytest.raises(GpujobError, match="spot API does not answer") as err:
        asyncio.run(refuse_dead_spot_api(spec, machine, provider))
    assert "nothing could resume" in str(err.value)
