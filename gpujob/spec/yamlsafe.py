"""Read one job file safely: size cap, strict UTF-8, and an event-level pre-scan that refuses YAML bombs,
object-constructing tags, deep nesting and extra documents before anything is constructed.

The pre-scan also records where every key and value sits (1-based line/col from ruamel's marks) and
spots duplicate keys, so every later problem can point at a precise position.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

from gpujob.spec.positions import Pos, Positions
from gpujob.spec.problem import SpecProblem
from gpujob.spec.scan import scan_events

MAX_BYTES = 1024 * 1024
EMPTY_HINT = "a job file needs at least version, name, platform and machine"


@dataclass
class ParsedFile:
    data: Any
    positions: Positions
    problems: list[SpecProblem]  # non-fatal ones (duplicate keys); fatal ones leave data as None
    digest: str = ""


def _pos_of(byte_prefix: bytes) -> Pos:
    line = byte_prefix.count(b"\n") + 1
    return line, len(byte_prefix) - (byte_prefix.rfind(b"\n") + 1) + 1


def read_text(path: Path, display: str) -> tuple[str | None, bytes, list[SpecProblem]]:
    """The file's text, or the problem that stops us reading it."""

    def fail(
        message: str, hint: str | None = None, pos: Pos = (1, 1)
    ) -> tuple[None, bytes, list[SpecProblem]]:
        return None, b"", [SpecProblem(display, pos[0], pos[1], "", message, hint)]

    try:
        size = path.stat().st_size
        if path.is_dir():
            return fail("is a directory, not a job file", "pass a job file, e.g. job.yaml")
        if not path.is_file():  # a FIFO or device would block or never end
            return fail("is not a regular file")
        if size > MAX_BYTES:
            return fail(
                f"file is too large ({size} bytes; the limit is {MAX_BYTES} bytes)",
                "a job file is a few dozen lines; is this the right file?",
            )
        raw = path.read_bytes()[: MAX_BYTES + 1]
    except FileNotFoundError:
        return fail("no such file")
    except OSError as exc:
        return fail(f"cannot read the file: {exc.strerror or exc}")
    if len(raw) > MAX_BYTES:  # grew between stat and read
        return fail(f"file is too large (over {MAX_BYTES} bytes)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return fail("file is not valid UTF-8 text", "save it as UTF-8", _pos_of(raw[: exc.start]))
    if not text.strip():
        return fail("file is empty", EMPTY_HINT)
    return text, raw, []


def _key(key: Any) -> str:
    # Keys are compared with field names, so `1:`, `true:` or `null:` become the text the user wrote.
    if isinstance(key, bool):
        return "true" if key else "false"
    return "null" if key is None else str(key)


def _plain(value: Any) -> Any:
    # Dates are the one non-JSON type the safe loader builds; the spec never wants one, so keep the text.
    if isinstance(value, dict):
        return {_key(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, date):
        return value.isoformat()
    return value


def parse_file(path: Path, display: str) -> ParsedFile:
    import hashlib

    text, raw, problems = read_text(path, display)
    if text is None:
        return ParsedFile(None, Positions(), problems)
    digest = hashlib.sha256(raw).hexdigest()
    scan = scan_events(text, display)
    positions, problems = scan.positions, scan.problems
    if scan.fatal:
        return ParsedFile(None, positions, problems, digest)
    try:
        if scan.built:
            data = _plain(scan.data)
        else:
            with warnings.catch_warnings():  # e.g. a reused anchor: harmless, not for the user's terminal
                warnings.simplefilter("ignore")
                data = _plain(_loader().load(io.StringIO(text)))
    except Exception as exc:  # the scan accepted it, so this is a loader corner case: still no traceback
        mark = getattr(exc, "problem_mark", None)
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        problem = getattr(exc, "problem", None) or type(exc).__name__
        problems.append(SpecProblem(display, line, col, "", f"cannot read YAML: {problem}"))
        return ParsedFile(None, positions, problems, digest)
    if not isinstance(data, dict):
        if data is None:
            problems.append(SpecProblem(display, 1, 1, "", "file is empty (no YAML content)", EMPTY_HINT))
            return ParsedFile(None, positions, problems, digest)
        kind = (
            "a list"
            if isinstance(data, list)
            else "a text value"
            if isinstance(data, str)
            else "a single value"
        )
        line, col = positions.values.get("", (1, 1))
        problems.append(
            SpecProblem(
                display,
                line,
                col,
                "",
                f"expected a mapping of keys at the top level, got {kind}",
                "a job file starts with lines such as `version: 1`, `name: ...`, `platform: ...`",
            )
        )
        return ParsedFile(None, positions, problems, digest)
    return ParsedFile(data, positions, problems, digest)


@cache
def _loader() -> Any:
    """One loader for every file (libyaml when ruamel.yaml.clib is installed); the scan vetted every tag."""
    from ruamel.yaml import YAML

    loader = YAML(typ="safe")
    loader.allow_duplicate_keys = True  # already reported, with both positions, by the scan
    return loader
