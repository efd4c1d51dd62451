"""Shared kit for the reliability catalogue tests: canary secrets, a simulator whose every request is
recorded on the wire, job files written to disk, and the gpujob CLI run in-process or as a subprocess."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

from click.testing import CliRunner

RP_CANARY = "rpa_CANARYKEY7f3a9c1e00112233"
PS_CANARY = "ps_CANARYKEY51d0b2aa00112233"
SECRET_CANARY = "hf_CANARYSECRETd34db33f00aa"
CANARIES = (RP_CANARY, PS_CANARY, SECRET_CANARY)

IMAGE = "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04"

RUNPOD_JOB = f"""\
version: 1
name: bert
platform: runpod
machine:
  gpu: A100-80GB
  regions: [EU-RO-1]
  image: {IMAGE}
storage:
  volume_gb: 100
checkpoint:
  dir: /workspace/ckpt
  interval: 15m
run:
  command: python train.py
  secrets: [HF_TOKEN]
"""

PAPERSPACE_JOB = """\
version: 1
name: resnet
platform: paperspace
machine:
  gpu: A4000
  regions: [ny2]
  template: ml-in-a-box
  auto_shutdown: 72h
storage:
  volume_gb: 250
run:
  command: python train.py
  secrets: [HF_TOKEN]
"""


@dataclass
class Wire:
    """One request as the simulator received it."""

    platform: str
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes


@dataclass
class RecordingSim:
    sim: Any  # gpujob.sim.testing.Sim
    wire: list[Wire] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return dict(self.sim.env)

    def api_requests(self) -> list[Wire]:
        return [w for w in self.wire if not w.path.startswith("/_sim/")]

    def inject(self, fault: str, **params: Any) -> dict[str, Any]:
        return self.sim.inject(fault, **params)  # type: ignore[no-any-return]


@contextmanager
def recording_simulator(data_dir: Path, **options: Any) -> Iterator[RecordingSim]:
    """The real simulator (lifecycle only, no pod processes) with canary API keys, recording every
    request (method, path, query, headers, body) as it arrives on either port."""
    from gpujob.sim.testing import running_simulator

    options = {"pods": False, "runpod_api_key": RP_CANARY, "paperspace_api_key": PS_CANARY, **options}
    with running_simulator(data_dir, **options) as sim:
        rec = RecordingSim(sim)
        for server, platform in zip(sim.server._servers, ("runpod", "paperspace"), strict=True):
            inner = server.dispatch

            def dispatch(req: Any, _inner: Any = inner, _platform: str = platform) -> Any:
                query = urllib.parse.urlencode(req.query, doseq=True)
                rec.wire.append(Wire(_platform, req.method, req.path, query, dict(req.headers), req.raw))
                return _inner(req)

            server.dispatch = dispatch
        yield rec


def write_job(directory: Path, text: str, name: str = "job.yaml") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def cli(args: list[str], *, cwd: Path, env: Mapping[str, str]) -> Run:
    """`gpujob ARGS` in-process (click's CliRunner) with exactly this environment on top of os.environ."""
    from gpujob.cli.main import cli as group

    old = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(group, args, env=dict(env), catch_exceptions=True)
    finally:
        os.chdir(old)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Run(result.exit_code, result.stdout, result.stderr)


def subprocess_cli(args: list[str], *, cwd: Path, env: Mapping[str, str], timeout: float = 60) -> Run:
    """`python -m gpujob ARGS` as a real process."""
    full = {**os.environ, **env}
    done = subprocess.run(
        [sys.executable, "-m", "gpujob", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def canary_forms(value: str) -> list[str]:
    """The value as it could leak: plain, URL-encoded, base64 (an Authorization header dump)."""
    return [value, urllib.parse.quote(value), base64.b64encode(value.encode()).decode()[:-2]]


def leaks(texts: Iterable[str], canaries: Iterable[str] = CANARIES) -> list[str]:
    found = []
    for text in texts:
        for canary in canaries:
            for form in canary_forms(canary):
                if form in text:
                    found.append(f"{canary!r} (as {form!r}) in: {text[:200]!r}")
    return found


def files_under(root: Path, *, skip: Iterable[Path] = ()) -> list[tuple[Path, str]]:
    """Every regular file under root (bytes decoded leniently), skipping the given directories."""
    skipped = [s.resolve() for s in skip]
    out = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or any(path.resolve().is_relative_to(s) for s in skipped):
            continue
        out.append((path, path.read_bytes().decode("utf-8", "replace")))
    return out


class FastClock:
    """Virtual time for retry loops run through the CLI: every sleep is recorded and returns at once."""

    sleeps: ClassVar[list[float]] = []

    def __init__(self) -> None:
        self.t = datetime.now(UTC)

    def now(self) -> datetime:
        return self.t

    async def sleep(self, seconds: float) -> None:
        FastClock.sleeps.append(seconds)
        self.t += timedelta(seconds=seconds)
