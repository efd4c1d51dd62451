"""`gpujob watch` and `gpujob apply --release-left` of one job never run at once, for real: both take
the job's lock for their whole run (watch while it pulls continuously; the release while it pulls the
old platform's files aside and puts the job's pull and outputs records back). So the records the
release restores are never older than the last pull watch made, and watch's next pull comes after the
release put them back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpujob.lock import read_lock
from gpujob.sim.testing import Sim
from tests.e2e.e2e_support import Project, poll
from tests.e2e.failover_support import JOB, approve, ids, mine, moved_by_apply, sha, stop, watch

TERM = f"{JOB}.left.runpod.pod.terminate"
DELETE = f"{JOB}.left.runpod.network_volume.delete-volume"
FLAGS = approve(TERM, DELETE)


def _holder(p: Project, pid: int) -> Any:
    info = read_lock(p.state, JOB)
    return info if info is not None and info.pid == pid else None


def _pull(p: Project) -> dict:
    data = p.store().read(f"pulls/{JOB}.json")
    return json.loads(data) if data else {}


def test_watch_and_release_left_are_exclusive_and_keep_each_others_records(sim: Sim, tmp_path: Path) -> None:
    p = moved_by_apply(sim, tmp_path, "anywhere-race")
    sim.inject("clear")
    pods, volumes = mine(p, "pods"), mine(p, "volumes")
    on_volume = sim.data_dir / "runpod" / "volumes" / volumes[0]["id"] / "ckpt"
    held = {f.name: sha(f) for f in on_volume.iterdir() if f.is_file()}
    aside = p.dir / "checkpoints-from-runpod"
    release = None
    watching = watch(p)
    again = None
    try:
        assert poll("watch to hold the job's lock", lambda: _holder(p, watching.pid), deadline_s=60)
        mark = _pull(p).get("at", "")
        first = poll(
            "watch's continuous pull of the Paperspace machine",
            lambda: (r := _pull(p)).get("at", "") > mark and r.get("platform") == "paperspace" and r,
            deadline_s=120,
        )

        # (a) while watch runs, the release is refused at once, naming watch; nothing touched
        refused = p.gj("apply", "--release-left", "--auto-approve", *FLAGS, check=False)
        said = refused.stdout + refused.stderr
        assert refused.returncode != 0 and f"job '{JOB}' is locked by" in said and "gpujob watch" in said, (
            said
        )
        assert ids(mine(p, "pods")) == ids(pods) and ids(mine(p, "volumes")) == ids(volumes)
        assert not aside.exists()

        # (b) told to wait for the lock, it waits while watch keeps pulling, and touches nothing
        release = p.popen("apply", "--release-left", "--auto-approve", *FLAGS, "--lock-timeout", "5m")
        poll(
            "watch to pull again while the release waits",
            lambda: _pull(p).get("at", "") > first["at"],
            deadline_s=120,
        )
        assert release.poll() is None
        assert ids(mine(p, "pods")) == ids(pods) and ids(mine(p, "volumes")) == ids(volumes)
        assert not aside.exists()
        last_of_watch = _pull(p)["at"]
        watch_out = stop(watching)
        assert "watch ended" in watch_out or "watch stopped" in watch_out, watch_out

        # (c) the release runs now, holding the lock: a watch cannot start under it
        assert poll("the release to hold the lock", lambda: _holder(p, release.pid), deadline_s=60, every=0.1)
        blocked = p.gj("watch", "--once", check=False)
        said = blocked.stdout + blocked.stderr
        assert blocked.returncode != 0 and f"job '{JOB}' is locked by" in said and "gpujob apply" in said, (
            said
        )
        # A watch told to wait starts once the release let go, and pulls after it.
        again = watch(p, "--lock-timeout", "5m")
        out, _ = release.communicate(timeout=300)
        assert release.returncode == 0, out
        assert not mine(p, "pods") and not mine(p, "volumes"), out
        assert {n: sha(aside / n) for n in held} == held
        restored = _pull(p)
        # What the release put back is the job's record as watch left it, never an older one.
        assert restored["platform"] == "paperspace" and restored["at"] >= last_of_watch, restored
        assert poll("the waiting watch to take the lock", lambda: _holder(p, again.pid), deadline_s=60)
        newer = poll(
            "the waiting watch to pull after the release",
            lambda: (r := _pull(p)).get("at", "") > restored["at"] and r,
            deadline_s=120,
        )
        assert newer["platform"] == "paperspace" and all(f["verified"] for f in newer["files"]), newer
        assert {n: sha(aside / n) for n in held} == held  # watch's pulls never land in the aside folder
    finally:
        for proc in (watching, release, again):
            if proc is not None and proc.poll() is None:
                stop(proc)
