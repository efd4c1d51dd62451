"""Naming a sweep's queues: `--replace abl.q1.run` (as the plan prints it; `abl--q1.run` still read),
the plan's hint in that form, and `gpujob state …` / `gpujob import` given a sweep's job file act on
every queue, not only the first."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import respx
from click.testing import CliRunner

from gpujob.errors import GpujobError
from gpujob.layout.address import names_job, queue_job_of
from gpujob.spec.load import load_specs
from tests.owners import PROJECT, machine, pin_project
from tests.sweep.test_sweep_unit import IMAGE, JOB, write


def _loaded(tmp_path: Path, text: str = JOB) -> list:
    return [dataclasses.replace(ls, project=PROJECT) for ls in load_specs([write(tmp_path, text)])]


def test_a_queue_is_named_either_way_and_the_sweep_names_all_its_queues() -> None:
    assert queue_job_of("abl.q1") == "abl--q1" and queue_job_of("abl--q1") == "abl--q1"
    assert queue_job_of("bert") == "bert" and queue_job_of("abl.qx") == "abl.qx"
    assert names_job("abl.q2", "abl--q2") and names_job("abl--q2", "abl--q2")
    assert names_job("abl", "abl--q1") and names_job("abl", "abl--q2")
    assert not names_job("abl.q1", "abl--q2") and not names_job("ab", "abl--q1")
    assert not names_job("abl", "abl-x--q1") and names_job("bert", "bert")


def test_replace_takes_the_address_the_plan_prints_and_the_old_one(tmp_path: Path) -> None:
    from gpujob.plan.replace import check_addresses

    loaded = _loaded(tmp_path)
    assert check_addresses(["abl.q1.run"], loaded) == ["abl.q1.run"]
    assert check_addresses(["abl--q1.run"], loaded) == ["abl.q1.run"]  # the older spelling, kept working
    assert check_addresses(["abl.q2.pod", "abl--q2.pod"], loaded) == ["abl.q2.pod"]
    assert check_addresses(["abl.run"], loaded) == ["abl.q1.run", "abl.q2.run"]  # the sweep: every queue
    with pytest.raises(GpujobError) as err:
        check_addresses(["abl.q3.run"], loaded)
    assert "known: abl.q1.run, abl.q1.pod, abl.q2.run, abl.q2.pod" in str(err.value)
    with pytest.raises(GpujobError):
        check_addresses(["abl.q1.machine"], loaded)  # a RunPod queue's machine is a pod


def test_the_plans_hint_prints_an_address_replace_accepts_and_it_relaunches_that_queue(
    tmp_path: Path,
) -> None:
    from gpujob.live import RunFact
    from gpujob.plan.model import ActionKind
    from gpujob.plan.planner import build_plan
    from gpujob.plan.records import LaunchRecord, run_record_of
    from gpujob.plan.replace import check_addresses
    from tests.plan.plan_helpers import NOW, live, pod

    before = _loaded(tmp_path)
    record = run_record_of(before[0].spec, NOW)
    # a change the queue's files cannot carry (run.setup): it waits for the next launch, and the hint
    # says how to relaunch now
    after = _loaded(
        tmp_path,
        JOB.replace("  command: python3 cell.py\n", "  command: python3 cell.py\n  setup: pip list\n"),
    )
    pods = [pod(machine(f"abl--q{n}"), gpu_id="NVIDIA GeForce RTX 4090", image=IMAGE, spot=True, volume_gb=10) for n in (1, 2)]  # fmt: skip
    launched = {
        f"abl--q{n}": LaunchRecord(job=f"abl--q{n}", platform="runpod", resource_id=p.id, run=record, at=NOW)
        for n, p in zip((1, 2), pods, strict=True)
    }
    fact = RunFact(state="running", last_checkpoint="c/step_1.json")
    state = live(*pods, runs={"abl--q1": fact, "abl--q2": fact})
    plan = build_plan(after, state, now=NOW, env={}, launch_records=launched)
    note = next(f for f in plan.all_findings() if f.code == "sweep-change-waits" and f.job == "abl--q1")
    assert "gpujob apply --replace abl.q1.run" in note.fix and "gpujob restart abl.q1" in note.fix
    address = note.fix.split("--replace ")[1].split("`")[0]
    asked = check_addresses([address], after)
    forced = build_plan(after, state, now=NOW, env={}, launch_records=launched, replace=asked)
    relaunched = [a.id for a in forced.all_actions() if a.kind is ActionKind.RELAUNCH]
    assert relaunched == ["abl.q1.run.relaunch"]  # that queue only, not q2
    reasons = next(a for a in forced.all_actions() if a.kind is ActionKind.RELAUNCH).reasons
    assert not any("abl--q1" in r for r in reasons)
    old = build_plan(after, state, now=NOW, env={}, launch_records=launched, replace=["abl--q1.run"])
    assert [a.id for a in old.all_actions() if a.kind is ActionKind.RELAUNCH] == relaunched  # a saved plan's


def _seed_queues(fake, other: bool = True) -> dict[str, str]:  # type: ignore[no-untyped-def]
    ids = {}
    for job in ("abl--q1", "abl--q2", *(["bert"] if other else [])):
        p = fake.new_pod(
            {"name": machine(job), "env": {"GPUJOB_PROJECT": PROJECT}, "gpu": {"id": "NVIDIA GeForce RTX 4090", "count": 1}},
            status="RUNNING",
        )  # fmt: skip
        ids[job] = p["id"]
    return ids


def test_state_show_and_rm_given_a_sweep_cover_every_queue(tmp_path: Path) -> None:
    from gpujob.cli.cmd_state import command
    from tests.providers.conftest import FAKE_ENV
    from tests.providers.provider_fakes import RunPodFake

    job = write(tmp_path, JOB)
    pin_project(tmp_path / ".gpujob")
    runner = CliRunner()
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
        fake = RunPodFake(router)
        ids = _seed_queues(fake)
        text = runner.invoke(command, [str(job)], env=FAKE_ENV)
        assert text.exit_code == 0, text.output
        assert "abl--q1 (runpod): 1 live resource(s)" in text.output
        assert "abl--q2 (runpod): 1 live resource(s)" in text.output
        assert ids["abl--q2"] in text.output and ids["bert"] not in text.output
        out = runner.invoke(command, [str(job), "--format", "json"], env=FAKE_ENV)
        assert out.exit_code == 0, out.output
        rows = json.loads(out.output)
        assert sorted((r["job"], r["id"]) for r in rows) == [
            ("abl--q1", ids["abl--q1"]),
            ("abl--q2", ids["abl--q2"]),
        ]

        listed = runner.invoke(command, ["list", str(job), "--format", "json"], env=FAKE_ENV)
        assert listed.exit_code == 0, listed.output
        assert sorted(r["job"] for r in json.loads(listed.output)) == ["abl--q1", "abl--q2"]

        one = runner.invoke(command, ["rm", "abl.q2", "-f", str(job)], env=FAKE_ENV)
        assert one.exit_code == 0, one.output
        assert ids["abl--q2"] in one.output and ids["abl--q1"] not in one.output
        rest = runner.invoke(command, ["rm", "abl", "-f", str(job)], env=FAKE_ENV)
        assert rest.exit_code == 0, rest.output
        assert ids["abl--q1"] in rest.output and ids["abl--q2"] not in rest.output  # forgotten already
        after = runner.invoke(command, [str(job)], env=FAKE_ENV)
        assert after.output.count("nothing live") == 2, after.output
        assert len(fake.pods) == 3  # the platform untouched


def test_import_into_a_sweep_names_a_queue(tmp_path: Path) -> None:
    from gpujob.cli.cmd_import import command
    from tests.providers.conftest import FAKE_ENV
    from tests.providers.provider_fakes import RunPodFake

    job = write(tmp_path, JOB)
    pin_project(tmp_path / ".gpujob")
    runner = CliRunner()
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
        fake = RunPodFake(router)
        p = fake.new_pod(
            {"name": "hand-made", "gpu": {"id": "NVIDIA GeForce RTX 4090", "count": 1}}, status="RUNNING"
        )
        vague = runner.invoke(command, ["abl", p["id"], "-f", str(job)], env=FAKE_ENV)
        assert vague.exit_code == 1 and "name the queue" in vague.output and "abl.q1" in vague.output
        assert fake.pods[p["id"]]["name"] == "hand-made"
        done = runner.invoke(command, ["abl.q2", p["id"], "-f", str(job)], env=FAKE_ENV)
        assert done.exit_code == 0, done.output
        assert fake.pods[p["id"]]["name"] == machine("abl--q2")


def test_state_list_shows_a_shared_sweep_volume_once_and_rm_of_the_sweep_forgets_it_once(
    tmp_path: Path,
) -> None:
    from gpujob import naming
    from gpujob.cli.cmd_state import command
    from tests.layout.test_wrapper_shared import SHARED
    from tests.providers.conftest import FAKE_ENV
    from tests.providers.provider_fakes import RunPodFake

    job = write(tmp_path, SHARED)
    pin_project(tmp_path / ".gpujob")
    runner = CliRunner()
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
        fake = RunPodFake(router)
        ids = _seed_queues(fake, other=False)
        vol = naming.volume_name("abl", "cells", PROJECT)
        fake.volumes["vol1"] = {
            "id": "vol1",
            "name": vol,
            "size": 20,
            "dataCenter": "EU-RO-1",
            "type": "STANDARD",
        }
        listed = runner.invoke(command, ["list", str(job), "--format", "json"], env=FAKE_ENV)
        assert listed.exit_code == 0, listed.output
        rows = json.loads(listed.output)
        assert sorted((r["job"], r["id"]) for r in rows) == sorted(
            [("abl--q1", ids["abl--q1"]), ("abl--q2", ids["abl--q2"]), ("abl--q1", "vol1")]
        )
        (v,) = [r for r in rows if r["id"] == "vol1"]
        assert "every queue of sweep abl" in v["note"]
        gone = runner.invoke(command, ["rm", "abl", "-f", str(job)], env=FAKE_ENV)
        assert gone.exit_code == 0, gone.output
        assert (
            gone.output.count("vol1") == 1 and ids["abl--q1"] in gone.output and ids["abl--q2"] in gone.output
        )


def test_force_unlock_reads_a_queue_as_the_plan_prints_it(tmp_path: Path) -> None:
    from gpujob.cli.cmd_lock import command

    job = write(tmp_path, JOB)
    pin_project(tmp_path / ".gpujob")
    out = CliRunner().invoke(command, ["abl.q1", "-f", str(job), "--yes"])
    assert out.exit_code == 0, out.output
    assert "Job 'abl--q1' is not locked" in out.output  # the queue's lock, not one named 'abl.q1'
