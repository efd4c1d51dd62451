"""Kit for the teardown-gate tests: the real simulator with real pods (sshd in namespaces), a run that
checkpoints every 0.2 s with keep: 3 and saves once more on SIGTERM, the gpujob CLI as a subprocess,
and two independent observers of the checkpoint directory on the simulated disk:

  * DirWatch polls the directory every 50 ms in a thread (it observes; it never waits for anything);
  * CallSnapshots wraps the simulator's pod terminate and volume delete, and records exactly which
    checkpoint files were on the disk at the moment the destructive call arrived.

`lost()` compares a snapshot with the verified local copies: a file is safe only when pull_to holds a
copy with the same sha256 and the pull record says that copy passed checkpoint.verify."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpujob.sim.testing import Sim
from tests.cli_process import run_gpujob

HERE = Path(__file__).resolve().parent
QUICKSTART = HERE.parents[1] / "examples" / "quickstart"
POLL_S = 0.05

VOLUME_DISK = "storage:\n  mount: /workspace\n  volume_gb: 10\n"
NETWORK_VOLUME = "storage:\n  mount: /workspace\n  network_volume: {name: ckpts, size_gb: 10}\n"
CHECKPOINT = """checkpoint:
  dir: /workspace/ckpt
  interval: 1s
  keep: 3
  pull_to: ./checkpoints
  verify: python3 verify_ckpt.py {file}
"""


def job_text(
    name: str, *, storage: str = VOLUME_DISK, checkpoint: str = CHECKPOINT, state: str = "running"
) -> str:
    return f"""version: 1
name: {name}
platform: runpod
state: {state}
machine:
  gpu: [RTX4090]
  regions: [EU-RO-1]
  image: runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04
  container_disk_gb: 20
{storage}{checkpoint}run:
  sync: {{src: ., dest: /workspace/code, exclude: [checkpoints, .gpujob]}}
  command: python3 ckwriter.py
  env: {{SAVE_EVERY: "0.2", BULK_BYTES: "200000"}}
"""


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def snapshot(directory: Path) -> dict[str, str]:
    """name -> sha256 of every finished checkpoint in `directory` (a file rotated away mid-read is skipped)."""
    out: dict[str, str] = {}
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return out
    for name in names:
        if name.startswith(".") or name.endswith(".tmp"):
            continue
        try:
            out[name] = sha((directory / name).read_bytes())
        except OSError:
            continue
    return out


class DirWatch:
    """Polls a directory every 50 ms until stopped, keeping every snapshot with its time."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.history: list[tuple[float, dict[str, str]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            t = time.monotonic()
            if self.directory.is_dir():
                self.history.append((t, snapshot(self.directory)))
            self._stop.wait(POLL_S)

    @property
    def polls(self) -> int:
        return len(self.history)

    def before(self, t: float) -> dict[str, str]:
        """The last snapshot taken before time `t` (e.g. the moment the terminate call arrived)."""
        taken = [snap for when, snap in self.history if when < t]
        return taken[-1] if taken else {}

    def __enter__(self) -> DirWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


@dataclass
class CallSnapshots:
    """What was on the disk when the simulator received each pod terminate / volume delete."""

    sim: Sim
    ck_subdir: str = "ckpt"
    calls: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    times: list[float] = field(default_factory=list)  # time.monotonic() of each call

    def disk_of(self, what: str, rid: str) -> Path:
        from gpujob.sim import rp_engine

        if what == "delete-volume":
            return rp_engine.volume_dir(self.sim.engine, rid) / self.ck_subdir
        pod = self.sim.engine.state.pods[rid]
        if pod.network_volume_id:
            return rp_engine.volume_dir(self.sim.engine, pod.network_volume_id) / self.ck_subdir
        return rp_engine.pod_dir(self.sim.engine, rid) / "volume" / self.ck_subdir

    def at(self, what: str) -> tuple[float, dict[str, str]]:
        """(time, snapshot) of the first call of this kind."""
        i = next(i for i, c in enumerate(self.calls) if c[0] == what)
        return self.times[i], self.calls[i][2]

    @contextmanager
    def installed(self, monkeypatch: Any) -> Iterator[CallSnapshots]:
        from gpujob.sim import rp_engine

        terminate, delete = rp_engine.terminate, rp_engine.delete_volume

        def wrapped_terminate(sim: Any, pod_id: str) -> None:
            self.times.append(time.monotonic())
            self.calls.append(("terminate", pod_id, snapshot(self.disk_of("terminate", pod_id))))
            terminate(sim, pod_id)

        def wrapped_delete(sim: Any, vol_id: str) -> None:
            self.times.append(time.monotonic())
            self.calls.append(("delete-volume", vol_id, snapshot(self.disk_of("delete-volume", vol_id))))
            delete(sim, vol_id)

        monkeypatch.setattr(rp_engine, "terminate", wrapped_terminate)
        monkeypatch.setattr(rp_engine, "delete_volume", wrapped_delete)
        yield self


