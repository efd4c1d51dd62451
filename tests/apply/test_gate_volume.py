"""The teardown gate at a volume delete and at the re-run hint, against fakes: a volume a pod mounts is
looked at through that pod, the evidence refusal names each file, and the hint repeats the command
that ran with every gated action (the rules themselves: tests/apply/test_gate_rules.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gpujob.apply import teardown
from gpujob.errors import GateError
from gpujob.plan.model import ActionKind
from tests.apply.fakes import action
from tests.apply.test_gate import guard, world


def test_a_volume_a_pod_mounts_is_looked_at_through_that_pod(tmp_path: Path) -> None:
    ctx, _, ssh = world(tmp_path, files={"s1.ckpt": b"one"}, volume=True)
    delete = action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1")
    ctx.todo = [delete]
    detail = guard(ctx, delete)
    assert ssh.quiesced and ssh.connects  # through the pod that mounts it, the run stopped first
    assert "final pull: 1 checkpoint file(s)" in detail
    assert (tmp_path / "checkpoints" / "s1.ckpt").read_bytes() == b"one"


def test_a_volume_delete_with_no_such_volume_passes_with_nothing_to_say(tmp_path: Path) -> None:
    ctx, _, ssh = world(tmp_path, files={"s1.ckpt": b"one"}, volume=True)
    gone = action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol-never")
    assert guard(ctx, gone) == ""
    assert ssh.connects == []


def test_the_evidence_refusal_names_up_to_five_files_and_how_to_go_on(tmp_path: Path) -> None:
    files = {f"s{i}.ckpt": bytes([i]) * 3 for i in range(7)}
    ctx, _, _ = world(tmp_path, files=files, volume=True)
    term = action("toy", ActionKind.TERMINATE, resource_id="pod1")
    delete = action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1")
    ctx.todo = [term, delete]
    guard(ctx, term)
    ctx.machine = None
    for name in files:
        (tmp_path / "checkpoints" / name).write_bytes(b"edited")
    with pytest.raises(GateError) as err:
        guard(ctx, delete)
    said = str(err.value)
    assert said.startswith(
        f"{delete.id}: 7 checkpoint file(s) of {ctx.volume.name} lack a verified local copy: "
    )  # type: ignore[union-attr]
    assert said.count("is missing or differs") == 5 and "; 's1.ckpt'" in said
    assert err.value.hint == "run the command again: the volume is looked at through a temporary pod"


def test_the_rerun_hint_repeats_the_command_that_ran_with_every_gated_action(tmp_path: Path) -> None:
    ctx, _, _ = world(tmp_path, files={"s1.ckpt": b"one"}, volume=True)
    term = action("toy", ActionKind.TERMINATE, resource_id="pod1")
    delete = action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1")
    ctx.todo = [term, delete]
    ctx.rerun = "gpujob destroy toy.yaml"
    with pytest.raises(GateError) as err:
        asyncio.run(teardown.guard(ctx, delete))
    assert f"run: `gpujob destroy toy.yaml --approve {term.id} --approve {delete.id}`" in err.value.render()


def test_an_action_the_gate_does_not_cover_passes_once_approved(tmp_path: Path) -> None:
    ctx, _, ssh = world(tmp_path, files={"s1.ckpt": b"one"}, volume=True)
    release = action("toy", ActionKind.RELEASE_IP, "public_ip", resource_id="ip1")
    assert guard(ctx, release) == ""
    assert ssh.connects == [] and ssh.alive
