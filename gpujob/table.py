"""Tables as gpujob prints them (audit, state, sim bill): rich lays them out. On a terminal a table fits
its width (long cells wrap) and the header is bold; piped, or with colour off, it is plain text as wide
as its content, one row per line, so scripts and goldens see stable columns."""

from __future__ import annotations

from collections.abc import Sequence

PLAIN_WIDTH = 10_000  # piped: never wrap


def table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    right: Sequence[int] = (),
    color: bool = False,
    width: int | None = None,
    indent: int = 0,
    one_line: bool = False,
) -> list[str]:
    """Lines of a borderless table: columns two spaces apart, `right` (column indexes) right-aligned.
    `width`: the terminal's (None: as wide as the content). `one_line`: every row is exactly one line
    (a cell too long for the width ends in …), for callers that print details under each row."""
    from rich.console import Console
    from rich.table import Table

    t = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 1), header_style="bold" if color else "")
    for i, name in enumerate(header):
        t.add_column(
            name,
            justify="right" if i in right else "left",
            overflow="ellipsis" if one_line else "fold",
            no_wrap=one_line,
        )
    from gpujob.safe import for_terminal

    for row in rows:  # cells hold API and pod names: through the output boundary, one line each
        t.add_row(*(for_terminal(cell) for cell in row))
    console = Console(
        width=(width - indent) if width else PLAIN_WIDTH,
        color_system="standard" if color else None,
        force_terminal=color,
        no_color=not color,
        highlight=False,
        emoji=False,
        markup=False,
    )
    with console.capture() as cap:
        console.print(t)
    return [" " * indent + line.rstrip() for line in cap.get().splitlines()]
