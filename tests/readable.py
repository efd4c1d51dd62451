"""Copies of checkout files that another user can read, for the tests that switch to uid 65534.

A clone may sit in a private directory (any `mktemp -d`, or under /root, is 0700), where `nobody`
cannot open the script it is asked to run. Those tests run a copy in a fresh world-readable
directory instead of the checkout itself."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readable_copy(*relpaths: str) -> Path:
    """Copy each path (a file or a directory, relative to the checkout) into a new 0755 directory,
    keeping its relative place; every copied file and directory is world-readable. The caller
    removes the directory."""
    top = Path(tempfile.mkdtemp(prefix="gpujob-readable-"))
    for rel in relpaths:
        src, dst = ROOT / rel, top / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, dst)
    for dirpath, _dirs, filenames in os.walk(top):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            p = Path(dirpath) / name
            p.chmod(p.stat().st_mode | 0o444)
    return top
