"""Sweeps at scale (issue 27): a live-state read (what `gpujob watch` does once a tick) of a 100-cell
sweep on 8 machines makes no more API calls than one job's; the queue wrapper's overhead per cell stays
under the issue's 1 s."""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
import time
from pathlib import Path

from bench.harness import Result

IMAGE = "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04"
ONE = f"""version: 1
name: abl
platform: runpod
machine: {{gpu: [RTX4090], spot: true, cloud: secure, regions: [EU-RO-1], image: "{IMAGE}"}}
storage: {{volume_gb: 10, mount: /workspace}}
run: {{command: python3 cell.py}}
"""
SWEEP = ONE + "sweep:\n  machines: 8\n  matrix:\n    LR: [{}]\n    SEED: ['1', '2']\n".format(
    ", ".join(f"'{i}'" for i in range(50))
)


async def _calls(specs: list, env: dict[str, str]) -> int:  # type: ignore[type-arg]
    import httpx

    from gpujob.apply.refresh import read_live_state
    from gpujob.providers.registry import provider_for

    n = 0

    async def hook(_request: httpx.Request) -> None:
        nonlocal n
        n += 1

    async with httpx.AsyncClient(event_hooks={"request": [hook]}) as http:
        await read_live_state(specs, {"runpod": provider_for("runpod", http, env=env)})
    return n


def run(repeat: int, quick: bool = False) -> list[Result]:
    from gpujob.cli.wiring import wire
    from gpujob.jobfile.cells import expand
    from gpujob.jobfile.sweep import SweepSpec
    from gpujob.layout.wrapper import place, queue_command
    from gpujob.sim.testing import running_simulator
    from gpujob.spec.load import load_specs

    wire()  # the sweep expands into its queues as the CLI expands it
    calls = Result("sweep: API calls per live read, 100 cells on 8 machines", "one job's", 1.0, unit="calls")
    overhead = Result("sweep: wrapper overhead per cell (100 cells)", "the issue's 1 s", 1.0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "s.yaml").write_text(SWEEP)
        (root / "o.yaml").write_text(ONE)
        queues = [ls.spec for ls in load_specs([root / "s.yaml"])]
        one = [ls.spec for ls in load_specs([root / "o.yaml"])]
        with running_simulator(root / "sim", pods=False) as sim:
            for _ in range(repeat):
                calls.figure_samples.append(asyncio.run(_calls(queues, dict(sim.env))))
                calls.floor_samples.append(asyncio.run(_calls(one, dict(sim.env))))
        cells = expand(
            SweepSpec.model_validate({"machines": 1, "matrix": {"A": [str(i) for i in range(100)]}})
        )
        for i in range(repeat):
            mount = root / f"ws{i}"
            p = place(job="abl", mount=str(mount), ck_dir=None, command="true", queues=[cells])
            t = time.perf_counter()
            subprocess.run(["bash", "-c", queue_command(p, 1)], cwd=root, check=True, capture_output=True)
            overhead.figure_samples.append((time.perf_counter() - t) / len(cells))
            overhead.floor_samples.append(1.0)
    return [calls, overhead]
