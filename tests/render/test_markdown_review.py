"""The PR comment a reviewer reads: one heading, the approve lines for every gated action, monthly
figures, a Mermaid chart, and hostile text from the platform or the job file shown as text only
(checked by rendering the Markdown to HTML with markdown-it, a CommonMark parser)."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

from gpujob.cost.model import Billing
from gpujob.plan.model import ActionKind, DataEffect, FieldChange, Finding, SourceRef
from gpujob.render import render_plan
from gpujob.render.markdown import code, fenced, md
from tests.render.test_render import action, job, plan_of

HOSTILE = [
    '<img src=x onerror="alert(1)">',
    "[click me](https://evil.example)",
    "![x](https://evil.example/p.png)",
    "a | b | c",
    "line one\n## injected heading\n- item",
    "```\nclosing fence",
    "</details><details open>",
    "<!-- gpujob-plan -->",
    "`tick` and ``two``",
    "# heading",
    "1. list",
    "*bold* _em_ ~~gone~~",
    "\x1b[2J\x1b]8;;https://evil.example\x07link\x1b]8;;\x07",
    "ping @everyone and @octo-org/admins",
    "`<img src=y>` | `a|b`",
]


def html_of(text: str) -> str:
    return MarkdownIt("commonmark").enable("table").enable("strikethrough").render(text)


def outside_code(text: str) -> str:
    """The Markdown source without its code blocks and code spans."""
    lines = text.splitlines()
    for tok in MarkdownIt("commonmark").enable("table").parse(text):
        if tok.type == "fence" and tok.map:
            for i in range(*tok.map):
                lines[i] = ""
    return re.sub(r"(`+).*?\1", "", "\n".join(lines))


def hostile_plan():  # type: ignore[no-untyped-def]
    acts = [_act(i, evil) for i, evil in enumerate(HOSTILE)]
    return plan_of(job("a", "running", acts, current_usd_per_hour=1.0, after_usd_per_hour=3.5))


def _act(i: int, evil: str):  # type: ignore[no-untyped-def]
    from gpujob.plan.model import Action

    kind = ActionKind.TERMINATE if i == 0 else ActionKind.UPDATE
    return Action(
        id=f"a.pod.x{i}",
        job="a",
        platform="runpod",
        kind=kind,
        resource_kind="pod",
        resource_name=evil,
        reasons=[evil],
        changes=[FieldChange(path="image", before=evil, after=evil)],
        billing=Billing(summary=evil),
        data=DataEffect(summary=evil),
        findings=[
            Finding(
                code="RP1",
                severity="warning",
                summary=evil,
                fix=evil,
                source=SourceRef(file=evil, line=1, column=1, key="k"),
            )
        ],
    )


def test_hostile_text_adds_no_markup_no_links_no_html() -> None:
    text = render_plan(hostile_plan(), "markdown")
    out = html_of(text)
    assert "<img" not in out and "<a " not in out and "<!-- gpujob-plan" not in out
    assert "<em>" not in out and "<s>" not in out and "<del>" not in out
    # One heading, ours.
    assert re.findall(r"<h\d>(.*?)</h\d>", out) == ["gpujob plan"]
    # Our own <details> blocks only: one per job, none opened or closed by the text.
    assert out.count("<details") == 1 and out.count("</details>") == 1
    # Every table row keeps its column count (a pipe in a name does not add a cell).
    for table in re.findall(r"<table>.*?</table>", out, re.S):
        widths = {len(re.findall(r"<t[dh][ >]", row)) for row in re.findall(r"<tr>.*?</tr>", table, re.S)}
        assert len(widths) == 1, table
    # The hostile text is still shown, as text.
    assert "&lt;img src=x onerror=" in out and "[click me](https://evil.example)" in out
    assert "\x1b" not in text and "\x07" not in text and "\\x1b[2J" in text
    # No @mention: outside code (where hosts never link one) the @ is an entity.
    assert "@everyone" not in outside_code(text) and "&#64;everyone" in text
    assert "<code>&lt;img src=y&gt;</code>" in out  # gpujob's own `code` wording stays code, inert


def test_escapes_are_literal() -> None:
    assert md("<b>x</b> | *y*") == "&lt;b&gt;x&lt;/b&gt; \\| \\*y\\*"
    assert md("- starts a list") == "\\- starts a list"
    assert md("run `python train.py | tee log` detached") == "run `python train.py | tee log` detached"
    assert md("a `b|c` d", in_table=True) == "a `b\\|c` d"
    assert md("mail me@x") == "mail me&#64;x"
    assert code("a `b` c") == "``a `b` c``"
    assert code("`x") == "`` `x ``"
    block = fenced(["```", "x"], "diff")
    assert block.startswith("````diff\n") and block.endswith("\n````")


def test_gated_actions_get_their_approve_lines_in_words() -> None:
    term = action(ActionKind.TERMINATE, data=DataEffect(summary="wipes container disk (irreversible)"))
    term = term.model_copy(update={"resource_id": "pod-123"})
    create = action(ActionKind.CREATE, "b")
    plan = plan_of(
        job("a", "absent", [term], current_usd_per_hour=3.0, after_usd_per_hour=0.0),
        job("b", "running", [create], current_usd_per_hour=0.0, after_usd_per_hour=1.5),
    )
    text = render_plan(plan, "markdown")
    assert "```text\ngpujob-approve: a.pod.terminate\n```" in text
    assert "gpujob-approve: b." not in text  # only gated actions
    assert (
        "- `a.pod.terminate` approves: terminate pod gpujob-a (pod-123): wipes container disk (irreversible)"
        in text
    )
    # The approve line is what the CI reads from a PR description.
    from gpujob.gitops.comment import approvals_in

    assert approvals_in(text) == ["a.pod.terminate"]
    # Money per hour and per month, with the monthly delta; the Mermaid chart before -> after.
    assert "Billing now $3.00/h (≈ $2,160.00/mo if left running)" in text
    assert "after apply $1.50/h (≈ $1,080.00/mo if left running): -$1.50/h, ≈ -$1,080.00/mo." in text
    mermaid = text.split("```mermaid\n", 1)[1].split("\n```", 1)[0]
    assert mermaid.startswith("flowchart LR")
    assert '"a now: $3.00/h ≈ $2,160.00/mo"' in mermaid and '"a after apply: $0.00/h ≈ $0.00/mo"' in mermaid
    assert '"all jobs now: $3.00/h ≈ $2,160.00/mo"' in mermaid and '|"-$1.50/h"|' in mermaid
    # The job with the gated action is open; the other stays folded.
    assert "<details open>\n<summary><b>a</b>" in text and "<details>\n<summary><b>b</b>" in text


def test_no_gated_action_no_approve_section_and_no_chart_without_changes() -> None:
    text = render_plan(plan_of(job("a", "running", [action(ActionKind.CREATE)])), "markdown")
    assert "gpujob-approve" not in text and "```mermaid" in text
    quiet = render_plan(plan_of(job("a", "running", [action(ActionKind.NOOP)])), "markdown")
    assert "```mermaid" not in quiet and "Billing now $0.00/h (≈ $0.00/mo if left running)" in quiet
