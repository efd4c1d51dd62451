"""Issue 23: the gate protects results, not only checkpoints, against a writer outside the launcher's
process tree. The job's command starts a results writer with `setsid … &` (which then double-forks)
and runs the trainer; `outputs: {paths: [/workspace/results]}` on a RunPod volume disk. While destroy
runs with every approval, both directories are read every 50 ms on the simulated disk, and the
simulator records what they held at the moment the terminate call arrived: every checkpoint and every
result file there must have a verified local copy with the same bytes, and destroy exits 0."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpujob.sim import rp_engine
from gpujob.sim.testing import Sim
from tests.reliability.teardown_kit import (
    HERE,
    DirWatch,
    Project,
    job_text,
    make_project,
    poll,
    sha,
    snapshot,
    steps_on,
)
from tests.sim_pods import pod_simulator

pytestmark = pytest.mark.sim

OUTPUTS = "outputs:\n  paths: [/workspace/results]\n"
COMMAND = 'command: "setsid python3 results_writer.py >/dev/null 2>&1 & python3 ckwriter.py"'


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Sim]:
    with pod_simulator(tmp_path / "sim", "the outputs gate tests") as s:
        yield s


def _job(name: str) -> str:
    text = job_text(name).replace("command: python3 ckwriter.py", COMMAND)
    text = text.replace("exclude: [checkpoints, .gpujob]", "exclude: [checkpoints, outputs, .gpujob]")
    # Through the environment, so a plain sim pod (no mount namespace) maps it onto the pod's disk.
    text = text.replace('BULK_BYTES: "200000"}', 'BULK_BYTES: "200000", RESULTS_DIR: /workspace/results}')
    assert COMMAND in text and "RESULTS_DIR" in text
    return text + OUTPUTS


def _volume(p: Project) -> Path:
    return rp_engine.pod_dir(p.sim.engine, p.pod().id) / "volume"


def _at_terminate(
    monkeypatch: pytest.MonkeyPatch, dirs: list[Path]
) -> list[tuple[float, list[dict[str, str]]]]:
    """(time, snapshot of each dir) at every terminate call the simulator receives."""
    seen: list[tuple[float, list[dict[str, str]]]] = []
    terminate = rp_engine.terminate

    def wrapped(sim: Any, pod_id: str) -> None:
        seen.append((time.monotonic(), [snapshot(d) for d in dirs]))
        terminate(sim, pod_id)

    monkeypatch.setattr(rp_engine, "terminate", wrapped)
    return seen


def test_destroy_pulls_every_result_of_a_setsid_writer_present_when_the_disk_vanished(
    sim: Sim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = make_project(sim, tmp_path, _job("res"))
    shutil.copy(HERE / "data" / "results_writer.py", p.dir / "results_writer.py")
    p.ok("apply", "--auto-approve")
    volume = _volume(p)
    ck, results = volume / "ckpt", volume / "results"
    poll("6 checkpoints", lambda: (steps_on(ck) or [0])[-1] >= 6)
    poll("20 result files", lambda: len(snapshot(results)) >= 20)
    # `gpujob pull` brings the outputs too, each checked by sha256; the destroy plan then names them.
    pulled = p.ok("pull")
    assert "output file(s) into" in pulled.stdout and "each checked by sha256" in pulled.stdout, pulled.stdout
    assert len(list((p.dir / "outputs" / "workspace" / "results").glob("result_*.json"))) >= 20
    calls = _at_terminate(monkeypatch, [ck, results])

    with DirWatch(results) as watch_results, DirWatch(ck) as watch_ck:
        out = p.ok("destroy", "--auto-approve", "--approve", "res.pod.terminate")
    text = out.stdout + out.stderr

    assert len(calls) == 1, text
    t, (ck_snap, res_snap) = calls[0]
    assert ck_snap and len(res_snap) >= 20, (ck_snap, res_snap)
    assert p.lost(ck_snap, "res") == [], text
    local = p.dir / "outputs" / "workspace" / "results"
    missing = [
        n for n, d in res_snap.items() if not (local / n).is_file() or sha((local / n).read_bytes()) != d
    ]
    assert missing == [], (
        f"{len(missing)} of {len(res_snap)} result files lack a local copy: {missing[:5]}\n{text}"
    )
    # The writer got SIGTERM (its last file says so) before the final listing: after that nothing
    # wrote, as the 50 ms observers saw right up to the call.
    finals = [n for n in res_snap if '"final": true' in (local / n).read_text()]
    assert len(finals) == 1, (finals, text)
    assert watch_results.polls > 5 and watch_results.before(t) == res_snap
    assert watch_ck.before(t) == ck_snap
    assert "workload process" in text and "python3" in text, text
    assert "outputs /workspace/results on the volume disk: LOST unless pulled (last pull: " in text, text
    # The run's log came home too, and nothing secret-looking or foreign did.
    run_dir = p.dir / "outputs" / ".gpujob" / "res"
    assert "gpujob: run of res starting" in (run_dir / "run.log").read_text()
    assert not (run_dir / "launcher.sh").exists() and not (run_dir / "pid").exists()
    assert p.pods() == []
