"""Fixtures for the GitOps tests (the fake host lives in gitops_fakehost.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest

from tests.gitops.gitops_fakehost import FakeHost, _handler


@pytest.fixture
def fake_host() -> Iterator[FakeHost]:
    host = FakeHost()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(host))
    host.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield host
    finally:
        server.shutdown()
        server.server_close()
