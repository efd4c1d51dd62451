"""`--notify URL`: each watch event posted as JSON to a webhook, Slack-compatible.

Body: {"text": <the event's line>, "metadata": {"event_type": "gpujob_watch", "event_payload": {...}}}
(`text` is what Slack, Mattermost, Discord-via-slack and most chat bridges show; `metadata` is Slack's
structured-message field, ignored elsewhere). Posts go through a queue drained by one background task,
so a slow or dead webhook never delays a recovery. Each post is retried on timeouts, 408, 429 (after
Retry-After, in seconds or as an HTTP-date) and 5xx, with backoff through the injected clock
(gpujob.retry, as the platform clients).

The body holds only the event, which was already redacted. The URL itself is a secret for Slack-style
webhooks (the path is the credential), so it is never printed: failures name the host only.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from gpujob.clock import Clock
from gpujob.watch.events import Event

ATTEMPTS = 4
BACKOFF_S = 1.0
MAX_RETRY_AFTER_S = 60.0
TIMEOUT_S = 10.0
DRAIN_S = 15.0


def body(event: Event) -> dict[str, Any]:
    return {
        "text": event.line(),
        "metadata": {"event_type": "gpujob_watch", "event_payload": event.model_dump(mode="json")},
    }


def host_of(url: str) -> str:
    parts = urlsplit(url)
    return parts.hostname or "the webhook"


class Notifier:
    def __init__(
        self,
        url: str,
        *,
        clock: Clock,
        warn: Callable[[str], None],
        client: Any = None,
        attempts: int = ATTEMPTS,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            from gpujob.errors import ConfigError

            raise ConfigError(
                "--notify needs an http(s) URL", hint="e.g. --notify https://hooks.slack.com/services/..."
            )
        self._url = url
        self._clock = clock
        self._warn = warn
        self._client = client
        self._own_client = client is None
        self._attempts = attempts
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None
        self.sent = 0
        self.failed = 0

    def send(self, event: Event) -> None:
        """Queue the event; it is posted in the background."""
        if self._worker is None:
            self._worker = asyncio.get_running_loop().create_task(self._drain())
        self._queue.put_nowait(event)

    async def aclose(self, deadline_s: float = DRAIN_S) -> None:
        """Post what is queued (for at most `deadline_s`), then close."""
        if self._worker is not None:
            self._queue.put_nowait(None)
            try:
                await asyncio.wait_for(asyncio.shield(self._worker), deadline_s)
            except TimeoutError:
                self._worker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._worker
                self._warn(f"notify: {self._queue.qsize()} event(s) not delivered to {host_of(self._url)}")
        if self._own_client and self._client is not None:
            await self._client.aclose()

    async def _drain(self) -> None:
        while (event := await self._queue.get()) is not None:
            if await self.post(event):
                self.sent += 1
            else:
                self.failed += 1

    async def post(self, event: Event) -> bool:
        """One event, with retries (gpujob.retry). True when the webhook accepted it."""
        import httpx

        from gpujob.retry import Outcome, attempts, retry_after

        if self._client is None:
            self._client = httpx.AsyncClient(timeout=TIMEOUT_S, follow_redirects=False)
        client, payload = self._client, body(event)

        async def once() -> Outcome:
            try:
                resp = await client.post(self._url, json=payload)
            except httpx.HTTPError as exc:
                return Outcome(done=False, why=type(exc).__name__)
            if resp.status_code < 300:
                return Outcome(done=True)
            # Anything but 408, 429 and 5xx: the webhook refuses this body or this URL; retrying will not help.
            again = resp.status_code in (408, 429) or resp.status_code >= 500
            wait = retry_after(resp.headers.get("retry-after"), self._clock.now())
            return Outcome(done=False, why=f"HTTP {resp.status_code}", again=again, wait=wait)

        outcome = await attempts(
            once,
            tries=self._attempts,
            sleep=self._clock.sleep,
            base=BACKOFF_S,
            cap=BACKOFF_S * 2 ** (self._attempts - 1),
            max_wait=MAX_RETRY_AFTER_S,
        )
        if outcome.done:
            return True
        self._warn(f"notify: {host_of(self._url)} did not take the '{event.event}' event ({outcome.why})")
        return False
