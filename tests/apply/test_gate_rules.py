"""The teardown gate's pure rules, one by one (gpujob.apply.gate, the pull records it decides on,
gpujob.apply.localfiles, gpujob.apply.unreachable): what each refuses, with which words, and what it
lets through. The same rules in their order against fakes: tests/apply/test_gate.py."""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpujob.apply.gate import (
    approve_flags,
    checkpoint_tier,
    require_approvals,
    require_approved,
    unsafe_files,
)
from gpujob.apply.localfiles import local_sha256
from gpujob.apply.unreachable import _age, approved_unverified, hint, mark_plan, risk
from gpujob.errors import GateError
from gpujob.plan.cadence import quiesce_grace_s
from gpujob.plan.model import ActionKind, DataEffect, JobPlan, Plan
from gpujob.plan.outputs_record import OutputFile, OutputsRecord
from gpujob.plan.records import (
    PulledFile,
    PullRecord,
    current_record,
    load_pull_records,
    save_pull_record,
)
from gpujob.state import as_store
from tests.apply.fakes import action, make_spec

NOW = datetime(2026, 11, 29, tzinfo=UTC)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pulled(name: str, data: bytes, *, verified: bool = True) -> PulledFile:
    return PulledFile(
        name=name, size=len(data), sha256=sha(data), remote_sha256=sha(data), verified=verified, at=NOW
    )


def record(*files: PulledFile, **kw: object) -> PullRecord:
    base: dict[str, object] = dict(job="toy", platform="runpod", resource_id="pod1", remote_dir="/workspace/ckpt",
                                   local_dir="/l", at=NOW, files=list(files))  # fmt: skip
    return PullRecord(**(base | kw))  # type: ignore[arg-type]


def remote(**files: bytes) -> dict[str, SimpleNamespace]:
    return {n.replace("_", "."): SimpleNamespace(size=len(d), sha256=sha(d)) for n, d in files.items()}


# --- quiesce grace and the tier the spec puts checkpoints on ---------------------------------------


def test_the_quiesce_grace_is_thirty_seconds_or_twice_the_final_save_and_five() -> None:
    assert quiesce_grace_s(make_spec(checkpoint=None)) == 30.0
    assert quiesce_grace_s(make_spec()) == 30.0  # no write_time measured
    assert quiesce_grace_s(make_spec(checkpoint={"write_time": "10s"})) == 30.0  # 25 s < 30 s
    assert quiesce_grace_s(make_spec(checkpoint={"write_time": "1m"})) == 125.0


@pytest.mark.parametrize(
    ("over", "want"),
    [
        ({}, "network_volume"),
        (
            {"storage": {"mount": "/workspace/", "network_volume": {"name": "ckpts", "size_gb": 10}}},
            "network_volume",
        ),
        ({"checkpoint": {"dir": "/workspace"}}, "network_volume"),
        ({"storage": {"network_volume": None, "volume_gb": 10}}, "volume_disk"),
        ({"checkpoint": {"dir": "/root/ckpt"}}, "container_disk"),
        ({"checkpoint": {"dir": "/workspacex/ckpt"}}, "container_disk"),  # a sibling, not under the mount
        (
            {"storage": {"mount": "/", "network_volume": None, "volume_gb": 10}, "checkpoint": {"dir": "/"}},
            "volume_disk",
        ),
        ({"checkpoint": None}, None),
    ],
)
def test_checkpoint_tier_is_where_the_job_file_puts_checkpoint_dir(over: dict, want: str | None) -> None:
    assert checkpoint_tier(make_spec(**over)) == want


def test_on_paperspace_checkpoints_are_on_the_machines_block_storage() -> None:
    spec = make_spec(platform="paperspace", machine={"gpu": "A6000", "spot": False, "regions": ["NY2"], "image": "i"},
                     storage={"network_volume": None}, checkpoint={"dir": "/root/ckpt"})  # fmt: skip
    assert checkpoint_tier(spec) == "block_storage"


# --- approvals -----------------------------------------------------------------------------------


def test_approve_flags_name_each_id_once_in_order() -> None:
    assert approve_flags(["b", "a", "b"]) == "--approve b --approve a"
    assert approve_flags([]) == ""


