"""What the failover end-to-end tests share: gpujob init's RunPod spot job with a Paperspace fallback
(checkpoints every 2 s, pulled continuously), watch with short ticks, the job's events and records, the
preemption that starts a move, the job moved by a planned `gpujob apply`, and the polls they wait on."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

from gpujob.sim.testing import Sim
from tests.e2e.e2e_support import Project, poll
from tests.e2e.test_init import new_project
from tests.failover.jobs import FALLBACK

JOB = "anywhere"


def write_job(p: Project, mode: str, extra: str = "") -> None:
    """gpujob init's job, with a checkpoint every 2 s pulled continuously, and the Paperspace fallback
    under `failover: <mode>` (plus `extra` lines)."""
    p.gj("init", "--name", JOB)
    text = (p.dir / "job.yaml").read_text()
    text = re.sub(r"  interval: [^\n]*\n(  mtbf: [^\n]*\n  write_time: [^\n]*\n)?", "  interval: 2s\n", text)
    text = text.replace(
        "  verify: python3 verify_ckpt.py {file}\n",
        "  verify: python3 verify_ckpt.py {file}\n  pull: continuous\n",
    )
    text = text.replace('STEP_SECONDS: "0.02"', 'STEP_SECONDS: "0.05"')
    text += FALLBACK.replace("__MODE__", mode) + extra
    assert "interval: 2s" in text and "pull: continuous" in text
    # gpujob init's budget is the price cap failover: auto needs: the Paperspace entry has none of its own.
    assert re.search(r"^budget:\n  max_hourly_usd: 1\.0$", text, re.M), text
    assert "max_price_per_hour" not in FALLBACK
    (p.dir / "job.yaml").write_text(text)
    p.gj("validate")


def applied(sim: Sim, tmp_path: Path, name: str, mode: str, extra: str = "") -> Project:
    """A new project whose job (write_job) `gpujob apply` started: its pod runs on RunPod."""
    p = new_project(sim, tmp_path, name)
    write_job(p, mode, extra)
    p.gj("apply", "--auto-approve")
    return p


def watch(p: Project, *args: str) -> subprocess.Popen[str]:
    return p.popen("watch", "--interval", "1s", "--probe", "0.2s", "--max-recoveries-per-hour", "50", *args)


def stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out


def events(p: Project) -> list[dict]:
    data = p.store().read("events.jsonl") or b""
    return [json.loads(line) for line in data.decode().splitlines() if line.strip()]


def event(p: Project, name: str) -> dict | None:
    """The job's first event of that name."""
    return next((e for e in events(p) if e["event"] == name), None)


def moves(p: Project) -> list[dict]:
    return [e for e in events(p) if e["event"] == "moved"]


def verified(p: Project) -> list[str]:
    data = p.store().read(f"pulls/{JOB}.json")
    if data is None:
        return []
    return [f["name"] for f in json.loads(data)["files"] if f["verified"]]


def where(p: Project) -> dict:
    """The job's failover record: the platform it is placed on, and its moves."""
    return json.loads(p.store().read(f"failover/{JOB}.json") or b"{}")


def mine(p: Project, kind: str) -> list[dict]:
    """The job's resources of that kind, as the simulator lists them."""
    return [o for o in p.live(kind) if str(o.get("name", "")).startswith(f"gpujob-{JOB}--")]


def ids(objects: list[dict]) -> list[tuple[str, str]]:
    return [(o["id"], o.get("status", "")) for o in objects]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def approvals(out: str) -> list[str]:
    """The approval ids a refusal names."""
    return re.findall(r"--approve (\S+?)`?(?=\s|$)", out)


def approve(*wanted: str) -> list[str]:
    """`--approve <id>` for each id."""
    return [w for i in sorted(wanted) for w in ("--approve", i)]


def refused(p: Project, *args: str) -> tuple[str, set[str]]:
    """The command, refused for want of approvals: what it said, and the approval ids it names."""
    done = p.gj(*args, check=False)
    said = done.stdout + done.stderr
    assert done.returncode != 0 and "need explicit approval" in said, said
    return said, set(approvals(said))


def preempt(sim: Sim, p: Project, *, out_of_capacity: bool = True) -> None:
    """The job's pod preempted; with `out_of_capacity`, RunPod first runs out of every GPU, every cloud
    (until cleared), so the pod cannot start again there."""
    if out_of_capacity:
        sim.inject("capacity", platform="runpod")
    pod = mine(p, "pods")[0]["id"]
    assert sim.inject("preempt")["preempted"] == [pod]


def poll_verified_by_watch(p: Project) -> list[str]:
    return poll("a verified checkpoint pulled by watch", lambda: verified(p), deadline_s=120)


def poll_event(p: Project, what: str, name: str, deadline_s: float = 120) -> dict:
    return poll(what, lambda: event(p, name), deadline_s=deadline_s)


def poll_resumed(p: Project, platform: str, deadline_s: float = 90) -> re.Match[str]:
    """The run's log line saying it resumed (on `platform`), with the step it resumed from."""

    def resumed() -> re.Match[str] | None:
        return re.search(r"resumed from step (\d+)", p.gj("logs", "-n", "400", check=False).stdout)

    return poll(f"the run to resume on {platform}", resumed, deadline_s=deadline_s)


def moved_by_apply(sim: Sim, tmp_path: Path, name: str) -> Project:
    """A new project whose job runs on Paperspace, moved by a planned `gpujob apply` (failover: ask) after
    RunPod ran out of capacity and preempted its pod: the preempted pod and its network volume are left
    on RunPod."""
    p = applied(sim, tmp_path, name, "ask")

    def pulled() -> list[str]:
        p.gj("pull", check=False)
        return verified(p)

    poll("a verified checkpoint pulled here", pulled, deadline_s=120, every=1.0)
    preempt(sim, p)
    p.gj("apply", "--auto-approve", timeout=240)  # the planned move
    record = where(p)
    assert record["platform"] == "paperspace" and record["moves"][-1]["outcome"] == "done", record
    assert mine(p, "pods") and mine(p, "volumes") and mine(p, "machines")
    return p
