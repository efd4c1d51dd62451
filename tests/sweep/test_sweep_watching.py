"""A queue `watch` starts watching mid-run (gpujob.sweep.watching): taken under its job lock like the
jobs watch was started with (a real lock file, held by another real process here), and its planned
first create kept out of the recoveries-per-hour count."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gpujob.plan.model import Action, ActionKind
from gpujob.state import open_store
from gpujob.sweep.watching import LandedQueues
from gpujob.watch.policy import Decision

HOLDER = """
import sys
from pathlib import Path
from gpujob.state import open_store
with open_store(Path(sys.argv[1])).lock("abl--q3", command="gpujob apply (the other one)"):
    print("ready", flush=True)
    sys.stdin.readline()
"""


def _action(kind: ActionKind, resource: str = "pod") -> Action:
    return Action(id=f"abl.q3.{resource}.{kind.value}", job="abl--q3", platform="runpod", kind=kind,
                  resource_kind=resource, resource_name="gpujob-abl--q3--p")  # fmt: skip


def test_a_landed_queue_is_taken_only_when_no_other_gpujob_holds_its_lock_and_kept_until_close(
    tmp_path: Path,
) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("name: abl\n")
    store = open_store(job)
    said: list[str] = []

    def say(happened: str, did: str) -> None:
        said.append(f"{happened} / {did}")

    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(job)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    landed = LandedQueues("gpujob watch")
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        assert landed.take(store, "abl--q3", job, say) is False
        assert landed.take(store, "abl--q3", job, say) is False  # tried again each tick, said once
        assert len(said) == 1, said
        assert "abl--q3" in said[0] and "gpujob apply (the other one)" in said[0], said
        assert "not creating its machine" in said[0]
        assert "abl--q3" not in landed.planned and landed.waiting == {"abl--q3": (job, store)}
    finally:
        assert child.stdin is not None
        child.stdin.write("\n")
        child.stdin.close()
        child.wait(10)
    assert landed.take(store, "abl--q3", job, say) is True
    assert "abl--q3" in landed.planned and landed.waiting == {} and len(said) == 1
    assert store.lock_held("abl--q3")  # held by watch from now on
    holder = store.read_lock("abl--q3")
    assert holder is not None and holder.command == "gpujob watch"
    landed.close()
    assert not store.lock_held("abl--q3")


def test_the_planned_first_create_is_no_recovery_and_what_comes_after_is() -> None:
    landed = LandedQueues()
    landed.planned.add("abl--q3")
    create = Decision(actions=[_action(ActionKind.CREATE), _action(ActionKind.LAUNCH, "run")])
    start = Decision(actions=[_action(ActionKind.START)])
    assert landed.is_recovery("abl--q3", create) is False
    assert landed.is_recovery("abl--q1", create) is True  # a queue watch was started with: as before
    landed.created("abl--q3", ok=False)  # a failed create is still the planned one, retried
    assert landed.is_recovery("abl--q3", create) is False
    landed.created("abl--q3", ok=True)
    assert landed.is_recovery("abl--q3", create) is True  # the machine is gone again: a recovery
    landed.planned.add("abl--q3")
    assert landed.is_recovery("abl--q3", start) is True  # its machine exists: no planned create left
    assert landed.is_recovery("abl--q3", create) is True
    assert landed.is_recovery("abl--q3", Decision()) is False  # nothing to do is never a recovery
