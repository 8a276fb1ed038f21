"""MCP over stdio never leaves a client hanging (docs/http.md#mcp-servers): a frame the SDK cannot read (a lone
surrogate escape, 20,000-deep nesting, broken JSON) is answered with a JSON-RPC parse error carrying
the frame's id, and the server keeps serving."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from serve_helpers import FIXTURES

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def test_unreadable_frames_get_a_json_rpc_error(plughost_home: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "plughost.cli", "--plugins-dir", str(FIXTURES / "ok"), "mcp", "serve",
                             "probe"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PLUGHOST_HOME": str(plughost_home)})
    assert proc.stdin and proc.stdout
    answers: list[dict] = []
    reader = threading.Thread(target=lambda: answers.extend(json.loads(line) for line in proc.stdout), daemon=True)
    reader.start()
    deep = "[" * 20_000 + "]" * 20_000
    frames = [
        json.dumps(INIT),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"half \\ud83d"}}}',
        '{"jsonrpc":"2.0","id":"three","method":"ping","params":{"x":' + deep + "}}",
        '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a\\udc00"}}}',
        '{"jsonrpc":"2.0","method":"ping","params":[',
        deep,
        json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "echo",
                                                                                   "arguments": {"text": "still here"}}}),
    ]
    proc.stdin.write(("\n".join(frames) + "\n").encode())
    proc.stdin.flush()
    deadline = threading.Event()
    for _ in range(300):
        if len(answers) >= 7:
            break
        deadline.wait(0.1)
    proc.stdin.close()
    proc.wait(timeout=30)
    by_id = {a.get("id"): a for a in answers}
    for frame_id in (2, "three", 4):
        assert by_id[frame_id]["error"]["code"] == -32700, by_id.get(frame_id)
    assert "without its pair" in by_id[2]["error"]["message"]  # a lone surrogate escape
    assert "nested deeper" in by_id["three"]["error"]["message"]
    assert sum(1 for a in answers if a.get("id") is None and a.get("error", {}).get("code") == -32700) == 2
    assert by_id[9]["result"]["content"][0]["text"] == "still here"
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert "Traceback" not in err and err.count("[mcp] op=frame-refused") == 5
