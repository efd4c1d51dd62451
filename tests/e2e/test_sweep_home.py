"""A sweep ends when its results are home (issue 37): six cells on two spot pods, one preempted, under
`gpujob watch`, with a checkpoint file that the load check refuses until the user fixes it. The final
pull of a drained queue fails on it; the queue's machine must not stop meanwhile (its disk is where the
files are), the event names the file and what the check said, the cells' results come home all the
same, and once the check passes the machines stop and watch ends with all six results pulled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpujob.sim.testing import Sim
from tests.e2e.e2e_support import poll
from tests.e2e.sweep_support import gj, pods, start_watch, sweep_project
from tests.e2e.test_sweep import JOB, _mid_queue

pytestmark = [pytest.mark.sim, pytest.mark.ssh]

# A cell that also keeps a state.json beside its step checkpoints, and a load check that refuses it
# until `fixed` exists beside the job file (the user's fix of the check, made while watch runs).
STATE = (
    '    print(f"{cell} step {step}", flush=True)\n'
    '    with open(os.path.join(ck, "state.json"), "w") as f:\n'
    '        json.dump({"step": step}, f)\n'
)
CHECK = """import os, sys
if sys.argv[1].endswith("state.json") and not os.path.exists("fixed"):
    print("state.json: not a checkpoint this check knows", file=sys.stderr)
    sys.exit(1)
"""


def test_a_drained_queue_whose_final_pull_fails_keeps_its_machine_until_every_result_is_home(
    sim: Sim, tmp_path: Path
) -> None:
    job = JOB.replace('verify: "python3 -m json.tool {file}"', 'verify: "python3 check.py {file}"')
    d, env = sweep_project(sim, tmp_path, job)
    cell = (d / "cell.py").read_text()
    (d / "cell.py").write_text(cell.replace('    print(f"{cell} step {step}", flush=True)\n', STATE))
    (d / "check.py").write_text(CHECK)
    log = d / "watch.log"
    with log.open("w") as out:
        watch = start_watch(d, env, out)
        try:
            victim = poll("a queue pod in the middle of its queue", lambda: _mid_queue(sim), 120, 0.2)
            assert sim.inject("preempt", pod_id=victim)["preempted"]
            failed = poll("a failed final pull", lambda: _failed_final(log), 180, 0.2)
            # the file and what the check said, and the machine that holds it still running
            assert "state.json" in failed and "not a checkpoint this check knows" in failed, failed
            queue = failed.split()[2]
            running = [p["name"] for p in pods(sim) if p["status"] == "RUNNING"]
            assert any(n.startswith(f"gpujob-{queue}--") for n in running), (running, log.read_text())
            assert "finishing" not in _lines(log, queue), log.read_text()
            (d / "fixed").write_text("")
            watch.wait(timeout=240)
        finally:
            watch.kill()
    text = log.read_text()
    assert watch.returncode == 0, text
    results = sorted(p.parent.name for p in (d / "outputs").glob("*/result.json"))
    assert len(results) == 6, (results, text)
    assert {json.loads((d / "outputs" / c / "result.json").read_text())["cell"] for c in results} == set(
        results
    )
    assert len(list((d / "checkpoints").glob("*/state.json"))) == 6, text
    assert [p["name"] for p in pods(sim) if p["status"] == "RUNNING"] == [], text
    assert text.count("  finished: the run exited 0") == 2, text

    # `gpujob pull` of the stopped queues (issue 37): everything came home before the stops, so it
    # starts nothing and says so; a result lost here since is fetched by starting its queue's pod for
    # the pull, which is stopped again.
    states = {p["id"]: p["status"] for p in pods(sim)}
    again = gj(d, env, "pull")
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stderr.count("nothing to pull: gpujob-abl--q") == 2, again.stderr
    assert {p["id"]: p["status"] for p in pods(sim)} == states and "starting" not in again.stderr
    lost = d / "outputs" / results[0] / "result.json"
    lost.unlink()
    fetched = gj(d, env, "pull")
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    assert json.loads(lost.read_text())["cell"] == results[0]
    assert fetched.stderr.count("starting gpujob-abl--q") == 1, fetched.stderr
    assert fetched.stderr.count("nothing to pull") == 1, fetched.stderr
    assert [p["name"] for p in pods(sim) if p["status"] == "RUNNING"] == [], fetched.stderr


def _lines(log: Path, job: str) -> str:
    return "\n".join(line for line in log.read_text().splitlines() if f"  {job}  " in line)


def _failed_final(log: Path) -> str | None:
    """The first pull-failed event of a final pull (a drained queue's, before its machine stops)."""
    for line in log.read_text().splitlines():
        if "pull-failed" in line and "state.json" in line:
            return line
    return None
