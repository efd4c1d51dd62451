"""Renderers are pure functions of a Plan: symbols, the summary line, colour only on request, escaping."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from gpujob.cost.model import Billing, MeterLine
from gpujob.plan.model import Action, ActionKind, Finding, JobPlan, Plan
from gpujob.render import render_plan
from gpujob.render.markdown import cell
from gpujob.render.summary import SYMBOL, VERB, counts, summary_line

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)


def action(kind: ActionKind, job: str = "a", **kw: object) -> Action:
    return Action(
        id=f"{job}.pod.{kind.value}",
        job=job,
        platform="runpod",
        kind=kind,
        resource_kind="pod",
        resource_name=f"gpujob-{job}",
        **kw,
    )  # type: ignore[arg-type]


def plan_of(*jobs: JobPlan) -> Plan:
    return Plan(created_at=NOW, gpujob_version="t", spec_digest="s", live_fingerprint="f", jobs=list(jobs))


def job(name: str, state: str, actions: list[Action], **kw: object) -> JobPlan:
    return JobPlan(
        job=name, platform="runpod", spec_file=f"{name}.yaml", desired_state=state, actions=actions, **kw
    )  # type: ignore[arg-type]


def test_summary_line_matches_the_documented_form() -> None:
    plan = plan_of(
        job("a", "running", [action(ActionKind.CREATE)], running_usd_per_hour=2.49),
        job("b", "stopped", [action(ActionKind.STOP, "b")], parked_usd_per_month=20.0),
    )
    assert (
        summary_line(plan)
        == "Plan: 1 to create, 1 to stop, 0 to destroy. Running: $2.49/h. Parked: $20.00/mo."
    )


def test_destroy_counts_every_deleting_kind() -> None:
    acts = [
        action(k)
        for k in (
            ActionKind.TERMINATE,
            ActionKind.DELETE_VOLUME,
            ActionKind.RELEASE_IP,
            ActionKind.DELETE_SNAPSHOT,
        )
    ]
    assert counts(acts)["destroy"] == 4
    assert counts([action(ActionKind.NOOP)]) == dict.fromkeys(counts([]), 0)


def test_no_changes_line() -> None:
    plan = plan_of(job("a", "running", [action(ActionKind.NOOP)], running_usd_per_hour=1.0))
    assert summary_line(plan).startswith("No changes")
    assert not plan.has_changes


def test_every_kind_has_a_symbol_and_verb_and_renders() -> None:
    assert set(SYMBOL) == set(VERB) == set(ActionKind)
    assert (
        len(
            {
                SYMBOL[k]
                for k in (
                    ActionKind.CREATE,
                    ActionKind.UPDATE,
                    ActionKind.REPLACE,
                    ActionKind.TERMINATE,
                    ActionKind.START,
                    ActionKind.STOP,
                    ActionKind.PULL,
                    ActionKind.LAUNCH,
                )
            }
        )
        == 8
    )
    plan = plan_of(job("a", "running", [action(k) for k in ActionKind]))
    text = render_plan(plan, "text")
    for k in ActionKind:
        assert f"a.pod.{k.value}" in text


def test_colour_only_when_asked() -> None:
    f = Finding(code="RP4", severity="warning", summary="s")
    plan = plan_of(job("a", "running", [action(ActionKind.CREATE, findings=[f])]))
    assert "\x1b[" in render_plan(plan, "text", color=True)
    assert "\x1b[" not in render_plan(plan, "text", color=False)
    assert "\x1b[" not in render_plan(plan, "markdown", color=True)


def test_replacement_culprit_is_marked() -> None:
    from gpujob.plan.model import FieldChange

    a = action(
        ActionKind.REPLACE, changes=[FieldChange(path="gpu", before="A", after="B", forces_replacement=True)]
    )
    text = render_plan(plan_of(job("a", "running", [a])), "text")
    assert '~ gpu = "A" -> "B"  # forces replacement' in text


def test_meter_lines_show_rate_and_source() -> None:
    m = MeterLine(
        what="volume disk 100 GB (stopped, 2×)",
        usd_per_hour=20 / 720,
        usd_per_month=20.0,
        source="profile runpod 2026-06-01",
    )
    g = MeterLine(
        what="GPU 1× A100", usd_per_hour=2.49, usd_per_month=2.49 * 720, source="profile runpod 2026-06-01"
    )
    a = action(ActionKind.STOP, billing=Billing(stops=[g], keeps=[m], hourly_before=2.52, hourly_after=0.03))
    text = render_plan(plan_of(job("a", "stopped", [a])), "text")
    assert "stops         GPU 1× A100" in text and "$2.49/h" in text
    assert "keeps billing volume disk 100 GB (stopped, 2×)  $20.00/mo" in text
    md = render_plan(plan_of(job("a", "stopped", [a])), "markdown")
    assert (
        "| volume disk 100 GB (stopped, 2×) | keeps billing | $20.00/mo | profile runpod 2026-06-01 |" in md
    )


def test_markdown_escapes_table_cells_and_is_collapsible() -> None:
    assert cell("a | b\nc") == "a \\| b c"
    a = action(ActionKind.CREATE, reasons=["x"], billing=Billing(summary="one | two"))
    md = render_plan(plan_of(job("a", "running", [a])), "markdown")
    assert "<details" in md and "</details>" in md and "one \\| two" in md


def test_json_is_the_model_dump_and_round_trips() -> None:
    plan = plan_of(job("a", "running", [action(ActionKind.CREATE)]))
    text = render_plan(plan, "json")
    data = json.loads(text)
    assert data == plan.model_dump(mode="json") and data["format_version"] == 1
    assert Plan.model_validate_json(text) == plan


def test_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown plan format"):
        render_plan(plan_of(), "yaml")


def test_plan_schema_is_generatable() -> None:
    schema = Plan.model_json_schema(mode="serialization")
    assert "after_usd_per_hour" in json.dumps(schema)
