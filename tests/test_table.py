"""gpujob.table (rich): plain and as wide as its content when piped; fitted to a terminal's width."""

from __future__ import annotations

from gpujob.table import table


def test_piped_tables_are_plain_columns_one_row_per_line() -> None:
    lines = table(
        ["platform", "kind", "USD"],
        [["runpod", "pod", "1.0000"], ["paperspace", "machine", "12.5"]],
        right=[2],
    )
    assert lines == [
        "platform    kind        USD",
        "runpod      pod      1.0000",
        "paperspace  machine    12.5",
    ]
    long = table(["A", "B"], [["x" * 300, "y"]])
    assert len(long) == 2 and long[1] == "x" * 300 + "  y"  # never wrapped


def test_on_a_terminal_a_table_fits_the_width_and_the_header_is_bold() -> None:
    lines = table(["A", "B"], [["x" * 100, "y" * 100]], color=True, width=60, indent=2)
    assert all(len(line.replace("\x1b[1m", "").replace("\x1b[0m", "")) <= 60 for line in lines)
    assert "\x1b[1m" in lines[0] and len(lines) > 2  # wrapped onto more lines
    assert "".join(line.strip().split()[0] for line in lines[1:] if line.strip().startswith("x")) == "x" * 100


def test_one_line_rows_end_in_an_ellipsis_instead_of_wrapping() -> None:
    rows = [["a" * 80, "short"], ["b", "c" * 80]]
    lines = table(["NAME", "WHAT"], rows, width=50, one_line=True)
    assert len(lines) == 3 and all(len(line) <= 50 for line in lines)
    assert lines[1].startswith("aaa") and "…" in lines[1] and "…" in lines[2]
