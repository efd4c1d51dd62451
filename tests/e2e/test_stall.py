"""run.stall_after (issue #39): a run that stops making progress but stays alive is parked by watch within
stall_after plus one interval: its newest checkpoint pulled and verified, the pod stopped, an event that
names the last step, how long it stalled and what that cost."""

from __future__ import annotations

from datetime import datetime

from tests.e2e.e2e_support import Project
from tests.e2e.watch_support import stall_job, stored_events, watch_until_parked

STALL_S = 6
INTERVAL_S = 1  # start_watch's --interval
TICK_READS_S = 2.5


def test_a_stalled_run_is_parked_within_stall_after_plus_one_interval(project: Project) -> None:
    p = project
    text = stall_job(p, "python3 train.py; sleep 100000", STALL_S)
    assert "sleep 100000" in text and text.count("stall_after") == 1
    p.gj("apply", "--auto-approve")
    out = watch_until_parked(p)
    assert "run.stall_after 6s: the run is alive but wrote no new step, checkpoint or log line for" in out, (
        out
    )
    assert "(last step 60)" in out and "billed while it stalled" in out and "parked" in out, out
    ledger = p.record("watch/quickstart.json")
    quiet = datetime.fromisoformat(ledger["activity_at"])
    limit = next(e for e in stored_events(p) if e["event"] == "limit")
    took = (datetime.fromisoformat(limit["at"]) - quiet).total_seconds()
    # one interval = the watch's sleep plus the tick's own reads (SSH status, live state): TICK_READS_S
    assert STALL_S <= took <= STALL_S + INTERVAL_S + TICK_READS_S, took
    assert p.live("pods")[0]["status"] == "EXITED"
    pulled = p.record("pulls/quickstart.json")
    assert any(f["name"] == "step_000060.json" and f["verified"] for f in pulled["files"]), pulled
