"""`GET /healthz`: the gate summary from boot, and whether the store and embedder answer.

The store is probed through ``host.store()``, its optional ``ping()`` (the Neo4j store asks the
server; discovery alone is cached and would say ok with the database down) and its cheap
``vector_indexes()`` call, guarded
(a missing store plugin or a raising store is reported, never a 500) and time-boxed. The answer
is cached for one second so a load balancer polling hard does not turn into store load.
Status 200 when serving normally, 503 when the store fails or a fatal gate failed.
"""

from __future__ import annotations

import time
from typing import Any

import anyio

from plughost import PlughostError
from plughost.api import serving

PROBE_TIMEOUT_S = 3.0
CACHE_S = 1.0


def probe_store(host: Any) -> dict[str, Any]:
    try:
        store = host.store()
    except PlughostError as exc:
        return {"status": "none", "detail": str(exc)}
    except Exception as exc:  # a store plugin that fails to open
        return {"status": "error", "detail": f"{type(exc).__name__}: {exc}"[:200]}
    info: dict[str, Any] = {"status": "ok", "kind": type(store).__name__}
    try:
        ping = getattr(store, "ping", None)  # optional: a store over a network says whether it answers
        if callable(ping):
            ping()
        indexes = store.vector_indexes()
        info["vectorIndexes"] = len(indexes)
    except Exception as exc:
        info.update(status="error", detail=f"{type(exc).__name__}: {exc}"[:200])
    return info


def probe_embedder(host: Any) -> dict[str, Any]:
    try:
        embedder = host.embedder()
    except Exception as exc:
        return {"status": "error", "detail": f"{type(exc).__name__}: {exc}"[:200]}
    if embedder is None:
        return {"status": "none"}
    return {"status": "ok", "name": getattr(embedder, "name", type(embedder).__name__),
            "dimensions": getattr(embedder, "dimensions", None)}


def gate_summary(host: Any) -> dict[str, Any]:
    return dict(host.state.get(serving.GATES) or {"ran": False})


def snapshot(host: Any) -> tuple[int, dict[str, Any]]:
    store = probe_store(host)
    gates = gate_summary(host)
    fatal = bool(gates.get("fatal"))
    status = "fail" if fatal else ("degraded" if store["status"] == "error" else "ok")
    runtime = host.state.get(serving.RUNTIME)
    body = {
        "status": status,
        "gates": gates,
        "store": store,
        "embedder": probe_embedder(host),
        "plugins": {"loaded": sorted(r.name for r in host.loaded()),
                    "failed": sorted(r.name for r in host.records.values() if r.status == "failed"),
                    "excluded": sorted(r.name for r in host.records.values() if r.status == "excluded")},
        "mcp": sorted(runtime.mcp) if runtime is not None else [],
        "uptimeS": round(time.time() - runtime.started_at, 1) if runtime is not None else None,
    }
    return (200 if status == "ok" else 503), body


def make_endpoint(host: Any) -> Any:
    from starlette.responses import JSONResponse

    cache: dict[str, Any] = {"at": 0.0, "value": None}

    async def healthz(request: Any) -> Any:
        now = time.monotonic()
        if cache["value"] is None or now - cache["at"] > CACHE_S:
            status, body = 503, {"status": "degraded", "detail": "health probe timed out"}
            with anyio.move_on_after(PROBE_TIMEOUT_S):
                status, body = await anyio.to_thread.run_sync(snapshot, host, abandon_on_cancel=True)
            cache.update(at=time.monotonic(), value=(status, body))
        status, body = cache["value"]
        return JSONResponse(body, status_code=status, headers={"Cache-Control": "no-store"})

    return healthz
