"""The one HTTP layer both platforms share: timeouts, bounded retries with backoff and jitter, a pacer
that reads RunPod v2 `RateLimit` headers, and the rule that a create is never blindly repeated.

Every sleep goes through the injected Clock. The API key lives only in the client's Authorization
header: it is never put in a URL, and any platform text that echoes it back is scrubbed before it
reaches an exception or a log line.

Beside it in gpujob.providers: `failures` (what a failed call means, typed errors), `ratelimit` (the
pacer), `notice` (the retry lines a person sees), `unreachable` (when retrying cannot help).
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from gpujob.clock import Clock
from gpujob.errors import OutcomeUnknown, ProviderCapacityError, ProviderError, ProviderUnavailable
from gpujob.providers.failures import ErrorInfo, ErrorParser, typed_error
from gpujob.providers.notice import ANNOUNCED, API_NAMES, RetryNotice, retry_line, terminal_notice
from gpujob.providers.ratelimit import Pacer
from gpujob.providers.unreachable import loopback, nothing_listens, refused, tls_failure
from gpujob.retry import backoff
from gpujob.retry import retry_after as parse_retry_after

log = logging.getLogger("gpujob.http")
# httpx logs every request URL at INFO; keep its and httpcore's chatter out of gpujob's output.
for _name in ("httpx", "httpcore"):
    logging.getLogger(_name).setLevel(logging.WARNING)

DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=10.0)


@dataclass
class RetryPolicy:
    attempts: int = 6
    base_delay: float = 1.0
    max_delay: float = 30.0
    deadline: float = 180.0  # seconds for one logical call, all retries included
    max_retry_after: float = 300.0  # a longer Retry-After / RateLimit reset fails instead of sleeping
    low_water: int = 3  # RateLimit remaining at or under this: spread the remaining calls over the window


class ApiClient:
    """One platform's HTTP API. `request` returns the decoded JSON body (None when empty)."""

    def __init__(
        self,
        *,
        platform: str,
        base_url: str,
        http: httpx.AsyncClient,
        api_key: str,
        key_env: str,
        clock: Clock,
        parse_error: ErrorParser,
        policy: RetryPolicy | None = None,
        rng: random.Random | None = None,
        notice: RetryNotice | bool | None = True,
    ) -> None:
        """`notice`: where each retry wait is announced; True picks terminal_notice(), None is silent."""
        self.platform = platform
        self.notice: RetryNotice | None = terminal_notice() if notice is True else notice or None
        self.base_url = base_url.rstrip("/")
        self._http = http
        self._key = api_key
        self.key_env = key_env
        self.clock = clock
        self._parse_error = parse_error
        self.policy = policy or RetryPolicy()
        self._rng = rng or random.Random()
        self._pacer = Pacer()
        self._offset: timedelta | None = None  # platform clock - our clock, from the last Date header
        from gpujob.redact import register

        register(api_key)  # the other platform's messages and any shown text are scrubbed of it too
        self._headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "gpujob",
        }

    def platform_now(self) -> datetime:
        """The platform's clock: ours, corrected by what the last response's Date header showed. What a
        platform bills is timed by its clock (a laptop's may be off, a simulator's jumps ahead)."""
        return self.clock.now() + (self._offset or timedelta(0))

    def _observe_date(self, value: str | None) -> None:
        if not value:
            return
        try:
            server = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return
        if server.tzinfo is None:
            return
        self._offset = server - self.clock.now()

    def scrub(self, text: str) -> str:
        from gpujob.redact import redact

        return redact(text.replace(self._key, "***") if self._key else text)

    def call_name(self, method: str, path: str) -> str:
        # The call as users see it in messages: method and the URL path, never the query string.
        prefix = httpx.URL(self.base_url).path.rstrip("/")
        return f"{method} {prefix}{path.split('?')[0]}"

    async def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        params: Mapping[str, Any] | None = None,
        idempotent: bool | None = None,
    ) -> Any:
        """Send one call. Idempotent calls retry on 429, 5xx, timeouts and dropped connections within
        the policy's deadline; a non-idempotent one retries only when the request surely never
        reached the server (connect errors, 429) and raises OutcomeUnknown otherwise."""
        try:
            return await self._request(method, path, json_body, params, idempotent)
        finally:
            ANNOUNCED.pop(self.platform, None)  # however it ended, the next failure is announced anew

    async def _request(
        self,
        method: str,
        path: str,
        json_body: Any,
        params: Mapping[str, Any] | None,
        idempotent: bool | None,
    ) -> Any:
        if idempotent is None:
            idempotent = method != "POST"
        call = self.call_name(method, path)
        target = f"{self.base_url}{path}"
        started = self.clock.now()
        attempt = 0
        while True:
            attempt += 1
            await self._pace(call, started)
            retry_after: float | None = None
            try:
                response = await self._http.request(
                    method, target, json=json_body, params=params, headers=self._headers
                )
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
                tls = tls_failure(exc)
                if tls is not None:  # never retried, and verification is never turned off
                    raise ProviderError(
                        f"TLS certificate verification failed: {tls}",
                        platform=self.platform,
                        call=call,
                        hint="something between you and the platform presents a certificate gpujob cannot "
                        "trust (a TLS-intercepting proxy?); if that is expected, point SSL_CERT_FILE at its CA",
                    ) from None
                if refused(exc) and loopback(target):  # retrying cannot start what is not running
                    raise nothing_listens(self.platform, self.base_url, call) from None
                reason = f"cannot connect ({type(exc).__name__})"
                short = "cannot connect"
            except (
                httpx.TimeoutException,
                httpx.RemoteProtocolError,
                httpx.ReadError,
                httpx.WriteError,
            ) as exc:
                reason = f"no response ({type(exc).__name__})"
                short = "no response"
                if not idempotent:
                    raise self._unknown(call, None, reason) from None
            else:
                self._pacer.observe(response.headers.get("RateLimit"), self.clock.now())
                self._observe_date(response.headers.get("Date"))
                self._pacer.spend()
                status = response.status_code
                if status < 400:
                    body = self._decode(response)
                    if body is _MALFORMED:
                        reason = "malformed JSON in a success response"
                        short = f"{status} with malformed JSON"
                        if not idempotent:
                            raise self._unknown(call, status, reason)
                    else:
                        return body
                elif status == 429:
                    retry_after = parse_retry_after(response.headers.get("Retry-After"), self.platform_now())
                    said = self._parse(response).message
                    reason = f"rate limited ({said})" if said else "rate limited"
                    short = "429 rate limited"
                elif status >= 500 and status != 501:
                    reason = self._parse(response).message or f"server error {status}"
                    short = str(status)
                    if not idempotent:
                        raise self._unknown(call, status, reason)
                else:
                    raise self.error_for(call, status, self._parse(response))
            delay = self._backoff(attempt, retry_after)
            if retry_after is not None and retry_after > self.policy.max_retry_after:
                reason += f"; it asked to wait {retry_after:.0f}s, longer than gpujob waits"
            spent = (self.clock.now() - started).total_seconds()
            if attempt >= self.policy.attempts or spent + delay > self.policy.deadline:
                raise ProviderUnavailable(
                    f"{self.scrub(reason)}; gave up after {attempt} attempt(s) in {spent:.0f}s",
                    platform=self.platform,
                    call=call,
                    hint="the platform is overloaded or unreachable; wait a minute and re-run (it is safe: "
                    "gpujob reads live state again first)",
                )
            log.info("%s %s: %s, retrying in %.1fs", self.platform, call, self.scrub(reason), delay)
            if self.notice is not None and attempt + 1 > ANNOUNCED.get(self.platform, 0):
                ANNOUNCED[self.platform] = attempt + 1
                self.notice(retry_line(self.platform, short, delay, attempt + 1, self.policy.attempts))
            await self.clock.sleep(delay)

    async def graphql(self, query: str, variables: Mapping[str, Any], *, idempotent: bool) -> Any:
        """POST a GraphQL document to this client's base URL (the GraphQL endpoint). Errors arrive as
        HTTP 200 with an `errors` array, so they are checked before `data`."""
        body = await self.request(
            "POST", "", json_body={"query": query, "variables": dict(variables)}, idempotent=idempotent
        )
        if not isinstance(body, dict):
            raise ProviderError(
                "malformed GraphQL response", platform=self.platform, call=self.call_name("POST", "")
            )
        if body.get("errors"):
            info = self._parse_error(None, body)
            if info.capacity:
                raise ProviderCapacityError(
                    self.scrub(info.message),
                    platform=self.platform,
                    call=self.call_name("POST", ""),
                    hint="no capacity for this candidate; gpujob tries the next GPU / region / cloud",
                )
            text = info.message.lower()
            if "internal" in text and not idempotent:
                raise self._unknown(self.call_name("POST", ""), 200, info.message)
            if "unauthori" in text or "unauthenticated" in text or "api key" in text:
                raise self.error_for(self.call_name("POST", ""), 401, info)
            raise ProviderError(
                self.scrub(info.message), platform=self.platform, call=self.call_name("POST", ""), status=200
            )
        return body.get("data") or {}

    def error_for(self, call: str, status: int, info: ErrorInfo) -> ProviderError:
        """Map a failed call onto gpujob's typed errors, with the platform's own words and what to do."""
        return typed_error(
            self.scrub(info.message) or "(no message)",
            platform=self.platform,
            key_env=self.key_env,
            call=call,
            status=status,
            capacity=info.capacity,
        )

    async def _pace(self, call: str, started: datetime) -> None:
        now = self.clock.now()
        wait = self._pacer.delay(now, self.policy.low_water)
        if wait <= 0:
            return
        if (
            wait > self.policy.max_retry_after
            or (now - started).total_seconds() + wait > self.policy.deadline
        ):
            raise ProviderUnavailable(
                f"rate-limit window exhausted; it resets in {wait:.0f}s",
                platform=self.platform,
                call=call,
                hint="wait for the window to reset, then re-run (apply resumes from live state)",
            )
        log.info("%s %s: pacing %.1fs to stay under the rate limit", self.platform, call, wait)
        if self.notice is not None:
            name = API_NAMES.get(self.platform, self.platform)
            self.notice(f"{name} API: rate limit nearly used up, waiting {wait:.1f} s")
        await self.clock.sleep(wait)

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            # Honour the server's wait plus a little jitter so parallel clients do not stampede.
            return min(retry_after, self.policy.max_retry_after) + self._rng.uniform(0, 0.5)
        return backoff(attempt, base=self.policy.base_delay, cap=self.policy.max_delay, rng=self._rng)

    def _decode(self, response: httpx.Response) -> Any:
        if not response.content or not response.content.strip():
            return None
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _MALFORMED

    def _parse(self, response: httpx.Response) -> ErrorInfo:
        body = self._decode(response)
        if body is _MALFORMED:
            body = None
        try:
            return self._parse_error(response, body)
        except Exception:  # a weird error body must never hide the status
            return ErrorInfo(message=response.text[:200])

    def _unknown(self, call: str, status: int | None, reason: str) -> OutcomeUnknown:
        return OutcomeUnknown(
            f"{self.scrub(reason)}; the request may have taken effect",
            platform=self.platform,
            call=call,
            status=status,
            hint="gpujob looks the resource up by its name before trying again",
        )


_MALFORMED = object()
