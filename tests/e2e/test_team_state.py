"""Two checkouts (two people, or a laptop and a CI runner) sharing one PostgreSQL state store, against
the simulator: one apply at a time per job with the holder named, a SIGKILLed holder frees the lock at
once, and a plan saved in one checkout is applied from another that sees the first one's pull records."""

from __future__ import annotations

import os
import re
import shutil
import signal
import time

from tests.e2e.e2e_support import Project, poll

TERM = "quickstart.pod.terminate"
DELVOL = "quickstart.network_volume.delete-volume"
KEY = "e2e-team-state-key-9b1e2a5f0c7d"


def shared(p: Project, url: str) -> Project:
    p.env.update(GPUJOB_STATE_URL=url, GPUJOB_STATE_WORKSPACE="team", GPUJOB_STATE_KEY=KEY)
    return p


def checkout(p: Project, name: str, *, env: dict[str, str] | None = None) -> Project:
    """Another clone of the same repository: the same files, its own directory, nothing else."""
    d = p.dir.parent / name
    d.mkdir()
    for f in ("job.yaml", "train.py", "verify_ckpt.py"):
        shutil.copy(p.dir / f, d / f)
    return Project(dir=d, env=dict(env if env is not None else p.env), sim=p.sim)


def test_second_applier_is_refused_naming_the_holder_and_a_killed_holder_frees_the_lock(
    project: Project, pg_url: str
) -> None:
    a = shared(project, pg_url)
    b = checkout(a, "laptop-b")
    store = a.store()
    first = a.popen("apply", "--auto-approve")
    try:
        poll(
            "A to hold the job lock",
            lambda: (n := store.read_lock("quickstart")) is not None and n.pid == first.pid,
        )
        os.kill(first.pid, signal.SIGSTOP)  # A is mid-apply, holding the lock, wherever it happens to be
        refused = b.gj("apply", "--auto-approve", check=False)
        assert refused.returncode == 1
        assert re.search(
            rf"job 'quickstart' is locked by \S+@\S+ \(pid {first.pid}\) since .+ UTC, running `gpujob apply`",
            refused.stderr,
        ), refused.stderr
        assert "team" in refused.stderr  # names the shared store it found the lock in
    finally:
        first.kill()  # SIGKILL: A runs no cleanup at all
        first.wait(30)
    started = time.monotonic()
    poll("the lock to be free", lambda: not store.lock_held("quickstart"), deadline_s=30, every=0.02)
    freed = time.monotonic() - started
    assert freed < 2.0, f"the lock of a killed holder took {freed:.2f}s to free"

    # B carries on from wherever A stopped (the journal is shared): no force-unlock, no second pod.
    done = b.gj("apply", "--auto-approve")
    assert "Apply finished" in done.stderr
    assert len(a.sim_objects("pods")) == 1 and len(a.live("pods")) == 1
    assert len(a.sim_objects("volumes")) == 1
    assert a.gj("plan", "--detailed-exitcode", check=False).returncode == 0  # A agrees: nothing to do
    assert not a.state.exists() and not b.state.exists()


def test_saved_plan_from_one_checkout_applies_from_another_that_sees_its_pull_records(
    project: Project, pg_url: str
) -> None:
    a = shared(project, pg_url)
    a.gj("apply", "--auto-approve")
    poll("a few checkpoints", lambda: "step_" in a.gj("ssh", "--", "ls", "/workspace/ckpt").stdout)
    assert "all verified" in a.gj("pull").stdout
    pulled = a.record("pulls/quickstart.json")

    # A reviews and saves the teardown plan; a fresh checkout (a CI runner) applies it.
    text = (a.dir / "job.yaml").read_text()
    assert "state: running" in text
    (a.dir / "job.yaml").write_text(text.replace("state: running", "state: absent"))
    assert a.gj("plan", "-o", "plan.json", "--detailed-exitcode", check=False).returncode == 2
    ci = checkout(a, "ci-runner")
    shutil.copy(a.dir / "plan.json", ci.dir / "plan.json")

    # The runner's planner (and gate) read A's pull record from the database; a checkout with local
    # state only is another project: A's pod and volume are not its own to tear down at all.
    on_record = f"{len(pulled['files'])} file(s), {len(pulled['files'])} verified"
    assert "last pull on record:" in ci.gj("plan", check=False).stdout
    assert on_record in ci.gj("plan", check=False).stdout
    alone = checkout(
        a, "no-shared-state", env={k: v for k, v in a.env.items() if not k.startswith("GPUJOB_STATE")}
    )
    lone = alone.gj("plan", check=False).stdout
    assert "another checkout has resources for a job named 'quickstart'" in lone, lone
    assert "last pull on record" not in lone and "terminate pod" not in lone

    done = ci.gj("apply", "plan.json", "--approve", TERM, "--approve", DELVOL)
    assert "3 done, 0 failed" in done.stderr, done.stderr
    assert a.live("pods") == [] and a.live("volumes") == []
    # One history: A's apply and pull and the runner's destroy, in one journal.
    runs = {e["run"] for e in a.journal()}
    assert len(runs) >= 2 and any(e.get("action_id") == TERM and e["phase"] == "done" for e in a.journal())
    for p in (a, ci):
        assert not p.state.exists(), f"{p.dir} kept state locally"
