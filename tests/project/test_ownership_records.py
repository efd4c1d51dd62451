"""What `state rm` forgot and `import` adopted, kept in the project's store and read by gpujob.naming:
a forgotten resource is nobody's, an adopted pod is the job's without its env marker, and only the
project that recorded them is affected."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpujob import naming
from gpujob.live import LiveResource
from gpujob.project import ownership as records


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(naming, "_FORGOTTEN", {})
    monkeypatch.setattr(naming, "_ADOPTED", {})


def pod(pid: str, name: str, project: str | None) -> LiveResource:
    return LiveResource(platform="runpod", kind="pod", id=pid, name=name, status="running",
                        attributes={"project": project} if project else {})  # fmt: skip


def test_forgotten_is_nobodys_adopted_needs_no_env_marker(tmp_path: Path) -> None:
    ours = pod("p1", naming.machine_name("bert", "abcd1234"), "abcd1234")
    renamed = pod("p2", naming.machine_name("bert", "abcd1234"), None)  # adopted: renamed, env untouched
    ip = LiveResource(
        platform="paperspace", kind="public_ip", id="1.2.3.4", name="", status="available", machine_id="p1"
    )
    listed = [ours, renamed, ip]
    assert naming.owned(listed, "bert", "abcd1234") == [
        ours,
        ip,
    ]  # p2 has no env marker: not ours by name alone

    records.adopt(tmp_path, {"id": "p2", "job": "bert", "kind": "pod", "name": renamed.name,
                             "name_before": "notebook", "platform": "runpod", "project": "abcd1234"})  # fmt: skip
    records.forget(tmp_path, [{"id": "p1", "job": "bert", "kind": "pod", "name": ours.name,
                               "platform": "runpod", "project": "abcd1234"}])  # fmt: skip
    records.load(tmp_path, "other999")  # another project's view: nothing changes for it
    assert naming.owned(listed, "bert", "abcd1234") == [ours, ip]
    records.load(tmp_path, "abcd1234")
    assert naming.owned(listed, "bert", "abcd1234") == [renamed]  # the forgotten pod and its IP are nobody's
    doc = records.read(tmp_path)
    assert set(doc["forgotten"]) == {"p1"} and doc["adopted"]["p2"]["name_before"] == "notebook"
    assert doc["adopted"]["p2"]["at"] and doc["forgotten"]["p1"]["by"]

    # Importing a forgotten resource takes it back; forgetting an adopted one drops the adoption.
    records.adopt(tmp_path, {"id": "p1", "job": "bert", "kind": "pod", "name": ours.name, "name_before": ours.name,
                             "platform": "runpod", "project": "abcd1234"})  # fmt: skip
    records.forget(tmp_path, [{"id": "p2", "job": "bert", "kind": "pod", "name": renamed.name,
                               "platform": "runpod", "project": "abcd1234"}])  # fmt: skip
    doc = records.read(tmp_path)
    assert set(doc["forgotten"]) == {"p2"} and set(doc["adopted"]) == {"p1"}
