"""End-to-end fixtures: the real simulator (real sshd pods, real files, real processes) and the
`gpujob` CLI run as subprocesses in a copy of examples/quickstart.

These tests never skip: when the simulator cannot run its pods here, they fail and say why.

One simulator per xdist worker serves every test that asks for `sim` (tests run one at a time in a
worker): before each test it is reset to an empty account on a fresh clock with its starting options,
and the test starts only once `leftovers()` is empty, so no test sees another's pods, volumes, machines,
faults or bill. Each test has its own project directory (its own state and project id). A test that needs
other simulator options builds its own with pod_simulator (tests/sim_pods.py).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpujob.sim.testing import Sim
from tests.e2e.e2e_support import CANARY, CANARY_NAME, QUICKSTART, Project
from tests.sim_pods import fresh_account, pod_simulator


@pytest.fixture(scope="session")
def shared_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    with pod_simulator(tmp_path_factory.mktemp("sim"), "the end-to-end tests", preempt_grace=0.5) as s:
        yield s


@pytest.fixture
def sim(shared_sim: Sim) -> Iterator[Sim]:
    with fresh_account(shared_sim) as s:
        yield s


@pytest.fixture
def project(sim: Sim, tmp_path: Path) -> Project:
    d = tmp_path / "quickstart"
    d.mkdir()
    for name in ("train.py", "verify_ckpt.py"):
        shutil.copy(QUICKSTART / name, d / name)
    text = (QUICKSTART / "job.yaml").read_text()
    # A longer run, so it is still going when the preemption comes; a secret to track.
    text = text.replace('TOTAL_STEPS: "600"', 'TOTAL_STEPS: "3000"').replace(
        'STEP_SECONDS: "0.1"', 'STEP_SECONDS: "0.05"'
    )
    text = text.replace("  caches: durable\n", f"  caches: durable\n  secrets: [{CANARY_NAME}]\n")
    (d / "job.yaml").write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_")}
    env.update(sim.env)
    env.update({CANARY_NAME: CANARY, "CI": "true", "NO_COLOR": "1"})
    return Project(dir=d, env=env, sim=sim)
