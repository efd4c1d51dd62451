"""Target 2: reading live state. Planning 50 (and 200) jobs against the simulator with 100 ms of injected
latency per API call must wait ≤ 3 round trips on the API, not one per job, and stay under the
platform's rate limits (no 429 seen)."""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from bench.harness import Result

LATENCY = 0.1


def _specs(n: int) -> list:  # type: ignore[type-arg]
    from gpujob.jobfile.model import JobSpec

    specs = []
    for i in range(n):
        if i % 2:
            machine = {"gpu": ["A4000"], "template": "ml-in-a-box", "regions": ["ny2"]}
            specs.append(
                JobSpec.model_validate(
                    {"version": 1, "name": f"job{i}", "platform": "paperspace", "machine": machine}
                )
            )
        else:
            machine = {"gpu": ["RTX4090"], "image": "runpod/pytorch:2.4.0"}
            specs.append(
                JobSpec.model_validate(
                    {"version": 1, "name": f"job{i}", "platform": "runpod", "machine": machine}
                )
            )
    return specs


async def _read(specs: list, env: dict[str, str]) -> float:  # type: ignore[type-arg]
    from gpujob.apply.refresh import read_live_state
    from gpujob.providers.registry import open_providers

    start = time.perf_counter()
    async with open_providers({s.platform for s in specs}, env=env) as providers:
        await read_live_state(specs, providers)
    return time.perf_counter() - start


async def _one_round_trip(env: dict[str, str]) -> float:
    import httpx

    async with httpx.AsyncClient() as client:
        start = time.perf_counter()
        r = await client.get(
            env["GPUJOB_RUNPOD_API_URL"] + "/pods",
            headers={"Authorization": f"Bearer {env['RUNPOD_API_KEY']}"},
        )
        r.raise_for_status()
        return time.perf_counter() - start


def run(repeat: int, quick: bool = False) -> list[Result]:
    from gpujob.sim.testing import running_simulator

    results = []
    with tempfile.TemporaryDirectory() as tmp, running_simulator(Path(tmp), pods=False) as sim:
        env = dict(sim.env)
        sim.inject("latency", seconds=LATENCY)
        for n in (50, 200):
            specs = _specs(n)
            result = Result(f"plan read of {n} jobs (100 ms/call)", "1 API round trip", 3.0)
            for _ in range(repeat):
                result.figure_samples.append(asyncio.run(_read(specs, env)))
                result.floor_samples.append(asyncio.run(_one_round_trip(env)))
            results.append(result)
        sim.inject("clear")
        throttled = sim.engine.stats.get("rate_limited", 0) if hasattr(sim.engine, "stats") else 0
        if throttled:
            results[-1].note = f"{throttled} requests rate-limited"
    return results
