"""A Starlette app of the channel adapters' routes (``plughost channels serve``).

The host's own app (``plughost serve``) mounts the same routes next to every other plugin's;
this one serves the channels alone, for a channels-only process and the webhook bench.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from plughost import Host, UserError
from plughost.api import hooks
from plughost.plugins.channels.outbound import HTTP_CLIENT
from plughost.plugins.channels.pipeline import GATEWAY
from plughost.plugins.channels.settings import CHANNELS_RESUME

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.routing import BaseRoute


def build_app(host: Host) -> Starlette:
    from starlette.applications import Starlette
    from starlette.routing import Mount
    from starlette.routing import Route as StarletteRoute

    routes: list[BaseRoute] = []
    for contribution in host.collect(hooks.CHANNEL_ADAPTERS):
        for r in contribution.item.routes:
            if r.app is not None:
                routes.append(Mount(r.path, app=r.app))
            elif r.endpoint is None:
                raise UserError(f"route {r.path}: expected an endpoint or an app")
            else:
                routes.append(StarletteRoute(r.path, r.endpoint, methods=list(r.methods), name=r.name))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        from plughost.plugins.channels.delivery import drain, resume
        task = None
        if host.principal.account and CHANNELS_RESUME.read(host.env):
            task = asyncio.ensure_future(resume(host))  # in batches while the routes serve
        yield
        if task is not None and not task.done():
            task.cancel()
        await drain(host)

    return Starlette(routes=routes, lifespan=lifespan)


def close(host: Host) -> None:
    """Shutdown hook: drop per-process state (a client bound to a finished loop is discarded)."""
    gw = host.state.get(GATEWAY)
    if gw is not None:
        gw.stop_turns()  # running turns still send through the shared client and record the outcome
    host.state.pop(HTTP_CLIENT)
    gw = host.state.pop(GATEWAY)
    if gw is not None:
        gw.close()
