"""Goodput under injected preemption, next to the Young/Daly optimum for the same numbers.

A spot job (the quickstart's toy run, each checkpoint write made to cost `write_s`) runs under
`gpujob watch` with its default options, while this harness preempts the pod after exponential gaps
of run time with mean `mtbf_s`, fail-stop (no SIGTERM grace, as the model assumes). gpujob picks the
checkpoint interval itself (`interval: auto`: sqrt(2 · mtbf · write_time)).

Measured goodput = useful compute ÷ GPU time billed by the simulator, where useful compute is the
steps times the toy's own pace on this machine with no checkpoints and no preemption (measured in the
same run: a sleep-based step overshoots on a busy machine, and that is not gpujob's waste).
Bound = the fraction of time spent on useful work when checkpointing at the optimal interval, in
Daly's exponential-failure model with the platform's own restart time R (the simulator's pod start,
measured here through its API): max over τ of τ / (M · e^(R/M) · (e^((τ+δ)/M) − 1)).
Target: measured ≥ 0.9 × bound. Alongside: each preemption -> first new step, minus the simulator's
start time (what gpujob adds: noticing the loss, starting the pod, syncing and launching), ≤ 10 s.
"""

from __future__ import annotations

import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.harness import Result
from bench.resume import QUICKSTART, _sim_start_seconds

BUDGET_S = 10.0
JOB_NAME = "goodput"


def _is_pod(name: str) -> bool:
    """The job's own pod, whatever project id the bench checkout got (gpujob.naming)."""
    from gpujob import naming

    owner = naming.parse(name)
    return owner is not None and owner.job == JOB_NAME and owner.volume is None


def daly_bound(mtbf_s: float, write_s: float, restart_s: float) -> tuple[float, float]:
    """(best useful fraction, the interval that gives it) in Daly's exponential model."""

    def efficiency(tau: float) -> float:
        return tau / (mtbf_s * math.exp(restart_s / mtbf_s) * math.expm1((tau + write_s) / mtbf_s))

    # The efficiency is unimodal in τ: a golden-section search on [δ/100, M] finds its peak.
    lo, hi = write_s / 100, mtbf_s
    g = (math.sqrt(5) - 1) / 2
    for _ in range(200):
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        if efficiency(a) < efficiency(b):
            lo = a
        else:
            hi = b
    tau = (lo + hi) / 2
    return efficiency(tau), tau


JOB = """version: 1
name: goodput
platform: runpod
state: running
machine:
  gpu: [RTX4090]
  spot: true
  regions: [EU-RO-1]
  image: runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04
  container_disk_gb: 20
storage:
  mount: /workspace
  network_volume: {{name: ckpts, size_gb: 10}}
checkpoint:
  dir: /workspace/ckpt
  interval: auto
  mtbf: {mtbf}s
  write_time: {write}s
  keep: 3
  pull_to: ./checkpoints
  verify: python3 verify_ckpt.py {{file}}
run:
  sync: {{src: ., dest: /workspace/code, exclude: [checkpoints, .gpujob, "*.log"]}}
  command: python3 train.py
  env: {{TOTAL_STEPS: "{steps}", STEP_SECONDS: "{step}", CKPT_WRITE_SECONDS: "{write}"}}
teardown:
  on_finish: terminate
"""


