"""What the sweep e2e tests share: a project dir with the toy cell, the gpujob runner, and reads of
the simulator's machines and of a queue's state dir on its disk."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def in_flight(s: Path, ckpt: Path, current: Path | None = None) -> tuple[str, int, str] | None:
    """(its cell in flight, that cell's checkpoints saved, its queue) of a queue that finished a cell and
    is inside its next one; None otherwise. `s`: the queue's wrapper state dir; `ckpt`: the checkpoint
    dir on its disk; `current`: its current.<queue> file (default: the one in `s`)."""
    if not list(s.glob("*.exit")):
        return None
    current = current or next(iter(s.glob("current.*")), None)
    cell = current.read_text().strip() if current is not None and current.exists() else ""
    if current is None or not cell or (s / f"{cell}.exit").exists():
        return None
    return cell, len(list((ckpt / cell).glob("step_*.json"))), current.name.split(".")[-1]


WATCH = [sys.executable, "-m", "gpujob", "watch", "--interval", "1s", "--probe", "0.2s"]


def start_watch(
    d: Path, env: dict[str, str], stdout: Any = subprocess.PIPE, *args: str
) -> subprocess.Popen[str]:
    """`gpujob watch` at a test's pace (1 s ticks, 0.2 s probes) in the background, its stderr with its
    stdout (a pipe, or a file the test reads while it runs)."""
    return subprocess.Popen(
        [*WATCH, *args], cwd=d, env=env, stdout=stdout, stderr=subprocess.STDOUT, text=True
    )


def run_watch(d: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`gpujob watch` at a test's pace until it ends by itself (every queue drained)."""
    return subprocess.run(WATCH, cwd=d, env=env, capture_output=True, text=True, timeout=300)


def home_cells(d: Path) -> list[str]:
    """The cells whose results came home to ./outputs/<cell>/, sorted."""
    return sorted(p.name for p in (d / "outputs").iterdir() if p.is_dir() and p.name != ".gpujob")


def cell_record(got: Path) -> dict[str, str]:
    """A cell's gpujob-cell.txt (key=value lines: exit, queue, starts, ...) as it came home."""
    return dict(line.split("=", 1) for line in (got / "gpujob-cell.txt").read_text().splitlines())


RUNPOD_MACHINE = """machine:
  gpu: [RTX4090, A6000]
  spot: true
  cloud: secure
  regions: [EU-RO-1]
  image: runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04
  container_disk_gb: 20
"""
PAPERSPACE_MACHINE = """machine:
  gpu: [A4000, A5000]
  regions: [ny2]
  template: ubuntu-22.04
"""


def sweep_job(
    *,
    platform: str = "runpod",
    storage: str = "{volume_gb: 10, mount: /workspace}",
    pull: str = "",
    steps: int = 4,
    lrs: str = '"1e-3", "1e-4"',
    more: str = "",
    verify: str = "python3 -m json.tool {file}",
) -> str:
    """The sweep e2e tests' job file: the toy cell (cell.py) over LR × SEED ["1", "2"] on 2 queue
    machines (RunPod spot pods in tmux, or Paperspace machines), 1 s checkpoints checked with json.tool,
    each machine stopped when its queue drains. `pull`: "continuous" for continuous pulls; `more`:
    further top-level sections, as YAML."""
    runpod = platform == "runpod"
    ck_pull = f"pull: {pull}, " if pull else ""
    return (
        f"version: 1\nname: abl\nplatform: {platform}\n"
        + (RUNPOD_MACHINE if runpod else PAPERSPACE_MACHINE)
        + f"storage: {storage}\n"
        + f'checkpoint: {{dir: /workspace/ckpt, interval: 1s, keep: 10, {ck_pull}verify: "{verify}"}}\n'
        + "run:\n  sync: {src: ., dest: /workspace/code, exclude: [outputs, checkpoints, .gpujob]}\n"
        + f'  command: python3 cell.py\n  env: {{STEPS: "{steps}", STEP_S: "1"}}\n'
        + ("  detach: tmux\n" if runpod else "")
        + f'sweep:\n  machines: 2\n  matrix:\n    LR: [{lrs}]\n    SEED: ["1", "2"]\n  est: 20m\n'
        + "teardown: {on_finish: stop}\n"
        + more
    )
