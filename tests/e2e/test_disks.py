"""Disks while the run goes: status shows bytes and inodes, watch warns at 90 % and parks before full."""

from __future__ import annotations

from tests.e2e.e2e_support import Project, poll
from tests.e2e.test_lifecycle import last_step
from tests.e2e.watch_support import start_watch


def test_status_shows_disks_and_watch_parks_before_a_disk_is_full(project: Project) -> None:
    p = project
    p.gj("apply", "--auto-approve")
    poll("a checkpoint", lambda: last_step(p) > 0)
    run = p.status()["run"]
    assert {d["path"] for d in run["disks"]} == {"/workspace", "/"} and run["disk_warnings"] == []
    assert all(d["total_bytes"] > 0 for d in run["disks"])

    p.sim.inject("disk_fill", percent=92)
    run = p.status()["run"]
    assert any(w.startswith("/workspace is 92% full (") for w in run["disk_warnings"]), run
    assert "warning:   [disk] /workspace is 92% full" in p.gj("status").stdout

    p.sim.inject("disk_fill", percent=97)
    watch = start_watch(p)
    try:
        poll(
            "the pod to be parked",
            lambda: p.live("pods") and p.live("pods")[0]["status"] == "EXITED",
            deadline_s=120,
        )
    finally:
        watch.terminate()
        out, _ = watch.communicate(timeout=30)
    assert "disk /workspace is 97% full (" in out and "parked" in out, out
    assert p.record("pulls/quickstart.json")["files"], "parked without pulling"