def pure_step_seconds(work: Path, steps: int, step_s: float) -> float:
    """The toy's pace here, uninterrupted and never checkpointing (progress reports included)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "GPUJOB_CHECKPOINT_DIR": str(Path(tmp) / "ckpt"),
            "GPUJOB_CHECKPOINT_INTERVAL": "1000000",
            "GPUJOB_PROGRESS_FILE": str(Path(tmp) / "progress"),
            "TOTAL_STEPS": str(steps),
            "STEP_SECONDS": str(step_s),
        }
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "train.py"], cwd=work, env=env, check=True, capture_output=True)
        return (time.perf_counter() - t0) / steps


class Injector(threading.Thread):
    """Preempts the running pod after exponential gaps of run time; times each preemption and the
    first step the next run writes (its progress file's mtime, on the simulated network volume)."""

    def __init__(self, sim, mtbf_s: float, seed: int, first_gap_max: float) -> None:  # type: ignore[no-untyped-def]
        super().__init__(daemon=True)
        self.sim, self.mtbf_s, self.rng = sim, mtbf_s, random.Random(seed)
        self.first_gap_max = first_gap_max  # a smoke run must see at least one preemption
        self.stop = threading.Event()
        self.preempted_at: list[float] = []
        self.first_step_after: list[float] = []

    def _pod(self) -> str | None:
        with self.sim.engine.lock:
            pods = self.sim.engine.state.pods.values()
            return next(
                (p.id for p in pods if _is_pod(p.name) and p.status == "RUNNING" and p.ended_at is None), None
            )

    def _progress(self) -> Path | None:
        with self.sim.engine.lock:
            vols = [v.id for v in self.sim.engine.state.volumes.values() if v.ended_at is None]
        for vid in vols:
            path = self.sim.data_dir / "runpod" / "volumes" / vid / ".gpujob" / "goodput" / "progress"
            if path.exists():
                return path
        return None

    def _mtime(self) -> float | None:
        path = self._progress()
        try:
            return path.stat().st_mtime if path else None
        except FileNotFoundError:  # the new run removed the old progress file at its start
            return None

    def _done(self) -> bool:
        path = self._progress()
        log = path.parent / "run.log" if path else None
        return log is not None and log.exists() and "done at step" in log.read_text(errors="replace")

    def run(self) -> None:
        while not self.stop.is_set() and not self._done():
            while not self.stop.wait(0.01) and (self._pod() is None or self._mtime() is None):
                pass  # wait for a run that is making steps
            gap = self.rng.expovariate(1.0 / self.mtbf_s)
            if not self.preempted_at:
                gap = min(gap, self.first_gap_max)
            if self.stop.wait(gap) or self._done():
                return
            pod = self._pod()
            if pod is None:
                continue
            t0 = time.time()
            if not self.sim.inject("preempt", pod_id=pod, grace=0)["preempted"]:
                continue
            self.preempted_at.append(t0)
            while not self.stop.wait(0.01):  # the next run's first step: a progress write after t0
                mtime = self._mtime()
                if mtime is not None and mtime > t0 + 0.05:
                    self.first_step_after.append(mtime)
                    break


def run(repeat: int, quick: bool = False) -> list[Result]:
    from gpujob.sim.testing import running_simulator

    # checkpoint.write_time is a measurement and may be under a second (gpujob.jobfile.rules.parse_measured).
    mtbf_s, write_s, step_s = (10.0, 0.1, 0.02) if quick else (60.0, 0.5, 0.05)
    steps = 1000 if quick else 6000  # 20 s or 300 s of steps
    seed = 20261129 + (0 if quick else 1)
    good = Result(
        f"goodput under preemption (MTBF {mtbf_s:g} s, checkpoint {write_s:g} s)",
        "Young/Daly optimum",
        0.9,
        higher_is_better=True,
        unit="",
    )
    overhead = Result("watch: preemption -> first new step, added by gpujob", f"budget {BUDGET_S:g} s", 1.0)
    with tempfile.TemporaryDirectory() as tmp, running_simulator(Path(tmp) / "sim", preempt_grace=0.0) as sim:
        work = Path(tmp) / "job"
        work.mkdir()
        for name in ("train.py", "verify_ckpt.py"):
            shutil.copy(QUICKSTART / name, work / name)
        (work / "job.yaml").write_text(JOB.format(mtbf=mtbf_s, write=write_s, steps=steps, step=step_s))
        floors = [_sim_start_seconds(sim.env) for _ in range(3)]
        restart_s = min(floors)
        pace = pure_step_seconds(work, max(200, steps // 10), step_s)
        env = {**os.environ, **sim.env, "GPUJOB_STATE_DIR": str(Path(tmp) / "state"), "CI": "true"}
        injector = Injector(sim, mtbf_s, seed, first_gap_max=steps * step_s / 2 if quick else math.inf)
        injector.start()
        watch = subprocess.run(
            [sys.executable, "-m", "gpujob", "watch", "job.yaml"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=3600,
        )
        injector.stop.set()
        injector.join(10)
        if watch.returncode != 0:
            raise RuntimeError(
                f"gpujob watch exited {watch.returncode}: {watch.stdout[-2000:]}{watch.stderr[-2000:]}"
            )
        bill = sim.bill()
        gpu_usd = sum(i["usd"] for i in bill["items"] if i["item"] == "gpu" and _is_pod(i["name"]))
        price = sim.engine.rp_prices.gpu_hour("NVIDIA GeForce RTX 4090", cloud="SECURE", spot=True)
        billed_s = gpu_usd / price * 3600
    if billed_s <= 0:
        raise RuntimeError(
            "the simulator billed no GPU time to the job's pod: nothing to measure goodput against"
        )
    bound, tau = daly_bound(mtbf_s, write_s, restart_s)
    good.figure_samples.append(steps * pace / billed_s)
    good.floor_samples.append(bound)
    n = len(injector.first_step_after)
    overhead.figure_samples = [
        max(0.0, first - t0 - restart_s)
        for t0, first in zip(injector.preempted_at, injector.first_step_after, strict=False)
    ]
    overhead.floor_samples = [BUDGET_S] * max(1, n)
    chosen = int(math.sqrt(2 * mtbf_s * write_s))
    hits = len(injector.preempted_at)
    # A few preemptions are one draw of a random process: also say what the bound is at the rate that
    # actually happened (billed time per preemption), so a lucky run is visible as such.
    realized = daly_bound(billed_s / hits, write_s, restart_s)[0] if hits else 1.0
    good.note = (
        f"{hits} preemptions, {billed_s:.0f} s billed for {steps * pace:.0f} s of "
        f"steps ({pace * 1000:.1f} ms each here); interval {chosen} s (optimum {tau:.1f} s), R {restart_s:.2f} s; "
        f"first-order bound {1 - math.sqrt(2 * write_s / mtbf_s):.3f}; bound at the preemption rate that "
        f"happened ({billed_s / max(hits, 1):.0f} s between) {realized:.3f}"
    )
    overhead.note = (
        f"simulator start {min(floors):.2f}–{max(floors):.2f} s subtracted, default --interval/--probe"
    )
    if not overhead.figure_samples:
        overhead.error = "no preemption landed (the run was too short for the MTBF)"
    return [good, overhead]
