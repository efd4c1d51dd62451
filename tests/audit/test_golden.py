"""Golden files for each audit format on the seeded account. Rewrite after a reviewed change with
GPUJOB_UPDATE_GOLDEN=1 python -m pytest tests/audit -k golden."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpujob.audit.classify import classify
from gpujob.audit.model import AuditReport
from gpujob.audit.render import render_audit
from gpujob.live import LiveState
from gpujob.profile import load_profile
from tests.audit.audit_seed import DAY, LOCAL_JOBS, NOW

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("fmt,suffix", [("text", "txt"), ("markdown", "md"), ("json", "json")])
def test_golden(seeded_live: LiveState, fmt: str, suffix: str) -> None:
    report = classify(
        seeded_live, local_jobs=LOCAL_JOBS, now=NOW, idle_threshold_s=DAY, profiles=load_profile
    )
    got = render_audit(report, fmt)  # type: ignore[arg-type]
    path = GOLDEN / f"audit.{suffix}"
    if os.environ.get("GPUJOB_UPDATE_GOLDEN") == "1":
        path.write_text(got)
    assert got == path.read_text(), f"{path} differs; review, then GPUJOB_UPDATE_GOLDEN=1 to rewrite"


def test_json_is_the_report(seeded_live: LiveState) -> None:
    report = classify(
        seeded_live, local_jobs=LOCAL_JOBS, now=NOW, idle_threshold_s=DAY, profiles=load_profile
    )
    data = json.loads(render_audit(report, "json"))
    assert AuditReport.model_validate(data) == report


def test_markdown_lists_every_resource_once(seeded_live: LiveState) -> None:
    report = classify(
        seeded_live, local_jobs=LOCAL_JOBS, now=NOW, idle_threshold_s=DAY, profiles=load_profile
    )
    md = render_audit(report, "markdown")
    for r in seeded_live.resources:
        assert md.count(f"| `{r.name}` |") == 1, r.name
    assert "$6," in md.splitlines()[0]  # headline total per month
