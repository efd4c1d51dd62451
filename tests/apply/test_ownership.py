"""The applier's own ownership checks (gpujob/apply/ownership.py), whatever the plan handed to it says:
a destructive call on a resource that is not the job's is refused; another checkout's running machine
of the same job name blocks a create; two creates at once settle on the first one made."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpujob.live import LiveResource
from gpujob.plan.model import ActionKind
from tests.apply.fakes import action, make_plan
from tests.apply.test_applier import World, create_plan
from tests.owners import OTHER, PROJECT, machine
from tests.owners import volume as owned_volume

VOL_APPROVAL = {"toy.network_volume.delete-volume"}


def foreign_volume(w: World, name: str = "team-shared-dataset") -> LiveResource:
    return w.prov._save(
        LiveResource(platform="runpod", kind="network_volume", id="vol-team", name=name, status="available")
    )


def test_delete_of_a_foreign_volume_is_refused_even_when_the_plan_names_it_as_ours(tmp_path):
    w = World(tmp_path, checkpoint=None)
    team = foreign_volume(w)
    # The plan says "our volume" by name, but carries the foreign id.
    forged = make_plan(
        ("toy", [action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id=team.id)])
    )
    assert forged.jobs[0].actions[0].resource_name == owned_volume("toy", "ckpts")
    res = w.apply(forged, approvals=VOL_APPROVAL)
    msg = res.failed["toy.network_volume.delete-volume"]
    assert "refusing to delete network_volume team-shared-dataset (vol-team)" in msg
    assert "does not belong to job 'toy'" in msg and "nothing was changed" in msg
    assert team.id in w.prov.resources and ("delete_volume", team.id) not in w.prov.calls
    # Refused before the gate looks at it: no temporary pod ever mounted the foreign volume.
    assert not [c for c in w.prov.calls if c[0] == "create_machine"] and w.ssh.commands == []


def test_a_volume_with_our_job_name_but_another_project_is_not_ours(tmp_path):
    w = World(tmp_path, checkpoint=None)
    theirs = foreign_volume(w, owned_volume("toy", "ckpts", OTHER))
    res = w.apply(
        make_plan(
            ("toy", [action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id=theirs.id)])
        ),
        approvals=VOL_APPROVAL,
    )
    assert f"it belongs to project {OTHER}" in res.failed["toy.network_volume.delete-volume"]
    assert theirs.id in w.prov.resources


def test_a_pod_with_our_name_but_another_env_marker_is_never_terminated(tmp_path):
    w = World(tmp_path, checkpoint=None)
    assert w.apply(create_plan()).ok
    pod = next(r for r in w.prov.resources.values() if r.kind == "pod")
    # Someone re-marked it (or made a pod by hand with our name): name and env disagree.
    w.prov._save(pod.model_copy(update={"attributes": {"project": OTHER}}))
    res = w.apply(
        make_plan(("toy", [action("toy", ActionKind.TERMINATE, resource_id=pod.id)])),
        approvals={"toy.pod.terminate"},
    )
    # Not the job's machine, so apply does not even find it: nothing is terminated.
    assert pod.id in w.prov.resources and ("terminate", pod.id) not in w.prov.calls
    assert res.done == ["toy.pod.terminate"]  # "already gone" from this job's point of view


def test_create_is_refused_while_another_checkouts_machine_of_this_job_runs(tmp_path):
    w = World(tmp_path, checkpoint=None)
    theirs = w.prov._save(
        LiveResource(
            platform="runpod", kind="pod", id="pod-theirs", name=machine("toy", OTHER), status="running",
            attributes={"project": OTHER, "owner": "ann@box:/src/.gpujob"},
        )
    )  # fmt: skip
    res = w.apply(create_plan())
    # Refused at the first create: not even the network volume is made (it would bill for nothing).
    msg = res.failed["toy.network_volume.create"]
    assert "already runs in another checkout" in msg and "ann@box:/src/.gpujob" in msg and theirs.id in msg
    assert w.prov.creates[machine("toy")] == 0 and res.skipped == ["toy.pod.create", "toy.pod.launch"]
    assert not [r for r in w.prov.resources.values() if r.kind == "network_volume"]


def _racing(w: World, *, theirs_first: bool) -> None:
    """Make the fake platform create another checkout's pod of this job at the same moment as ours."""
    inner = w.prov.create_machine
    t0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

    async def create(request):  # type: ignore[no-untyped-def]
        ours = await inner(request)
        rival_at, our_at = (
            (t0, t0 + timedelta(seconds=1)) if theirs_first else (t0 + timedelta(seconds=1), t0)
        )
        w.prov._save(
            LiveResource(
                platform="runpod", kind="pod", id="pod-rival", name=machine("toy", OTHER), status="pending",
                attributes={"project": OTHER}, created_at=rival_at,
            )
        )  # fmt: skip
        return w.prov._save(ours.model_copy(update={"created_at": our_at}))

    w.prov.create_machine = create  # type: ignore[method-assign]


