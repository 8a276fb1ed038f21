"""With ``plughost serve`` running, the PostToolUse hook records through its loopback listener."""

from __future__ import annotations

from pathlib import Path

from audit_support import ACCOUNT, PLANTED, files_containing, recorded, tool_calls
from serve_helpers import stop_process
from surfacing_support import config_dir, run_hook, start_serve


def test_warm_hook_records_through_serve(tmp_path: Path, plughost_home: Path) -> None:
    from plughost.runtime.accounts import create_account

    create_account(ACCOUNT, plughost_home)
    cfg = config_dir(tmp_path, "cfg", ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(plughost_home), PLUGHOST_EMBEDDER="none")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    proc = start_serve(plughost_home, ACCOUNT)
    try:
        run = run_hook(recorded("post_tool_use_mcp", tool_input={"labels": ["Note"], "properties": {
            "title": "deploy", "secretValue": PLANTED}}), cfg, cwd, PLUGHOST_SURFACE_COLD="0")
        assert "path=warm event=PostToolUse result=ok recorded=true" in run.line("hook"), run.stderr
        public = run_hook(recorded("post_tool_use_bash"), cfg, cwd, PLUGHOST_SURFACE_COLD="0",
                          PLUGHOST_SESSION_ROLE="public")
        assert "reason=not-admin" in public.line("hook")
    finally:
        stop_process(proc, 30)
    [call] = tool_calls(plughost_home)
    assert call.properties["pluginName"] == "memory" and '"secretValue": "[redacted]"' in call.properties["input"]
    assert "[persist] tool-call persisted tool=mcp__plugin_memory_memory__memory-write" in \
        (plughost_home / "logs" / "server.log").read_text()
    assert files_containing(plughost_home, PLANTED) == []
