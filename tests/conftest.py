"""Root conftest: shared by every area. Area fixtures live in tests/<area>/conftest.py."""

from __future__ import annotations

import itertools
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings as hypothesis_settings

if TYPE_CHECKING:
    from gpujob.state.pgtesting import PgServer
    from tests.fakeapi.server import RunningFake

_databases = itertools.count(1)


def _cache_bytecode() -> None:
    """Let the `python -m gpujob` processes the tests start keep their compiled bytecode. With
    PYTHONDONTWRITEBYTECODE set (the Makefile used to set it; so does this machine's environment) every
    one of them compiled all of gpujob's modules afresh: ~0.1 s of CPU per command, the e2e tests run
    thousands. The bytecode goes under the temporary directory (PYTHONPYCACHEPREFIX), not into the
    checkout, so the tree stays as clean as before; Python checks each file's mtime as usual."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.setdefault(
        "PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / f"gpujob-pycache-{os.getuid()}")
    )
    # This process too, when pytest was started outside `make`: pytest rewrites every test module's
    # asserts at each import unless it may keep the result (7 of `make test-fast`'s collection's 9.5 s).
    sys.dont_write_bytecode = False
    if sys.pycache_prefix is None:
        sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]


_cache_bytecode()

# `make test-fast` loads `fast` (tests/examples.py scales the explicit counts with it); everything else
# runs `full`, hypothesis's defaults.
hypothesis_settings.register_profile("full")
hypothesis_settings.register_profile("fast", max_examples=25)

# What `-m "not sim and not ssh"` (make test-fast) leaves out, found for every test rather than by hand:
# a test is `sim` when it lives where every test runs the simulator, asks for a simulator fixture (or
# the simulator case of tests/providers' `backend`), or its module starts one; `ssh` when it lives in
# tests/ssh (real sshd) or its module starts an sshd.
SIM_DIRS = ("e2e", "sim", "bench")  # bench: the benchmark suites run the simulator's pods
SSH_DIRS = ("ssh",)
SIM_FIXTURES = {"sim", "shared_sim", "project", "simb", "simg", "rsim"}
SIM_SOURCE = ("running_simulator", "pod_simulator", "recording_simulator", "sim_backend(", "ownership_kit")
SSH_SOURCE = ("running_sshd", "local_sshd", "gpujob.ssh.testing")
_TESTS = Path(__file__).resolve().parent
_sources: dict[Path, str] = {}


def _source(path: Path) -> str:
    if path not in _sources:
        try:
            _sources[path] = path.read_text(encoding="utf-8")
        except OSError:
            _sources[path] = ""
    return _sources[path]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.path))
        try:
            area = path.relative_to(_TESTS).parts[0]
        except (ValueError, IndexError):
            continue
        text = _source(path)
        fixtures = set(getattr(item, "fixturenames", ()))
        callspec = getattr(item, "callspec", None)
        on_sim = callspec is not None and callspec.params.get("backend") == "sim"  # tests/providers
        if area in SIM_DIRS or on_sim or fixtures & SIM_FIXTURES or any(s in text for s in SIM_SOURCE):
            item.add_marker(pytest.mark.sim)
        if area in SSH_DIRS or any(s in text for s in SSH_SOURCE):
            item.add_marker(pytest.mark.ssh)


@pytest.fixture(autouse=True, scope="session")
def _capabilities() -> None:
    """Every capability plugged in, as the CLI plugs them (gpujob.cli.wiring), for tests that call the
    planner, the applier or the watch loop directly."""
    from gpujob.cli.wiring import wire

    wire()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A real PostgreSQL server for this test process (initdb + pg_ctl in a temp dir, run unprivileged;
    see gpujob.state.pgtesting). Started on first use only: tests that do not ask for it pay nothing."""
    from gpujob.state.pgtesting import local_postgres

    with local_postgres() as server:
        yield server


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    """A fresh, empty database on the test server."""
    return pg_server.new_database(f"t{os.getpid()}_{next(_databases)}")


@pytest.fixture
def fake() -> Iterator[RunningFake]:
    """The independent fake of the real APIs (tests/fakeapi), on a loopback port, for one test."""
    from tests.fakeapi.server import RunningFake

    f = RunningFake()
    try:
        yield f
    finally:
        f.close()
