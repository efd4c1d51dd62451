"""run.stall_after judged by watch from the GPU too (issue #39): where nvidia-smi exists on the machine, a
run that stopped stepping but keeps writing log lines, its GPU at 0 %, is parked by watch within
stall_after plus one interval (its newest checkpoint pulled, the pod stopped), the event saying GPU 0 %.
The simulator's pod reports the utilisation `gpujob sim inject gpu_util --percent 0` sets."""

from __future__ import annotations

from datetime import datetime

from tests.e2e.e2e_support import Project
from tests.e2e.watch_support import stall_job, stored_events, watch_until_parked

STALL_S = 6
INTERVAL_S = 1  # start_watch's --interval
TICK_READS_S = 2.5

# After its last step the run only logs, a new line every 0.3 s: not a stall by its log alone.
CHATTER = 'python3 train.py; while :; do echo "waiting for data $(date +%s%N)"; sleep 0.3; done'


def test_a_gpu_at_zero_with_no_new_step_is_parked_by_watch(project: Project) -> None:
    p = project
    text = stall_job(p, f"'{CHATTER}'", STALL_S)
    assert "waiting for data" in text and text.count("stall_after") == 1
    p.gj("apply", "--auto-approve")
    (pod,) = p.live("pods")
    assert p.sim.inject("gpu_util", pod_id=pod["id"], percent=0)["set"] == [pod["id"]]
    out = watch_until_parked(p)
    assert "run.stall_after 6s: GPU 0 % for" in out and "and no new step or checkpoint for" in out, out
    assert "(last step 60)" in out and "billed while it stalled" in out and "parked" in out, out
    ledger = p.record("watch/quickstart.json")
    assert ledger["activity_at"] > ledger["progress_at"], ledger  # the log kept moving, the steps did not
    still = max(
        datetime.fromisoformat(ledger["progress_at"]), datetime.fromisoformat(ledger["gpu_idle_since"])
    )
    limit = next(e for e in stored_events(p) if e["event"] == "limit")
    took = (datetime.fromisoformat(limit["at"]) - still).total_seconds()
    assert STALL_S <= took <= STALL_S + INTERVAL_S + TICK_READS_S, took
    assert p.live("pods")[0]["status"] == "EXITED"
    pulled = p.record("pulls/quickstart.json")
    assert any(f["name"] == "step_000060.json" and f["verified"] for f in pulled["files"]), pulled
