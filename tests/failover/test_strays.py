"""A platform the failover record names but the job file no longer lists (its fallback entry was
removed after a move): read for what the job left there, and nothing but its teardown planned there."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gpujob.failover.entries import platforms_read, strays_read
from gpujob.live import LiveState
from gpujob.plan.model import ActionKind
from gpujob.plan.planner import build_plan
from gpujob.project.placement import Move, Placement, placed, strays, write_placement
from gpujob.render import render_plan
from gpujob.spec.load import load_spec
from gpujob.state import open_store
from tests.failover.jobs import job_text
from tests.failover.test_leftover import NOW, PROJECT, _ps_machine, _rp_pod, _rp_volume

K = ActionKind
KEYS = {"RUNPOD_API_KEY": "k", "PAPERSPACE_API_KEY": "k"}
PAPERSPACE_JOB = """version: 1
name: bert
platform: paperspace
machine: {gpu: [A4000], regions: [ny2], template: ubuntu-22.04, public_ip: dynamic}
storage: {volume_gb: 50, mount: /workspace}
checkpoint: {dir: /workspace/ckpt, interval: 10m, verify: "python3 verify_ckpt.py {file}"}
run: {command: python3 train.py}
"""


def _record(path: Path, *, entry: int, platform: str) -> None:
    move = Move(at=NOW, from_entry=-1, to_entry=0, from_platform="runpod", to_platform="paperspace", why="t",
                outcome="done")  # fmt: skip
    write_placement(
        open_store(path), Placement(job="bert", entry=entry, platform=platform, since=NOW, moves=[move])
    )


def _loaded(tmp_path: Path, text: str, *, absent: bool = False):  # type: ignore[no-untyped-def]
    """The job as with_projects places it, its record saying it moved runpod -> paperspace."""
    p = tmp_path / "job.yaml"
    p.write_text(text)
    ls = dataclasses.replace(load_spec(p), project=PROJECT)
    if absent:
        ls = dataclasses.replace(ls, spec=ls.spec.model_copy(update={"state": "absent"}))
    return placed(ls, open_store(p))


def _no_fallback(tmp_path: Path, **kw):  # type: ignore[no-untyped-def]
    text = job_text().split("fallback:")[0] + "failover: never\n"
    _record(tmp_path / "job.yaml", entry=0, platform="paperspace")
    return _loaded(tmp_path, text, **kw)


def _live(*resources) -> LiveState:  # type: ignore[no-untyped-def]
    return LiveState(read_at=NOW, resources=list(resources))


def test_the_record_names_platforms_the_job_file_no_longer_lists(tmp_path: Path) -> None:
    ls = _no_fallback(tmp_path)
    assert ls.strays == ("paperspace",)
    assert ls.spec.platform == "runpod" and not ls.spec.fallback  # placed home: its file's own platform
    assert strays(ls.spec, None) == ()
    # Read only with its key set; a listed platform is read as ever.
    assert platforms_read([ls], KEYS) == {"runpod", "paperspace"}
    assert strays_read([ls], {"RUNPOD_API_KEY": "k"}) == set()
    assert platforms_read([ls], {"RUNPOD_API_KEY": "k"}) == {"runpod"}


def test_a_record_whose_entry_now_points_at_another_platform_places_the_job_home(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(job_text())
    _record(tmp_path / "job.yaml", entry=0, platform="runpod")  # entry 0 is paperspace in this file
    ls = _loaded(tmp_path, job_text())
    assert ls.entry == -1 and ls.spec.platform == "runpod" and ls.strays == ()


def test_without_the_flag_the_plan_says_what_is_left_there_and_plans_nothing(tmp_path: Path) -> None:
    ls = _no_fallback(tmp_path)
    plan = build_plan([ls], _live(_rp_pod(), _rp_volume(), _ps_machine("stopped")), now=NOW, env=KEYS)
    assert not [a for a in plan.all_actions() if a.platform == "paperspace"]
    said = [f for f in plan.jobs[0].findings if f.code == "release-left"]
    assert len(said) == 1 and said[0].severity == "info", said
    assert "on paperspace, which the job file no longer lists" in said[0].summary and "m1" not in said[0].fix
    assert "--release-left" in said[0].fix


def test_release_left_plans_only_the_teardown_there_each_delete_gated(tmp_path: Path) -> None:
    ls = _no_fallback(tmp_path)
    live = _live(_rp_pod(), _rp_volume(), _ps_machine("stopped"))
    plan = build_plan([ls], live, now=NOW, env=KEYS, release_left=True)
    there = [a for a in plan.all_actions() if a.platform == "paperspace"]
    assert [(a.id, a.kind) for a in there] == [
        ("bert.left.paperspace.checkpoints.pull", K.PULL),
        ("bert.left.paperspace.machine.terminate", K.TERMINATE),
    ]
    assert {a.kind for a in there} <= {K.PULL, K.TERMINATE, K.DELETE_VOLUME, K.RELEASE_IP, K.DELETE_SNAPSHOT}
    assert there[1].gated and "no longer lists" in there[1].reasons[0], there[1].reasons
    # The job's own platform is planned as the job file says, never touched by the stray's plan.
    own = [a for a in plan.all_actions() if a.platform == "runpod"]
    assert own and not [a for a in own if ".left." in a.id]
    assert "bert.left.paperspace.machine.terminate" in render_plan(plan, "text", color=False)
    assert not plan.blocked


def test_destroy_covers_the_unlisted_platform(tmp_path: Path) -> None:
    ls = _no_fallback(tmp_path, absent=True)
    plan = build_plan([ls], _live(_rp_pod(), _rp_volume(), _ps_machine("stopped")), now=NOW, env=KEYS)
    ids = [a.id for a in plan.all_actions()]
    assert {"bert.pod.terminate", "bert.network_volume.delete-volume"} <= set(ids)
    assert "bert.left.paperspace.machine.terminate" in ids
    assert ids.index("bert.pod.terminate") < ids.index("bert.left.paperspace.machine.terminate")


@pytest.mark.parametrize("release", [False, True])
def test_a_job_still_running_there_is_not_started_at_home_too(tmp_path: Path, release: bool) -> None:
    """Not with --release-left either: the job's own start would run before the deletes there."""
    ls = _no_fallback(tmp_path)
    live = _live(_rp_pod("stopped"), _rp_volume(), _ps_machine("running"))
    plan = build_plan([ls], live, now=NOW, env=KEYS, release_left=release)
    errors = [f for f in plan.jobs[0].findings if f.severity == "error" and f.code == "release-left"]
    assert plan.blocked and errors and "two runs" in errors[0].summary, plan.jobs[0].findings
    assert "put the fallback entry for paperspace back" in errors[0].fix and "state: stopped" in errors[0].fix
    # With the job stopped at home, the release of what runs there goes ahead.
    stopped = dataclasses.replace(ls, spec=ls.spec.model_copy(update={"state": "stopped"}))
    ok = build_plan([stopped], live, now=NOW, env=KEYS, release_left=True)
    assert not ok.blocked and "bert.left.paperspace.machine.terminate" in [a.id for a in ok.all_actions()]


