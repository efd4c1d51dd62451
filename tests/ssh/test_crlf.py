"""The sync flags shell scripts with CRLF line endings (U26) among the files it syncs."""

from __future__ import annotations

from pathlib import Path

from gpujob.ssh.crlf import crlf_scripts, warning
from gpujob.ssh.ignore import walk


def test_crlf_scripts_are_found_and_lf_ones_and_other_files_are_not(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_bytes(b"#!/bin/bash\r\nset -e\r\npython3 train.py\r\n")
    (tmp_path / "ok.sh").write_bytes(b"#!/bin/bash\nset -e\n")
    (tmp_path / "launch").write_bytes(b"#!/bin/sh\r\nexec python3 train.py\r\n")  # no suffix, a shebang
    (tmp_path / "notes.txt").write_bytes(b"written on windows\r\n")
    (tmp_path / "skip").mkdir()
    (tmp_path / "skip" / "old.sh").write_bytes(b"echo\r\n")
    local = list(walk(tmp_path, ["skip"]))
    assert crlf_scripts(local, local) == ["launch", "run.sh"]
    # A file without a suffix is read only when it is sent; a *.sh every time.
    assert crlf_scripts(local, []) == ["run.sh"]
    text = warning(["launch", "run.sh"])
    assert text is not None and "launch, run.sh" in text and "U26" in text and "dos2unix" in text
    assert warning([]) is None
