"""How a transfer (sync, pull, push) reports its progress: a bar through the job's reporter, or notes."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from gpujob.apply.progress import reporter_of

LARGE_TRANSFER = 8 << 20


@contextlib.contextmanager
def transfer_reporting(what: str, note: Callable[[str], None]) -> Iterator[Callable[[int, int], None]]:
    """A (done, total) callback for the SSH layer: the hooks' transfer bar when `note` is a job's
    reporter, else quarter notes of large transfers (small ones are not reported at all)."""
    reporter = reporter_of(note)
    if reporter is not None:
        with reporter.transfer(what) as progress:
            yield progress
    else:
        yield transfer_progress(what, note)


def transfer_progress(what: str, note: Callable[[str], None]) -> Callable[[int, int], None]:
    """A (done, total) callback that reports large transfers in quarters, and small ones not at all."""
    shown = {"quarter": 0}

    def report(done: int, total: int) -> None:
        if total < LARGE_TRANSFER:
            return
        quarter = min(4, done * 4 // total)
        if quarter > shown["quarter"]:
            shown["quarter"] = quarter
            note(f"{what}: {done / 1e6:.0f} of {total / 1e6:.0f} MB ({quarter * 25}%)")

    return report
