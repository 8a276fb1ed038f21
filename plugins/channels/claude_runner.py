"""The ``claude`` agent runner (``PLUGHOST_AGENT=claude``): one Claude Code CLI run per turn.

Each turn runs ``claude -p --output-format json`` with the turn's composed prompt on stdin and reads
the reply from the JSON result (``result``; ``is_error`` makes it a failed turn). Every sender has
one session: the first turn creates it with ``--session-id <uuid>`` (the deterministic id of
:func:`~plughost.plugins.channels.runner.session_id_for`), later turns, across restarts too, continue it
with ``--resume <uuid>``; the sessions started are remembered in
``<home>/accounts/<id>/claude-sessions.json``, and a CLI that disagrees ("no conversation
found" / "already in use") gets the other flag once.

The CLI runs with ``CLAUDE_CONFIG_DIR`` set to the config dir of the install
(:func:`plughost.runtime.install_record.config_dir_source`: ``serve --config-dir``, else
``PLUGHOST_CLAUDE_CONFIG_DIR``, else the ``PLUGHOST_CONFIG_DIR`` ``plughost install`` recorded in
``<home>/.env``, else ``CLAUDE_CONFIG_DIR``, else ``~/.claude``: the folder the gates check), so
the installed plugins' MCP servers are an admin's tools, limited to
the admin allowlist (``--allowedTools`` with ``--permission-mode dontAsk``: anything else is
denied; a session the owner started in another permission mode or model, ``owner_sessions``, runs
every turn with those). A public turn is toolless by construction: ``--safe-mode`` (no plugins, hooks or
skills), ``--strict-mcp-config`` with an empty ``--mcp-config`` (no MCP server at all),
``--tools ""`` (no built-in tool) and the native tools denied by name as well. What it may know
comes with the turn, in ``--append-system-prompt``: the public agent's own files first (IDENTITY.md,
SOUL.md and the curated KNOWLEDGE.md, docs/agents.md#runners), then the best public-scope passages
of the account's memory, found by the memory runner's search under public guards.

An admin turn's plugin tools are on the model's first request: ``claude -p`` connects MCP servers in
the background by default (its ``init`` lists them ``pending`` and the first request carries none of
their tools), so the admin turn's CLI runs with ``MCP_CONNECTION_NONBLOCKING=0`` (it waits for the
servers before the first request) and ``MCP_CONNECT_TIMEOUT_MS`` (how long it waits; the CLI's own
default is 5 s, less than a loaded machine's connect) at half the turn's timeout unless the
environment sets it. A server still not connected then is left behind, as before, and the turn goes on.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from plughost import AgentTurn, Host, log
from plughost.api.payload import config_dir_source
from plughost.api.principals import child_env
from plughost.plugins.channels.knowledge import AgentFiles
from plughost.plugins.channels.memory_runner import MemoryRunner, distinct
from plughost.plugins.channels.runner import DEFAULT_TIMEOUT, RunnerError, kill_group
from plughost.plugins.channels.session_levers import settings_of
from plughost.plugins.channels.settings import AGENT_TIMEOUT, CLAUDE_BIN

NATIVE_TOOLS = ("Bash", "BashOutput", "KillShell", "Edit", "Write", "Read", "Glob", "Grep", "NotebookEdit",
                "WebFetch", "WebSearch", "Task", "TodoWrite", "Skill", "ExitPlanMode", "CronCreate", "CronDelete",
                "CronList", "DesignSync", "EnterWorktree", "ExitWorktree", "ReportFindings", "ScheduleWakeup",
                "SendMessage", "TaskCreate", "TaskGet", "TaskList", "TaskOutput", "TaskStop", "TaskUpdate",
                "ToolSearch", "Workflow")
"""The public turn's deny list: the built-in tools of the pinned CLI (``scripts/tools-package.json``),
each one it knows (an unknown name is a "matches no known tool" warning every turn) and every one
its ``init`` message lists by default; the test checks both against the real CLI."""
NO_MCP_SERVERS = json.dumps({"mcpServers": {}})
KNOWLEDGE_INTRO = ("You answer visitors of this business. Answer only from the passages below; when they do not "
                   "answer the question, say you do not know and offer to pass the question on to the team.")
CURATED_INTRO = ("You answer visitors of this business as the agent described above. Answer from the knowledge "
                 "above first, then from the passages below; when neither answers the question, say you do not "
                 "know and offer to pass the question on to the team.")
MAX_PASSAGES = 3
Knowledge = Callable[[str], list[tuple[str, str]]]
"""A public-scope search: ``question -> [(text, source)]``."""
BLOCKING_CONNECT = "MCP_CONNECTION_NONBLOCKING"
"""The pinned CLI's switch: ``0`` makes ``claude -p`` connect its MCP servers before the first model request."""
CONNECT_WAIT = "MCP_CONNECT_TIMEOUT_MS"
"""How long (ms) the pinned CLI waits for them then (its default: 5000)."""
NOT_FOUND = "no conversation found"
IN_USE = "already in use"


