"""The one HTTP layer both platforms share: timeouts, bounded retries with backoff and jitter, a pacer
that reads RunPod v2 `RateLimit` headers, and the rule that a create is never blindly repeated.

Every sleep goes through the injected Clock. The API key lives only in the client's Authorization
header: it is never put in a URL, and any platform text that echoes it back is scrubbed before it
reaches an exception or a log line.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from gpujob.clock import Clock
from gpujob.errors import (
    ProviderAuthError,
    ProviderBalanceError,
    ProviderCapacityError,
    ProviderConflict,
    ProviderError,
    ProviderNotFound,
    ProviderUnavailable,
)
from gpujob.retry import backoff
from gpujob.retry import retry_after as parse_retry_after

log = logging.getLogger("gpujob.http")
# httpx logs every request URL at INFO; keep its and httpcore's chatter out of gpujob's output.
for _name in ("httpx", "httpcore"):
    logging.getLogger(_name).setLevel(logging.WARNING)

DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=10.0)
API_NAMES = {"runpod": "RunPod", "paperspace": "Paperspace"}

RetryNotice = Callable[[str], None]
# Per platform, the highest attempt announced while its calls fail together: reads run in parallel
# (a platform may have two clients, REST and GraphQL) and a person at the one terminal needs one line
# per wait, not one per call (the log keeps each). Cleared when a call ends, however it ends.
_ANNOUNCED: dict[str, int] = {}


def terminal_notice(stream: Any = None, env: Mapping[str, str] | None = None) -> RetryNotice | None:
    """Where a client tells a person what it waits for: stderr when it is a terminal, else nowhere (a
    pipe or CI=true gets the plain output and nothing extra; the log still records every retry)."""
    e = os.environ if env is None else env
    fixed = stream
    if e.get("CI", "").strip().lower() in ("1", "true", "yes"):
        return None
    if not (fixed or sys.stderr).isatty():
        return None

    def show(line: str) -> None:
        out = fixed or sys.stderr  # looked up at each line: a live progress display may wrap stderr
        out.write(line + "\n")
        out.flush()

    return show


def retry_line(platform: str, why: str, delay: float, attempt: int, attempts: int) -> str:
    """One short line per wait, e.g. "RunPod API: 503, retrying in 2.1 s (attempt 2/6)"."""
    return f"{API_NAMES.get(platform, platform)} API: {why}, retrying in {delay:.1f} s (attempt {attempt}/{attempts})"


class OutcomeUnknown(ProviderUnavailable):
    """A non-idempotent call (create) may or may not have happened: look the resource up by name."""


class MalformedResponse(OutcomeUnknown):
    """A success status whose body is not what the call returns (an error object under 200, a listing
    without its list, an object without its id). Never read as success or as "nothing exists"; after a
    create it is an unknown outcome, so the name is looked up before anything is created again."""

    def __init__(self, message: str) -> None:
        super().__init__(
            f"malformed response: {message}",
            hint="the platform answered with something unexpected; re-run later (gpujob re-reads live state)",
        )


@dataclass
class RetryPolicy:
    attempts: int = 6
    base_delay: float = 1.0
    max_delay: float = 30.0
    deadline: float = 180.0  # seconds for one logical call, all retries included
    max_retry_after: float = 300.0  # a longer Retry-After / RateLimit reset fails instead of sleeping
    low_water: int = 3  # RateLimit remaining at or under this: spread the remaining calls over the window


@dataclass
class ErrorInfo:
    """What a platform said when a call failed, parsed from its own error shape."""

    message: str
    capacity: bool = False


@dataclass
class _Pacer:
    """Client-side view of v2 `RateLimit: "minute";r=0;t=12, "hour";r=2800;t=1812` headers."""

    windows: dict[str, tuple[int, float, datetime]] = field(default_factory=dict)

    def observe(self, header: str | None, now: datetime) -> None:
        if not header:
            return
        for part in header.split(","):
            name = re.search(r'"?([A-Za-z]+)"?', part)
            r = re.search(r"\br=(\d+)", part)
            t = re.search(r"\bt=(\d+(?:\.\d+)?)", part)
            if name and r and t:
                self.windows[name.group(1)] = (int(r.group(1)), float(t.group(1)), now)

    def delay(self, now: datetime, low_water: int) -> float:
        wait = 0.0
        for remaining, reset, seen in self.windows.values():
            left = reset - (now - seen).total_seconds()
            if left <= 0:
                continue
            if remaining <= 0:
                wait = max(wait, left)
            elif remaining <= low_water:
                wait = max(wait, left / (remaining + 1))
        return wait

    def spend(self) -> None:
        self.windows = {k: (max(r - 1, 0), t, s) for k, (r, t, s) in self.windows.items()}


ErrorParser = Callable[[httpx.Response | None, Any], ErrorInfo]


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
        self._pacer = _Pacer()
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
            _ANNOUNCED.pop(self.platform, None)  # however it ended, the next failure is announced anew

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
                tls = _tls_failure(exc)
                if tls is not None:  # never retried, and verification is never turned off
                    raise ProviderError(
                        f"TLS certificate verification failed: {tls}",
                        platform=self.platform,
                        call=call,
                        hint="something between you and the platform presents a certificate gpujob cannot "
                        "trust (a TLS-intercepting proxy?); if that is expected, point SSL_CERT_FILE at its CA",
                    ) from None
                if _refused(exc) and _loopback(target):  # retrying cannot start what is not running
                    raise self._nothing_listens(call) from None
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
            if self.notice is not None and attempt + 1 > _ANNOUNCED.get(self.platform, 0):
                _ANNOUNCED[self.platform] = attempt + 1
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
        msg = self.scrub(info.message) or "(no message)"
        kw: dict[str, Any] = {"platform": self.platform, "call": call, "status": status}
        if status in (401, 403):
            what = "rejected the API key" if status == 401 else "the API key lacks access to this"
            return ProviderAuthError(
                f"{msg} ({what})",
                hint=f"check {self.key_env}: set it to a valid key with read/write access (export {self.key_env}=...)",
                **kw,
            )
        if status == 402:
            return ProviderBalanceError(
                msg, hint=f"top up the {self.platform} account balance, then re-run", **kw
            )
        if status == 404:
            return ProviderNotFound(
                msg, hint="the resource is gone; run `gpujob plan` to see live state", **kw
            )
        if info.capacity:
            return ProviderCapacityError(
                msg, hint="no capacity for this candidate; gpujob tries the next GPU / region / cloud", **kw
            )
        if status == 409:
            return ProviderConflict(
                msg,
                hint="the action is not valid in the resource's current state; re-run `gpujob plan`",
                **kw,
            )
        if status == 429:
            return ProviderUnavailable(msg, hint="rate limited; wait and re-run", **kw)
        if status == 410:
            return ProviderError(
                msg,
                hint="the platform retired this API (410 Gone), not a problem with the job file; `gpujob doctor` "
                "shows which calls still answer, and a newer gpujob may no longer need this one",
                **kw,
            )
        return ProviderError(
            msg, hint="the platform refused the request; check the job file against its rules", **kw
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

    def _nothing_listens(self, call: str) -> ProviderError:
        """A platform API on this machine refused the connection: the simulator's address (no platform
        is ever local) with the simulator not running."""
        address = httpx.URL(self.base_url)
        local = sorted(name for name in SIM_URL_VARS if _loopback(os.environ.get(name, "")))
        clear = f"`unset {' '.join(local)}`" if local else "unset the GPUJOB_*_URL variables"
        return ProviderError(
            f"nothing is listening on {address.host}:{address.port}: the simulator is not running",
            platform=self.platform,
            call=call,
            hint=f"start it: `gpujob sim up`; or, to use the real {API_NAMES.get(self.platform, self.platform)} "
            f"API, clear the simulator's environment: {clear}",
        )

    def _unknown(self, call: str, status: int | None, reason: str) -> OutcomeUnknown:
        return OutcomeUnknown(
            f"{self.scrub(reason)}; the request may have taken effect",
            platform=self.platform,
            call=call,
            status=status,
            hint="gpujob looks the resource up by its name before trying again",
        )


_MALFORMED = object()


# The variables `gpujob sim env` sets to point gpujob at the simulator (gpujob/config.py reads them).
SIM_URL_VARS = ("GPUJOB_RUNPOD_API_URL", "GPUJOB_RUNPOD_GRAPHQL_URL", "GPUJOB_PAPERSPACE_API_URL")


def _refused(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError) or "Connection refused" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _loopback(url: str) -> bool:
    import ipaddress

    try:
        host = httpx.URL(url).host
    except (httpx.InvalidURL, TypeError):
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _tls_failure(exc: BaseException) -> str | None:
    """The certificate problem behind a connect error, if that is what it is (retrying cannot help)."""
    import ssl

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        text = str(seen)
        if isinstance(seen, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in text:
            detail = getattr(seen, "verify_message", None) or text.partition("certificate verify failed:")[2]
            return re.sub(r"\s*\(_ssl\.c:\d+\)", "", detail).strip() or "certificate rejected"
        seen = seen.__cause__ or seen.__context__
    return None


def text_snippet(response: httpx.Response | None, limit: int = 200) -> str:
    if response is None:
        return ""
    text = response.text.strip().replace("\n", " ")
    return text[:limit]
