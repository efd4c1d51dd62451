"""HTTP plumbing: a threading server per platform port, routing, auth, rate limits and the
request-level faults (latency, http_error, drop). Handlers take a Request and return a Response.

Every connection gets its own thread, so injected latency never serialises requests."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from gpujob.sim.engine import SimError, Simulator


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    raw: bytes
    params: dict[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        if not self.raw.strip():
            return {}
        try:
            return json.loads(self.raw)
        except ValueError as exc:
            raise SimError(400, f"request body is not valid JSON: {exc}", "bad_request") from exc

    def arg(self, name: str, default: str | None = None) -> str | None:
        vals = self.query.get(name)
        return vals[0] if vals else default


@dataclass
class Response:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


DROP = Response(status=-1)
Handler = Callable[[Request], Response]


class Api:
    """One platform's routes plus its error format."""

    platform = ""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.routes: list[tuple[str, re.Pattern[str], Handler]] = []
        # /_sim/ on every port: each platform's Api adds them (gpujob.sim.control_api.add_control_routes)
        self.control_routes: list[tuple[str, str, Handler]] = []

    def route(self, method: str, pattern: str, handler: Handler) -> None:
        regex = "^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern) + "/?$"
        self.routes.append((method, re.compile(regex), handler))

    def error(
        self, status: int, message: str, kind: str = "error", headers: dict[str, str] | None = None
    ) -> Response:
        raise NotImplementedError

    def authorized(self, req: Request) -> bool:
        raise NotImplementedError

    def over_quota(self, req: Request) -> float | None:
        """Seconds to wait when the caller is over its quota, else None."""
        return None

    def dispatch(self, req: Request) -> Response:
        sim = self.sim
        if req.path.startswith("/_sim/"):
            for method, path, handler in self.control_routes:
                if path == req.path.rstrip("/") and method == req.method:
                    try:
                        return handler(req)
                    except SimError as exc:
                        return Response(exc.status, {"error": exc.message})
            return Response(404, {"error": f"no control route {req.method} {req.path}"})
        event = {"platform": self.platform, "path": req.path, "method": req.method}
        if sim.faults.take("drop", **event):
            return DROP
        lat = sim.faults.take("latency", **event)
        if lat is not None and lat.seconds > 0:
            time.sleep(lat.seconds)
        if not self.authorized(req):
            return self.error(401, "missing or invalid bearer token", "unauthorized")
        err = sim.faults.take("http_error", **event)
        if err is not None:
            headers = {"Retry-After": _num(err.retry_after)} if err.retry_after is not None else {}
            return self.error(err.status, "injected failure", "injected", headers)
        wait = self.over_quota(req)
        if wait is not None:
            return self.error(429, "rate limit exceeded", "rate_limited", {"Retry-After": _num(wait)})
        allowed = []
        for method, regex, handler in self.routes:
            m = regex.match(req.path)
            if not m:
                continue
            if method != req.method:
                allowed.append(method)
                continue
            req.params = {k: unquote(v) for k, v in m.groupdict().items()}
            try:
                return handler(req)
            except SimError as exc:
                return self.error(exc.status, exc.message, exc.kind)
        if allowed:
            return self.error(
                405, f"method {req.method} not allowed", "method", {"Allow": ", ".join(allowed)}
            )
        return self.error(404, f"no route for {req.method} {req.path}", "not_found")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


class RateWindow:
    """Fixed windows per minute/hour/day, for the RateLimit and RateLimit-Policy headers."""

    WINDOWS = (("minute", 60), ("hour", 3600), ("day", 86400))

    def __init__(self, per_minute: int) -> None:
        self.quota = {"minute": per_minute, "hour": per_minute * 50, "day": per_minute * 800}
        self.lock = threading.Lock()
        self.counts: dict[str, tuple[int, int]] = {}

    def hit(self) -> tuple[bool, dict[str, tuple[int, int]]]:
        """Count a request. Returns (allowed, {window: (remaining, seconds_to_reset)})."""
        now = int(time.time())
        out, allowed = {}, True
        with self.lock:
            for name, size in self.WINDOWS:
                start = now - now % size
                wstart, used = self.counts.get(name, (start, 0))
                if wstart != start:
                    wstart, used = start, 0
                if used >= self.quota[name]:
                    allowed = False
                else:
                    used += 1
                self.counts[name] = (wstart, used)
                out[name] = (self.quota[name] - used, wstart + size - now)
        return allowed, out

    def headers(self, state: dict[str, tuple[int, int]]) -> dict[str, str]:
        return {
            "RateLimit": ", ".join(f'"{n}";r={r};t={t}' for n, (r, t) in state.items()),
            "RateLimit-Policy": ", ".join(f'"{n}";q={self.quota[n]};w={s}' for n, s in self.WINDOWS),
        }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests and daemon logs stay clean
        return

    def date_time_string(self, timestamp: float | None = None) -> str:
        # The Date header tells the simulated time, as a real platform's tells its own clock: clients time
        # what bills against the server's clock, not the laptop's.
        return super().date_time_string(self.server.now() if timestamp is None else timestamp)

    def _any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        req = Request(
            self.command, url.path, parse_qs(url.query), {k.lower(): v for k, v in self.headers.items()}, raw
        )
        try:
            resp = self.server.dispatch(req)
        except Exception as exc:  # a simulator bug must still answer, as a 500 in the platform's format
            resp = Response(
                500, {"title": "Internal Server Error", "status": 500, "detail": f"simulator bug: {exc!r}"}
            )
        if resp is DROP or resp.status < 0:
            self.close_connection = True
            return
        if resp.body is None:
            payload = b""
        elif isinstance(resp.body, bytes):
            payload = resp.body
        else:
            payload = json.dumps(resp.body).encode()
        self.send_response(resp.status)
        if payload:
            self.send_header("Content-Type", resp.content_type)
        self.send_header("Content-Length", str(len(payload)))
        for k, v in resp.headers.items():
            self.send_header(k, v)
        self.end_headers()
        if payload and self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _any


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True

    def __init__(
        self, addr: tuple[str, int], dispatch: Callable[[Request], Response], now: Callable[[], float]
    ) -> None:
        self.dispatch = dispatch
        self.now = now
        super().__init__(addr, _Handler)


def serve(
    host: str, port: int, dispatch: Callable[[Request], Response], now: Callable[[], float] = time.time
) -> tuple[_Server, threading.Thread]:
    server = _Server((host, port), dispatch, now)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return server, thread
