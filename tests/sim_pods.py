"""The simulator with real pods, as the sim-marked tests start it."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gpujob.sim import podproc
from gpujob.sim.testing import Sim, running_simulator


@contextmanager
def pod_simulator(data_dir: Path, who: str, **options: Any) -> Iterator[Sim]:
    """Pods in GPUJOB_SIM_PODS's mode (auto by default; `plain` runs the same scenarios without
    namespaces), provisioned in 0.05 s and booted at once unless `options` say otherwise. Where pods
    cannot run here the test fails saying why (`who` need them); it never skips."""
    mode = os.environ.get("GPUJOB_SIM_PODS", "auto")
    try:
        podproc.choose(mode)
    except podproc.PodsUnavailable as exc:
        pytest.fail(f"{who} need the simulator's pods and cannot run here: {exc}")
    with running_simulator(
        data_dir, **{"provision_seconds": 0.05, "boot_seconds": 0.0, **options}, pod_mode=mode
    ) as s:
        yield s


@contextmanager
def fresh_account(sim: Sim) -> Iterator[Sim]:
    """One test's turn on a simulator shared by many (tests/e2e/conftest.py): the account is emptied
    before (and the test refused if anything is left: another test's pod, volume, machine, fault, key or
    process) and after, so a failed test's pods stop running and billing at once."""
    sim.reset()
    left = sim.leftovers()
    assert not left, f"the shared simulator still holds a previous test's {left}"
    try:
        yield sim
    finally:
        end_gpujob_children()  # a `gpujob watch` a test left running would act in the next test's turn
        sim.reset()


def end_gpujob_children() -> list[int]:
    """Kill the `python -m gpujob ...` processes this test process started that are still running."""
    me, ended = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(") ", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == me and argv[1:3] == [b"-m", b"gpujob"]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry), signal.SIGKILL)
                ended.append(int(entry))
    return ended
