"""`gpujob watch --once` against the real simulator, as cron or a CI schedule drives it: the exit codes
(0 healthy, 2 recovered, 3 needs a human), one watcher per job, a budget that parks the job safely
and a changed file that resumes it, and the webhook (real HTTP, no secret in any body)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.e2e.e2e_support import CANARY, Project, poll
from tests.e2e.hint_support import BIN, COMMAND
from tests.e2e.watch_support import events, is_pod, remote_checkpoints, sim_state, start_watch, watch_job


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    bodies: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/hook", bodies
    server.shutdown()


def once(p: Project, *extra: str) -> tuple[int, str]:
    r = p.gj("watch", "--once", *extra, check=False)
    return r.returncode, r.stdout + r.stderr


def pods(p: Project) -> list[dict[str, Any]]:
    return [x for x in sim_state(p)["pods"].values() if is_pod(x["name"]) and x["ended_at"] is None]


def test_once_exit_codes_one_watcher_budget_park_and_webhook(
    project: Project, webhook: tuple[str, list[dict[str, Any]]]
) -> None:
    p = project
    url, bodies = webhook
    watch_job(p, steps=100000)
    p.env["GPUJOB_NOTIFY_URL"] = url

    code, out = once(p)
    assert code == 2, out  # it made the job: recovered from "nothing exists"
    assert re.search(r"create: pod gpujob-quickstart--\w+ does not exist", out), out
    poll("a checkpoint", lambda: remote_checkpoints(p))
    code, out = once(p)
    assert code == 0, out

    # One watcher per job: a second watcher (and an apply) is refused while the first holds the lock.
    starts = sum(e["event"] == "watch-start" for e in events(p))
    proc = start_watch(p)
    try:  # (it writes its first event once it holds the lock)
        poll("the watcher to start", lambda: sum(e["event"] == "watch-start" for e in events(p)) > starts)
        code, out = once(p)
        assert code == 1 and "is locked by" in out and "gpujob watch" in out, out
        applied = p.gj("apply", "--auto-approve", check=False)
        assert applied.returncode != 0 and "is locked by" in applied.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)

    p.sim.inject("preempt", pod_id=pods(p)[0]["id"])
    code, out = once(p)
    assert code == 2 and "preempted:" in out and "run launched" in out, out

    # A budget it would cross before the next check parks the job: checkpoints pulled, then (the file's
    # on_finish is terminate) the pod terminated; parked until the file changes.
    job = p.dir / "job.yaml"
    job.write_text(
        job.read_text().replace("max_hourly_usd: 1.0", "max_hourly_usd: 1.0\n  max_total_usd: 0.01")
    )
    code, out = once(p)
    assert code == 3 and "limit: budget.max_total_usd $0.01" in out and "parked:" in out, out
    assert pods(p) == []
    pulled = {f.name for f in (p.dir / "checkpoints").glob("step_*.json")}
    assert pulled and set(remote_checkpoints(p)) <= pulled
    code, out = once(p)
    assert code == 3 and "parked since" in out and pods(p) == [], out
    job.write_text(job.read_text().replace("max_total_usd: 0.01", "max_total_usd: 100"))
    code, out = once(p)
    assert code == 2 and "unparked" in out and len(pods(p)) == 1, out

    # Irreversible and not declared by the file: waits for a person, and says how to approve it.
    job.write_text(job.read_text().replace("state: running", "state: absent"))
    code, out = once(p)
    every = "--approve quickstart.pod.terminate --approve quickstart.network_volume.delete-volume"
    assert code == 3 and f"stop this watch and run `gpujob watch --once {every}`" in out, out
    assert len(pods(p)) == 1
    status = p.status()
    assert [e["event"] for e in status["events"]][-1] == "needs-human"
    assert status["watch"]["parked"] is None
    # The line's command, as printed, in a fresh shell: the approved teardown runs through the gate.
    (approve,) = set(COMMAND.findall(out))
    done = subprocess.run(["bash", "-c", approve], cwd=p.dir, env={**p.env, "PATH": f"{BIN}:{p.env['PATH']}"},
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode in (0, 2), done.stdout + done.stderr
    assert pods(p) == [] and [v for v in sim_state(p)["volumes"].values() if v["ended_at"] is None] == []

    texts = [b["text"] for b in bodies]
    assert any("parked:" in t for t in texts) and any("preempted:" in t for t in texts)
    assert all(b["metadata"]["event_type"] == "gpujob_watch" for b in bodies)
    assert CANARY not in json.dumps(bodies)


PAPERSPACE = """version: 1
name: psw
platform: paperspace
machine:
  gpu: [A4000]
  regions: [ny2]
  template: ubuntu-22.04
  auto_shutdown: 1h
storage:
  volume_gb: 50
  mount: /workspace
checkpoint:
  dir: /workspace/ckpt
  interval: 1s
  keep: 2
  pull_to: ./checkpoints
  verify: python3 verify_ckpt.py {file}
run:
  sync: {src: ., dest: /workspace/code, exclude: [checkpoints, .gpujob]}
  command: python3 train.py
  env: {TOTAL_STEPS: "100000", STEP_SECONDS: "0.05"}
"""


def test_paperspace_auto_shutdown_fired_is_started_and_the_run_resumed(project: Project) -> None:
    p = project
    (p.dir / "job.yaml").write_text(PAPERSPACE)
    code, out = once(p)
    assert code == 2, out
    poll("a checkpoint", lambda: (p.status().get("run") or {}).get("last_checkpoint"))
    (machine,) = [m for m in p.sim.control("state")["machines"].values() if m.get("ended_at") is None]
    p.sim.advance(3700)  # the 1 h timer fires on the simulated clock (wall clock on Linux, PS2)
    poll("the auto-shutdown", lambda: p.sim.control("state")["machines"][machine["id"]]["state"] == "off")
    code, out = once(p)
    assert code == 2, out
    # (The planner names the fired timer when its clock is the platform's; here the simulated clock ran
    # ahead of the local one, so the plan reports the drift it sees.)
    assert re.search(r"machine gpujob-psw--\w+ is off but the spec wants it running", out), out
    assert re.search(r"started (gpujob-psw--\w+); run launched on \1", out), out
    poll("the run to resume", lambda: "resumed from step" in ((p.status().get("run") or {}).get("last_log_line") or "")
         or (p.status().get("run") or {}).get("state") == "running")  # fmt: skip
    assert p.status()["machine"]["id"] == machine["id"]  # started again, not replaced: its disk is the data
