"""The HTTP control API's replicated-group routes (a cluster started with ``slaves=1``).

=======  =================================  ===============================================
GET      /brokers/{name}/replication        the group: state, ``behind``, lag, who runs
PUT      /brokers/{name}/replication        body ``{"lag_ms": 500, "lag_messages": 0}``
POST     /brokers/{name}/kill-master        ``kill -9`` of the master (brokerId 0 leaves)
POST     /brokers/{name}/restart-master     the dead member starts again
POST     /brokers/{name}/promote            the slave becomes the master (a new address)
=======  =================================  ===============================================

Each answers the group's replication state; 404 names the brokers that have slaves.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from producer.testing._cluster import DevCluster

__all__ = ["add_ha_routes"]

Handler = Callable[[web.Request], Awaitable[web.Response]]


def _json_error(status: type[web.HTTPException], message: str) -> web.HTTPException:
    return status(text=json.dumps({"error": message}), content_type="application/json")


def _state(cluster: DevCluster, name: str) -> dict[str, Any]:
    try:
        return {"broker": name, **cluster.replication(name)}
    except KeyError as exc:
        raise _json_error(web.HTTPNotFound, str(exc.args[0])) from None


def _acting(cluster: DevCluster, act: Callable[[str], Awaitable[object]]) -> Handler:
    async def handle(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        _state(cluster, name)  # 404 before acting
        await act(name)
        return web.json_response(_state(cluster, name))

    return handle


async def _read_lag(request: web.Request) -> tuple[int, int]:
    try:
        data = json.loads(await request.text() or "{}")
    except ValueError as exc:
        raise _json_error(web.HTTPBadRequest, f"body is not JSON: {exc}") from None
    if not isinstance(data, dict) or set(data) - {"lag_ms", "lag_messages"}:
        raise _json_error(web.HTTPBadRequest, 'body: {"lag_ms": N, "lag_messages": N}')
    values = (data.get("lag_ms", 0), data.get("lag_messages", 0))
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
        raise _json_error(web.HTTPBadRequest, "lag_ms and lag_messages are integers >= 0")
    return values


def add_ha_routes(app: web.Application, cluster: DevCluster) -> None:
    """Register the routes above on ``app``."""

    async def get_replication(request: web.Request) -> web.Response:
        return web.json_response(_state(cluster, request.match_info["name"]))

    async def put_replication(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        _state(cluster, name)
        ms, messages = await _read_lag(request)
        cluster.set_replication_lag(name, ms=ms, messages=messages)
        return web.json_response(_state(cluster, name))

    app.router.add_get("/brokers/{name}/replication", get_replication)
    app.router.add_put("/brokers/{name}/replication", put_replication)
    app.router.add_post("/brokers/{name}/kill-master", _acting(cluster, cluster.kill_master))
    app.router.add_post("/brokers/{name}/restart-master", _acting(cluster, cluster.restart_master))
    app.router.add_post("/brokers/{name}/promote", _acting(cluster, cluster.promote))