@dataclass
class Project:
    dir: Path
    env: dict[str, str]
    sim: Sim
    outputs: list[str] = field(default_factory=list)

    def gj(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        proc = run_gpujob(args, cwd=self.dir, env=self.env, timeout=timeout)
        self.outputs += [proc.stdout, proc.stderr]
        return proc

    def ok(self, *args: str) -> subprocess.CompletedProcess[str]:
        proc = self.gj(*args)
        assert proc.returncode == 0, (
            f"gpujob {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        )
        return proc

    def write_job(self, text: str) -> None:
        (self.dir / "job.yaml").write_text(text)

    def pods(self) -> list[Any]:
        """The simulator's live pods (RpPod objects)."""
        with self.sim.engine.lock:
            return [p for p in self.sim.engine.state.pods.values() if p.ended_at is None]

    def volumes(self) -> list[Any]:
        with self.sim.engine.lock:
            return [v for v in self.sim.engine.state.volumes.values() if v.ended_at is None]

    def pod(self) -> Any:
        [pod] = self.pods()
        return pod

    def ck_dir_of(self, pod: Any) -> Path:
        from gpujob.sim import rp_engine

        if pod.network_volume_id:
            return rp_engine.volume_dir(self.sim.engine, pod.network_volume_id) / "ckpt"
        return rp_engine.pod_dir(self.sim.engine, pod.id) / "volume" / "ckpt"

    def record(self, job: str) -> dict[str, Any]:
        return json.loads((self.dir / ".gpujob" / "pulls" / f"{job}.json").read_text())

    def lost(self, snap: dict[str, str], job: str) -> list[str]:
        """Files of `snap` without a verified local copy of the same bytes."""
        try:
            rec = self.record(job)
        except FileNotFoundError:
            return sorted(snap)
        verified = {f["name"]: f["sha256"] for f in rec["files"] if f["verified"]}
        out = []
        for name, digest in snap.items():
            local = self.dir / "checkpoints" / name
            if verified.get(name) != digest or not local.is_file() or sha(local.read_bytes()) != digest:
                out.append(name)
        return sorted(out)


def make_project(sim: Sim, tmp_path: Path, job: str) -> Project:
    d = tmp_path / "project"
    d.mkdir()
    shutil.copy(HERE / "data" / "ckwriter.py", d / "ckwriter.py")
    shutil.copy(QUICKSTART / "verify_ckpt.py", d / "verify_ckpt.py")
    (d / "job.yaml").write_text(job)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_")}
    env.update(sim.env)
    env.update({"CI": "true", "NO_COLOR": "1"})
    return Project(dir=d, env=env, sim=sim)


def poll(what: str, check: Callable[[], Any], deadline_s: float = 60) -> Any:
    """Wait for a condition with a deadline, checking every 50 ms."""
    end = time.monotonic() + deadline_s
    last: Any = None
    while time.monotonic() < end:
        last = check()
        if last:
            return last
        time.sleep(POLL_S)
    raise AssertionError(f"timed out after {deadline_s}s waiting for {what} (last: {last!r})")


def steps_on(directory: Path) -> list[int]:
    return sorted(int(n[5:11]) for n in snapshot(directory) if n.startswith("step_"))


def newest_is_final(directory_snapshot: dict[str, str], directory: Path | None = None) -> bool:
    """Whether the newest checkpoint in the snapshot is the run's final (SIGTERM) save, read from the
    local copy (the disk itself is gone after the call)."""
    if not directory_snapshot:
        return False
    newest = max(directory_snapshot)
    assert directory is not None
    try:
        return bool(json.loads((directory / newest).read_text()).get("final"))
    except (OSError, ValueError):
        return False