def test_simultaneous_creates_keep_the_first_and_the_other_stands_down(tmp_path):
    w = World(tmp_path, checkpoint=None)
    _racing(w, theirs_first=True)
    res = w.apply(create_plan())
    msg = res.failed["toy.pod.create"]
    assert "started at the same moment by another checkout" in msg and "pod-rival" in msg
    pods = [r for r in w.prov.resources.values() if r.kind == "pod"]
    assert [p.id for p in pods] == ["pod-rival"]  # ours was terminated before anything ran on it
    assert w.ssh.launches == []


def test_simultaneous_creates_the_first_one_made_stays(tmp_path):
    w = World(tmp_path, checkpoint=None)
    _racing(w, theirs_first=False)
    res = w.apply(create_plan())
    assert res.ok, res.failed
    assert {r.name for r in w.prov.resources.values() if r.kind == "pod"} == {
        machine("toy"),
        machine("toy", OTHER),
    }
    assert any("it stands down" in e[2] for e in w.hooks.events)
    assert w.prov.last_request is not None
    assert w.prov.last_request.env["GPUJOB_PROJECT"] == PROJECT  # the marker rides in the pod's env


def test_the_checkout_that_loses_a_create_race_deletes_the_volume_it_created_for_it(tmp_path):
    w = World(tmp_path, checkpoint=None)
    _racing(w, theirs_first=True)
    res = w.apply(create_plan())
    msg = res.failed["toy.pod.create"]
    assert "at the same moment by another checkout" in msg and "was deleted again" in msg
    assert not [r for r in w.prov.resources.values() if r.kind == "network_volume"]
    assert [c[0] for c in w.prov.calls if c[0] in ("terminate", "delete_volume")] == [
        "terminate",
        "delete_volume",
    ]


def test_a_volume_the_loser_cannot_delete_is_named_with_the_command_to_delete_it(tmp_path):
    from gpujob.errors import ProviderError

    w = World(tmp_path, checkpoint=None)
    _racing(w, theirs_first=True)

    async def refuse(resource):  # type: ignore[no-untyped-def]
        raise ProviderError("503 try later", platform="runpod", call="delete network volume")

    w.prov.delete_volume = refuse  # type: ignore[method-assign]
    res = w.apply(create_plan())
    msg = res.failed["toy.pod.create"]
    assert "could not be deleted" in msg and "bills until it is" in msg
    assert "gpujob destroy" in msg and "--approve toy.network_volume.delete-volume" in msg


def test_a_rival_that_comes_up_after_our_volume_was_made_makes_us_delete_it(tmp_path):
    w = World(tmp_path, checkpoint=None)
    inner = w.prov.create_volume

    async def create_then_rival(request):  # type: ignore[no-untyped-def]
        made = await inner(request)
        w.prov._save(
            LiveResource(platform="runpod", kind="pod", id="pod-rival", name=machine("toy", OTHER), status="running",
                         attributes={"project": OTHER})
        )  # fmt: skip
        return made

    w.prov.create_volume = create_then_rival  # type: ignore[method-assign]
    res = w.apply(create_plan())
    msg = res.failed["toy.pod.create"]
    assert "already runs in another checkout" in msg and "was deleted again" in msg
    assert not [r for r in w.prov.resources.values() if r.kind == "network_volume"]
    assert w.prov.creates[machine("toy")] == 0


def test_the_pods_env_carries_an_opaque_owner_digest_not_user_host_path(tmp_path):
    from gpujob import naming
    from gpujob.project import read_project

    w = World(tmp_path, checkpoint=None)
    assert w.apply(create_plan()).ok
    env = w.prov.last_request.env
    project = read_project(w.state)
    assert project is not None and "@" in project.label  # the readable owner stays in gpujob's state
    assert env[naming.OWNER_ENV] == naming.owner_marker(project.label)
    assert env[naming.OWNER_ENV].startswith("sha256:") and len(env[naming.OWNER_ENV]) == 7 + 16
    assert not any(project.created_by in v or str(project.location) in v for v in env.values())


def test_an_owner_digest_is_not_shown_and_the_old_readable_form_still_is():
    from gpujob import naming

    new = LiveResource(
        platform="runpod", kind="pod", id="p1", name=machine("toy", OTHER), status="running",
        attributes={"project": OTHER, "owner": naming.owner_marker("ann@box:/src/.gpujob")},
    )  # fmt: skip
    old = new.model_copy(update={"attributes": {"project": OTHER, "owner": "ann@box:/src/.gpujob"}})
    assert naming.describe_owner(new) == f"project {OTHER}"
    assert naming.describe_owner(old) == f"project {OTHER} (ann@box:/src/.gpujob)"
