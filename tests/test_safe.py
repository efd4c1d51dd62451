"""gpujob.safe, the output boundary: a corpus of hostile names, each through every form."""

from __future__ import annotations

import json
import re

import pytest

from gpujob import safe

# What a pod, an API or a job file can name things: each entry would act on a terminal or a PR comment.
HOSTILE = [
    "ckpt\x1b]52;c;cm0gLXJmIH4=\x07.pt",  # OSC 52: write the user's clipboard
    "ckpt\x1b]52;c;cm0gLXJmIH4=\x1b\\.pt",  # OSC 52 with an ST terminator
    "\x1b[2J\x1b[Hstep_9.pt",  # clear the screen, cursor home
    "\x1b[3J\x1bc.pt",  # clear the scrollback, full reset
    "a\x9b2Jb.pt",  # C1 CSI
    "\x9d52;c;eA==\x9c.pt",  # C1 OSC ... ST
    "evil\u202etp.exe",  # bidi override
    "x\u2066y\u2069z\u200f.pt",  # bidi isolates, RTL mark
    "a\u200bb\ufeffc.pt",  # zero-width space, BOM
    "ok\rOVERWRITTEN.pt",  # carriage-return overwrite
    "line1\nok: 0 to destroy.pt",  # a forged second line
    "tab\there\x08\x7f.pt",  # tab, backspace, DEL
    "<img src=x onerror=alert(1)>.pt",  # live HTML in a PR comment
    "<details open><summary>x</summary>.pt",
    "[click](https://evil.example/x).pt",  # a markdown link
    "![i](https://evil.example/t.png).pt",  # a markdown image (a tracking pixel)
    "@org/admins please approve.pt",  # a mention
    "`code` | pipe *em* _u_ ~~s~~.pt",
    "x&lt;script&gt;.pt",  # pre-escaped HTML must not come out live after one unescape
]

ESC_BYTES = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


@pytest.mark.parametrize("name", HOSTILE)
def test_for_terminal_leaves_nothing_a_terminal_acts_on(name: str) -> None:
    shown = safe.for_terminal(name)
    assert not ESC_BYTES.search(shown) and "\t" not in shown
    assert shown.isprintable()


@pytest.mark.parametrize("name", HOSTILE)
def test_for_terminal_lines_keeps_only_newlines_and_tabs(name: str) -> None:
    shown = safe.for_terminal(name + "\r\nnext", lines=True)
    assert all(part.replace("\t", "").isprintable() for part in shown.split("\n"))
    assert shown.endswith("\nnext")


def _live_markdown(md: str) -> list[str]:
    """Markup that GitHub would act on in inline text outside code spans."""
    outside = re.sub(r"(?<!\\)(`+)(?!`).*?(?<!`)\1(?!`)", "", md)
    found = []
    if re.search(r"<[A-Za-z/!?]", outside):
        found.append("html")
    if re.search(r"(?<!\\)\[[^\]]*(?<!\\)\]\(", outside):
        found.append("link")
    if re.search(r"(?<![\\\w&#])@\w", outside):
        found.append("mention")
    if re.search(r"(?<!\\)\|", outside):
        found.append("pipe")
    if "\n" in md or ESC_BYTES.search(md):
        found.append("control")
    return found


@pytest.mark.parametrize("name", HOSTILE)
def test_for_markdown_leaves_no_live_markup(name: str) -> None:
    md = safe.for_markdown(name)
    assert _live_markdown(md) == [], md
    code = safe.md_code(name)
    assert "\n" not in code and not ESC_BYTES.search(code)
    assert re.fullmatch(r"(`+) ?[^\n]*? ?\1", code)


def test_the_live_markup_check_can_fail() -> None:
    assert _live_markdown("<img src=x>") == ["html"]
    assert _live_markdown("[a](b)") == ["link"]
    assert _live_markdown("hi @admins") == ["mention"]
    assert _live_markdown("a | b") == ["pipe"]


def test_markdown_renders_the_same_words_and_keeps_code_spans() -> None:
    assert safe.for_markdown("run `python train.py` detached") == "run `python train.py` detached"
    assert safe.for_markdown("a <b> & [c](d)") == "a &lt;b&gt; &amp; \\[c\\](d)"
    assert safe.for_markdown("`a`<b>`c") == "`a`&lt;b&gt;\\`c"
    assert safe.md_code("x`y") == "``x`y``"


def test_json_keeps_the_real_text_and_the_encoder_escapes_it() -> None:
    for name in HOSTILE:
        assert safe.for_json(name) == name
        assert not ESC_BYTES.search(json.dumps(safe.for_json(name)))


def test_ordinary_text_passes_unchanged() -> None:
    text = "step 12 loss 0.53 — ünïcode ✓ 日本語"
    assert safe.for_terminal(text) == text
    assert safe.for_terminal(text + "\n\tx", lines=True) == text + "\n\tx"


@pytest.mark.parametrize("name", HOSTILE)
def test_a_watch_event_line_quoting_a_name_is_one_inert_line(name: str) -> None:
    from datetime import UTC, datetime

    from gpujob.watch.events import Event

    e = Event(
        at=datetime(2026, 1, 1, tzinfo=UTC), job="bert", event="pulled", happened=f"pulled {name}", did=name
    )
    line = e.line()
    assert line.isprintable() and "\n" not in line and "bert  pulled: pulled " in line


def test_state_show_prints_an_api_name_inert() -> None:
    from gpujob.cli.cmd_state import render_text
    from gpujob.live import LiveResource

    name = "\x1b]52;c;eA==\x07pod\u202e\nforged line"
    r = LiveResource(platform="runpod", kind="pod", id="p1", name=name, status="running")
    text = render_text([r], "bert", "runpod", "proj")
    assert all(line.isprintable() for line in text.splitlines()) and "\\x1b]52;c;eA==\\x07pod" in text
    assert not any(line.startswith("forged line") for line in text.splitlines())
