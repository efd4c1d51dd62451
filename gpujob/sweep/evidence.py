"""Phase 2 of a sweep's rebalance (gpujob.sweep.rebalance): what the origin machine's disk shows, read
with one SSH command (evidence_command, parse_evidence: its text checked, never trusted), and the
verdict for a cell in transit (decide): it lands, it stays, or, for anything unknown, it waits."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field

from gpujob.jobfile.cells import sweep_dir
from gpujob.layout.wrapper import RUNNING, VERSION_POINTER
from gpujob.sweep.rebalance import LANDS, STAYS, WAITS


@dataclass(frozen=True)
class Seen:
    """One cell on its origin machine, as read there (None: not read, or not readable)."""

    listed: bool | None  # listed in the queue file of the version the wrapper runs
    starts: int | None
    exit: str | None  # '-' when there is no exit record


@dataclass(frozen=True)
class Evidence:
    running: str | None  # state/running.q<N>
    pointer: str | None  # state/version.q<N>
    cells: dict[str, Seen] = field(default_factory=dict)


def decide(
    cell: str, origin: int, *, machine_running: bool, evidence: Evidence | None, why_unread: str = ""
) -> tuple[str, str]:
    """(LANDS | STAYS | WAITS, why) for a cell in transit from queue `origin`; anything unknown waits."""
    q = f"q{origin}"
    if not machine_running:
        return WAITS, (
            f"{q}'s machine is not running: only its disk knows whether it started the cell; it lands once "
            f"{q} runs and shows it never did"
        )
    if evidence is None:
        return WAITS, f"{q}'s state was not read ({why_unread or 'no answer'}): it waits for the next read"
    if evidence.running is None:
        return (
            WAITS,
            f"{q}'s wrapper has not said which version it runs (not started yet, or from an older gpujob)",
        )
    if evidence.pointer is None:
        return WAITS, f"{q} has no version pointer: no version was placed for it"
    if evidence.running != evidence.pointer:
        return WAITS, (
            f"{q} runs version {evidence.running}, not yet {evidence.pointer} (placed without the cell): "
            "it picks that up before its next cell"
        )
    seen = evidence.cells.get(cell)
    if seen is None or seen.starts is None or seen.exit is None:
        return WAITS, f"the cell's records on {q} were not read"
    if seen.starts > 0 or seen.exit != "-":
        return STAYS, f"{q} started it (starts={seen.starts}, exit {seen.exit}): it stays there"
    if seen.listed is None:
        return WAITS, f"{q}'s queue file of version {evidence.running} was not read"
    if seen.listed:
        return (
            WAITS,
            f"{q}'s version {evidence.running} still lists it: the version without it is not placed yet",
        )
    return LANDS, f"{q} runs version {evidence.running}, which does not list it, and never started it"


def started_there(evidence: Evidence | None, cell: str) -> bool:
    """The origin's records show the cell started (or ran): it is not proposed to leave."""
    seen = evidence.cells.get(cell) if evidence is not None else None
    return seen is not None and ((seen.starts or 0) > 0 or seen.exit not in (None, "-"))


def evidence_command(mount: str, job: str, n: int, cells: Iterable[str]) -> str:
    """One command for queue N's machine: 'running=<v|-> pointer=<v|->', then per cell
    'cell=<name> listed=<0|1|-> starts=<n> exit=<code|->'."""
    root = shlex.quote(sweep_dir(mount, job))
    names = " ".join(shlex.quote(c) for c in cells)
    ver = "head -n 1 {} 2>/dev/null | head -c 40 | tr -cd 'a-z0-9'"
    return f"""P={root}; S="$P/state"
r=$({ver.format(f'"$S/{RUNNING}q{n}"')}); p=$({ver.format(f'"$S/{VERSION_POINTER}q{n}"')})
echo "running=${{r:--}} pointer=${{p:--}}"
for c in {names}; do
  e=$(cat "$S/$c.exit" 2>/dev/null | tr -cd '0-9-'); n=$(cat "$S/$c.starts" 2>/dev/null | tr -cd '0-9')
  if [ -n "$r" ] && [ -f "$P/$r/q{n}.txt" ]; then grep -qxF -- "$c" "$P/$r/q{n}.txt" && l=1 || l=0; else l=-; fi
  echo "cell=$c listed=$l starts=${{n:-0}} exit=${{e:--}}"
done; true"""


def parse_evidence(out: str) -> Evidence:
    """The machine's answer (its text checked, never trusted: anything odd reads as unknown)."""
    running = pointer = None
    cells: dict[str, Seen] = {}
    for line in out.splitlines():
        kv = dict(part.partition("=")[::2] for part in line.split())
        if "running" in kv and "pointer" in kv:
            running, pointer = _version(kv["running"]), _version(kv["pointer"])
        elif "cell" in kv:
            listed = {"1": True, "0": False}.get(kv.get("listed", ""))
            starts = int(kv["starts"]) if kv.get("starts", "").isdigit() else None
            code = kv.get("exit")
            ok = code == "-" or (code is not None and code.lstrip("-").isdigit())
            cells[kv["cell"]] = Seen(listed=listed, starts=starts, exit=code if ok else None)
    return Evidence(running=running, pointer=pointer, cells=cells)


def _version(text: str) -> str | None:
    return text if text.startswith("v") and text[1:].isalnum() and len(text) > 1 else None
