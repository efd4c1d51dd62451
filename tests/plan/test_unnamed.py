"""What the job file no longer names, the plan still shows (#41): a job changed in place (turned into a
sweep, renamed) leaves its machine running; `plan` and `destroy` show it with its $/h and the gated end,
and a sweep's volume, named like the job the sweep once was, stays the sweep's."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gpujob.live import LiveState
from gpujob.plan.model import ActionKind, Plan
from gpujob.plan.planner import build_plan
from gpujob.plan.unnamed import with_unnamed
from gpujob.render import render_plan
from gpujob.spec.load import load_specs
from tests.owners import PROJECT

CASE = Path(__file__).resolve().parents[1] / "golden" / "runpod-running-noop"
SWEEP = "sweep:\n  machines: 2\n  matrix: {LR: ['1e-3', '3e-4']}\n  est: 20m\n"


def plan_of(tmp_path: Path, text: str, *, destroy: bool = False, without: str = "") -> Plan:
    (tmp_path / "job.yaml").write_text(text)
    live = LiveState.model_validate_json((CASE / "live.json").read_text())
    live = live.model_copy(update={"resources": [r for r in live.resources if r.id != without]})
    loaded = [dataclasses.replace(ls, project=PROJECT) for ls in load_specs([tmp_path / "job.yaml"])]
    if destroy:
        from gpujob.cli.session import as_absent

        loaded = as_absent(loaded)
    return build_plan(with_unnamed(loaded, live), live, now=live.read_at, env={"HF_TOKEN": "x"})


def job_yaml() -> str:
    return (CASE / "job.yaml").read_text().replace("  max_runtime: 12h\n", "")


@pytest.mark.parametrize("destroy", [False, True])
def test_a_job_turned_into_a_sweep_plans_its_old_machine_with_its_rate_and_a_gated_end(
    tmp_path: Path, destroy: bool
) -> None:
    plan = plan_of(tmp_path, job_yaml() + SWEEP, destroy=destroy)
    assert [j.job for j in plan.jobs] == ["llama--q1", "llama--q2", "llama"]
    old = plan.jobs[-1]
    assert old.desired_state == "absent" and old.current_usd_per_hour > 2
    (end,) = [a for a in old.actions if a.kind is ActionKind.TERMINATE]
    assert end.resource_id == "pod-llama" and end.gated
    assert not [a for a in plan.all_actions() if a.kind is ActionKind.DELETE_VOLUME and not destroy]
    # the sweep's shared volume (gpujob-llama--ckpts--…) is the sweep's: never the old job's to delete
    assert not [a for a in old.actions if a.resource_id == "nv-llama"]
    (why,) = [f for f in old.findings if f.code == "unnamed"]
    assert why.summary.startswith(f"{tmp_path / 'job.yaml'} turned job 'llama' into a sweep, but what it made "
                                  "still bills $2.99/h: pod gpujob-llama--testproj (pod-llama, running)"), why.summary  # fmt: skip
    assert f"--approve {end.id}" in (why.fix or "")
    if not destroy:  # the old pod writes the volume the sweep's queues mount: it must end first, and how
        (busy,) = [f for f in plan.jobs[0].findings if f.code == "concurrent-writers"]
        assert "it is job 'llama''s, which the job file no longer names" in (busy.fix or ""), busy.fix
        assert "name job 'llama' again with state: parked" in (busy.fix or "")
    text = render_plan(plan, "text")
    assert "── llama · runpod" in text and "wants absent" in text and "[unnamed]" in text, text


def test_a_renamed_job_plans_the_old_jobs_machine_and_volume_gated(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, job_yaml().replace("name: llama", "name: bert"))
    old = next(j for j in plan.jobs if j.job == "llama")
    ends = {(a.kind, a.resource_id) for a in old.actions if a.gated}
    assert ends == {(ActionKind.TERMINATE, "pod-llama"), (ActionKind.DELETE_VOLUME, "nv-llama")}, old.actions
    (why,) = [f for f in old.findings if f.code == "unnamed"]
    assert "no longer names job 'llama' (renamed or removed)" in why.summary
    assert [j.job for j in plan_of(tmp_path, job_yaml()).jobs] == ["llama"]  # named: nothing added


def test_a_queue_never_created_is_not_called_parked_or_deleted_outside_gpujob(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, job_yaml() + SWEEP, without="pod-llama")  # only the sweep's volume is there
    assert [j.job for j in plan.jobs] == ["llama--q1", "llama--q2"]
    (create,) = [a for a in plan.jobs[0].actions if a.kind is ActionKind.CREATE]
    assert create.reasons[0] == "pod gpujob-llama--q1--testproj does not exist", create.reasons
    assert not create.drift


def test_a_job_file_not_given_on_the_command_line_still_names_its_job(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`gpujob plan jobs/bert.yaml` while jobs/llama.yaml's pod runs: llama is named, never ended."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "llama.yaml").write_text(job_yaml())
    (tmp_path / "jobs" / "bert.yaml").write_text(job_yaml().replace("name: llama", "name: bert"))
    live = LiveState.model_validate_json((CASE / "live.json").read_text())
    given = [dataclasses.replace(ls, project=PROJECT) for ls in load_specs([tmp_path / "jobs" / "bert.yaml"])]
    assert [ls.spec.name for ls in with_unnamed(given, live)] == ["bert"]
    (tmp_path / "jobs" / "llama.yaml").write_text("version: 1\nname: [broken\n")  # unreadable: unknown
    assert [ls.spec.name for ls in with_unnamed(given, live)] == ["bert"]
    (tmp_path / "jobs" / "llama.yaml").unlink()  # no file names it any more
    assert [ls.spec.name for ls in with_unnamed(given, live)] == ["bert", "llama"]
