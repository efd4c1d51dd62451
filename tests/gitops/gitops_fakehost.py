"""A local fake of the GitHub / GitLab comment APIs (never the real services)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlparse


@dataclass
class FakeHost:
    url: str = ""
    comments: list[dict[str, Any]] = field(default_factory=list)
    pulls: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # sha -> PRs (GitHub) / MRs (GitLab)
    requests: list[tuple[str, str, dict[str, str], Any]] = field(default_factory=list)
    next_id: int = 1000

    def writes(self) -> list[tuple[str, str]]:
        return [(m, p) for m, p, _, _ in self.requests if m != "GET"]


def _handler(host: FakeHost) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _reply(self, status: int, payload: Any) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _record(self) -> tuple[str, dict[str, list[str]], Any]:
            parsed = urlparse(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            host.requests.append((self.command, parsed.path, dict(self.headers), body))
            return parsed.path, parse_qs(parsed.query), body

        def _authorised(self) -> bool:
            ok = (
                self.headers.get("Authorization") == "Bearer t0ken"
                or self.headers.get("PRIVATE-TOKEN") == "t0ken"
            )
            if not ok:
                self._reply(401, {"message": "Bad credentials"})
            return ok

        def do_GET(self) -> None:
            path, query, _ = self._record()
            if not self._authorised():
                return
            m = re.fullmatch(r"/repos/[^/]+/[^/]+/commits/([0-9a-f]+)/pulls", path)
            if m:
                return self._reply(200, host.pulls.get(m.group(1), []))
            m = re.fullmatch(r"/projects/[^/]+/repository/commits/([0-9a-f]+)/merge_requests", path)
            if m:
                return self._reply(200, host.pulls.get(m.group(1), []))
            if path.endswith("/comments") or path.endswith("/notes"):
                page, per = int(query.get("page", ["1"])[0]), int(query.get("per_page", ["30"])[0])
                return self._reply(200, host.comments[(page - 1) * per : page * per])
            self._reply(404, {"message": "Not Found"})

        def _update(self) -> None:
            path, _, body = self._record()
            if not self._authorised():
                return
            cid = int(path.rsplit("/", 1)[1])
            for c in host.comments:
                if c["id"] == cid:
                    if c.get("author") not in (None, "gpujob-bot"):  # the token may edit its own only
                        return self._reply(403, {"message": "Must have admin rights to Repository."})
                    c["body"] = body["body"]
                    return self._reply(200, c)
            self._reply(404, {"message": "Not Found"})

        do_PATCH = _update
        do_PUT = _update

        def do_POST(self) -> None:
            _, _, body = self._record()
            if not self._authorised():
                return
            host.next_id += 1
            comment = {"id": host.next_id, "body": body["body"]}
            host.comments.append(comment)
            self._reply(201, comment)

    return Handler
