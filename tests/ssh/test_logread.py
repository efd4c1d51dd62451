"""Bounded log reads on the machine (gpujob.ssh.logread) over a real sshd: long lines are cut there with
a marker, the whole read is capped, ordinary lines pass unchanged, and followed slices are cut alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpujob.ssh.logread import LINE_CAP, LineCutter, expand, tail_command
from gpujob.ssh.testing import SSHD
from tests.ssh.conftest import run
from tests.ssh.ssh_kit import session

pytestmark = pytest.mark.ssh


def _read(sshd: SSHD, state: Path, path: Path, lines: int, **kw: int) -> tuple[str, int]:
    """(what the user sees, bytes that crossed the connection)."""

    async def go() -> tuple[str, int]:
        async with session(sshd, state, "pod-log") as remote:
            out = await remote.run(tail_command(str(path), lines, **kw))
            return expand(out.stdout, **kw), len(out.stdout.encode())

    return run(go())


def test_a_long_line_is_cut_on_the_machine_with_the_size_it_lost(
    sshd: SSHD, state: Path, tmp_path: Path
) -> None:
    log = tmp_path / "run.log"
    long = 5 * 1024 * 1024 + 17
    with log.open("wb") as f:
        f.write(b"before\n" + b"x" * long + b"\n" + b"tab\there \x01 nul\x00\n" + b"after, no newline")
    shown, moved = _read(sshd, state, log, 4)
    lines = shown.split("\n")
    assert lines[0] == "before" and lines[2] == "tab\there ? nul?" and lines[3] == "after, no newline"
    assert lines[1] == "x" * LINE_CAP + f"…[cut {(long - LINE_CAP) / 1e6:.1f} MB]"
    assert moved < LINE_CAP + 200  # the 5 MB line never crossed the connection


def test_lines_at_the_cap_are_whole_and_one_byte_more_is_marked(
    sshd: SSHD, state: Path, tmp_path: Path
) -> None:
    log = tmp_path / "run.log"
    log.write_bytes(b"y" * LINE_CAP + b"\n\n" + b"z" * (LINE_CAP + 1) + b"\n")
    shown, _ = _read(sshd, state, log, 10)
    assert shown.split("\n") == ["y" * LINE_CAP, "", "z" * LINE_CAP + "…[cut 1 B]", ""]


def test_one_read_is_capped_and_keeps_the_newest_lines(sshd: SSHD, state: Path, tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text("".join(f"line {i:05d} " + "." * 1000 + "\n" for i in range(300)))
    shown, moved = _read(sshd, state, log, 300, call_cap=64 * 1024)
    assert moved <= 64 * 1024
    lines = shown.rstrip("\n").split("\n")
    assert lines[0].startswith("…[older lines cut: one read shows at most 65.5 kB]")
    assert lines[-1].startswith("line 00299 ") and all(line.startswith("line ") for line in lines[1:])


def test_a_missing_log_reads_as_nothing(sshd: SSHD, state: Path, tmp_path: Path) -> None:
    assert _read(sshd, state, tmp_path / "absent.log", 50) == ("", 0)


def test_followed_slices_are_cut_alike_and_only_whole_lines_are_released() -> None:
    cut = LineCutter(cap=8)
    assert cut.feed("short\nabcdefghij") == "short\n"  # the unfinished line waits for its end
    assert cut.feed("klm\nsec") == "abcdefgh…[cut 5 B]\n"
    assert cut.feed("ret\n") == "secret\n"  # a value split across slices comes out whole
    assert cut.feed("tail") == "" and cut.flush() == "tail" and cut.flush() == ""