def test_every_gated_action_needs_its_own_approval_up_front() -> None:
    term = action("toy", ActionKind.TERMINATE, resource_id="pod1")
    vol = action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="v1")
    stop = action("toy", ActionKind.STOP, resource_id="pod1")
    with pytest.raises(GateError) as err:
        require_approvals([stop, term, vol], {term.id})
    assert str(err.value).startswith(
        f"1 irreversible action(s) need explicit approval: {vol.id} (--auto-approve never approves these)"
    )
    # approvals are not remembered: the hint approves every gated action, the given one included
    assert (
        f"review the plan, then run: `gpujob apply --approve {term.id} --approve {vol.id}`"
        in err.value.render()
    )
    with pytest.raises(
        GateError, match=f"2 irreversible action\\(s\\) need explicit approval: {term.id}, {vol.id} "
    ):
        require_approvals([term, vol], set(), command="gpujob destroy")
    require_approvals([stop, term, vol], {term.id, vol.id})
    require_approvals([stop], set())


def test_an_unapproved_action_is_refused_with_the_whole_rerun() -> None:
    term = action("toy", ActionKind.TERMINATE, resource_id="pod1")
    with pytest.raises(GateError) as err:
        require_approved(term, {"toy.x.delete", "toy.a.delete.unverified"}, gated=["toy.g.delete"])
    assert str(err.value).startswith(
        f"{term.id}: not approved; irreversible actions need their exact id approved "
        "(--auto-approve never approves them)"
    )
    # the override is never repeated in a hint; the other approvals are, sorted
    want = f"run: `gpujob apply --approve toy.g.delete --approve {term.id} --approve toy.x.delete`"
    assert want in err.value.render()
    with pytest.raises(GateError) as err:
        require_approved(term, set(), command="gpujob destroy toy")
    assert f"run: `gpujob destroy toy --approve {term.id}`" in err.value.render()
    require_approved(term, {term.id})


# --- the remote listing against the pull record and the local copies --------------------------------


def test_each_remote_file_needs_a_verified_local_twin(tmp_path: Path) -> None:
    (tmp_path / "ok.ckpt").write_bytes(b"ok")
    (tmp_path / "unverified.ckpt").write_bytes(b"u")
    (tmp_path / "edited.ckpt").write_bytes(b"e")
    (tmp_path / "resized.ckpt").write_bytes(b"r")
    rec = record(
        pulled("ok.ckpt", b"ok"),
        pulled("unverified.ckpt", b"u", verified=False),
        pulled("changed.ckpt", b"old!"),  # same size, other bytes on the remote now
        pulled("gone.ckpt", b"g"),  # the local copy was deleted
        pulled("edited.ckpt", b"x"),  # the local copy was edited
        pulled("resized.ckpt", b"r"),
    )
    rec.files[-1] = rec.files[-1].model_copy(update={"size": 99})  # the record says another size
    listing = remote(a_ckpt=b"never pulled", changed_ckpt=b"new!", edited_ckpt=b"x", gone_ckpt=b"g",
                     ok_ckpt=b"ok", resized_ckpt=b"r", unverified_ckpt=b"u", zz_ckpt=b"z")  # fmt: skip
    assert unsafe_files(listing, rec, tmp_path) == [
        "'a.ckpt' (not pulled)",
        "'changed.ckpt' (the remote copy changed after the pull)",
        f"'edited.ckpt' (the local copy in {tmp_path} is missing or differs)",
        f"'gone.ckpt' (the local copy in {tmp_path} is missing or differs)",
        "'resized.ckpt' (the remote copy changed after the pull)",
        "'unverified.ckpt' (failed checkpoint.verify)",
        "'zz.ckpt' (not pulled)",  # a refusal reason never ends the listing
    ]
    assert unsafe_files(remote(ok_ckpt=b"ok"), rec, tmp_path) == []
    assert unsafe_files(remote(ok_ckpt=b"ok", a_ckpt=b"a"), None, tmp_path) == [
        "'a.ckpt' (not pulled)",
        "'ok.ckpt' (not pulled)",
    ]
    assert unsafe_files({}, None, tmp_path) == []


