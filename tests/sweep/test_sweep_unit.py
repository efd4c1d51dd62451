"""Sweeps without a platform: matrix expansion, the split by cost, the versioned wrapper run for real in
bash on a temp dir (resume at the in-flight cell, finished and failed cells never again), the isolation
check, the queue jobs' names and the gate's view of their cells."""

from __future__ import annotations

import shlex
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

from gpujob import naming
from gpujob.errors import SpecError
from gpujob.jobfile.cells import Cell, cell_name, expand
from gpujob.jobfile.sweep import SweepSpec
from gpujob.layout.isolation import judge, local_records, parse_record
from gpujob.layout.queues import split
from gpujob.layout.wrapper import place, queue_command
from gpujob.live import LiveResource
from gpujob.naming import queue_job, sweep_of
from gpujob.spec.load import load_specs

IMAGE = "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04"
JOB = f"""version: 1
name: abl
platform: runpod
machine: {{gpu: [RTX4090], spot: true, cloud: secure, regions: [EU-RO-1], image: "{IMAGE}"}}
storage: {{volume_gb: 10, mount: /workspace}}
checkpoint: {{dir: /workspace/ckpt, interval: 1s, verify: "true {{file}}"}}
run:
  command: python3 cell.py
  env: {{STEPS: "4"}}
sweep:
  machines: 2
  matrix:
    LR: ["1e-3", "3e-4", "1e-4"]
    SEED: ["1", "2"]
  est: 20m
"""


def sweep(**kw: object) -> SweepSpec:
    return SweepSpec.model_validate({"machines": 2, **kw})


def test_a_matrix_expands_to_its_cartesian_product_with_stable_distinct_names() -> None:
    cells = expand(sweep(matrix={"LR": ["1e-3", "3e-4", "1e-4"], "SEED": ["1", "2"]}))
    assert [c.env for c in cells] == [
        {"LR": lr, "SEED": s} for lr in ("1e-3", "3e-4", "1e-4") for s in ("1", "2")
    ]
    assert len({c.name for c in cells}) == 6
    assert cells[0].name.startswith("lr-1e-3.seed-1.") and cells[0].name == cell_name(
        {"LR": "1e-3", "SEED": "1"}
    )
    # slugs that meet still give distinct names (the hash is of the values)
    assert cell_name({"LR": "1e-3"}) != cell_name({"LR": "1E-3"})
    listed = expand(sweep(cells=[{"A": "x"}, {"A": "y", "B": "1"}]))
    assert [c.env for c in listed] == [{"A": "x"}, {"A": "y", "B": "1"}]


def test_duplicate_cells_and_gpujob_names_are_refused() -> None:
    with pytest.raises(ValueError, match="same values"):
        sweep(cells=[{"A": "x"}, {"A": "x"}])
    with pytest.raises(ValueError, match="GPUJOB_"):
        sweep(matrix={"GPUJOB_CELL": ["a"]})
    with pytest.raises(ValueError, match="exactly one"):
        sweep(matrix={"A": ["1"]}, cells=[{"A": "2"}])


def test_cells_split_by_estimated_cost_not_count() -> None:
    sw = sweep(
        matrix={"TASK": ["det", "seg", "rec"], "SEED": ["1", "2"]},
        est="30m",
        est_by={"TASK": {"det": "3h"}},
    )
    cells = expand(sw)
    assert [c.est_s for c in cells] == [10800, 10800, 1800, 1800, 1800, 1800]
    q1, q2 = split(cells, 2)
    # the two long cells go to different queues, the short ones fill in: 3h+1h each, not 3 cells each
    assert sum(c.est_s for c in q1) == sum(c.est_s for c in q2) == 10800 + 3600
    uneven = [Cell("a", (), 9000), Cell("b", (), 1000), Cell("c", (), 1000), Cell("d", (), 1000)]
    assert [[c.name for c in q] for q in split(uneven, 2)] == [["a"], ["b", "c", "d"]]
    assert len(split(uneven, 8)) == 4  # never more queues than cells


