"""`audit --fix`: a plan that removes exactly this repo's idle spend, every teardown gated."""

from __future__ import annotations

import pytest

from gpujob.audit.classify import classify
from gpujob.audit.fix import FixJob, build_fix_plan
from gpujob.live import LiveState
from gpujob.plan.model import GATED, ActionKind, Plan
from gpujob.plan.planner import live_fingerprint
from gpujob.profile import load_profile
from tests.audit.audit_seed import DAY, LOCAL_JOBS, NOW
from tests.owners import OTHER, PROJECT, machine
from tests.owners import volume as owned_volume

JOBS = [
    FixJob(
        name="bert",
        platform="runpod",
        spec_file="bert.job.yaml",
        has_checkpoint=True,
        digest="a" * 64,
        project=PROJECT,
    ),
    FixJob(
        name="sweep",
        platform="runpod",
        spec_file="sweep.job.yaml",
        has_checkpoint=True,
        digest="b" * 64,
        project=PROJECT,
    ),
    FixJob(
        name="render",
        platform="paperspace",
        spec_file="render.job.yaml",
        has_checkpoint=False,
        digest="c" * 64,
        project=PROJECT,
    ),
]


@pytest.fixture
def plan(seeded_live: LiveState) -> Plan:
    report = classify(
        seeded_live, local_jobs=LOCAL_JOBS, now=NOW, idle_threshold_s=DAY, profiles=load_profile
    )
    return build_fix_plan(report, seeded_live, JOBS, now=NOW, profiles=load_profile)


def test_removes_exactly_the_owned_idle_spend(seeded_live: LiveState, plan: Plan) -> None:
    report = classify(
        seeded_live, local_jobs=LOCAL_JOBS, now=NOW, idle_threshold_s=DAY, profiles=load_profile
    )
    owned_idle = {i.id: i for i in report.items if i.owner == "this-repo" and i.idle and i.billable}
    removing = {a.resource_id: a for a in plan.all_actions() if a.kind is not ActionKind.PULL}
    assert set(removing) == set(owned_idle)
    assert sum(a.billing.hourly_before for a in removing.values()) == pytest.approx(
        sum(i.usd_per_hour for i in owned_idle.values()), abs=1e-9
    )
    assert sum(i.usd_per_month for i in owned_idle.values()) == pytest.approx(
        sum(t.owned_idle_usd_per_month for t in report.totals), abs=1e-3
    )
    for a in removing.values():
        assert a.billing.hourly_after == 0.0
        assert sum(m.usd_per_hour for m in a.billing.stops) == pytest.approx(
            a.billing.hourly_before, abs=1e-6
        )


def test_foreign_and_other_projects_untouched(plan: Plan) -> None:
    names = {a.resource_name for a in plan.all_actions()}
    assert not names & {
        machine("llama", OTHER),
        "gpujob-old",
        "sky-vol",
        "my-notebook",
        "nightly",
        "203.0.113.20",
    }
    # In use: not idle, so not touched.
    assert not names & {machine("bert"), owned_volume("bert", "ckpt")}
    # Idle 2 h is still idle spend: the threshold only decides the exit code.
    assert owned_volume("sweep", "fast") in names


def test_every_teardown_gated_and_pull_first(plan: Plan) -> None:
    acts = plan.all_actions()
    assert acts and all(a.gated for a in acts if a.kind in GATED)
    assert all(a.gated for a in acts if a.kind is not ActionKind.PULL)
    ids = [a.id for a in acts]
    assert ids.index("sweep.pod.pull") < ids.index("sweep.pod.terminate")
    term = next(a for a in acts if a.id == "sweep.pod.terminate")
    assert term.depends_on == ["sweep.pod.pull"]
    assert term.data.irreversible and "volume_disk" in term.data.wipes
    assert term.findings and term.findings[0].code == "RP4"
    # render has no checkpoint section: no pull; IP and snapshot follow the machine's destroy.
    render = {a.id: a for a in acts if a.job == "render"}
    assert set(render) == {
        "render.machine.terminate",
        "render.public_ip.release-ip",
        "render.snapshot.delete-snapshot",
    }
    assert render["render.public_ip.release-ip"].depends_on == ["render.machine.terminate"]
    assert render["render.machine.terminate"].data.wipes == ["block_storage"]


def test_plan_round_trips_as_json(seeded_live: LiveState, plan: Plan) -> None:
    again = Plan.model_validate_json(plan.model_dump_json())
    assert again == plan
    assert [j.job for j in plan.jobs] == ["render", "sweep"]
    # apply's stale-plan guard recomputes both over the job files the plan names (not bert's).
    assert plan.live_fingerprint == live_fingerprint(seeded_live, {"render": PROJECT, "sweep": PROJECT})
    import hashlib

    expected = hashlib.sha256()
    for j in sorted(JOBS[1:], key=lambda j: j.spec_file):
        expected.update(f"{j.spec_file}\0{j.digest}\n".encode())
    assert plan.spec_digest == expected.hexdigest()


def test_fingerprint_covers_only_what_the_jobs_own(seeded_live: LiveState) -> None:
    report = classify(
        seeded_live, local_jobs={"sweep": PROJECT}, now=NOW, idle_threshold_s=DAY, profiles=load_profile
    )
    plan = build_fix_plan(report, seeded_live, JOBS[1:2], now=NOW, profiles=load_profile)
    foreign_changed = LiveState(
        read_at=NOW, resources=[r for r in seeded_live.resources if r.name != "my-notebook"]
    )
    assert plan.live_fingerprint == live_fingerprint(foreign_changed, {"sweep": PROJECT})
    sweep_changed = LiveState(
        read_at=NOW, resources=[r for r in seeded_live.resources if r.name != owned_volume("sweep", "data")]
    )
    assert plan.live_fingerprint != live_fingerprint(sweep_changed, {"sweep": PROJECT})


def test_nothing_owned_idle_gives_empty_plan(seeded_live: LiveState) -> None:
    report = classify(
        seeded_live, local_jobs={"bert": PROJECT}, now=NOW, idle_threshold_s=DAY, profiles=load_profile
    )
    plan = build_fix_plan(report, seeded_live, JOBS[:1], now=NOW, profiles=load_profile)
    assert plan.jobs == [] and not plan.has_changes
