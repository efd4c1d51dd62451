"""A helper outside the launcher's process tree, for the stop-quiesce tests: started by the job's
command in the background, it forks, its parent exits, and it takes its own session (setsid), so the run's tree does
not hold it; only its inherited GPUJOB_JOB says it is the job's. It writes `ready` and a heartbeat into
OUT_DIR on the durable mount.

SAVER_MODE=save: on SIGTERM it writes its result, eval.json, the slow way (SAVE_CHUNKS chunks, one every
SAVE_CHUNK_S seconds, into eval.json.tmp, fsync, then an atomic rename), then exits: a kill mid-write
leaves only the .tmp. SAVER_MODE=stubborn: it ignores SIGTERM (noting when it came) and keeps beating
until something kills it."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time
from pathlib import Path

OUT = Path(os.environ.get("OUT_DIR", "/workspace/results"))
MODE = os.environ.get("SAVER_MODE", "save")
CHUNKS = int(os.environ.get("SAVE_CHUNKS", "15"))
CHUNK_S = float(os.environ.get("SAVE_CHUNK_S", "0.1"))


def put(name: str, text: str) -> None:
    tmp = OUT / (name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, OUT / name)


def save() -> None:
    chunks = [os.urandom(4096).hex() for _ in range(CHUNKS)]
    tmp = OUT / "eval.json.tmp"
    with tmp.open("w") as f:  # written piece by piece, the way a large result is
        f.write('{"chunks": [')
        for i, c in enumerate(chunks):
            f.write(("," if i else "") + json.dumps(c))
            f.flush()
            time.sleep(CHUNK_S)
        body = "".join(chunks)
        f.write('], "sha256": ' + json.dumps(hashlib.sha256(body.encode()).hexdigest()) + "}")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, OUT / "eval.json")


def main() -> int:
    if os.fork() > 0:  # the parent exits: the helper is reparented away from the run's tree
        return 0
    os.setsid()
    OUT.mkdir(parents=True, exist_ok=True)
    term: dict[str, float] = {}

    def on_term(*_: object) -> None:
        term.setdefault("at", time.time())

    signal.signal(signal.SIGTERM, on_term)
    put("ready", json.dumps({"pid": os.getpid(), "sid": os.getsid(0), "mode": MODE}))
    while True:
        if "at" in term:
            if MODE == "save":
                save()
                os._exit(0)
            put("sigterm", str(term["at"]))
        put("beat", str(time.time()))
        time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main())
