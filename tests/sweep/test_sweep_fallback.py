"""`sweep:` with `fallback:` (docs/sweeps.md, "With fallback:"): each queue is what moves. The carry
(gpujob.failover.queue_carry): the records of the cells it finished, as pulled home with their results,
become the wrapper's never-run-again records on the new machine (run for real in bash: the wrapper
skips them), and each cell left carries its own newest verified checkpoint; the plan's move says so per
queue. Validation accepts the combination and refuses what a move cannot carry, at file:line:key,
with or without PYTHONOPTIMIZE (no assert guards it)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpujob.failover.queue_carry import plan_lines, queue_carry, records_command
from gpujob.layout.wrapper import RECORD, place
from gpujob.live import LiveResource, LiveState
from gpujob.plan.records import PulledFile, PullRecord
from gpujob.spec.load import load_specs
from tests.failover.test_choice import RP_GPUS, _out
from tests.sweep.test_sweep_unit import JOB

FALLBACK = """fallback:
  - platform: paperspace
    machine: {gpu: [A4000], regions: [ny2], template: ubuntu-22.04}
    storage: {volume_gb: 50, mount: /workspace}
"""
CONTINUOUS = JOB.replace('verify: "true {file}"}', 'verify: "true {file}", pull: continuous}')
NOW = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)


def _queues(tmp_path: Path, text: str = CONTINUOUS + FALLBACK) -> list:
    (tmp_path / "job.yaml").write_text(text)
    return [dataclasses.replace(ls, project="testproj") for ls in load_specs([tmp_path / "job.yaml"])]


def _finish(tmp_path: Path, cell: str, code: int = 0) -> None:
    d = tmp_path / "outputs" / cell
    d.mkdir(parents=True)
    (d / RECORD).write_text(f"cell={cell}\nexit={code}\nstarts=1\nqueue=q1\n")


def _checkpoint(tmp_path: Path, name: str, *, verified: bool = True) -> PulledFile:
    f = tmp_path / "checkpoints" / name
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(name)
    sha = hashlib.sha256(f.read_bytes()).hexdigest()
    return PulledFile(
        name=name, size=f.stat().st_size, sha256=sha, remote_sha256=sha, verified=verified, at=NOW
    )


def test_a_queue_carries_the_records_home_and_each_cell_left_its_own_newest_verified_checkpoint(
    tmp_path: Path,
) -> None:
    q1 = _queues(tmp_path)[0]
    cells = [c.name for c in q1.sweep.cells]
    assert len(cells) == 3
    _finish(tmp_path, cells[0])
    files = [
        _checkpoint(tmp_path, f"{cells[0]}/step_0004.json"),  # a finished cell's: not carried
        _checkpoint(tmp_path, f"{cells[1]}/step_0002.json"),
        _checkpoint(tmp_path, f"{cells[1]}/step_0003.json", verified=False),  # refused by verify
    ]
    record = PullRecord.model_construct(job=q1.spec.name, platform="runpod", remote_dir="/workspace/ckpt",
                        local_dir=str(tmp_path / "checkpoints"), files=files)  # fmt: skip
    carry = queue_carry(q1, record)
    assert carry is not None
    assert carry.finished == {cells[0]: 0} and carry.left == (cells[1], cells[2])
    assert carry.checkpoints == {cells[1]: (f"{cells[1]}/step_0002.json", 2)}
    assert carry.in_flight() == (cells[1], f"{cells[1]}/step_0002.json", 2)
    # a local copy no longer the bytes the pull checked is not carried
    (tmp_path / "checkpoints" / cells[1] / "step_0002.json").write_text("changed")
    assert queue_carry(q1, record).checkpoints == {}

    lines = plan_lines(q1, carry, "runpod", "paperspace")
    said = " ".join(lines)
    assert f"abl--q1 moves runpod -> paperspace: 2 of its 3 cell(s) left ({cells[1]}, {cells[2]})" in said
    assert "carries the records of 1 finished cell(s)" in said and "never run again there" in said
    assert f"carries {cells[1]}/step_0002.json (step 2) of {cells[1]}" in said


def test_the_carried_records_make_the_wrapper_on_the_new_machine_skip_the_finished_cells(
    tmp_path: Path,
) -> None:
    q1 = _queues(tmp_path)[0]
    cells = [c.name for c in q1.sweep.cells]
    _finish(tmp_path, cells[0])
    _finish(tmp_path, cells[1], code=3)  # a failed cell is not retried either
    carry = queue_carry(q1, None)
    mount = tmp_path / "disk"
    out = subprocess.run(["bash", "-c", records_command(str(mount), "abl", carry)], capture_output=True,
                         text=True, check=True)  # fmt: skip
    assert sorted(out.stdout.split()) == sorted(cells[:2])
    state = mount / ".gpujob" / "abl.sweep" / "state"
    assert (state / f"{cells[1]}.exit").read_text().strip() == "3"
    # the machine's own record wins: written again, nothing changes
    (state / f"{cells[0]}.exit").write_text("0\n")
    subprocess.run(["bash", "-c", records_command(str(mount), "abl", carry)], check=True, capture_output=True)
    assert (state / f"{cells[0]}.exit").read_text() == "0\n"

    # the queue's wrapper, run for real over the new disk: only the cell left runs
    mine = list(q1.sweep.cells)
    p = place(job="abl", mount=str(mount), ck_dir=str(mount / "ckpt"), command='echo "ran $GPUJOB_CELL"',
              queues=[mine])  # fmt: skip
    for rel, body in p.files.items():
        f = mount / p.root.removeprefix(str(mount) + "/") / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(body)
    ran = subprocess.run(["bash", f"{mount}/{p.root.removeprefix(str(mount) + '/')}/queue.sh",
                          f"{p.queue_file(1)}"], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert [line for line in ran.stdout.splitlines() if line.startswith("ran ")] == [f"ran {cells[2]}"], (
        ran.stdout
    )


def _validate(tmp_path: Path, text: str, optimize: str) -> tuple[int, str]:
    (tmp_path / "job.yaml").write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONOPTIMIZE"}
    if optimize:
        env["PYTHONOPTIMIZE"] = optimize
    out = subprocess.run([sys.executable, "-m", "gpujob", "validate", "job.yaml"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    return out.returncode, " ".join((out.stdout + out.stderr).split())


@pytest.mark.parametrize("optimize", ["", "1"])
def test_validate_accepts_a_sweep_with_fallback_and_refuses_what_a_move_cannot_carry(
    tmp_path: Path, optimize: str
) -> None:
    text = CONTINUOUS.replace("spot: true, ", "") + FALLBACK
    code, said = _validate(tmp_path, text, optimize)
    assert code == 0, said
    # without the continuous pull, nothing of the cells comes home while the queue runs
    text = JOB.replace("spot: true, ", "") + FALLBACK
    code, said = _validate(tmp_path, text, optimize)
    line = text.splitlines().index("fallback:") + 1
    assert code != 0 and f"job.yaml:{line}:" in said, said
    assert (
        "only checkpoint.pull: continuous brings home" in said and "Set checkpoint.pull: continuous" in said
    )
    # another mount: the queue files name the cells' dirs under the job's
    text = CONTINUOUS.replace("spot: true, ", "") + FALLBACK.replace("mount: /workspace", "mount: /storage")
    code, said = _validate(tmp_path, text, optimize)
    assert code != 0 and "fallback[0].storage.mount" in said and "set it to /workspace" in said, said
    assert "job.yaml:" in said, said


def _pod(n: int, status: str) -> LiveResource:
    return LiveResource(platform="runpod", kind="pod", id=f"p{n}", name=f"gpujob-abl--q{n}--testproj", status=status,
                        gpu_id=RP_GPUS[0], gpu_count=1, attributes={"project": "testproj"})  # fmt: skip


def _plan(tmp_path: Path, cap: float):  # type: ignore[no-untyped-def]
    from gpujob.plan.planner import build_plan

    loaded = _queues(tmp_path, CONTINUOUS + FALLBACK + f"budget: {{max_hourly_usd: {cap}}}\n")
    live = LiveState(read_at=NOW, resources=[_pod(1, "stopped"), _pod(2, "running")],
                     quotes=[_out(g) for g in RP_GPUS])  # fmt: skip
    return build_plan(loaded, live, now=NOW, env={})


def test_the_plan_moves_the_preempted_queue_alone_saying_what_it_carries_within_the_sweeps_cap(
    tmp_path: Path,
) -> None:
    from gpujob.plan.model import ActionKind
    from gpujob.plan.rate import running_rate

    plan = _plan(tmp_path, 50.0)
    q1, q2 = plan.jobs
    assert [a.kind for a in q1.actions] == [ActionKind.MOVE] and q1.actions[0].id == "abl--q1.move"
    assert ActionKind.MOVE not in [a.kind for a in q2.actions]  # running where it is: served
    said = " ".join(q1.actions[0].reasons)
    assert "move runpod -> paperspace (fallback[0])" in said, said
    assert "abl--q1 moves runpod -> paperspace: 3 of its 3 cell(s) left" in said, said
    assert "carries the records of 0 finished cell(s)" in said, said
    # the cap is the sweep's: the moved queue at its new price beside the queue that stays
    whole = running_rate(plan.jobs).usd_per_hour
    alone = running_rate([q1]).usd_per_hour
    assert 0 < alone < whole
    held = _plan(tmp_path, round((alone + whole) / 2, 2))
    assert ActionKind.MOVE not in [a.kind for a in held.jobs[0].actions]
    (why,) = [f for f in held.jobs[0].findings if f.code == "failover"]
    assert "no move: moved to paperspace (fallback[0]) it would bill" in why.summary, why
    assert "abl--q2 runs on runpod" in why.summary, why
