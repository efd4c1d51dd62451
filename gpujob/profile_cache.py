"""A per-user cache of validated platform profiles, keyed by their content.

Parsing a profile's YAML and building its pydantic schemas costs more than the rest of `gpujob validate`
together; both are pure functions of the profile text and of the code that models it. So the validated
object is kept pickled under the user's cache folder, keyed by a digest of the profile bytes, the
profile module's source and the interpreter and pydantic versions: any change to either side is a miss,
never a stale object. Only a private file (owned by this user, not writable by others) is read back,
since unpickling runs code; any failure is a miss. `GPUJOB_PROFILE_CACHE=off` disables it.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Any

_CODE = Path(__file__).with_name("profile.py")


def folder() -> Path | None:
    """Where the cache lives (None: switched off). gpujob.profile_facts keeps its files here too."""
    setting = os.environ.get("GPUJOB_PROFILE_CACHE", "")
    if setting.lower() in ("off", "0", "false", "no"):
        return None
    if setting:
        return Path(setting)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("gpujob", appauthor=False)) / "profiles"


def _path(platform: str, raw: bytes) -> Path | None:
    where = folder()
    if where is None:
        return None
    import pydantic

    digest = hashlib.sha256()
    for part in (raw, _CODE.read_bytes(), sys.version.encode(), pydantic.VERSION.encode()):
        digest.update(hashlib.sha256(part).digest())
    return where / f"{platform}-{digest.hexdigest()[:32]}.pickle"


def read(platform: str, raw: bytes) -> Any | None:
    import pickle

    path = _path(platform, raw)
    if path is None:
        return None
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return None
            return pickle.load(fh)
    except Exception:  # absent, unreadable, truncated or from other code: a miss
        return None


def write(platform: str, raw: bytes, obj: Any) -> None:
    import pickle

    path = _path(platform, raw)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(obj, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file, the new one, or none
    except OSError:  # a read-only home or full disk only costs the next start its parse
        return
