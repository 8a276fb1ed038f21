"""The hooks `plughost serve` fires: routes, channel adapters' routes, startup and shutdown."""

from __future__ import annotations

from typing import Any

from plughost.runtime.hookspecs import hookimpl
from plughost.runtime.manifest import from_mapping
from plughost.runtime.types import ChannelAdapter, Route


async def _text(request: Any) -> Any:
    from starlette.responses import PlainTextResponse

    return PlainTextResponse(request.url.path)


class Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []

    @hookimpl
    def plughost_routes(self, host: Any) -> list[Route]:
        return [Route("/hooked/a", endpoint=_text), Route("/hooked/b", endpoint=_text, methods=("POST",))]

    @hookimpl
    def plughost_channel_adapters(self, host: Any) -> list[ChannelAdapter]:
        return [ChannelAdapter("hooked-chat", routes=(Route("/hooked/chat", endpoint=_text),))]

    @hookimpl
    def plughost_startup(self, host: Any) -> None:
        self.events.append("startup")

    @hookimpl
    def plughost_shutdown(self, host: Any) -> None:
        self.events.append("shutdown")


def _serve(make_host, live_app) -> tuple[Recorder, Any]:
    recorder = Recorder()
    host = make_host()
    host.register(recorder, "hooked", from_mapping({"name": "hooked"}, None))
    return recorder, live_app(host)


def test_hook_plughost_routes(make_host, live_app) -> None:
    _, server = _serve(make_host, live_app)
    assert server.get("/hooked/a").body == b"/hooked/a"
    assert server.get("/hooked/b", method="POST").body == b"/hooked/b"
    assert server.get("/hooked/b").status == 405
    assert "hooked:GET /hooked/a" in server.app.state.runtime.routes


def test_hook_plughost_channel_adapters(make_host, live_app) -> None:
    _, server = _serve(make_host, live_app)
    assert server.get("/hooked/chat").body == b"/hooked/chat"


def test_hook_plughost_startup(make_host, live_app) -> None:
    recorder, server = _serve(make_host, live_app)
    assert recorder.events == ["startup"]


def test_hook_plughost_shutdown(make_host, live_app) -> None:
    recorder, server = _serve(make_host, live_app)
    server.stop()
    assert recorder.events == ["startup", "shutdown"]


def test_route_with_an_asgi_app_is_mounted(make_host, live_app) -> None:
    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        body = f"mounted {scope['path']}".encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    class Mounter:
        @hookimpl
        def plughost_routes(self, host: Any) -> list[Route]:
            return [Route("/mounted", app=asgi)]

    host = make_host()
    host.register(Mounter(), "mounter", from_mapping({"name": "mounter"}, None))
    server = live_app(host)
    assert server.get("/mounted/x/y").body.startswith(b"mounted ")
    assert "mounter:MOUNT /mounted" in server.app.state.runtime.routes
