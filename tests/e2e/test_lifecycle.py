"""The whole life of the quickstart job against the simulator, through the CLI as a user runs it."""

from __future__ import annotations

import hashlib
import re
import shlex
import subprocess

import pytest

from tests.e2e.e2e_support import CANARY, CANARY_NAME, Project, poll

TERM = "quickstart.pod.terminate"
DELVOL = "quickstart.network_volume.delete-volume"


def last_step(p: Project) -> int:
    run = p.status().get("run") or {}
    name = run.get("last_checkpoint") or ""
    m = re.search(r"step_(\d+)", name)
    return int(m.group(1)) if m else 0


@pytest.fixture(params=["local", "postgresql"])
def backend(request: pytest.FixtureRequest, project: Project) -> str:
    """The same life with the state in .gpujob/ and in a PostgreSQL database (nothing kept locally)."""
    if request.param == "postgresql":
        project.env.update(
            GPUJOB_STATE_URL=request.getfixturevalue("pg_url"),
            GPUJOB_STATE_WORKSPACE="e2e",
            GPUJOB_STATE_KEY="e2e-state-key-5f0c7d9b1e2a",
        )
    return str(request.param)


def test_provision_preempt_resume_pull_destroy(project: Project, backend: str) -> None:
    p = project
    p.gj("validate", "job.yaml")
    plan = p.gj("plan", "-o", "plan.json", check=False)
    assert plan.returncode == 0, plan.stderr
    out = p.gj("apply", "plan.json").stderr  # exactly the saved plan; the summary follows the step log
    assert "Apply finished: 3 done, 0 failed" in out

    # Provisioned, synced, launched in tmux, checkpointing onto the network volume.
    assert len(p.live("pods")) == 1 and len(p.live("volumes")) == 1
    before = poll("a few checkpoints", lambda: (s := last_step(p)) >= 60 and s)
    st = p.status()
    assert st["run"]["alive"] is True
    assert p.gj("ssh", "--", "cat", "/workspace/code/train.py").stdout.startswith('"""A CPU stand-in')
    assert "tmux" in p.gj("logs", "-n", "50").stdout
    assert secret_seen_by_run(p)  # the canary check below is not vacuous: the run did get the secret

    # The platform preempts the spot pod; the run dies with it.
    pod_id = p.live("pods")[0]["id"]
    assert p.sim.inject("preempt")["preempted"] == [pod_id]
    poll("the pod to be down", lambda: p.status()["machine"]["status"] != "RUNNING")
    replan = p.gj("plan", "--detailed-exitcode", check=False)
    assert replan.returncode == 2 and "quickstart.run.launch" in replan.stdout

    # Apply again: the pod comes back with the network volume and the run resumes from its checkpoint.
    p.gj("apply", "--auto-approve")
    resumed = poll(
        "the run to resume",
        lambda: re.search(r"resumed from step (\d+)", p.in_process("logs", "-n", "2000").stdout),
    )
    step = int(resumed.group(1))
    assert step >= before, (
        f"resumed from {step}, but step {before} had been checkpointed before the preemption"
    )
    poll("checkpoints after the resume", lambda: last_step(p) > step)
    assert "starting fresh" in p.gj("logs", "-n", "2000").stdout  # the first run's line is still in the log
    assert (
        p.sim_objects("pods")[0]["id"] == pod_id and len(p.sim_objects("pods")) == 1
    )  # restarted, not duplicated

    # Pull fetches, checksums and verifies.
    pulled = p.gj("pull").stdout
    assert "all verified" in pulled
    record = p.record("pulls/quickstart.json")
    assert record["files"] and all(
        f["verified"] and f["sha256"] == record["remote_files"][f["name"]] for f in record["files"]
    )
    for f in record["files"]:
        assert subprocess.run(["python3", "verify_ckpt.py", f["local_path"]], cwd=p.dir).returncode == 0

    # Destroy: refused without approval, even with --auto-approve.
    refused = p.gj("destroy", "--auto-approve", check=False)
    assert refused.returncode == 1
    assert (
        "need explicit approval" in refused.stderr
        and f"--approve {TERM} --approve {DELVOL}" in refused.stderr
    )
    assert len(p.live("pods")) == 1 and len(p.live("volumes")) == 1

    # Refused when a checkpoint fails the load check, approvals or not.
    p.gj("ssh", "--", "sh", "-c", "'echo garbage > /workspace/ckpt/step_999999.json'")
    bad = p.gj("destroy", "--auto-approve", "--approve", TERM, "--approve", DELVOL, check=False)
    assert bad.returncode == 1
    assert "failed verification: step_999999.json" in bad.stdout + bad.stderr
    assert len(p.live("pods")) == 1 and len(p.live("volumes")) == 1

    # With the bad file gone, pull + verify + both approvals: everything goes.
    p.gj("ssh", "--", "rm", "-f", "/workspace/ckpt/step_999999.json")
    done = p.gj("destroy", "--auto-approve", "--approve", TERM, "--approve", DELVOL)
    assert "Destroy finished: 3 done, 0 failed, 0 skipped" in done.stderr
    assert p.live("pods") == [] and p.live("volumes") == []

    # Nothing is left billing, and the follow-up plan of the destroyed job is empty.
    bill = p.sim.bill()
    assert bill["items"] and all(item["rate_per_hour"] == 0 for item in bill["items"])
    assert (
        p.gj("destroy", "--auto-approve")
        .stdout.strip()
        .endswith("No changes. Live state matches the job files.")
    )

    # The secret reached the run over SSH only: never in output, state, plan, logs or the pods' disks.
    assert_no_canary(p)
    if backend == "postgresql":
        # Everything lived in the database: nothing was kept beside the job file.
        assert not p.state.exists()
        store = p.store()
        assert {"journal/quickstart.jsonl", "pulls/quickstart.json", "known_hosts.json", "id_ed25519"} <= set(
            store.names()
        )
        assert any(e.get("action_id") == TERM and e.get("phase") == "done" for e in p.journal())
        assert CANARY not in database_text(p.env["GPUJOB_STATE_URL"])


def database_text(url: str) -> str:
    """Every row of every gpujob table, as text."""
    import psycopg

    with psycopg.connect(url) as conn:
        tables = [
            r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'gpujob_%'")
        ]
        return "\n".join(str(r) for t in tables for r in conn.execute(f"SELECT t::text FROM {t} t"))


def secret_seen_by_run(p: Project) -> bool:
    """Compare a hash of the run's environment value with the canary's, so the value is never printed."""
    probe = (
        "for pid in $(pgrep -f 'python3 train.py'); do "
        f"tr '\\0' '\\n' < /proc/$pid/environ | grep '^{CANARY_NAME}=' | cut -d= -f2- | sha256sum; done"
    )
    out = p.gj("ssh", "--", "sh", "-c", shlex.quote(probe)).stdout
    return hashlib.sha256((CANARY + "\n").encode()).hexdigest() in out


def assert_no_canary(p: Project) -> None:
    for text in p.outputs:
        assert CANARY not in text
    roots = [p.dir, p.sim.data_dir]
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                try:
                    data = path.read_bytes()
                except OSError:
                    continue
                assert CANARY.encode() not in data, f"secret canary found in {path}"
