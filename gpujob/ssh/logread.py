"""Bounded reads of a run's log: however long its lines, a read carries at most LINE_CAP bytes of each
line and a fixed number of bytes in all. The cut happens on the machine, so a 200 MB line is never sent
(nor held in gpujob's memory) whole.

The remote pipeline streams in fixed memory with tools every image has (tail, tr, fold, awk): tr turns
line ends into \\x01 (a \\x01 or NUL in the log becomes '?'), fold -b splits the stream into records of
at most LINE_CAP bytes, awk joins them back into lines, keeps the first LINE_CAP bytes of each and counts
the rest. A cut line ends in \\x01<bytes cut>, which `expand` shows as "…[cut 199.9 MB]"."""

from __future__ import annotations

import re

from gpujob.quote import q

LINE_CAP = 64 * 1024
CALL_CAP = 4 * 1024 * 1024  # one `logs` read: -n 200 lines of up to LINE_CAP each would be 12.5 MiB
STATUS_CAP = 256 * 1024  # the status read's log tail (it shows one line)

_AWK = (
    '{ n = split($0, p, "\\001"); for (i = 1; i <= n; i++) { s = p[i]; '
    'if (shown < cap) { t = substr(s, 1, cap - shown); printf "%s", t; shown += length(t); '
    "cut += length(s) - length(t) } else cut += length(s); "
    'if (i < n) { if (cut) printf "\\001%d", cut; printf "\\n"; shown = 0; cut = 0 } } } '
    'END { if (cut) printf "\\001%d", cut }'
)
_MARK = re.compile("\x01([0-9]+)")


def tail_command(path: str, lines: int, *, call_cap: int = CALL_CAP) -> str:
    """The last `lines` lines of the remote file `path`, each cut to LINE_CAP bytes, at most `call_cap`
    bytes in all (the newest are kept). Nothing (and exit 0) when the file is missing."""
    return (
        f"tail -n {max(0, int(lines))} {q(path)} 2>/dev/null | LC_ALL=C tr '\\n\\001\\000' '\\001??' "
        f"| fold -b -w {LINE_CAP} | LC_ALL=C awk -v cap={LINE_CAP} '{_AWK}' | tail -c {int(call_cap)}"
    )


def expand(text: str, *, call_cap: int = CALL_CAP) -> str:
    """The pipeline's output as text: cut markers spelled out; when the read hit `call_cap`, its first
    (partial) line is replaced by a note that older lines were left out."""
    if len(text.encode("utf-8", "surrogateescape")) >= call_cap:
        _, _, rest = text.partition("\n")
        text = f"…[older lines cut: one read shows at most {_size(call_cap)}]\n{rest}"
    return _MARK.sub(lambda m: f"…[cut {_size(int(m.group(1)))}]", text)


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


class LineCutter:
    """The same cap for text that arrives in slices (`logs -f`): each line keeps its first `cap`
    characters and ends in the cut marker. Only complete lines are released, so a secret that
    straddles two slices is still masked whole by the caller."""

    def __init__(self, cap: int = LINE_CAP) -> None:
        self.cap = cap
        self.part = ""
        self.cut = 0

    def feed(self, text: str) -> str:
        pieces = text.split("\n")
        out = []
        for i, piece in enumerate(pieces):
            room = max(0, self.cap - len(self.part))
            self.part += piece[:room]
            self.cut += len(piece) - len(piece[:room])
            if i < len(pieces) - 1:
                out.append(self._line() + "\n")
        return "".join(out)

    def flush(self) -> str:
        return self._line() if self.part or self.cut else ""

    def _line(self) -> str:
        line = self.part + (f"…[cut {_size(self.cut)}]" if self.cut else "")
        self.part, self.cut = "", 0
        return line