def test_without_its_key_the_plan_says_the_platform_was_not_read(tmp_path: Path) -> None:
    ls = _no_fallback(tmp_path)
    plan = build_plan([ls], _live(_rp_pod(), _rp_volume()), now=NOW, env={"RUNPOD_API_KEY": "k"},
                      release_left=True)  # fmt: skip
    said = [f for f in plan.jobs[0].findings if f.code == "release-left"]
    assert (
        len(said) == 1
        and "paperspace was not read" in said[0].summary
        and "PAPERSPACE_API_KEY" in said[0].summary
    )


def test_a_runpod_volume_left_by_a_job_now_on_paperspace_only_is_deleted_as_a_volume(tmp_path: Path) -> None:
    """The job file now says paperspace (no fallback); its record says it moved from runpod."""
    _record(tmp_path / "job.yaml", entry=-1, platform="paperspace")
    ls = _loaded(tmp_path, PAPERSPACE_JOB, absent=True)
    assert ls.strays == ("runpod",)
    plan = build_plan(
        [ls], _live(_rp_pod("stopped"), _rp_volume(), _ps_machine("stopped")), now=NOW, env=KEYS
    )
    left = {a.id: a for a in plan.all_actions() if a.platform == "runpod"}
    assert set(left) >= {"bert.left.runpod.pod.terminate", "bert.left.runpod.network_volume.delete-volume"}
    volume = left["bert.left.runpod.network_volume.delete-volume"]
    assert "checkpoint.dir" in volume.data.summary, volume.data.summary  # its storage read from live
    # What the job file no longer describes is not judged: no trap of a made-up job there.
    assert not [
        f for f in plan.jobs[0].findings if f.summary.startswith("on runpod:") and f.severity == "error"
    ]
