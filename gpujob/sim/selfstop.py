"""A simulated pod stops itself, as RunPod lets one do with no account key on it.

RunPod ships `runpodctl` in its pods with a key scoped to the pod ("Manage Pods": `runpodctl stop pod
$RUNPOD_POD_ID`). The simulator gives its pods the same command, in <ctl>/bin at the front of every
session's PATH (podlaunch.sshd_config). It calls /_sim/self-stop with a token good for that one pod only
(an HMAC under the simulator's secret, never the account key), and the pod is stopped the way the
platform's stop does it. (Paperspace machines get no such tool: gpujob never stops one from inside.)"""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

TOOLS = {"runpod": ("runpodctl",)}

_SCRIPT = r"""#!/usr/bin/env python3
# gpujob simulator: {what}. Stops this machine only (its token is good for nothing else).
import json, sys, urllib.request
args = sys.argv[1:]
{check}
req = urllib.request.Request({url!r}, data=json.dumps({body}).encode(), method="POST",
                             headers={{"Content-Type": "application/json"}})
try:
    with urllib.request.urlopen(req, timeout=30) as resp:
        print(resp.read().decode())
except Exception as exc:
    print(f"stop failed: {{exc}}", file=sys.stderr)
    sys.exit(1)
"""

_RUNPODCTL_CHECK = """if args[:2] != ["stop", "pod"] or len(args) != 3:
    print("usage (simulated runpodctl): runpodctl stop pod POD_ID", file=sys.stderr); sys.exit(2)
if args[2] != {rid!r}:
    print(f"runpodctl: this pod's key cannot stop pod {{args[2]}}", file=sys.stderr); sys.exit(1)"""


def token(secret: str, platform: str, rid: str) -> str:
    """The machine-scoped token: an HMAC of the machine's id under the simulator's own secret."""
    return hmac.new(secret.encode(), f"{platform}:{rid}".encode(), hashlib.sha256).hexdigest()[:32]


def write_tools(ctl_dir: Path, base_url: str, platform: str, rid: str, secret: str) -> None:
    """The platform's self-stop command(s) into <ctl>/bin (the sessions' PATH starts there)."""
    bin_dir = ctl_dir / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    body = {"platform": platform, "id": rid, "token": token(secret, platform, rid)}
    url = base_url.rstrip("/") + "/_sim/self-stop"
    for name in TOOLS[platform]:
        text = _SCRIPT.format(what=name, check=_RUNPODCTL_CHECK.format(rid=rid), url=url, body=body)
        path = bin_dir / name
        path.write_text(text)
        path.chmod(0o755)


def handle(sim: Any, body: Any) -> dict[str, Any]:
    """POST /_sim/self-stop: check the token, then stop the machine in the background (the caller is
    one of the processes the stop ends)."""
    from gpujob.sim.engine import SimError

    if not isinstance(body, dict):
        raise SimError(400, "a JSON object with platform, id and token")
    platform, rid, tok = body.get("platform"), str(body.get("id", "")), str(body.get("token", ""))
    if platform not in TOOLS or not hmac.compare_digest(tok, token(sim.self_stop_secret, platform, rid)):
        raise SimError(403, "this token cannot stop that machine")
    sim.spawn(lambda: _quietly(sim.stoppers[platform], sim, rid))
    return {"stopping": rid}


def _quietly(fn: Any, *args: Any, **kwargs: Any) -> None:
    try:
        fn(*args, **kwargs)
    except Exception as exc:  # e.g. stopped meanwhile: the platform's answer, logged beside the pods
        print(json.dumps({"self-stop": str(exc)}))