def test_a_local_copy_is_read_only_as_a_regular_file_never_through_a_symlink(tmp_path: Path) -> None:
    big = os.urandom((1 << 20) + 7)  # more than one read
    (tmp_path / "big").write_bytes(big)
    assert local_sha256(tmp_path / "big") == sha(big)
    assert local_sha256(tmp_path / "missing") == ""
    (tmp_path / "link").symlink_to(tmp_path / "big")
    assert local_sha256(tmp_path / "link") == ""
    (tmp_path / "dir").mkdir()
    assert local_sha256(tmp_path / "dir") == ""
    os.mkfifo(tmp_path / "fifo")  # no writer: opening it to read must not wait for one
    assert local_sha256(tmp_path / "fifo") == ""


def test_a_pull_record_says_what_is_missing_and_unverified() -> None:
    rec = record(pulled("a", b"a"), pulled("b", b"b", verified=False), pulled("stale", b"old"),
                 pulled("extra", b"x", verified=False),
                 remote_files={"a": sha(b"a"), "b": sha(b"b"), "stale": sha(b"new"), "c": sha(b"c")})  # fmt: skip
    assert rec.missing() == ["c", "stale"]
    assert rec.unverified() == ["b"]  # "extra" is no longer listed on the remote
    assert not rec.complete
    done = record(pulled("a", b"a"), remote_files={"a": sha(b"a")})
    assert done.missing() == [] and done.unverified() == [] and done.complete
    assert not done.model_copy(update={"unpullable": {"sock": "a socket"}}).complete


def test_a_pull_record_is_about_the_disk_it_was_pulled_from() -> None:
    on_machine = record()
    assert on_machine.applies_to("pod1", None) and on_machine.applies_to("pod1", "vol9")
    assert not on_machine.applies_to("pod2", None)
    assert not record(resource_id=None).applies_to(None, None)
    on_volume = record(tier="network_volume", network_volume_id="vol1")
    assert on_volume.applies_to("pod2", "vol1") and on_volume.applies_to(None, "vol1")
    assert not on_volume.applies_to("pod1", "vol2")
    # a volume tier without a volume id is about the machine
    assert record(tier="network_volume").applies_to("pod1", None)
    assert not record(tier="volume_disk", network_volume_id="vol1").applies_to("pod2", "vol1")


def test_current_record_keeps_a_record_only_for_the_live_machine_or_volumes() -> None:
    rec = record()
    pod1, vol1 = SimpleNamespace(id="pod1"), SimpleNamespace(id="vol1")
    assert current_record(rec, pod1) is rec
    assert current_record(rec, "pod1") is rec
    assert current_record(rec, "pod2") is None
    assert current_record(rec, None) is None
    on_volume = record(tier="network_volume", network_volume_id="vol1")
    assert current_record(on_volume, None, [None, SimpleNamespace(id="vol0"), vol1]) is on_volume
    assert current_record(on_volume, "pod1", ["vol1"]) is on_volume
    assert current_record(on_volume, "pod1", [None]) is None
    assert current_record(on_volume, "pod1") is None
    plain = {"job": "toy"}
    assert current_record(plain, None) is plain
    assert current_record(None, pod1) is None


def test_load_pull_records_skips_what_it_cannot_read(tmp_path: Path) -> None:
    state = tmp_path / "state"
    store = as_store(state)
    store.write("pulls/a.json", b"{not json")
    save_pull_record(state, record(job="b"))
    store.write("pulls/c.txt", record(job="c").model_dump_json().encode())
    save_pull_record(state, record(job="d"))
    assert sorted(load_pull_records(state)) == ["b", "d"]


# --- an unreachable machine: the risk in words, and the override -------------------------------------


@pytest.mark.parametrize(
    ("ago", "want"),
    [
        (None, "never"),
        (-5, "0s ago"),
        (0, "0s ago"),
        (119, "119s ago"),
        (120, "2 min ago"),
        (7199, "119 min ago"),
        (7200, "2 h ago"),
        (172799, "47 h ago"),
        (172800, "2 days ago"),
        (3 * 86400 - 1, "2 days ago"),
    ],
)
def test_ages_read_in_the_unit_that_fits(ago: int | None, want: str) -> None:
    at = None if ago is None else NOW - timedelta(seconds=ago)
    assert _age(at, NOW) == want


