"""The output boundary: every string gpujob did not write itself (a pod's file names, log lines and
command output, an API's error text and names, a job file's values) passes through here where it is
rendered.

  for_terminal(s)             one line of text: every character a terminal acts on (ESC, CSI/OSC
                              sequences, C1, bell, CR, backspace, newline, tab, bidi overrides and
                              isolates, zero-width and other format characters) written out as
                              `\\x1b`, `\\n`, `\\u202e`; an OSC 52 clipboard write or a screen clear
                              becomes harmless text, and a name cannot forge a second line
  for_terminal(s, lines=True) the same, but newlines and tabs kept (a log, a command's output); CRLF is
                              a line end
  for_markdown(s) = md(s)     inline Markdown for PR comments: the terminal escapes, newlines folded
                              to spaces, HTML inert (`&lt;img …&gt;`), link/image/emphasis/table
                              syntax backslash-escaped, nothing starts a list or heading, `@`
                              mentions broken; balanced `code spans` kept (inert inside); cell(s) in
                              a table, html_text(s) inside HTML, fenced(lines) for a code block,
                              mermaid_label(s) inside a Mermaid chart
  md_code(s) = code(s)        s as one literal code span, whatever backticks it holds
  for_json(s)                 s unchanged: the JSON encoder escapes control characters, and a reader
                              of JSON wants the real name

Escapes follow Python's repr (`\\x1b`, `\\r`, `\\u202e`), so what is shown can be pasted into Python.
"""

from __future__ import annotations

import html
import re

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _show(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    o = ord(ch)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def _line(text: str, *, keep_tab: bool) -> str:
    probe = text.replace("\t", "") if keep_tab else text
    if probe.isprintable():  # the common case, checked in C
        return text
    return "".join(ch if ch.isprintable() or (keep_tab and ch == "\t") else _show(ch) for ch in text)


def for_terminal(text: object, *, lines: bool = False) -> str:
    """Text not written by gpujob, safe to print: nothing in it acts on the terminal (see the module doc)."""
    s = str(text)
    if not lines:
        return _line(s, keep_tab=False)
    return "\n".join(_line(part, keep_tab=True) for part in s.replace("\r\n", "\n").split("\n"))


def for_json(text: object) -> str:
    """JSON output keeps the real text: json.dumps writes every control character as \\u00XX."""
    return str(text)


# --- Markdown (PR comments): one escape per place a string can stand ----------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~#!])")
_LINE_START = re.compile(r"^([-+>=]|\d+[.)])")
_CODE_SPAN = re.compile(r"`([^`]+)`")  # a balanced span in gpujob's own wording ("run `python train.py`")


def inline(text: object) -> str:
    """One line: every run of whitespace (newlines included) becomes one space, and control characters
    are shown as escapes (a plan printed to a terminal acts on none)."""
    return " ".join(for_terminal(str(text), lines=True).split())


def _plain(text: str) -> str:
    out = _MD_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))
    return out.replace("@", "&#64;")  # no @mention pings anyone


def md(text: object, *, in_table: bool = False) -> str:
    """Untrusted text as literal Markdown prose (also safe in a table cell): HTML special characters
    become entities, Markdown punctuation is backslash-escaped, @mentions are broken, and nothing can
    start a list, quote or heading. A balanced `code span` stays one (nothing is live inside it)."""
    s = inline(text)
    parts: list[str] = []
    last = 0
    for m in _CODE_SPAN.finditer(s):
        parts += [_plain(s[last : m.start()]), code(m.group(1), in_table=in_table)]
        last = m.end()
    parts.append(_plain(s[last:]))
    return _LINE_START.sub(r"\\\1", "".join(parts))


def cell(text: object) -> str:
    return md(text, in_table=True)


def html_text(text: object) -> str:
    """Inside an HTML element (where Markdown is not parsed): entities only."""
    return html.escape(inline(text), quote=True)


def code(text: object, *, in_table: bool = False) -> str:
    """A code span holding `text` literally, whatever backticks it contains (CommonMark: the fence is
    one backtick longer than the longest run inside, padded when the text touches a backtick)."""
    body = inline(text)
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    if body.startswith("`") or body.endswith("`") or not body.strip():
        body = f" {body} "
    if in_table:  # GFM splits a table row on any unescaped pipe, even inside a code span
        body = body.replace("|", "\\|")
    return f"{fence}{body}{fence}"


def fenced(lines: list[str], info: str = "") -> str:
    """A fenced code block that no line of `lines` can close early."""
    longest = max((len(m) for line in lines for m in re.findall(r"`{3,}", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([f"{fence}{info}", *lines, fence])


def mermaid_label(text: object) -> str:
    """Text inside a quoted Mermaid label: Mermaid's own entity codes for what would end or mark it up."""
    out = inline(text)
    for ch, name in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"), ("`", "#96;")):
        out = out.replace(ch, name)
    return out


# The names of the short API (for renderers outside the plan: audit, ...).
for_markdown = md
md_code = code
