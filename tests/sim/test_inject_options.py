"""`gpujob sim inject`: an option the fault does not take is refused (CLI and simulator), and the help
lists one fault per line with its options."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
from pathlib import Path

import pytest

from gpujob.sim.fault_options import FAULTS, OPTIONS
from gpujob.sim.testing import running_simulator


def gj_sim(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpujob", "sim", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_the_cli_refuses_an_unknown_option_naming_the_valid_ones(tmp_path: Path) -> None:
    env = {**os.environ, "GPUJOB_SIM_DIR": str(tmp_path / "none")}  # refused before any simulator is asked
    out = gj_sim("inject", "preempt", "--podid", "pod1", env=env)
    assert out.returncode == 1
    assert "preempt has no option --podid; it takes --pod-id, --grace, --seconds" in out.stderr
    assert "not running" not in out.stderr
    bare = gj_sim("inject", "low_balance", "--count", "2", env=env)
    assert bare.returncode == 1 and "low_balance has no option --count; it takes no options" in bare.stderr


def test_the_simulator_refuses_unknown_keys_and_keeps_the_known(tmp_path: Path) -> None:
    with running_simulator(tmp_path / "sim", pods=False) as sim:
        with pytest.raises(urllib.error.HTTPError) as err:
            sim.inject("capacity", gpu="A40", regoin="EU-RO-1")
        assert err.value.code == 400
        assert "capacity has no option --regoin" in err.value.read().decode()
        assert sim.control("faults")["active"] == []  # nothing was queued
        queued = sim.inject("capacity", gpu="A40", region="EU-RO-1", count=2)
        assert queued["active"] == [
            {"fault": "capacity", "count": 2, "gpu": "A40", "region": "EU-RO-1", "status": 500,
             "seconds": 0.0, "public_port": True, "factor": 1.0}
        ]  # fmt: skip


def test_help_lists_each_fault_on_its_own_line_with_its_options(tmp_path: Path) -> None:
    text = gj_sim("inject", "--help", env=dict(os.environ)).stdout
    lines = text.splitlines()
    for name in FAULTS:
        at = next(i for i, line in enumerate(lines) if line.split()[:1] == [name])
        flags = " ".join(f"--{o.replace('_', '-')}" for o in OPTIONS[name][0])
        if flags:
            assert lines[at + 1].strip() == flags, (name, lines[at : at + 2])
    assert any(line.strip() == "gpujob sim inject capacity --count 2 --gpu A40" for line in lines)
    assert max(map(len, lines)) <= 120  # nothing rewrapped by click


def test_the_not_running_hint_starts_the_simulator(tmp_path: Path) -> None:
    from tests.e2e.hint_support import printed_hints, run_hint

    env = {**os.environ, "GPUJOB_SIM_DIR": str(tmp_path / "simd")}
    off = gj_sim("inject", "preempt", env=env)
    assert off.returncode == 1 and "not running" in off.stderr
    (start,) = printed_hints(off)
    assert start == "gpujob sim up"
    try:
        run_hint(start, tmp_path, env)
        assert gj_sim("inject", "preempt", env=env).returncode == 0  # it runs now
    finally:
        assert gj_sim("down", env=env).returncode == 0
