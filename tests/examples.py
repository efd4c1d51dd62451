"""How many examples a hypothesis property runs: its full count in `make test` (and CI, and mutation
testing), a quarter of it under the `fast` profile that `make test-fast` loads
(`--hypothesis-profile=fast`, registered in tests/conftest.py).

Every property that scales this way is also pinned by explicit cases of its own (the corpus, the
fixed documents, the boundaries), so the quick run still checks each promise; the full count is what
searches for the case nobody wrote down, and it runs in every full suite."""

from __future__ import annotations

from hypothesis import settings

FULL = 100  # hypothesis's own default: the `full` profile


def examples(n: int) -> int:
    """`n` under the full profile; scaled by the loaded profile's max_examples otherwise (at least 10)."""
    return max(10, n * settings.default.max_examples // FULL) if settings.default.max_examples < FULL else n
