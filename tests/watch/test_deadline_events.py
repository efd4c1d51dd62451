"""run.deadline in watch (gpujob.watch.acting): the forecast slipping past the deadline while the pod runs,
and the start after its preemption re-planned for it, are each said in an event, once, in the tick that
judges them (before the tick applies anything)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from gpujob.plan.model import Finding, JobPlan
from gpujob.watch.acting import Acting
from gpujob.watch.ledger import Ledger
from tests.watch.test_ledger_limits import T0, pod

SLIPPED = Finding(code="deadline", severity="warning", summary="the forecast slipped past run.deadline ...")
REPLANNED = Finding(
    code="deadline",
    severity="warning",
    summary="re-planned for run.deadline ...: A100-80GB on-demand chosen instead",
)


class Said(SimpleNamespace):
    def say(self, j: Any, kind: str, why: str, what: str = "", **kw: Any) -> None:
        self.events.append((kind, why))


def _jp(*findings: Finding) -> JobPlan:
    return JobPlan(
        job="job", platform="runpod", spec_file="job.yaml", desired_state="running", findings=list(findings)
    )


def test_the_slip_and_the_re_plan_after_the_preemption_are_both_said_once() -> None:
    watcher = Said(events=[])
    j = SimpleNamespace(ledger=Ledger(job="job", first_seen=T0))
    machine = pod()
    for _ in range(2):  # two ticks while it runs: said once
        Acting._deadline(watcher, j, _jp(SLIPPED), machine)  # type: ignore[arg-type]
    stopped = pod(status="stopped")  # preempted: the same pod, stopped
    for _ in range(2):
        Acting._deadline(watcher, j, _jp(REPLANNED), stopped)  # type: ignore[arg-type]
    assert watcher.events == [("deadline", SLIPPED.summary), ("deadline", REPLANNED.summary)]
