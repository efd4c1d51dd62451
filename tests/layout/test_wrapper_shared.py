"""A sweep on one network volume all queue machines mount, without a platform: the volume's name and
ownership, the plan (queue 1 holds the volume, every queue pod is placed in its data center, it bills
once, sibling queue pods are no concurrent-writer error), and the wrapper run for real in bash on one
temp dir standing for the volume: every file placed once by the first queue, a cell done on one queue
never runs on another, and a cell of another queue running meanwhile is not an outside write."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

from gpujob import naming
from gpujob.jobfile.cells import expand
from gpujob.layout.wrapper import place, queue_command
from gpujob.spec.load import load_specs
from tests.e2e.e2e_support import poll
from tests.owners import PROJECT, machine
from tests.sweep.test_sweep_unit import IMAGE, JOB, run, sweep, write

SHARED = JOB.replace(
    "storage: {volume_gb: 10, mount: /workspace}",
    "storage: {mount: /workspace, network_volume: {name: cells, size_gb: 20}}",
)


def _loaded(tmp_path: Path) -> list:
    return [dataclasses.replace(ls, project=PROJECT) for ls in load_specs([write(tmp_path, SHARED)])]


def test_the_queues_share_the_sweeps_volume_and_each_syncs_its_own_code_tree(tmp_path: Path) -> None:
    from gpujob.layout.storage import holds_volume, shared
    from tests.plan.plan_helpers import volume

    q1, q2 = (ls.spec for ls in _loaded(tmp_path))
    name = naming.volume_name("abl", "cells", PROJECT)
    assert (
        naming.volume_name(q1.name, "cells", PROJECT) == naming.volume_name(q2.name, "cells", PROJECT) == name
    )
    nv = volume(name)
    assert naming.owned([nv], q1.name, PROJECT) == naming.owned([nv], q2.name, PROJECT) == [nv]
    other = volume(naming.volume_name("abl2", "cells", PROJECT))
    assert naming.owned([other], q1.name, PROJECT) == []  # another sweep's volume is not this one's
    assert shared(q1) and shared(q2) and holds_volume(q1) and not holds_volume(q2)
    assert (q1.run.sync.dest, q2.run.sync.dest) == ("/workspace/code/q1", "/workspace/code/q2")
    assert q1.run.command != q2.run.command and "q2.txt" in q1.run.command  # each places the whole version


def test_queue_one_holds_the_volume_every_pod_is_placed_in_its_data_center_and_it_bills_once(
    tmp_path: Path,
) -> None:
    from gpujob.plan.model import ActionKind
    from gpujob.plan.planner import build_plan
    from tests.plan.plan_helpers import NOW, live, pod, volume

    loaded = _loaded(tmp_path)
    fresh = build_plan(loaded, live(), now=NOW, env={})
    q1, q2 = fresh.jobs
    assert [a.id for a in q1.actions if a.resource_kind == "network_volume"] == [
        "abl.q1.network_volume.create"
    ]
    assert not [a for a in q2.actions if a.resource_kind == "network_volume"]
    (rp7,) = [f for f in q1.findings if f.code == "RP7" and "queue pods" in f.summary]
    assert "all 2 queue pods mount network volume cells and run in its data center EU-RO-1" in rp7.summary
    assert not [f for f in q2.findings if f.code == "RP7" and "queue pods" in f.summary]  # said once
    create_q2 = next(a for a in q2.actions if a.kind is ActionKind.CREATE)
    assert any("created by abl.q1's plan" in r and "EU-RO-1" in r for r in create_q2.reasons), (
        create_q2.reasons
    )
    assert q1.parked_usd_per_month > 0 and q2.parked_usd_per_month == 0  # the volume bills once, on q1

    nv = volume(naming.volume_name("abl", "cells", PROJECT), region="EU-RO-1")
    pods = [
        pod(machine(f"abl--q{n}"), network_volume_id=nv.id, volume_gb=None, spot=True, gpu_id="NVIDIA GeForce RTX 4090", image=IMAGE)
        for n in (1, 2)
    ]  # fmt: skip
    running = build_plan(loaded, live(nv, *pods), now=NOW, env={})
    assert not [
        f for f in running.all_findings() if f.code == "concurrent-writers"
    ]  # siblings: own dirs only
    kinds = {(a.kind, a.resource_kind) for a in running.all_actions()}
    unwanted = {
        (ActionKind.REPLACE, "pod"),
        (ActionKind.CREATE, "pod"),
        (ActionKind.CREATE, "network_volume"),
    }
    assert not kinds & unwanted, kinds  # the live pods on the sweep's volume are what the spec wants
    stranger = pod(machine("bert"), network_volume_id=nv.id, volume_gb=None)
    crowded = build_plan(loaded, live(nv, *pods, stranger), now=NOW, env={})
    assert [f.job for f in crowded.all_findings() if f.code == "concurrent-writers"] == ["abl--q1"]

    gone = build_plan(
        [dataclasses.replace(ls, spec=ls.spec.model_copy(update={"state": "absent"})) for ls in loaded],
        live(nv, *pods),
        now=NOW,
        env={},
    )
    deletes = [a for a in gone.all_actions() if a.kind is ActionKind.DELETE_VOLUME]
    assert [a.id for a in deletes] == ["abl.q1.network_volume.delete-volume"]  # once, by q1
    assert any("every cell" in r and "2 queues" in r for r in deletes[0].reasons), deletes[0].reasons
    terminates = [a for a in gone.all_actions() if a.kind is ActionKind.TERMINATE]
    assert len(terminates) == 2 and all(any("no pull needed" in r for r in a.reasons) for a in terminates)


def test_the_first_queue_places_every_file_once_and_a_cell_done_on_one_queue_never_runs_on_another(
    tmp_path: Path,
) -> None:
    mount = tmp_path / "volume"
    cells = expand(sweep(matrix={"V": ["a", "b", "c"]}))
    a, b, c = cells
    # b in both queue files: a cell that moved between queues (guard scope ⊇ scheduling scope)
    p = place(job="abl", mount=str(mount), ck_dir=None, command='echo run >> "$GPUJOB_CELL_DIR/runs"', queues=[[a, b], [b, c]])  # fmt: skip
    root = Path(p.root)
    run(queue_command(p, 1, every=True), tmp_path)
    placed = {f: (root / f).stat().st_ino for f in p.files}  # all of them, the other queue's too
    assert set(placed) == {"queue.sh", "q1.txt", "q2.txt", *(f"cells/{x.name}.env" for x in cells)}
    assert not list(root.rglob("*.tmp.*"))
    second = run(queue_command(p, 2, every=True), tmp_path)
    assert {f: (root / f).stat().st_ino for f in p.files} == placed  # nothing written again
    assert f"cell {b.name} finished before (exit 0): not run again" in second.stdout
    runs = {x.name: (mount / "sweeps" / "abl" / x.name / "runs").read_text().count("run") for x in cells}
    assert runs == {a.name: 1, b.name: 1, c.name: 1}
    only_mine = queue_command(p, 2)  # a queue on its own disk places just what it runs
    assert "q1.txt" not in only_mine and f"cells/{a.name}.env" not in only_mine


def test_a_cell_of_another_queue_running_meanwhile_is_not_an_outside_write_but_a_write_into_a_pending_cell_is(
    tmp_path: Path,
) -> None:
    from gpujob.layout.isolation import judge, parse_record

    mount = tmp_path / "volume"
    cells = expand(sweep(matrix={"V": ["a", "b", "d"]}))
    a, b, d = cells
    # Cell a lasts until q2's cell b has finished (its exit record): b's writes fall inside a's run.
    b_done = mount / ".gpujob" / "abl.sweep" / "state" / f"{b.name}.exit"
    cmd = (
        f'case "$V" in a) for i in $(seq 600); do [ -e {b_done} ] && break; sleep 0.05; done; '
        f'mkdir -p "$(dirname "$GPUJOB_CELL_DIR")/{d.name}"; '
        f'echo x > "$(dirname "$GPUJOB_CELL_DIR")/{d.name}/x";; '
        f'b) echo r > "$GPUJOB_CELL_DIR/r"; mkdir -p {mount}/code/q2; echo s > {mount}/code/q2/synced.py;; esac'
    )
    p = place(
        job="abl", mount=str(mount), ck_dir=str(mount / "ckpt"), command=cmd, queues=[[a, d], [b]],
        prune=(str(mount / "code"),),
    )  # fmt: skip
    state = Path(p.root).parent / "state"
    assert b_done.parent == state, state
    q1 = subprocess.Popen(["bash", "-c", queue_command(p, 1, every=True)], cwd=tmp_path, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        poll("cell a started on q1", lambda: (state / f"{a.name}.t0").exists(), deadline_s=20, every=0.05)
        run(queue_command(p, 2, every=True), tmp_path)  # b runs and writes while a runs
        out, _ = q1.communicate(timeout=30)
    finally:
        q1.kill()
    assert q1.returncode == 0, out
    outside_a = (state / f"{a.name}.outside").read_text().split()
    assert outside_a == [str(mount / "sweeps" / "abl" / d.name / "x")], outside_a
    rec = parse_record((mount / "sweeps" / "abl" / a.name / "gpujob-cell.txt").read_text())
    assert rec is not None
    verdict = judge([rec], cell_roots=[str(mount / "sweeps" / "abl")], cells=[x.name for x in cells])
    assert verdict.errors == [f"cell {a.name} wrote {mount}/sweeps/abl/{d.name}/x, in cell {d.name}'s dir"]


def test_the_shared_volumes_delete_waits_for_every_queue_pod_and_refuses_while_one_holds_it(
    tmp_path: Path,
) -> None:
    import asyncio

    import pytest

    from gpujob.apply import teardown
    from gpujob.apply.context import SWEEP_QUEUE, JobContext
    from gpujob.apply.journal import Journal
    from gpujob.apply.progress import NullHooks
    from gpujob.errors import GateError
    from gpujob.live import LiveResource
    from gpujob.plan.model import Action, ActionKind
    from tests.apply.fakes import FakeClock, FakeProvider, FakeSSH
    from tests.owners import marker

    q1 = _loaded(tmp_path)[0]
    prov = FakeProvider()
    vol = prov._save(LiveResource(platform="runpod", kind="network_volume", id="vol1", status="available",
                                  name=naming.volume_name("abl", "cells", PROJECT), region="EU-RO-1"))  # fmt: skip
    prov._save(LiveResource(platform="runpod", kind="pod", id="pod2", name=machine("abl--q2"), status="running",
                            attributes=marker(), network_volume_id=vol.id))  # fmt: skip
    ssh = FakeSSH(tmp_path, remote_files={}, alive=True)
    state = tmp_path / ".gpujob"
    clock = FakeClock()
    ctx = JobContext(
        spec=q1.spec, spec_path=q1.path, provider=prov, state_dir=state, journal=Journal(state, q1.spec.name),
        ssh=ssh.api(), clock=clock, env={}, hooks=NullHooks(), approvals=set(), project=PROJECT,  # type: ignore[arg-type]
    )  # fmt: skip
    ctx.volume = vol
    ctx.extra[SWEEP_QUEUE] = q1.sweep
    delete = Action(
        id="abl.q1.network_volume.delete-volume", job=q1.spec.name, platform="runpod", kind=ActionKind.DELETE_VOLUME,
        resource_kind="network_volume", resource_name=vol.name, resource_id=vol.id, gated=True,
    )  # fmt: skip
    ctx.approvals.add(delete.id)
    with pytest.raises(GateError) as err:
        asyncio.run(teardown.guard(ctx, delete))
    said = err.value.render()
    assert "holds the cells of every queue" in said and "gpujob-abl--q2--" in said, said
    assert sum(clock.slept) >= teardown.DETACH_WAIT_S  # it waited for the other queue's pod first
    assert not prov.creates and ssh.connects == []  # no temporary pod, nothing looked at or pulled
    assert vol.id in prov.resources
