"""Issue 11, cases 7-9: pulls against a real OpenSSH sshd, with the run rotating its checkpoints under
the pull, remote names chosen by an attacker, and local symlinks planted in pull_to.

  7. a file the run rotates away mid-pull is "vanished", not an error, and no task is left with an
     unretrieved exception; pulls under a writer that rotates every 20 ms never fail;
  8. the verify command never sees a remote name as shell text (quoted, unquoted or single-quoted
     {file}): a checkpoint named `x$(touch PWNED)` runs nothing;
  9. a local `.part` symlink is never written through; names with `\\`, a newline, `.part`, and
     non-regular remote entries are skipped and reported as not pullable; the rest is pulled."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpujob.ssh import pull as pull_mod
from gpujob.ssh.testing import SSHD
from tests.ssh.ssh_kit import pull, session

pytestmark = pytest.mark.ssh

LOADS = f'{sys.executable} -c "import json,sys; json.load(open(sys.argv[1]))"'
LOADS_FILE = LOADS + " {file}"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def unretrieved(caplog: pytest.LogCaptureFixture) -> Iterator[list[str]]:
    """asyncio's 'Task exception was never retrieved' reports, collected (each pull runs its own loop)."""
    caplog.set_level(logging.ERROR, logger="asyncio")
    found: list[str] = []
    yield found
    found += [r.getMessage() for r in caplog.records if "never retrieved" in r.getMessage()]


# ---- case 7: rotation under the pull


