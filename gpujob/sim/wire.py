"""How the simulated platforms page their lists, and wire shapes more than one route module answers with
(a machine's or a template's create returns its event)."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from gpujob.sim.clock import iso
from gpujob.sim.engine import SimError
from gpujob.sim.http import Request, Response
from gpujob.sim.state import PsEvent


def paginate(req: Request, rows: list[dict[str, Any]], order_by: str = "dtCreated") -> Response:
    order = req.arg("order", "desc")
    order_by = req.arg("orderBy", order_by) or order_by
    rows = sorted(
        rows,
        key=lambda r: (str(r.get(order_by) or ""), str(r.get("id") or r.get("ip"))),
        reverse=order == "desc",
    )
    try:
        limit = int(req.arg("limit", "20") or 20)
        start = int(base64.urlsafe_b64decode((req.arg("after") or "MA==").encode()).decode() or 0)
    except ValueError as exc:
        raise SimError(400, f"invalid pagination parameter: {exc}", "bad_request") from exc
    if not 1 <= limit <= 120:
        raise SimError(400, "limit must be between 1 and 120", "bad_request")
    page = rows[start : start + limit]
    more = start + limit < len(rows)
    nxt = base64.urlsafe_b64encode(str(start + limit).encode()).decode() if more else None
    return Response(200, {"items": page, "hasMore": more, "nextPage": nxt})


def v2_page(req: Request, key: str, rows: list[dict[str, Any]]) -> Response:
    """One page of a v2 list, as the production spec pages them (runpod/typescript-api-sdk
    spec/openapi.yaml: `cursor`, `limit` 1-1000 default 1000, `pagination {nextCursor, hasNextPage}`; a
    malformed or foreign cursor is a 422). The cursor is opaque: the list it belongs to and an offset."""
    problems: list[str] = []
    limit = 1000
    if req.arg("limit") is not None:
        try:
            limit = int(req.arg("limit") or "")
        except ValueError:
            problems.append("$.limit: expected integer")
        else:
            if not 1 <= limit <= 1000:
                problems.append("$.limit: must be between 1 and 1000")
    start = 0
    cursor = req.arg("cursor")
    if cursor is not None:
        try:
            scope, _, offset = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
            start = int(offset)
            if scope != key or start < 0:
                raise ValueError(scope)
        except (ValueError, UnicodeDecodeError, binascii.Error):
            problems.append("$.cursor: malformed or foreign cursor")
    if problems:
        resp = Response(
            422,
            {
                "title": "Unprocessable Entity",
                "status": 422,
                "detail": "Request validation failed.",
                "errors": problems,
            },
            content_type="application/problem+json",
        )
        return resp
    more = start + limit < len(rows)
    nxt = base64.urlsafe_b64encode(f"{key}:{start + limit}".encode()).decode() if more else None
    return Response(
        200, {key: rows[start : start + limit], "pagination": {"nextCursor": nxt, "hasNextPage": more}}
    )


def event_json(ev: PsEvent) -> dict[str, Any]:
    return {
        "id": ev.id,
        "name": ev.name,
        "state": ev.state,
        "machineId": ev.machine_id,
        "error": ev.error,
        "dtCreated": iso(ev.created_at),
        "dtStarted": iso(ev.started_at),
        "dtFinished": iso(ev.finished_at),
    }
