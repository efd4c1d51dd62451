"""Root conftest: shared by every area. Area fixtures live in tests/<area>/conftest.py."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from gpujob.state.pgtesting import PgServer

_databases = itertools.count(1)


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
