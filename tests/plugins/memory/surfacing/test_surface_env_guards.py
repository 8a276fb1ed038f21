"""The hook's guards come from the same parsers as the host's: an empty ``ALLOWED_SCOPES`` means
"unscoped nodes only" (as for ``plughost memory search``), never admin, with and without serve."""

from __future__ import annotations

from pathlib import Path

import pytest
from serve_helpers import stop_process
from surfacing_support import ACCOUNT, NOTES, config_dir, hook_input, run_hook, seed, start_serve

from plughost.plugins.memory.surfacing import context

UNSCOPED = ("falcon-unscoped", ["KnowledgeDocument"], {"title": "Project Falcon kickoff notes",
            "summary": "Project Falcon kickoff: the board met the volunteers in the garden"})
PROMPT = "Project Falcon budget board two million euros kickoff"


def _ids(text: str) -> set[str]:
    import re

    return set(re.findall(r"\(id: ([^,)]+)", text))


def test_empty_allowed_scopes_parses_like_the_host() -> None:
    from plughost.ports.principal import resolve

    env = {"ACCOUNT_ID": ACCOUNT, "ALLOWED_SCOPES": "", "PLUGHOST_HOME": "/nonexistent"}
    ctx = context.from_merged(env)
    assert ctx is not None and ctx.scopes == () == resolve(env).guards.allowed_scopes
    assert context.from_merged({**env, "ALLOWED_SCOPES": " , "}).scopes == ()  # type: ignore[union-attr]
    assert context.from_merged({"ACCOUNT_ID": ACCOUNT}).scopes is None  # type: ignore[union-attr]
    # a runner session without a role confines (the narrower reading, as host.graph.Principal)
    runner = context.from_merged({"ACCOUNT_ID": ACCOUNT, "PLUGHOST_SESSION_ID": "s1"})
    assert runner is not None and runner.scopes == ("public",)
    # an empty process value is a value: it narrows a config dir's wider list
    merged = context.effective_env({"CLAUDE_CONFIG_DIR": "/nonexistent", "ALLOWED_SCOPES": ""})
    assert merged["ALLOWED_SCOPES"] == ""


@pytest.mark.parametrize("served", [False, True], ids=["cold", "warm"])
def test_empty_allowed_scopes_never_surfaces_scoped_memory(tmp_path: Path, plughost_home: Path,
                                                            served: bool) -> None:
    seed(plughost_home, notes=[*NOTES, UNSCOPED])
    admin_cfg = config_dir(tmp_path, "cfg", ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(plughost_home),
                           PLUGHOST_EMBEDDER="none", PLUGHOST_SURFACE_MIN_BM25="0", ALLOWED_SCOPES="admin,public")
    proc = None
    if served:
        from plughost.runtime.accounts import create_account

        create_account(ACCOUNT, plughost_home)
        proc = start_serve(plughost_home)
    try:
        run = run_hook(hook_input(PROMPT, "s-empty"), admin_cfg, tmp_path, ALLOWED_SCOPES="")
        assert run.returncode == 0
        ids = _ids(run.context)
        assert ids == {"falcon-unscoped"}, (ids, run.stderr)
        assert ("path=warm" if served else "path=cold") in run.line("hook")
        log = (plughost_home / "logs" / "server.log").read_text()
        surfaced = [ln for ln in log.splitlines() if ln.startswith("[surface] op=surfaced")][-1]
        assert "scopes=none" in surfaced and "scopes=admin" not in surfaced
    finally:
        if proc is not None:
            stop_process(proc, 20)


def test_the_process_env_never_widens_the_config_dirs_narrowing(tmp_path: Path) -> None:
    """A public config dir stays public under a process env asking for admin (scopes intersect, a
    non-admin role wins, the config dir's agent is the agent); the hook's builtins-only copy agrees."""
    from plughost.plugins.memory.surfacing import hook

    cfg = config_dir(tmp_path, "pub", ACCOUNT_ID=ACCOUNT, ALLOWED_SCOPES="public", AGENT_SLUG="bot",
                     PLUGHOST_SESSION_ROLE="visitor")
    cases = [({"ALLOWED_SCOPES": "admin"}, ""), ({"ALLOWED_SCOPES": "admin,public"}, "public"),
             ({"ALLOWED_SCOPES": ""}, ""), ({}, "public")]
    for process, scopes in cases:
        env = {"CLAUDE_CONFIG_DIR": str(cfg), "PLUGHOST_SESSION_ROLE": "admin", "AGENT_SLUG": "other", **process}
        for merged in (context.effective_env(env), hook.merged_env(dict(env))):
            assert merged["ALLOWED_SCOPES"] == scopes, (process, merged)
            assert merged["PLUGHOST_SESSION_ROLE"] == "visitor" and merged["AGENT_SLUG"] == "bot"
        ctx = context.resolve(env)
        assert ctx is not None and ctx.scopes is not None and "admin" not in ctx.scopes
