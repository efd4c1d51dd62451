"""Watch unit tests: the real loader and planner over hand-made live state; fakes for the platform."""

from __future__ import annotations

from tests.plan.conftest import write_job

__all__ = ["write_job"]
