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
  for_markdown(s)             inline Markdown for PR comments: the terminal escapes, newlines folded
                              to spaces, HTML inert (`&lt;img …&gt;`), link/image/emphasis/table
                              syntax backslash-escaped, `@` mentions broken; `code spans` kept inert
  md_code(s)                  s as one literal code span, whatever backticks it holds
  for_json(s)                 s unchanged: the JSON encoder escapes control characters, and a reader
                              of JSON wants the real name

Escapes follow Python's repr (`\\x1b`, `\\r`, `\\u202e`), so what is shown can be pasted into Python.
"""

from __future__ import annotations

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


# Markdown/HTML characters that can start markup inline. `#`, `+`, `-`, `=` and digits only act at the
# start of a line, which inline text never is (newlines are folded).
# `(`, `!` and quotes are inert once `[` and `<` are escaped.
# An `_` inside a word (snake_case) never starts emphasis, so it stays readable.
_MD_SPECIAL = re.compile(r"[\\`*\[\]|~<>&@]|(?<![^\W_])_|_(?![^\W_])")
_MD_REPLACE = {"<": "&lt;", ">": "&gt;", "&": "&amp;", "@": "&#64;"}
_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def _md_plain(text: str) -> str:
    return _MD_SPECIAL.sub(lambda m: _MD_REPLACE.get(m.group(), "\\" + m.group()), text)


def _md_fold(text: object) -> str:
    """One line: whitespace runs (newlines too) are one space, then the terminal escapes."""
    return for_terminal(" ".join(str(text).split()))


def for_markdown(text: object) -> str:
    """Inline Markdown that renders as the text it was given (see the module doc). Balanced `code spans`
    stay code spans, where nothing is live; everything outside them is escaped."""
    s = _md_fold(text)
    out: list[str] = []
    last = 0
    for m in _CODE_SPAN.finditer(s):
        out.append(_md_plain(s[last : m.start()]))
        out.append(md_code(m.group(1)))
        last = m.end()
    out.append(_md_plain(s[last:]))
    return "".join(out)


def md_code(text: object) -> str:
    """A code span holding text literally (HTML and links inside a code span are not live). A `|` is
    written `\\|`, which GitHub reads as `|` even inside a code span in a table cell."""
    s = _md_fold(text).replace("|", "\\|")
    run = max((len(r) for r in re.findall(r"`+", s)), default=0)
    fence = "`" * (run + 1)
    pad = " " if run or s.startswith(" ") or s.endswith(" ") else ""
    return f"{fence}{pad}{s}{pad}{fence}"
