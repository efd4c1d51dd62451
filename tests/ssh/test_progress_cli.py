"""Piped `gpujob apply` / `gpujob pull` against the simulator: plain lines only, a few per transfer."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpujob.sim.podproc import namespaces_available
from gpujob.sim.testing import Sim, running_simulator
from tests.e2e.e2e_support import QUICKSTART, Project, poll

pytestmark = pytest.mark.sim


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    ok, why = namespaces_available()
    if not ok:
        pytest.fail(f"this test needs the simulator's pods (namespaces, sshd): {why}")
    with running_simulator(tmp_path / "sim", provision_seconds=0.05, boot_seconds=0.0) as sim:
        yield _project(sim, tmp_path / "quickstart")


def _project(sim: Sim, d: Path) -> Project:
    d.mkdir()
    for name in ("job.yaml", "train.py", "verify_ckpt.py"):
        shutil.copy(QUICKSTART / name, d / name)
    (d / "weights.bin").write_bytes(os.urandom(3_000_000))  # a sync large enough for quarter lines
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_") and k != "NO_COLOR"}
    # A colour-capable terminal type and no NO_COLOR: only the pipe itself keeps the output plain.
    env.update(sim.env, CI="true", TERM="xterm-256color")
    return Project(dir=d, env=env, sim=sim)


def test_piped_apply_and_pull_print_plain_bounded_lines(project: Project) -> None:
    p = project
    applied = p.gj("apply", "--auto-approve")
    assert "Apply finished: 3 done, 0 failed" in applied.stderr  # after the step log (#41)
    sync_lines = [line for line in applied.stderr.splitlines() if "quickstart: sync: " in line]
    assert 2 <= len(sync_lines) <= 6, applied.stderr
    assert sync_lines[0].endswith("MB to transfer") and " MB in " in sync_lines[-1]

    poll("a checkpoint", lambda: "step_" in p.gj("ssh", "--", "ls", "/workspace/ckpt", check=False).stdout)
    pulled = p.gj("pull")
    assert "all verified" in pulled.stdout
    pull_lines = [line for line in pulled.stderr.splitlines() if "quickstart: pull: " in line]
    assert 1 <= len(pull_lines) <= 6, pulled.stderr
    assert " in " in pull_lines[-1] and "B/s)" in pull_lines[-1]  # size, time and rate

    for out in p.outputs:
        assert "\x1b" not in out and "\r" not in out  # no colour, no cursor movement, no redraws
