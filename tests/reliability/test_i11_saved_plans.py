"""Issue 11, item 6: a saved plan is re-derived, never trusted. Edited plan files (gated flipped, a
foreign volume's id under our volume's name, changed kinds, a changed origin) are refused with a clear
message and the simulated account is unchanged; the applier's own check refuses a foreign id handed
to it directly; an honest saved destroy plan still applies. Real simulator with real pods, gpujob run
as real processes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gpujob.sim.testing import Sim
from tests.reliability.ownership_kit import Checkout, account, alive, job_text, pods_simulator

Plan = dict[str, Any]
APPROVE = ["--approve", "bert.pod.terminate", "--approve", "bert.network_volume.delete-volume"]


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Sim]:
    with pods_simulator(tmp_path / "sim") as s:
        yield s


def team_volume(sim: Sim) -> str:
    """A volume gpujob never made, in the job's data center."""
    from gpujob.providers.base import VolumeRequest
    from gpujob.providers.registry import open_providers

    async def go() -> str:
        async with open_providers({"runpod"}, env=dict(sim.env)) as providers:
            vol = await providers["runpod"].create_volume(
                VolumeRequest(name="team-shared-dataset", size_gb=50, region="EU-RO-1")
            )
            return vol.id

    return asyncio.run(go())


def forge(src: Path, dst: Path, edit: Callable[[Plan], None]) -> Path:
    plan = json.loads(src.read_text())
    edit(plan)
    dst.write_text(json.dumps(plan, indent=2))
    return dst


def actions(plan: Plan) -> list[dict[str, Any]]:
    return [a for j in plan["jobs"] for a in j["actions"]]


def refused(c: Checkout, sim: Sim, plan: Path, *expect: str) -> str:
    """Apply `plan` with every approval it could want: refused, naming `expect`, nothing changed."""
    before = account(sim)
    run = c.gj("apply", plan.name, "--auto-approve", *APPROVE, check=False)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    for text in expect:
        assert text in out, out
    assert "Destroy finished" not in out and "Apply finished" not in out
    assert account(sim) == before, f"{plan.name} changed the account"
    return out


def test_edited_plan_files_are_refused_and_the_account_is_unchanged(tmp_path: Path, sim: Sim) -> None:
    c = Checkout(tmp_path / "a", sim)
    c.write("job.yaml", job_text("bert"))
    c.gj("apply", "--auto-approve")
    (pod,) = alive(sim)
    (ours,) = alive(sim, "volumes")
    team = team_volume(sim)
    c.gj("plan", "-o", "running.json", check=False)  # nothing to do: one no-op
    c.write("job.yaml", job_text("bert", state="absent"))
    c.gj("plan", "-o", "destroy.json", check=False)  # terminate + delete-volume, both gated
    destroy = json.loads((c.dir / "destroy.json").read_text())
    assert [(a["id"], a["gated"]) for a in actions(destroy)] == [
        ("bert.pod.terminate", True),
        ("bert.network_volume.delete-volume", True),
    ]

    # 1. A no-op plan turned into terminate + delete-volume with "gated": false.
    def ungated_teardown(plan: Plan) -> None:
        job = plan["jobs"][0]
        steps = [dict(a, gated=False) for a in actions(destroy)]
        job["actions"], job["desired_state"] = steps, "running"

    c.write("job.yaml", job_text("bert"))  # the job file the no-op plan was made from
    flipped = forge(c.dir / "running.json", c.dir / "flipped.json", ungated_teardown)
    refused(c, sim, flipped, "bert.pod.terminate: gated is false", "gated follows the action kind")

    # 2. The same teardown with consistent flags: not what the job file and the account give now.
    def teardown(plan: Plan) -> None:
        plan["jobs"][0]["actions"] = actions(destroy)

    grafted = forge(c.dir / "running.json", c.dir / "grafted.json", teardown)
    out = refused(
        c, sim, grafted, "not the plan gpujob derives now", "bert.pod.terminate: saved as terminate"
    )
    assert "bert.pod.no-op: derived now" in out

    # 3. A no-op whose kind was changed to terminate (id and target unchanged).
    def kind_changed(plan: Plan) -> None:
        plan["jobs"][0]["actions"][0].update(kind="terminate", gated=True)

    changed = forge(c.dir / "running.json", c.dir / "kind.json", kind_changed)
    refused(c, sim, changed, "bert.pod.no-op: kind is 'terminate' in the saved plan, 'no-op' derived now")

    # 4. The honest destroy plan with the foreign volume's id under our volume's name, then under its own.
    c.write("job.yaml", job_text("bert", state="absent"))
    for name in (ours["name"], "team-shared-dataset"):

        def foreign(plan: Plan, name: str = name) -> None:
            actions(plan)[1].update(resource_id=team, resource_name=name)

        forged = forge(c.dir / "destroy.json", c.dir / "foreign.json", foreign)
        refused(c, sim, forged, f"resource_id is '{team}' in the saved plan, '{ours['id']}' derived now")

    # 5. An apply plan relabelled as an audit --fix plan is derived as one, and is not one.
    def relabelled(plan: Plan) -> None:
        plan["origin"] = "audit-fix"

    fix = forge(c.dir / "destroy.json", c.dir / "fix.json", relabelled)
    refused(c, sim, fix, "gpujob audit --fix -o fix.json")

    # Our pod and volume and the team's volume are all still there; the honest plan still applies.
    assert {p["id"] for p in alive(sim)} == {pod["id"]}
    assert {v["id"] for v in alive(sim, "volumes")} == {ours["id"], team}
    done = c.gj("apply", "destroy.json", *APPROVE)
    assert "0 failed" in done.stderr, done.stderr
    assert alive(sim) == [] and [v["id"] for v in alive(sim, "volumes")] == [team]


def test_the_applier_refuses_a_foreign_id_handed_to_it_directly(tmp_path: Path, sim: Sim) -> None:
    """Below the plan-file check: apply_plan itself re-reads each target before destroying it."""
    from gpujob.apply.applier import apply_plan
    from gpujob.plan.model import Plan as PlanModel
    from gpujob.project import with_projects
    from gpujob.providers.registry import open_providers
    from gpujob.spec.load import load_specs

    c = Checkout(tmp_path / "a", sim)
    job = c.write("job.yaml", job_text("bert"))
    c.gj("apply", "--auto-approve")
    team = team_volume(sim)
    c.write("job.yaml", job_text("bert", state="absent"))
    c.gj("plan", "-o", "destroy.json", check=False)
    plan = json.loads((c.dir / "destroy.json").read_text())
    actions(plan)[1].update(resource_id=team)  # our volume's name, the team's id
    forged = PlanModel.model_validate(plan)
    before = account(sim)

    async def go() -> Any:
        loaded = with_projects(load_specs([job]), create=False)
        async with open_providers({"runpod"}, env=dict(sim.env)) as providers:
            only_delete = forged.model_copy(
                update={"jobs": [forged.jobs[0].model_copy(update={"actions": forged.jobs[0].actions[1:]})]}
            )
            return await apply_plan(
                only_delete,
                loaded,
                providers,
                approvals={"bert.network_volume.delete-volume"},
                auto_approve=True,
            )

    result = asyncio.run(go())
    msg = result.failed["bert.network_volume.delete-volume"]
    assert f"refusing to delete network_volume team-shared-dataset ({team})" in msg
    assert "does not belong to job 'bert'" in msg
    assert account(sim) == before
