"""Walk ruamel's parse events once: refuse unsafe input, record positions and build the plain data.

Nothing is constructed before a node has passed the checks (tag, size after alias expansion, depth,
anchors defined before use), and only plain values are ever built: scalars go through ruamel's own
safe resolver and constructor, so `yes`, `0o17` or `2024-01-02` mean exactly what `YAML(typ="safe")`
makes of them. One parse serves both the checks and the data (a second full load cost more than the
rest of validating a job file)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import cache
from typing import Any

from gpujob.spec.positions import Positions, child_path
from gpujob.spec.problem import SpecProblem

MAX_ALIASES = 100
MAX_NODES = 10_000  # counted after alias expansion, so nested aliases cannot multiply past it
MAX_DEPTH = 32
# Explicit tags that only ask for a plain value; anything else (!!python/..., !!binary, !custom) is refused.
SAFE_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq"))

# Resolving and constructing a scalar through ruamel is most of a file's parse time, and job files
# repeat their keys and many values (`validate` of 100 files resolves `name`, `machine`, ... 100 times).
# The result depends only on these event fields and the document's YAML version.
_SCALARS: dict[tuple[Any, ...], Any] = {}
_MEMO_MAX = 4096
_IMMUTABLE = (str, int, float, bool, type(None), bytes, date, datetime)
_UNSET: Any = object()


def _tag_name(tag: Any) -> str | None:
    if tag is None:
        return None
    value = getattr(tag, "value", tag)
    return None if value is None else str(value)


class _Stop(Exception):
    """A fatal problem: the file is not scanned further."""


@dataclass
class _Frame:
    kind: str  # "map" | "seq"
    path: str
    anchor: str | None
    start_size: int
    expect_key: bool = True
    key: str | None = None
    index: int = 0
    seen: dict[str, tuple[int, int]] = field(default_factory=dict)
    value: Any = None  # the dict or list being built
    key_value: Any = None  # the constructed key waiting for its value
    slot: str = "root"  # where the finished container goes in its parent (see _Scanner._slot)
    mark: Any = None


class _Scanner:
    def __init__(self, display: str, yaml: Any = None) -> None:
        # yaml: a safe YAML object whose resolver and constructor build scalars; None = checks only
        self.yaml = yaml
        self.root: Any = None
        self.anchor_values: dict[str, Any] = {}
        self.display = display
        self.positions = Positions()
        self.problems: list[SpecProblem] = []
        self.stack: list[_Frame] = []
        self.anchors: dict[str, int] = {}
        self.aliases = 0
        self.size = 0
        self.documents = 0
        self.version: Any = _UNSET

    def fatal(self, mark: Any, message: str, hint: str | None = None) -> _Stop:
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        self.problems.append(SpecProblem(self.display, line, col, "", message, hint))
        return _Stop()

    def _grow(self, amount: int, mark: Any) -> None:
        self.size += amount
        if self.size > MAX_NODES:
            raise self.fatal(
                mark,
                f"document too large: more than {MAX_NODES} values once aliases are expanded",
                "a job file needs no more than a few dozen values; remove the repeated aliases",
            )

    def _node_path(self, mark: Any, is_key_scalar: str | None) -> str | None:
        """Place a node in its parent. Returns its key path, or None when the node is itself a key."""
        pos = (mark.line + 1, mark.column + 1)
        if not self.stack:
            self.positions.values[""] = pos
            return ""
        top = self.stack[-1]
        if top.kind == "seq":
            path = child_path(top.path, top.index)
            top.index += 1
            self.positions.values[path] = pos
            return path
        if top.expect_key:
            top.expect_key = False
            key = is_key_scalar if is_key_scalar is not None else "?"
            top.key = key
            path = child_path(top.path, key)
            if is_key_scalar is not None and key != "<<":
                if key in top.seen:
                    first = top.seen[key]
                    self.problems.append(
                        SpecProblem(
                            self.display,
                            pos[0],
                            pos[1],
                            path,
                            f"duplicate key '{key}' (first defined at line {first[0]})",
                            "keep one of them; YAML does not merge repeated keys",
                        )
                    )
                else:
                    top.seen[key] = pos
                    self.positions.keys[path] = pos
            return None
        top.expect_key = True
        path = child_path(top.path, top.key or "?")
        self.positions.values.setdefault(path, pos)
        return path

    def _scalar(self, ev: Any, tag: str | None) -> Any:
        if self.version is _UNSET:  # the document's YAML version decides what `yes` or `0o17` resolve to
            self.version = self.yaml.resolver.processing_version
        memo_key = (self.version, tag, ev.value, ev.implicit, ev.style)
        known = _SCALARS.get(memo_key, _UNSET)  # one lookup: another thread may clear the memo meanwhile
        if known is not _UNSET:
            return known
        from ruamel.yaml.nodes import ScalarNode

        if tag is None or tag == "!":
            tag = self.yaml.resolver.resolve(ScalarNode, ev.value, ev.implicit)
        if tag == "tag:yaml.org,2002:merge":
            # `<<` merge keys have quirks of their own in ruamel (duplicates, order, shared nodes): such
            # a rare file is loaded by ruamel itself after the checks, rather than imitated here.
            self.yaml = None
            return None
        node = ScalarNode(tag, ev.value, ev.start_mark, ev.end_mark, style=ev.style)
        value = self.yaml.constructor.construct_object(node, deep=True)
        self.yaml.constructor.constructed_objects.pop(node, None)
        if type(value) in _IMMUTABLE:  # a shared value must be one nothing can change
            if len(_SCALARS) >= _MEMO_MAX:
                _SCALARS.clear()
            _SCALARS[memo_key] = value
        return value

    def _slot(self) -> str:
        """Where the node _node_path just placed goes: root, seq, key or value."""
        if not self.stack:
            return "root"
        top = self.stack[-1]
        if top.kind == "seq":
            return "seq"
        if not top.expect_key:  # _node_path just consumed a key slot: this node is the key
            return "key"
        return "value"

    def _put(self, slot: str, value: Any, mark: Any) -> None:
        """Store a finished value (a scalar at once, a container at its end) in its slot."""
        if slot == "root":
            self.root = value
            return
        top = self.stack[-1]
        if slot == "seq":
            top.value.append(value)
        elif slot == "key":
            if isinstance(value, list):  # as ruamel's safe constructor does: a sequence key is a tuple
                value = tuple(value)
            try:
                hash(value)
            except TypeError:
                raise self.fatal(mark, "cannot read YAML: found unhashable key") from None
            top.key_value = value
        elif top.key_value not in top.value:  # a repeated key keeps its first value, as in ruamel
            top.value[top.key_value] = value

    def event(self, ev: Any) -> None:
        name = type(ev).__name__
        mark = ev.start_mark
        if name == "DocumentStartEvent":
            self.documents += 1
            self.version = _UNSET
            if self.documents > 1:
                raise self.fatal(
                    mark,
                    "a job file holds one YAML document; found a second one here",
                    "remove the extra `---`, or put each job in its own file",
                )
            return
        if name in ("MappingEndEvent", "SequenceEndEvent"):
            frame = self.stack.pop()
            if self.yaml is not None:
                self._put(frame.slot, frame.value, frame.mark)
            if frame.anchor:
                self.anchors[frame.anchor] = self.size - frame.start_size
                self.anchor_values[frame.anchor] = frame.value
            return
        if name not in ("ScalarEvent", "MappingStartEvent", "SequenceStartEvent", "AliasEvent"):
            return
        if name == "AliasEvent":
            self.aliases += 1
            if ev.anchor not in self.anchors:
                raise self.fatal(
                    mark,
                    f"alias '*{ev.anchor}' refers to no anchor defined before it",
                    f"define '&{ev.anchor}' earlier in the file, or write the value out",
                )
            if self.aliases > MAX_ALIASES:
                raise self.fatal(
                    mark,
                    f"too many aliases (more than {MAX_ALIASES})",
                    "write the values out; a job file needs few or no *aliases",
                )
            self._node_path(mark, None)
            self._grow(self.anchors.get(ev.anchor, 1), mark)
            if self.yaml is not None:
                self._put(self._slot(), self.anchor_values.get(ev.anchor), mark)
            return
        tag = _tag_name(ev.tag)
        if tag is not None and tag not in SAFE_TAGS:
            shown = tag.replace("tag:yaml.org,2002:", "!!")
            raise self.fatal(
                mark, f"tag '{shown}' is not allowed", "job files hold plain values only; remove the tag"
            )
        self._grow(1, mark)
        is_key = None
        if name == "ScalarEvent":
            is_key = ev.value
        path = self._node_path(mark, is_key)
        if name == "ScalarEvent":
            if ev.anchor:
                self.anchors[ev.anchor] = 1
            if self.yaml is not None:
                value = self._scalar(ev, tag)
                if self.yaml is None:  # a merge key: from here on, only checks
                    return
                self._put(self._slot(), value, mark)
                if ev.anchor:
                    self.anchor_values[ev.anchor] = value
            return
        if len(self.stack) >= MAX_DEPTH:
            raise self.fatal(mark, f"nested too deeply (more than {MAX_DEPTH} levels)")
        kind = "map" if name == "MappingStartEvent" else "seq"
        frame = _Frame(kind, path if path is not None else "?", ev.anchor, self.size, mark=mark)
        if self.yaml is not None:
            frame.value, frame.slot = ({} if kind == "map" else []), self._slot()
        self.stack.append(frame)


@dataclass
class ScanResult:
    positions: Positions
    problems: list[SpecProblem]
    fatal: bool  # the text must not be loaded
    data: Any = None
    built: bool = False  # data holds the document (False: only the slow fallback parser read it)


def scan_events(text: str, display: str) -> ScanResult:
    from ruamel.yaml import YAML

    try:
        # libyaml's parser (ruamel.yaml.clib) is ~10x faster; the pure one words malformed-YAML messages
        # best, so it re-reads only a file the fast one could not parse (and then only checks it).
        return _scan(text, display, _fast_parser(), build=True)
    except Exception:
        return _scan(text, display, YAML(typ="rt"), build=False)


@cache
def _fast_parser() -> Any:
    """One libyaml-backed YAML object for every file: building one costs more than parsing a job file."""
    from ruamel.yaml import YAML

    return YAML(typ="safe")


def _events(yaml: Any, text: str, build: bool) -> Iterator[Any]:
    """yaml.parse(text)'s events. For the libyaml parser, straight from its CParser: the same events
    (YAML.parse makes that very parser, after building a loader class for it at every call, which cost
    a third of a small file's parse)."""
    parser_class = getattr(yaml, "Parser", None)
    if not build or parser_class is None or parser_class.__name__ != "CParser":
        yield from yaml.parse(io.StringIO(text))
        return
    parser = parser_class(io.StringIO(text))
    try:
        while parser.check_event():
            yield parser.get_event()
    finally:
        parser.dispose()


def plain_document(text: str) -> Any:
    """The data of a plain document, for `gpujob validate`'s fast path: one document of mappings,
    sequences and scalars only (no tag, anchor, alias or merge key, no collection as a key, no key
    written twice, not deeper than MAX_DEPTH): None for anything else, and for any parse error.

    For such a document scan_events builds the very same data (the same events, each scalar resolved by
    the same _Scanner._scalar) and finds no problem, since every one it reports is refused here too; so
    yamlsafe.parse_file's data for it is yamlsafe._plain of this, without problems. The checks the
    scanner makes for messages and positions are what this saves."""
    yaml = _fast_parser()
    resolver = _Scanner("", yaml)  # its _scalar resolves and constructs each scalar, memoised
    scalar = resolver._scalar
    stack: list[tuple[Any, list[Any], set[str]]] = []  # (container, [the key awaiting its value], raw keys)
    root: Any = None
    nodes = documents = 0
    no_key: Any = _UNSET
    try:
        for ev in _events(yaml, text, True):
            kind = type(ev).__name__
            if kind == "ScalarEvent":
                if ev.tag is not None or ev.anchor is not None:
                    return None
                value = scalar(ev, None)
                if resolver.yaml is None:  # a merge key
                    return None
            elif kind == "MappingStartEvent" or kind == "SequenceStartEvent":
                if ev.tag is not None or ev.anchor is not None or len(stack) >= MAX_DEPTH:
                    return None
                value = {} if kind == "MappingStartEvent" else []
            elif kind == "MappingEndEvent" or kind == "SequenceEndEvent":
                stack.pop()
                continue
            elif kind == "DocumentStartEvent":
                documents += 1
                if documents > 1:
                    return None
                continue
            elif kind in ("StreamStartEvent", "StreamEndEvent", "DocumentEndEvent"):
                continue
            else:
                return None  # an alias, or an event this does not know
            nodes += 1
            if nodes > MAX_NODES:
                return None
            if not stack:
                root = value
            else:
                container, key, seen = stack[-1]
                if type(container) is list:
                    container.append(value)
                elif key[0] is no_key:  # this node is a key
                    if kind != "ScalarEvent" or ev.value in seen or value in container:
                        return None
                    seen.add(ev.value)
                    key[0] = value
                else:
                    container[key[0]] = value
                    key[0] = no_key
            if kind != "ScalarEvent":
                stack.append((value, [no_key], set()))
    except Exception:  # the scanner words parse errors; here any of them is "not sure"
        return None
    return root


def _scan(text: str, display: str, yaml: Any, *, build: bool) -> ScanResult:
    from ruamel.yaml.error import YAMLError

    scanner = _Scanner(display, yaml if build else None)

    def fatal() -> ScanResult:
        return ScanResult(scanner.positions, scanner.problems, True)

    try:
        for ev in _events(yaml, text, build):
            scanner.event(ev)
    except _Stop:
        return fatal()
    except YAMLError as exc:
        if build:
            raise
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context = getattr(exc, "context", None)
        message = f"malformed YAML: {problem}" + (f" ({context})" if context else "")
        scanner.fatal(mark, message, "check the indentation and quoting near this position")
        return fatal()
    except (RecursionError, ValueError, TypeError, IndexError) as exc:
        if build:
            raise
        scanner.fatal(None, f"cannot read YAML: {type(exc).__name__}")
        return fatal()
    built = scanner.yaml is not None  # None again when the file uses `<<` merge keys
    return ScanResult(scanner.positions, scanner.problems, False, scanner.root if built else None, built)
