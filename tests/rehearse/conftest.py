"""Fixtures shared with the planner tests."""

from tests.plan.conftest import write_job

__all__ = ["write_job"]
