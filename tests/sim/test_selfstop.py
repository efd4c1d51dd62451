"""The simulator's in-pod runpodctl: a token good for one pod only, never the account key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpujob.sim import selfstop
from gpujob.sim.engine import SimError


def test_a_token_stops_only_its_own_pod() -> None:
    calls: list[object] = []
    sim = SimpleNamespace(self_stop_secret="s3cret", spawn=lambda fn: calls.append(fn))
    good = selfstop.token("s3cret", "runpod", "pod-a")
    assert selfstop.handle(sim, {"platform": "runpod", "id": "pod-a", "token": good}) == {"stopping": "pod-a"}
    assert len(calls) == 1
    with pytest.raises(SimError) as err:
        selfstop.handle(sim, {"platform": "runpod", "id": "pod-b", "token": good})
    assert err.value.status == 403 and len(calls) == 1
    with pytest.raises(SimError):
        selfstop.handle(sim, {"platform": "paperspace", "id": "pod-a", "token": good})


def test_the_tool_refuses_another_pod_and_holds_no_account_key(tmp_path: Path) -> None:
    selfstop.write_tools(tmp_path, "http://127.0.0.1:9", "runpod", "pod-a", "s3cret")
    tool = tmp_path / "bin" / "runpodctl"
    text = tool.read_text()
    assert "sim-runpod-key" not in text and "s3cret" not in text
    other = subprocess.run(
        [sys.executable, str(tool), "stop", "pod", "pod-b"], capture_output=True, text=True
    )
    assert other.returncode == 1 and "cannot stop pod pod-b" in other.stderr
    usage = subprocess.run([sys.executable, str(tool), "get", "pod"], capture_output=True, text=True)
    assert usage.returncode == 2
