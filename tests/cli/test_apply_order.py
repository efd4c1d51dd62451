"""Apply's output is ordered as it happened (#41): the step log, then the summary that counts it, then
its failures, on one stream, so a terminal that shares both streams and a log that reads them one after
the other (CI, a captured run) both show the summary after its last step."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpujob.apply.applier import ApplyResult
from gpujob.plan.model import ActionKind
from tests.render.test_render import action, job, plan_of

JOB = """version: 1
name: a
platform: runpod
machine: {gpu: [RTX4090], regions: [EU-RO-1], image: "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04"}
storage: {volume_gb: 10}
"""


@pytest.fixture
def applied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    from gpujob.cli import session
    from gpujob.cli.main import cli
    from gpujob.providers import registry

    steps = [action(ActionKind.CREATE), action(ActionKind.LAUNCH), action(ActionKind.PULL)]
    plan = plan_of(job("a", "running", steps))

    async def plan_and_apply(loaded, providers, opts, *, saved_plan, show, ask, hooks):  # type: ignore[no-untyped-def]
        show(plan)
        result = ApplyResult()
        for a in steps:
            hooks.step(a, "start")
            if a.kind is ActionKind.PULL:
                hooks.step(a, "failed", "no answer")
                result.failed[a.id] = "no answer"
            else:
                hooks.step(a, "done")
                result.done.append(a.id)
        return plan, result

    @contextlib.asynccontextmanager
    async def no_providers(*_: object, **__: object) -> AsyncIterator[dict]:
        yield {}

    monkeypatch.setattr(session, "plan_and_apply", plan_and_apply)
    monkeypatch.setattr(registry, "open_providers", no_providers)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.yaml").write_text(JOB)
    return CliRunner().invoke(cli, ["apply", "--auto-approve", "job.yaml"], env={"NO_COLOR": "1"})


def test_the_summary_follows_the_step_log_in_step_order_on_its_stream(applied: Any) -> None:
    err = applied.stderr.splitlines()
    summary = err.index("Apply finished: 2 done, 1 failed, 0 skipped.")  # not on stdout, before the steps
    marks = [line.split()[0] + " " + line.split()[1] for line in err[:summary] if line[:1] in "…✓✗"]
    assert marks == ["… a.pod.create", "✓ a.pod.create", "… a.pod.launch", "✓ a.pod.launch", "… a.pod.pull",
                     "✗ a.pod.pull"], err  # fmt: skip
    assert err[summary + 1] == "  ✗ a.pod.pull: no answer" and err[summary + 2].startswith("Re-run `")
    assert "Apply finished" not in applied.stdout and applied.stdout.startswith("gpujob plan · 1 job")
    both = applied.output  # as a terminal that shares the streams shows it
    assert both.index("gpujob plan") < both.index("✓ a.pod.create") < both.index("Apply finished")
