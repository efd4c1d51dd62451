"""The local directory store keeps today's .gpujob/ layout, byte for byte, and hides nothing else."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpujob.apply.journal import Journal
from gpujob.plan.records import PullRecord, load_pull_record, save_pull_record
from gpujob.state.local import LocalStore


def test_documents_logs_and_names_are_the_files(tmp_path: Path) -> None:
    root = tmp_path / ".gpujob"
    s = LocalStore(root)
    assert s.read("pulls/a.json") is None and s.names() == [] and not root.exists()  # reading creates nothing
    s.write("pulls/a.json", b"{}")
    assert (root / "pulls" / "a.json").read_bytes() == b"{}"
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert stat.S_IMODE((root / "pulls" / "a.json").stat().st_mode) == 0o600
    s.append("journal/a.jsonl", b'{"n": 1}')
    s.append("journal/a.jsonl", b'{"n": 2}\n')
    assert (root / "journal" / "a.jsonl").read_bytes() == b'{"n": 1}\n{"n": 2}\n'
    assert s.lines("journal/a.jsonl") == [b'{"n": 1}', b'{"n": 2}']
    assert s.lines("journal/a.jsonl", last=1) == [b'{"n": 2}']
    assert s.update("known_hosts.json", lambda old: (old or b"") + b"x") == b"x"
    assert s.update("known_hosts.json", lambda old: (old or b"") + b"y") == b"xy"
    assert s.create("project.json", b"first") == b"first"
    assert s.create("project.json", b"second") == b"first"  # the first writer wins
    # Locks, temp files, lock files and hidden scratch files are not records.
    (root / "locks").mkdir()
    (root / "locks" / "a.json").write_text("{}")
    (root / "pulls" / "b.json.tmp").write_text("half")
    s.scratch_dir().joinpath("ssh_known_hosts").write_text("x")
    assert s.names() == ["journal/a.jsonl", "known_hosts.json", "project.json", "pulls/a.json"]
    assert s.names("pulls/") == ["pulls/a.json"]


def test_tail_reads_only_the_end_of_a_long_log(tmp_path: Path) -> None:
    s = LocalStore(tmp_path)
    (tmp_path / "events.jsonl").write_text("".join(f'{{"i": {i}}}\n' for i in range(20000)))  # > one block
    assert s.lines("events.jsonl", last=3) == [b'{"i": 19997}', b'{"i": 19998}', b'{"i": 19999}']
    assert len(s.lines("events.jsonl")) == 20000
    assert s.lines("events.jsonl", last=0) == []


@pytest.mark.parametrize("bad", ["../x", "/etc/passwd", "a/../../b", "", "a\\b", "./a"])
def test_names_never_leave_the_store(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError):
        LocalStore(tmp_path).write(bad, b"x")


def test_secret_is_made_once_private_and_public_half_readable(tmp_path: Path) -> None:
    s = LocalStore(tmp_path)
    made = []

    def make() -> tuple[bytes, bytes]:
        made.append(1)
        return b"PRIVATE", b"PUBLIC\n"

    assert s.create_secret("id_ed25519", make) == b"PRIVATE"
    assert s.create_secret("id_ed25519", make) == b"PRIVATE" and made == [1]
    path = s.secret_file("id_ed25519")
    assert path == tmp_path / "id_ed25519" and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert s.public("id_ed25519") == b"PUBLIC\n"
    os.chmod(path, 0o644)  # loosened by a copy: tightened on the next use
    s.secret_file("id_ed25519")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert s.names() == ["id_ed25519"]  # the public half travels with its secret


RACER = """
import sys
from pathlib import Path
from gpujob.ssh.keys import ensure_project_key
print(ensure_project_key(Path(sys.argv[1]))[1])
"""


def test_two_processes_racing_for_the_key_get_the_same_one(tmp_path: Path) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", RACER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    lines = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert len(lines) == 1 and next(iter(lines)).startswith("ssh-ed25519 ")


def test_callers_write_the_layout_they_always_did(tmp_path: Path) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    Journal(tmp_path, "bert").append("begin", now)
    assert (tmp_path / "journal" / "bert.jsonl").read_text().count("\n") == 1
    rec = PullRecord(job="bert", platform="runpod", remote_dir="/w/ckpt", local_dir="/l", at=now)
    save_pull_record(tmp_path, rec)
    assert PullRecord.model_validate_json((tmp_path / "pulls" / "bert.json").read_text()) == rec
    assert load_pull_record(LocalStore(tmp_path), "bert") == rec


def test_a_typed_document_round_trips_and_an_unreadable_one_reads_as_none(tmp_path: Path) -> None:
    from gpujob.plan.outputs_record import OutputFile, OutputsRecord, load_outputs_record, save_outputs_record
    from gpujob.state import read_model, write_model

    root = tmp_path / ".gpujob"
    rec = OutputsRecord(
        job="a",
        local_dir="out",
        at=datetime(2026, 12, 2, tzinfo=UTC),
        files={"/w/r": OutputFile(size=3, sha256="ab")},
    )
    assert read_model(root, "outputs/a.json", OutputsRecord) is None  # none yet
    save_outputs_record(root, rec)
    assert (
        load_outputs_record(root, "a") == rec == read_model(LocalStore(root), "outputs/a.json", OutputsRecord)
    )
    assert (root / "outputs" / "a.json").read_text() == rec.model_dump_json(indent=2)
    write_model(root, "outputs/a.json", rec, indent=1)
    assert (root / "outputs" / "a.json").read_text() == rec.model_dump_json(indent=1)
    for junk in (b"{not json", b'{"job": "a"}', b""):  # broken, missing fields, empty: each proves nothing
        (root / "outputs" / "a.json").write_bytes(junk)
        assert load_outputs_record(root, "a") is None
