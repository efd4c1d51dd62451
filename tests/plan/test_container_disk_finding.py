"""RP11 at plan time: a setup that installs packages onto a small RunPod container disk."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gpujob.disks.findings import installs_packages
from gpujob.plan.planner import build_plan
from tests.plan.plan_helpers import NOW, RUNPOD_JOB, live

Write = Callable[..., object]


def rp11(write_job: Write, disk: int, setup: str | None) -> list[str]:
    text = RUNPOD_JOB.replace("container_disk_gb: 20", f"container_disk_gb: {disk}")
    if setup is not None:
        text = text.replace("  command: python train.py\n", f"  command: python train.py\n  setup: {setup}\n")
    plan = build_plan([write_job(text)], live(), now=NOW, env={})  # type: ignore[list-item]
    return [f.summary for f in plan.jobs[0].findings if f.code == "RP11"]


def test_a_5gb_container_disk_under_a_pip_install_setup_gets_rp11(write_job: Write) -> None:
    found = rp11(write_job, 5, "pip install -r requirements.txt")
    assert len(found) == 1 and "pip install" in found[0] and "5 GB" in found[0]


def test_no_rp11_for_a_roomy_disk_or_a_setup_that_installs_nothing(write_job: Write) -> None:
    assert rp11(write_job, 50, "pip install -r requirements.txt") == []
    assert rp11(write_job, 5, "mkdir -p /workspace/data") == []
    assert rp11(write_job, 5, None) == []


@pytest.mark.parametrize(
    ("setup", "found"),
    [
        ("pip install -r requirements.txt", "pip install"),
        ("python3 -m pip install --upgrade torch", "python3 -m pip install"),
        ("apt-get update && apt-get -y install ffmpeg", "apt-get -y install"),
        ("conda env create -f env.yml", "conda env create"),
        ("uv sync", "uv sync"),
        ("echo pipinstall", None),
        ("ls /workspace", None),
    ],
)
def test_what_counts_as_installing(setup: str, found: str | None) -> None:
    assert installs_packages(setup) == found
