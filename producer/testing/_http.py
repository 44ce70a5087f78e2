"""The dev cluster's HTTP control API (aiohttp), bound to 127.0.0.1.

=======  ===========================  =====================================================
GET      /brokers                     every broker: address, fault, connections, counts
PUT      /brokers/{name}/fault        body: a fault spec object (400 if bad, 404 if no broker)
DELETE   /brokers/{name}/fault        back to normal service
GET      /namesrv                     the name server's address and fault
PUT      /namesrv/fault               body: a fault spec object (e.g. ``{"down": true}``)
DELETE   /namesrv/fault               back to normal service
GET      /topics/{topic}/count        ``{"count": n, "unique_msg_ids": u}``
GET      /topics/{topic}/messages     stored messages (``?limit=N``, default 1000)
=======  ===========================  =====================================================

With ``slaves=1``, also the replicated groups' routes of ``_http_ha.py`` (replication
state and lag, kill-master, restart-master, promote).

A fault spec object has the fields of :class:`~producer.testing.FaultSpec`, e.g.
``{"latency_ms": 200, "jitter_ms": 50, "latency_probability": 0.5}``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from aiohttp import web

from producer.testing._faults import FaultSpec, FaultSpecError
from producer.testing._http_ha import add_ha_routes

if TYPE_CHECKING:
    from producer.testing._cluster import DevCluster

__all__ = ["HttpControl"]

_CLUSTER: web.AppKey[DevCluster] = web.AppKey("cluster")


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def _read_spec(request: web.Request) -> FaultSpec:
    try:
        data = json.loads(await request.text() or "null")
    except ValueError as exc:
        raise web.HTTPBadRequest(
            text=json.dumps({"error": f"body is not JSON: {exc}"}), content_type="application/json"
        ) from None
    try:
        return FaultSpec.from_json(data)
    except (FaultSpecError, TypeError) as exc:
        raise web.HTTPBadRequest(
            text=json.dumps({"error": str(exc)}), content_type="application/json"
        ) from None


def _broker_or_404(request: web.Request) -> str:
    name = request.match_info["name"]
    if name not in request.app[_CLUSTER].broker_names:
        raise web.HTTPNotFound(
            text=json.dumps({"error": f"no broker {name!r}"}), content_type="application/json"
        )
    return name


async def list_brokers(request: web.Request) -> web.Response:
    cluster = request.app[_CLUSTER]
    return web.json_response(
        {
            "brokers": [cluster.broker_status(name) for name in cluster.broker_names],
            "namesrv": _namesrv_status(cluster),
        }
    )


async def put_broker_fault(request: web.Request) -> web.Response:
    name = _broker_or_404(request)
    spec = await _read_spec(request)
    await request.app[_CLUSTER].set_fault(name, spec)
    return web.json_response({"broker": name, "fault": spec.to_json()})


async def delete_broker_fault(request: web.Request) -> web.Response:
    name = _broker_or_404(request)
    await request.app[_CLUSTER].clear_fault(name)
    return web.json_response({"broker": name, "fault": {}})


def _namesrv_status(cluster: DevCluster) -> dict[str, Any]:
    return {"address": cluster.namesrv_addr, "fault": cluster.namesrv_fault.to_json()}


async def get_namesrv(request: web.Request) -> web.Response:
    return web.json_response(_namesrv_status(request.app[_CLUSTER]))


async def put_namesrv_fault(request: web.Request) -> web.Response:
    spec = await _read_spec(request)
    await request.app[_CLUSTER].set_namesrv_fault(spec)
    return web.json_response(_namesrv_status(request.app[_CLUSTER]))


async def delete_namesrv_fault(request: web.Request) -> web.Response:
    await request.app[_CLUSTER].set_namesrv_fault(FaultSpec())
    return web.json_response(_namesrv_status(request.app[_CLUSTER]))


async def topic_count(request: web.Request) -> web.Response:
    cluster, topic = request.app[_CLUSTER], request.match_info["topic"]
    return web.json_response(
        {
            "count": cluster.message_count(topic),
            "unique_msg_ids": len(cluster.unique_msg_ids(topic)),
        }
    )


async def topic_messages(request: web.Request) -> web.Response:
    cluster, topic = request.app[_CLUSTER], request.match_info["topic"]
    try:
        limit = int(request.query.get("limit", "1000"))
    except ValueError:
        return _error(400, "limit must be an integer")
    listed = [
        {
            "broker": m.broker_name,
            "queue_id": m.queue_id,
            "queue_offset": m.queue_offset,
            "uniq_key": m.uniq_key,
            "offset_msg_id": m.offset_msg_id,
            "tags": m.tags,
            "keys": m.keys,
            "body_size": len(m.body),
            "born_timestamp": m.born_timestamp,
            "store_timestamp": m.store_timestamp,
        }
        for m in cluster.messages(topic)[: max(limit, 0)]
    ]
    return web.json_response({"topic": topic, "messages": listed})


def make_app(cluster: DevCluster) -> web.Application:
    app = web.Application()
    app[_CLUSTER] = cluster
    app.router.add_get("/brokers", list_brokers)
    app.router.add_put("/brokers/{name}/fault", put_broker_fault)
    app.router.add_delete("/brokers/{name}/fault", delete_broker_fault)
    app.router.add_get("/namesrv", get_namesrv)
    app.router.add_put("/namesrv/fault", put_namesrv_fault)
    app.router.add_delete("/namesrv/fault", delete_namesrv_fault)
    app.router.add_get("/topics/{topic}/count", topic_count)
    app.router.add_get("/topics/{topic}/messages", topic_messages)
    add_ha_routes(app, cluster)
    return app


class HttpControl:
    """Runs :func:`make_app` on 127.0.0.1:``port`` (0 = any free port)."""

    def __init__(self, cluster: DevCluster, *, port: int = 0) -> None:
        self._runner = web.AppRunner(make_app(cluster), access_log=None)
        self._port = port
        self.port = port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self._port)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def aclose(self) -> None:
        await self._runner.cleanup()