def test_a_changed_wrapper_is_a_new_version_and_never_rewrites_the_old_one(tmp_path: Path) -> None:
    cells = expand(sweep(matrix={"A": ["1", "2"]}))
    a = place(job="abl", mount=str(tmp_path), ck_dir=None, command="echo one", queues=[cells])
    b = place(job="abl", mount=str(tmp_path), ck_dir=None, command="echo two", queues=[cells])
    c = place(job="abl", mount=str(tmp_path), ck_dir=None, command="echo one", queues=[cells])
    assert a.version != b.version and a.version == c.version and a.root != b.root
    run(queue_command(a, 1), tmp_path)
    wrapper = Path(a.root) / "queue.sh"
    before = wrapper.stat().st_ino, wrapper.read_bytes()
    run(queue_command(a, 1), tmp_path)  # placing again: the file is not written again
    assert (wrapper.stat().st_ino, wrapper.read_bytes()) == before
    run(queue_command(b, 1), tmp_path)
    assert (Path(b.root) / "queue.sh").read_text().count("echo two") == 1
    assert wrapper.read_bytes() == before[1]
    appended = expand(sweep(matrix={"A": ["1", "2", "3"]}))  # appending cells: a new queue file
    d = place(job="abl", mount=str(tmp_path), ck_dir=None, command="echo one", queues=[appended])
    assert d.version != a.version


