"""Shell scripts with Windows line endings (U26): `bash\\r: No such file or directory` on the machine,
or a `set -e\\r` that silently does nothing. Found by the sync before the run is launched, from the local
files it syncs: every *.sh / *.bash, and any file it sends that starts with `#!`."""

from __future__ import annotations

from collections.abc import Iterable

SCRIPT_SUFFIXES = (".sh", ".bash")
MAX_READ = 1 << 20  # a script larger than this is not read whole; its first MB decides


def _has_crlf(path: str, *, need_shebang: bool) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(MAX_READ)
    except OSError:
        return False
    if need_shebang and not head.startswith(b"#!"):
        return False
    return b"\r\n" in head


def crlf_scripts(local: Iterable[object], sent: Iterable[object]) -> list[str]:
    """Relative paths of the scripts among `local` (LocalEntry) with CRLF line endings."""
    sent_rels = {getattr(e, "rel", "") for e in sent}
    out = []
    for e in local:
        rel, path, link = getattr(e, "rel", ""), getattr(e, "path", ""), getattr(e, "link", None)
        if link is not None:
            continue
        if rel.endswith(SCRIPT_SUFFIXES):
            if _has_crlf(path, need_shebang=False):
                out.append(rel)
        elif rel in sent_rels and "." not in rel.rsplit("/", 1)[-1] and _has_crlf(path, need_shebang=True):
            out.append(rel)
    return sorted(out)


def warning(scripts: list[str]) -> str | None:
    if not scripts:
        return None
    shown = ", ".join(scripts[:5]) + (f" and {len(scripts) - 5} more" if len(scripts) > 5 else "")
    return (
        f"shell script(s) with CRLF (Windows) line endings: {shown}; on the machine they fail with "
        "'$'\\r': command not found' (U26): convert them (dos2unix, or git config core.autocrlf input)"
    )
