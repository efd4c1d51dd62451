"""What the sweep e2e tests share: a project dir with the toy cell, the gpujob runner, and reads of
the simulator's machines and of a queue's state dir on its disk."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from gpujob.sim.testing import Sim
from tests.cli_process import run_gpujob

CELL = Path(__file__).parents[1] / "sweep" / "cell.py"


def sweep_project(sim: Sim, tmp_path: Path, job: str, name: str = "abl") -> tuple[Path, dict[str, str]]:
    """A project dir holding `job` as job.yaml and the toy cell, and the env that points gpujob at `sim`
    (no GPUJOB_ variable of the test runner's own leaks in)."""
    d = tmp_path / name
    d.mkdir()
    (d / "job.yaml").write_text(job)
    shutil.copy(CELL, d / "cell.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_")}
    env.update(sim.env)
    env.update({"CI": "true", "NO_COLOR": "1"})
    return d, env


def gj(d: Path, env: dict[str, str], *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return run_gpujob(args, cwd=d, env=env, timeout=timeout)


def pods(sim: Sim) -> list[dict]:
    """Every pod the simulator knows, with `nv`: the network volume it mounts (None for its own disk)."""
    with sim.engine.lock:
        return [
            p.model_dump(mode="json") | {"nv": p.network_volume_id} for p in sim.engine.state.pods.values()
        ]


def machines(sim: Sim) -> list[dict]:
    with sim.engine.lock:
        return [m.model_dump(mode="json") for m in sim.engine.state.machines.values()]


def volumes(sim: Sim) -> list[dict]:
    """The network volumes not deleted."""
    with sim.engine.lock:
        return [v.model_dump(mode="json") for v in sim.engine.state.volumes.values() if v.ended_at is None]


def state_dir(sim: Sim, pod_id: str, job: str = "abl") -> Path:
    """A RunPod queue pod's wrapper state on its own volume disk."""
    return sim.data_dir / "runpod" / "pods" / pod_id / "volume" / ".gpujob" / f"{job}.sweep" / "state"


def recorded(state: Path, suffix: str) -> list[str]:
    """The cells with a `<cell><suffix>` record in a queue's state dir (".exit", ".starts")."""
    return sorted(p.name[: -len(suffix)] for p in state.glob(f"*{suffix}"))
