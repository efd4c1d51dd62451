"""Helpers for the `gpujob watch` end-to-end tests: a monitor that samples the simulator for two pods or
two runs at once, a preemption injector with exponential gaps, and readers of what the run left on the
simulated network volume."""

from __future__ import annotations

import hashlib
import json
import random
import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpujob import naming
from gpujob.sim import podproc
from tests.e2e.e2e_support import Project, poll

JOB = "quickstart"


def is_pod(name: str) -> bool:
    """The quickstart's pod, whatever project id its checkout got (gpujob.naming)."""
    owner = naming.parse(name)
    return owner is not None and owner.job == JOB and owner.volume is None


def is_volume(name: str) -> bool:
    owner = naming.parse(name)
    return owner is not None and owner.job == JOB and owner.volume == "ckpts"


def watch_job(
    p: Project, *, steps: int, step_s: float = 0.05, interval: str = "2s", extra_env: str = ""
) -> None:
    """The quickstart made into an unattended spot job: continuous pulls, terminate when done."""
    job = p.dir / "job.yaml"
    text = job.read_text()
    text = text.replace('TOTAL_STEPS: "3000"', f'TOTAL_STEPS: "{steps}"').replace(
        'STEP_SECONDS: "0.05"', f'STEP_SECONDS: "{step_s}"{extra_env}'
    )
    text = text.replace("  interval: 2s\n", f"  interval: {interval}\n  pull: continuous\n")
    text = text.replace("on_finish: keep", "on_finish: terminate")
    assert "pull: continuous" in text and "on_finish: terminate" in text
    job.write_text(text)


