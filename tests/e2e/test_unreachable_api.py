"""A platform API with nothing listening, end to end: `gpujob plan` and `gpujob status` run on a terminal
give up within the retry policy's bound (docs/watch.md "When a machine stops answering": 6 attempts, at
most 31 s of waits) and show each wait as it happens, then one error naming the call and the attempts.
The same with the simulator's address (loopback) fails at once: the simulator is not running."""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.e2e_support import QUICKSTART
from tests.e2e.pty_support import run_in_pty

# The retry waits (at most 1 + 2 + 4 + 8 + 16 s) plus the CLI's start on a loaded machine: generous,
# not a timing test; a silent hang or a retry loop without end would exceed it.
BOUND_S = 75.0


@pytest.fixture
def dead_port() -> Iterator[int]:
    """A port that refuses connections on every address: bound (so nothing else takes it), never listening."""
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        yield int(s.getsockname()[1])


@pytest.mark.parametrize("command", ["plan", "status"])
def test_plan_and_status_against_an_unreachable_api_fail_within_the_bound_showing_each_wait(
    tmp_path: Path, dead_port: int, command: str
) -> None:
    for name in ("job.yaml", "train.py", "verify_ckpt.py"):
        shutil.copy(QUICKSTART / name, tmp_path / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_") and k != "CI"}
    # Not a loopback address (a refused loopback one is the simulator's, which fails at once: below),
    # though the kernel routes it here: it refuses the way a platform host with its service down does.
    url = f"http://0.0.0.0:{dead_port}"
    env.update(
        GPUJOB_RUNPOD_API_URL=f"{url}/v2",
        GPUJOB_RUNPOD_GRAPHQL_URL=f"{url}/graphql",
        RUNPOD_API_KEY="rpa_unreachable_test_key",
        NO_COLOR="1",
    )
    started = time.monotonic()
    code, raw = run_in_pty([command], tmp_path, env, timeout=BOUND_S + 60)
    elapsed, out = time.monotonic() - started, raw.decode(errors="replace")
    assert code == 1 and elapsed < BOUND_S, (elapsed, out)
    # On a terminal, each wait is one line as it starts: what failed, how long, which attempt comes;
    # the reads that fail together share it (not one line per read).
    waits = [line for line in out.splitlines() if line.startswith("RunPod API: cannot connect, retrying in ")]
    attempts = [w.rsplit("(", 1)[1].strip() for w in waits]
    assert sorted(set(attempts)) == [f"attempt {n}/6)" for n in range(2, 7)], out
    assert len(waits) < 10, out  # several reads fail at once: about one line per wait, not per read
    assert "cannot connect (ConnectError); gave up after 6 attempt(s) in" in out, out
    assert "the platform is overloaded or unreachable" in out, out


def test_status_with_the_simulator_stopped_but_its_environment_set_fails_at_once(tmp_path: Path) -> None:
    """The simulator's environment left behind after `gpujob sim down` (or a reboot): no retries, no
    "overloaded or unreachable", but what is wrong and the two ways out."""
    from gpujob.sim.testing import running_simulator

    for name in ("job.yaml", "train.py", "verify_ckpt.py"):
        shutil.copy(QUICKSTART / name, tmp_path / name)
    with running_simulator(tmp_path / "sim", pods="plain") as sim:
        sim_env = dict(sim.env)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_") and k != "CI"}
    env.update(sim_env, NO_COLOR="1")
    started = time.monotonic()
    code, raw = run_in_pty(["status"], tmp_path, env, timeout=60)
    elapsed, out = time.monotonic() - started, raw.decode(errors="replace")
    assert code == 1 and elapsed < 10, (elapsed, out)
    assert "the simulator is not running" in out and "`gpujob sim up`" in out, out
    assert "`unset GPUJOB_PAPERSPACE_API_URL GPUJOB_RUNPOD_API_URL GPUJOB_RUNPOD_GRAPHQL_URL`" in out, out
    assert "retrying" not in out and "overloaded" not in out, out