def test_the_risk_names_what_is_erased_the_last_listing_and_the_newest_verified_pull() -> None:
    rec = record(pulled("a", b"a" * 1000), pulled("b", b"b", verified=False), remote_files={"a": "x", "b": "y", "c": "z"},
                 at=NOW - timedelta(hours=3))  # fmt: skip
    outputs = OutputsRecord(job="toy", local_dir="/o", at=NOW - timedelta(minutes=5),
                            files={"/out/r.csv": OutputFile(size=2048, sha256="s")})  # fmt: skip
    said = risk(erases="the volume disk", pull_record=rec, outputs_record=outputs, now=NOW)
    assert said == (
        "the action erases the volume disk; the last listing gpujob saw: 3 checkpoint file(s) in "
        "/workspace/ckpt (1.0 kB pulled), listed 3 h ago; 1 output file(s) (2.0 kB), listed 5 min ago; "
        "the newest verified pull: 5 min ago"
    )
    older_outputs = outputs.model_copy(update={"at": NOW - timedelta(days=3)})
    said = risk(erases="x", pull_record=rec, outputs_record=older_outputs, now=NOW)
    assert said.endswith("the newest verified pull: 3 h ago")
    unverified = record(pulled("b", b"b", verified=False), at=NOW - timedelta(hours=3))
    said = risk(erases="x", pull_record=unverified, outputs_record=None, now=NOW)
    assert said.endswith("the newest verified pull: never")
    said = risk(erases="x", pull_record=unverified, outputs_record=outputs, now=NOW)
    assert said.endswith(
        "the newest verified pull: 5 min ago"
    )  # the outputs' pull, with no verified checkpoint
    empty_outputs = outputs.model_copy(update={"files": {}})
    said = risk(erases="x", pull_record=None, outputs_record=empty_outputs, now=NOW)
    assert said.endswith("listed 5 min ago; the newest verified pull: never")
    assert risk(erases="x", pull_record=None, outputs_record=None, now=NOW) == (
        "the action erases x; the last listing gpujob saw: none (gpujob never listed or pulled anything "
        "from it); the newest verified pull: never"
    )


def test_the_hint_says_how_past_the_refusal_in_words_not_a_flag() -> None:
    said = hint("toy.pod.terminate")
    assert said.startswith("make the machine reachable (check it in the platform console: its SSH port and ")
    assert (
        "that its image starts sshd, RP10) and run the command again; to destroy it without looking, " in said
    )
    assert "accepting that whatever is on those disks is lost, approve this action a second time " in said
    assert "with the suffix '.unverified' next to its plain approval of toy.pod.terminate " in said
    assert said.endswith("failed to reach it; never from gpujob watch or a PR approval line)")
    assert "--approve" not in said


def test_the_override_needs_both_approvals() -> None:
    assert approved_unverified("a", {"a", "a.unverified"})
    assert not approved_unverified("a", {"a.unverified"})
    assert not approved_unverified("a", {"a"})


def test_the_plan_shown_before_an_override_says_what_is_lost() -> None:
    term = action("toy", ActionKind.TERMINATE, resource_id="pod1").model_copy(
        update={"data": DataEffect(summary="erases the volume disk")}
    )
    vol = action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="v1").model_copy(
        update={"data": DataEffect(summary="erases the volume")}
    )
    stop = action("toy", ActionKind.STOP, resource_id="pod1")
    jp = JobPlan(
        job="toy", platform="runpod", spec_file="job.yaml", desired_state="absent", actions=[stop, term, vol]
    )
    plan = Plan(created_at=NOW, gpujob_version="0", spec_digest="d", live_fingerprint="f", jobs=[jp])
    assert mark_plan(plan, {term.id, vol.id}) is plan  # no override given: the plan as it is
    marked = mark_plan(plan, {term.id, f"{term.id}.unverified", vol.id, f"{stop.id}.unverified", stop.id})
    got = marked.jobs[0].actions
    assert [a.id for a in got] == [stop.id, term.id, vol.id]
    assert got[0] == stop and got[2] == vol  # an ungated action, and one without its own override
    assert got[1].data.summary == (
        f"erases the volume disk; DATA LOSS if unreachable: {term.id}.unverified is approved, so a machine "
        "this command cannot reach is destroyed without a look or a pull"
    )
    assert plan.jobs[0].actions[1].data.summary == "erases the volume disk"  # a copy, not an edit