def start_watch(p: Project, *args: str) -> subprocess.Popen[str]:
    argv = ["watch", "--interval", "1s", "--probe", "0.2s", "--max-recoveries-per-hour", "50", *args]
    return subprocess.Popen(
        [sys.executable, "-m", "gpujob", *argv],
        cwd=p.dir,
        env=p.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def stall_job(p: Project, command: str, stall_s: int) -> str:
    """The quickstart cut to 60 steps, its run.command `command` (a run that stops stepping and stays
    alive) under run.stall_after `stall_s`: the job file's new text, written."""
    job = p.dir / "job.yaml"
    text = job.read_text()
    text = text.replace("  command: python3 train.py\n", f"  command: {command}\n")
    text = text.replace('TOTAL_STEPS: "3000"', 'TOTAL_STEPS: "60"')
    text = text.replace("  detach: tmux\n", f"  detach: tmux\n  stall_after: {stall_s}s\n")
    job.write_text(text)
    return text


def watch_until_parked(p: Project) -> str:
    """`gpujob watch` until its `parked` event is in the store, then terminated: what it printed."""
    watch = start_watch(p)
    try:
        poll(
            "the job to be parked",
            lambda: any(e["event"] == "parked" for e in stored_events(p)),
            deadline_s=120,
        )
    finally:
        watch.terminate()
        out, _ = watch.communicate(timeout=30)
    return out


def stored_events(p: Project) -> list[dict[str, Any]]:
    """watch's events as the project's store holds them (events.jsonl), every line."""
    return [json.loads(line) for line in p.store().lines("events.jsonl")]


def sim_state(p: Project) -> dict[str, Any]:
    with p.sim.engine.lock:
        return p.sim.engine.state.model_dump(mode="json")


def volume_dir(p: Project) -> Path | None:
    vols = [v for v in sim_state(p)["volumes"].values() if is_volume(v["name"]) and v["ended_at"] is None]
    return p.sim.data_dir / "runpod" / "volumes" / vols[0]["id"] if vols else None


def progress_step(p: Project) -> int | None:
    vol = volume_dir(p)
    try:
        return int((vol / ".gpujob" / "quickstart" / "progress").read_text().split()[0]) if vol else None
    except (OSError, ValueError, IndexError):
        return None


def run_log(p: Project) -> str:
    vol = volume_dir(p)
    try:
        return (vol / ".gpujob" / "quickstart" / "run.log").read_text() if vol else ""
    except OSError:
        return ""


def remote_checkpoints(p: Project) -> dict[str, str]:
    vol = volume_dir(p)
    if vol is None or not (vol / "ckpt").is_dir():
        return {}
    out = {}
    for f in (vol / "ckpt").glob("step_*.json"):
        try:
            out[f.name] = hashlib.sha256(f.read_bytes()).hexdigest()
        except FileNotFoundError:  # rotated away by the run (keep: 3) between listing and reading
            continue
    return out


def local_checkpoints(p: Project) -> dict[str, str]:
    """Checkpoints pulled to the laptop (checkpoint.pull_to), by name -> sha256."""
    out = {}
    for f in (p.dir / "checkpoints").glob("step_*.json"):
        try:
            out[f.name] = hashlib.sha256(f.read_bytes()).hexdigest()
        except FileNotFoundError:  # a pull renaming it into place just now
            continue
    return out


def newest(checkpoints: dict[str, str]) -> str | None:
    """step_000123.json names sort by step."""
    return max(checkpoints, default=None)


def step_of(name: str) -> int:
    return int(name.removeprefix("step_").removesuffix(".json"))


def training_processes(pid1: int, key: str) -> int:
    n = 0
    for pid in podproc.members(pid1, key):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"train.py" in argv:
            n += 1
    return n


@dataclass
class Monitor:
    """Samples the simulator every 20 ms: job pods not terminated, training processes in them, and
    every checkpoint name that ever appeared on the volume."""

    p: Project
    max_pods: int = 0
    max_runs: int = 0
    samples: int = 0
    seen_checkpoints: set[str] = field(default_factory=set)
    seen_digests: dict[str, str] = field(default_factory=dict)  # name -> sha256 when first seen
    error: BaseException | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Monitor:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        if self.error is not None:  # a monitor that died proved nothing: fail, never pass silently
            raise AssertionError(f"the monitor failed: {self.error!r}") from self.error

    def _loop(self) -> None:
        try:
            self._sample()
        except BaseException as exc:
            self.error = exc

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            pods = [
                x
                for x in sim_state(self.p)["pods"].values()
                if is_pod(x["name"]) and x["ended_at"] is None and x["status"] != "TERMINATED"
            ]
            key = self.p.sim.engine.pod_key
            runs = sum(
                training_processes(x["sshd_pid"], key("runpod", x["id"])) for x in pods if x.get("sshd_pid")
            )
            self.max_pods = max(self.max_pods, len(pods))
            self.max_runs = max(self.max_runs, runs)
            remote = remote_checkpoints(self.p)
            self.seen_checkpoints |= set(remote)
            for name, digest in remote.items():
                self.seen_digests.setdefault(name, digest)  # written once, renamed into place
            self.samples += 1


@dataclass
class Preempter:
    """Preempts the job's running pod after exponential gaps of run time (mean `mtbf_s`, cut at 1.5 ×), at most
    `limit` times. `before(n)` runs just before the n-th preemption (to queue other faults)."""

    p: Project
    mtbf_s: float
    limit: int
    seed: int
    before: Any = None
    first_gap_s: float | None = None  # a fixed first gap, so at least one preemption surely happens
    done: int = 0
    # Per preemption, once the pod is down: the newest checkpoint on the volume (the one the next run
    # resumes from, with its sha256) and the newest pulled to the laptop at that moment.
    at_preemption: list[tuple[tuple[str, str] | None, str | None]] = field(default_factory=list)
    error: BaseException | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Preempter:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        if self.error is not None:
            raise AssertionError(f"the preempter failed: {self.error!r}") from self.error

    def _running_pod(self) -> str | None:
        for x in sim_state(self.p)["pods"].values():
            if is_pod(x["name"]) and x["status"] == "RUNNING" and x["ended_at"] is None:
                return str(x["id"])
        return None

    def _loop(self) -> None:
        try:
            self._preempt()
        except BaseException as exc:
            self.error = exc

    def _preempt(self) -> None:
        rng = random.Random(self.seed)
        while self.done < self.limit and not self._stop.is_set():
            # Run time only: wait for a pod whose run is making steps, then for an exponential gap.
            start = None
            while not self._stop.wait(0.05):
                start = progress_step(self.p)
                if self._running_pod() and start is not None and progress_step(self.p) is not None:
                    break
            # Exponential, cut at 1.5 × mtbf: a run of N·mtbf run-seconds then surely sees about N/1.5
            # preemptions (two long draws in a row used to let a 15 s run finish after only 2).
            gap = min(rng.expovariate(1.0 / self.mtbf_s), 1.5 * self.mtbf_s)
            if self.first_gap_s is not None and self.done == 0:
                gap = self.first_gap_s
            if self._stop.wait(gap):
                return
            pod = self._running_pod()
            if pod is None or "done at step" in run_log(self.p):
                continue
            if self.before is not None:
                self.before(self.done + 1)
            if self.p.sim.inject("preempt", pod_id=pod)["preempted"]:  # returns once the pod is down
                self.done += 1
                remote = remote_checkpoints(self.p)
                top = newest(remote)
                self.at_preemption.append(
                    ((top, remote[top]) if top else None, newest(local_checkpoints(self.p)))
                )
                # Wait for the next run to make a step before drawing the next gap.
                before = progress_step(self.p)
                while not self._stop.wait(0.05):
                    now = progress_step(self.p)
                    if self._running_pod() and now is not None and now != before:
                        break


def events(p: Project) -> list[dict[str, Any]]:
    path = p.state / "events.jsonl"
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


RESUME = re.compile(r"resumed from step (\d+)|starting fresh at step 0|checkpoint step_(\d+)\.json")


def resumes_never_went_back(log: str) -> list[str]:
    """Each run resumed from the newest checkpoint written before it started (no checkpoint lost)."""
    problems, newest = [], 0
    for m in RESUME.finditer(log):
        if m.group(2):
            newest = max(newest, int(m.group(2)))
        elif m.group(1) is not None:
            if int(m.group(1)) < newest:
                problems.append(f"resumed from step {m.group(1)} although step {newest} was saved")
        elif newest:
            problems.append(f"started fresh although step {newest} was saved")
    return problems
