"""Paperspace /v1 (first version: auth only; machines follow)."""

from __future__ import annotations

from gpujob.sim.engine import Simulator
from gpujob.sim.http import Api, Request, Response


class PaperspaceApi(Api):
    platform = "paperspace"

    def __init__(self, sim: Simulator) -> None:
        super().__init__(sim)

    def error(
        self, status: int, message: str, kind: str = "error", headers: dict[str, str] | None = None
    ) -> Response:
        return Response(status, {"code": "ERROR", "message": message}, headers or {})

    def authorized(self, req: Request) -> bool:
        return req.headers.get("authorization", "") == f"Bearer {self.sim.options.paperspace_api_key}"
