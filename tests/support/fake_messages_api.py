"""A loopback stand-in for the Anthropic Messages API, so the real Claude Code CLI runs whole turns
without a model (/work/shared/REAL-CHECKS.md, "Whole turns through the real CLI"): point the CLI at it
with ``ANTHROPIC_BASE_URL`` (:attr:`FakeMessagesAPI.url`) and ``ANTHROPIC_API_KEY``.

Every ``POST /v1/messages`` body is recorded (:attr:`FakeMessagesAPI.requests`, with the monotonic
time it arrived) and answered at once with one fixed text, streamed (``message_start``,
``content_block_start``, ``content_block_delta``, ``content_block_stop``, ``message_delta``,
``message_stop``) or as one JSON message, as the request asks. Any other path gets an empty JSON
object. Used by the claude runner's e2e test (tests/plugins/channels/test_claude_first_tools.py) and
``bench/claude_turn.py``.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REPLY = "fake reply"


def mcp_tool_names(body: dict[str, Any]) -> list[str]:
    """The ``mcp__*`` tool names a recorded request body offered the model."""
    return [str(t.get("name")) for t in body.get("tools") or [] if str(t.get("name", "")).startswith("mcp__")]


class FakeMessagesAPI:
    """``with FakeMessagesAPI() as api: ... api.url ... api.requests``: a threaded server on 127.0.0.1."""

    def __init__(self, reply: str = REPLY) -> None:
        self.reply = reply
        self.requests: list[tuple[float, dict[str, Any]]] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeMessagesAPI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def bodies(self) -> list[dict[str, Any]]:
        with self.lock:
            return [body for _, body in self.requests]

    def clear(self) -> None:
        with self.lock:
            self.requests.clear()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                self._json({})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path = self.path.split("?", 1)[0]
                if path != "/v1/messages":
                    self._json({"input_tokens": 1} if path.endswith("count_tokens") else {})
                    return
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                with api.lock:
                    api.requests.append((time.monotonic(), body))
                model = str(body.get("model") or "claude-sonnet-4-5")
                message = {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [],
                           "stop_reason": None, "stop_sequence": None,
                           "usage": {"input_tokens": 1, "output_tokens": 1}}
                if not body.get("stream"):
                    self._json({**message, "content": [{"type": "text", "text": api.reply}],
                                "stop_reason": "end_turn"})
                    return
                events = [
                    ("message_start", {"type": "message_start", "message": message}),
                    ("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": {"type": "text", "text": ""}}),
                    ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": {"type": "text_delta", "text": api.reply}}),
                    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                                           "stop_sequence": None},
                                       "usage": {"output_tokens": 1}}),
                    ("message_stop", {"type": "message_stop"}),
                ]
                data = "".join(f"event: {name}\ndata: {json.dumps(event)}\n\n" for name, event in events).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _json(self, value: Any) -> None:
                data = json.dumps(value).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
