"""Golden plan files: --update-golden (or GPUJOB_UPDATE_GOLDEN=1) rewrites them instead of comparing.

pytest only registers options from conftests it loads at start-up, so pass the option with this folder
on the command line (`pytest tests/golden --update-golden`); the environment variable works from anywhere.
"""

from __future__ import annotations

import os

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden", action="store_true", default=False, help="rewrite tests/golden/*/plan.*"
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    try:
        flag = bool(request.config.getoption("--update-golden"))
    except ValueError:
        flag = False
    return flag or os.environ.get("GPUJOB_UPDATE_GOLDEN") == "1"
