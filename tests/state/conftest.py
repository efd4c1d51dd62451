"""Both stores behind one fixture, so every contract test runs against the local directory and a real
PostgreSQL database alike."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpujob.state import Store

STATE_KEY = "test-state-key-0123456789abcdef"


@pytest.fixture(params=["local", "pg"])
def store_env(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """The environment that selects the store (what a second process needs to open the same one)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_STATE")}
    if request.param == "local":
        env["GPUJOB_STATE_DIR"] = str(tmp_path / ".gpujob")
    else:
        env["GPUJOB_STATE_URL"] = request.getfixturevalue("pg_url")
        env["GPUJOB_STATE_WORKSPACE"] = "team"
    env["GPUJOB_STATE_KEY"] = STATE_KEY
    for k in ("GPUJOB_STATE_DIR", "GPUJOB_STATE_URL", "GPUJOB_STATE_WORKSPACE"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        if k.startswith("GPUJOB_STATE"):
            monkeypatch.setenv(k, v)
    return env


@pytest.fixture
def store(store_env: dict[str, str]) -> Iterator[Store]:
    from gpujob.state.config import open_config, resolve

    yield open_config(resolve(None, env=store_env))


class Child:
    """A second gpujob process using the same store (not a fork: forking a threaded worker can deadlock)."""

    def __init__(self, code: str, env: dict[str, str], *args: str, prefix: tuple[str, ...] = ()) -> None:
        self.proc = subprocess.Popen(
            [*prefix, sys.executable, "-c", code, *args],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def line(self) -> str:
        assert self.proc.stdout is not None
        got = self.proc.stdout.readline().strip()
        if not got:
            raise AssertionError(
                f"child said nothing; stderr: {self.proc.stderr.read() if self.proc.stderr else ''}"
            )
        return got

    def say(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def finish(self, timeout: float = 60) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)
