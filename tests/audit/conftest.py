"""Fixtures for the audit tests; the seeded account itself lives in audit_seed.py."""

from __future__ import annotations

import pytest

from gpujob.live import LiveState
from tests.audit.audit_seed import NOW, seeded_resources


@pytest.fixture
def seeded_live() -> LiveState:
    return LiveState(read_at=NOW, resources=seeded_resources())
