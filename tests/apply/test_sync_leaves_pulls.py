"""What gpujob pulled (checkpoint.pull_to, outputs.pull_to) is data: a launch's sync never sends it back to
the machine with the code, whether or not a .gitignore names it; a folder of the same name elsewhere in
the code is code; a negation in run.sync.exclude still sends it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpujob.apply.runtime import sync_patterns
from gpujob.spec.load import load_spec
from gpujob.ssh.ignore import walk
from tests.plan.plan_helpers import RUNPOD_JOB

TREE = [
    "train.py",
    "checkpoints/step_100.pt",
    "outputs/metrics.json",
    "models/checkpoints/loader.py",  # code that happens to be called checkpoints
    "out dir[1]/x.bin",
]


def _sent(tmp_path: Path, text: str, src: str = ".") -> list[str]:
    job = tmp_path / "job.yaml"
    job.write_text(text)
    spec = load_spec(job).spec
    for rel in TREE:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    return sorted(e.rel for e in walk(tmp_path / src, sync_patterns(spec)) if e.rel != "job.yaml")


def _job(ck_pull: str = "./checkpoints", extra: str = "") -> str:
    assert "checkpoint:\n" in RUNPOD_JOB and "run:\n  command: python train.py\n" in RUNPOD_JOB
    text = RUNPOD_JOB.replace("checkpoint:\n", f"checkpoint:\n  pull_to: {ck_pull}\n", 1)
    return text.replace("run:\n  command: python train.py\n", "run:\n  command: python train.py\n" + extra, 1)


def test_the_pulled_checkpoints_and_outputs_stay_home(tmp_path: Path) -> None:
    assert _sent(tmp_path, _job()) == ["models/checkpoints/loader.py", "out dir[1]/x.bin", "train.py"]


def test_a_pull_to_with_glob_characters_is_left_out_as_itself(tmp_path: Path) -> None:
    sent = _sent(tmp_path, _job(ck_pull="'./out dir[1]'"))
    assert "out dir[1]/x.bin" not in sent and "checkpoints/step_100.pt" in sent, sent


def test_a_pull_to_outside_the_synced_tree_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "checkpoints").mkdir()
    (tmp_path / "code" / "checkpoints" / "keep.py").write_text("x")
    text = _job().replace(
        "run:\n  command: python train.py\n", "run:\n  command: python train.py\n  sync: {src: code}\n", 1
    )
    assert _sent(tmp_path, text, src="code") == ["checkpoints/keep.py"]


@pytest.mark.parametrize("negation", ["'!/checkpoints/'"])
def test_a_negation_in_the_excludes_still_sends_them(tmp_path: Path, negation: str) -> None:
    sent = _sent(tmp_path, _job(extra=f"  sync: {{exclude: [{negation}]}}\n"))
    assert "checkpoints/step_100.pt" in sent and "outputs/metrics.json" not in sent, sent
