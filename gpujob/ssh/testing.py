"""A real OpenSSH server on 127.0.0.1 for tests and benchmarks (needs /usr/sbin/sshd; runs as the
current user, which must be root for sshd to switch to it)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from gpujob.faultshim import force_command, set_ssh_fault
from gpujob.live import SSHEndpoint

SSHD_BIN = os.environ.get("GPUJOB_TEST_SSHD", "/usr/sbin/sshd")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


class SSHD:
    """One sshd process (`-D`, so `pid` is the listener; each connection is a child of it)."""

    def __init__(
        self,
        root: Path,
        *,
        set_env: dict[str, str] | None = None,
        log_level: str = "ERROR",
        faults: bool = False,
    ) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.host_key = root / "ssh_host_ed25519_key"
        self.client_key = root / "client_ed25519"
        self.authorized = root / "authorized_keys"
        self.set_env = set_env or {}
        self.log_level = log_level
        # With faults, every command runs through the stall shim; set_fault() stalls them.
        self.fault_file: Path | None = root / "ssh_fault" if faults else None
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = _free_port()
        _keygen(self.host_key)
        _keygen(self.client_key)
        shutil.copy(self.client_key.with_suffix(".pub"), self.authorized)
        os.chmod(self.authorized, 0o600)

    @property
    def endpoint(self) -> SSHEndpoint:
        import pwd

        return SSHEndpoint(host="127.0.0.1", port=self.port, user=pwd.getpwuid(os.getuid()).pw_name)

    def log(self) -> str:
        try:
            return (self.root / "sshd.log").read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def authorize(self, public_key_line: str) -> None:
        with self.authorized.open("a") as fh:
            fh.write(public_key_line.strip() + "\n")

    def _config(self) -> Path:
        lines = [
            f"Port {self.port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {self.host_key}",
            "PermitRootLogin prohibit-password",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "PidFile none",
            "Subsystem sftp internal-sftp",
            f"AuthorizedKeysFile {self.authorized}",
            "StrictModes no",
            f"LogLevel {self.log_level}",
            "MaxSessions 64",
            "MaxStartups 64",
        ]
        lines += [f"SetEnv {k}={v}" for k, v in self.set_env.items()]
        if self.fault_file is not None:
            lines.append(f"ForceCommand {force_command(self.fault_file)}")
        cfg = self.root / "sshd_config"
        cfg.write_text("\n".join(lines) + "\n")
        return cfg

    def start(self, deadline_s: float = 10.0) -> None:
        if os.geteuid() == 0:  # a root sshd insists on its privilege-separation dir; a user's sshd does not
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        cfg = self._config()
        for _attempt in range(5):
            with open(self.root / "sshd.log", "ab") as log:
                self.proc = subprocess.Popen(
                    [SSHD_BIN, "-D", "-e", "-f", str(cfg)], stdout=subprocess.DEVNULL, stderr=log
                )
            if self._wait_listening(deadline_s):
                return
            self.stop()
            self.port = _free_port()  # lost a race for the port: pick another
            cfg = self._config()
        raise RuntimeError(f"sshd did not start; see {self.root / 'sshd.log'}")

    def _wait_listening(self, deadline_s: float) -> bool:
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            if self.proc is None or self.proc.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    s.settimeout(1.0)
                    if s.recv(4).startswith(b"SSH-"):
                        return True
            except OSError:
                time.sleep(0.02)  # not yet bound; poll again until the deadline
        return False

    def connection_pids(self) -> list[int]:
        """Pids of the sshd processes serving current connections (descendants of the listener)."""
        if self.proc is None:
            return []
        out = subprocess.run(["ps", "-e", "-o", "pid=,ppid=,comm="], capture_output=True, text=True).stdout
        rows = [line.split(None, 2) for line in out.splitlines() if line.strip()]
        tree, found = {self.proc.pid}, []
        changed = True
        while changed:
            changed = False
            for pid, ppid, comm in ((int(r[0]), int(r[1]), r[2] if len(r) > 2 else "") for r in rows):
                if ppid in tree and pid not in tree:
                    tree.add(pid)
                    changed = True
                    if comm.startswith("sshd"):
                        found.append(pid)
        return found

    def kill_connections(self) -> int:
        pids = self.connection_pids()
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return len(pids)

    def set_fault(self, mode: str | None, *, nbytes: int = 0, match: str = "") -> None:
        if self.fault_file is None:
            raise RuntimeError("this sshd was started without faults=True")
        set_ssh_fault(self.fault_file, mode, nbytes=nbytes, match=match)

    def new_host_key(self) -> None:
        """Restart on the same port with a freshly generated host key (a replaced machine)."""
        self.stop()
        for p in (self.host_key, self.host_key.with_suffix(".pub")):
            p.unlink()
        _keygen(self.host_key)
        self.start()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None


@contextmanager
def running_sshd(
    root: Path, *, set_env: dict[str, str] | None = None, log_level: str = "ERROR", faults: bool = False
) -> Iterator[SSHD]:
    server = SSHD(root, set_env=set_env, log_level=log_level, faults=faults)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def local_sshd(tmp_path: Path) -> Iterator[tuple[SSHEndpoint, Path]]:
    """A local sshd for the current user; yields (endpoint, private key path authorised on it)."""
    with running_sshd(Path(tmp_path) / "sshd") as server:
        yield server.endpoint, server.client_key
