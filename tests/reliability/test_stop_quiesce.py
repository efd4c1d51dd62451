"""A plain stop lets every process of the job save, not only the run's tree: a helper that left the
launcher's tree (double fork, its own session, setsid) and writes its result to the durable mount on
SIGTERM, slowly and atomically (about 1.5 s, then a rename). `gpujob apply` to `state: stopped` in the
simulator (real sshd pods, whose own stop kills at once: stop_grace 0) must leave that file complete at
the moment the stop call arrives. A helper that outlives SIGTERM gets the job's grace, is killed after
it, and the stop still happens, with the apply's outcome naming it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpujob.plan.cadence import QUIESCE_GRACE_S
from gpujob.sim import podproc, rp_engine
from gpujob.sim.testing import Sim, running_simulator
from tests.reliability.teardown_kit import HERE, Project, job_text, make_project, poll, steps_on

pytestmark = pytest.mark.sim

COMMAND = 'command: "python3 slow_saver.py; python3 ckwriter.py"'


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Sim]:
    mode = os.environ.get("GPUJOB_SIM_PODS", "auto")
    try:
        podproc.choose(mode)
    except podproc.PodsUnavailable as exc:
        pytest.fail(f"the stop quiesce tests need the simulator's pods and cannot run here: {exc}")
    with running_simulator(tmp_path / "sim", provision_seconds=0.05, boot_seconds=0.0, pod_mode=mode) as s:
        yield s


def _job(name: str, mode: str, state: str = "running") -> str:
    text = job_text(name, state=state).replace("command: python3 ckwriter.py", COMMAND)
    # Through the environment, so a plain sim pod (no mount namespace) maps it onto the pod's disk.
    text = text.replace(
        'BULK_BYTES: "200000"}', f'BULK_BYTES: "200000", OUT_DIR: /workspace/results, SAVER_MODE: {mode}}}'
    )
    assert COMMAND in text and "SAVER_MODE" in text
    return text


def _files(d: Path) -> dict[str, str]:
    out = {}
    for p in sorted(d.glob("*")) if d.is_dir() else []:
        try:
            out[p.name] = p.read_text()
        except OSError:
            continue
    return out


def _alive(job: str) -> list[int]:
    """Host pids of the live processes carrying GPUJOB_JOB=<job> and a SAVER_MODE: the helper."""
    out = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            env = (d / "environ").read_bytes().split(b"\0")
            zombie = (d / "stat").read_text().rpartition(")")[2].split()[0] == "Z"
        except (OSError, IndexError):
            continue
        if (
            f"GPUJOB_JOB={job}".encode() in env
            and any(e.startswith(b"SAVER_MODE=") for e in env)
            and not zombie
        ):
            out.append(int(d.name))
    return out


def _at_stop(
    monkeypatch: pytest.MonkeyPatch, results: Path, job: str
) -> list[tuple[float, dict[str, str], list[int]]]:
    """(wall time, every file of the results dir, the helper's live pids) at each pod stop call the
    simulator receives, before the simulator kills what runs in the pod."""
    seen: list[tuple[float, dict[str, str], list[int]]] = []
    stop = rp_engine.stop

    def wrapped(sim: Any, pod_id: str, **kw: Any) -> Any:
        seen.append((time.time(), _files(results), _alive(job)))
        return stop(sim, pod_id, **kw)

    monkeypatch.setattr(rp_engine, "stop", wrapped)
    return seen


def _started(sim: Sim, tmp_path: Path, name: str, mode: str) -> tuple[Project, Path]:
    p = make_project(sim, tmp_path, _job(name, mode))
    shutil.copy(HERE / "data" / "slow_saver.py", p.dir / "slow_saver.py")
    p.ok("apply", "--auto-approve")
    volume = rp_engine.pod_dir(p.sim.engine, p.pod().id) / "volume"
    results = volume / "results"
    ready = json.loads(poll("the helper's ready file", lambda: _files(results).get("ready")))
    assert ready["mode"] == mode and ready["sid"] == ready["pid"]  # its own session, not the run's
    poll("a heartbeat", lambda: "beat" in _files(results))
    assert _alive(name), (
        "the helper is not visible from here: the checks at the stop call would prove nothing"
    )
    poll("the run's first checkpoint", lambda: steps_on(volume / "ckpt"))
    return p, results


def test_a_plain_stop_lets_a_setsid_helper_finish_its_slow_atomic_write(
    sim: Sim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p, results = _started(sim, tmp_path, "saver", "save")
    p.write_job(_job("saver", "save", state="stopped"))
    plan = p.ok("plan").stdout
    assert "saver.pod.stop" in plan and "first: SIGTERM to the run and every helper of job saver" in plan, (
        plan
    )
    calls = _at_stop(monkeypatch, results, "saver")

    out = p.ok("apply", "--auto-approve")
    text = out.stdout + out.stderr

    assert len(calls) == 1, text
    _, files, alive = calls[0]
    assert alive == [], alive
    assert "eval.json" in files and "eval.json.tmp" not in files, (sorted(files), text)
    result = json.loads(files["eval.json"])  # complete: it parses, all chunks, its checksum holds
    assert len(result["chunks"]) == 15
    assert hashlib.sha256("".join(result["chunks"]).encode()).hexdigest() == result["sha256"]
    assert "workload process(es) exited after SIGTERM: python3" in text, text
    assert p.pod().status == "EXITED"


def test_a_helper_that_outlives_sigterm_is_killed_after_the_grace_and_the_stop_happens(
    sim: Sim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p, results = _started(sim, tmp_path, "stubborn", "stubborn")
    p.write_job(_job("stubborn", "stubborn", state="stopped"))
    calls = _at_stop(monkeypatch, results, "stubborn")

    out = p.ok("apply", "--auto-approve")
    text = out.stdout + out.stderr

    assert len(calls) == 1, text
    _, files, alive = calls[0]
    term, last_beat = float(files["sigterm"]), float(files["beat"])
    assert last_beat - term >= QUIESCE_GRACE_S - 1, (term, last_beat)  # it had its whole grace
    assert alive == [], alive  # and gpujob's SIGKILL ended it before the stop call
    assert "workload process(es) stopped (SIGKILL after the grace): python3" in text, text
    assert p.pod().status == "EXITED"
