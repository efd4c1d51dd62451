"""A cell's value reaches the queue machine as data: the files a queue places travel base64-encoded,
never inside a here-document a value could end; and no check of gpujob's is an `assert`, so
PYTHONOPTIMIZE=1 changes nothing `gpujob validate` accepts or refuses (issue #37)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpujob.layout.wrapper import queue_command
from gpujob.spec.load import load_specs
from tests.sweep.test_sweep_unit import JOB

# Every marker the old here-documents used (GPUJOB_SWEEP_EOF_<i>), alone on a line, then shell.
HOSTILE = (
    "x\n" + "".join(f"GPUJOB_SWEEP_EOF_{i}\n" for i in range(12)) + "touch $HOME/pwned\nEOF\n'\"$(id)`id`"
)


def hostile_job() -> str:
    import json

    return JOB.replace('LR: ["1e-3", "3e-4", "1e-4"]', f'LR: ["1e-3", {json.dumps(HOSTILE)}]')


def test_a_value_holding_the_old_heredoc_markers_is_placed_byte_for_byte_and_runs_no_shell(
    tmp_path: Path,
) -> None:
    mount = tmp_path / "ws"
    home = tmp_path / "home"
    home.mkdir()
    text = (
        hostile_job()
        .replace("mount: /workspace", f"mount: {mount}")
        .replace("/workspace/ckpt", f"{mount}/ck")
    )
    job = tmp_path / "job.yaml"
    job.write_text(text)
    loaded = load_specs([job])  # main: AssertionError (a bare assert was the only guard)
    assert any(HOSTILE in c.env.get("LR", "") for ls in loaded for c in ls.sweep.cells)
    for ls in loaded:
        place_only = queue_command(ls.sweep.placement, ls.sweep.n).rpartition("exec bash")[0]
        proc = subprocess.run(
            ["bash", "-c", place_only], cwd=tmp_path, capture_output=True, text=True, timeout=60,
            env={**os.environ, "HOME": str(home)},
        )  # fmt: skip
        assert proc.returncode == 0, (proc.stdout, proc.stderr)
        root = Path(ls.sweep.placement.root)
        for rel, want in ls.sweep.placement.files.items():
            if rel in ("queue.sh", f"q{ls.sweep.n}.txt") or any(
                rel == f"cells/{c.name}.env" for c in ls.sweep.cells
            ):
                assert (root / rel).read_text() == want, rel
    assert not (home / "pwned").exists()
    assert "GPUJOB_SWEEP_EOF" not in "".join(ls.spec.run.command for ls in loaded)


def _validate(job: Path, *, optimize: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONOPTIMIZE"}
    if optimize:
        env["PYTHONOPTIMIZE"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "gpujob", "validate", str(job)],
        capture_output=True, text=True, timeout=120, env=env, cwd=job.parent,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "text", "refused"),
    [
        ("hostile-value", hostile_job(), False),
        ("gpujob-name", JOB.replace("SEED:", "GPUJOB_SEED:"), True),
        ("run-env-clash", JOB.replace("SEED:", "STEPS:"), True),
        ("no-run", JOB.replace('run:\n  command: python3 cell.py\n  env: {STEPS: "4"}\n', ""), True),
    ],
)
def test_validate_under_pythonoptimize_refuses_exactly_what_the_default_run_refuses(
    tmp_path: Path, name: str, text: str, refused: bool
) -> None:
    job = tmp_path / f"{name}.job.yaml"
    job.write_text(text)
    plain, optimized = _validate(job, optimize=False), _validate(job, optimize=True)
    assert (
        "Traceback" not in plain.stderr + optimized.stderr and "Assertion" not in plain.stdout + plain.stderr
    )
    assert (optimized.returncode, optimized.stdout) == (plain.returncode, plain.stdout)
    assert plain.returncode == (1 if refused else 0), (plain.stdout, plain.stderr)
    if refused:  # file:line:col: key: message
        first = plain.stdout.splitlines()[0]
        assert re.match(rf"{re.escape(str(job))}:\d+:\d+: sweep\.", first), first
