"""Target 6: `gpujob plan` of 200 jobs against the simulator peaks below 200 MB RSS."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.harness import Result

LIMIT_MB = 200.0

JOB = """version: 1
name: {name}
platform: {platform}
machine:
  gpu: [{gpu}]
  {image_or_template}
storage:
  volume_gb: 50
"""


def _write_jobs(folder: Path, n: int) -> list[str]:
    paths = []
    for i in range(n):
        rp = i % 2 == 0
        text = JOB.format(
            name=f"mem{i}",
            platform="runpod" if rp else "paperspace",
            gpu="RTX4090" if rp else "A4000",
            image_or_template="image: runpod/pytorch:2.4.0" if rp else "template: ml-in-a-box",
        )
        path = folder / f"mem{i}.job.yaml"
        path.write_text(text)
        paths.append(str(path))
    return paths


# The child reports its own VmHWM (per address space, so it starts afresh at exec). ru_maxrss from wait4
# would not: Linux carries the forking parent's high-water mark across exec into the child's figure.
_REPORT_PEAK = """
import atexit, runpy, sys
def _peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            sys.stderr.write("GPUJOB_PEAK_KB " + line.split()[1] + "\\n")
atexit.register(_peak)
sys.argv = ["gpujob", *sys.argv[1:]]
runpy.run_module("gpujob", run_name="__main__")
"""


def peak_rss(
    argv: list[str], env: dict[str, str], *, cwd: Path | None = None, ok: tuple[int, ...] = (0, 2)
) -> tuple[float, subprocess.CompletedProcess[str]]:
    """`gpujob ARGV` run once: its peak RSS in MB (VmHWM of the gpujob process itself) and what it printed."""
    proc = subprocess.run(
        [sys.executable, "-c", _REPORT_PEAK, *argv], env=env, cwd=cwd, capture_output=True, text=True
    )
    if proc.returncode not in ok:
        raise RuntimeError(f"gpujob {' '.join(argv[:2])} exited {proc.returncode}: {proc.stderr[-500:]}")
    kb = [line.split()[1] for line in proc.stderr.splitlines() if line.startswith("GPUJOB_PEAK_KB ")]
    return int(kb[-1]) / 1024.0, proc


def _peak_rss_mb(argv: list[str], env: dict[str, str]) -> float:
    mb, proc = peak_rss(argv, env)
    if "Plan:" not in proc.stdout:  # the figure means nothing unless a plan was really made
        raise RuntimeError(f"gpujob {argv[0]} printed no plan: {proc.stderr[-500:]}")
    return mb


def run(repeat: int, quick: bool = False) -> list[Result]:
    from gpujob.sim.testing import running_simulator

    result = Result("plan of 200 jobs: peak RSS", f"limit {LIMIT_MB:g} MB", 1.0, unit=" MB")
    with tempfile.TemporaryDirectory() as tmp, running_simulator(Path(tmp) / "sim", pods=False) as sim:
        folder = Path(tmp) / "jobs"
        folder.mkdir()
        files = _write_jobs(folder, 200)
        env = {**os.environ, **sim.env, "GPUJOB_STATE_DIR": str(Path(tmp) / "state")}
        for _ in range(max(1, repeat // 2)):
            result.figure_samples.append(_peak_rss_mb(["plan", "--no-color", *files], env))
            result.floor_samples.append(LIMIT_MB)
    return [result]
