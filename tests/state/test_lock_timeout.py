"""--lock-timeout at the store level, on the local directory and a real PostgreSQL server alike: a
lock another process holds is waited for up to the timeout, then refused saying how long it waited;
taken as soon as the holder lets go within it."""

from __future__ import annotations

import threading
import time

import pytest

from gpujob.errors import LockError
from gpujob.lock import locked_within
from gpujob.state import Store
from tests.state.conftest import Child
from tests.state.test_store_contract import HOLDER


def test_waits_then_refuses_or_takes_it_when_freed(store: Store, store_env: dict[str, str]) -> None:
    child = Child(HOLDER, store_env)
    try:
        assert child.line() == "ready"
        started = time.monotonic()
        with pytest.raises(LockError) as refused, locked_within(store, "bert", timeout=0):
            pass
        assert time.monotonic() - started < 1.0 and "--lock-timeout" in (refused.value.hint or "")
        started = time.monotonic()
        with pytest.raises(LockError) as waited, locked_within(store, "bert", timeout=1.0):
            pass
        assert time.monotonic() - started >= 1.0
        assert "(waited 1s for it)" in str(waited.value) and "child apply" in str(waited.value)

        # The holder lets go half-way through a long wait: the lock is taken then, not at the end.
        threading.Timer(0.5, child.say, args=("go",)).start()
        started = time.monotonic()
        with locked_within(store, "bert", timeout=30.0, command="waiter") as info:
            took = time.monotonic() - started
            assert info.command == "waiter" and store.lock_held("bert")
        assert 0.4 <= took < 15.0, took
    finally:
        child.kill()
