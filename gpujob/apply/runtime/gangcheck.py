"""Preflight across the nodes of a multi-node job, before anything is launched (issue #38): every node
listens for a moment on the rendezvous port at its private address, every other node connects to it
there; every node sees its GPUs (count and model) and has the checkpoint dir. The scripts and the
verdict are pure; gang.py runs them over SSH."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gpujob.quote import q

LISTEN_S = 60  # the longest a preflight listener lives (it is stopped as soon as the checks are done)
CONNECT_S = 3  # one connect try
# Whether pid $1 still runs. A listener that ended stays a zombie until its parent reaps it, and in a
# container whose PID 1 is not an init that can take seconds (or never come): `kill -0` alone would
# count the corpse as alive.
_ALIVE = 'alive() { kill -0 "$1" 2>/dev/null && ! grep -qs \'^State:[[:space:]]*Z\' /proc/"$1"/status; }; '


def listen_script(jobdir: str, addr: str, port: int) -> str:
    """Start a short listener on addr:port, detached; prints `listening` once it is bound, or why not.
    Its pid goes to <jobdir>/preflight.pid, so stop_script ends it. It gets 15 s to bind (a node just
    booted, or a busy one, starts Python slowly). The answer is always this listener's: what an earlier
    preflight left in <jobdir>/preflight.listen is removed before it starts."""
    pidfile = q(f"{jobdir}/preflight.pid")
    code = (
        "import socket,sys,time\n"
        "s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
        f"s.bind(({addr!r},{port}));s.listen(64);print('listening',flush=True);sys.stdout.close()\n"
        f"s.settimeout(1);end=time.time()+{LISTEN_S}\n"
        "while time.time()<end:\n"
        " try:\n  c,_=s.accept();c.sendall(b'gpujob-preflight\\n');c.close()\n"
        " except OSError:\n  pass\n"
    )
    # The answer of an earlier preflight is removed first: the redirect below truncates the file only
    # once the background shell runs, and on a busy node the first look can come before that.
    return (
        f"{_ALIVE}mkdir -p {q(jobdir)} && cd {q(jobdir)} && rm -f preflight.listen && "
        f"(nohup python3 -c {q(code)} > preflight.listen 2>&1 & echo $! > {pidfile}); "
        "why='did not bind within 15 s'; "
        "for i in $(seq 150); do grep -q listening preflight.listen 2>/dev/null && why= && break; "
        "alive $(cat preflight.pid) || { why='the listener exited before it bound'; break; }; "
        "sleep 0.1; done; "
        "head -c 300 preflight.listen | tr '\\n' ' '; echo \"$why\""
    )


def stop_script(jobdir: str) -> str:
    """End the listener and wait until it is gone: the run binds the same port right after."""
    pidfile = q(f"{jobdir}/preflight.pid")
    return (
        f'{_ALIVE}p=$(cat {pidfile} 2>/dev/null); rm -f {pidfile}; [ -n "$p" ] || exit 0; kill "$p" 2>/dev/null; '
        'for i in $(seq 50); do alive "$p" || break; sleep 0.1; done; true'
    )


def check_script(
    peers: Sequence[tuple[int, str]], port: int, checkpoint_dir: str | None, own: str | None = None
) -> str:
    """From one node: reach every peer (rank, address) on the port, count the GPUs, make sure of the
    checkpoint dir, name the interface its own private address `own` is on (NCCL_SOCKET_IFNAME when the
    platform does not say). One `key=value` line per fact."""
    lines = []
    if own:
        lines.append(
            f"echo iface=$(ip route get {q(own)} 2>/dev/null | sed -n 's/.* dev \\([^ ]*\\).*/\\1/p' | head -n 1)"
        )
    for rank, addr in peers:
        probe = f"exec 3<>/dev/tcp/{addr}/{port} && head -c 17 <&3"
        lines.append(
            f"if timeout {CONNECT_S} bash -c {q(probe)} 2>/dev/null | grep -q gpujob-preflight; "
            f"then echo peer{rank}=ok; else echo peer{rank}=no; fi"
        )
    lines.append(
        "g=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -v '^$'); "
        "echo gpus=$(printf '%s\\n' \"$g\" | grep -c .); echo gpu_name=$(printf '%s\\n' \"$g\" | head -n 1)"
    )
    if checkpoint_dir:
        d = q(checkpoint_dir)
        lines.append(f"if mkdir -p {d} 2>/dev/null && [ -w {d} ]; then echo ckdir=ok; else echo ckdir=no; fi")
    return "\n".join(lines)


@dataclass
class NodeCheck:
    """What one node found."""

    rank: int
    name: str
    listening: str = ""  # the listener's answer: `listening`, else why it could not bind
    peers: dict[int, bool] = field(default_factory=dict)
    gpus: int | None = None
    gpu_name: str = ""
    ckdir: bool | None = None
    interface: str = ""  # the interface its private address is on, as `ip route get` names it
    error: str = ""  # SSH failed (the node could not be reached at all)


def parse_check(rank: int, name: str, out: str) -> NodeCheck:
    kv = dict(line.partition("=")[::2] for line in out.splitlines() if "=" in line)
    check = NodeCheck(rank=rank, name=name)
    for key, value in kv.items():
        if key.startswith("peer") and key[4:].isdigit():
            check.peers[int(key[4:])] = value.strip() == "ok"
    gpus = kv.get("gpus", "").strip()
    check.gpus = int(gpus) if gpus.isdigit() else None
    check.gpu_name = kv.get("gpu_name", "").strip()[:80]
    if "ckdir" in kv:
        check.ckdir = kv["ckdir"].strip() == "ok"
    iface = kv.get("iface", "").strip()
    check.interface = iface if iface.replace("-", "").replace(".", "").replace("_", "").isalnum() else ""
    return check


def problems(
    checks: Sequence[NodeCheck],
    *,
    gpus_per_node: int,
    gpu_names: Sequence[str],
    port: int,
    addrs: Mapping[int, str],
    checkpoint_dir: str | None,
) -> list[str]:
    """One line per failing node, naming it; empty: the gang may launch. `gpu_names`: substrings one
    of which the model nvidia-smi reports must hold (empty: any model)."""
    names = {c.rank: c.name for c in checks}
    out = []
    for c in sorted(checks, key=lambda c: c.rank):
        who = f"node {c.rank} ({c.name})"
        if c.error:
            out.append(f"{who}: not reached over SSH: {c.error}")
            continue
        if c.listening and c.listening.strip() != "listening":
            out.append(f"{who}: could not listen on {addrs.get(c.rank)}:{port}: {c.listening.strip()[:200]}")
        unreached = sorted(r for r, ok in c.peers.items() if not ok)
        if unreached:
            peers = ", ".join(f"node {r} ({names.get(r, '?')}) at {addrs.get(r)}:{port}" for r in unreached)
            out.append(f"{who}: cannot reach {peers} over the private network")
        if c.gpus is not None and c.gpus < gpus_per_node:
            out.append(f"{who}: sees {c.gpus} GPU(s), the job file asks for {gpus_per_node}")
        elif gpu_names and c.gpu_name and not any(_same_gpu(n, c.gpu_name) for n in gpu_names):
            out.append(f"{who}: its GPU is {c.gpu_name}, not one of {', '.join(gpu_names)}")
        if checkpoint_dir and c.ckdir is False:
            out.append(f"{who}: checkpoint dir {checkpoint_dir} cannot be made or written")
    return out


def _same_gpu(wanted: str, seen: str) -> bool:
    """A loose match of a job file's GPU alias (A100-80GB) and nvidia-smi's name (NVIDIA A100 80GB PCIe)."""

    def norm(text: str) -> str:
        return "".join(ch for ch in text.lower() if ch.isalnum())

    head = wanted.split("-")[0]
    return norm(head) in norm(seen)


def cost_line(seconds: float, rates: Sequence[float | None]) -> str:
    """The time and money the preflight took, every node billing meanwhile."""
    known = [r for r in rates if r is not None]
    money = sum(known) * seconds / 3600
    priced = f"about ${money:.4f} at ${sum(known):.2f}/h" if known else "cost unknown (no node rate)"
    return f"preflight of {len(rates)} node(s) took {seconds:.1f}s, {priced}"
