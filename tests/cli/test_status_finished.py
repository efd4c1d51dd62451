"""`gpujob status` on a machine that is stopped because its run is finished says so, instead of
'`gpujob apply` starts it again' (which apply would not: the plan says No changes). Seen on a drained
sweep queue after `gpujob watch` pulled its cells and stopped it."""

from __future__ import annotations

from pathlib import Path

from gpujob.cli.cmd_status import _lines, stopped_run
from gpujob.spec.load import load_specs
from tests.plan.plan_helpers import pod
from tests.sweep.test_sweep_unit import JOB, write


def test_a_drained_queue_shows_finished_and_an_unfinished_one_is_not_known(tmp_path: Path) -> None:
    q1, q2 = load_specs([write(tmp_path, JOB)])
    for c in q1.sweep.cells:
        d = tmp_path / "outputs" / c.name
        d.mkdir(parents=True)
        (d / "gpujob-cell.txt").write_text(f"cell={c.name}\nexit=0\nstarts=1\nqueue=q1\n")
    stopped = pod(status="stopped", raw_status="EXITED")
    run = stopped_run(q1, stopped)
    assert run is not None and run["state"] == "finished", run
    row = {"job": "abl--q1", "platform": "runpod", "desired": "running", "machine": None, "run": run}
    text = "\n".join(_lines(row))
    assert "run:       finished, exit code 0 (every cell of queue q1 is done and pulled" in text, text
    assert "gpujob apply" not in text
    assert stopped_run(q2, stopped) is None  # q2's cells are not pulled: status says what it knows