def test_case7_a_file_rotated_away_after_the_listing_is_vanished_not_an_error(
    sshd: SSHD, state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rdir, ldir = tmp_path / "r", tmp_path / "l"
    rdir.mkdir()
    for step in (1, 2, 3):
        (rdir / f"step_{step}.json").write_bytes(b'{"step": %d}' % step + b" " * 50_000)
    real = pull_mod.list_remote

    async def list_then_rotate(remote, d, **kw):  # type: ignore[no-untyped-def]
        listing = await real(remote, d, **kw)
        # the run's keep rotation, between the (first) listing and the fetch
        (rdir / "step_1.json").unlink(missing_ok=True)
        return listing

    monkeypatch.setattr(pull_mod, "list_remote", list_then_rotate)
    got = pull(sshd, state, rdir, ldir, verify=LOADS_FILE)
    assert got.vanished == ["step_1.json"]
    assert sorted(p.name for p in got) == ["step_2.json", "step_3.json"]
    assert all(p.verified for p in got) and not (ldir / "step_1.json.part").exists()


def test_case7_pulls_under_a_run_rotating_every_20ms_never_fail(
    sshd: SSHD, state: Path, tmp_path: Path, unretrieved: list[str]
) -> None:
    rdir, ldir = tmp_path / "r", tmp_path / "l"
    rdir.mkdir()
    stop = threading.Event()
    written = [0]

    def writer() -> None:  # atomic writes, keep: 3, as the quickstart's train.py does
        step = 0
        while not stop.is_set():
            step += 1
            tmp = rdir / f"step_{step:06d}.json.tmp"
            tmp.write_bytes(b'{"step": %d, "pad": "' % step + b"x" * 150_000 + b'"}')
            os.replace(tmp, rdir / f"step_{step:06d}.json")
            for old in sorted(rdir.glob("step_*.json"))[:-3]:
                old.unlink(missing_ok=True)
            written[0] = step
            stop.wait(0.02)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    vanished = 0
    try:
        for _ in range(8):
            got = pull(sshd, state, rdir, ldir, verify=None)
            vanished += len(got.vanished)
            for p in got:  # whatever was pulled is whole and exactly what the run wrote
                assert p.sha256 == p.remote_sha256 == sha((ldir / p.name).read_bytes())
    finally:
        stop.set()
        t.join(timeout=5)
    assert written[0] > 10
    assert vanished > 0, "the writer never rotated a file away under a pull: the test proved nothing"
    assert unretrieved == []


# ---- case 8: remote names never reach a shell


@pytest.mark.parametrize(
    "verify",
    [
        f"{LOADS} {{file}}",
        f'{LOADS} "{{file}}"',
        f"{LOADS} '{{file}}'",
        "sh -c 'cat {file} > /dev/null'",
        f'{LOADS} "$GPUJOB_CHECKPOINT_FILE"',
    ],
    ids=["unquoted", "double-quoted", "single-quoted", "inner-shell", "env-var"],
)
def test_case8_a_hostile_name_is_never_run_by_the_verify_command(
    sshd: SSHD, state: Path, tmp_path: Path, verify: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rdir, ldir, cwd = tmp_path / "r", tmp_path / "l", tmp_path / "project"
    rdir.mkdir()
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    names = ["x$(touch PWNED)", "y`touch PWNED2`", "z'; touch PWNED3; '", 'w"; touch PWNED4; "']
    for n in names:
        (rdir / f"{n}.json").write_bytes(b'{"step": 1}')
    got = pull(sshd, state, rdir, ldir, verify=verify, cwd=cwd)
    assert sorted(p.name for p in got) == sorted(f"{n}.json" for n in names)
    assert all(p.verified for p in got), [(p.name, p.verify_output) for p in got]
    for where in (cwd, tmp_path, ldir, Path.cwd()):
        assert not list(where.glob("PWNED*")), f"a remote name ran a command in {where}"


# ---- case 9: confined local writes, unpullable names


def test_case9_a_planted_part_symlink_is_never_written_through(
    sshd: SSHD, state: Path, tmp_path: Path
) -> None:
    rdir, ldir, elsewhere = tmp_path / "r", tmp_path / "l", tmp_path / "elsewhere"
    rdir.mkdir()
    ldir.mkdir()
    elsewhere.write_bytes(b"precious")
    (rdir / "evil.json").write_bytes(b'{"step": 9}')
    (ldir / "evil.json.part").symlink_to(elsewhere)
    (rdir / "sub").mkdir()
    (rdir / "sub" / "a.json").write_bytes(b'{"step": 1}')
    (ldir / "sub").symlink_to(tmp_path / "outside-dir")  # a directory link: never followed either
    (tmp_path / "outside-dir").mkdir()
    got = pull(sshd, state, rdir, ldir, verify=None)
    assert elsewhere.read_bytes() == b"precious" and list((tmp_path / "outside-dir").iterdir()) == []
    assert (ldir / "evil.json").read_bytes() == b'{"step": 9}' and not (ldir / "evil.json").is_symlink()
    assert [p.name for p in got] == ["evil.json"]
    assert "sub/a.json" in got.unpullable and "symbolic link" in got.unpullable["sub/a.json"]


def test_case9_hostile_remote_names_are_skipped_and_named_the_rest_is_pulled(
    sshd: SSHD, state: Path, tmp_path: Path
) -> None:
    rdir, ldir = tmp_path / "r", tmp_path / "l"
    rdir.mkdir()
    (rdir / "good.json").write_bytes(b'{"step": 2}')
    (rdir / "back\\slash.json").write_bytes(b"b")
    (rdir / "new\nline.json").write_bytes(b"n")
    (rdir / "ours.part").write_bytes(b"p")
    (rdir / "link.json").symlink_to("/etc/hostname")
    os.mkfifo(rdir / "pipe")
    got = pull(sshd, state, rdir, ldir, verify=LOADS_FILE)
    assert [p.name for p in got] == ["good.json"] and got.files[0].verified
    assert set(got.unpullable) == {"back\\slash.json", "new\nline.json", "ours.part", "link.json", "pipe"}
    assert "backslash" in got.unpullable["back\\slash.json"]
    assert "control character" in got.unpullable["new\nline.json"]
    assert "FIFO" in got.unpullable["pipe"] and "symbolic link" in got.unpullable["link.json"]
    assert sorted(os.listdir(ldir)) == ["good.json"]


def test_case9_a_forged_listing_cannot_name_a_path_outside(tmp_path: Path) -> None:
    """The listing is remote output: a compromised pod can print anything. Escaping names are refused."""
    from gpujob.ssh.listing import parse_listing

    h = "0" * 64
    out = "\0".join(
        ["R/w/ckpt", "M/w", "F1 ../../etc/passwd", f"H{h}", "F1 /abs", f"H{h}", "F1 .", f"H{h}",
         "F1 sub/", f"H{h}", "F1 a//b", f"H{h}", "F1 ok.json", f"H{h}", ""]
    )  # fmt: skip
    listing = parse_listing("/w/ckpt", out)
    assert list(listing.files) == ["ok.json"]
    assert set(listing.unpullable) == {"../../etc/passwd", "/abs", ".", "sub/", "a//b"}
    # a file that vanished between find's stat and its hash has an F and no H: neither pulled nor "unpullable"
    gone = parse_listing("/w/ckpt", "\0".join(["R/w/ckpt", "M/w", "F5 gone.json", "F1 ok.json", f"H{h}", ""]))
    assert list(gone.files) == ["ok.json"] and gone.unpullable == {}
    # names and sizes only (the gate's first look): sha256 ""
    quick = parse_listing("/w/ckpt", "\0".join(["R/w/ckpt", "M/w", "F7 a.json", "H-", ""]))
    assert quick.files["a.json"].size == 7 and quick.files["a.json"].sha256 == ""
    with pytest.raises(Exception, match="unexpected listing"):
        parse_listing("/w/ckpt", "Fnot-a-size name\0")


def test_the_quick_listing_has_names_sizes_and_what_is_not_pullable(
    sshd: SSHD, state: Path, tmp_path: Path
) -> None:
    from gpujob.ssh.listing import list_remote

    rdir = tmp_path / "r"
    (rdir / "sub").mkdir(parents=True)
    (rdir / "sub" / "a.json").write_bytes(b"12345")
    (rdir / "link").symlink_to("/etc/hostname")

    async def go() -> tuple[object, object]:
        async with session(sshd, state) as remote:
            return await list_remote(remote, str(rdir), hashes=False), await list_remote(remote, str(rdir))

    quick, full = asyncio.run(go())
    assert {n: (f.size, f.sha256) for n, f in quick.files.items()} == {"sub/a.json": (5, "")}  # type: ignore[attr-defined]
    assert full.files["sub/a.json"].sha256 == sha(b"12345")  # type: ignore[attr-defined]
    assert set(quick.unpullable) == set(full.unpullable) == {"link"}  # type: ignore[attr-defined]
