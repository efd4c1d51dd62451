"""Scale: a sweep of 100 cells on 8 machines costs the platform API the same list calls per live-state
read (what `gpujob watch` does once a tick) as one job: the cells never reach the API."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from gpujob.sim.testing import running_simulator
from gpujob.spec.load import load_specs
from tests.sweep.test_sweep_unit import JOB

pytestmark = pytest.mark.sim


async def _calls(specs: list, env: dict[str, str]) -> list[str]:  # type: ignore[type-arg]
    from gpujob.apply.refresh import read_live_state
    from gpujob.providers.registry import provider_for

    seen: list[str] = []

    async def hook(request: httpx.Request) -> None:
        seen.append(f"{request.method} {request.url.path}")

    async with httpx.AsyncClient(event_hooks={"request": [hook]}) as http:
        providers = {"runpod": provider_for("runpod", http, env=env)}
        await read_live_state(specs, providers)
    return seen


def test_live_reads_of_a_100_cell_sweep_on_8_machines_cost_what_one_job_costs(tmp_path: Path) -> None:
    big = JOB.replace("machines: 2", "machines: 8").replace(
        'LR: ["1e-3", "3e-4", "1e-4"]', "LR: [" + ", ".join(f'"{i}"' for i in range(50)) + "]"
    )
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "job.yaml").write_text(big)
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "job.yaml").write_text(JOB.split("sweep:")[0])
    queues = load_specs([tmp_path / "sweep" / "job.yaml"])
    assert len(queues) == 8 and sum(len(q.sweep.cells) for q in queues) == 100
    one = load_specs([tmp_path / "one" / "job.yaml"])
    with running_simulator(tmp_path / "sim", pods=False) as sim:
        env = dict(sim.env)
        sweep_calls = asyncio.run(_calls([q.spec for q in queues], env))
        one_calls = asyncio.run(_calls([s.spec for s in one], env))
    assert sweep_calls and sorted(sweep_calls) == sorted(one_calls), (sweep_calls, one_calls)
