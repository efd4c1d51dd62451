"""A sweep queue's launch shows what runs: each cell's command with its values (shell-quoted and safe for
the terminal) and the per-cell checkpoint dir it resumes from, not the sweep's shared checkpoint root
(#41)."""

from __future__ import annotations

from pathlib import Path

from gpujob.layout.shown import cell_lines
from gpujob.spec.load import load_specs
from tests.sweep.test_sweep_unit import JOB, write


def test_each_cell_shows_its_command_values_and_checkpoint_dir(tmp_path: Path) -> None:
    loaded = load_specs([write(tmp_path, JOB)])
    q1 = loaded[0].sweep
    lines = cell_lines(q1)
    assert len(lines) == len(q1.cells) == 3
    first = q1.cells[0]
    assert lines[0] == (
        f"cell {first.name}: LR=1e-3 SEED=1 `python3 cell.py`; resumes from the latest checkpoint in "
        f"/workspace/ckpt/{first.name}"
    )


def test_values_are_quoted_and_escaped(tmp_path: Path) -> None:
    text = JOB.replace('LR: ["1e-3", "3e-4", "1e-4"]', 'LR: ["a b", "x\\u001b[31my"]')
    lines = [line for q in load_specs([write(tmp_path, text)]) for line in cell_lines(q.sweep)]
    assert any("LR='a b' SEED=1" in line for line in lines), lines
    assert not any("\x1b" in line for line in lines), lines  # a terminal escape is shown, never sent
