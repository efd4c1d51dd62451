"""What a move left behind: --release-left and a destroy across platforms, as planned (pure)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpujob import naming
from gpujob.apply.rederive import differences
from gpujob.failover.leftover import aside, left_loaded, platforms_left, split_left
from gpujob.live import LiveResource, LiveState, PriceQuote
from gpujob.plan.model import ActionKind, Plan
from gpujob.plan.planner import build_plan
from gpujob.project.placement import placed_spec
from gpujob.render import render_plan
from gpujob.spec.load import load_spec
from tests.failover.jobs import job_text

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
PROJECT = "testproj"
K = ActionKind


def _loaded(tmp_path: Path, text: str, *, entry: int = 0, absent: bool = False):  # type: ignore[no-untyped-def]
    p = tmp_path / "job.yaml"
    p.write_text(text)
    ls = dataclasses.replace(load_spec(p), project=PROJECT)
    declared = ls.spec.model_copy(update={"state": "absent"}) if absent else ls.spec
    return dataclasses.replace(ls, spec=placed_spec(declared, entry), declared=declared, entry=entry)


def _rp_pod(status: str = "stopped") -> LiveResource:
    return LiveResource(platform="runpod", kind="pod", id="p1", name=naming.machine_name("bert", PROJECT),
                        status=status, gpu_id="NVIDIA GeForce RTX 4090", gpu_count=1, network_volume_id="v1",
                        mount_path="/workspace", region="EU-RO-1", attributes={"project": PROJECT})  # fmt: skip


def _rp_volume() -> LiveResource:
    return LiveResource(platform="runpod", kind="network_volume", id="v1", status="available", volume_gb=20,
                        name=naming.volume_name("bert", "ckpts", PROJECT), region="EU-RO-1")  # fmt: skip


def _ps_machine(status: str = "running") -> LiveResource:
    return LiveResource(platform="paperspace", kind="machine", id="m1", name=naming.machine_name("bert", PROJECT),
                        status=status, gpu_id="A4000", gpu_count=1, region="ny2", volume_gb=50)  # fmt: skip


def _no_stock() -> list[PriceQuote]:
    return [PriceQuote(platform="runpod", gpu_id=g, cloud="secure", price_hour=0.7, available=False, source="t",
                       as_of=NOW) for g in ("NVIDIA GeForce RTX 4090", "NVIDIA RTX A6000")]  # fmt: skip


def _live(*resources: LiveResource) -> LiveState:
    return LiveState(read_at=NOW, resources=list(resources))


@pytest.fixture
def moved(tmp_path: Path):  # type: ignore[no-untyped-def]
    return _loaded(tmp_path, job_text())


def test_nothing_left_is_planned_without_the_flag(moved) -> None:  # type: ignore[no-untyped-def]
    plan = build_plan([moved], _live(_rp_pod(), _rp_volume(), _ps_machine()), now=NOW, env={})
    assert not [a for a in plan.all_actions() if ".left." in a.id]
    assert not plan.release_left
    # ...but the plan says what is left there and what it keeps costing: its own cost lines are Paperspace's.
    (finding,) = [f for f in plan.jobs[0].findings if f.code == "failover"]
    pod, vol = naming.machine_name("bert", PROJECT), naming.volume_name("bert", "ckpts", PROJECT)
    assert f"left on runpod: pod {pod} stopped, network_volume {vol} available, $1.40/month while kept" in (
        finding.detail
    ), finding.detail
    assert "gpujob plan --release-left" in finding.detail
    alone = build_plan([moved], _live(_ps_machine()), now=NOW, env={})
    assert "left on" not in next(f for f in alone.jobs[0].findings if f.code == "failover").detail


def test_release_left_plans_one_gated_delete_per_resource_on_the_old_platform(moved) -> None:  # type: ignore[no-untyped-def]
    live = _live(_rp_pod(), _rp_volume(), _ps_machine())
    plan = build_plan([moved], live, now=NOW, env={}, release_left=True)
    assert plan.release_left and len(plan.jobs) == 1
    jp = plan.jobs[0]
    left = [a for a in jp.actions if a.id.startswith("bert.left.runpod.")]
    assert [(a.kind, a.resource_id) for a in left] == [
        (K.PULL, "p1"),
        (K.TERMINATE, "p1"),
        (K.DELETE_VOLUME, "v1"),
    ]
    assert [a.id for a in left] == [
        "bert.left.runpod.checkpoints.pull",
        "bert.left.runpod.pod.terminate",
        "bert.left.runpod.network_volume.delete-volume",
    ]
    assert all(a.platform == "runpod" for a in left)
    assert [a.gated for a in left] == [False, True, True]
    # Each depends on the left pull, by its own address (never the job's own actions there).
    assert left[1].depends_on == ["bert.left.runpod.checkpoints.pull"]
    assert set(left[2].depends_on) == {"bert.left.runpod.pod.terminate", "bert.left.runpod.checkpoints.pull"}
    # The pull lands beside the job's own copies, never over them.
    assert "./checkpoints-from-runpod" in left[0].reasons[2] or any(
        "-from-runpod" in r for r in left[0].reasons
    )
    assert all(a.reasons[0].startswith("left on runpod: the job runs on paperspace now") for a in left)
    assert left[2].data.irreversible and "deletes the volume" in left[2].data.summary
    # The job's own platform is untouched: its machine runs and matches.
    own = [a for a in jp.actions if not a.id.startswith("bert.left.")]
    assert [a.kind for a in own] == [K.NOOP] and own[0].platform == "paperspace"
    # The money: the volume's meter stops.
    assert left[2].billing.stops and jp.after_usd_per_hour <= jp.current_usd_per_hour


def test_the_renderers_show_the_left_actions_like_any_other(moved) -> None:  # type: ignore[no-untyped-def]
    plan = build_plan(
        [moved], _live(_rp_pod(), _rp_volume(), _ps_machine()), now=NOW, env={}, release_left=True
    )
    text = render_plan(plan, "text", color=False)
    assert "bert.left.runpod.network_volume.delete-volume" in text and "[gated]" in text
    md = render_plan(plan, "markdown", color=False)
    assert "bert.left.runpod.pod.terminate" in md
    again = Plan.model_validate_json(render_plan(plan, "json"))
    assert again.release_left and differences(again, plan) == []


def test_failback_auto_says_the_old_storage_is_gone_for_a_failback(tmp_path: Path) -> None:
    ls = _loaded(tmp_path, job_text() + "failback: auto\n")
    live = _live(_rp_pod(), _rp_volume(), _ps_machine()).model_copy(update={"quotes": _no_stock()})
    plan = build_plan([ls], live, now=NOW, env={}, release_left=True)  # runpod cannot serve: no failback
    volume = next(a for a in plan.all_actions() if a.kind is K.DELETE_VOLUME)
    assert any("failback: auto" in r and "new disk" in r for r in volume.reasons), volume.reasons
    pull = next(a for a in plan.all_actions() if a.kind is K.PULL)
    assert not any("failback" in r for r in pull.reasons)


def test_destroy_of_a_moved_job_plans_every_platform(tmp_path: Path) -> None:
    ls = _loaded(tmp_path, job_text(), absent=True)
    plan = build_plan([ls], _live(_rp_pod(), _rp_volume(), _ps_machine("stopped")), now=NOW, env={})
    ids = [a.id for a in plan.all_actions()]
    assert "bert.machine.terminate" in ids  # where it runs now: its own address
    assert {"bert.left.runpod.pod.terminate", "bert.left.runpod.network_volume.delete-volume"} <= set(ids)
    assert all(a.gated for a in plan.all_actions() if a.kind in (K.TERMINATE, K.DELETE_VOLUME))
    assert ids.index("bert.machine.terminate") < ids.index("bert.left.runpod.pod.terminate")
    assert plan.jobs[0].after_usd_per_hour == 0


def test_destroy_with_nothing_where_it_runs_drops_the_no_op(tmp_path: Path) -> None:
    ls = _loaded(tmp_path, job_text(), absent=True)
    plan = build_plan([ls], _live(_rp_volume()), now=NOW, env={})
    kinds = [a.kind for a in plan.all_actions()]
    assert kinds == [K.DELETE_VOLUME], kinds  # no "nothing to destroy" no-op beside it


def test_a_job_that_never_moved_destroys_a_half_made_fallback_machine(tmp_path: Path) -> None:
    ls = _loaded(tmp_path, job_text(), entry=-1, absent=True)
    plan = build_plan([ls], _live(_rp_volume(), _ps_machine("stopped")), now=NOW, env={})
    assert "bert.left.paperspace.machine.terminate" in [a.id for a in plan.all_actions()]


def test_platforms_left_and_the_variant(moved) -> None:  # type: ignore[no-untyped-def]
    assert platforms_left(moved, _live(_ps_machine())) == []
    assert platforms_left(moved, _live(_ps_machine(), _rp_volume())) == ["runpod"]
    v = left_loaded(moved, "runpod")
    assert v.spec.platform == "runpod" and v.spec.state == "absent" and v.entry == -1
    assert v.spec.checkpoint.pull_to == aside(moved.spec.checkpoint.pull_to, "runpod")
    assert aside("./checkpoints/", "runpod") == "./checkpoints-from-runpod"


def test_split_left_takes_the_left_actions_out(moved) -> None:  # type: ignore[no-untyped-def]
    plan = build_plan(
        [moved], _live(_rp_pod(), _rp_volume(), _ps_machine()), now=NOW, env={}, release_left=True
    )
    rest, groups = split_left(plan)
    assert list(groups) == [("bert", "runpod")] and len(groups[("bert", "runpod")]) == 3
    assert [a.kind for a in rest.all_actions()] == [K.NOOP]


def test_no_release_while_the_job_moves(tmp_path: Path) -> None:
    ls = _loaded(tmp_path, job_text(), entry=-1)
    live = LiveState(read_at=NOW, resources=[_rp_pod(), _ps_machine("stopped")], quotes=_no_stock())
    plan = build_plan([ls], live, now=NOW, env={}, release_left=True)
    assert [a.kind for a in plan.all_actions()] == [K.MOVE]
    assert any(f.code == "release-left" for f in plan.jobs[0].findings)


def test_the_run_log_of_another_platform_lands_aside_and_proves_nothing_away(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from gpujob.apply.reach_evidence import nothing_to_protect
    from gpujob.layout.outputs import output_roots, pull_to

    ls = _loaded(tmp_path, job_text())
    bare = ls.spec.model_copy(update={"checkpoint": None, "outputs": None})
    ls = dataclasses.replace(ls, spec=bare, declared=ls.declared.model_copy(update={"checkpoint": None}))
    v = left_loaded(ls, "runpod", applying=True)
    assert output_roots(v.spec) == [] and pull_to(v.spec, ls.path) == tmp_path / "outputs-from-runpod"
    assert left_loaded(ls, "runpod").spec.outputs is None  # the plan: no outputs block made up
    created = SimpleNamespace(phase="done", kind="create", resource_id="p1", at=NOW)
    assert nothing_to_protect(v.spec, "p1", [created], None, None) is not None  # the reach rule still holds
    from gpujob.jobfile.model import OutputsSpec

    with_outputs = v.spec.model_copy(update={"outputs": OutputsSpec(paths=["/workspace/out"])})
    assert nothing_to_protect(with_outputs, "p1", [created], None, None) is None


def test_watch_never_deletes_what_the_job_left_even_approved(tmp_path: Path) -> None:
    from gpujob.watch.policy import decide

    ls = _loaded(tmp_path, job_text(), absent=True)
    plan = build_plan([ls], _live(_rp_pod(), _rp_volume(), _ps_machine("stopped")), now=NOW, env={})
    jp = plan.jobs[0]
    every = {a.id for a in jp.actions if a.gated}
    d = decide(jp, ls.spec, _ps_machine("stopped"), approved=every)
    assert not [a for a in d.actions if ".left." in a.id] and not [i for i in d.approvals if ".left." in i]
    assert {a.id for a in d.held} >= {a.id for a in jp.actions if ".left." in a.id}
    assert "bert.machine.terminate" in d.approvals  # its own platform's approved teardown goes on
    assert any("gpujob apply --release-left" in h for h in d.human)


def test_a_finished_destroy_places_the_job_home_again(tmp_path: Path) -> None:
    from gpujob.failover.leftover import home_again
    from gpujob.project.placement import Move, Placement, read_placement, write_placement
    from gpujob.state import open_store

    ls = _loaded(tmp_path, job_text(), absent=True)
    store = open_store(ls.path)
    move = Move(at=NOW, from_entry=-1, to_entry=0, from_platform="runpod", to_platform="paperspace", why="t",
                outcome="done")  # fmt: skip
    write_placement(store, Placement(job="bert", entry=0, platform="paperspace", since=NOW, moves=[move]))
    home_again(ls, NOW.replace(hour=13))
    rec = read_placement(store, "bert")
    assert rec is not None and (rec.entry, rec.platform) == (-1, "runpod") and rec.moves == [move]
    from gpujob.project.placement import placed

    back = placed(dataclasses.replace(ls, spec=ls.declared, declared=None, entry=-1), store)
    assert back.spec.platform == "runpod" and back.entry == -1


def test_the_records_are_borrowed_only_under_the_jobs_lock(tmp_path: Path) -> None:
    from gpujob.errors import GpujobError
    from gpujob.failover.leftover import borrowed_records
    from gpujob.state import open_store

    (tmp_path / "job.yaml").write_text("x")
    store = open_store(tmp_path / "job.yaml")
    store.write("pulls/bert.json", b"theirs")
    with pytest.raises(GpujobError, match="only under the job's lock"), borrowed_records(store, "bert"):
        pass
    with store.lock("bert"), borrowed_records(store, "bert"):
        store.write("pulls/bert.json", b"the other platform's")
    assert store.read("pulls/bert.json") == b"theirs"


def test_what_was_pulled_from_another_platform_is_never_synced_as_code(tmp_path: Path) -> None:
    """The aside folders (<pull_to>-from-<platform>) sit beside the code; the next sync must not send
    the old platform's checkpoints to the machine (init's .gitignore and exclude name only pull_to)."""
    from gpujob.apply.runtime import sync_patterns
    from gpujob.ssh.ignore import walk

    text = job_text().replace("  pull_to: ./checkpoints\n", "  pull_to: ./ck[1]\n")
    assert "pull_to: ./ck[1]" in text
    spec = _loaded(tmp_path, text).spec
    src = tmp_path / "src"
    for rel in ["train.py", "ck[1]-from-runpod/step_1.json", "ck[1]-from-paperspace/step_2.json",
                "outputs-from-runpod/metrics.json", "ck1-from-runpod/data.py", "ck[1]-from-runpod.py"]:  # fmt: skip
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("x")
    sent = sorted(e.rel for e in walk(src, sync_patterns(spec)))
    assert sent == ["ck1-from-runpod/data.py", "ck[1]-from-runpod.py", "train.py"], sent


def test_status_of_a_moved_job_names_only_what_is_left_and_what_was_spent_elsewhere() -> None:
    """A job moved twice to Paperspace (destroyed and recreated in between) has a RunPod history of gone
    resources with the same names as the ones it holds there now: `also on` lists what is there, and
    once nothing is, `also spent` keeps the job's money whole."""
    from gpujob.cli.cmd_status import _lines, elsewhere_rows
    from gpujob.cost.spend import SpendLine
    from gpujob.plan.costs import JobCost

    def line(kind: str, state: str, usd: float) -> SpendLine:
        return SpendLine(platform="runpod", kind=kind, id=f"{kind}-{state}", name=f"gpujob-bert--{kind}",
                         state=state, usd=usd, source="billing")  # fmt: skip

    held = JobCost(job="bert", platform="runpod", spec_file="job.yaml", spent_usd=0.0114, burn_usd_per_hour=0.0019,
                   resources=[line("pod", "stopped", 0.002), line("network_volume", "available", 0.002),
                              line("pod", "gone", 0.004), line("network_volume", "gone", 0.0034)])  # fmt: skip
    row = {"job": "bert", "platform": "paperspace", "desired": "running", "machine": None} | elsewhere_rows(
        [held]
    )
    row |= {"usd_per_hour": 0.77, "cost_usd": 1.5, "cost_source": "estimate"}
    (also,) = [x for x in _lines(row) if x.startswith("  also on:")]
    (cost,) = [x for x in _lines(row) if x.startswith("  cost:")]
    assert "$0.77/h now (every resource of the job on paperspace), $1.50 spent so far" in cost, cost
    assert "pod gpujob-bert--pod stopped, network_volume gpujob-bert--network_volume available;" in also, also
    assert "gone" not in also and "$0.0114 spent" in also, also
    gone = held.model_copy(update={"resources": [line("pod", "gone", 0.7), line("network_volume", "gone", 0.07)],
                                   "spent_usd": 0.77, "burn_usd_per_hour": 0.0})  # fmt: skip
    row = {"job": "bert", "platform": "runpod", "desired": "running", "machine": None} | elsewhere_rows(
        [gone]
    )
    text = _lines(row)
    assert not [x for x in text if "also on:" in x], text
    assert "  also spent: runpod: $0.77 before the job left it" in "\n".join(text), text
