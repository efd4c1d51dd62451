"""The starter's checkpoint load check (gpujob/starter/verify_ckpt.py), the verifier `gpujob init` writes
into a new repo and the teardown gate runs on every pulled file: it passes a complete training state past
step 0 and fails, with the reason on stderr, whatever a resume could not use."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpujob.starter import verify_ckpt

SCRIPT = Path(verify_ckpt.__file__)
GOOD: dict[str, Any] = {
    "format": "gpujob-starter-v1",
    "step": 40,
    "model": {"w": [0.5]},
    "optimizer": {"lr": 0.01},
    "rng": [1, 2, 3],
    "loss": 0.25,
}


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "ckpt-000040.json"
    path.write_text(body)
    return path


def test_a_complete_state_past_step_0_passes_and_says_its_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, json.dumps(GOOD))
    assert verify_ckpt.main(str(path)) == 0
    assert capsys.readouterr().out == f"{path}: ok, step 40, loss 0.250000\n"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"optimizer": None}, "incomplete state, missing optimizer"),
        ({"rng": None, "model": None}, "incomplete state, missing model, rng"),
        ({"format": "other-v2"}, "not a gpujob-starter-v1 checkpoint past step 0"),
        ({"step": 0}, "not a gpujob-starter-v1 checkpoint past step 0"),
        ({"loss": float("nan")}, "loss is nan"),
        ({"loss": float("inf")}, "loss is inf"),
    ],
)
def test_a_state_a_resume_could_not_use_fails_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], reason: str
) -> None:
    state = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    path = _write(tmp_path, json.dumps(state))
    assert verify_ckpt.main(str(path)) == 1
    assert capsys.readouterr().err == f"{path}: {reason}\n"


def test_a_torn_file_cannot_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, json.dumps(GOOD)[:-9])  # a copy cut short, as a dropped pull leaves it
    assert verify_ckpt.main(str(path)) == 1
    assert capsys.readouterr().err.startswith(f"{path}: cannot load: ")


def test_as_the_gate_runs_it_the_exit_code_is_the_verdict(tmp_path: Path) -> None:
    good = _write(tmp_path, json.dumps(GOOD))
    ok = subprocess.run([sys.executable, str(SCRIPT), str(good)], capture_output=True, text=True)
    bad = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "gone.json")], capture_output=True, text=True
    )
    usage = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert (ok.returncode, bad.returncode, usage.returncode) == (0, 1, 2)
    assert "cannot load" in bad.stderr
