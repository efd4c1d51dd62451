"""Issue 11, item 10: names cannot collide across jobs, and one checkout never takes over, doubles or
unlocks another's job. Real simulator with real pods, checkout directories of their own (each its own
.gpujob/ and project id), gpujob run as real processes."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpujob.sim.testing import Sim
from tests.reliability.ownership_kit import Checkout, account, alive, job_text, pods_simulator


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Sim]:
    with pods_simulator(tmp_path / "sim") as s:
        yield s


def test_names_that_used_to_collide_are_refused_or_kept_apart(tmp_path: Path, sim: Sim) -> None:
    a = Checkout(tmp_path / "a", sim)
    # '--' joins the parts of a name, so job and volume names may not contain it or end in '-'.
    for name, volume in (("bert--large", "ckpts"), ("bert", "large--ckpts"), ("bert-", "ckpts")):
        a.write("bad.job.yaml", job_text(name, volume))
        bad = a.gj("validate", "bad.job.yaml", check=False)
        assert bad.returncode == 1 and "bad.job.yaml:" in bad.stdout and "no '--'" in bad.stdout, bad.stdout
    (a.dir / "bad.job.yaml").unlink()

    # Job bert + volume large-ckpts and job bert-large + volume ckpts: one name under the old scheme.
    a.write("bert.job.yaml", job_text("bert", "large-ckpts"))
    a.write("bert-large.job.yaml", job_text("bert-large", "ckpts"))
    a.gj("validate")
    a.gj("apply", "--auto-approve")
    volumes = Counter(v["name"] for v in alive(sim, "volumes"))
    assert volumes == {a.volume("bert", "large-ckpts"): 1, a.volume("bert-large", "ckpts"): 1}
    assert len({a.volume("bert", "large-ckpts"), a.volume("bert-large", "ckpts")}) == 2
    pods = {p["name"] for p in alive(sim)}
    assert pods == {a.machine("bert"), a.machine("bert-large")}

    # Every later plan is clean (it was blocked by a duplicate before), and each job sees only its own.
    again = a.gj("plan", "--detailed-exitcode", check=False)
    assert again.returncode == 0, again.stdout + again.stderr
    state = a.gj("state", "bert.job.yaml").stdout
    assert (
        "2 live resource(s)" in state
        and a.machine("bert") in state
        and a.volume("bert", "large-ckpts") in state
    )
    assert a.machine("bert-large") not in state and a.volume("bert-large", "ckpts") not in state


def test_a_second_checkout_is_refused_while_the_first_ones_pod_runs(tmp_path: Path, sim: Sim) -> None:
    a, b = Checkout(tmp_path / "a", sim), Checkout(tmp_path / "b", sim)
    a.write("job.yaml", job_text("bert"))
    a.gj("apply", "--auto-approve")
    (pod,) = alive(sim)
    assert pod["name"] == a.machine("bert") and pod["env"]["GPUJOB_PROJECT"] == a.project_id

    b.write("job.yaml", (a.dir / "job.yaml").read_text())  # the same job file, another checkout
    before = account(sim)
    plan = b.gj("plan", check=False)
    out = plan.stdout + plan.stderr
    assert plan.returncode == 1 and "already runs in another checkout" in out, out
    assert f"project {a.project_id}" in out and pod["id"] in out
    # the pod's env names its owner only by an opaque digest (the platform console shows env to anyone
    # on the account): a's path is in a's state, not in the pod, so b cannot show it
    assert pod["env"]["GPUJOB_OWNER"].startswith("sha256:") and str(a.dir) not in pod["env"]["GPUJOB_OWNER"]
    assert str(a.dir / ".gpujob") not in out
    assert "set GPUJOB_STATE_URL=" in out  # b keeps local state: a team's shared store is the likely fix
    assert b.project_id != a.project_id
    applied = b.gj("apply", "--auto-approve", check=False)
    assert applied.returncode == 1 and "already runs in another checkout" in applied.stdout + applied.stderr
    assert account(sim) == before  # b created nothing, and a's pod and volume were not touched

    # b's view of the account holds nothing of a's; a destroy from b has nothing to destroy.
    assert "nothing live" in b.gj("state").stdout
    destroy = b.gj("destroy", "--auto-approve", check=False)
    assert destroy.returncode == 0 and "No changes" in destroy.stdout, destroy.stdout + destroy.stderr
    assert account(sim) == before


def test_two_checkouts_applying_at_once_end_with_one_running_pod(tmp_path: Path, sim: Sim) -> None:
    a, b = Checkout(tmp_path / "a", sim), Checkout(tmp_path / "b", sim)
    a.write("job.yaml", job_text("bert"))
    b.write("job.yaml", job_text("bert"))
    procs = [c.popen("apply", "--auto-approve") for c in (a, b)]
    outs = [p.communicate(timeout=240)[0] for p in procs]
    codes = [p.returncode for p in procs]
    assert all("Traceback" not in o for o in outs), outs
    running = [p for p in alive(sim) if p["name"].startswith("gpujob-bert--")]
    assert len(running) == 1, (running, outs)
    # Exactly one apply won; the other says whose job runs instead.
    assert sorted(codes) == [0, 1], (codes, outs)
    loser = outs[codes.index(1)]
    winner = (a, b)[codes.index(0)]
    assert running[0]["name"] == winner.machine("bert")
    assert f"project {winner.project_id}" in loser
    assert "already runs in another checkout" in loser or "at the same moment by another checkout" in loser
    # Issue 23: the loser leaves nothing billing: no network volume of its own survives.
    volumes = [v["name"] for v in alive(sim, "volumes")]
    assert volumes == [winner.volume("bert")], (volumes, outs)


HOLDER = """
import sys
from pathlib import Path
from gpujob.lock import job_lock
with job_lock(Path(sys.argv[1]), "bert", command="gpujob apply (the holder)"):
    print("ready", flush=True)
    sys.stdin.readline()
"""


def test_force_unlock_refuses_while_the_holder_is_alive_on_this_host(tmp_path: Path, sim: Sim) -> None:
    a = Checkout(tmp_path / "a", sim)
    a.write("job.yaml", job_text("bert"))
    state = a.dir / ".gpujob"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(state)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        forced = a.gj("force-unlock", "bert", "--yes", check=False)
        out = forced.stdout + forced.stderr
        assert forced.returncode == 1 and "still running on this host" in out and f"pid {holder.pid}" in out
        assert (state / "locks" / "bert.lock").exists() and (state / "locks" / "bert.json").exists()
        second = a.gj("apply", "--auto-approve", check=False)  # a second writer is still kept out
        assert second.returncode == 1 and "gpujob apply (the holder)" in second.stdout + second.stderr
        assert alive(sim) == []
    finally:
        holder.kill()
        holder.wait(10)
    # The holder is gone: its note is stale and goes.
    forced = a.gj("force-unlock", "bert", "--yes")
    assert "the lock is stale" in forced.stdout and not (state / "locks" / "bert.json").exists()
