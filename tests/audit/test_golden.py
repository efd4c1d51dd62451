"""Golden files for each audit format on the seeded account. Rewrite after a reviewed change with
GPUJOB_UPDATE_GOLDEN=1 python -m pytest tests/audit -k golden."""

from __future__ import annotations

import json
import os
import re
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


def test_on_a_terminal_the_text_fits_its_width_with_details_under_each_row(seeded_live: LiveState) -> None:
    import re

    report = classify(
        seeded_live, local_jobs=LOCAL_JOBS, now=NOW, idle_threshold_s=DAY, profiles=load_profile
    )
    plain = render_audit(report, "text").splitlines()
    fancy = render_audit(report, "text", color=True, width=100).splitlines()
    visible = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in fancy]
    assert len(visible) == len(plain)  # one line per row: every detail line stays under its row
    rows = [
        v
        for v, p in zip(visible, plain, strict=True)
        if p.startswith("  ") and not p.startswith("      ") and " total: " not in p  # the table rows
    ]
    assert rows and all(len(v) <= 100 for v in rows)
    assert any("…" in v for v in rows)  # the seeded names and dates do not fit 100 columns
    assert "\x1b[1m" in fancy[plain.index(next(p for p in plain if p.startswith("  OWNER")))]  # bold header


def test_hostile_names_from_the_account_are_inert_in_text_and_markdown(seeded_live: LiveState) -> None:
    """Anyone on the account names a pod: the audit shows such names, never acts on them."""
    hostile = "x\x1b]52;c;eA==\x07<img src=x onerror=alert(1)>[a](b)@admins\u202e"
    live = seeded_live.model_copy(
        update={"resources": [r.model_copy(update={"name": hostile}) for r in seeded_live.resources]}
    )
    report = classify(live, local_jobs=LOCAL_JOBS, now=NOW, idle_threshold_s=DAY, profiles=load_profile)
    assert any(hostile in i.label for i in report.items)
    text = render_audit(report, "text")
    assert "\x1b" not in text and "\u202e" not in text and "\\x1b]52;c;eA==\\x07" in text
    md = render_audit(report, "markdown")
    assert "\x1b" not in md and "\u202e" not in md
    outside = re.sub(r"(`+)[^`]*?\1", "", md)  # code spans are inert
    assert "<img" not in outside and "](b)" not in outside.replace("\\](b)", "")
