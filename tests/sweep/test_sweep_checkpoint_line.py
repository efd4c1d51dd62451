"""A queue's 'last checkpoint' (status, plan, watch's stall and pull decisions) is its own cells'
newest, read for real in bash: on a shared network volume every queue's cells share checkpoint.dir,
and another queue's newer checkpoint once showed as this queue's progress."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gpujob.spec.load import load_specs
from gpujob.ssh.launcher import newest_checkpoint
from tests.sweep.test_sweep_unit import JOB, write


def _newest(spec: object, ck: Path) -> str:
    out = subprocess.run(
        ["bash", "-c", newest_checkpoint(spec)], cwd=ck, capture_output=True, text=True, check=True
    )  # type: ignore[arg-type]
    return out.stdout.strip().partition(" ")[2]


def test_a_queue_sees_only_its_own_cells_checkpoints(tmp_path: Path) -> None:
    loaded = load_specs([write(tmp_path, JOB)])
    q1, q2 = loaded[0], loaded[1]
    ck = tmp_path / "ckpt"
    mine, theirs = q1.sweep.cells[0].name, q2.sweep.cells[0].name
    for cell, t in ((mine, 1000), (theirs, 2000)):
        (ck / cell).mkdir(parents=True)
        f = ck / cell / "step_00000010.json"
        f.write_text("{}")
        os.utime(f, (t, t))
    (ck / mine / "step_00000011.json.tmp").write_text("")  # a write in progress is not a checkpoint
    assert _newest(q1.spec, ck) == f"{mine}/step_00000010.json"
    assert _newest(q2.spec, ck) == f"{theirs}/step_00000010.json"
    # a plain job still sees its whole checkpoint.dir
    plain = load_specs([write(tmp_path, JOB.split("sweep:")[0])])[0].spec
    assert _newest(plain, ck) == f"{theirs}/step_00000010.json"