def run(command: str, cwd: Path, code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    return proc


# `exec sleep`: the stop's TERM ends the sleep itself, which would otherwise hold the output pipe open.
CELL_CMD = r"""echo run >> "$GPUJOB_CELL_DIR/runs"
echo "$V" > "$GPUJOB_CELL_DIR/value"
if [ "$V" = b ] && [ ! -e "$GPUJOB_CELL_DIR/once" ]; then touch "$GPUJOB_CELL_DIR/once"; kill -TERM "$PPID"; exec sleep 5; fi
if [ "$V" = c ]; then exit 3; fi
if [ "$V" = d ]; then echo stray > "$GPUJOB_CELL_DIR/../$OTHER/x"; echo s > "$MOUNT/stray"; fi
if [ "$V" = a ]; then mkdir -p "$MOUNT/code/__pycache__" && echo pyc > "$MOUNT/code/__pycache__/m.pyc"; fi
exit 0
"""


def test_a_stopped_queue_resumes_at_its_in_flight_cell_and_never_reruns_a_finished_or_failed_one(
    tmp_path: Path,
) -> None:
    mount = tmp_path / "ws"
    cells = expand(sweep(matrix={"V": ["a", "b", "c", "d"]}))
    names = {c.env["V"]: c.name for c in cells}
    cmd = f"OTHER={names['a']} MOUNT={mount} && " + CELL_CMD
    p = place(job="abl", mount=str(mount), ck_dir=str(mount / "ckpt"), command=cmd, queues=[cells])
    first = run(queue_command(p, 1), tmp_path, code=143)  # the SIGTERM of a stop or preemption, in cell b
    assert "stopped during cell " + names["b"] in first.stdout
    state = Path(p.root).parent / "state"
    assert (state / f"{names['a']}.exit").read_text().strip() == "0"
    assert not (state / f"{names['b']}.exit").exists()  # in flight: not recorded as finished
    second = run(queue_command(p, 1), tmp_path)  # cell c fails: not retried, the queue goes on and drains
    assert f"cell {names['c']} exited 3" in second.stdout and "done (1 failed)" in second.stdout
    third = run(queue_command(p, 1), tmp_path)
    results = mount / "sweeps" / "abl"
    runs = {v: len((results / n / "runs").read_text().split()) for v, n in names.items()}
    assert runs == {"a": 1, "b": 2, "c": 1, "d": 1}, (runs, second.stdout, third.stdout)
    assert {v: (state / f"{n}.exit").read_text().strip() for v, n in names.items()} == {
        "a": "0",
        "b": "0",
        "c": "3",
        "d": "0",
    }
    assert third.stdout.count("finished before") == 4
    # appending a cell is a new version (new queue file); the old version's finished cells stay done
    more = expand(sweep(matrix={"V": ["a", "b", "c", "d", "e"]}))
    p2 = place(job="abl", mount=str(mount), ck_dir=str(mount / "ckpt"), command=cmd, queues=[more])
    assert p2.version != p.version
    fourth = run(queue_command(p2, 1), tmp_path)
    assert fourth.stdout.count("finished before") == 4 and fourth.stdout.count(" start 1") == 1
    assert (Path(p.root) / "queue.sh").is_file()  # the old version is left as it was
    assert (mount / "ckpt" / names["a"]).is_dir()  # each cell its own GPUJOB_CHECKPOINT_DIR
    # the isolation check: d wrote into a's dir (error) and beside the cells (warning)
    recs = [r for r in local_records(results, list(names.values())).values() if r is not None]
    assert len(recs) == 4 and {r.exit for r in recs} == {0, 3}
    verdict = judge(recs, cell_roots=[str(results), str(mount / "ckpt")])
    assert verdict.errors == [
        f"cell {names['d']} wrote {results / names['a'] / 'x'}, in cell {names['a']}'s dir"
    ]
    assert verdict.warnings == [f"cell {names['d']} wrote {mount / 'stray'}, outside its own dirs"]


def test_parse_record_refuses_what_is_not_one() -> None:
    assert parse_record("garbage\n") is None
    r = parse_record("cell=x\nexit=0\nstarts=2\noutside=/a\n")
    assert r is not None and (r.exit, r.starts, r.outside) == (0, 2, ("/a",))


def write(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "job.yaml"
    f.write_text(text)
    return f


@pytest.mark.parametrize(
    ("change", "key", "says"),
    [
        (('env: {STEPS: "4"}', 'env: {LR: "1"}'), "sweep.matrix.LR", "drop LR from run.env"),
        (('SEED: ["1", "2"]', 'HF_HOME: ["1", "2"]'), "sweep.matrix.HF_HOME", "gpujob's own"),
        (('SEED: ["1", "2"]', 'GPUJOB_SEED: ["1", "2"]'), "sweep.matrix.GPUJOB_SEED", "name it otherwise"),
        (('SEED: ["1", "2"]', 'SEED: ["1", "1"]'), "sweep.matrix.SEED", "lists 1 twice"),
        (('SEED: ["1", "2"]', "SEED: []"), "sweep.matrix.SEED", "no values"),
        (
            (
                "storage: {volume_gb: 10, mount: /workspace}",
                "storage: {volume_gb: 10, mount: /workspace}\noutputs: {paths: [/workspace/res]}",
            ),
            "outputs.paths",
            "{cell}",
        ),
    ],
)
def test_validate_refuses_a_sweep_that_cannot_isolate_its_cells(
    tmp_path: Path, change: tuple[str, str], key: str, says: str
) -> None:
    text = JOB.replace(*change)
    with pytest.raises(SpecError) as err:
        load_specs([write(tmp_path, text)])
    (problem,) = err.value.problems
    assert problem.key_path == key and says in problem.message, problem
    assert key.split(".")[-1] in text.splitlines()[problem.line - 1], (problem, text)  # at its key


def test_a_sweep_loads_as_one_queue_job_per_machine_and_the_gate_covers_each_cell(tmp_path: Path) -> None:
    from gpujob.layout.outputs import output_roots

    text = JOB.replace(
        "storage: {volume_gb: 10, mount: /workspace}",
        "storage: {volume_gb: 10, mount: /workspace}\noutputs: {paths: ['/workspace/eval/{cell}.json']}",
    )
    loaded = load_specs([write(tmp_path, text)])
    assert [ls.spec.name for ls in loaded] == ["abl--q1", "abl--q2"]
    cells = [c.name for ls in loaded for c in ls.sweep.cells]
    assert len(cells) == 6 and len(set(cells)) == 6
    for ls in loaded:
        spec = ls.spec
        assert spec.teardown.on_finish == "stop"  # a finished queue stops its machine (through the gate)
        roots = output_roots(spec)
        mine = [c.name for c in ls.sweep.cells]
        # every cell of the queue: its results dir lands at pull_to/<cell>/, its declared output too
        assert {r.local for r in roots if r.base.startswith("/workspace/sweeps/")} == set(mine)
        assert {r.path for r in roots if r.path.startswith("/workspace/eval/")} == {
            f"/workspace/eval/{c}.json" for c in mine
        }
        # the checkpoint dir the gate pulls holds every cell's GPUJOB_CHECKPOINT_DIR
        assert spec.checkpoint is not None and spec.checkpoint.dir == "/workspace/ckpt"
        placed = ls.sweep.placement.files  # what the command places (base64-encoded in it)
        assert all(f"GPUJOB_CHECKPOINT_DIR=/workspace/ckpt/{c}\n" in placed[f"cells/{c}.env"] for c in mine)
        assert all(f"| put {shlex.quote(f'cells/{c}.env')}\n" in spec.run.command for c in mine)
        assert spec.run.command.rstrip().endswith(f'"$V/q{ls.sweep.n}.txt"')


def test_queue_machines_are_named_and_owned_as_their_queue_job() -> None:
    assert queue_job("abl", 2) == "abl--q2" and sweep_of("abl--q2") == ("abl", 2) and sweep_of("abl") is None
    name = naming.machine_name("abl--q2", "k3f9a2c1")
    assert name == "gpujob-abl--q2--k3f9a2c1"
    pod = LiveResource(
        id="p1",
        kind="pod",
        name=name,
        platform="runpod",
        status="running",
        attributes={"project": "k3f9a2c1"},
    )
    assert naming.belongs(pod, "abl--q2", "k3f9a2c1") and not naming.belongs(pod, "abl", "k3f9a2c1")
    assert naming.action_prefix("abl--q2") == "abl.q2" and naming.action_prefix("abl") == "abl"
    vol = LiveResource(id="v1", kind="network_volume", name=name, platform="runpod", status="available")
    assert naming.owner(vol) is not None and naming.owner(vol).volume == "q2"  # a volume named q2 stays one


def test_est_is_a_duration() -> None:
    assert sweep(matrix={"A": ["1"]}, est="1h").est == timedelta(hours=1)


def test_the_status_cell_table_reads_the_wrappers_state() -> None:
    from gpujob.sweep.status import parse_cells, table

    out = (
        "cell=a exit=0 starts=1 t0=100 t1=136 current=0 version=v0123456789ab\n"
        "cell=b exit=- starts=2 t0=140 t1=- current=1 version=../x\n"
        "outside=b /workspace/stray\n"
        "cell=c exit=3 starts=1 t0=90 t1=95 current=0\n"
        "cell=d exit=- starts=0 t0=- t1=- current=0\n"
        "garbage line\n"
    )
    rows = parse_cells(out, machine="gpujob-abl--q1--p", alive=True, step=7, usd_per_hour=3.6)
    assert [(r["cell"], r["state"], r["step"]) for r in rows] == [
        ("a", "done", None), ("b", "running", 7), ("c", "failed", None), ("d", "pending", None)
    ]  # fmt: skip
    assert rows[0]["seconds"] == 36 and abs(rows[0]["cost_usd"] - 0.036) < 1e-9
    assert rows[1]["outside"] == ["/workspace/stray"]
    assert [r["version"] for r in rows] == ["v0123456789ab", None, None, None]  # machine text: checked
    assert table(rows)[1].endswith("  v0123456789ab") and table(rows)[2].endswith("  -")
    dead = parse_cells(out, machine="m", alive=False, step=7, usd_per_hour=0)
    assert dead[1]["state"] == "pending"  # in flight on a machine whose run is not alive: it resumes there
    assert any("failed (3)" in line for line in table(rows))
    from gpujob.sweep.status import roster

    both = [{"job": "abl--q1", "cells": rows}, {"job": "abl--q2", "cells": dead}, {"job": "other"}]
    assert roster(both) == ["sweep abl: 8 cells: 2 done, 1 running, 3 pending, 2 failed"]


def test_the_wrapper_overhead_per_cell_is_well_under_a_second(tmp_path: Path) -> None:
    import time

    mount = tmp_path / "ws"
    n = 30  # enough cells that the queue's own start is a small share
    cells = expand(sweep(matrix={"A": [str(i) for i in range(n)]}))
    p = place(job="abl", mount=str(mount), ck_dir=None, command="true", queues=[cells])
    t = time.monotonic()
    run(queue_command(p, 1), tmp_path)
    per_cell = (time.monotonic() - t) / n
    assert len(list((Path(p.root).parent / "state").glob("*.exit"))) == n
    assert per_cell < 1.0, per_cell  # the bound; typically a few tens of ms here


def test_the_plan_shows_each_queues_cells_with_a_cost_and_the_total_against_the_budget(
    tmp_path: Path,
) -> None:
    from datetime import UTC, datetime

    from gpujob.plan.model import JobPlan, Plan
    from gpujob.render import render_plan
    from gpujob.sweep.plan import sweep_plan

    text = JOB.replace("  est: 20m\n", "  est: 20m\nbudget: {max_total_usd: 1.0}\n")
    loaded = load_specs([write(tmp_path, text)])
    plans = [sweep_plan(ls, usd_per_hour=0.6) for ls in loaded]
    assert all(p is not None for p in plans)
    q1 = plans[0]
    assert q1 is not None and (q1.queue, q1.queues, q1.cells_total, len(q1.cells)) == (1, 2, 6, 3)
    assert abs(q1.cells[0].usd - 0.2) < 1e-9 and abs(q1.total_usd - 1.2) < 1e-9
    assert "over budget.max_total_usd $1.00" in q1.summary
    jobs = [
        JobPlan(job=ls.spec.name, platform="runpod", spec_file="job.yaml", desired_state="running", sweep=sp)
        for ls, sp in zip(loaded, plans, strict=True)
    ]
    plan = Plan(
        created_at=datetime.now(UTC), gpujob_version="t", spec_digest="d", live_fingerprint="f", jobs=jobs
    )
    for fmt in ("text", "markdown"):
        out = render_plan(plan, fmt, color=False)
        # the sweep's line once, above its queues (#41); markdown leads with the estimated total
        assert out.count("6 cells on 2 machines") == 1, out
        total = {"text": "est. $1.20 in all (over budget.max_total_usd $1.00)",
                 "markdown": "**Estimated total $1.20** (over budget.max_total_usd $1.00)"}[fmt]  # fmt: skip
        assert out.replace("\\_", "_").count(total) == 1, out
        assert f"{loaded[0].sweep.cells[0].name} 20m $0.20" in out, out
        assert "queue q2: 3 cells, $0.60: " in out, out
    assert sweep_plan(load_specs([write(tmp_path, JOB.split("sweep:")[0])])[0], 0.6) is None


def test_each_queue_places_only_its_own_cells_and_an_oversized_queue_is_refused(tmp_path: Path) -> None:
    loaded = load_specs([write(tmp_path, JOB)])
    for ls in loaded:
        mine = {c.name for c in ls.sweep.cells}
        placed = {
            c.name
            for c in ls.sweep.all_cells
            if f"| put {shlex.quote(f'cells/{c.name}.env')}\n" in ls.spec.run.command
        }
        assert placed == mine
    many = JOB.replace(
        'LR: ["1e-3", "3e-4", "1e-4"]', "LR: [" + ", ".join(f'"{i}"' for i in range(490)) + "]"
    )
    with pytest.raises(SpecError, match="over the 120 KB") as err:
        load_specs([write(tmp_path, many)])
    assert err.value.problems[0].key_path == "sweep.machines"
    assert len(load_specs([write(tmp_path, many.replace("machines: 2", "machines: 8"))])) == 8


def test_a_queue_machine_is_stopped_by_gpujob_after_the_pull_not_by_itself(tmp_path: Path) -> None:
    from gpujob.ssh.launcher import render_launcher

    queue = load_specs([write(tmp_path, JOB)])[0].spec
    assert queue.teardown.on_finish == "stop"
    assert ': > "$JOBDIR/armed"' not in render_launcher(queue)
    plain = load_specs([write(tmp_path, JOB.split("sweep:")[0] + "teardown: {on_finish: stop}\n")])[0].spec
    assert ': > "$JOBDIR/armed"' in render_launcher(plain)  # a plain job still stops on the pod itself


def test_a_changed_sweep_updates_the_queues_run_from_its_next_cell_and_never_relaunches_the_cell_in_flight(
    tmp_path: Path,
) -> None:
    import dataclasses

    from gpujob.live import RunFact
    from gpujob.plan.model import ActionKind
    from gpujob.plan.planner import build_plan
    from gpujob.plan.records import LaunchRecord, run_record_of
    from gpujob.render import render_plan
    from tests.owners import PROJECT, machine
    from tests.plan.plan_helpers import NOW, live, pod

    before = dataclasses.replace(load_specs([write(tmp_path, JOB)])[0], project=PROJECT)
    record = run_record_of(before.spec, NOW)
    p = pod(machine("abl--q1"), gpu_id="NVIDIA GeForce RTX 4090", image=IMAGE, spot=True, volume_gb=10)
    state = live(p, runs={"abl--q1": RunFact(state="running", last_checkpoint="c/step_1.json")})

    def plan_of(text: str, rec: object = record, **kw: object):  # type: ignore[no-untyped-def]
        after = dataclasses.replace(load_specs([write(tmp_path, text)])[0], project=PROJECT)
        launched = LaunchRecord(job="abl--q1", platform="runpod", resource_id=p.id, run=rec, at=NOW)  # type: ignore[arg-type]
        return after, build_plan(
            [after], state, now=NOW, env={"TOKEN": "s3cret"}, launch_records={"abl--q1": launched}, **kw
        )  # type: ignore[arg-type]

    # a cell appended and run.env changed: new files, an update of the queue's run in place
    changed = JOB.replace('"1e-4"]', '"1e-4", "3e-5"]').replace('env: {STEPS: "4"}', 'env: {STEPS: "8"}')
    after, plan = plan_of(changed)
    assert after.spec.name == "abl--q1" and after.spec.run.command != before.spec.run.command
    (update,) = plan.all_actions()
    assert (update.kind, update.id) == (ActionKind.UPDATE, "abl.q1.run.update")
    paths = {c.path: (c.before, c.after) for c in update.changes}
    assert paths["run.env.STEPS"] == ("(a different value)", "8")
    old_v, new_v = paths["sweep.version"]
    assert old_v == before.sweep.placement.version and new_v == after.sweep.placement.version != old_v
    assert any("applies from the next cell: the cell in flight runs on" in r for r in update.reasons)
    assert "relaunches nothing" in update.data.summary and plan.has_changes
    text = render_plan(plan, "text", color=False)
    assert "update in place run abl--q1" in text and "GPUJOB_SWEEP_EOF" not in text, text
    md = render_plan(plan, "markdown", color=False)
    assert "run abl--q1" in md and "applies from the next cell" in md and "GPUJOB_SWEEP_EOF" not in md, md
    # after apply recorded what it placed, the next plan has nothing to do
    _, again = plan_of(changed, run_record_of(after.spec, NOW))
    assert [a.kind for a in again.all_actions()] == [ActionKind.NOOP] and not again.has_changes
    # a change a version cannot carry (a secret: never in a file) waits for the queue's next launch
    secret = JOB.replace('env: {STEPS: "4"}', 'env: {STEPS: "4"}\n  secrets: [TOKEN]')
    _, waits = plan_of(secret)
    assert [a.kind for a in waits.all_actions()] == [ActionKind.NOOP]  # the queue runs on
    (note,) = [f for f in waits.all_findings() if f.code == "sweep-change-waits"]
    assert "run.secrets" in note.summary and "cell in flight is not relaunched" in note.summary
    assert "s3cret" not in render_plan(waits, "text", color=False)
    _, forced = plan_of(changed, replace=["abl--q1.run"])
    (relaunch,) = [a for a in forced.all_actions() if a.kind is ActionKind.RELAUNCH]
    assert relaunch.id == "abl.q1.run.relaunch" and all(c.path != "run.command" for c in relaunch.changes)
    assert any("queue q1 of sweep abl" in r for r in relaunch.reasons)
    assert not any("GPUJOB_SWEEP_EOF" in r for r in relaunch.reasons)


def test_a_sweep_with_fallback_platforms_is_refused_and_an_empty_list_is_none(tmp_path: Path) -> None:
    from gpujob.layout.checks import sweep_problem

    spec = load_specs([write(tmp_path, JOB)])[0].spec
    assert sweep_problem(spec) is None  # a queue spec: its sweep is expanded away
    raw = JOB.split("sweep:")[0]
    base = load_specs([write(tmp_path, raw)])[0].spec
    from gpujob.jobfile.model import JobSpec

    sweep = JobSpec.model_validate(
        {**base.model_dump(mode="json", exclude_none=True), "sweep": {"machines": 2, "cells": [{"A": "1"}]}}
    )
    assert sweep_problem(sweep) is None and sweep.fallback == []
    assert "fallback" in (sweep_problem(sweep.model_copy(update={"fallback": [object()]})) or "")
