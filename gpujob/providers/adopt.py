"""The ambiguous-create protocol: a create whose outcome is unknown (timeout, 5xx) is never blindly
repeated. Look the exact name up over a listing-lag window and adopt what is there; create again only
if the name is still absent after the window."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from gpujob.clock import Clock
from gpujob.errors import OutcomeUnknown, ProviderConflict, ProviderUnavailable
from gpujob.providers.wait import Timeouts, poll


async def create_once(
    *,
    platform: str,
    clock: Clock,
    timeouts: Timeouts,
    name: str,
    create: Callable[[], Awaitable[str]],
    named: Callable[[str], Awaitable[list[str]]],
) -> str:
    """Returns the id of the created or adopted resource."""
    for attempt in (1, 2):
        try:
            return await create()
        except OutcomeUnknown as exc:
            found, _ = await poll(
                clock, lambda: named(name), bool, timeout=timeouts.adopt, interval=timeouts.interval
            )
            if len(found) > 1:
                raise ProviderConflict(
                    f"'{name}' exists {len(found)} times ({', '.join(found)}) after an ambiguous create",
                    platform=platform,
                    hint="run `gpujob audit` and remove the extra copies",
                ) from None
            if found:
                return found[0]
            if attempt == 2:
                raise ProviderUnavailable(
                    f"create of '{name}' had an unknown outcome twice ({exc}); nothing with that name exists now",
                    platform=platform,
                    hint="re-run `gpujob apply` later; it reads live state first",
                ) from None
    raise AssertionError("unreachable")
