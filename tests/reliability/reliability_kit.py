"""Shared kit for the reliability catalogue tests: canary secrets, a simulator whose every request is
recorded on the wire, job files written to disk, and the gpujob CLI run in-process or as a subprocess."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

from click.testing import CliRunner

RP_CANARY = "rpa_CANARYKEY7f3a9c1e00112233"
PS_CANARY = "ps_CANARYKEY51d0b2aa00112233"
SECRET_CANARY = "hf_CANARYSECRETd34db33f00aa"
CANARIES = (RP_CANARY, PS_CANARY, SECRET_CANARY)

IMAGE = "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04"

RUNPOD_JOB = f"""\
version: 1
name: bert
platform: runpod
machine:
  gpu: A100-80GB
  regions: [EU-RO-1]
  image: {IMAGE}
storage:
  volume_gb: 100
checkpoint:
  dir: /workspace/ckpt
  interval: 15m
run:
  command: python train.py
  secrets: [HF_TOKEN]
"""

PAPERSPACE_JOB = """\
version: 1
name: resnet
platform: paperspace
machine:
  gpu: A4000
  regions: [ny2]
  template: ml-in-a-box
  auto_shutdown: 72h
storage:
  volume_gb: 250
run:
  command: python train.py
  secrets: [HF_TOKEN]
"""


@dataclass
class Wire:
    """One request as the simulator received it."""

    platform: str
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes


@dataclass
class RecordingSim:
    sim: Any  # gpujob.sim.testing.Sim
    wire: list[Wire] = field(default_factory=list)
    # (platform, method, path, response) -> response: tamper with what the simulator answered
    rewrite: Callable[[str, str, str, Any], Any] | None = None

    @property
    def env(self) -> dict[str, str]:
        return dict(self.sim.env)

    def api_requests(self) -> list[Wire]:
        return [w for w in self.wire if not w.path.startswith("/_sim/")]

    def inject(self, fault: str, **params: Any) -> dict[str, Any]:
        return self.sim.inject(fault, **params)  # type: ignore[no-any-return]


@contextmanager
def recording_simulator(data_dir: Path, **options: Any) -> Iterator[RecordingSim]:
    """The real simulator (lifecycle only, no pod processes) with canary API keys, recording every
    request (method, path, query, headers, body) as it arrives on either port."""
    from gpujob.sim.testing import running_simulator

    options = {"pods": False, "runpod_api_key": RP_CANARY, "paperspace_api_key": PS_CANARY, **options}
    with running_simulator(data_dir, **options) as sim:
        rec = RecordingSim(sim)
        for server, platform in zip(sim.server._servers, ("runpod", "paperspace"), strict=True):
            inner = server.dispatch

            def dispatch(req: Any, _inner: Any = inner, _platform: str = platform) -> Any:
                query = urllib.parse.urlencode(req.query, doseq=True)
                rec.wire.append(Wire(_platform, req.method, req.path, query, dict(req.headers), req.raw))
                response = _inner(req)
                if rec.rewrite is not None:
                    response = rec.rewrite(_platform, req.method, req.path, response)
                return response

            server.dispatch = dispatch
            # A client hanging up mid-answer is routine in these tests; keep the simulator's
            # socketserver traceback out of the stderr the CLI shares with it in-process.
            server.handle_error = lambda request, address: None
        yield rec


def write_job(directory: Path, text: str, name: str = "job.yaml") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + without_server_noise(self.stderr)


def cli(args: list[str], *, cwd: Path, env: Mapping[str, str]) -> Run:
    """`gpujob ARGS` in-process (click's CliRunner) with exactly this environment on top of os.environ."""
    from gpujob.cli.main import cli as group

    old = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(group, args, env=dict(env), catch_exceptions=True)
    finally:
        os.chdir(old)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Run(result.exit_code, result.stdout, result.stderr)


def subprocess_cli(args: list[str], *, cwd: Path, env: Mapping[str, str], timeout: float = 60) -> Run:
    """`python -m gpujob ARGS` as a real process."""
    full = {**os.environ, **env}
    done = subprocess.run(
        [sys.executable, "-m", "gpujob", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def canary_forms(value: str) -> list[str]:
    """The value as it could leak: plain, URL-encoded, base64 (an Authorization header dump)."""
    return [value, urllib.parse.quote(value), base64.b64encode(value.encode()).decode()[:-2]]


def leaks(texts: Iterable[str], canaries: Iterable[str] = CANARIES) -> list[str]:
    found = []
    for text in texts:
        for canary in canaries:
            for form in canary_forms(canary):
                if form in text:
                    found.append(f"{canary!r} (as {form!r}) in: {text[:200]!r}")
    return found


def files_under(root: Path, *, skip: Iterable[Path] = ()) -> list[tuple[Path, str]]:
    """Every regular file under root (bytes decoded leniently), skipping the given directories."""
    skipped = [s.resolve() for s in skip]
    out = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or any(path.resolve().is_relative_to(s) for s in skipped):
            continue
        out.append((path, path.read_bytes().decode("utf-8", "replace")))
    return out


class FastClock:
    """Virtual time for retry loops run through the CLI: every sleep is recorded and returns at once."""

    sleeps: ClassVar[list[float]] = []

    def __init__(self) -> None:
        self.t = datetime.now(UTC)

    def now(self) -> datetime:
        return self.t

    async def sleep(self, seconds: float) -> None:
        FastClock.sleeps.append(seconds)
        self.t += timedelta(seconds=seconds)


@contextmanager
def self_signed_https_server(tmp: Path) -> Iterator[tuple[str, list[str]]]:
    """An HTTPS server on 127.0.0.1 with a self-signed certificate (a proxy MITM, as the client sees
    it). Yields its base URL and the list of paths it was asked for (empty if no TLS handshake passed)."""
    import ssl
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    (tmp / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            body = b'{"pods": []}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tmp / "cert.pem", tmp / "key.pem")

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def get_request(self) -> Any:
            # The handshake happens in the connection's own thread, so a client that hangs up on the
            # certificate never blocks the accept loop.
            sock, addr = self.socket.accept()
            sock.settimeout(5)
            return ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

        def handle_error(self, request: Any, client_address: Any) -> None:
            return  # the rejected handshake is the expected outcome

    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def without_server_noise(text: str) -> str:
    """Drop the simulator's own socketserver error blocks (a client hung up on it), which share the
    captured stderr with the CLI in-process; what remains is gpujob's output."""
    import re

    return re.sub(
        r"-{20,}\nException occurred during processing of request.*?\n-{20,}\n?", "", text, flags=re.S
    )