class ClaudeRunner:
    """Runs the Claude Code CLI per turn; see the module docstring for the flags per role."""

    name = "claude"

    def __init__(self, command: list[str], *, config_dir: Path, home: Path, account: str,
                 admin_tools: list[str], timeout: float = DEFAULT_TIMEOUT, env: Mapping[str, str] | None = None,
                 knowledge: Knowledge | None = None, listed_tools: list[str] | None = None,
                 eager_tools: list[str] | None = None) -> None:
        self.command = command
        self.config_dir = config_dir
        self.home = home
        self.account = account
        self.admin_tools = admin_tools
        self.timeout = timeout
        self.env = dict(env if env is not None else os.environ)
        self.knowledge = knowledge  # (question) -> list of (text, source), public scope; None: none
        # what the installed MCP servers list (tools/list: the surface's served tools, the withheld left
        # out) and the eager ones among them: the spawn lines compare the argv against them
        self.listed_tools = list(listed_tools if listed_tools is not None else admin_tools)
        self.eager_tools = list(eager_tools or [])
        self.files = AgentFiles(home, account)  # the public agent's IDENTITY.md, SOUL.md, KNOWLEDGE.md

    @classmethod
    def from_host(cls, host: Host) -> ClaudeRunner:
        env = host.env
        raw = CLAUDE_BIN.read(env)
        timeout = AGENT_TIMEOUT.read(env)
        principal = host.principal
        account = principal.require_account("the account the claude runner answers for (it runs in its config dir)")
        config, source = config_dir_source(env)
        log("channels", "op=claude-config", config_dir=str(config), source=source)
        surface = host.surface
        listed = sorted(name for name, tool in surface.all.items()
                        if tool.plugin in surface.mcp_servers and name not in surface.withheld)
        return cls(shlex.split(raw), config_dir=config, home=host.home, account=account,
                   admin_tools=list(surface.admin), timeout=timeout, env=env,
                   knowledge=_public_knowledge(host), listed_tools=listed,
                   eager_tools=[t for t in surface.eager if t in listed])

    # ------------------------------------------------------------------ what one turn runs
    def argv(self, session_id: str, admin: bool, *, resume: bool, knowledge: str = "") -> list[str]:
        args = [*self.command, "-p", "--output-format", "json"]
        args += ["--resume", session_id] if resume else ["--session-id", session_id]
        if admin:
            # the permission mode and model the owner started this session with (owner_sessions), else dontAsk
            levers = settings_of(self.home, self.account, session_id)
            args += ["--permission-mode", levers.get("permissionMode", "dontAsk")]
            if levers.get("model"):
                args += ["--model", levers["model"]]
            if self.admin_tools:
                args += ["--allowedTools", ",".join(self.admin_tools)]
        else:
            args += ["--safe-mode", "--strict-mcp-config", "--mcp-config", NO_MCP_SERVERS, "--tools", "",
                     "--disallowedTools", ",".join(NATIVE_TOOLS)]
            if knowledge:
                args += ["--append-system-prompt", knowledge]
        return args

    def child_env(self, turn: AgentTurn) -> dict[str, str]:
        # the turn's principal: an admin's session, or a visitor confined to the sender's conversation
        # (public, never wider than this process), resolved by the pipeline
        env = {**child_env(self.env, turn.principal), "CLAUDE_CONFIG_DIR": str(self.config_dir)}
        env.pop("PLUGHOST_SPECIALIST", None)
        if turn.admin:  # the plugin tools on the first model request (module docstring)
            env[BLOCKING_CONNECT] = "0"
            env[CONNECT_WAIT] = self.env.get(CONNECT_WAIT) or str(self.connect_wait_ms)
        if turn.specialist:
            env["PLUGHOST_SPECIALIST"] = turn.specialist
        return env

    @property
    def connect_wait_ms(self) -> int:
        """How long an admin turn's CLI waits for its MCP servers before the first request: half the turn."""
        return max(1000, int(self.timeout * 500))

    def knowledge_prompt(self, question: str) -> str:
        """A public turn's system prompt addition: the agent's files, then the passages found for the question."""
        curated = self.files.prompt()
        intro = f"{curated}\n\n{CURATED_INTRO}" if curated else KNOWLEDGE_INTRO
        if self.knowledge is None:
            return intro + "\n\n(no passages)"
        found = self.knowledge(question) if question.strip() else []
        blocks = [f"[{i}] {text}\n(Source: {source})" for i, (text, source) in enumerate(found[:MAX_PASSAGES], 1)]
        return intro + "\n\n" + ("\n\n".join(blocks) if blocks else "(no passages)")

    def log_surface(self, session_id: str, role: str, argv: list[str], specialist: str | None) -> None:
        """The turn's tool surface, from the argv the CLI is spawned with: ``[tool-surface]`` (how many
        tools the permission allowlist grants, how many of them are eager, of how many eager tools) and
        ``[pty-spawn-tool-inventory]`` (the argv's tools against what the MCP servers list: exposed, the
        listed tools the turn may call; not-exposed, the listed ones it may not)."""
        allowed = argv_tools(argv)
        listed = [] if "--strict-mcp-config" in argv else self.listed_tools  # a public turn mounts no server
        exposed = [t for t in listed if t in allowed]
        hidden = [t for t in listed if t not in allowed]
        sid = session_id[:8]
        log("tool-surface", session=sid, role=role, permission_allowed=len(allowed),
            eager_intent=len([t for t in allowed if t in self.eager_tools]), eager_set_size=len(self.eager_tools))
        unlisted = [t for t in allowed if t not in listed]  # allowed, yet no server lists it
        log("pty-spawn-tool-inventory", session=sid, role=role, specialist=specialist or None,
            **{"argv-tools": len(allowed), "mcp-listed-tools": len(listed), "exposed": ",".join(exposed) or None,
               "not-exposed": ",".join(hidden) or None, **({"argv-unlisted": ",".join(unlisted)} if unlisted else {})})

    # ------------------------------------------------------------------ sessions across restarts
    @property
    def sessions_file(self) -> Path:
        return self.home / "accounts" / self.account / "claude-sessions.json"

    def _sessions(self) -> dict[str, object]:
        try:
            data = json.loads(self.sessions_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _remember(self, session_id: str, kind: str, role: str, user: str | None) -> None:
        """Record the session with the kind of turn and the principal it was made for: it is
        resumed only by a turn of that kind (:meth:`run`)."""
        data = self._sessions()
        if session_id in data:
            return
        data[session_id] = {"startedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "kind": kind,
                            "role": role, **({"userId": user} if user else {})}
        self.sessions_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.sessions_file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(tmp, self.sessions_file)

    # ------------------------------------------------------------------ the turn
    async def run(self, session_id: str, turn: AgentTurn) -> str:
        role, kind, admin = turn.role, turn.kind, turn.admin
        recorded = (await asyncio.to_thread(self._sessions)).get(session_id)
        if recorded is not None and (not isinstance(recorded, dict) or recorded.get("kind") != kind):
            made_for = recorded.get("kind") if isinstance(recorded, dict) else None
            log("channels", "op=session-refused", session=session_id[:8], kind=kind, recorded=made_for or "none")
            raise RunnerError(f"session-kind: session {session_id[:8]} was made for {made_for or 'no recorded kind'}, "
                              f"not a {kind} turn")
        resume = recorded is not None
        knowledge = "" if admin else await asyncio.to_thread(self.knowledge_prompt, turn.text)
        prompt = turn.prompt
        env = self.child_env(turn)
        self.log_surface(session_id, role, self.argv(session_id, admin, resume=resume, knowledge=knowledge),
                         turn.specialist)
        code, out, err = await self._spawn(self.argv(session_id, admin, resume=resume, knowledge=knowledge), env, prompt)
        said = (out + err).lower()
        if code != 0 and ((resume and NOT_FOUND in said) or (not resume and IN_USE in said)):
            resume = not resume  # the CLI's own session store disagrees with ours: the other flag, once
            code, out, err = await self._spawn(self.argv(session_id, admin, resume=resume, knowledge=knowledge),
                                               env, prompt)
        result = _result(out)
        if result is None:
            tail = (err.strip().splitlines() or out.strip().splitlines() or [""])[-1]
            raise RunnerError(f"claude exit {code}: {tail[:200]}")
        if result.get("is_error") or result.get("subtype") not in (None, "success"):
            raise RunnerError(f"claude: {str(result.get('result') or result.get('subtype'))[:200]}")
        await asyncio.to_thread(self._remember, session_id, kind, role, turn.user_id)
        log("channels", "op=claude-turn", role=role, kind=kind, session=session_id[:8], resumed="true" if resume else "false",
            turns=result.get("num_turns"), ms=result.get("duration_ms"))
        return str(result.get("result") or "").strip()

    async def _spawn(self, argv: list[str], env: dict[str, str], prompt: str) -> tuple[int, str, str]:
        self.config_dir.mkdir(parents=True, exist_ok=True)
        workdir = self.home / "accounts" / self.account / "agent"
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                env=env, cwd=str(workdir), start_new_session=True)
        except OSError as exc:
            raise RunnerError(f"spawn-failed: {argv[0]}: {exc.strerror or exc} (set PLUGHOST_CLAUDE_BIN)") from None
        try:
            out, err = await asyncio.wait_for(proc.communicate(prompt.encode("utf-8")), self.timeout)
        except TimeoutError:
            kill_group(proc.pid)  # the CLI and the MCP servers it started
            await proc.wait()
            raise RunnerError(f"timeout after {self.timeout:g}s") from None
        except asyncio.CancelledError:
            kill_group(proc.pid)  # a stopping server ended the turn
            raise
        return int(proc.returncode or 0), out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def argv_tools(argv: list[str]) -> list[str]:
    """The tools an argv's ``--allowedTools`` grants (comma- or space-separated, as the CLI reads them)."""
    tools: list[str] = []
    for i, arg in enumerate(argv[:-1]):
        if arg in ("--allowedTools", "--allowed-tools"):
            tools += [t for t in argv[i + 1].replace(" ", ",").split(",") if t]
    return tools


def _result(out: str) -> dict[str, object] | None:
    """The CLI's JSON result object (the last JSON line of stdout), or None."""
    for line in reversed(out.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("type") == "result":
            return value
    return None


def _public_knowledge(host: Host) -> Knowledge:
    """The memory runner's public-scope search as ``question -> [(text, source)]``: at most
    :data:`MAX_PASSAGES`, each a different text (a document's Section and its Chunk are one)."""
    memory = MemoryRunner(host)

    def find(question: str) -> list[tuple[str, str]]:
        try:
            ranked = memory.passages(question, host.principal.visitor())
        except Exception as exc:  # no memory: the agent answers without passages
            log("channels", "op=claude-knowledge-failed", reason=str(exc).splitlines()[0][:200] if str(exc) else "")
            return []
        return [(p.text, p.source) for _, p in distinct([r for r in ranked if r[0] > 0], MAX_PASSAGES)]

    return find
